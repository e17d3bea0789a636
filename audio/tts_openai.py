"""OpenAI speech API (``POST /v1/audio/speech``) through the official SDK; any compatible server.

    OpenAITTS(model="gpt-4o-mini-tts", base_url="http://127.0.0.1:8000/v1").synthesize("Hi.", "alloy")

Word times come from forced alignment (Whisper by default). The API is not deterministic, so the
rendering stage's cache (keyed by ``id``/``version``, text and voice) is what makes re-runs
byte-identical.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any
from urllib.parse import urlparse

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.io import read_audio, resample
from bargein.audio.wordtimes import (
    AlignedWordTimes, check_audio, check_text, check_timings, dist_version,
)
from bargein.errors import AudioError, ConfigError, missing_extra

PCM_RATE = 24000                  # OpenAI's raw pcm: 24 kHz, 16-bit little-endian, mono
OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage",
                 "shimmer", "verse", "marin", "cedar")
FORMATS = ("wav", "pcm", "flac")


class OpenAITTS(AlignedWordTimes):
    """``/v1/audio/speech`` with ``model`` and ``voice``; word times by ``aligner``.

    Audio is resampled to ``sample_rate`` (24 kHz, what OpenAI sends) whatever a compatible
    server returns, so the voice registry's rate holds.
    """

    id = "openai"

    def __init__(self, model: str = "gpt-4o-mini-tts", base_url: str | None = None,
                 api_key: str | None = None, response_format: str = "wav", speed: float = 1.0,
                 instructions: str | None = None, voices: list[str] | tuple[str, ...] = (),
                 timeout_s: float = 120.0, max_retries: int = 2, aligner: str = "whisper",
                 aligner_options: dict[str, Any] | None = None, sample_rate: int = PCM_RATE):
        try:
            import openai
        except ImportError:
            raise missing_extra("openai", "openai", "The OpenAI TTS engine") from None
        if response_format not in FORMATS:
            raise ConfigError(f"openai tts response_format={response_format!r}; use one of {', '.join(FORMATS)} "
                              "(lossless formats only: the audio is aligned and mixed)")
        if not 0.25 <= float(speed) <= 4.0:
            raise ConfigError(f"openai tts speed={speed} is out of range; use 0.25..4.0")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url and urlparse(base_url).hostname not in ("api.openai.com",):
                key = "no-key"          # local OpenAI-compatible servers usually need none
            else:
                raise ConfigError("the openai TTS engine needs an API key. Fix: export OPENAI_API_KEY=... "
                                  "or pass api_key / base_url for a compatible server")
        self.model, self.base_url, self.response_format = model, base_url, response_format
        self.sample_rate = int(sample_rate)
        self.speed, self.instructions = float(speed), instructions
        self._extra_voices = tuple(voices)
        self.aligner_name, self.aligner_options = aligner, dict(aligner_options or {})
        self._openai = openai
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout_s,
                                     max_retries=int(max_retries))

    @cached_property
    def version(self) -> str:
        pv = dist_version("openai", "?")
        host = urlparse(self.base_url).netloc if self.base_url else "api.openai.com"
        extra = f"+instr{len(self.instructions)}" if self.instructions else ""
        return (f"openai-sdk-{pv}+{host}+{self.model}+{self.response_format}+speed{self.speed}{extra}"
                f"+sr{self.sample_rate}"
                f"+{self.aligner_tag}")

    def voices(self) -> list[str]:
        from bargein.audio.voices import list_voices

        return sorted(set(OPENAI_VOICES) | set(self._extra_voices) | {v.name for v in list_voices("openai")})

    def fetch(self, text: str, voice: str) -> tuple[np.ndarray, int]:
        """The raw audio the server returns for ``text`` (float32 mono, sample rate)."""
        if voice not in self.voices():
            raise ConfigError(f"unknown openai voice {voice!r}; valid: {', '.join(self.voices())}. "
                              "Fix: pass voices=[...] to the engine or register_voice() a custom one")
        kw: dict[str, Any] = {"model": self.model, "voice": voice, "input": text,
                              "response_format": self.response_format}
        if self.speed != 1.0:
            kw["speed"] = self.speed
        if self.instructions:
            kw["instructions"] = self.instructions
        try:
            resp = self._client.audio.speech.create(**kw)
        except self._openai.APIStatusError as e:
            raise AudioError(f"openai speech API {e.status_code} for voice {voice!r}, model {self.model!r}: "
                             f"{e.message}", evidence={"status": e.status_code}) from e
        except self._openai.APIError as e:
            raise AudioError(f"openai speech API failed ({type(e).__name__}: {e}); base_url "
                             f"{self.base_url or 'https://api.openai.com/v1'}") from e
        data = resp.read() if hasattr(resp, "read") else resp.content
        if self.response_format == "pcm":
            if len(data) < 2:
                raise AudioError("openai speech API returned no audio")
            pcm = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2")
            return (pcm.astype(np.float32) / 32768.0), PCM_RATE
        samples, sr = read_audio(data, mono=True)
        return samples.astype(np.float32), int(sr)

    def synthesize(self, text: str, voice: str = "alloy") -> Speech:
        check_text(text, "openai")
        samples, sr = self.fetch(text, voice)
        check_audio(samples, "openai", text)
        if sr != self.sample_rate:
            samples, sr = resample(samples, sr, self.sample_rate), self.sample_rate
        words = self.aligner.align(samples, sr, text)
        check_timings(words, len(samples) / sr)
        return Speech(samples=samples, sample_rate=sr, words=words, text=text,
                      voice_id=f"openai:{voice}", timing_source=self.aligner.id,
                      extra={"model": self.model})
