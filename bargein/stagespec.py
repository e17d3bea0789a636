"""Declared stages and how they are checked and run (the machinery of :mod:`bargein.pipeline`).

A :class:`StageSpec` names the record types a stage reads and writes, the files it leaves in the
work directory, its serialisable backend config and settings, and the function that runs it.
:func:`validate` checks the wiring of a list of specs before anything runs — every input type
has exactly one upstream producer, every file read has a writer, the graph has no cycle, every
backend key a stage needs is set, backend and settings are JSON — and orders them; :func:`run`
executes a validated :class:`Plan`. ``bargein build`` runs the whole plan; each stage command
runs one declared spec behind a source of the files it was given (:func:`bargein.pipeline.run_stages`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bargein.errors import BargeinError, ConfigError
from bargein.records.base import Record

if TYPE_CHECKING:
    from bargein.config import BuildConfig


class WiringError(ConfigError):
    """The declared stages do not form a valid pipeline (found before anything runs)."""


@dataclass(frozen=True)
class StageSpec:
    """One declared stage of the build.

    ``inputs`` must each be produced by exactly one upstream stage; ``optional_inputs`` are used
    when some stage produces them. ``artifacts`` names the files (relative to the work directory)
    the stage writes, by key; ``reads`` are artifact keys of upstream stages it reads from disk
    (``optional_reads`` when present). ``backend`` is the serialisable config of the backends it
    uses; every key in ``needs`` must be set there. ``settings`` are the stage's own options
    (from the build config, or from the stage's command), serialisable like ``backend``; the
    stage function reads them as ``state.settings``. ``fn(state)`` runs it.
    """

    name: str
    inputs: tuple[type[Record], ...]
    outputs: tuple[type[Record], ...]
    fn: Callable[[BuildState], StageOutcome]
    artifacts: Mapping[str, str] = field(default_factory=dict)
    backend: Mapping[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    optional_inputs: tuple[type[Record], ...] = ()
    reads: tuple[str, ...] = ()
    optional_reads: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class StageOutcome:
    """What a stage hands on: its records by type, counts for the summary, failures by runner
    stage, and the library call's own result (what a stage command prints)."""

    records: dict[type[Record], list] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    result: Any = None


@dataclass
class BuildState:
    """What every stage function sees: where to work, the seed, upstream records/artifacts and
    the running stage's backend and settings. ``config`` is the build's config (None when one
    stage runs from its command); ``workers`` and ``progress`` are execution settings, never
    part of an output."""

    config: BuildConfig | None
    workdir: Path
    out_dir: Path
    seed: int
    progress: bool | None = None
    previous: Path | None = None
    records: dict[type[Record], list] = field(default_factory=dict)
    artifacts: dict[str, Path] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    dag: list[dict[str, Any]] = field(default_factory=list)
    backend: Mapping[str, Any] = field(default_factory=dict)    # the running stage's backend config
    settings: Mapping[str, Any] = field(default_factory=dict)   # the running stage's settings
    workers: int | None = None
    outcomes: dict[str, StageOutcome] = field(default_factory=dict)
    label: str | None = "bargein build"          # prefix of progress lines; None: silent
    # a build stops at a stage with no usable output or a missing artifact; a stage command
    # (False) reports what its stage produced and exits 1 when that is nothing
    stop_if_empty: bool = True

    def say(self, msg: str) -> None:
        if self.label:
            print(f"[{self.label}] {msg}", file=sys.stderr, flush=True)

    def artifact(self, key: str) -> Path | None:
        return self.artifacts.get(key)


@dataclass(frozen=True)
class Plan:
    """Validated specs in the order they run."""

    stages: tuple[StageSpec, ...]
    producers: Mapping[type[Record], str]
    writers: Mapping[str, str]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    def describe(self) -> list[dict[str, Any]]:
        """The DAG as data (recorded in the release's provenance)."""
        return [{"stage": s.name, "inputs": [t.__name__ for t in s.inputs + s.optional_inputs
                                             if t in self.producers],
                 "outputs": [t.__name__ for t in s.outputs],
                 "after": sorted(_upstream(s, self.producers, self.writers)),
                 "backend": dict(s.backend)} for s in self.stages]


# ---- validation -----------------------------------------------------------------------------

def _upstream(spec: StageSpec, producers: Mapping[type[Record], str],
              writers: Mapping[str, str]) -> set[str]:
    by_type = {producers[t] for t in spec.inputs + spec.optional_inputs if t in producers}
    by_file = {writers[k] for k in spec.reads + spec.optional_reads if k in writers}
    return by_type | by_file


def validate(specs: Sequence[StageSpec]) -> Plan:
    """Check the wiring of ``specs`` and order them; raise :class:`WiringError` naming the stage,
    the record type or backend key, and the fix. Nothing runs here."""
    problems: list[str] = []
    names = [s.name for s in specs]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"stage {dup!r} is declared {names.count(dup)} times; give each stage one name")
    producers: dict[type[Record], str] = {}
    for s in specs:
        for t in s.outputs:
            if t in producers:
                problems.append(f"{t.__name__} records are produced by both {producers[t]!r} and "
                                f"{s.name!r}; one stage must own each record type")
            producers.setdefault(t, s.name)
    writers: dict[str, str] = {}
    for s in specs:
        for key in s.artifacts:
            if key in writers:
                problems.append(f"artifact {key!r} is written by both {writers[key]!r} and "
                                f"{s.name!r}; give each artifact one writer")
            writers.setdefault(key, s.name)
    for s in specs:
        for t in s.inputs:
            if t not in producers:
                problems.append(f"stage {s.name!r} reads {t.__name__} records but no stage produces "
                                f"them; add or enable the stage that writes {t.__name__}")
        for key in s.reads:
            if key not in writers:
                problems.append(f"stage {s.name!r} reads artifact {key!r} but no stage writes it; "
                                f"add or enable the stage that writes {key!r}")
        for key in s.needs:
            if s.backend.get(key) in (None, ""):
                problems.append(f"stage {s.name!r} needs backend setting {key!r}, which is not set; "
                                f"set it in the config")
        for what, value in (("backend config", s.backend), ("settings", s.settings)):
            try:
                json.dumps(dict(value), sort_keys=True, allow_nan=False)
            except (TypeError, ValueError) as e:
                problems.append(f"stage {s.name!r}: {what} is not serialisable ({e}); workers "
                                "receive it as JSON, so give names and numbers, not objects")
    if problems:
        raise WiringError("pipeline wiring:\n" + "\n".join(f"  {p}" for p in problems))
    graph = {s.name: _upstream(s, producers, writers) for s in specs}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as e:
        cycle = " -> ".join(e.args[1])
        raise WiringError(f"pipeline wiring: the stages form a cycle ({cycle}); a stage may only "
                          "read records of stages before it") from None
    by_name = {s.name: s for s in specs}
    # stable: among ready stages keep the declared order
    rank = {n: i for i, n in enumerate(names)}
    ordered: list[str] = []
    done: set[str] = set()
    while len(ordered) < len(order):
        ready = [n for n in names if n not in done and graph[n] <= done]
        nxt = min(ready, key=rank.__getitem__)
        ordered.append(nxt)
        done.add(nxt)
    return Plan(stages=tuple(by_name[n] for n in ordered), producers=producers, writers=writers)


