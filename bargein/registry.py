"""Backends register by name, built-ins exactly like plugins (entry points ``bargein.<kind>``).

    register("tts", "espeak", EspeakTTS)
    tts = create("tts", "espeak")

Kinds: ``tts``, ``aligner``, ``vad``, ``llm``, ``predictor``. A factory that needs a missing
optional dependency raises :class:`~bargein.errors.BackendUnavailable` naming the extra.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from bargein.errors import ConfigError

_REGISTRY: dict[str, dict[str, Callable[..., Any]]] = {}
_DESCRIPTIONS: dict[tuple[str, str], str] = {}
_LOADED_EP: set[str] = set()


def register(kind: str, name: str, factory: Callable[..., Any], description: str = "") -> None:
    _REGISTRY.setdefault(kind, {})[name] = factory
    if description:
        _DESCRIPTIONS[(kind, name)] = description


def _load_entry_points(kind: str) -> None:
    if kind in _LOADED_EP:
        return
    _LOADED_EP.add(kind)
    for ep in entry_points(group=f"bargein.{kind}"):
        if ep.name not in _REGISTRY.get(kind, {}):
            register(kind, ep.name, ep.load())


def names(kind: str) -> list[str]:
    _load_entry_points(kind)
    return sorted(_REGISTRY.get(kind, {}))


def describe(kind: str, name: str) -> str:
    return _DESCRIPTIONS.get((kind, name), "")


def create(kind: str, name: str, **kwargs: Any) -> Any:
    _load_entry_points(kind)
    try:
        factory = _REGISTRY[kind][name]
    except KeyError:
        raise ConfigError(f"unknown {kind} backend {name!r}; valid: {', '.join(names(kind)) or '(none)'}") from None
    return factory(**kwargs)
