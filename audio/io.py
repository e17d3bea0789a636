"""Reading, writing, resampling and loudness: the audio plumbing every stage shares."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import soundfile as sf

from bargein.errors import AudioError
from bargein.store import atomic_write_bytes

TARGET_RMS_DBFS = -20.0
PEAK_CEILING_DBFS = -1.0


def read_audio(path: str | os.PathLike | bytes, *, mono: bool = False,
               sample_rate: int | None = None) -> tuple[np.ndarray, int]:
    """Read audio as float32 (n,) or (n, channels); optionally downmix and resample.

    A missing, corrupt or empty file raises :class:`AudioError` naming the file.
    """
    name = "<bytes>" if isinstance(path, (bytes, bytearray)) else str(path)
    try:
        src = io.BytesIO(path) if isinstance(path, (bytes, bytearray)) else path
        data, sr = sf.read(src, dtype="float32", always_2d=False)
    except Exception as e:  # soundfile raises several types for bad files
        raise AudioError(f"cannot read audio {name}: {e}. Fix: check that the file is a "
                         "valid WAV/FLAC/OGG and not truncated.") from e
    if data.size == 0:
        raise AudioError(f"audio {name} is empty")
    if not np.all(np.isfinite(data)):
        raise AudioError(f"audio {name} contains NaN or infinite samples")
    if mono and data.ndim == 2:
        data = data.mean(axis=1).astype(np.float32)
    if sample_rate is not None and sr != sample_rate:
        data, sr = resample(data, sr, sample_rate), sample_rate
    return data, sr


def encode_audio(samples: np.ndarray, sample_rate: int, fmt: str = "FLAC",
                 subtype: str | None = None) -> bytes:
    """Encode to bytes (FLAC 16-bit by default): deterministic for the same samples."""
    buf = io.BytesIO()
    clipped = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    sf.write(buf, clipped, sample_rate, format=fmt,
             subtype=subtype or ("PCM_16" if fmt.upper() in ("FLAC", "WAV") else None))
    return buf.getvalue()


def write_audio(path: str | os.PathLike, samples: np.ndarray, sample_rate: int) -> Path:
    """Write atomically; the format follows the suffix (.flac or .wav)."""
    path = Path(path)
    fmt = {".flac": "FLAC", ".wav": "WAV"}.get(path.suffix.lower())
    if fmt is None:
        raise AudioError(f"unsupported audio suffix {path.suffix!r} for {path}; use .flac or .wav")
    atomic_write_bytes(path, encode_audio(samples, sample_rate, fmt))
    return path


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """High-quality resampling (soxr VHQ); works on (n,) and (n, channels)."""
    if from_rate == to_rate:
        return np.asarray(samples, dtype=np.float32)
    import soxr

    return soxr.resample(np.asarray(samples, dtype=np.float32), from_rate, to_rate,
                         quality="VHQ").astype(np.float32)


def db_to_gain(db: float) -> float:
    return float(10.0 ** (db / 20.0))


def rms(samples: np.ndarray) -> float:
    x = np.asarray(samples, dtype=np.float64)
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def rms_dbfs(samples: np.ndarray) -> float:
    r = rms(samples)
    return 20.0 * np.log10(r) if r > 0 else -np.inf


def active_rms(samples: np.ndarray, sample_rate: int, frame_ms: float = 20.0,
               floor_db: float = -50.0) -> float:
    """RMS over frames louder than ``floor_db`` (speech level, ignoring silence)."""
    x = np.asarray(samples, dtype=np.float64)
    hop = max(1, int(sample_rate * frame_ms / 1000))
    n = len(x) // hop
    if n == 0:
        return rms(x)
    frames = x[: n * hop].reshape(n, hop)
    e = np.sqrt(np.mean(frames * frames, axis=1))
    peak = e.max() if e.size else 0.0
    if peak <= 0:
        return 0.0
    keep = e > peak * db_to_gain(floor_db)
    return float(np.sqrt(np.mean(frames[keep] ** 2)))


def normalize_loudness(samples: np.ndarray, sample_rate: int, *,
                       target_dbfs: float = TARGET_RMS_DBFS,
                       peak_dbfs: float = PEAK_CEILING_DBFS) -> tuple[np.ndarray, float]:
    """Scale speech to ``target_dbfs`` active RMS, then lower it if the peak exceeds the ceiling.

    Returns the scaled samples and the gain applied. Silence-only input is returned unchanged.
    """
    x = np.asarray(samples, dtype=np.float32)
    level = active_rms(x, sample_rate)
    if level <= 0:
        return x.copy(), 1.0
    gain = db_to_gain(target_dbfs) / level
    peak = float(np.max(np.abs(x))) * gain
    ceiling = db_to_gain(peak_dbfs)
    if peak > ceiling:
        gain *= ceiling / peak
    return (x * gain).astype(np.float32), float(gain)
