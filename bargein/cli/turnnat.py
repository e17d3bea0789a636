"""``bargein turnnat train`` and ``bargein score turnnat``."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import click
import numpy as np

from bargein.cliutil import get_globals, require_file
from bargein.errors import BargeinError, ConfigError

log = logging.getLogger("bargein.turnnat")
BETAS = (1.0, 3.0, 10.0, 30.0, 100.0)      # Witten-Bell backoff weights tried on held-out data


def dialogue_activities(dialogues: Sequence, *, vad_name: str = "silero", labels: str = "vad",
                        cache_dir: Path | None = None, skipped: list | None = None) -> Iterator[np.ndarray]:
    """(frames, 2) activity per natural dialogue: from VAD on the audio (default, as scored)
    or from the rendered timeline (``labels="timeline"``). Unusable dialogues are skipped
    and listed in ``skipped``."""
    from bargein.audio.labels import activity_from_segments, segments_by_channel
    from bargein.audio.vad import get_vad
    from bargein.scorers.turnnat import ClipScorer

    class _FrameHz:
        frame_hz = 50
        id = "none"

    scorer = ClipScorer(_FrameHz(), get_vad(vad_name), cache_dir) if labels == "vad" else None
    for rd in dialogues:
        try:
            if labels == "timeline":
                if not rd.segments:
                    raise ConfigError(f"{rd.id} has no timeline segments; use --labels vad")
                yield activity_from_segments(segments_by_channel(rd.segments), rd.duration_s)
            else:
                yield scorer.activity(Path(rd.audio_path))[0]
        except BargeinError as e:
            log.warning("skipping %s: %s", rd.id, e)
            if skipped is not None:
                skipped.append({"item_id": rd.id, "reason": str(e)})


def train_predictor(dialogues_path: Path, out: Path, *, workdir: Path, vad: str = "silero",
                    labels: str = "vad", swap: bool = True, tbu_weight: float = 1.0) -> dict:
    """Train the built-in predictor on natural dialogues and save it; returns a summary."""
    from bargein.perturb.sources import load_sources
    from bargein.scorers.predictors import BuiltinPredictor

    t0 = time.perf_counter()
    dialogues = load_sources(dialogues_path, workdir)
    skipped: list = []
    acts = list(dialogue_activities(dialogues, vad_name=vad, labels=labels,
                                    cache_dir=workdir / "turnnat" / "vad", skipped=skipped))
    if not acts:
        raise ConfigError(f"{dialogues_path}: no usable two-channel dialogue to train on")
    n_dev = max(1, len(acts) // 10) if len(acts) >= 5 else 0
    dev, train = acts[:n_dev], acts[n_dev:]
    model = BuiltinPredictor.train(train, swap=swap, tbu_weight=tbu_weight)
    summary = {"dialogues": len(acts), "skipped": skipped, "train_frames": model.meta["frames"],
               "hours": round(sum(len(a) for a in train) / 50 / 3600, 3)}
    if dev:          # pick the backoff weight on held-out TBU frames; compare with state-only
        from bargein.scorers.turnnat import tbu_mask

        def dev_nll(m: BuiltinPredictor) -> float:
            return float(np.nanmean(np.concatenate([m.frame_nll(a)[tbu_mask(a)] for a in dev])))

        scores = {b: dev_nll(model.with_beta(b)) for b in BETAS}
        beta = min(scores, key=lambda b: (scores[b], b))
        base = BuiltinPredictor([np.zeros_like(c) for c in model.counts[:3]] + [model.counts[3]],
                                dict(model.meta, beta=beta))
        summary.update(beta=beta, dev_nll=round(scores[beta], 4), dev_nll_state_only=round(dev_nll(base), 4))
        model = BuiltinPredictor.train(acts, swap=swap, tbu_weight=tbu_weight).with_beta(beta)
    model.meta.update(vad=vad, labels=labels)
    model.save(out)
    summary.update(out=str(out), seconds=round(time.perf_counter() - t0, 2))
    return summary


@click.group()
def turnnat() -> None:
    """The built-in turn-taking predictor that TurnNat scoring uses."""


@turnnat.command("train")
@click.option("--dialogues", "dialogues", required=True, type=click.Path(path_type=Path),
              help="Natural dialogues: rendered.jsonl, a folder of stereo WAV/FLAC, or a local HF dataset.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Model file (.npz). Default: <workdir>/turnnat/model.npz")
@click.option("--vad", default="silero", show_default=True, help="VAD for activity labels.")
@click.option("--labels", type=click.Choice(["vad", "timeline"]), default="vad", show_default=True,
              help="Activity from VAD on the audio (as at scoring) or from rendered segments.")
@click.option("--tbu-weight", type=float, default=1.0, show_default=True,
              help="Weight alpha of frames inside TBUs in the counts (TurnNat eq. 6).")
@click.option("--swap/--no-swap", default=True, show_default=True,
              help="Also count every dialogue with its channels exchanged.")
def train(dialogues: Path, out: Path | None, vad: str, labels: str, tbu_weight: float, swap: bool) -> None:
    """Train the count-based predictor on natural two-channel dialogue (CPU, seconds)."""
    g = get_globals()
    require_file(dialogues, "--dialogues", "give rendered.jsonl or a folder of stereo files")
    out = out or g.workdir / "turnnat" / "model.npz"
    s = train_predictor(dialogues, out, workdir=g.workdir, vad=vad, labels=labels, swap=swap,
                        tbu_weight=tbu_weight)
    click.echo(f"trained on {s['dialogues']} dialogues ({s['hours']} h, {s['train_frames']} frames) "
               f"in {s['seconds']} s -> {s['out']}")
    if "dev_nll" in s:
        click.echo(f"held-out TBU-frame NLL {s['dev_nll']} with backoff weight {s['beta']} "
                   f"(state-only baseline {s['dev_nll_state_only']})")
    if s["skipped"]:
        click.echo(f"skipped {len(s['skipped'])} dialogue(s): " +
                   "; ".join(f"{x['item_id']}: {x['reason']}" for x in s["skipped"][:5]))


def format_report(report) -> str:
    lines = [f"{'group':24s} {'metric':22s} {'value':>7s}  95% CI          n"]
    for a in report.aggregates:
        grp = a.group.get("type", "all")
        lines.append(f"{grp:24s} {a.metric:22s} {a.value:7.3f}  [{a.ci_low:.3f}, {a.ci_high:.3f}]  {a.n}")
    return "\n".join(lines)


@click.command("turnnat")
@click.option("--pairs", required=True, type=click.Path(path_type=Path),
              help="pairs.jsonl written by bargein perturb (audio paths relative to its folder).")
@click.option("--predictor", default=None,
              help="builtin:PATH or vap:PATH. Default: builtin:<workdir>/turnnat/model.npz")
@click.option("--vad", default="silero", show_default=True, help="VAD for the activity of each clip.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output folder. Default: <workdir>/scores/turnnat")
@click.option("--n-boot", type=int, default=1000, show_default=True)
def score_turnnat(pairs: Path, predictor: str | None, vad: str, out: Path | None, n_boot: int) -> None:
    """TurnNat pair accuracy and C-index, overall and per perturbation type."""
    from bargein.audio.vad import get_vad
    from bargein.records.derived import PerturbationPair
    from bargein.scorers.predictors import get_predictor
    from bargein.scorers.turnnat import ClipScorer, score_pairs
    from bargein.store import atomic_write_text, read_jsonl, write_jsonl

    g = get_globals()
    require_file(pairs, "--pairs", "run bargein perturb first, or point at its pairs.jsonl")
    spec = predictor or f"builtin:{g.workdir / 'turnnat' / 'model.npz'}"
    pred = get_predictor(spec)
    recs = read_jsonl(pairs, PerturbationPair)
    scorer = ClipScorer(pred, get_vad(vad), g.workdir / "turnnat" / "vad")
    t0 = time.perf_counter()
    items, report, failures = score_pairs(recs, pairs.parent, scorer, seed=g.seed, n_boot=n_boot)
    out = out or g.workdir / "scores" / "turnnat"
    write_jsonl(out / "scores.jsonl", items)
    write_jsonl(out / "failures.jsonl", failures)
    atomic_write_text(out / "report.json", report.model_dump_json(indent=2) + "\n")
    click.echo(format_report(report))
    click.echo(f"{len(items)} pairs scored, {len(failures)} failed in "
               f"{time.perf_counter() - t0:.1f} s -> {out}")
    if failures:
        click.echo(json.dumps(failures[:3]))
