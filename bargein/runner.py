"""The pipeline runner: content-addressed, resumable, deterministic, concurrent.

A :class:`Stage` is a plain function ``fn(item, ctx) -> Record | list[Record]`` plus what its
output depends on. :func:`run_stage` applies it to every input item:

* each item's output is stored under a key hashed from (stage name, version, config, prompt
  file hashes, backend ids, seed, input record) in ``workdir/cache/<stage>/``, written
  atomically, so a run killed at any point (``kill -9`` included) resumes without redoing
  finished items, and a finished run re-runs from cache;
* the entry also lists every file the item wrote (path, bytes, sha256; see
  :mod:`bargein.cache`): a cached record is served only while each of those files is intact,
  otherwise that item alone is computed again;
* a failing item becomes a :class:`Failure` (stage, reason, evidence) in
  ``workdir/<stage>.failures.jsonl`` and the batch goes on; failures are retried on the next run;
* outputs are written to ``workdir/<stage>.jsonl`` in input order, atomically;
* ``kind="io"`` stages are ``async def`` and run concurrently under a bound;
  ``kind="cpu"`` stages run in worker processes; ``kind="inline"`` runs in the caller;
* worker processes die with the runner: ``kill -9`` or ``SIGTERM`` of the parent leaves no
  worker behind (parent-death signal plus a parent watch in each worker).

Every item gets its own RNG seeded from (seed, stage, item id) through SHA-256.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import pickle
import random
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from bargein.cache import ArtifactRef, ContentCache, check_artifacts, note_written, recording
from bargein import executors
from bargein.errors import BargeinError, BudgetExceeded
from bargein.records.base import Record
from bargein.records.release import Failure
from bargein.seeding import _plain, canonical_json, item_seed, stable_hash
from bargein.store import write_jsonl

log = logging.getLogger("bargein.runner")

StageKind = Literal["inline", "io", "cpu"]


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline. ``fn`` must be a module-level function for ``kind="cpu"``."""

    name: str
    fn: Callable[..., Any]
    output: type[Record]
    config: Any = None
    version: str = "1"
    prompts: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    kind: StageKind = "inline"
    concurrency: int = 8

    def fingerprint(self) -> str:
        """Hash of everything but the input that the stage's output depends on."""
        from bargein.prompts import prompt_hash

        return stable_hash(
            "stage", self.name, self.version, _plain(self.config),
            {p: prompt_hash(p) for p in self.prompts}, list(self.backends),
            self.output.__name__,
        )


@dataclass
class StageContext:
    """What a stage function gets besides its input item."""

    stage: str
    item_id: str
    seed: int
    workdir: Path
    config: Any = None
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def item_seed(self) -> int:
        return item_seed(self.seed, self.stage, self.item_id)

    @property
    def rng(self) -> random.Random:
        return random.Random(self.item_seed)

    @property
    def np_rng(self) -> np.random.Generator:
        return np.random.default_rng(self.item_seed)

    @property
    def artifacts(self) -> Path:
        """A folder for files this stage writes (audio); name them by content, write atomically."""
        p = self.workdir / "artifacts" / self.stage
        p.mkdir(parents=True, exist_ok=True)
        return p

    def wrote(self, path: str | os.PathLike) -> None:
        """Declare a file this item wrote without :func:`bargein.store.atomic_write_bytes`
        (files written through it are noted already): the cached record then depends on it."""
        note_written(path)


@dataclass
class StageResult:
    stage: str
    outputs: list[Record]
    failures: list[Failure]
    computed: int = 0
    cached: int = 0
    stale: int = 0                      # cache entries whose artifacts were missing or changed
    skipped: int = 0
    budget_stopped: bool = False
    wall_s: float = 0.0

    def summary(self) -> str:
        s = (f"{self.stage}: {len(self.outputs)} outputs from {self.computed + self.cached} items "
             f"({self.cached} cached, {self.computed} computed), {len(self.failures)} failed")
        if self.stale:
            s += f"; {self.stale} recomputed because their files were missing or changed"
        if self.budget_stopped:
            s += f"; budget reached, {self.skipped} items not started"
        return s


