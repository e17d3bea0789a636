"""Mask signals and the masking itself: replace regions of an utterance, touch nothing else.

Inside a masked region the speech fades out and the mask fades in (equal power, 5-10 ms, both
*inside* the region); outside it every sample is the input sample::

    speech  ====word====|\\                     /|====word====
    mask                |/‾‾‾‾‾ noise ‾‾‾‾‾‾‾‾‾\\|
                        a  fade        fade    b       out[:a] == x[:a], out[b:] == x[b:]

Level (choices the paper left open, made here): ``"rms_matched"`` gives the mask's steady part
the RMS of the speech it replaces, floored at 30 dB below the utterance's active speech level
so that a mask over a near-silent word is still audible; ``snr_db=S`` sets the mask at
``S`` dB below the utterance's active speech level instead. Signals are synthesised (no files):
white noise (Gaussian), silence (zeros; level does not apply), and music (plucked pentatonic
notes with harmonics over a soft two-note pad: a 30 s track synthesised once per sample rate,
each mask an excerpt from a seeded offset).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from bargein.audio.dsp import equal_power_ramp
from bargein.audio.io import active_rms, db_to_gain
from bargein.errors import AudioError, ConfigError

SIGNALS: tuple[str, ...] = ("white_noise", "silence", "music")
DEFAULT_FADE_MS = 8.0
FADE_RANGE_MS = (5.0, 10.0)
LEVEL_FLOOR_DB = -30.0          # mask level floor relative to the utterance's active speech RMS

_PENTATONIC = np.array([0, 2, 4, 7, 9, 12, 14, 16])


def white_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n)


def music(n: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """Music-like sound: plucked notes (120-250 ms, 4 harmonics) from a pentatonic scale over a
    soft pad of two sustained tones with a slow tremolo."""
    out = np.zeros(n)
    if n == 0:
        return out
    base = float(rng.choice([196.0, 220.0, 246.9, 261.6]))
    pos = 0
    while pos < n:
        dur = int(sample_rate * rng.uniform(0.12, 0.25))
        m = min(n, pos + dur) - pos
        tt = np.arange(m) / sample_rate
        f = base * 2.0 ** (float(rng.choice(_PENTATONIC)) / 12.0)
        phase = rng.uniform(0, 2 * np.pi, 4)
        env = (1.0 - np.exp(-tt / 0.005)) * np.exp(-tt / 0.15)
        tone = sum(h ** -1.2 * np.sin(2 * np.pi * f * h * tt + phase[h - 1]) for h in range(1, 5)
                   if f * h < sample_rate / 2)
        out[pos:pos + m] += env * tone
        pos += m
    t = np.arange(n) / sample_rate
    pad = (np.sin(2 * np.pi * base / 2 * t) + 0.6 * np.sin(2 * np.pi * base * 0.75 * t))
    out += 0.25 * pad * (0.8 + 0.2 * np.sin(2 * np.pi * 3.0 * t + rng.uniform(0, 2 * np.pi)))
    return out


MUSIC_TRACK_S = 30.0
_MUSIC_SEED = 20260611


@lru_cache(maxsize=8)
def music_track(sample_rate: int) -> np.ndarray:
    """A fixed 30 s music-like track per sample rate (synthesised once per process)."""
    track = music(int(MUSIC_TRACK_S * sample_rate), sample_rate, np.random.default_rng(_MUSIC_SEED))
    track.setflags(write=False)
    return track


def make_signal(kind: str, n: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of the mask signal ``kind`` (float64, any level; zeros for silence).

    Music is an excerpt of :func:`music_track` from a seeded offset (wrapping around), which is
    as varied as synthesising per item and ~20x faster.
    """
    if kind == "white_noise":
        return white_noise(n, rng)
    if kind == "music":
        track = music_track(int(sample_rate))
        start = int(rng.integers(0, len(track)))
        return np.take(track, np.arange(start, start + n), mode="wrap")
    if kind == "silence":
        return np.zeros(n)
    raise ConfigError(f"unknown mask signal {kind!r}; valid: {', '.join(SIGNALS)}")


