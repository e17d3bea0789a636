"""hibari-tts with its bundled ``heart`` voice (24 kHz); word times by Whisper forced alignment.

Other hibari voices download from the Hub on first use, so offline only voices already on disk
(bundled, or in hibari's cache) are offered; asking for another raises ConfigError saying why.
The model's noise is seeded from the text, so the same text gives the same samples.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.wordtimes import (
    AlignedWordTimes, check_audio, check_text, check_timings, dist_version,
)
from bargein.errors import BackendUnavailable, ConfigError
from bargein.seeding import stable_int


def available_voices() -> list[str]:
    """hibari voices usable without a download: bundled, or already in hibari's cache dir."""
    try:
        from hibari.voices import VOICES, voice_path
    except ImportError:
        return []
    out = []
    for name in VOICES:
        try:
            voice_path(name, download_missing=False)
            out.append(name)
        except (FileNotFoundError, ValueError):
            pass
    return out


class HibariTTS(AlignedWordTimes):
    """hibari ``heart`` (female, American English), timed by an aligner (``whisper`` by default)."""

    id = "hibari"

    def __init__(self, threads: int = 1, speed: float = 1.0, aligner: str = "whisper",
                 aligner_options: dict[str, Any] | None = None):
        try:
            import hibari
        except ImportError:
            raise BackendUnavailable("The hibari TTS engine needs the Python module 'hibari'. "
                                     "Fix: pip install hibari-tts (a core dependency of bargein)") from None
        if not 0.5 <= float(speed) <= 2.0:
            raise ConfigError(f"hibari speed={speed} is out of range; use 0.5..2.0 (default 1.0)")
        self._hibari = hibari
        self.sample_rate = int(hibari.SAMPLE_RATE)
        self.threads, self.speed = int(threads), float(speed)
        self.aligner_name, self.aligner_options = aligner, dict(aligner_options or {})
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()

    def voices(self) -> list[str]:
        return available_voices()

    @cached_property
    def version(self) -> str:
        pv = dist_version("hibari-tts", self._hibari.__version__)
        from hibari.voices import VOICES

        shas = ",".join(VOICES[v]["sha256"][:12] for v in sorted(self.voices()))
        return f"hibari-tts-{pv}+{shas}+speed{self.speed}+{self.aligner_tag}"

    def _model(self, voice: str):
        valid = self.voices()
        if voice not in valid:
            from hibari.voices import VOICES

            why = (" It is a hibari voice but not on this machine (hibari downloads it from the Hub; "
                   "offline runs cannot)." if voice in VOICES else "")
            raise ConfigError(f"unknown hibari voice {voice!r}.{why} Valid here: {', '.join(valid)}")
        with self._lock:
            if voice not in self._models:
                self._models[voice] = self._hibari.Hibari(voice=voice, threads=self.threads)
            return self._models[voice]

    def synthesize(self, text: str, voice: str = "heart") -> Speech:
        model = self._model(voice)
        check_text(text, "hibari")
        seed = stable_int("hibari", voice, self.speed, text)
        with self._lock:
            samples = np.asarray(model(text, speed=self.speed, seed=seed), dtype=np.float32)
        check_audio(samples, "hibari", text)
        words = self.aligner.align(samples, self.sample_rate, text)
        check_timings(words, len(samples) / self.sample_rate)
        return Speech(samples=samples, sample_rate=self.sample_rate, words=words, text=text,
                      voice_id=f"hibari:{voice}", timing_source=self.aligner.id,
                      extra={"seed": seed})