# ---- running --------------------------------------------------------------------------------

def run(p: Plan, state: BuildState) -> dict[str, float]:
    """Run the validated plan's stages in order; returns seconds per stage."""
    times: dict[str, float] = {}
    state.order, state.dag = p.names, p.describe()
    for spec in p.stages:
        missing = [t.__name__ for t in spec.inputs if t not in state.records]
        if missing:     # validate() makes this unreachable unless a stage broke its declaration
            raise WiringError(f"stage {spec.name!r} found no {', '.join(missing)} records from "
                              "upstream; its producer did not return what it declares")
        state.say(f"{spec.name} ...")
        state.backend, state.settings = dict(spec.backend), dict(spec.settings)
        t0 = time.perf_counter()
        outcome = spec.fn(state)
        state.outcomes[spec.name] = outcome
        times[spec.name] = round(time.perf_counter() - t0, 3)
        for t, recs in outcome.records.items():
            if t not in spec.outputs:
                raise WiringError(f"stage {spec.name!r} returned {t.__name__} records, which it "
                                  "does not declare as an output")
            state.records[t] = recs
        state.counts.update(outcome.counts)
        state.failures.update(outcome.failures)
        for key, rel in spec.artifacts.items():
            path = state.workdir / rel
            if not path.is_file():
                if not state.stop_if_empty:
                    continue
                raise BargeinError(f"stage {spec.name!r} did not write its artifact {path}; "
                                   "re-run with -v to see why")
            state.artifacts[key] = path
    return times
