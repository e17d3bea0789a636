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
    if len(silent) == 0:
        return None
    centre = 0.5 * (need[0] + need[1])
    target = target_s if target_s is not None else 0.5 * (min_s + max_s)
    starts = silent[(silent <= max(0.0, lo)) & (silent >= hi - max_s)]
    best, best_cost = None, np.inf
    for a in starts:
        j0 = np.searchsorted(silent, max(a + min_s, hi) - 1e-9)
        j1 = np.searchsorted(silent, a + max_s + 1e-9)
        if j1 <= j0:
            continue
        ends = silent[j0:j1]
        cost = np.abs(0.5 * (a + ends) - centre) + 0.25 * np.abs(ends - a - target)
        k = int(np.argmin(cost))
        if cost[k] < best_cost - 1e-12:
            best, best_cost = (float(a), float(ends[k])), float(cost[k])
    return best


def clip_segments(segments: Sequence[Sequence[Span]], a: float, b: float) -> list[list[Span]]:
    """Segments inside [a, b], shifted to crop time (start 0)."""
    out = []
    for ch in segments:
        out.append([(max(s, a) - a, min(e, b) - a) for s, e in ch if e > a and s < b])
    return out
