"""Small DSP helpers shared by rendering, masking and perturbation: fades and splices."""

from __future__ import annotations

import numpy as np


def equal_power_ramp(n_samples: int, rising: bool = True) -> np.ndarray:
    """sin/cos ramp over ``n_samples``: fade-in and fade-out sum to constant power."""
    if n_samples <= 0:
        return np.ones(0, dtype=np.float32)
    t = (np.arange(n_samples, dtype=np.float64) + 0.5) / n_samples
    ramp = np.sin(0.5 * np.pi * t) if rising else np.cos(0.5 * np.pi * t)
    return ramp.astype(np.float32)


def fade(samples: np.ndarray, sample_rate: int, *, in_ms: float = 0.0, out_ms: float = 0.0) -> np.ndarray:
    """Equal-power fade-in at the start and fade-out at the end (copies)."""
    x = np.array(samples, dtype=np.float32, copy=True)
    n_in = min(len(x), int(round(sample_rate * in_ms / 1000)))
    n_out = min(len(x), int(round(sample_rate * out_ms / 1000)))
    if n_in:
        r = equal_power_ramp(n_in, True)
        x[:n_in] *= r if x.ndim == 1 else r[:, None]
    if n_out:
        r = equal_power_ramp(n_out, False)
        x[len(x) - n_out:] *= r if x.ndim == 1 else r[:, None]
    return x


def crossfade(a: np.ndarray, b: np.ndarray, sample_rate: int, ms: float = 10.0) -> np.ndarray:
    """Concatenate ``a`` and ``b`` with an equal-power overlap of ``ms``."""
    n = min(len(a), len(b), int(round(sample_rate * ms / 1000)))
    if n == 0:
        return np.concatenate([a, b]).astype(np.float32)
    out = np.concatenate([a[: len(a) - n], np.zeros((n,) + a.shape[1:], np.float32), b[n:]])
    fo, fi = equal_power_ramp(n, False), equal_power_ramp(n, True)
    if a.ndim == 2:
        fo, fi = fo[:, None], fi[:, None]
    out[len(a) - n: len(a)] = a[len(a) - n:] * fo + b[:n] * fi
    return out.astype(np.float32)


def seconds_to_samples(t_s: float, sample_rate: int) -> int:
    return int(round(t_s * sample_rate))
