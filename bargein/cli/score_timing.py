"""``bargein score timing``: FD-Bench event metrics and Talking-Turns statistics."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals, require_file


@click.command("timing")
@click.option("--recordings", required=True, type=click.Path(path_type=Path),
              help="Stereo recordings (user = channel 0, system = 1): a folder of WAV/FLAC, "
                   "rendered.jsonl, or a local HF dataset.")
@click.option("--schedule", type=click.Path(path_type=Path), default=None,
              help="Scripted user turns per recording (JSON or JSONL); default: the rendered "
                   "timeline, else user-channel VAD.")
@click.option("--vad", default="silero", show_default=True)
@click.option("--protocol", type=click.Choice(["fdbench-bargein", "fdbench-v1"]), default="fdbench-bargein",
              show_default=True, help="fdbench-v1 reproduces the public FD-Bench code (its VAD, "
              "rounds, denominators, x100); fdbench-bargein is bargein's refinement.")
@click.option("--drop-first-system/--keep-first-system", default=False, show_default=True,
              help="fdbench-v1: drop each recording's first system span (FD-Bench does for Moshi).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output folder. Default: <workdir>/scores/timing")
def timing(recordings: Path, schedule: Path | None, vad: str, protocol: str, drop_first_system: bool,
           out: Path | None) -> None:
    """FD-Bench SRR/SIR/SRIR/EIR/NIR, IRD/FSED/ERT/EIT (medians, ms) and Talking-Turns statistics."""
    from bargein.perturb.sources import load_sources
    from bargein.scorers.timing_corpus import load_schedule, score_recordings
    from bargein.store import atomic_write_text, write_jsonl

    g = get_globals()
    require_file(recordings, "--recordings", "give a folder of stereo files or rendered.jsonl")
    if protocol == "fdbench-v1":
        from bargein.scorers.external import score_fdbench

        rows, summary, failures = score_fdbench(load_sources(recordings, g.workdir),
                                                drop_first_system=drop_first_system)
        out = out or g.workdir / "scores" / "timing"
        write_jsonl(out / "recordings.jsonl", rows)
        write_jsonl(out / "failures.jsonl", failures)
        atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
        click.echo(f"FD-Bench (fdbench-v1) over {summary['recordings']} recordings (rates in %, times "
                   "= medians in ms):")
        click.echo("  " + "  ".join(f"{k}={v}" for k, v in summary["fdbench"].items()))
        if failures:
            click.echo(f"{len(failures)} recording(s) failed; reasons in {out}/failures.jsonl")
        click.echo(f"-> {out}")
        return
    sched = load_schedule(require_file(schedule, "--schedule", "fix the path")) if schedule else None
    dialogues = load_sources(recordings, g.workdir)
    rows, summary, failures = score_recordings(dialogues, vad_name=vad, schedule=sched,
                                               cache_dir=None, seed=g.seed)
    from bargein.scorers.protocols import get_protocol

    summary["protocol"] = get_protocol("fdbench-bargein").record()
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
    fail_if_nothing(summary["recordings"], f"no recording could be scored ({len(failures)} failed); "
                    f"reasons in {out}/failures.jsonl")
