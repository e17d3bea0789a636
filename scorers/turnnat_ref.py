"""TurnNat scoring exactly as the public scorer does it (``turnnat-ref``).

Scoring VAD (``score_fvad_checkpoint.py``): silero per channel (threshold 0.5, min speech
100 ms, min silence 50 ms, pad 30 ms) -> 50 Hz frames (``frame = sample // 320``, end
exclusive), then cleaned per channel: speech runs < 7 frames (150 ms) are dropped, then silence
runs < 7 frames between/before speech are filled.

Units: same-speaker runs are merged across a pause <= 1.0 s when the other speaker is active in
<= 20 % of it; utterances >= 0.2 s give one unit at their start and one at their end, each
``[t - 2 s, t]``; frames before 3 s are never scored; a unit needs >= 5 scored frames. If no
unit survives: every frame within +-2 s of a VAD change (after 3 s), else every frame after 3 s::

    A  ====== ..0.6 s.. =====          -> one utterance (B silent in the pause)
    units        [--2 s--]^start   [--2 s--]^end       frames < 3 s dropped

Clip NLL = 0.5 mean + 0.5 mean of the worst ceil(25 %) units.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

FRAME_HZ = 50.0
FRAME_SAMPLES = 320          # at 16 kHz
SCORE_VAD = {"threshold": 0.5, "min_speech_ms": 100.0, "min_silence_ms": 50.0, "speech_pad_ms": 30.0}
CLEAN_MS = 150
CONTEXT_S = 3.0
UNIT_PRE_S = 2.0
MIN_UNIT_FRAMES = 5
MIN_UTT_S = 0.2
MERGE_GAP_S = 1.0
MERGE_OTHER_MAX = 0.2
TAIL = 0.25
LAMBDA = 0.5


def spans_to_frames(spans: Sequence[tuple[int, int]], n_samples: int) -> np.ndarray:
    """Sample spans -> 0/1 per 20 ms frame (``n_samples // 320`` frames)."""
    n = n_samples // FRAME_SAMPLES
    v = np.zeros(n, dtype=np.int8)
    for a, b in spans:
        v[int(a // FRAME_SAMPLES): min(int(b // FRAME_SAMPLES), n)] = 1
    return v


def clean(v: np.ndarray, min_speech_ms: int = CLEAN_MS, min_silence_ms: int = CLEAN_MS) -> np.ndarray:
    """Drop speech runs shorter than ``min_speech_ms`` (that end before the clip does), then
    fill silence runs shorter than ``min_silence_ms`` that are followed by speech."""
    out = np.asarray(v, dtype=np.int8).copy()
    frame_ms = 1000.0 / FRAME_HZ
    for value, limit in ((1, int(min_speech_ms / frame_ms)), (0, int(min_silence_ms / frame_ms))):
        run_start = None
        for i in range(len(out)):
            if out[i] == value and run_start is None:
                run_start = i
            elif out[i] != value and run_start is not None:
                if i - run_start < limit:
                    out[run_start:i] = 1 - value
                run_start = None
    return out


def scoring_activity(stereo: np.ndarray, sample_rate: int, vad=None, vads=None) -> np.ndarray:
    """(frames, 2) cleaned 0/1 activity of a two-channel clip, by the reference scoring VAD.

    ``vads``: two silero instances -> the two channels run in parallel (same output)."""
    from bargein.audio.io import resample
    from bargein.audio.vad import silero_probs_channels, silero_timestamps

    chans16 = [np.ascontiguousarray(stereo[:, c], dtype=np.float32) for c in range(2)]
    if sample_rate != 16000:            # per channel, as the reference resamples each file
        chans16 = [resample(c, sample_rate, 16000) for c in chans16]
    x = np.stack(chans16, axis=1)
    probs = silero_probs_channels(x, 16000, tuple(vads) if vads else ((vad,) if vad is not None else None))
    chans = [spans_to_frames(silero_timestamps(p, len(x), **SCORE_VAD), len(x)) for p in probs]
    n = min(len(chans[0]), len(chans[1]))
    raw = np.stack([chans[0][:n], chans[1][:n]], axis=1)
    return np.stack([clean(raw[:, c]) for c in range(2)], axis=1)


def _runs(x: np.ndarray) -> list[tuple[int, int]]:
    p = np.concatenate(([False], np.asarray(x, bool), [False]))
    starts = np.flatnonzero(~p[:-1] & p[1:])
    ends = np.flatnonzero(p[:-1] & ~p[1:])
    return [(int(a), int(b)) for a, b in zip(starts, ends)]


def _active_ratio(v: np.ndarray, spk: int, a_s: float, b_s: float) -> float:
    lo, hi = max(0, int(math.floor(a_s * FRAME_HZ))), min(v.shape[0], int(math.ceil(b_s * FRAME_HZ)))
    return float((v[lo:hi, spk] > 0).mean()) if hi > lo else 0.0


def utterances(v: np.ndarray) -> list[dict[str, Any]]:
    """Merged same-speaker utterances ``{speaker, start, end, duration}`` (seconds)."""
    out = []
    for spk in range(v.shape[1]):
        cur = None
        for a, b in _runs(v[:, spk] > 0):
            seg = {"speaker": spk, "start": a / FRAME_HZ, "end": b / FRAME_HZ,
                   "duration": (b - a) / FRAME_HZ}       # the reference's float arithmetic
            if cur is not None:
                gap = seg["start"] - cur["end"]
                if gap <= MERGE_GAP_S and _active_ratio(v, 1 - spk, cur["end"], seg["start"]) <= MERGE_OTHER_MAX:
                    cur["end"] = seg["end"]
                    cur["duration"] = cur["end"] - cur["start"]
                    continue
                out.append(cur)
            cur = seg
        if cur is not None:
            out.append(cur)
    return sorted(out, key=lambda u: (u["start"], u["end"], u["speaker"]))


def units(v: np.ndarray, duration_s: float) -> list[dict[str, Any]]:
    """Boundary units ``[t - 2 s, t]`` at the start and end of every utterance >= 0.2 s."""
    out, seen = [], set()
    for u in utterances(v):
        if u["duration"] < MIN_UTT_S:
            continue
        for kind, t in (("utterance_start", u["start"]), ("utterance_end", u["end"])):
            a, b = max(0.0, t - UNIT_PRE_S), min(duration_s, t)
            key = (kind, round(a, 2), round(b, 2), u["speaker"])
            if b <= a or key in seen:
                continue
            seen.add(key)
            out.append({"unit_type": kind, "start_time": a, "end_time": b, "speaker": u["speaker"]})
    return sorted(out, key=lambda x: (x["start_time"], x["end_time"], x["unit_type"], x["speaker"]))


def vad_to_model_frames(v: np.ndarray, n: int, model_hz: float) -> np.ndarray:
    """(n, 2) activity at the predictor's frame rate: model frame ``i`` covers 50 Hz frames
    ``floor(i * 50 / hz)`` to ``floor((i + 1) * 50 / hz)`` (at least one) and is active when at
    least half of them are; frames past the VAD are silent. At 50 Hz this is ``v`` itself."""
    out = np.zeros((max(0, n), 2), dtype=np.int8)
    v = np.asarray(v)
    for i in range(max(0, n)):
        lo = int(math.floor(i * FRAME_HZ / model_hz))
        hi = max(int(math.floor((i + 1) * FRAME_HZ / model_hz)), lo + 1)
        if lo < v.shape[0]:
            out[i] = (v[lo:min(hi, v.shape[0])].mean(axis=0) >= 0.5).astype(np.int8)
    return out


def unit_scores(nll: np.ndarray, unit_list: Sequence[dict], v: np.ndarray,
                frame_hz: float = FRAME_HZ) -> list[dict[str, Any]]:
    """Mean NLL per unit (>= 5 finite frames after 3 s), with the two fallbacks. ``nll`` is at
    the predictor's ``frame_hz`` (the reference slices units at the model's rate: 12.5 Hz for
    its DualTurn checkpoint, 50 Hz for VAP); ``v`` is the 50 Hz scoring activity."""
    n = len(nll)
    first = int(math.ceil(CONTEXT_S * frame_hz))
    rows = []
    for u in unit_list:
        lo = max(first, int(math.floor(u["start_time"] * frame_hz)))
        hi = min(n, int(math.ceil(u["end_time"] * frame_hz)))
        vals = nll[lo:hi] if hi > lo else np.zeros(0)
        vals = vals[np.isfinite(vals)]
        if vals.size >= MIN_UNIT_FRAMES:
            rows.append({**u, "num_frames": int(vals.size), "unit_nll": float(vals.mean())})
    if rows:
        return rows
    valid = np.zeros(n, dtype=bool)
    valid[min(first, n):] = True
    vm = vad_to_model_frames(v, n, frame_hz)
    mask = np.zeros(n, dtype=bool)
    if n > 1:
        w = int(round(2.0 * frame_hz))
        for idx in np.flatnonzero(np.any(vm[1:n] != vm[:n - 1], axis=1)) + 1:
            mask[max(0, idx - w): min(n, idx + w + 1)] = True
    mask &= valid
    for kind, sel in (("fallback_vad_boundaries", mask), ("fallback_all_valid", valid)):
        if kind == "fallback_vad_boundaries" and int(sel.sum()) < MIN_UNIT_FRAMES:
            continue
        vals = nll[sel]
        vals = vals[np.isfinite(vals)]
        if kind == "fallback_vad_boundaries" and vals.size < MIN_UNIT_FRAMES:
            continue
        if vals.size == 0:
            return []
        return [{"unit_type": kind, "num_frames": int(vals.size), "unit_nll": float(vals.mean())}]
    return []


def pool(rows: Sequence[dict]) -> dict[str, float]:
    """Mean, tail (worst ceil(25 %)) and dialogue NLL of the unit rows."""
    if not rows:
        return {"mean_nll": math.nan, "tail_nll": math.nan, "nll": math.nan, "naturalness": math.nan,
                "units": 0}
    arr = np.array([r["unit_nll"] for r in rows], dtype=np.float64)
    k = max(1, int(math.ceil(TAIL * len(arr))))
    mean, tail = float(arr.mean()), float(np.sort(arr)[-k:].mean())
    nll = LAMBDA * mean + (1 - LAMBDA) * tail
    return {"mean_nll": mean, "tail_nll": tail, "nll": nll, "naturalness": -nll, "units": len(arr)}


def score_activity(v: np.ndarray, predictor: Any, duration_s: float, *, audio=None,
                   sample_rate: int | None = None) -> dict[str, float]:
    """Predictor NLL on the reference activity, pooled over the reference units."""
    act = np.asarray(v, dtype=bool)
    nll = predictor.frame_nll(act, audio=audio, sample_rate=sample_rate)
    hz = float(getattr(predictor, "frame_hz", FRAME_HZ))
    return pool(unit_scores(np.asarray(nll, dtype=np.float64), units(v, duration_s), v, frame_hz=hz))


__all__ = ["scoring_activity", "clean", "spans_to_frames", "utterances", "units", "unit_scores",
           "pool", "score_activity", "vad_to_model_frames", "SCORE_VAD"]
