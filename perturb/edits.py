"""Sample-exact splice primitives for one channel: insert, remove, overwrite, with room tone.

Every join is an equal-power crossfade of ``n`` samples (10-12 ms). Content after an insert
of ``d`` samples at ``p`` moves by exactly ``d``; after removing ``[p0, p1)`` by exactly
``p1 - p0``::

    insert   x[:p] ~~ fill(d + 2n) ~~ x[p:]        x[k >= p] -> k + d
    remove   x[:p0] ~~ x[p1:]                       x[k >= p1] -> k - (p1 - p0)
    overwrite x[:p0] ~~ fill(p1 - p0) ~~ x[p1:]      length unchanged

(``~~`` = n-sample equal-power overlap, taken from the silence around the join.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bargein.audio.dsp import equal_power_ramp

Span = tuple[float, float]


def _xfade(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """a's last n samples overlap-add b's first n samples (equal power)."""
    n = min(n, len(a), len(b))
    if n <= 0:
        return np.concatenate([a, b]).astype(np.float32)
    mid = a[len(a) - n:] * equal_power_ramp(n, False) + b[:n] * equal_power_ramp(n, True)
    return np.concatenate([a[: len(a) - n], mid, b[n:]]).astype(np.float32)


def insert(x: np.ndarray, p: int, fill: np.ndarray, n: int) -> np.ndarray:
    """Insert ``len(fill) - 2n`` samples at ``p``; ``fill`` must carry n extra samples each side."""
    if len(fill) < 2 * n:
        raise ValueError("insert: fill shorter than its two crossfades")
    return _xfade(_xfade(x[:p], fill, n), x[p:], n)


def remove(x: np.ndarray, p0: int, p1: int, n: int) -> np.ndarray:
    """Remove ``[p0, p1)``; the join overlaps x[p0:p0+n] with x[p1:p1+n]."""
    if not 0 <= p0 <= p1 <= len(x):
        raise ValueError(f"remove: bad range [{p0}, {p1}) for length {len(x)}")
    return _xfade(x[: min(len(x), p0 + n)], x[p1:], n)


def overwrite(x: np.ndarray, p0: int, fill: np.ndarray, n: int) -> np.ndarray:
    """Replace ``x[p0:p0+len(fill)]`` by ``fill``, crossfading n samples at both edges."""
    p1 = p0 + len(fill)
    if not 0 <= p0 <= p1 <= len(x):
        raise ValueError(f"overwrite: bad range [{p0}, {p1}) for length {len(x)}")
    out = np.array(x, dtype=np.float32, copy=True)
    f = np.array(fill, dtype=np.float32, copy=True)
    n = min(n, len(f) // 2)
    if n > 0:
        f[:n] = x[p0:p0 + n] * equal_power_ramp(n, False) + f[:n] * equal_power_ramp(n, True)
        f[-n:] = f[-n:] * equal_power_ramp(n, False) + x[p1 - n:p1] * equal_power_ramp(n, True)
    out[p0:p1] = f
    return out


def complement(spans: Sequence[Span], start: float, end: float, margin_s: float = 0.05) -> list[Span]:
    """Gaps between ``spans`` inside [start, end], shrunk by ``margin_s`` from speech."""
    out, t = [], start
    for a, b in sorted(spans):
        if a - margin_s > t:
            out.append((t, min(end, a - margin_s)))
        t = max(t, b + margin_s)
    if end > t:
        out.append((t, end))
    return [(a, b) for a, b in out if b > a]


def room_tone(x: np.ndarray, sample_rate: int, speech: Sequence[Span], near_s: float,
              n_samples: int, n_fade: int, min_s: float = 0.08) -> np.ndarray:
    """``n_samples`` of this channel's background near ``near_s``, looped with crossfades.

    Takes the non-speech stretch (>= ``min_s``) closest to ``near_s``; returns zeros when the
    channel has none (clean synthetic audio is digital silence anyway).
    """
    dur = len(x) / sample_rate
    gaps = [g for g in complement(speech, 0.0, dur) if g[1] - g[0] >= min_s]
    if not gaps or n_samples <= 0:
        return np.zeros(max(0, n_samples), dtype=np.float32)
    a, b = min(gaps, key=lambda g: (0.0 if g[0] <= near_s <= g[1] else
                                    min(abs(g[0] - near_s), abs(g[1] - near_s)), g[0]))
    tone = x[int(a * sample_rate): int(b * sample_rate)].astype(np.float32)
    if len(tone) <= 2 * n_fade:
        return np.zeros(n_samples, dtype=np.float32)
    out = tone
    while len(out) < n_samples:
        out = _xfade(out, tone, n_fade)
    return out[:n_samples].copy()


def faded(x: np.ndarray, n: int) -> np.ndarray:
    """Copy with n-sample equal-power fade-in and fade-out."""
    y = np.array(x, dtype=np.float32, copy=True)
    n = min(n, len(y) // 2)
    if n > 0:
        y[:n] *= equal_power_ramp(n, True)
        y[-n:] *= equal_power_ramp(n, False)
    return y
