"""Robustness figures that need a clock or a real process tree (the bad-input corpus itself is
``pytest tests/robustness``, whose summary line prints ``bad_inputs_total= … tracebacks= …``).

    python bench/robustness.py [--no-kill]

It prints::

    placeholder_scan_100k_s=      worst time of find_placeholders over hostile 100k-character
                                  tokens (letters, 'X', '<' + words, '[' + capitals, …)
    placeholder_scaling_ratio=    worst time at 400k / worst time at 100k characters, measured in
                                  this run (linear ≈ 4; a quadratic scan ≈ 16)
    objects_scan_100k_s=          the same for verify's find_objects (questions, fees, dates …)
    objects_scaling_ratio=        400k / 100k for find_objects (linear ≈ 4)
    orphans_after_kill=           processes of a `bargein build` still alive 5 s after the build
                                  was killed mid-render, summed over kill -9 and SIGTERM (goal 0)
    files_outside_target=         files a killed build wrote outside its work dir and --out

Exit status 1 when a correctness figure fails (orphans or files outside); the timing figures
depend on how busy the machine is and are reported, not fatal.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bargein.generators.facts import find_placeholders

HOSTILE = {
    "letters": lambda n: "a" * n,
    "capitals": lambda n: "X" * n,
    "lt_words": lambda n: "<" + "name " * (n // 5),
    "bracket_caps": lambda n: "[" + "A" * n,
    "email_run": lambda n: "a." * (n // 2),
    "digits": lambda n: "1" * n,
    "dollar_x": lambda n: "$" + "X" * n,
    "x_dash": lambda n: "XX-" * (n // 3),
}


def scan_seconds(fn, n: int, repeats: int = 3) -> float:
    """The worst (over token shapes) of the best (over repeats) time of ``fn`` on n chars."""
    worst = 0.0
    for make in HOSTILE.values():
        text = make(n)
        best = min(_timed(fn, text) for _ in range(repeats))
        worst = max(worst, best)
    return worst


def _timed(fn, arg) -> float:
    t0 = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t0


CONFIG = {
    "name": "robust-bench", "version": "0.1.0", "seed": 3,
    "scenarios": {"n": 2, "domains": ["telecom", "travel"]},
    "audio": {"assistant_voice": "espeak:en-us+f3", "user_voice": "espeak:en-gb+m3",
              "workers": 2},
    "repair": {"enabled": False}, "timing": {"enabled": False},
}


def _group(pgid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getpgid(int(d.name)) == pgid:
                    out.append(int(d.name))
            except (ProcessLookupError, PermissionError):
                pass
    return out


def _snapshot(root: Path, skip: tuple[Path, ...]) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = [n for n in dirnames if d / n not in skip]
        found.update(str(d / n) for n in filenames)
    return found


def kill_mid_render(sig: int, root: Path) -> tuple[int, int]:
    """(processes alive 5 s after the kill, files written outside work dir and --out)."""
    cfg = root / "bench.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    work, out = root / f"work-{sig}", root / f"release-{sig}"
    before = _snapshot(root, (work, out))
    proc = subprocess.Popen([sys.executable, "-m", "bargein.cli", "--workdir", str(work), "build",
                             "--config", str(cfg), "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    for line in proc.stderr:
        if line.startswith("[bargein build] render ..."):
            break
    else:
        raise RuntimeError(f"the build ended (code {proc.wait()}) before rendering: nothing "
                           "to measure")
    deadline = time.time() + 120                  # until a render worker is up
    while len(_group(proc.pid)) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)
    if proc.poll() is not None:
        raise RuntimeError("the build finished before the kill: nothing measured")
    workers = len(_group(proc.pid)) - 1
    os.kill(proc.pid, sig)
    code = proc.wait(timeout=120)
    print(f"  {signal.Signals(sig).name} mid-render: {workers} worker processes at the kill, "
          f"exit {code}", file=sys.stderr)
    time.sleep(5)
    alive = _group(proc.pid)
    if alive:
        os.killpg(proc.pid, signal.SIGKILL)
    outside = _snapshot(root, (work, out)) - before - {str(cfg)}
    return len(alive), len(outside)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-kill", action="store_true", help="Skip the kill measurements.")
    args = ap.parse_args()
    from bargein.verify.objects import find_objects

    for name, fn in (("placeholder", find_placeholders), ("objects", find_objects)):
        base, big = scan_seconds(fn, 100_000), scan_seconds(fn, 400_000, repeats=2)
        print(f"{name}_scan_100k_s={base:.3f}")
        print(f"{name}_scaling_ratio={big / max(base, 1e-9):.1f}")
    bad = False
    if not args.no_kill:
        orphans = outside = 0
        with tempfile.TemporaryDirectory(prefix="bargein-robust-") as tmp:
            for sig in (signal.SIGKILL, signal.SIGTERM):
                a, o = kill_mid_render(sig, Path(tmp))
                orphans += a
                outside += o
        print(f"orphans_after_kill={orphans}")
        print(f"files_outside_target={outside}")
        bad = orphans > 0 or outside > 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
