"""Issue 16 #3: ``kill -9`` or ``SIGTERM`` of a render with worker processes leaves no process
behind (workers and multiprocessing's resource tracker), and the run resumes byte-identically.

The render uses the plugin ``tone`` engine slowed per message, so the signal lands mid-render.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import _plugin_pkg  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

N = 8
_SCRIPT = """
import sys
sys.path[:0] = [{site!r}, {bench!r}]
from doubles import render_convs as C
from bargein.audio.render import RenderConfig, render_conversations
cfg = RenderConfig(assistant_voice="tone:high", user_voice="tone:low", label_vad="energy")
convs = [C.verified(seed=s, variant=s % 2) for s in range(1, {n} + 1)]
res = render_conversations(convs, workdir={workdir!r}, seed=11, config=cfg, workers=2, progress=False)
assert res.computed + res.cached == {n} and not res.failures, res.summary()
"""


def _start(site: Path, workdir: Path, delay_s: float) -> subprocess.Popen:
    code = _SCRIPT.format(site=str(site), bench=str(HERE.parents[1] / "bench"), workdir=str(workdir), n=N)
    env = {**os.environ, "TONE_PLUGIN_DELAY_S": str(delay_s)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) for every process we can see."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            out[int(d)] = (int(fields[1]), fields[0])
    return out


def _descendants(pid: int) -> set[int]:
    table, found, frontier = _proc_table(), set(), {pid}
    while frontier:
        kids = {p for p, (pp, _) in table.items() if pp in frontier and p not in found}
        found |= kids
        frontier = kids
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _proc_table()
    return {p for p in pids if p in table and table[p][1] not in ("Z", "X")}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".") and "cache" not in p.relative_to(root).parts}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("orphans")
    site = _plugin_pkg.install(root / "site-packages")
    ref = _start(site, root / "ref", 0.0)
    assert ref.wait(timeout=300) == 0
    return site, _files(root / "ref")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_no_process_survives_the_runner_and_resume_is_byte_identical(reference, tmp_path, sig):
    site, ref_files = reference
    work = tmp_path / "work"
    proc = _start(site, work, 0.12)
    cache = work / "cache" / "render"
    deadline, children = time.time() + 120, set()
    while time.time() < deadline:
        children |= _descendants(proc.pid)
        if len(list(cache.glob("*/*.json"))) >= 1 and len(children) >= 2:
            break
        time.sleep(0.05)
    children |= _descendants(proc.pid)
    done_before = len(list(cache.glob("*/*.json")))
    assert 1 <= done_before < N, "the signal must land mid-render"
    assert len(children) >= 2, f"expected two workers (and the resource tracker), saw {children}"
    os.kill(proc.pid, sig)
    code = proc.wait(timeout=60)
    assert code in ((-9,) if sig == signal.SIGKILL else (143, -15)), code
    deadline = time.time() + 5
    while _alive(children) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(children), f"orphans after {sig.name}: {sorted(_alive(children))}"
    assert not (work / "render.jsonl").exists()

    resumed = _start(site, work, 0.0)
    assert resumed.wait(timeout=300) == 0
    assert _files(work) == ref_files
