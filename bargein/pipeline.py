"""The composition layer: declared stages and the DAG that ``bargein build`` runs.

    scenarios -> conversations (simulate, rubrics, verify/modify, eval items, SFT/DPO)
        -> baseline -> render (two-channel audio) -> mask (repair items)
                                                  -> perturb (timing pairs)
        -> release (Parquet + card + manifest)

Each stage is a :class:`~bargein.stagespec.StageSpec` made by one factory in :data:`SPECS`:
the record types it reads and writes, the files it leaves in the work directory, a serialisable
backend config, its settings (the stage's options) and the library call that runs it.
:func:`plan` declares the specs for a :class:`BuildConfig` (settings taken from the config);
:func:`~bargein.stagespec.validate` checks the wiring before anything runs; :func:`run` executes
the stages in topological order; each one's items go through :func:`bargein.runner.run_stage`,
so every stage is content-addressed in ``workdir``: an interrupted build resumes where it stopped
and a finished build re-runs from cache. Failures stay in ``workdir/<stage>.failures.jsonl``; a
stage with no usable output stops the build with a clear error rather than publishing an empty
config.

:func:`build` is the one library path behind ``bargein build``. Every stage command (``bargein
generate scenarios``, ``render``, ``mask``, ``release build`` ...) is a view over the same spec:
:func:`run_stages` puts a source stage that hands over the records and files the command was given
in front of the spec made with the command's settings, validates the two the same way and runs
them with the same runner and the same seed rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bargein import __version__
from bargein.config import BuildConfig
from bargein.errors import BargeinError
from bargein.records import (
    EvalItem, MaskedItem, PerturbationPair, ReleaseManifest, RenderedDialogue, Scenario,
    VerifiedConversation,
)
from bargein.records.base import Record
from bargein.stagespec import (  # noqa: F401 - the composition layer's public names
    BuildState, Plan, StageOutcome, StageSpec, WiringError, run, validate,
)


@dataclass
class BuildReport:
    manifest: ReleaseManifest
    out_dir: Path
    workdir: Path
    stage_seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    stages: tuple[str, ...] = ()


# ---- the stages -----------------------------------------------------------------------------

def _nothing(state: BuildState, what: str, failures: int, file: str) -> None:
    """A build stops at a stage with no usable output; a stage command reports it itself."""
    if state.stop_if_empty:
        raise BargeinError(f"{what} ({failures} failed); see {state.workdir / file}")


def _scenarios(state: BuildState) -> StageOutcome:
    from bargein.generators.scenarios import generate_scenarios

    s = state.settings
    res = generate_scenarios(s["n"], state.seed, llm=s["llm"], workdir=state.workdir,
                             domains=s.get("domains"), progress=state.progress,
                             **({"budget_usd": s["budget_usd"]} if s.get("budget_usd") is not None else {}))
    if not res.outputs:
        _nothing(state, "no scenario could be generated", len(res.failures), "scenarios.failures.jsonl")
    state.say(f"{len(res.outputs)} scenarios")
    return StageOutcome({Scenario: list(res.outputs)}, {"scenarios": len(res.outputs)},
                        {"scenarios": len(res.failures)}, res)


def _conversations(state: BuildState) -> StageOutcome:
    from bargein.generators.conversation import RESAMPLES, generate_conversations

    s = state.settings
    run_ = generate_conversations(state.records[Scenario], seed=state.seed, workdir=state.workdir,
                                  llm=s["llm"], verify_rounds=s["verify_rounds"], sft=s["sft"],
                                  dpo=s["dpo"], progress=state.progress,
                                  resamples=s.get("resamples", RESAMPLES))
    accepted = [v for v in run_.verified if v.accepted]
    if not accepted and state.stop_if_empty:
        raise BargeinError("every conversation was discarded by the verifier; see "
                           f"{state.workdir / 'verified.jsonl'} for the reasons")
    state.say(f"{len(accepted)} verified conversations, {len(run_.items)} interruption points")
    return StageOutcome({VerifiedConversation: accepted, EvalItem: list(run_.items)},
                        {"conversations": len(accepted), "eval_items": len(run_.items)},
                        {k: len(r.failures) for k, r in run_.results.items()}, run_)


def _baseline(state: BuildState) -> StageOutcome:
    # IHBench's comparative reference: the configured LLM, or the rule-based assistant seeing
    # only the item (labelled "offline-rule")
    from bargein.generators.baseline import fill_baselines

    s = state.settings
    res = fill_baselines(state.records[EvalItem], llm=s["llm"], seed=state.seed,
                         workdir=state.workdir, progress=state.progress,
                         temperature=s["temperature"], max_tokens=s["max_tokens"])
    return StageOutcome({}, {"baseline": len(res.outputs)}, {"baseline": len(res.failures)}, res)


def _render(state: BuildState) -> StageOutcome:
    from bargein.audio.render import RenderConfig, render_conversations

    res = render_conversations(state.records[VerifiedConversation], workdir=state.workdir,
                               seed=state.seed,
                               config=RenderConfig.model_validate(state.settings["render"]),
                               workers=state.workers, progress=state.progress)
    state.say(f"{len(res.outputs)} dialogues rendered ({len(res.failures)} failed)")
    if not res.outputs:
        _nothing(state, "no dialogue could be rendered", len(res.failures), "render.failures.jsonl")
    return StageOutcome({RenderedDialogue: list(res.outputs)}, {"rendered": len(res.outputs)},
                        {"render": len(res.failures)}, res)


def _mask(state: BuildState) -> StageOutcome:
    from bargein.masking.items import MaskConfig
    from bargein.masking.stage import mask_rendered

    s = state.settings
    res = mask_rendered(state.records[RenderedDialogue], state.records[VerifiedConversation],
                        workdir=state.workdir, seed=state.seed,
                        config=MaskConfig.model_validate(s["mask"]),
                        audio_root=s.get("audio_root") or "", signals=s.get("signals"),
                        windows_ms=s.get("windows_ms"), max_items=s.get("max_items"),
                        workers=state.workers, progress=state.progress)
    return StageOutcome({MaskedItem: list(res.outputs)}, {"repair": len(res.outputs)},
                        {"mask": len(res.failures)}, res)


def _mask_qa(state: BuildState) -> StageOutcome:
    from bargein.masking.items import MaskConfig
    from bargein.masking.qa import qa_sources
    from bargein.masking.stage import mask_sources

    s = state.settings
    sources = qa_sources(s["dataset"], workdir=state.workdir, audio_column=s["audio_column"],
                         question_column=s["question_column"], answer_column=s["answer_column"],
                         transcript_column=s.get("transcript_column"), id_column=s.get("id_column"),
                         split=s.get("split"), limit=s.get("limit"))
    res = mask_sources(sources, workdir=state.workdir, seed=state.seed,
                       config=MaskConfig.model_validate(s["mask"]), workers=state.workers,
                       progress=state.progress)
    return StageOutcome({MaskedItem: list(res.outputs)}, {"repair": len(res.outputs)},
                        {"mask": len(res.failures)}, res)


def _perturb(state: BuildState) -> StageOutcome:
    from bargein.perturb.stage import run_perturb

    s, workdir = state.settings, state.workdir
    # the perturbation stage reads audio by path: make the render's relative paths absolute
    dialogues = [rd.with_(audio_path=str((workdir / rd.audio_path).resolve()), id=rd.id)
                 if not Path(rd.audio_path).is_absolute() else rd
                 for rd in state.records[RenderedDialogue]]
    summary = run_perturb(dialogues, types=list(s["types"]), per_type=s["per_type"],
                          out_dir=Path(s.get("out_dir") or workdir / "perturb"), workdir=workdir,
                          seed=state.seed, vad=state.backend["vad"], sample_rate=s["sample_rate"],
                          workers=state.workers or 1, strict=s.get("strict", True),
                          protocol=s.get("protocol", "turnnat-bargein"))
    return StageOutcome({}, {"timing": int(summary["pairs"])}, {"perturb": int(summary["skipped"])},
                        summary)


def _release(state: BuildState) -> StageOutcome:
    from bargein.releases.build import ReleaseSources, build_release

    s, a = state.settings, state.artifact
    src = s.get("sources") or {}

    def chat(key: str) -> Any:
        v = src.get(key)
        return {k: Path(p) for k, p in v.items()} if isinstance(v, Mapping) else a(key)

    roots = tuple(Path(r) for r in src.get("audio_roots") or ()) or (state.workdir, state.workdir / "perturb")
    sources = ReleaseSources(
        conversations=a("verified"), rendered=a("rendered"), eval_items=a("baseline"),
        repair=a("repair"), timing=a("timing"), sft=chat("sft"), dpo=chat("dpo"),
        stats=a("stats"), audio_roots=roots,
        configs=tuple(src["configs"]) if src.get("configs") else None,
        test_percent=src.get("test_percent", 10), quality_thresholds=src.get("quality_thresholds"),
        allow_below_threshold=src.get("allow_below_threshold", False),
        profile=src.get("profile", "bargein"))
    provenance = {**dict(s.get("provenance") or {}),
                  **(_build_provenance(state) if state.config is not None else {})}
    manifest = build_release(state.out_dir, name=s["name"], version=s["version"], sources=sources,
                             provenance=provenance, changelog=s.get("changelog"),
                             previous=state.previous, pretty_name=s.get("pretty_name"),
                             license=s.get("license", "cc-by-4.0"), repo_hint=s.get("repo_hint"),
                             protect=(state.workdir,) if state.config is not None else ())
    state.say(f"release {s['name']} {s['version']} -> {state.out_dir} "
              f"({', '.join(f'{k}={v}' for k, v in manifest.configs.items())})")
    return StageOutcome({ReleaseManifest: [manifest]}, result=manifest)


def _build_provenance(state: BuildState) -> dict[str, Any]:
    from bargein.llm import agent_models

    c = state.config
    routes = {} if c.llm == "offline" else agent_models()     # $BARGEIN_LLM_AGENTS
    return {
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


# ---- the declared specs: one factory per stage, used by the build and the stage commands ------

def scenarios_spec(settings: Mapping[str, Any]) -> StageSpec:
    return StageSpec("scenarios", (), (Scenario,), _scenarios, {"scenarios": "scenarios.jsonl"},
                     {"llm": settings["llm"]}, needs=("llm",), settings=settings)


def conversations_spec(settings: Mapping[str, Any]) -> StageSpec:
    return StageSpec("conversations", (Scenario,), (VerifiedConversation, EvalItem), _conversations,
                     {"verified": "verified.jsonl", "eval_items": "eval_items.jsonl",
                      "stats": "stats.json", **({"sft": "sft.jsonl"} if settings["sft"] else {}),
                      **({"dpo": "dpo.jsonl"} if settings["dpo"] else {})},
                     {"llm": settings["llm"]}, needs=("llm",), settings=settings)


def baseline_spec(settings: Mapping[str, Any]) -> StageSpec:
    return StageSpec("baseline", (EvalItem,), (), _baseline, {"baseline": "baseline.jsonl"},
                     {"llm": settings["llm"]}, needs=("llm",), settings=settings)


def render_spec(settings: Mapping[str, Any]) -> StageSpec:
    r = settings["render"]
    return StageSpec("render", (VerifiedConversation,), (RenderedDialogue,), _render,
                     {"rendered": "render.jsonl"},
                     {"assistant_voice": r["assistant_voice"], "user_voice": r["user_voice"],
                      "sample_rate": r["sample_rate"]}, needs=("assistant_voice", "user_voice"),
                     settings=settings)


def mask_spec(settings: Mapping[str, Any]) -> StageSpec:
    return StageSpec("mask", (RenderedDialogue, VerifiedConversation), (MaskedItem,), _mask,
                     {"repair": "mask.jsonl"}, {"aligner": settings["mask"]["aligner"]},
                     needs=("aligner",), settings=settings)


def mask_qa_spec(settings: Mapping[str, Any]) -> StageSpec:
    """Repair items from a spoken QA dataset (``bargein mask --qa-dataset``; not part of a build)."""
    return StageSpec("mask", (), (MaskedItem,), _mask_qa, {"repair": "mask.jsonl"},
                     {"aligner": settings["mask"]["aligner"], "dataset": settings["dataset"]},
                     needs=("aligner", "dataset"), settings=settings)


def perturb_spec(settings: Mapping[str, Any]) -> StageSpec:
    out = Path(settings["out_dir"]) if settings.get("out_dir") else Path("perturb")
    return StageSpec("perturb", (RenderedDialogue,), (PerturbationPair,), _perturb,
                     {"timing": str(out / "pairs.jsonl")}, {"vad": settings["vad"]}, needs=("vad",),
                     settings=settings)


RELEASE_READS = ("verified", "rendered", "baseline", "repair", "timing", "sft", "dpo", "stats")


def release_spec(settings: Mapping[str, Any], reads: tuple[str, ...] = ()) -> StageSpec:
    """``reads``: the files the release needs (the build: its verified conversations, baselines
    and stats); every other stage output is used when some stage (or the command) gives it."""
    return StageSpec("release", (), (ReleaseManifest,), _release, reads=reads,
                     optional_reads=tuple(k for k in RELEASE_READS if k not in reads),
                     settings=settings)


SPECS: dict[str, Callable[..., StageSpec]] = {
    "scenarios": scenarios_spec, "conversations": conversations_spec, "baseline": baseline_spec,
    "render": render_spec, "mask": mask_spec, "mask_qa": mask_qa_spec, "perturb": perturb_spec,
    "release": release_spec,
}


def build_settings(config: BuildConfig) -> dict[str, dict[str, Any]]:
    """Each stage's settings as the build config gives them (what a stage command sets from
    its options)."""
    from bargein.audio.render import RenderConfig
    from bargein.generators.baseline import DEFAULT_TEMPERATURE
    from bargein.masking.items import MaskConfig

    c = config
    return {
        "scenarios": {"llm": c.llm, "n": c.scenarios.n, "domains": c.scenarios.domains,
                      "budget_usd": c.budget_usd or None},
        "conversations": {"llm": c.llm, "verify_rounds": c.conversations.verify_rounds,
                          "resamples": c.conversations.resamples,
                          "sft": c.exports.sft, "dpo": c.exports.dpo},
        "baseline": {"llm": c.llm, "temperature": DEFAULT_TEMPERATURE, "max_tokens": 512},
        "render": {"render": RenderConfig.from_build(c.audio).model_dump(mode="json")},
        "mask": {"mask": MaskConfig(aligner="auto").model_dump(mode="json"),
                 "signals": list(c.repair.signals), "windows_ms": list(c.repair.windows_ms),
                 "max_items": c.repair.max_items},
        "perturb": {"types": list(c.timing.types), "per_type": c.timing.per_type, "vad": "silero",
                    "sample_rate": c.audio.sample_rate},
        "release": {"name": c.name, "version": c.version, "changelog": c.release.changelog,
                    "pretty_name": c.release.pretty_name, "license": c.release.license,
                    **_threshold_sources(c)},
    }


def _threshold_sources(c: BuildConfig) -> dict[str, Any]:
    """``release.quality_thresholds`` checked before anything runs (an unknown figure names the
    known ones), handed to the release stage as its sources do from ``release build``."""
    if not c.release.quality_thresholds:
        return {}
    from bargein.errors import ConfigError
    from bargein.verify.report import known_figures, parse_thresholds, quality_report

    try:
        parse_thresholds(c.release.quality_thresholds, known_figures(quality_report([], [], None)))
    except ConfigError as e:
        raise ConfigError(f"release.quality_thresholds: {e}") from None
    return {"sources": {"quality_thresholds": dict(c.release.quality_thresholds),
                        "allow_below_threshold": c.release.allow_below_threshold}}


def plan(config: BuildConfig) -> Plan:
    """The validated stage specs that build ``config`` (disabled stages are left out)."""
    c, s = config, build_settings(config)
    specs = [scenarios_spec(s["scenarios"]), conversations_spec(s["conversations"]),
             baseline_spec(s["baseline"])]
    if c.audio.enabled:
        specs.append(render_spec(s["render"]))
        if c.repair.enabled:
            specs.append(mask_spec(s["mask"]))
        if c.timing.enabled:
            specs.append(perturb_spec(s["perturb"]))
    specs.append(release_spec(s["release"], reads=("verified", "baseline", "stats")
                              + (("sft",) if c.exports.sft else ()) + (("dpo",) if c.exports.dpo else ())))
    return validate(specs)


# ---- running --------------------------------------------------------------------------------

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
                       progress=progress, previous=Path(previous) if previous else None,
                       workers=config.audio.workers)
    from bargein.executors import using_executor
    from bargein.llm import set_agent_models

    set_agent_models(config.llm_agents)    # every LLM client and stage key of this build routes them
    try:
        with using_executor(config.executor):       # CPU stages: local processes or Ray tasks
            times = run(p, state)
    finally:
        set_agent_models(None)
    return BuildReport(manifest=state.records[ReleaseManifest][0], out_dir=out_dir,
                       workdir=workdir, stage_seconds=times, counts=state.counts,
                       failures=state.failures, stages=p.names)


def run_stages(specs: Sequence[StageSpec], *, workdir: str | Path, seed: int,
               records: Mapping[type[Record], list] | None = None,
               files: Mapping[str, str | Path | None] | None = None, workers: int | None = None,
               progress: bool | None = None, out_dir: str | Path | None = None,
               previous: str | Path | None = None) -> dict[str, StageOutcome]:
    """Run declared stages on the ``records`` and ``files`` a stage command was given (the
    command's whole library path); returns each stage's outcome by name.

    The given records and files become a source stage in front of ``specs``; all are checked by
    :func:`validate` (a stage input nobody gives, a file a stage must read that is not given, a
    backend key unset, settings that are not JSON: a :class:`WiringError` before anything runs)
    and run by :func:`run`, as in a build, with the seed the command resolved."""
    given = dict(records or {})
    paths = {k: str(v) for k, v in (files or {}).items() if v is not None}

    def hand_over(state: BuildState) -> StageOutcome:
        # the paths as given (a folder or a bad file is the stage's to refuse, naming it)
        state.artifacts.update({k: Path(v) for k, v in paths.items()})
        return StageOutcome({t: list(v) for t, v in given.items()})

    source = StageSpec("given", (), tuple(given), hand_over, artifacts=paths)
    p = validate([source, *specs])
    state = BuildState(config=None, workdir=Path(workdir),
                       out_dir=Path(out_dir) if out_dir is not None else Path(workdir),
                       seed=seed, progress=progress, workers=workers,
                       previous=Path(previous) if previous else None, label=None,
                       stop_if_empty=False)
    run(p, state)
    return state.outcomes


def _prompt_hashes() -> dict[str, str]:
    from bargein import prompts

    return {n: prompts.prompt_hash(n)[:16] for n in prompts.list_prompts()}


__all__ = ["BuildReport", "BuildState", "Plan", "SPECS", "StageOutcome", "StageSpec", "WiringError",
           "build", "build_settings", "plan", "run", "run_stages", "validate"]
