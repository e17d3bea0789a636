"""The composition layer: declared stages and the DAG that ``bargein build`` runs.

    scenarios -> conversations (simulate, rubrics, verify/modify, eval items, SFT/DPO)
        -> baseline -> render (two-channel audio) -> mask (repair items)
                                                  -> perturb (timing pairs)
        -> release (Parquet + card + manifest)

Each stage is a :class:`StageSpec`: the record types it reads and writes, the files it leaves in
the work directory, a serialisable backend config (the LLM spec, voices, VAD, ...) and the
library call that runs it. :func:`plan` declares the specs for a :class:`BuildConfig`;
:func:`validate` checks the wiring before anything runs — every input type has exactly one
upstream producer, the graph has no cycle, every backend key a stage needs is set and
serialisable — so a wiring error fails before the first item. :func:`run` executes the stages in
topological order; each one's items go through :func:`bargein.runner.run_stage`, so every stage
is content-addressed in ``workdir``: an interrupted build resumes where it stopped and a finished
build re-runs from cache. Failures stay in ``workdir/<stage>.failures.jsonl``; a stage with no
usable output stops the build with a clear error rather than publishing an empty config.

:func:`build` is the one library path behind ``bargein build``; ``bargein release build`` runs
the last stage (:func:`bargein.releases.build.build_release`) alone on files you give it.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

from bargein import __version__
from bargein.config import BuildConfig
from bargein.errors import BargeinError, ConfigError
from bargein.records import (
    EvalItem, MaskedItem, PerturbationPair, ReleaseManifest, RenderedDialogue, Scenario,
    VerifiedConversation,
)
from bargein.records.base import Record

log = logging.getLogger("bargein.build")


class WiringError(ConfigError):
    """The declared stages do not form a valid pipeline (found before anything runs)."""


@dataclass(frozen=True)
class StageSpec:
    """One declared stage of the build.

    ``inputs`` must each be produced by exactly one upstream stage; ``optional_inputs`` are used
    when some stage produces them. ``artifacts`` names the files (relative to the work directory)
    the stage writes, by key; ``reads`` are artifact keys of upstream stages it reads from disk
    (``optional_reads`` when present). ``backend`` is the serialisable config of the backends it
    uses; every key in ``needs`` must be set there. ``fn(state)`` runs it.
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


@dataclass
class StageOutcome:
    """What a stage hands on: its records by type, counts for the summary, failures by runner stage."""

    records: dict[type[Record], list] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)


@dataclass
class BuildState:
    """What every stage function sees: the config, where to work, and upstream records/artifacts."""

    config: BuildConfig
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


