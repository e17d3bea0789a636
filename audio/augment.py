"""Augmentation recorded as data: background noise at an SNR and an 8 kHz mu-law telephone line.

Every parameter lives in an :class:`~bargein.records.audio.Augmentation` record, so the same
record on the same clean audio gives the same samples::

    clean channel --+ noise (white | pink | babble) scaled to snr_db against the channel's
                    |   active speech RMS, independent noise per channel
                    +--> [telephony: 300-3400 Hz band, 8 kHz, G.711 mu-law encode/decode]
                    +--> peak <= -1 dBFS (one gain per channel: the SNR is kept)

Babble is a sum of ``babble_talkers`` other synthesized voices reading neutral sentences.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import soundfile as sf

from bargein.audio.io import PEAK_CEILING_DBFS, active_rms, db_to_gain, resample, rms
from bargein.errors import AudioError, ConfigError
from bargein.records.audio import Augmentation
from bargein.seeding import stable_int

NOISE_KINDS = ("none", "white", "pink", "babble")
TELEPHONE_RATE = 8000
TELEPHONE_BAND_HZ = (300.0, 3400.0)
BABBLE_SENTENCES: tuple[str, ...] = (
    "I was thinking we could meet at the station a bit later than usual.",
    "The weather has been strange all week, warm in the morning and cold at night.",
    "She said the package would arrive on Tuesday, but nothing came.",
    "We should probably book the tickets before the prices go up again.",
    "He keeps telling me the new office is much closer to the river.",
    "Could you pass me the menu? I think I want something different today.",
    "The meeting ran long, so I missed the first half of the game.",
    "They painted the kitchen green and now everyone wants to eat there.",
)


def white_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n).astype(np.float32)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """1/f power spectrum: white noise shaped by 1/sqrt(f) in the frequency domain."""
    if n <= 1:
        return np.zeros(n, np.float32)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spec.size, dtype=np.float64)
    f[0] = 1.0
    spec /= np.sqrt(f)
    spec[0] = 0.0
    x = np.fft.irfft(spec, n)
    return (x / (rms(x) or 1.0)).astype(np.float32)


def babble_noise(n: int, sources: Sequence[np.ndarray], rng: np.random.Generator,
                 talkers: int = 4, sample_rate: int = 16000) -> np.ndarray:
    """Sum of ``talkers`` streams, each random source clips back to back from a random offset."""
    srcs = [np.asarray(s, dtype=np.float32) for s in sources if len(s)]
    if not srcs:
        raise AudioError("babble noise needs at least one synthesized source clip")
    out = np.zeros(n, np.float32)
    for _ in range(max(1, talkers)):
        parts, total = [], 0
        while total < n + 1:
            s = srcs[int(rng.integers(len(srcs)))]
            s = s / (active_rms(s, sample_rate) or 1.0)               # each sentence at the same level
            parts.append(s)
            total += len(s)
        stream = np.concatenate(parts)
        off = int(rng.integers(0, max(1, len(stream) - n)))
        out += stream[off:off + n]
    return out


def _bandpass(x: np.ndarray, sample_rate: int, band: tuple[float, float]) -> np.ndarray:
    from scipy.signal import butter, sosfiltfilt

    hi = min(band[1], 0.45 * sample_rate)
    sos = butter(4, [band[0], hi], btype="bandpass", fs=sample_rate, output="sos")
    return sosfiltfilt(sos, x).astype(np.float32)


def telephone(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """Telephone band, 8 kHz, G.711 mu-law (soundfile WAV ULAW) round trip, back to the rate."""
    y = resample(_bandpass(np.asarray(x, np.float32), sample_rate, TELEPHONE_BAND_HZ),
                 sample_rate, TELEPHONE_RATE)
    buf = io.BytesIO()
    sf.write(buf, np.clip(y, -1.0, 1.0), TELEPHONE_RATE, format="WAV", subtype="ULAW")
    buf.seek(0)
    z, _ = sf.read(buf, dtype="float32")
    out = resample(z, TELEPHONE_RATE, sample_rate)
    if len(out) < len(x):
        out = np.pad(out, (0, len(x) - len(out)))
    return out[: len(x)].astype(np.float32)


def make_augmentation(noise: str = "none", snr_db: float | None = 20.0, telephony: bool = False,
                      *, seed: int = 0, babble_voices: Sequence[str] = ()) -> Augmentation:
    """A validated Augmentation record (``snr_db`` is dropped when there is no noise)."""
    if noise not in NOISE_KINDS:
        raise ConfigError(f"noise={noise!r} is not one of {', '.join(NOISE_KINDS)}")
    if noise != "none":
        if snr_db is None or not np.isfinite(snr_db) or not -10.0 <= float(snr_db) <= 60.0:
            raise ConfigError(f"snr_db={snr_db!r} must be a number in -10..60 dB (FD-Bench used 20)")
    return Augmentation(noise=noise, snr_db=float(snr_db) if noise != "none" else None,
                        telephony=bool(telephony), seed=int(seed),
                        babble_voices=tuple(babble_voices) if noise == "babble" else ())


def augment(audio: np.ndarray, sample_rate: int, aug: Augmentation, *,
            babble_sources: Sequence[np.ndarray] = (), babble_talkers: int = 4) -> np.ndarray:
    """Apply ``aug`` to ``(n, channels)`` clean audio; returns a new array (the input is kept)."""
    x = np.array(audio, dtype=np.float32, copy=True)
    squeeze = x.ndim == 1
    if squeeze:
        x = x[:, None]
    for c in range(x.shape[1]):
        y = x[:, c]
        if aug.noise != "none":
            rng = np.random.default_rng(stable_int("augment", aug.seed, c))
            n = len(y)
            if aug.noise == "white":
                noise = white_noise(n, rng)
            elif aug.noise == "pink":
                noise = pink_noise(n, rng)
            else:
                noise = babble_noise(n, babble_sources, rng, babble_talkers, sample_rate)
            level = active_rms(y, sample_rate)
            if level > 0:
                y = y + noise * (level / db_to_gain(aug.snr_db) / (rms(noise) or 1.0))
        if aug.telephony:
            y = telephone(y, sample_rate)
        peak = float(np.max(np.abs(y))) if y.size else 0.0
        ceiling = db_to_gain(PEAK_CEILING_DBFS)
        if peak > ceiling:
            y = y * (ceiling / peak)
        x[:, c] = y
    return x[:, 0] if squeeze else x


def measured_snr_db(clean: np.ndarray, noisy: np.ndarray, sample_rate: int) -> float:
    """SNR of ``noisy`` against ``clean`` (same gain assumed): speech active RMS / residual RMS."""
    scale = float(np.dot(noisy, clean) / (np.dot(clean, clean) or 1.0))
    resid = noisy - scale * clean
    return 20.0 * np.log10((active_rms(scale * clean, sample_rate) or 1e-12) / (rms(resid) or 1e-12))