def check_fade_ms(fade_ms: float) -> float:
    lo, hi = FADE_RANGE_MS
    if not lo <= float(fade_ms) <= hi:
        raise ConfigError(f"fade_ms={fade_ms}: mask fades must be {lo:g}-{hi:g} ms "
                          "(shorter clicks, longer smears the neighbouring words)")
    return float(fade_ms)


def expand_region(start_s: float, end_s: float, window_ms: float, duration_s: float) -> tuple[float, float]:
    """``[start - w, end + w]`` clipped to the utterance; a region longer than the utterance fails.

    ::

        utterance |------------------------------|
        span               [====]
        window ±w        [--====--]
    """
    w = float(window_ms) / 1000.0
    a, b = start_s - w, end_s + w
    if b - a > duration_s:
        raise AudioError(f"masked region {start_s:.3f}-{end_s:.3f} s with a ±{window_ms:g} ms window "
                         f"({b - a:.3f} s) is longer than the utterance ({duration_s:.3f} s)",
                         evidence={"start_s": start_s, "end_s": end_s, "window_ms": window_ms,
                                   "duration_s": duration_s})
    return max(0.0, a), min(duration_s, b)


def merge_regions(regions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping sample regions (touching or overlapping ones merged)."""
    out: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in regions if b > a):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


@dataclass(frozen=True)
class RegionLevel:
    """What one masked region measured: the speech it replaced and the mask's steady part."""

    start: int
    end: int
    fade_samples: int
    speech_rms: float
    target_rms: float


def apply_mask(samples: np.ndarray, sample_rate: int, regions: Sequence[tuple[int, int]], *,
               signal: str, rng: np.random.Generator, snr_db: float | None = None,
               fade_ms: float = DEFAULT_FADE_MS, speech_level: float | None = None,
               ) -> tuple[np.ndarray, list[RegionLevel]]:
    """Mask ``regions`` (sample ``[a, b)`` pairs) of mono ``samples``; see the module docstring.

    ``speech_level`` is the utterance's active RMS (computed when not given). Returns the masked
    copy (float32) and what each region measured.
    """
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim != 1:
        raise AudioError(f"masking needs mono audio, got shape {x.shape}")
    check_fade_ms(fade_ms)
    out = x.copy()
    n_fade = int(round(fade_ms * sample_rate / 1000.0))
    level = active_rms(x, sample_rate) if speech_level is None else float(speech_level)
    floor = level * db_to_gain(LEVEL_FLOOR_DB)
    stats = []
    for a, b in merge_regions(regions):
        if a < 0 or b > len(x):
            raise AudioError(f"masked region {a}..{b} lies outside the utterance (0..{len(x)} samples)")
        n = b - a
        nf = min(n_fade, n // 2)
        seg = x[a:b].astype(np.float64)
        speech_rms = float(np.sqrt(np.mean(seg * seg)))
        target = max(speech_rms, floor) if snr_db is None else level * db_to_gain(-float(snr_db))
        sig = make_signal(signal, n, sample_rate, rng)
        core = sig[nf:n - nf] if n - 2 * nf > 0 else sig
        core_rms = float(np.sqrt(np.mean(core * core))) if core.size else 0.0
        if core_rms > 0:
            sig *= target / core_rms
        env_mask = np.ones(n)
        env_speech = np.zeros(n)
        if nf:
            up, down = equal_power_ramp(nf, True), equal_power_ramp(nf, False)
            env_mask[:nf], env_mask[n - nf:] = up, down
            env_speech[:nf], env_speech[n - nf:] = down, up
        out[a:b] = (seg * env_speech + sig * env_mask).astype(np.float32)
        stats.append(RegionLevel(a, b, nf, speech_rms, 0.0 if signal == "silence" else target))
    return out, stats


def rms_db(x: np.ndarray) -> float | None:
    """RMS in dBFS, ``None`` for digital silence."""
    x = np.asarray(x, dtype=np.float64)
    r = float(np.sqrt(np.mean(x * x))) if x.size else 0.0
    return 20.0 * np.log10(r) if r > 0 else None
