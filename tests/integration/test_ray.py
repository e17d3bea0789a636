"""`bargein build` on a real two-node Ray cluster on loopback: byte-identical to a local build,
and a worker node killed mid-render loses no item.

The cluster is ``ray start --head`` plus a second ``ray start --address=…`` on this machine,
each with one CPU, on loopback addresses (127.0.0.2 and 127.0.0.3: Ray maps 127.0.0.1 to the
machine's outward address, other loopback addresses it keeps), with token authentication. The voices come from a third-party plugin package (a tone per word, slowed
per message so the kill lands mid-render); it reaches the Ray workers through PYTHONPATH and its
entry points, exactly as a pip-installed plugin would on a real cluster.
"""

from __future__ import annotations

import os

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ray", reason="the Ray executor needs: pip install 'bargein[ray]'")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "unit"))
import _plugin_pkg  # noqa: E402

pytestmark = pytest.mark.integration

CONFIG = {
    "name": "raytest", "version": "0.1.0", "seed": 13,
    "scenarios": {"n": 4, "domains": ["telecom", "travel", "healthcare", "education"]},
    "audio": {"assistant_voice": "tone:high", "user_voice": "tone:low", "workers": 2},
    "repair": {"enabled": False},
    "timing": {"per_type": 1},
}


def _ray_bin() -> str:
    return str(Path(sys.executable).parent / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raylets() -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith(b"/raylet"):
                out.append(int(p.name))
    return out


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    site = tmp_path_factory.mktemp("plugin-site")
    _plugin_pkg.install(site)
    import secrets

    e = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
         "TONE_PLUGIN_DELAY_S": "0.04", "RAY_USAGE_STATS_ENABLED": "0", "BARGEIN_PROGRESS": "0",
         "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    return e


@pytest.fixture(scope="module")
def cluster(env):
    if not Path(_ray_bin()).exists():
        pytest.skip("the `ray` command is not installed: pip install 'bargein[ray]'")
    subprocess.run([_ray_bin(), "stop", "--force"], env=env, capture_output=True, timeout=120)
    port = _free_port()
    common = ["--num-cpus=1", "--disable-usage-stats"]
    subprocess.run([_ray_bin(), "start", "--head", f"--port={port}", "--include-dashboard=false",
                    "--node-ip-address=127.0.0.2", *common], env=env, check=True,
                   capture_output=True, timeout=180)
    head = set(_raylets())
    subprocess.run([_ray_bin(), "start", f"--address=127.0.0.2:{port}",
                    "--node-ip-address=127.0.0.3", *common], env=env, check=True,
                   capture_output=True, timeout=180)
    second = sorted(set(_raylets()) - head)
    assert len(second) == 1, "the second node's raylet"
    yield {"address": f"127.0.0.2:{port}", "second_raylet": second[0], "env": env}
    subprocess.run([_ray_bin(), "stop", "--force"], env=env, capture_output=True, timeout=120)


def _build_cmd(cfg: Path, work: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bargein.cli", "--workdir", str(work), "build", "--config",
            str(cfg), "--out", str(out), *extra]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def local_build(tmp_path_factory, env):
    tmp = tmp_path_factory.mktemp("local")
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    proc = subprocess.run(_build_cmd(cfg, tmp / "work", tmp / "release"), env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"cfg": cfg, "release": tmp / "release"}


def test_ray_build_is_byte_identical_to_local(cluster, local_build, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**CONFIG, "executor": {
        "kind": "ray", "ray_address": cluster["address"], "node_ip_address": "127.0.0.2"}}))
    proc = subprocess.run(_build_cmd(cfg, tmp_path / "work", tmp_path / "release"),
                          env=cluster["env"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _files(local_build["release"]), _files(tmp_path / "release")
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, differ
    assert not (tmp_path / "work" / "render.failures.jsonl").read_text().strip()


def test_worker_node_killed_mid_render_loses_nothing(cluster, local_build, tmp_path):
    work, out = tmp_path / "work", tmp_path / "release"
    proc = subprocess.Popen(_build_cmd(local_build["cfg"], work, out, "--executor", "ray",
                                       "--ray-address", cluster["address"],
                                       "--ray-node-ip", "127.0.0.2"),
                            env=cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    render_dir = work / "artifacts" / "render"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if render_dir.is_dir() and any(render_dir.rglob("*.flac")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the build ended before the render could be interrupted"
    os.kill(cluster["second_raylet"], signal.SIGKILL)        # the second node dies mid-render
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    assert not (work / "render.failures.jsonl").read_text().strip()
    a, b = _files(local_build["release"]), _files(out)
    assert a.keys() == b.keys() and not [k for k in a if a[k] != b[k]]


def test_executor_config_errors_name_the_fix():
    from bargein.config import parse_config
    from bargein.errors import ConfigError

    with pytest.raises(ConfigError, match="executor.kind"):
        parse_config({"executor": "spark"})
    assert parse_config({"executor": "ray"}).executor.kind == "ray"
    # execution settings never change the release: they stay out of provenance
    assert "executor" not in parse_config({"executor": "ray"}).provenance()
    assert parse_config({"executor": "ray"}).provenance() == parse_config({}).provenance()


def test_missing_ray_names_the_extra(monkeypatch):
    import builtins

    from bargein.errors import BackendUnavailable
    from bargein.executors import ExecutorConfig, ensure_ray

    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(BackendUnavailable, match=r"bargein\[ray\]"):
        ensure_ray(ExecutorConfig(kind="ray"))

