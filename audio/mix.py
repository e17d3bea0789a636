"""Two-channel mixing, per-channel loudness, clip preparation and FLAC output.

::

    clip (TTS rate) --soxr VHQ--> output rate --trim silence--> placed on its channel
    channel 0 (user), channel 1 (assistant): each to -20 dBFS active RMS, peak <= -1 dBFS
    -> stereo FLAC (16-bit) + one mono FLAC per message (an exact excerpt of its channel)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.dsp import equal_power_ramp
from bargein.audio.io import PEAK_CEILING_DBFS, TARGET_RMS_DBFS, normalize_loudness, resample, write_audio
from bargein.audio.timeline import Placement, WordSpan
from bargein.audio.wordtimes import speech_bounds
from bargein.errors import AudioError

TRIM_FLOOR_DB = -50.0       # relative to the clip's loudest 5 ms frame
TAIL_PAD_MS = 20.0          # kept after the last audible frame (decay)
EDGE_FADE_MS = 2.0          # click-free clip edges


def prepare_speech(speech: Speech, sample_rate: int) -> tuple[np.ndarray, tuple[WordSpan, ...]]:
    """Resample ``speech`` to ``sample_rate``, trim leading/trailing silence, words in samples.

    The clip starts at the first audible frame, so a clip placed at ``t`` is heard from ``t``.
    """
    x = np.asarray(speech.samples, dtype=np.float32)
    if x.ndim != 1 or x.size == 0:
        raise AudioError(f"speech for {speech.text[:60]!r} must be non-empty mono, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise AudioError(f"speech for {speech.text[:60]!r} contains NaN or infinite samples")
    y = resample(x, speech.sample_rate, sample_rate)
    a, b = speech_bounds(y, sample_rate, TRIM_FLOOR_DB)
    if b <= a:
        raise AudioError(f"speech for {speech.text[:60]!r} is silent after resampling")
    b = min(len(y), b + int(round(TAIL_PAD_MS * sample_rate / 1000)))
    clip = np.array(y[a:b], dtype=np.float32)
    n_edge = min(len(clip) // 4, int(round(EDGE_FADE_MS * sample_rate / 1000)))
    if n_edge:
        clip[:n_edge] *= equal_power_ramp(n_edge, True)
        clip[len(clip) - n_edge:] *= equal_power_ramp(n_edge, False)
    n = len(clip)
    words = []
    for w in speech.words:
        s = min(max(int(round(w.start_s * sample_rate)) - a, 0), n)
        e = min(max(int(round(w.end_s * sample_rate)) - a, s), n)
        words.append(WordSpan(w.word, s, e, w.char_start))
    return clip, tuple(words)


def mix(placements: Sequence[Placement], n_samples: int, n_channels: int = 2) -> np.ndarray:
    """Sum placed clips into an ``(n_samples, n_channels)`` float32 array."""
    out = np.zeros((n_samples, n_channels), dtype=np.float32)
    for p in placements:
        if p.start < 0 or p.end > n_samples:
            raise AudioError(f"clip of message {p.clip.message_index} at {p.start}..{p.end} "
                             f"lies outside the timeline (0..{n_samples})")
        out[p.start:p.end, p.clip.channel] += p.clip.samples
    return out


def normalize_channels(audio: np.ndarray, sample_rate: int, *, target_dbfs: float = TARGET_RMS_DBFS,
                       peak_dbfs: float = PEAK_CEILING_DBFS) -> tuple[np.ndarray, list[float]]:
    """Each channel to ``target_dbfs`` active RMS with its peak at most ``peak_dbfs``."""
    out = np.empty_like(audio, dtype=np.float32)
    gains = []
    for c in range(audio.shape[1]):
        out[:, c], g = normalize_loudness(audio[:, c], sample_rate, target_dbfs=target_dbfs,
                                          peak_dbfs=peak_dbfs)
        gains.append(g)
    return out, gains


def write_stereo(path: str | os.PathLike, audio: np.ndarray, sample_rate: int) -> Path:
    """Stereo 16-bit FLAC, atomically (same samples -> same bytes)."""
    if audio.ndim != 2 or audio.shape[1] != 2:
        raise AudioError(f"write_stereo expects (n, 2) audio, got {audio.shape}")
    return write_audio(path, audio, sample_rate)


def write_clip(path: str | os.PathLike, audio: np.ndarray, channel: int, start: int, end: int,
               sample_rate: int) -> Path:
    """A mono FLAC excerpt ``[start, end)`` of one channel."""
    return write_audio(path, np.ascontiguousarray(audio[start:end, channel]), sample_rate)
