"""TTS facade: every engine is an entry point in group ``bargein.tts``, one instance per process.

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

from typing import Any

from bargein import registry
from bargein.audio.base import TTS, Speech

ENGINES = ("espeak", "piper", "hibari", "openai", "coqui")


def get_engine(name: str, **options: Any) -> TTS:
    """The engine ``name`` built with ``options``: one shared instance per process
    (:func:`bargein.registry.get`; engines are entry points in group ``bargein.tts``)."""
    return registry.get("tts", name, **options)


def engine_key(tts: TTS) -> str:
    """``id@version``: what a cache key needs to know about an engine."""
    return f"{tts.id}@{tts.version}"


def synthesize(text: str, voice_id: str) -> Speech:
    """Synthesise ``text`` with a registry voice id such as ``piper:joe`` or ``espeak:en-gb+f3``."""
    from bargein.audio.voices import get_tts

    tts, name = get_tts(voice_id)
    return tts.synthesize(text, name)
