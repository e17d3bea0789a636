"""``bargein score timing``: FD-Bench event metrics and Talking-Turns statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
import numpy as np

from bargein.cliutil import get_globals, require_file
from bargein.errors import BargeinError, ConfigError


def load_schedule(path: Path) -> dict[str, list]:
    """``{recording: [{"start_s", "end_s", "kind"?}, ...]}`` (JSON) or JSONL rows with a
    ``recording`` key. Recording names are file stems / conversation ids."""
    from bargein.scorers.timing import UserTurn

    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            data: dict[str, list] = {}
            for r in rows:
                data.setdefault(str(r["recording"]), []).append(r)
        else:
            data = json.loads(text)
        return {k: [UserTurn(float(t["start_s"]), float(t["end_s"]), t.get("kind", "auto")) for t in v]
                for k, v in data.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ConfigError(f"--schedule {path}: {e!r}. Expected {{recording: [{{start_s, end_s, "
                          "kind?}}]}} or JSONL rows with recording/start_s/end_s") from e


def score_recordings(dialogues, *, vad_name: str, schedule: dict[str, list] | None,
                     cache_dir: Path | None, seed: int = 0) -> tuple[list[dict], dict[str, Any], list[dict]]:
    """Per-recording rows, the corpus summary (pooled, with bootstrap CIs) and failures."""
    from bargein.audio.labels import talking_turns_labels
    from bargein.audio.vad import get_vad, segments_to_tuples
    from bargein.perturb.stage import load_stereo
    from bargein.scorers.stats import bootstrap_ci
    from bargein.scorers.timing import (FDBenchEvents, UserTurn, fdbench_events,
                                        label_string, talking_turns_stats, user_turns_from_vad)

    vad = get_vad(vad_name)
    rows, failures, recs = [], [], []
    pooled = FDBenchEvents()
    for rd in dialogues:
        try:
            x = load_stereo(rd.audio_path, 16000, f"recording {rd.conversation_id}")
            segs = [segments_to_tuples(s) for s in vad.channel_segments(x, 16000)]
            dur = len(x) / 16000
            if schedule is not None:
                turns = schedule.get(rd.conversation_id) or schedule.get(Path(rd.audio_path).stem)
                if turns is None:
                    raise ConfigError(f"no schedule entry for recording {rd.conversation_id!r}")
                source = "schedule"
            elif rd.segments:
                turns = [UserTurn(s.start_s, s.end_s) for s in rd.segments if s.channel == 0]
                source = "timeline"
            else:
                turns, source = user_turns_from_vad(segs[0]), "vad"
            ev = fdbench_events(turns, segs[1], dur)
        except BargeinError as e:
            failures.append({"item_id": rd.id, "reason": str(e), "error_type": type(e).__name__})
            continue
        pooled.extend(ev)
        recs.append((segs, dur))
        rows.append({"id": rd.id, "recording": rd.conversation_id, "duration_s": round(dur, 3),
                     "user_turns_from": source, "fdbench": ev.metrics(),
                     "talking_turns": talking_turns_stats([(segs, dur)]),
                     "labels_40ms": label_string(talking_turns_labels(segs, dur)),
                     "segments": segs, "vad": f"{vad.id}@{vad.version}", "n_events": {
                         k: len(getattr(ev, k)) for k in ev.__dataclass_fields__}})
    summary: dict[str, Any] = {"recordings": len(rows), "failures": len(failures), "fdbench": {}}
    metric_src = {"SRR": pooled.replied, "EIR": pooled.early, "SIR": pooled.interrupt_ok,
                  "SRIR": pooled.reply_after, "NIR": pooled.noise_stop, "IRD_ms": pooled.ird_ms,
                  "FSED_ms": pooled.fsed_ms, "ERT_ms": pooled.ert_ms, "EIT_ms": pooled.eit_ms}
    for name, vals in metric_src.items():
        stat = np.median if name.endswith("_ms") else np.mean
        if vals:
            v, lo, hi = bootstrap_ci(vals, seed=seed, statistic=stat)
        else:
            v = lo = hi = math.nan
        summary["fdbench"][name] = {"value": v, "ci_low": lo, "ci_high": hi, "n": len(vals)}
    summary["talking_turns"] = talking_turns_stats(recs) if recs else {}
    return rows, summary, failures


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
