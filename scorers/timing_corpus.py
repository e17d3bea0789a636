"""Timing metrics over a corpus of stereo recordings: FD-Bench events and Talking-Turns statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from bargein.errors import BargeinError, ConfigError


def load_schedule(path: Path) -> dict[str, list]:
    """``{recording: [{"start_s", "end_s", "kind"?}, ...]}`` (JSON) or JSONL rows with a
    ``recording`` key. Recording names are file stems / conversation ids."""
    from bargein.scorers.timing import UserTurn

    from bargein.store import read_text

    text = read_text(path, "--schedule")
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
