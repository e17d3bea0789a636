"""``bargein score fdb``: Full-Duplex-Bench v1 / v1.5 metrics on two-channel recordings."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals, require_file


@click.command("fdb")
@click.option("--recordings", required=True, type=click.Path(path_type=Path),
              help="Stereo recordings (user = channel 0, system = 1): a folder of WAV/FLAC, "
                   "rendered.jsonl / a release's dialogues, or a local HF dataset / Parquet.")
@click.option("--protocol", type=click.Choice(["fdb-v1", "fdb-v1.5"]), default="fdb-v1", show_default=True,
              help="fdb-v1: take-over rate, latency, backchannel frequency and JSD; fdb-v1.5: stop "
                   "and response latency.")
@click.option("--gt", "gt_path", type=click.Path(path_type=Path), default=None,
              help="Ground-truth backchannel distributions, JSON {recording: [p, ...]} (needed for JSD).")
@click.option("--asr/--no-asr", default=False, show_default=True,
              help="Transcribe the system channel (Whisper tiny.en) when the input has no word timings.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output folder. Default: <workdir>/scores/fdb")
def fdb(recordings: Path, protocol: str, gt_path: Path | None, asr: bool, out: Path | None) -> None:
    """Full-Duplex-Bench metrics computed exactly as its public evaluation scripts do."""
    from bargein.errors import ConfigError
    from bargein.perturb.sources import load_sources
    from bargein.scorers.external import score_fdb
    from bargein.store import atomic_write_text, write_jsonl

    g = get_globals()
    require_file(recordings, "--recordings", "give a folder of stereo files, rendered.jsonl or an HF dataset")
    gt = None
    if gt_path is not None:
        try:
            gt = json.loads(require_file(gt_path, "--gt", "fix the path").read_text(encoding="utf-8"))
        except ValueError as e:
            raise ConfigError(f"--gt {gt_path}: not JSON ({e}); expected {{recording: [p, ...]}}") from e
    rows, summary, failures = score_fdb(load_sources(recordings, g.workdir), protocol, gt=gt, asr=asr)
    out = out or g.workdir / "scores" / "fdb"
    write_jsonl(out / "recordings.jsonl", rows)
    write_jsonl(out / "failures.jsonl", failures)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")
    click.echo(f"Full-Duplex-Bench ({protocol}) over {summary['recordings']} recordings:")
    for key in ("turn_taking", "backchannel", "timing"):
        if key in summary:
            click.echo(f"  {key}: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in summary[key].items()))
    if failures:
        click.echo(f"{len(failures)} recording(s) failed; reasons in {out}/failures.jsonl")
    click.echo(f"-> {out}")
    fail_if_nothing(summary["recordings"], f"no recording could be scored ({len(failures)} failed); "
                                           f"reasons in {out}/failures.jsonl")
