"""``turnnat-ref`` splices, crops and loudness, as the public TurnNat generator does them.

Splices (one channel, ``n`` = fade samples)::

    insert (60 ms, late response / shift-instead-of-hold)
        x[:p-n] | x[p-n:p]*cos + fill[:n]*sin | fill[n:n+d] | fill[n+d:]*cos + x[p:p+n]*sin | x[p+n:]
    cut + append (early entry)     x[:c0] | x[c1:] | fill(c1 - c0)          then 12 ms raised-cosine
                                   edge fades on the 40 ms around c0
    replace (hold instead of shift) x[r0:r1] = fill with 12 ms raised-cosine fade-in/out
    add (excessive backchannel)     x[p:p+len(bc)] += bc, clipped to [-1, 1]; no fades

Crop: both ends need >= 350 ms of stereo silence (every 30 ms window's RMS <= 0.0105 on both
channels), candidates every 80 ms; the edit's anchor midpoint lies at 18-82 % of the clip;
the clip covers 3 s of scorer context + 2 s of unit window before the first edit boundary and
2 s after the last; 20-25 s (early entry: 10-25 s, ending <= 3.5 s after the new onset).

Loudness: the whole stereo file to -20 dBFS RMS, gain lowered so the peak is <= -1 dBFS, then
clipped; natural and perturbed clips are normalised separately.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from random import Random

import numpy as np

from bargein.errors import GenerationFailed

THRESHOLD = 0.015                 # the reference's RMS threshold (``--threshold``)
SPLICE_MS = 60.0                  # late response and shift-instead-of-hold insert fades
EDGE_FADE_MS = 12.0
CROP_SILENCE_MS = 350.0
CROP_STEP_MS = 80.0
CROP_FRAC = (0.18, 0.82)
SCORER_CONTEXT_S, SCORER_UNIT_PRE_S, SCORER_FUTURE_S = 3.0, 2.0, 2.0
RESPONSE_POST_MS = 500.0


def silence_threshold(threshold: float = THRESHOLD) -> float:
    return max(0.006, threshold * 0.70)


def max_window_rms(x: np.ndarray, s: int, e: int, window: int) -> float:
    """Largest RMS over windows of ``window`` samples stepped by window // 2 inside [s, e)."""
    s = max(0, min(len(x), s))
    e = max(s, min(len(x), e))
    if e <= s:
        return 0.0
    y = np.asarray(x[s:e], dtype=np.float64)
    if len(y) <= window:
        return float(np.sqrt(max(np.mean(y * y), 1e-12)))
    step = max(1, window // 2)
    c = np.concatenate([[0.0], np.cumsum(y * y)])
    starts = np.arange(0, max(1, len(y) - window + 1), step)
    ms = (c[starts + window] - c[starts]) / window
    return float(np.sqrt(np.maximum(ms, 1e-12)).max())


def pair_silent(a: np.ndarray, b: np.ndarray, s: int, e: int, sr: int, threshold: float = THRESHOLD) -> bool:
    """Both channels: every 30 ms window of [s, e) at RMS <= max(0.006, 0.7 threshold)."""
    s = max(0, min(len(a), s))
    e = max(s, min(len(a), e))
    if e <= s:
        return False
    w = max(1, int(round(sr * 0.030)))
    t = silence_threshold(threshold)
    return max_window_rms(a, s, e, w) <= t and max_window_rms(b, s, e, w) <= t


def channel_silent(x: np.ndarray, s: int, e: int, sr: int, threshold: float = THRESHOLD) -> bool:
    """One channel: 30 ms windows <= 0.7 thr, 8 ms windows <= max(0.004, 0.35 thr), peak <=
    max(0.010, 0.8 thr)."""
    s = max(0, min(len(x), s))
    e = max(s, min(len(x), e))
    if e <= s:
        return False
    w30, w8 = max(1, int(round(sr * 0.030))), max(1, int(round(sr * 0.008)))
    return (max_window_rms(x, s, e, w30) <= silence_threshold(threshold)
            and max_window_rms(x, s, e, w8) <= max(0.004, threshold * 0.35)
            and float(np.max(np.abs(x[s:e]))) <= max(0.010, threshold * 0.80))


def _equal_power(n: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0.0, math.pi / 2.0, n, dtype=np.float32)
    return np.cos(t).astype(np.float32), np.sin(t).astype(np.float32)


def raised_cosine(n: int, falling: bool = False) -> np.ndarray:
    c = (0.5 - 0.5 * np.cos(np.linspace(0.0, math.pi, n, dtype=np.float32))).astype(np.float32)
    return c[::-1] if falling else c


def _fit(fill: np.ndarray | None, n: int) -> np.ndarray:
    out = np.zeros(max(0, n), dtype=np.float32)
    if fill is not None and n > 0:
        f = np.asarray(fill, dtype=np.float32).reshape(-1)[:n]
        out[:len(f)] = f
    return out


def insert(x: np.ndarray, p: int, d: int, fill: np.ndarray | None, sr: int,
           fade_ms: float = SPLICE_MS) -> np.ndarray:
    """``d`` samples of ``fill`` inserted at ``p`` with equal-power crossfades of ``fade_ms``
    on each side (the fill carries the fade samples); length grows by exactly ``d``."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)
    if d <= 0:
        return x.copy()
    p = max(0, min(len(x), int(p)))
    n = max(0, int(round(sr * fade_ms / 1000.0)))
    nl, nr = min(n, p), min(n, len(x) - p)
    f = _fit(fill, d + nl + nr)
    parts = []
    if nl:
        out_c, in_c = _equal_power(nl)
        parts += [x[:p - nl], x[p - nl:p] * out_c + f[:nl] * in_c]
    else:
        parts.append(x[:p])
    parts.append(f[nl:nl + d])
    if nr:
        out_c, in_c = _equal_power(nr)
        parts += [f[nl + d:nl + d + nr] * out_c + x[p:p + nr] * in_c, x[p + nr:]]
    else:
        parts.append(x[p:])
    return np.concatenate(parts).astype(np.float32)


def edge_fades(x: np.ndarray, s: int, e: int, sr: int, fade_ms: float = EDGE_FADE_MS) -> None:
    """In place: raised-cosine fade-in over the first and fade-out over the last
    min((e - s) // 2, fade) samples of [s, e)."""
    s = max(0, min(len(x), s))
    e = max(s, min(len(x), e))
    n = min((e - s) // 2, max(1, int(round(sr * fade_ms / 1000.0))))
    if e <= s or n <= 1:
        return
    x[s:s + n] *= raised_cosine(n)
    x[e - n:e] *= raised_cosine(n, falling=True)


def cut_and_append(x: np.ndarray, c0: int, c1: int, fill: np.ndarray | None, sr: int) -> np.ndarray:
    """Remove [c0, c1), append ``c1 - c0`` samples of ``fill`` at the end (length unchanged),
    then the reference's edge fades on the 40 ms around the join."""
    c0 = max(0, min(len(x), c0))
    c1 = max(c0, min(len(x), c1))
    y = np.concatenate([x[:c0], x[c1:], _fit(fill, c1 - c0)]).astype(np.float32)
    g = int(round(0.02 * sr))
    edge_fades(y, max(0, c0 - g), min(len(y), c0 + g), sr)
    return y


def replace_smooth(x: np.ndarray, r0: int, r1: int, fill: np.ndarray | None, sr: int) -> np.ndarray:
    """[r0, r1) replaced by ``fill`` faded in and out (raised cosine, 12 ms)."""
    y = np.array(x, dtype=np.float32, copy=True)
    r0 = max(0, min(len(y), r0))
    r1 = max(r0, min(len(y), r1))
    n = r1 - r0
    f = _fit(fill, n)
    k = min(n // 2, max(1, int(round(sr * EDGE_FADE_MS / 1000.0))))
    if k > 1:
        f[:k] *= raised_cosine(k)
        f[n - k:] *= raised_cosine(k, falling=True)
    y[r0:r1] = f
    np.clip(y, -1.0, 1.0, out=y)
    return y


def add(x: np.ndarray, clip: np.ndarray, p: int, gain: float = 1.0) -> np.ndarray:
    """``clip`` added at ``p`` (no fades), the channel clipped to [-1, 1]."""
    y = np.array(x, dtype=np.float32, copy=True)
    p = max(0, p)
    e = min(len(y), p + len(clip))
    if e > p:
        y[p:e] += gain * np.asarray(clip[:e - p], dtype=np.float32)
        np.clip(y, -1.0, 1.0, out=y)
    return y


def normalize_stereo(x: np.ndarray, target_dbfs: float = -20.0, peak_dbfs: float = -1.0) -> tuple[np.ndarray, float]:
    """Whole-file stereo RMS to ``target_dbfs``, gain lowered to keep the peak at or below
    ``peak_dbfs``, clipped to it. Returns (audio, gain)."""
    y = np.asarray(x, dtype=np.float32)
    if y.size == 0:
        return y.copy(), 1.0
    rms = float(np.sqrt(np.maximum(np.mean(y ** 2), 1e-12)))      # in float32, as the reference
    peak = float(np.max(np.abs(y)))
    ceil = 10.0 ** (peak_dbfs / 20.0)
    gain = 10.0 ** (target_dbfs / 20.0) / max(rms, 1e-8)
    if peak > 0.0 and peak * gain > ceil:
        gain = ceil / peak
    return np.clip(y * gain, -ceil, ceil).astype(np.float32), gain


def pick_spaced(frames: Sequence[int], count: int, min_gap: int, rng: Random) -> list[int]:
    """Shuffle, keep each frame at least ``min_gap`` from all kept ones, stop at ``count``."""
    vals = [int(f) for f in frames]
    rng.shuffle(vals)
    out: list[int] = []
    for f in vals:
        if all(abs(f - g) >= min_gap for g in out):
            out.append(f)
            if len(out) >= count:
                break
    return sorted(out)


def silent_ends(stereo: np.ndarray, sr: int, lo: int, hi: int, kind: str,
                threshold: float = THRESHOLD) -> list[int]:
    """Crop boundaries in [lo, hi] every 80 ms with 350 ms of stereo silence after (``start``)
    or before (``end``) them."""
    lo = max(0, min(len(stereo), lo))
    hi = max(lo, min(len(stereo), hi))
    n = max(1, int(round(sr * CROP_SILENCE_MS / 1000.0)))
    step = max(1, int(round(sr * CROP_STEP_MS / 1000.0)))
    a, b = stereo[:, 0], stereo[:, 1]
    if kind == "start":
        return [p for p in range(lo, max(lo, hi - n) + 1, step) if pair_silent(a, b, p, p + n, sr, threshold)]
    return [p for p in range(lo + n, hi + 1, step) if pair_silent(a, b, p - n, p, sr, threshold)]


def _ms1(t: float) -> float:
    """A time in seconds at the reference's 0.1 ms resolution."""
    return round(float(t) * 1000.0, 1) / 1000.0


def check_scorer_coverage(boundaries_s: Sequence[float], duration_s: float) -> None:
    """The reference's per-edit guard (applied to every candidate, cropped or not): the first
    protected boundary needs 3 s of scorer context + 2 s of unit window before it inside the
    edited clip, the last needs 2 s of future after it; otherwise the candidate is rejected.
    Times are compared in ms at the reference's 0.1 ms resolution."""
    b = [round(float(t) * 1000.0, 1) for t in boundaries_s if math.isfinite(float(t))]
    if not b:
        return
    left = min(b) - (SCORER_CONTEXT_S + SCORER_UNIT_PRE_S) * 1000.0
    right = max(b) + SCORER_FUTURE_S * 1000.0
    if left < 0.0:
        raise GenerationFailed(f"turnnat-ref: the first edit boundary ({min(b) / 1000:.3f} s) has less than "
                               f"{SCORER_CONTEXT_S + SCORER_UNIT_PRE_S:.0f} s of scorer context before it")
    if right > duration_s * 1000.0:
        raise GenerationFailed(f"turnnat-ref: the last edit boundary ({max(b) / 1000:.3f} s) has less than "
                               f"{SCORER_FUTURE_S:.0f} s of audio after it (clip {duration_s:.3f} s)")


def choose_crop(stereo: np.ndarray, sr: int, rng: Random, *, boundaries_s: Sequence[float],
                anchors_s: Sequence[float], required_end_s: Sequence[float] = (),
                early_new_start_s: float | None = None, min_s: float = 20.0, max_s: float = 25.0,
                threshold: float = THRESHOLD) -> tuple[int, int]:
    """The reference crop (in samples) of an edited clip; raises GenerationFailed if none, or
    if the edit fails :func:`check_scorer_coverage` (checked first, as the reference rejects the
    candidate before cropping)."""
    total = len(stereo)
    check_scorer_coverage(boundaries_s, total / sr)
    # the reference keeps every edit time in ms rounded to 0.1 ms and derives samples from that
    boundaries_s, anchors_s, required_end_s = ([_ms1(t) for t in v] for v in (boundaries_s, anchors_s, required_end_s))
    early_new_start_s = None if early_new_start_s is None else _ms1(early_new_start_s)
    if total / sr <= max_s:
        return 0, total
    min_len, max_len = int(round(min_s * sr)), int(round(max_s * sr))
    eff_min, cap = min_len, None
    if early_new_start_s is not None:
        eff_min = min(min_len, int(round(10.0 * sr)))
        cap = max(0, int(round((early_new_start_s + 3.5) * sr)))
    anchors = sorted(int(round(min(max(t, 0.0), total / sr) * sr)) for t in anchors_s) or [total // 2]
    first, last = anchors[0], anchors[-1]
    req_end = min(total, max([last] + [int(round(t * sr)) for t in required_end_s]))
    sc_start = sc_end = None
    if boundaries_s:
        left = min(boundaries_s) - (SCORER_CONTEXT_S + SCORER_UNIT_PRE_S)
        right = max(boundaries_s) + SCORER_FUTURE_S
        sc_start = max(0, int(math.floor(left * sr)))
        sc_end = min(total, int(math.ceil(right * sr)))
        req_end = max(req_end, sc_end)
    span = max(0, req_end - first)
    if span > max_len - int(round(2.0 * sr)):
        raise GenerationFailed("turnnat-ref crop: the edit and its guards do not fit in a 25 s clip")
    if sc_start is not None and sc_end - sc_start > max_len:
        raise GenerationFailed("turnnat-ref crop: the scorer coverage (5 s before, 2 s after) is wider than 25 s")
    side = int(round(2.0 * sr))
    target = max(eff_min, min(max_len, span + int(round(rng.uniform(18.0, 30.0) * sr))))
    frac_t = rng.uniform(0.25, 0.75)
    mid = (first + req_end) // 2
    s_lo, s_hi = max(0, req_end - max_len), min(first - side, total - eff_min)
    e_lo, e_hi = max(req_end, last + side, eff_min), min(total, first + max_len)
    if sc_start is not None:
        s_hi, e_lo = min(s_hi, sc_start), max(e_lo, sc_end)
    if cap is not None and cap >= e_lo:
        e_hi = min(e_hi, cap)
    if s_hi < s_lo or e_hi < e_lo:
        raise GenerationFailed("turnnat-ref crop: no feasible bounds around the edit")
    best = None
    ends = silent_ends(stereo, sr, e_lo, e_hi, "end", threshold)
    for st in silent_ends(stereo, sr, s_lo, s_hi, "start", threshold):
        for en in ends:
            d = en - st
            if d < eff_min or d > max_len or not (st < first and req_end < en):
                continue
            if sc_start is not None and (st > sc_start or en < sc_end):
                continue
            frac = (mid - st) / float(d)
            if not CROP_FRAC[0] <= frac <= CROP_FRAC[1]:
                continue
            score = abs(d - target) / sr + abs(frac - frac_t) * 1.5
            if best is None or score < best[0]:
                best = (score, st, en)
    if best is None:
        raise GenerationFailed("turnnat-ref crop: no crop with >= 350 ms of silence at both ends, the "
                               "event at 18-82 % and 5 s of context before it")
    return best[1], best[2]


__all__ = ["insert", "cut_and_append", "replace_smooth", "add", "normalize_stereo", "pick_spaced",
           "choose_crop", "check_scorer_coverage", "silent_ends", "pair_silent", "channel_silent",
           "max_window_rms", "edge_fades",
           "SPLICE_MS", "THRESHOLD"]
