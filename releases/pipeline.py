"""``bargein build``: one config -> one release folder, through the runner in one work dir.

    scenarios -> simulate -> rubrics -> verify/modify -> eval items -> SFT/DPO
        -> render (two-channel audio) -> repair items (masking) -> timing pairs (perturbation)
        -> release folder (Parquet + card + manifest)

Every stage is content-addressed in ``workdir``: an interrupted build resumes where it stopped,
and a finished build re-runs from cache. Each stage's failures stay in
``workdir/<stage>.failures.jsonl``; a stage with no usable output stops the build with a clear
error rather than publishing an empty config.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bargein import __version__
from bargein.config import BuildConfig
from bargein.errors import BargeinError
from bargein.records import ReleaseManifest

log = logging.getLogger("bargein.build")


@dataclass
class BuildReport:
    manifest: ReleaseManifest
    out_dir: Path
    workdir: Path
    stage_seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)


def _say(msg: str) -> None:
    print(f"[bargein build] {msg}", file=sys.stderr, flush=True)


def _prompt_hashes() -> dict[str, str]:
    from bargein import prompts

    return {n: prompts.prompt_hash(n)[:16] for n in prompts.list_prompts()}


def build(config: BuildConfig, *, workdir: str | Path, out_dir: str | Path,
          progress: bool | None = None, previous: str | Path | None = None) -> BuildReport:
    """Run the whole pipeline for ``config`` and write the release folder ``out_dir``."""
    from bargein.audio.render import RenderConfig, render_conversations
    from bargein.generators.conversation import generate_conversations
    from bargein.generators.scenarios import generate_scenarios
    from bargein.releases.build import ReleaseSources, build_release

    from bargein.outdir import check_replaceable, check_writable_dir

    workdir, out_dir = Path(workdir), Path(out_dir)
    check_replaceable(out_dir, protect=(workdir,))        # before any work: never after it
    check_writable_dir(workdir, option="--workdir")
    seed = config.seed
    times: dict[str, float] = {}
    counts: dict[str, int] = {}
    failures: dict[str, int] = {}

    def timed(name: str):
        class _T:
            def __enter__(self):
                self.t = time.perf_counter()
                _say(f"{name} ...")

            def __exit__(self, *exc):
                times[name] = round(time.perf_counter() - self.t, 3)
        return _T()

    # 1. scenarios
    with timed("scenarios"):
        sres = generate_scenarios(config.scenarios.n, seed, llm=config.llm, workdir=workdir,
                                  domains=config.scenarios.domains, progress=progress,
                                  **({"budget_usd": config.budget_usd} if config.budget_usd else {}))
    counts["scenarios"] = len(sres.outputs)
    failures["scenarios"] = len(sres.failures)
    if not sres.outputs:
        raise BargeinError(f"no scenario could be generated ({len(sres.failures)} failed); "
                           f"see {workdir / 'scenarios.failures.jsonl'}")
    _say(f"{len(sres.outputs)} scenarios")

    # 2. conversations, verification, eval items, exports, statistics
    with timed("conversations"):
        crun = generate_conversations(sres.outputs, seed=seed, workdir=workdir, llm=config.llm,
                                      verify_rounds=config.conversations.verify_rounds,
                                      sft=config.exports.sft, dpo=config.exports.dpo,
                                      progress=progress)
    accepted = [v for v in crun.verified if v.accepted]
    counts.update(conversations=len(accepted), eval_items=len(crun.items))
    for k, r in crun.results.items():
        failures[k] = len(r.failures)
    if not accepted:
        raise BargeinError("every conversation was discarded by the verifier; see "
                           f"{workdir / 'verified.jsonl'} for the reasons")
    _say(f"{len(accepted)} verified conversations, {len(crun.items)} interruption points")

    # the baseline response per eval item (IHBench's comparative reference): the configured
    # LLM, or the rule-based assistant seeing only the item (labelled "offline-rule")
    from bargein.generators.baseline import baseline_stage
    from bargein.runner import run_stage

    with timed("baseline"):
        bres = run_stage(baseline_stage(config.llm), crun.items, workdir=workdir, seed=seed,
                         progress=progress)
    failures["baseline"] = len(bres.failures)

    # 3. audio
    rendered_path = None
    if config.audio.enabled:
        with timed("render"):
            rres = render_conversations(accepted, workdir=workdir, seed=seed,
                                        config=RenderConfig.from_build(config.audio),
                                        workers=config.audio.workers, progress=progress)
        counts["rendered"] = len(rres.outputs)
        failures["render"] = len(rres.failures)
        rendered_path = workdir / "render.jsonl"
        _say(f"{len(rres.outputs)} dialogues rendered ({len(rres.failures)} failed)")

    # 4. repair items (masking) and 5. timing pairs (perturbation), both from the rendered audio
    repair_path = timing_path = None
    if rendered_path is not None and config.repair.enabled:
        with timed("mask"):
            repair_path, n, nf = _mask(config, rres.outputs, accepted, workdir, progress)
        counts["repair"], failures["mask"] = n, nf
    if rendered_path is not None and config.timing.enabled:
        with timed("perturb"):
            timing_path, n, nf = _perturb(config, rres.outputs, workdir, progress)
        counts["timing"], failures["perturb"] = n, nf

    # 6. release folder
    provenance: dict[str, Any] = {
        "bargein_version": __version__,
        "config": json.loads(config.model_dump_json()),
        "seed": seed,
        "agents": "offline rule-based" if config.llm == "offline" else f"LLM: {config.llm}",
        "llm": config.llm,
        "voices": {"assistant": config.audio.assistant_voice, "user": config.audio.user_voice},
        "prompt_sha256": _prompt_hashes(),
        "stage_failures": failures,
    }
    sources = ReleaseSources(
        conversations=workdir / "verified.jsonl", rendered=rendered_path,
        eval_items=workdir / "baseline.jsonl", repair=repair_path, timing=timing_path,
        sft=workdir / "sft.jsonl" if config.exports.sft else None,
        dpo=workdir / "dpo.jsonl" if config.exports.dpo else None,
        stats=workdir / "stats.json", audio_roots=(workdir, workdir / "perturb"))
    with timed("release"):
        manifest = build_release(out_dir, name=config.name, version=config.version,
                                 sources=sources, provenance=provenance, protect=(workdir,),
                                 changelog=config.release.changelog, previous=previous,
                                 pretty_name=config.release.pretty_name,
                                 license=config.release.license)
    _say(f"release {config.name} {config.version} -> {out_dir} "
         f"({', '.join(f'{k}={v}' for k, v in manifest.configs.items())})")
    return BuildReport(manifest=manifest, out_dir=out_dir, workdir=workdir, stage_seconds=times,
                       counts=counts, failures=failures)


def _mask(config: BuildConfig, rendered, accepted, workdir: Path, progress):
    from bargein.masking.stage import mask_rendered

    res = mask_rendered(rendered, accepted, workdir=workdir, seed=config.seed,
                        signals=tuple(config.repair.signals),
                        windows_ms=tuple(config.repair.windows_ms),
                        max_items=config.repair.max_items, progress=progress)
    return workdir / "mask.jsonl", len(res.outputs), len(res.failures)


def _perturb(config: BuildConfig, rendered, workdir: Path, progress):
    from bargein.perturb.stage import run_perturb

    out = workdir / "perturb"
    # the perturbation stage reads audio by path: make the render's relative paths absolute
    dialogues = [rd.with_(audio_path=str((workdir / rd.audio_path).resolve()))
                 if not Path(rd.audio_path).is_absolute() else rd for rd in rendered]
    summary = run_perturb(dialogues, types=list(config.timing.types),
                          per_type=config.timing.per_type, out_dir=out, workdir=workdir,
                          seed=config.seed, sample_rate=config.audio.sample_rate,
                          workers=config.audio.workers or 1)
    return out / "pairs.jsonl", int(summary["pairs"]), int(summary["skipped"])