def _item_id(item: Any) -> str:
    if isinstance(item, Record):
        return item.id
    raise BargeinError(f"runner inputs must be records with an id, got {type(item).__name__}")


def item_key(stage: Stage, fingerprint: str, seed: int, item: Record) -> str:
    return stable_hash("item", fingerprint, seed, item.model_dump(mode="json"))


def stage_cache(workdir: Path, stage: Stage) -> ContentCache:
    """The stage's entries: ``workdir/cache/<stage>/ab/<key>.json``."""
    return ContentCache(Path(workdir) / "cache" / stage.name, ".json")


def _to_list(result: Any) -> list[Record]:
    if result is None:
        return []
    if isinstance(result, Record):
        return [result]
    return list(result)


def _failure(stage: Stage, item_id: str, exc: BaseException) -> Failure:
    """The item's :class:`Failure`: the exception's evidence as JSON (its ``repr`` when it is not
    JSON, the last traceback frames when there is none). Evidence whose keys bargein types have
    values of another type (a stage's bug) is kept as its JSON text, never lost."""
    evidence = getattr(exc, "evidence", None)
    if evidence is None:
        evidence = {"traceback": traceback.format_exception(exc)[-3:]}
    try:
        evidence = json.loads(canonical_json(evidence))
    except (TypeError, ValueError):
        evidence = repr(evidence)
    if not isinstance(evidence, (dict, list, str)):
        evidence = {"value": evidence}            # a bare number or flag
    kw = {"stage": stage.name, "item_id": item_id, "reason": str(exc) or type(exc).__name__,
          "error_type": type(exc).__name__}
    try:
        return Failure(**kw, evidence=evidence)
    except ValidationError as e:
        log.warning("stage %s, item %s: the failure's evidence does not fit FailureEvidence (%s); "
                    "kept as JSON text", stage.name, item_id, str(e).splitlines()[0])
        return Failure(**kw, evidence=canonical_json(evidence))


ENTRY_VERSION = 2          # 2: entries list the artifacts their records depend on


def _encode(outputs: list[Record], artifacts: list[ArtifactRef]) -> str:
    return json.dumps({"v": ENTRY_VERSION, "outputs": [json.loads(o.model_dump_json()) for o in outputs],
                       "artifacts": [a.to_json() for a in artifacts]},
                      sort_keys=True, ensure_ascii=False)


def _decode(stage: Stage, text: str) -> list[Record]:
    return [stage.output.model_validate(o) for o in json.loads(text)["outputs"]]


def _valid_entry(stage: Stage, text: str, workdir: Path) -> tuple[list[Record] | None, str]:
    """The cached outputs when the entry is readable and every artifact it lists is intact;
    otherwise ``(None, why)``."""
    try:
        d = json.loads(text)
        if d.get("v") != ENTRY_VERSION:
            return None, f"entry format {d.get('v')!r} is not {ENTRY_VERSION}"
        refs = [ArtifactRef.from_json(a) for a in d["artifacts"]]
        outputs = [stage.output.model_validate(o) for o in d["outputs"]]
    except (ValueError, KeyError, TypeError) as e:
        return None, f"unreadable entry ({type(e).__name__})"
    problems = check_artifacts(refs, workdir)
    if problems:
        return None, "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
    return outputs, ""


def _call(stage: Stage, item: Record, ctx: "StageContext") -> str:
    """Run the stage function on one item; the encoded cache entry (outputs + artifacts).

    BLAS runs single-threaded inside a stage: a multi-threaded OpenBLAS sums in an order that
    depends on the thread count, which changed rendered audio bytes between machines (and
    between a local worker and a Ray worker, where Ray sets OMP_NUM_THREADS=1). One thread per
    item is also what keeps N workers from oversubscribing N cores."""
    from threadpoolctl import threadpool_limits

    with recording() as written, threadpool_limits(limits=1, user_api="blas"):
        outputs = _to_list(stage.fn(item, ctx))
    return _encode(outputs, written.refs(ctx.workdir))


