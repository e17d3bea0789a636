"""Score recordings of any two-channel system (channel 0 = user, 1 = system) under a named protocol.

Input: bargein dialogues from :func:`bargein.perturb.sources.load_sources` (a folder of stereo
WAV/FLAC, a rendered.jsonl, a local HF dataset or Parquet). Every function returns
``(rows, summary, failures)``: one row per recording, the pooled summary with the protocol record,
and a failure (with its reason) per recording that could not be scored; the batch goes on.

Full-Duplex-Bench items are single pre-cut samples in the reference; on a whole conversation each
user turn (user VAD spans merged across <= 0.6 s, as v1.5 does) is one turn-taking item whose
system words are those starting between that turn's onset and the next user onset.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bargein.errors import AudioError, BargeinError

SR = 16000


def _load(rd) -> np.ndarray:
    from bargein.perturb.stage import load_stereo

    return load_stereo(rd.audio_path, SR, f"recording {rd.conversation_id}")


def _fail(rd, e: Exception) -> dict:
    return {"item_id": rd.id, "recording": rd.conversation_id, "reason": str(e),
            "error_type": type(e).__name__}


def score_fdbench(dialogues: Sequence, *, drop_first_system: bool = False) -> tuple[list, dict, list]:
    """``fdbench-v1`` on recordings: per-recording marks and the pooled FD-Bench scores (x100)."""
    from bargein.audio.vad import SileroVAD
    from bargein.scorers import fdbench
    from bargein.scorers.protocols import get_protocol

    vad = SileroVAD()
    rows, marks, failures = [], [], []
    for rd in dialogues:
        try:
            m, spans = fdbench.score_recording(_load(rd), SR, vad=vad, drop_first_system=drop_first_system)
        except BargeinError as e:
            failures.append(_fail(rd, e))
            continue
        marks.append(m)
        rows.append({"id": rd.id, "recording": rd.conversation_id, "protocol": "fdbench-v1",
                     "scores": fdbench.aggregate([m]), "marks": m.to_dict(),
                     "user_spans_16k": spans[0], "system_spans_16k": spans[1]})
    proto = get_protocol("fdbench-v1").record()
    proto["settings"] = {**proto["settings"], "drop_first_system": drop_first_system}
    summary = {"protocol": proto, "recordings": len(rows), "failures": len(failures),
               "fdbench": fdbench.aggregate(marks)}
    return rows, summary, failures


def _system_words(rd, x: np.ndarray, asr: bool) -> list[tuple[str, float, float]]:
    words = [(w.word, w.start_s, w.end_s) for s in rd.segments if s.channel == 1 for w in s.words]
    if words:
        return sorted(words, key=lambda w: w[1])
    if not asr:
        raise AudioError(f"recording {rd.conversation_id}: no system word timings; Fix: score a "
                         "rendered.jsonl / release, or pass --asr to transcribe the system channel")
    from bargein.audio.align import transcribe

    _, ws = transcribe(x[:, 1], SR)
    return [(w.word, w.start_s, w.end_s) for w in ws]


def score_fdb(dialogues: Sequence, protocol: str = "fdb-v1", *, gt: dict[str, Sequence[float]] | None = None,
              asr: bool = False) -> tuple[list, dict, list]:
    """``fdb-v1`` (take-over rate, latency, backchannel frequency/JSD) or ``fdb-v1.5``
    (stop and response latency) on recordings. ``gt`` maps a recording id or file stem to a
    ground-truth backchannel distribution (the reference's ``icc_gt_distribution.json`` format)."""
    from bargein.audio.vad import SileroVAD
    from bargein.scorers import fdb
    from bargein.scorers.protocols import get_protocol

    proto = get_protocol(protocol, "fdb")
    vad = SileroVAD()
    rows, failures, turns, bcs, timings = [], [], [], [], []
    for rd in dialogues:
        try:
            x = _load(rd)
            raw, samples = [], []
            for c in (0, 1):
                spans, n = fdb.vad_spans_samples(np.ascontiguousarray(x[:, c]), SR, vad)
                samples.append(spans)
                raw.append([(a / SR, b / SR) for a, b in spans])
            row: dict[str, Any] = {"id": rd.id, "recording": rd.conversation_id, "protocol": proto.name}
            if proto.name == "fdb-v1.5":
                it = fdb.timing_item(raw[0], raw[1])
                timings.append(it)
                row.update(it, **fdb.timing_summary([it]))
            else:
                words = _system_words(rd, x, asr)
                user = fdb.merge(raw[0], fdb.USER_MERGE_S)
                items = []
                for i, (us, ue) in enumerate(user):
                    nxt = user[i + 1][0] if i + 1 < len(user) else float("inf")
                    items.append(fdb.turn_item([w for w in words if us <= w[1] < nxt], ue))
                turns += items
                key = gt.get(rd.conversation_id, gt.get(Path(rd.audio_path).stem)) if gt else None
                segs = fdb.seconds_spans(samples[1], n)
                bc = fdb.backchannel_item(segs, words, len(x) / SR, key)
                bcs.append(bc)
                row.update(turn_taking=fdb.turn_summary(items), backchannel={
                    k: v for k, v in bc.items() if k != "backchannels"}, items=items)
        except BargeinError as e:
            failures.append(_fail(rd, e))
            continue
        rows.append(row)
    summary: dict[str, Any] = {"protocol": proto.record(), "recordings": len(rows), "failures": len(failures)}
    if proto.name == "fdb-v1.5":
        summary["timing"] = fdb.timing_summary(timings)
    else:
        summary["turn_taking"] = fdb.turn_summary(turns)
        summary["backchannel"] = fdb.backchannel_summary(bcs)
    return rows, summary, failures


def score_turnnat_recordings(dialogues: Sequence, predictor: Any, protocol: str = "turnnat-ref",
                             *, vad: str = "silero", cache_dir: Path | None = None) -> tuple[list, dict, list]:
    """Naturalness (-NLL) of each recording under ``turnnat-ref`` or ``turnnat-bargein``."""
    from bargein.audio.vad import get_vad
    from bargein.scorers.protocols import get_protocol
    from bargein.scorers.turnnat import ClipScorer, RefClipScorer

    proto = get_protocol(protocol, "turnnat")
    scorer = RefClipScorer(predictor, cache_dir) if proto.name == "turnnat-ref" else \
        ClipScorer(predictor, get_vad(vad), cache_dir)
    rows, failures = [], []
    for rd in dialogues:
        try:
            s = scorer.score(Path(rd.audio_path))
        except BargeinError as e:
            failures.append(_fail(rd, e))
            continue
        rows.append({"id": rd.id, "recording": rd.conversation_id, "protocol": proto.name, "nll": s.nll,
                     "naturalness": -s.nll, "mean_nll": s.mean_nll, "tail_nll": s.tail_nll, "units": s.units})
    nat = [r["naturalness"] for r in rows]
    summary = {"protocol": proto.record(), "recordings": len(rows), "failures": len(failures),
               "naturalness_mean": float(np.mean(nat)) if nat else float("nan"),
               "predictor": f"{predictor.id}@{getattr(predictor, 'version', '')}"}
    return rows, summary, failures


__all__ = ["score_fdbench", "score_fdb", "score_turnnat_recordings"]
