"""``bargein turnnat train`` and ``bargein score turnnat``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from bargein.cli.util import FiniteFloat, fail_if_nothing, get_globals, require_file


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
@click.option("--tbu-weight", type=FiniteFloat(min=0), default=1.0, show_default=True,
              help="Weight alpha of frames inside TBUs in the counts (TurnNat eq. 6).")
@click.option("--swap/--no-swap", default=True, show_default=True,
              help="Also count every dialogue with its channels exchanged.")
def train(dialogues: Path, out: Path | None, vad: str, labels: str, tbu_weight: float, swap: bool) -> None:
    """Train the count-based predictor on natural two-channel dialogue (CPU, seconds)."""
    from bargein.scorers.turnnat_train import train_predictor

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
@click.option("--pairs", default=None, type=click.Path(path_type=Path),
              help="pairs.jsonl written by bargein perturb (audio paths relative to its folder).")
@click.option("--recordings", default=None, type=click.Path(path_type=Path),
              help="Instead of pairs: score the naturalness of each recording (a folder of stereo "
                   "WAV/FLAC, rendered.jsonl, or a local HF dataset / Parquet).")
@click.option("--protocol", type=click.Choice(["turnnat-bargein", "turnnat-ref"]), default="turnnat-bargein",
              show_default=True, help="turnnat-ref reproduces the public TurnNat scorer (VAD, units).")
@click.option("--predictor", default=None,
              help="builtin:PATH or vap:PATH. Default: builtin:<workdir>/turnnat/model.npz")
@click.option("--vad", default="silero", show_default=True,
              help="VAD for the activity of each clip (turnnat-bargein; turnnat-ref uses its own).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output folder. Default: <workdir>/scores/turnnat")
@click.option("--n-boot", type=int, default=1000, show_default=True)
def score_turnnat(pairs: Path | None, recordings: Path | None, protocol: str, predictor: str | None,
                  vad: str, out: Path | None, n_boot: int) -> None:
    """TurnNat pair accuracy and C-index (overall and per type), or per-recording naturalness."""
    from bargein.audio.vad import get_vad
    from bargein.errors import ConfigError
    from bargein.records.derived import PerturbationPair
    from bargein.scorers.predictors import get_predictor
    from bargein.scorers.turnnat import ClipScorer, RefClipScorer, score_pairs
    from bargein.store import atomic_write_text, read_jsonl, write_jsonl

    g = get_globals()
    if (pairs is None) == (recordings is None):
        raise ConfigError("bargein score turnnat: give exactly one of --pairs or --recordings")
    spec = predictor or f"builtin:{g.workdir / 'turnnat' / 'model.npz'}"
    out = out or g.workdir / "scores" / "turnnat"
    cache = g.workdir / "turnnat" / "vad"
    if recordings is not None:
        from bargein.perturb.sources import load_sources
        from bargein.scorers.external import score_turnnat_recordings

        require_file(recordings, "--recordings", "give a folder of stereo files, rendered.jsonl or an HF dataset")
        dialogues = load_sources(recordings, g.workdir)
        rows, summary, failures = score_turnnat_recordings(dialogues, get_predictor(spec), protocol,
                                                           vad=vad, cache_dir=cache)
        write_jsonl(out / "recordings.jsonl", rows)
        write_jsonl(out / "failures.jsonl", failures)
        atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
        click.echo(f"{summary['recordings']} recordings scored ({protocol}), mean naturalness "
                   f"{summary['naturalness_mean']:.4f}; {len(failures)} failed -> {out}")
        return
    require_file(pairs, "--pairs", "run bargein perturb first, or point at its pairs.jsonl")
    pred = get_predictor(spec)
    recs = read_jsonl(pairs, PerturbationPair)
    scorer = RefClipScorer(pred, cache) if protocol == "turnnat-ref" else ClipScorer(pred, get_vad(vad), cache)
    t0 = time.perf_counter()
    items, report, failures = score_pairs(recs, pairs.parent, scorer, seed=g.seed, n_boot=n_boot)
    write_jsonl(out / "scores.jsonl", items)
    write_jsonl(out / "failures.jsonl", failures)
    atomic_write_text(out / "report.json", report.model_dump_json(indent=2) + "\n")
    click.echo(f"protocol {protocol}")
    click.echo(format_report(report))
    click.echo(f"{len(items)} pairs scored, {len(failures)} failed in "
               f"{time.perf_counter() - t0:.1f} s -> {out}")
    if failures:
        click.echo(json.dumps(failures[:3]))
    fail_if_nothing(len(items), f"no pair could be scored ({len(failures)} failed); reasons in "
                    f"{out}/failures.jsonl")
