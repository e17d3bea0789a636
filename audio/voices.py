"""Voices by id ``engine:name``, and per-conversation voice assignment.

    list_voices("espeak")          # [Voice(id="espeak:en-us", engine="espeak", sex="male", ...), ...]
    get_voice("piper:joe")         # Voice(engine="piper", name="joe", sex="male", accent="en-us")
    assign_voices("conv-1", seed=7, pool={"user": ["piper:joe", "espeak:en-gb+f3"]})
    tts, name = get_tts("hibari:heart")    # the process's engine and the engine's voice name

Voices come from entry points in group ``bargein.voices`` (the built-ins are
``builtin = "bargein.audio.voices:builtin_voices"``; a plugin package declares its own the same
way: a :class:`Voice`, a list of them, or a function returning them), so every process, worker
processes included, sees the same voices. ``register_voice`` adds a voice in this process and
``set_engine_options`` configures an engine (``base_url``, ``model``); the runner hands both to its
worker processes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bargein import registry
from bargein.errors import BargeinError, ConfigError
from bargein.records.audio import Voice
from bargein.seeding import item_rng

log = logging.getLogger("bargein.audio.voices")

DEFAULT_ASSISTANT = "hibari:heart"
DEFAULT_USER = "piper:joe"
ROLES = ("assistant", "user")

_ESPEAK_ACCENTS = ("en-us", "en-gb", "en-029", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-gbcwmd",
                   "en-gb-x-rp", "en-us-nyc")
_ESPEAK_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5")
# OpenAI's published voices (sex is how they are commonly described; "unknown" when unclear).
_OPENAI_VOICES = {"alloy": "unknown", "ash": "male", "ballad": "male", "coral": "female",
                  "echo": "male", "fable": "unknown", "nova": "female", "onyx": "male",
                  "sage": "female", "shimmer": "female", "verse": "male", "marin": "female",
                  "cedar": "male"}


def builtin_voices() -> list[Voice]:
    """bargein's own voices (the ``builtin`` entry point of group ``bargein.voices``)."""
    out: list[Voice] = []

    def add(engine: str, name: str, sex: str, accent: str, sr: int) -> None:
        out.append(Voice(id=f"{engine}:{name}", engine=engine, name=name, sex=sex, accent=accent,
                         sample_rate=sr))

    add("piper", "joe", "male", "en-us", 22050)
    add("hibari", "heart", "female", "en-us", 24000)
    for acc in _ESPEAK_ACCENTS:
        add("espeak", acc, "male", acc, 22050)
        for var in _ESPEAK_VARIANTS:
            add("espeak", f"{acc}+{var}", "female" if var.startswith("f") else "male",
                acc, 22050)
    for name, sex in _OPENAI_VOICES.items():
        add("openai", name, sex, "en-us", 24000)
    return out


def _as_voices(obj: Any, source: str) -> list[Voice]:
    if callable(obj) and not isinstance(obj, Voice):
        obj = obj()
    if isinstance(obj, Voice):
        obj = [obj]
    obj = list(obj) if isinstance(obj, Iterable) else None
    if obj is None or not all(isinstance(v, Voice) for v in obj):
        raise ConfigError(f"voices entry point {source!r} must give a Voice, a list of Voice records "
                          f"or a function returning them (bargein.records.Voice)")
    return [v if v.id == f"{v.engine}:{v.name}" else v.with_(id=f"{v.engine}:{v.name}") for v in obj]


_EP_VOICES: dict[tuple, dict[str, Voice]] = {}      # cache of the installed voices (per sys.path)


def _voices() -> dict[str, Voice]:
    """Every voice by id: installed entry points, then this process's registrations."""
    installed = registry.installed("voices")
    runtime = registry.registered("voices")
    key = (tuple(sorted(installed.items())), tuple(sorted(set(installed) & set(runtime))))
    base = _EP_VOICES.get(key)
    if base is None:
        base = {}
        for name in sorted(set(installed) - set(runtime)):
            try:
                obj = registry.load("voices", name)
            except BargeinError as e:
                log.warning("voices entry point %r skipped: %s", name, e)
                continue
            for v in _as_voices(obj, name):
                base.setdefault(v.id, v)
        _EP_VOICES[key] = base
    out = dict(base)
    for name, obj in sorted(runtime.items()):
        for v in _as_voices(obj, name):
            out[v.id] = v
    return out


