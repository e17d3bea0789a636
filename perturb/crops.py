"""20-25 s crops whose start and end lie where both speakers are silent.

::

    A   ===  ====|         |=====    ===        ====
    B  ==       |   ====  |   ===      |=====
          ^ start (both silent)      event       ^ end (both silent)
          |<------------- 20..25 s ------------->|   centred on the event
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bargein.audio.events import merge_spans

Span = tuple[float, float]
CROP_MIN_S = 20.0
CROP_MAX_S = 25.0


def silent_times(segments: Sequence[Sequence[Span]], duration_s: float, step_s: float = 0.01,
                 margin_s: float = 0.05) -> np.ndarray:
    """Grid times (every ``step_s``) at least ``margin_s`` away from any speech on any channel."""
    t = np.round(np.arange(0.0, duration_s + 1e-9, step_s), 6)
    ok = np.ones(len(t), dtype=bool)
    for a, b in merge_spans([s for ch in segments for s in ch]):
        lo, hi = np.searchsorted(t, [a - margin_s, b + margin_s], side="left")
        ok[lo:hi] = False
    return t[ok]


def choose_crop(segments: Sequence[Sequence[Span]], duration_s: float, need: Span, *,
                target_s: float | None = None, min_s: float = CROP_MIN_S, max_s: float = CROP_MAX_S,
                margin_s: float = 1.0) -> Span | None:
    """A crop [a, b] with silent ends, ``min_s <= b - a <= max_s``, containing ``need`` plus
    ``margin_s`` each side, centred on ``need`` as well as possible; ``None`` if impossible.

    ``target_s`` (a drawn length) is preferred; without it any length in range is fine.
    """
    lo, hi = need[0] - margin_s, need[1] + margin_s
    if hi - lo > max_s:
        return None
    silent = silent_times(segments, duration_s)
    a = silent[(silent <= max(0.0, lo)) & (silent >= hi - max_s)]
    if len(a) == 0:
        return None
    centre = 0.5 * (need[0] + need[1])
    target = target_s if target_s is not None else 0.5 * (min_s + max_s)
    e_lo, e_hi = np.maximum(a + min_s, hi), a + max_s
    # the cost is convex in the end b, minimal at b = 2 centre - a: the best silent end is one
    # of the two silent points around that optimum (clipped to the allowed range)
    j = np.searchsorted(silent, np.clip(2 * centre - a, e_lo, e_hi))
    best, best_cost = None, np.inf
    for k in (j - 1, j):
        b = silent[np.clip(k, 0, len(silent) - 1)]
        ok = (k >= 0) & (k < len(silent)) & (b >= e_lo - 1e-9) & (b <= e_hi + 1e-9)
        cost = np.where(ok, np.abs(0.5 * (a + b) - centre) + 0.25 * np.abs(b - a - target), np.inf)
        i = int(np.argmin(cost))
        if cost[i] < best_cost - 1e-12:
            best, best_cost = (float(a[i]), float(b[i])), float(cost[i])
    return best


def clip_segments(segments: Sequence[Sequence[Span]], a: float, b: float) -> list[list[Span]]:
    """Segments inside [a, b], shifted to crop time (start 0)."""
    out = []
    for ch in segments:
        out.append([(max(s, a) - a, min(e, b) - a) for s, e in ch if e > a and s < b])
    return out
