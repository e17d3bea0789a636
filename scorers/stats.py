"""Statistics shared by every scorer: percentile bootstrap confidence intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    statistic: Callable[[np.ndarray], float] = np.mean,
) -> tuple[float, float, float]:
    """(point, low, high): percentile bootstrap over items (resampled with replacement).

    ``values`` are per-item values (e.g. per-item means over epochs, as in IHBench). The
    interval is the (alpha/2, 1-alpha/2) percentile of ``n_boot`` resampled statistics.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    point = float(statistic(x))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    stats = np.array([statistic(x[i]) for i in idx]) if statistic is not np.mean else x[idx].mean(axis=1)
    lo, hi = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return point, float(lo), float(hi)
