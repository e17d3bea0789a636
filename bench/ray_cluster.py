"""The Ray executor on this machine: overhead, identity, and a node killed mid-render.

    python bench/ray_cluster.py [--conversations 10]

(Not ``bench/ray.py``: a script of that name would shadow the ``ray`` package itself.)

Starts a two-node Ray cluster on loopback (``ray start --head`` on 127.0.0.2 and a second node
on 127.0.0.3, one CPU each, token auth), renders the demo's conversations (hibari ``heart`` +
Piper ``joe``) three times and prints:

* ``ray_overhead``: Ray wall / local-process wall (2 worker processes) for the same render stage,
  both measured in this run (goal ≤ 1.25). The cluster is started before the clock starts, as a
  user's cluster would be; each side builds its TTS engines once per worker process.
* ``ray_identical``: 1 when every output file of the Ray render equals the local one byte for byte.
* ``ray_lost_items_after_worker_kill``: items missing after the second node's raylet is killed
  with SIGKILL mid-render (goal 0; Ray re-runs the lost tasks on the surviving node).
* ``render_s_per_conversation_core``: the per-item cost that the README's scaling estimate uses.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _ray_bin() -> str:
    return str(Path(sys.executable).parent / "ray")


def _raylets() -> set[int]:
    out = set()
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith(b"/raylet"):
                out.add(int(p.name))
    return out


def _digest(workdir: Path) -> dict[str, str]:
    """sha256 of every output file (the cache folder holds the same content, keyed)."""
    out = {}
    for p in sorted(workdir.rglob("*")):
        if p.is_file() and "cache" not in p.relative_to(workdir).parts:
            out[str(p.relative_to(workdir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=10)
    args = ap.parse_args()
    if not Path(_ray_bin()).exists():
        sys.exit("Ray is not installed. Fix: pip install 'bargein[ray]'")
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                       "RAY_USAGE_STATS_ENABLED": "0", "BARGEIN_PROGRESS": "0"})
    from bargein.audio.render import RenderConfig, render_conversations
    from bargein.executors import ExecutorConfig, using_executor
    from bargein.generators.conversation import generate_conversations
    from bargein.generators.scenarios import generate_scenarios

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sres = generate_scenarios(args.conversations, 7, workdir=tmp / "gen", progress=False)
        run = generate_conversations(sres.outputs, seed=7, workdir=tmp / "gen", progress=False)
        convs = [v for v in run.verified if v.accepted][: args.conversations]
        cfg = RenderConfig(assistant_voice="hibari:heart", user_voice="piper:joe")

        subprocess.run([_ray_bin(), "stop", "--force"], capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
            port = s.getsockname()[1]
        common = ["--num-cpus=1", "--disable-usage-stats"]
        subprocess.run([_ray_bin(), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.2",
                        "--include-dashboard=false", *common], check=True, capture_output=True)
        head = _raylets()
        subprocess.run([_ray_bin(), "start", f"--address=127.0.0.2:{port}",
                        "--node-ip-address=127.0.0.3", *common], check=True, capture_output=True)
        second = sorted(_raylets() - head)
        ex = ExecutorConfig(kind="ray", ray_address=f"127.0.0.2:{port}", node_ip_address="127.0.0.2")
        try:
            t0 = time.perf_counter()
            local = render_conversations(convs, workdir=tmp / "local", seed=7, config=cfg,
                                         workers=2, progress=False)
            local_s = time.perf_counter() - t0
            with using_executor(ex):
                import ray

                from bargein.executors import ensure_ray

                ensure_ray(ex)                       # connect before the clock starts
                t0 = time.perf_counter()
                viaray = render_conversations(convs, workdir=tmp / "ray", seed=7, config=cfg,
                                              progress=False)
                ray_s = time.perf_counter() - t0
                da, db = _digest(tmp / "local"), _digest(tmp / "ray")
                identical = da == db
                if not identical:
                    diff = sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))
                    print(f"differing files ({len(diff)}): {diff[:6]}")

                # a worker node dies mid-render: kill its raylet when a third of the items are in
                done_dir = tmp / "kill" / "artifacts" / "render"

                def killer() -> None:
                    while True:
                        n = len(list(done_dir.glob("*/clean.flac"))) if done_dir.is_dir() else 0
                        if n >= max(1, len(convs) // 3):
                            for pid in second:
                                os.kill(pid, signal.SIGKILL)
                            return
                        time.sleep(0.05)

                k = threading.Thread(target=killer, daemon=True)
                k.start()
                killed = render_conversations(convs, workdir=tmp / "kill", seed=7, config=cfg,
                                              progress=False)
                k.join(5)
                lost = len(convs) - len(killed.outputs)
                ray.shutdown()
        finally:
            subprocess.run([_ray_bin(), "stop", "--force"], capture_output=True)
            shutil.rmtree(tmp / "gen", ignore_errors=True)
        assert not local.failures, local.failures[:1]
        audio_s = sum(o.duration_s for o in local.outputs)
        print(f"conversations={len(convs)} audio_minutes={audio_s / 60:.1f}")
        print(f"local_render_s={local_s:.1f} ray_render_s={ray_s:.1f} "
              f"(2 local worker processes vs 2 one-CPU Ray nodes)")
        print(f"ray_overhead={ray_s / local_s:.3f} (goal <= 1.25)")
        print(f"ray_identical={int(identical and not viaray.failures)}")
        print(f"ray_lost_items_after_worker_kill={lost} (failures recorded: {len(killed.failures)})")
        print(f"render_s_per_conversation_core={2 * local_s / len(convs):.2f} "
              f"render_x_realtime_per_core={audio_s / (2 * local_s):.1f}")


if __name__ == "__main__":
    main()
