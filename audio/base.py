"""Audio backend protocols: TTS, forced aligner, VAD. One verb each, plus an id.

Samples are float32 numpy arrays in [-1, 1]; mono is shape (n,), multi-channel (n, channels).
Times are seconds (``_s``) or milliseconds (``_ms``); sample counts end in ``_samples``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from bargein.records.audio import WordTiming


@dataclass(frozen=True)
class Speech:
    """Synthesised (or loaded) mono speech with word timings relative to the clip start."""

    samples: np.ndarray                 # float32, shape (n,)
    sample_rate: int
    words: tuple[WordTiming, ...] = ()  # char_start set when known
    text: str = ""
    voice_id: str = ""
    timing_source: str = "none"         # "synthesizer", "whisper", "mfa", "none"
    extra: dict = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return len(self.samples) / float(self.sample_rate)


@dataclass(frozen=True)
class SpeechSegment:
    """A VAD speech region on one channel, in seconds."""

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@runtime_checkable
class TTS(Protocol):
    id: str                             # "espeak", "piper", "hibari", "openai", ...
    version: str

    def synthesize(self, text: str, voice: str) -> Speech: ...

    def voices(self) -> list[str]: ...


@runtime_checkable
class Aligner(Protocol):
    id: str
    version: str

    def align(self, samples: np.ndarray, sample_rate: int, transcript: str) -> tuple[WordTiming, ...]: ...


@runtime_checkable
class VAD(Protocol):
    id: str
    version: str

    def segments(self, samples: np.ndarray, sample_rate: int) -> list[SpeechSegment]: ...
