"""Run one bad-input case through the real CLI and judge what it left behind.

Each case runs ``bargein.cli:main`` in a forked child (its own process group, stdout/stderr to
files, a wall-clock limit) or, for cases that need a fresh interpreter (the Hub client reads its
cache location at import), the installed ``bargein`` script in a subprocess. The sandbox is

    sandbox/
      cwd/        the command's working directory: work dir and outputs go here
      outside/    files no command may touch (victims of path traversal)
      stdout.txt, stderr.txt

and the shared, read-only inputs folder is checked as well. A case is *clean* when it left no
traceback, finished in time, changed nothing outside ``cwd/``, left no partial output
(``*.building``, ``*.tmp``, ``.*.old-*``, or a changed/new declared output after an error), no
process of its group survived, and its exit code and message are the expected ones.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TRACEBACK = "Traceback (most recent call last)"
RESULTS: dict[str, dict] = {}          # case id -> outcome, filled by the corpus test
LEFTOVER_SUFFIXES = (".building", ".tmp", ".partial", ".incomplete", ".lock")


@dataclass(frozen=True)
class Case:
    id: str
    command: str                         # e.g. "release build" (coverage is counted by this)
    kind: str                            # config | jsonl | json | audio | parquet | release | hub | provider | text | cli
    argv: tuple[str, ...]                # {in}: inputs folder, {cwd}, {outside}, {hub}: endpoint
    expect: str = "error"                # "error": non-zero exit, clear line; "ok": exit 0; "any"
    says: tuple[str, ...] = ()           # the error line must name says[0]; the rest anywhere
    outputs: tuple[str, ...] = ()        # paths under cwd the command writes: unchanged after an error
    setup: Callable[[Path, Path], object] | None = None   # (sandbox, inputs) -> prepares the sandbox
    env: tuple[tuple[str, str], ...] = ()
    llm: dict | None = None              # LoopbackLLMServer kwargs: OPENAI_/ANTHROPIC_BASE_URL set
    hub: str | None = None               # a LoopbackHub scenario name (see corpus.HUBS)
    subprocess: bool = False
    pending: str | None = None           # outcome waits on another change (named), reported apart
    timeout_s: float = 90.0
    check: Callable[[Path, "Result"], list[str]] | None = None   # extra problems, case-specific


@dataclass
class Result:
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    runaway: bool = False
    orphans: int = 0
    problems: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.stderr or TRACEBACK in self.stdout


def snapshot(root: Path, skip: Path | None = None) -> dict[str, tuple]:
    """path -> (size, mtime_ns) for files, ("dir",) for folders; ``skip`` subtree left out."""
    out: dict[str, tuple] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if skip is not None and (d == skip or skip in d.parents):
            dirnames[:] = []
            continue
        for n in dirnames:
            p = d / n
            if skip is None or p != skip:
                out[str(p.relative_to(root))] = ("dir",)
        for n in filenames:
            p = d / n
            try:
                st = p.lstat()
            except FileNotFoundError:
                continue
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def changed(before: dict, after: dict) -> list[str]:
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))


def leftovers(cwd: Path) -> list[str]:
    bad = []
    for p in cwd.rglob("*"):
        n = p.name
        if n.endswith(LEFTOVER_SUFFIXES) or (n.startswith(".") and ".old-" in n):
            if "cache" in p.relative_to(cwd).parts[:-1]:
                continue                       # content caches keep their own temp names
            bad.append(str(p.relative_to(cwd)))
    return sorted(bad)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _reap_group(pgid: int) -> int:
    """Kill what is left of the process group; how many were left (0 or 'some' = 1)."""
    if not _group_alive(pgid):
        return 0
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return 1


def run_forked(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> Result:
    out_f, err_f = cwd.parent / "stdout.txt", cwd.parent / "stderr.txt"
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:                                    # child: never returns
        code = 70
        try:
            os.setpgid(0, 0)
            os.chdir(cwd)
            os.environ.update(env)
            for fd, path in ((1, out_f), (2, err_f)):
                f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(f, fd)
                os.close(f)
            sys.stdin = open(os.devnull)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
            import faulthandler
            import logging

            faulthandler.dump_traceback_later(max(1.0, timeout_s - 2), exit=False)  # runaway: where
            root = logging.getLogger()
            for h in list(root.handlers):
                root.removeHandler(h)
            try:
                from bargein.cli import main

                ret = main(list(argv))
                code = ret if isinstance(ret, int) else 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:                   # what a user would see as a traceback
                traceback.print_exc()
                code = 70
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    runaway = False
    deadline = t0 + timeout_s
    status = None
    while True:
        wpid, status = os.waitpid(pid, os.WNOHANG)
        if wpid:
            break
        if time.perf_counter() > deadline:
            runaway = True
            os.killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    seconds = time.perf_counter() - t0
    orphans = 0 if runaway else _reap_group(pid)
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    return Result(code=code, stdout=out_f.read_text(errors="replace"),
                  stderr=err_f.read_text(errors="replace"), seconds=seconds, runaway=runaway,
                  orphans=orphans)


def bargein_script() -> list[str]:
    script = Path(sys.executable).with_name("bargein")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bargein.cli"]


def run_subprocess(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> Result:
    t0 = time.perf_counter()
    proc = subprocess.Popen([*bargein_script(), *argv], cwd=cwd, env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    runaway = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        runaway = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    orphans = 0 if runaway else _reap_group(proc.pid)
    return Result(code=proc.returncode, stdout=out, stderr=err,
                  seconds=time.perf_counter() - t0, runaway=runaway, orphans=orphans)


def error_line(stderr: str) -> str:
    for line in stderr.splitlines():
        s = line.strip()
        if s.lower().startswith("error"):
            return s
    return ""


def judge(case: Case, res: Result, cwd: Path, outputs_before: dict[str, dict]) -> list[str]:
    """Every way the case fell short of its expected outcome (empty when clean)."""
    p: list[str] = []
    if res.runaway:
        p.append(f"runaway: still running after {case.timeout_s:.0f} s; where it was:\n"
                 + res.stderr[-1500:])
    if res.traceback:
        p.append("traceback:\n" + (res.stderr or res.stdout)[-1500:])
    if res.orphans:
        p.append("processes of the command survived it")
    if res.outside:
        p.append(f"files written outside the target: {res.outside[:5]}")
    if res.leftovers:
        p.append(f"leftovers: {res.leftovers[:5]}")
    if res.runaway:
        return p
    text = (res.stderr + res.stdout).lower()
    if case.expect == "error":
        if res.code == 0:
            p.append(f"exit 0 where it should fail; stderr: {res.stderr[-300:]!r}")
        line = error_line(res.stderr)
        if not line:
            p.append(f"no 'error:' line on stderr: {res.stderr[-400:]!r}")
        elif case.says and case.says[0].lower() not in line.lower():
            p.append(f"error line does not name {case.says[0]!r}: {line[:300]!r}")
        for s in case.says[1:]:
            if s == "fix" and "try 'bargein" in text:
                continue                       # a usage error: click points at --help
            if s.lower() not in text:
                p.append(f"message lacks {s!r}: {res.stderr[-400:]!r}")
        for rel, before in outputs_before.items():
            if snapshot_one(cwd / rel) != before:
                p.append(f"partial output: {rel} changed although the command failed")
    elif case.expect == "ok":
        if res.code != 0:
            p.append(f"exit {res.code} where it should succeed: {res.stderr[-600:]!r}")
        for s in case.says:
            if s.lower() not in text:
                p.append(f"output lacks {s!r}: {(res.stdout + res.stderr)[-400:]!r}")
    return p


def snapshot_one(path: Path) -> dict:
    if path.is_dir():
        return snapshot(path)
    if path.exists():
        st = path.stat()
        return {".": (st.st_size, st.st_mtime_ns)}
    return {}