@dataclass
class BuildReport:
    manifest: ReleaseManifest
    out_dir: Path
    workdir: Path
    stage_seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    stages: tuple[str, ...] = ()


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
        try:
            json.dumps(dict(s.backend), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            problems.append(f"stage {s.name!r}: backend config is not serialisable ({e}); workers "
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


# ---- the stages of a build ------------------------------------------------------------------

def _scenarios(state: BuildState) -> StageOutcome:
    from bargein.generators.scenarios import generate_scenarios

    c = state.config
    res = generate_scenarios(c.scenarios.n, state.seed, llm=c.llm, workdir=state.workdir,
                             domains=c.scenarios.domains, progress=state.progress,
                             **({"budget_usd": c.budget_usd} if c.budget_usd else {}))
    if not res.outputs:
        raise BargeinError(f"no scenario could be generated ({len(res.failures)} failed); "
                           f"see {state.workdir / 'scenarios.failures.jsonl'}")
    _say(f"{len(res.outputs)} scenarios")
    return StageOutcome({Scenario: list(res.outputs)}, {"scenarios": len(res.outputs)},
                        {"scenarios": len(res.failures)})


def _conversations(state: BuildState) -> StageOutcome:
    from bargein.generators.conversation import generate_conversations

    c = state.config
    run = generate_conversations(state.records[Scenario], seed=state.seed, workdir=state.workdir,
                                 llm=c.llm, verify_rounds=c.conversations.verify_rounds,
                                 sft=c.exports.sft, dpo=c.exports.dpo, progress=state.progress)
    accepted = [v for v in run.verified if v.accepted]
    if not accepted:
        raise BargeinError("every conversation was discarded by the verifier; see "
                           f"{state.workdir / 'verified.jsonl'} for the reasons")
    _say(f"{len(accepted)} verified conversations, {len(run.items)} interruption points")
    return StageOutcome({VerifiedConversation: accepted, EvalItem: list(run.items)},
                        {"conversations": len(accepted), "eval_items": len(run.items)},
                        {k: len(r.failures) for k, r in run.results.items()})


def _baseline(state: BuildState) -> StageOutcome:
    # IHBench's comparative reference: the configured LLM, or the rule-based assistant seeing
    # only the item (labelled "offline-rule")
    from bargein.generators.baseline import fill_baselines

    res = fill_baselines(state.records[EvalItem], llm=state.config.llm, seed=state.seed,
                         workdir=state.workdir, progress=state.progress)
    return StageOutcome({}, {"baseline": len(res.outputs)}, {"baseline": len(res.failures)})


def _render(state: BuildState) -> StageOutcome:
    from bargein.audio.render import RenderConfig, render_conversations

    c = state.config
    res = render_conversations(state.records[VerifiedConversation], workdir=state.workdir,
                               seed=state.seed, config=RenderConfig.from_build(c.audio),
                               workers=c.audio.workers, progress=state.progress)
    _say(f"{len(res.outputs)} dialogues rendered ({len(res.failures)} failed)")
    if not res.outputs:
        raise BargeinError(f"no dialogue could be rendered ({len(res.failures)} failed); see "
                           f"{state.workdir / 'render.failures.jsonl'}")
    return StageOutcome({RenderedDialogue: list(res.outputs)}, {"rendered": len(res.outputs)},
                        {"render": len(res.failures)})


def _mask(state: BuildState) -> StageOutcome:
    from bargein.masking.items import MaskConfig
    from bargein.masking.stage import mask_rendered

    r = state.config.repair
    res = mask_rendered(state.records[RenderedDialogue], state.records[VerifiedConversation],
                        workdir=state.workdir, seed=state.seed,
                        config=MaskConfig(aligner=state.backend["aligner"]),
                        signals=tuple(r.signals), windows_ms=tuple(r.windows_ms),
                        max_items=r.max_items, workers=state.config.audio.workers,
                        progress=state.progress)
    return StageOutcome({MaskedItem: list(res.outputs)}, {"repair": len(res.outputs)},
                        {"mask": len(res.failures)})


def _perturb(state: BuildState) -> StageOutcome:
    from bargein.perturb.stage import run_perturb

    c, workdir = state.config, state.workdir
    # the perturbation stage reads audio by path: make the render's relative paths absolute
    dialogues = [rd.with_(audio_path=str((workdir / rd.audio_path).resolve()), id=rd.id)
                 if not Path(rd.audio_path).is_absolute() else rd
                 for rd in state.records[RenderedDialogue]]
    summary = run_perturb(dialogues, types=list(c.timing.types), per_type=c.timing.per_type,
                          out_dir=workdir / "perturb", workdir=workdir, seed=state.seed,
                          vad=state.backend["vad"], sample_rate=c.audio.sample_rate,
                          workers=c.audio.workers or 1)
    return StageOutcome({}, {"timing": int(summary["pairs"])}, {"perturb": int(summary["skipped"])})


def _release(state: BuildState) -> StageOutcome:
    from bargein.llm import agent_models
    from bargein.releases.build import ReleaseSources, build_release

    c, a = state.config, state.artifact
    routes = {} if c.llm == "offline" else agent_models()     # llm_agents over $BARGEIN_LLM_AGENTS
    provenance: dict[str, Any] = {
        "bargein_version": __version__,
        "config": c.provenance(),
        "seed": state.seed,
        "agents": "offline rule-based" if c.llm == "offline" else f"LLM: {c.llm}" + "".join(
            f"; {a}: {m}" for a, m in sorted(routes.items())),
        "llm": c.llm,
        "llm_agents": routes,
        "voices": {"assistant": c.audio.assistant_voice, "user": c.audio.user_voice},
        "prompt_sha256": _prompt_hashes(),
        "stage_failures": dict(state.failures),
        "stages": state.dag,
    }
    sources = ReleaseSources(
        conversations=a("verified"), rendered=a("rendered"), eval_items=a("baseline"),
        repair=a("repair"), timing=a("timing"), sft=a("sft"), dpo=a("dpo"), stats=a("stats"),
        audio_roots=(state.workdir, state.workdir / "perturb"))
    manifest = build_release(state.out_dir, name=c.name, version=c.version, sources=sources,
                             provenance=provenance, changelog=c.release.changelog,
                             previous=state.previous, pretty_name=c.release.pretty_name,
                             license=c.release.license, protect=(state.workdir,))
    _say(f"release {c.name} {c.version} -> {state.out_dir} "
         f"({', '.join(f'{k}={v}' for k, v in manifest.configs.items())})")
    return StageOutcome({ReleaseManifest: [manifest]})


def plan(config: BuildConfig) -> Plan:
    """The validated stage specs that build ``config`` (disabled stages are left out)."""
    c = config
    llm = {"llm": c.llm}
    specs = [
        StageSpec("scenarios", (), (Scenario,), _scenarios, {"scenarios": "scenarios.jsonl"},
                  llm, needs=("llm",)),
        StageSpec("conversations", (Scenario,), (VerifiedConversation, EvalItem), _conversations,
                  {"verified": "verified.jsonl", "eval_items": "eval_items.jsonl",
                   "stats": "stats.json", **({"sft": "sft.jsonl"} if c.exports.sft else {}),
                   **({"dpo": "dpo.jsonl"} if c.exports.dpo else {})},
                  llm, needs=("llm",)),
        StageSpec("baseline", (EvalItem,), (), _baseline, {"baseline": "baseline.jsonl"}, llm,
                  needs=("llm",)),
    ]
    if c.audio.enabled:
        specs.append(StageSpec(
            "render", (VerifiedConversation,), (RenderedDialogue,), _render,
            {"rendered": "render.jsonl"},
            {"assistant_voice": c.audio.assistant_voice, "user_voice": c.audio.user_voice,
             "sample_rate": c.audio.sample_rate}, needs=("assistant_voice", "user_voice")))
        if c.repair.enabled:
            specs.append(StageSpec(
                "mask", (RenderedDialogue, VerifiedConversation), (MaskedItem,), _mask,
                {"repair": "mask.jsonl"}, {"aligner": "auto"}, needs=("aligner",)))
        if c.timing.enabled:
            specs.append(StageSpec(
                "perturb", (RenderedDialogue,), (PerturbationPair,), _perturb,
                {"timing": "perturb/pairs.jsonl"}, {"vad": "silero"}, needs=("vad",)))
    specs.append(StageSpec(
        "release", (), (ReleaseManifest,), _release,
        reads=("verified", "baseline", "stats") + (("sft",) if c.exports.sft else ())
        + (("dpo",) if c.exports.dpo else ()),
        optional_reads=("rendered", "repair", "timing")))
    return validate(specs)


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
        _say(f"{spec.name} ...")
        state.backend = dict(spec.backend)
        t0 = time.perf_counter()
        outcome = spec.fn(state)
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
                raise BargeinError(f"stage {spec.name!r} did not write its artifact {path}; "
                                   "re-run with -v to see why")
            state.artifacts[key] = path
    return times


def build(config: BuildConfig, *, workdir: str | Path, out_dir: str | Path,
          progress: bool | None = None, previous: str | Path | None = None) -> BuildReport:
    """Run the whole pipeline for ``config`` and write the release folder ``out_dir``.

    The wiring is validated before the first stage starts."""
    p = plan(config)
    from bargein.outdir import check_replaceable, check_writable_dir

    workdir, out_dir = Path(workdir), Path(out_dir)
    check_replaceable(out_dir, protect=(workdir,))        # before any work: never after it
    check_writable_dir(workdir, option="--workdir")
    state = BuildState(config=config, workdir=workdir, out_dir=out_dir, seed=config.seed,
                       progress=progress, previous=Path(previous) if previous else None)
    from bargein.executors import using_executor

    from bargein.llm import set_agent_models

    set_agent_models(config.llm_agents)          # every LLM client of this build routes them
    try:
        with using_executor(config.executor):       # CPU stages: local processes or Ray tasks
            times = run(p, state)
    finally:
        set_agent_models(None)
    return BuildReport(manifest=state.records[ReleaseManifest][0], out_dir=out_dir,
                       workdir=workdir, stage_seconds=times, counts=state.counts,
                       failures=state.failures, stages=p.names)


def _say(msg: str) -> None:
    print(f"[bargein build] {msg}", file=sys.stderr, flush=True)


def _prompt_hashes() -> dict[str, str]:
    from bargein import prompts

    return {n: prompts.prompt_hash(n)[:16] for n in prompts.list_prompts()}
