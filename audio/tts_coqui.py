"""Coqui TTS adapter (``TTS.api``, extra ``coqui``) for users who can load Coqui models.

    CoquiTTS(model_name="tts_models/en/vctk/vits").synthesize("Hello.", "p225")
    CoquiTTS(model_path="model.pth", config_path="config.json").synthesize("Hello.", "default")

Coqui needs torch and downloads models unless given local paths; neither is available in the
offline default install, so this engine is import-guarded. Word times come from ``aligner``.
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
from bargein.errors import BackendUnavailable, ConfigError, missing_extra

DEFAULT_VOICE = "default"


def import_coqui():
    """``TTS.api.TTS``, or BackendUnavailable saying why it cannot be imported."""
    try:
        from TTS.api import TTS as CoquiAPI
    except ImportError as e:
        if getattr(e, "name", None) in ("TTS", "TTS.api"):
            raise missing_extra("TTS", "coqui", "The Coqui TTS engine") from None
        raise BackendUnavailable(f"Coqui TTS is installed but does not import ({e}). It needs a torch "
                                 "and torchaudio pair that match; see REFERENCE.md.") from e
    except Exception as e:       # torch/torchaudio mismatches raise OSError/RuntimeError
        raise BackendUnavailable(f"Coqui TTS does not import here: {type(e).__name__}: {e}") from e
    return CoquiAPI


class CoquiTTS(AlignedWordTimes):
    """A Coqui model by name (``model_name``) or by local files (``model_path`` + ``config_path``)."""

    id = "coqui"

    def __init__(self, model_name: str | None = None, model_path: str | None = None,
                 config_path: str | None = None, language: str | None = None,
                 aligner: str = "whisper", aligner_options: dict[str, Any] | None = None):
        api = import_coqui()
        if not model_name and not model_path:
            raise ConfigError("coqui needs model_name (e.g. 'tts_models/en/vctk/vits') or "
                              "model_path + config_path")
        self.model_name, self.model_path, self.language = model_name, model_path, language
        self._tts = (api(model_name=model_name) if model_name
                     else api(model_path=model_path, config_path=config_path))
        syn = getattr(self._tts, "synthesizer", None)
        self.sample_rate = int(getattr(syn, "output_sample_rate", 22050) or 22050)
        self.aligner_name, self.aligner_options = aligner, dict(aligner_options or {})
        self._lock = threading.Lock()

    @cached_property
    def version(self) -> str:
        pv = dist_version("coqui-tts", "?")
        return f"coqui-tts-{pv}+{self.model_name or self.model_path}+{self.aligner_tag}"

    def voices(self) -> list[str]:
        speakers = getattr(self._tts, "speakers", None) or []
        return list(speakers) or [DEFAULT_VOICE]

    def synthesize(self, text: str, voice: str = DEFAULT_VOICE) -> Speech:
        check_text(text, "coqui")
        valid = self.voices()
        if voice not in valid:
            raise ConfigError(f"unknown coqui speaker {voice!r}; valid: {', '.join(valid[:40])}")
        kw: dict[str, Any] = {}
        if voice != DEFAULT_VOICE:
            kw["speaker"] = voice
        if self.language:
            kw["language"] = self.language
        with self._lock:
            wav = self._tts.tts(text=text, **kw)
        samples = np.asarray(wav, dtype=np.float32).reshape(-1)
        check_audio(samples, "coqui", text)
        words = self.aligner.align(samples, self.sample_rate, text)
        check_timings(words, len(samples) / self.sample_rate)
        return Speech(samples=samples, sample_rate=self.sample_rate, words=words, text=text,
                      voice_id=f"coqui:{voice}", timing_source=self.aligner.id)