def register_voice(voice: Voice) -> Voice:
    """Add (or replace) a voice in this process and the runner's workers; its id becomes
    ``engine:name``. A plugin package declares a ``bargein.voices`` entry point instead."""
    vid = f"{voice.engine}:{voice.name}"
    v = voice if voice.id == vid else voice.with_(id=vid)
    registry.register("voices", vid, v)
    return v


def set_engine_options(engine: str, **options: Any) -> None:
    """Options every ``get_tts`` for ``engine`` passes to the engine (e.g. openai ``base_url``);
    no options resets them."""
    registry.set_options("tts", engine, **options)


def engine_options(engine: str) -> dict[str, Any]:
    return registry.options("tts", engine)


def list_voices(engine: str | None = None) -> list[Voice]:
    """Known voices, sorted by id; only ``engine``'s when given."""
    vs = _voices().values()
    return sorted((v for v in vs if engine is None or v.engine == engine), key=lambda v: v.id)


def _suggest(voice_id: str) -> str:
    engine = voice_id.partition(":")[0]
    same = [v.id for v in list_voices(engine)] if engine else []
    ids = same or sorted({f"{v.engine}:{v.name}" for v in list_voices() if "+" not in v.name})
    shown = ", ".join(ids[:40]) + (f", ... ({len(ids)} in all)" if len(ids) > 40 else "")
    return f"Valid voices: {shown}. Add your own with bargein.audio.voices.register_voice."


def get_voice(voice_id: str) -> Voice:
    """The voice with id ``engine:name``; an unknown id raises ConfigError listing valid ones."""
    if not isinstance(voice_id, str) or ":" not in voice_id:
        raise ConfigError(f"voice id {voice_id!r} must look like 'engine:name' (e.g. 'piper:joe'). "
                          + _suggest(""))
    engine, _, name = voice_id.partition(":")
    v = _voices().get(f"{engine}:{name}")
    if v is None and engine == "espeak":
        v = _espeak_dynamic(name)
    if v is None:
        raise ConfigError(f"unknown voice {voice_id!r}. " + _suggest(voice_id))
    return v


def _espeak_dynamic(name: str) -> Voice | None:
    """espeak accepts aliases and any variant file it ships (``en-sc+klatt``)."""
    try:
        from bargein.audio.tts_espeak import EspeakTTS
        tts = EspeakTTS()
        canon = tts.resolve(name)
        return Voice(id=f"espeak:{canon}", engine="espeak", name=canon, sex=tts.sex(canon),
                     accent=canon.partition("+")[0], sample_rate=tts.sample_rate)
    except ConfigError:
        return None


def get_tts(voice_id: str) -> tuple[Any, str]:
    """``(engine, voice_name)`` for a voice id; one engine per process (``registry.get``)."""
    v = get_voice(voice_id)
    return registry.get("tts", v.engine), v.name


def assign_voices(conversation_id: str, seed: int, *, assistant: str = DEFAULT_ASSISTANT,
                  user: str = DEFAULT_USER,
                  pool: Mapping[str, Sequence[str]] | Sequence[str] | None = None) -> dict[str, str]:
    """Voice id per role for one conversation, seeded by (seed, conversation id).

    Without ``pool`` every conversation gets ``assistant`` / ``user``. ``pool`` maps a role to the
    voice ids to sample from (``{"user": [...]}``); a plain list is a pool shared by both roles,
    in which case the two roles get different voices when the pool has more than one.
    """
    chosen = {"assistant": assistant, "user": user}
    if pool:
        if isinstance(pool, Mapping):
            bad = sorted(set(pool) - set(ROLES))
            if bad:
                raise ConfigError(f"voices.pool has unknown role(s) {bad}; roles are {list(ROLES)}")
            pools = {r: list(pool[r]) for r in pool}
        elif isinstance(pool, str):
            raise ConfigError(f"voices.pool must be a list of voice ids or a role mapping, not {pool!r}")
        else:
            pools = {r: list(pool) for r in ROLES}
        for role, ids in pools.items():
            if not ids:
                raise ConfigError(f"voices.pool.{role} is empty; give at least one voice id")
            for vid in ids:
                get_voice(vid)
        rng = item_rng(seed, "assign_voices", conversation_id)
        for role in ROLES:                      # assistant first, then a user voice that differs
            if role in pools:
                ids = sorted(set(pools[role]))
                if role == "user":
                    ids = [i for i in ids if i != chosen["assistant"]] or ids
                chosen[role] = rng.choice(ids)
    for role, vid in chosen.items():
        try:
            get_voice(vid)
        except ConfigError as e:
            raise ConfigError(f"voices.{role}: {e}") from None
    return chosen