async def _call_async(stage: Stage, item: Record, ctx: "StageContext") -> str:
    with recording() as written:          # each asyncio task has its own context
        out = stage.fn(item, ctx)
        if inspect.isawaitable(out):
            out = await out
    return _encode(_to_list(out), written.refs(ctx.workdir))


class _Progress:
    """tqdm on a TTY, quiet otherwise; shows spend when a ledger is in the resources."""

    def __init__(self, name: str, total: int, resources: dict[str, Any], enabled: bool | None):
        self.resources = resources
        if enabled is None:
            enabled = sys.stderr.isatty() and os.environ.get("BARGEIN_PROGRESS", "1") != "0"
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=name, unit="item", dynamic_ncols=True, leave=True)

    def update(self, n: int = 1) -> None:
        if self.bar is None:
            return
        ledger = self.resources.get("ledger")
        if ledger is not None:
            self.bar.set_postfix_str(ledger.spend_str(), refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---- worker-process plumbing (kind="cpu") -----------------------------------------------
_WORKER_RESOURCES: dict[str, Any] = {}
PARENT_POLL_S = 0.5


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker end when the runner process ends, however it ends (``kill -9`` too).

    Linux: ``PR_SET_PDEATHSIG`` sends SIGKILL when the parent dies. Everywhere: a daemon thread
    polls the parent pid and exits when the worker was re-parented.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            log.debug("prctl(PR_SET_PDEATHSIG) unavailable; relying on the parent watch")
    if os.getppid() != parent_pid:          # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="bargein-parent-watch", daemon=True).start()


def _worker_init(parent_pid: int, registry_state: dict[str, Any] | None,
                 factory: Callable[[], dict[str, Any]] | None) -> None:
    global _WORKER_RESOURCES
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent decides; Ctrl-C reaches it too
    if registry_state is not None:
        from bargein import registry

        registry.restore(registry_state)
    _WORKER_RESOURCES = factory() if factory else {}


def _worker_call(stage: Stage, item: Record, seed: int, workdir: str) -> tuple[str, str]:
    ctx = StageContext(stage=stage.name, item_id=item.id, seed=seed, workdir=Path(workdir),
                       config=stage.config, resources=_WORKER_RESOURCES)
    try:
        return "ok", _call(stage, item, ctx)
    except Exception as exc:  # noqa: BLE001 - every item failure is recorded, the batch goes on
        return "fail", _failure(stage, item.id, exc).model_dump_json()


def _registry_for_workers() -> dict[str, Any]:
    """This process's registrations that a worker can import (module-level factories)."""
    from bargein import registry

    state = registry.snapshot()
    for kind, entries in state["runtime"].items():
        for name in list(entries):
            try:
                pickle.dumps(entries[name])
            except Exception as e:  # noqa: BLE001 - any pickling error means: not for workers
                log.warning("%s backend %r is registered in this process only (%s); worker processes "
                            "will not see it. Fix: register a module-level class or function, or "
                            "declare an entry point in group 'bargein.%s'", kind, name, e, kind)
                del entries[name]
    return state


def run_stage(
    stage: Stage,
    items: Sequence[Record] | Iterable[Record],
    *,
    workdir: str | os.PathLike,
    seed: int,
    resources: dict[str, Any] | None = None,
    resources_factory: Callable[[], dict[str, Any]] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    write_outputs: bool = True,
) -> StageResult:
    """Apply ``stage`` to ``items``; see the module docstring."""
    t0 = time.perf_counter()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    items = list(items)
    ids = [_item_id(i) for i in items]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dupes = {i for i in ids if i in seen or seen.add(i)}
        raise BargeinError(f"stage {stage.name!r}: duplicate input ids {sorted(dupes)[:5]}")
    resources = dict(resources or {})
    if resources_factory is not None and stage.kind != "cpu":
        resources.update(resources_factory())
    fp = stage.fingerprint()
    keys = [item_key(stage, fp, seed, it) for it in items]
    cache = stage_cache(workdir, stage)
    results: dict[int, list[Record]] = {}
    failures: dict[int, Failure] = {}
    todo: list[int] = []
    stale = 0
    for n, key in enumerate(keys):
        text = cache.get_text(key)
        if text is not None:
            outputs, why = _valid_entry(stage, text, workdir)
            if outputs is not None:
                results[n] = outputs
                continue
            stale += 1
            log.warning("stage %s: item %s recomputed: %s", stage.name, ids[n], why)
        todo.append(n)
    result = StageResult(stage=stage.name, outputs=[], failures=[], cached=len(results), stale=stale)
    bar = _Progress(stage.name, len(todo), resources, progress)

    def done(n: int, entry: str | None, failure: Failure | None) -> None:
        if failure is not None:
            failures[n] = failure
        else:
            # store and keep the decoded form, so a first run and a cached re-run are
            # byte-identical (JSON round-trip normalises dict key order)
            cache.put_text(keys[n], entry)
            results[n] = _decode(stage, entry)
            result.computed += 1
        bar.update()

    def ctx_for(n: int) -> StageContext:
        return StageContext(stage=stage.name, item_id=ids[n], seed=seed, workdir=workdir,
                            config=stage.config, resources=resources)

    try:
        if stage.kind == "io" or inspect.iscoroutinefunction(stage.fn):
            with _heap_frozen():
                result.budget_stopped = asyncio.run(_run_async(stage, items, todo, ctx_for, done))
        elif stage.kind == "cpu" and todo and executors.current().kind == "ray":
            _run_ray(stage, items, todo, seed, workdir, resources_factory, done)
        elif stage.kind == "cpu" and (workers or 0) != 1 and len(todo) > 1:
            _run_processes(stage, items, todo, seed, workdir, resources_factory, workers, done)
        else:
            if stage.kind == "cpu" and resources_factory is not None:
                resources.update(resources_factory())
            for n in todo:
                try:
                    done(n, _call(stage, items[n], ctx_for(n)), None)
                except BudgetExceeded:
                    result.budget_stopped = True
                    break
                except Exception as exc:  # noqa: BLE001
                    done(n, None, _failure(stage, ids[n], exc))
    finally:
        bar.close()
    result.skipped = len(items) - len(results) - len(failures)
    result.outputs = [o for n in range(len(items)) for o in results.get(n, [])]
    result.failures = [failures[n] for n in sorted(failures)]
    if write_outputs:
        write_jsonl(workdir / f"{stage.name}.jsonl", result.outputs)
        write_jsonl(workdir / f"{stage.name}.failures.jsonl", result.failures)
    result.wall_s = time.perf_counter() - t0
    log.info(result.summary())
    return result


_FREEZE_LOCK = threading.Lock()
_freezers = 0


@contextmanager
def _heap_frozen():
    """Keep the objects alive when an I/O stage starts (modules, the inputs, the caller's data)
    out of the cyclic garbage collector while it runs (``gc.freeze``), and give them back after.

    An I/O stage allocates per call (requests, responses, records); every so often that makes
    Python scan the oldest generation, and with a large heap that scan stops the event loop
    for tens of milliseconds while every call in flight waits. What the stage itself creates is
    collected as usual; garbage that existed before it is collected after it. Nested and
    concurrent stages share one freeze, undone when the last one ends.
    """
    global _freezers
    import gc

    with _FREEZE_LOCK:
        if _freezers == 0:
            gc.freeze()
        _freezers += 1
    try:
        yield
    finally:
        with _FREEZE_LOCK:
            _freezers -= 1
            if _freezers == 0:
                gc.unfreeze()


async def _run_async(stage, items, todo, ctx_for, done) -> bool:
    sem = asyncio.Semaphore(max(1, stage.concurrency))
    stopped = False

    async def one(n: int) -> None:
        nonlocal stopped
        async with sem:
            if stopped:
                return
            try:
                done(n, await _call_async(stage, items[n], ctx_for(n)), None)
            except BudgetExceeded:
                stopped = True
            except Exception as exc:  # noqa: BLE001
                done(n, None, _failure(stage, items[n].id, exc))

    await asyncio.gather(*(one(n) for n in todo))
    return stopped


class _Terminated(BaseException):
    """SIGTERM reached the runner while worker processes were running."""


@contextmanager
def _sigterm_stops_workers():
    """In the main thread, turn SIGTERM into an exception, so the pool is shut down and the
    process exits 143 (the workers die with it in any case, see :func:`_die_with_parent`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        log.warning("SIGTERM: worker processes stopped; finished items are cached, re-run to resume")
        raise SystemExit(128 + signal.SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (work in flight is not cached)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(5)
        except (OSError, ValueError, AssertionError, AttributeError):
            pass


def _run_ray(stage, items, todo, seed, workdir, factory, done) -> None:
    """The same worker call as :func:`_run_processes`, as Ray tasks (see bargein.executors)."""

    def finished(n: int, entry: str | None, failure_json: str | None) -> None:
        if entry is not None:
            done(n, entry, None)
        else:
            done(n, None, Failure.model_validate_json(failure_json))

    def crashed(n: int, exc: BaseException) -> None:
        done(n, None, _failure(stage, items[n].id, exc))

    executors.run_on_ray(executors.current(), _ray_task, stage, items, todo, seed, str(workdir),
                         factory, _registry_for_workers(), finished, crashed)


# state kept per Ray worker process: resources built once per stage fingerprint, not per item
_RAY_RESOURCES: dict[str, dict[str, Any]] = {}


def _ray_task(stage: Stage, item: Record, seed: int, workdir: str,
              registry_state: dict[str, Any] | None,
              factory: Callable[[], dict[str, Any]] | None, key: str) -> tuple[str, str]:
    """One item on a Ray worker: the same call as a local worker process makes."""
    global _WORKER_RESOURCES
    if key not in _RAY_RESOURCES:
        if registry_state is not None:
            from bargein import registry

            registry.restore(registry_state)
        _RAY_RESOURCES[key] = factory() if factory else {}
    _WORKER_RESOURCES = _RAY_RESOURCES[key]
    return _worker_call(stage, item, seed, workdir)


def _run_processes(stage, items, todo, seed, workdir, factory, workers, done) -> None:
    import multiprocessing as mp

    workers = workers or max(1, min(len(todo), os.cpu_count() or 1))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                               initializer=_worker_init,
                               initargs=(os.getpid(), _registry_for_workers(), factory))
    finished_ok = False
    with _sigterm_stops_workers():
        try:
            pending = {}
            queue = list(todo)
            while queue or pending:
                while queue and len(pending) < workers * 2:
                    n = queue.pop(0)
                    pending[pool.submit(_worker_call, stage, items[n], seed, str(workdir))] = n
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    n = pending.pop(fut)
                    try:
                        status, payload = fut.result()
                    except Exception as exc:  # noqa: BLE001 - a crashed worker fails its item
                        done(n, None, _failure(stage, items[n].id, exc))
                        continue
                    if status == "ok":
                        done(n, payload, None)
                    else:
                        done(n, None, Failure.model_validate_json(payload))
            finished_ok = True
        finally:
            if finished_ok:
                pool.shutdown(wait=True)
            else:
                _stop_pool(pool)


def run(
    stages: Sequence[Stage],
    items: Sequence[Record],
    *,
    workdir: str | os.PathLike,
    seed: int,
    resources: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> list[StageResult]:
    """Compose stages: the outputs of each feed the next."""
    out = []
    for stage in stages:
        res = run_stage(stage, items, workdir=workdir, seed=seed, resources=resources,
                        progress=progress)
        out.append(res)
        items = res.outputs
        if res.budget_stopped:
            break
    return out
