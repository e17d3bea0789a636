"""``bargein score timing``: FD-Bench event metrics and Talking-Turns statistics."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bargein.cli.util import get_globals, require_file


@click.command("timing")
@click.option("--recordings", required=True, type=click.Path(path_type=Path),
              help="Stereo recordings (user = channel 0, system = 1): a folder of WAV/FLAC, "
                   "rendered.jsonl, or a local HF dataset.")
@click.option("--schedule", type=click.Path(path_type=Path), default=None,
              help="Scripted user turns per recording (JSON or JSONL); default: the rendered "
                   "timeline, else user-channel VAD.")
@click.option("--vad", default="silero", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output folder. Default: <workdir>/scores/timing")
def timing(recordings: Path, schedule: Path | None, vad: str, out: Path | None) -> None:
    """FD-Bench SRR/SIR/SRIR/EIR/NIR, IRD/FSED/ERT/EIT (medians, ms) and Talking-Turns statistics."""
    from bargein.perturb.sources import load_sources
    from bargein.scorers.timing_corpus import load_schedule, score_recordings
    from bargein.store import atomic_write_text, write_jsonl

    g = get_globals()
    require_file(recordings, "--recordings", "give a folder of stereo files or rendered.jsonl")
    sched = load_schedule(require_file(schedule, "--schedule", "fix the path")) if schedule else None
    dialogues = load_sources(recordings, g.workdir)
    rows, summary, failures = score_recordings(dialogues, vad_name=vad, schedule=sched,
                                               cache_dir=None, seed=g.seed)
    out = out or g.workdir / "scores" / "timing"
    write_jsonl(out / "recordings.jsonl", rows)
    write_jsonl(out / "failures.jsonl", failures)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    click.echo(f"FD-Bench over {summary['recordings']} recordings (rates 0-1, times = medians in ms):")
    for k, v in summary["fdbench"].items():
        click.echo(f"  {k:8s} {v['value']:9.3f}  [{v['ci_low']:.3f}, {v['ci_high']:.3f}]  n={v['n']}")
    tt = summary["talking_turns"]
    if tt:
        click.echo("Talking Turns: " + ", ".join(
            f"{k}={tt[k]:.2f}" if isinstance(tt[k], float) else f"{k}={tt[k]}"
            for k in ("ipus", "pause_median_ms", "gap_median_ms", "overlap_pct",
                      "backchannels_per_min", "interruptions_per_min")))
    if failures:
        click.echo(f"{len(failures)} recording(s) failed; reasons in {out}/failures.jsonl")
    click.echo(f"-> {out}")
