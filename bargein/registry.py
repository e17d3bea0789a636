"""Backends by name: entry points ``bargein.<kind>``, built-ins registered exactly like plugins.

A plugin package declares, in its ``pyproject.toml``::

    [project.entry-points."bargein.vad"]
    mine = "my_pkg.vad:MyVAD"                 # a class or factory: MyVAD(**options)

    [project.entry-points."bargein.voices"]
    my_voices = "my_pkg.voices:VOICES"         # a Voice, a list of them, or a function returning them

and every process, worker processes included, finds it by name::

    names("vad")                     # ['energy', 'mine', 'silero', 'webrtc']: nothing imported
    vad = get("vad", "mine")         # one instance per (kind, name, options) per process
    create("vad", "mine", hop_s=0.01)  # a new instance

Kinds: ``tts``, ``voices``, ``aligner``, ``vad``, ``llm``, ``predictor``. A backend whose optional
dependency is missing raises :class:`~bargein.errors.BackendUnavailable` naming what to install.

:func:`register` adds a backend (or :func:`set_options` engine options) in this process only, for
notebooks and tests; the runner hands these to its worker processes (:func:`snapshot` /
:func:`restore`), so they also work at any worker count as long as the factory is importable
(a module-level class or function).
"""

from __future__ import annotations

import sys
import threading
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from bargein.errors import BackendUnavailable, ConfigError
from bargein.seeding import canonical_json

KINDS = ("tts", "voices", "aligner", "vad", "llm", "predictor")

_LOCK = threading.RLock()
_RUNTIME: dict[str, dict[str, Any]] = {}            # kind -> name -> factory (register())
_DESCRIPTIONS: dict[tuple[str, str], str] = {}
_OPTIONS: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, name) -> options (set_options())
_EP_CACHE: dict[tuple[str, tuple[str, ...]], dict[str, EntryPoint]] = {}
_LOADED: dict[tuple[str, str, str], Any] = {}       # (kind, name, entry point value) -> object
_INSTANCES: dict[tuple[str, str], dict[str, Any]] = {}  # get(): (kind, name) -> options -> obj


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"unknown backend kind {kind!r}; kinds: {', '.join(KINDS)}")


def _entry_points(kind: str) -> dict[str, EntryPoint]:
    """``bargein.<kind>`` entry points of the installed distributions (re-read when sys.path changes)."""
    key = (kind, tuple(sys.path))
    with _LOCK:
        eps = _EP_CACHE.get(key)
    if eps is None:
        eps = {}
        for ep in entry_points(group=f"bargein.{kind}"):
            eps.setdefault(ep.name, ep)      # the first on sys.path wins, as for imports
        with _LOCK:
            _EP_CACHE[key] = eps
    return eps


def installed(kind: str) -> dict[str, str]:
    """Installed entry points of ``kind``: name -> ``module:attr`` (nothing is imported)."""
    _check_kind(kind)
    return {n: ep.value for n, ep in _entry_points(kind).items()}


def registered(kind: str) -> dict[str, Any]:
    """This process's :func:`register` entries of ``kind``: name -> factory."""
    with _LOCK:
        return dict(_RUNTIME.get(kind, {}))


def register(kind: str, name: str, factory: Any, description: str = "") -> None:
    """Add or replace a backend in this process (and the runner's workers); see the module doc."""
    _check_kind(kind)
    with _LOCK:
        _RUNTIME.setdefault(kind, {})[name] = factory
        if description:
            _DESCRIPTIONS[(kind, name)] = description
        _INSTANCES.pop((kind, name), None)


def unregister(kind: str, name: str) -> None:
    with _LOCK:
        _RUNTIME.get(kind, {}).pop(name, None)
        _DESCRIPTIONS.pop((kind, name), None)
        _INSTANCES.pop((kind, name), None)


def names(kind: str) -> list[str]:
    """Every backend name of ``kind``: installed entry points and this process's registrations."""
    _check_kind(kind)
    with _LOCK:
        runtime = set(_RUNTIME.get(kind, {}))
    return sorted(set(_entry_points(kind)) | runtime)


def load(kind: str, name: str) -> Any:
    """The factory (class, function or object) registered as ``name``; imported on first use."""
    _check_kind(kind)
    with _LOCK:
        if name in _RUNTIME.get(kind, {}):
            return _RUNTIME[kind][name]
    ep = _entry_points(kind).get(name)
    if ep is None:
        raise ConfigError(f"unknown {kind} backend {name!r}; valid: {', '.join(names(kind)) or '(none)'}. "
                          f"Fix: pick one of those, or install a plugin that declares an entry point "
                          f"in group 'bargein.{kind}'")
    key = (kind, name, ep.value)
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
    try:
        obj = ep.load()
    except ImportError as e:
        dist = getattr(ep, "dist", None)
        owner = f" (from {dist.name})" if dist is not None else ""
        raise BackendUnavailable(f"{kind} backend {name!r}{owner} cannot be imported: {e}. Fix: install "
                                 f"what it needs (for bargein's own backends: pip install 'bargein[offline]')") from e
    with _LOCK:
        _LOADED[key] = obj
    return obj


def describe(kind: str, name: str) -> str:
    """A one-line description: the registered one, else the factory's docstring's first line."""
    try:
        obj = load(kind, name)          # importing a module may register its description
    except BackendUnavailable as e:
        return f"not installed: {e}"
    with _LOCK:
        if (kind, name) in _DESCRIPTIONS:
            return _DESCRIPTIONS[(kind, name)]
    text = getattr(obj, "description", None)
    if not isinstance(text, str):
        text = (getattr(obj, "__doc__", None) or getattr(getattr(obj, "__self__", None), "__doc__", None)
                or "").strip()
    return " ".join(text.split("\n\n")[0].split())


def set_options(kind: str, name: str, **options: Any) -> None:
    """Options every :func:`get` of ``(kind, name)`` passes on, unless given there (e.g. ``base_url``)."""
    _check_kind(kind)
    with _LOCK:
        if options:
            _OPTIONS[(kind, name)] = dict(options)
        else:
            _OPTIONS.pop((kind, name), None)
        _INSTANCES.pop((kind, name), None)


def options(kind: str, name: str) -> dict[str, Any]:
    with _LOCK:
        return dict(_OPTIONS.get((kind, name), {}))


def create(kind: str, name: str, **kwargs: Any) -> Any:
    """A new instance of backend ``name`` built with ``kwargs``."""
    factory = load(kind, name)
    if not callable(factory):
        raise ConfigError(f"{kind} backend {name!r} is not callable ({type(factory).__name__})")
    return factory(**kwargs)


def get(kind: str, name: str, **kwargs: Any) -> Any:
    """The process's shared instance of ``name`` built with (:func:`options` + ``kwargs``)."""
    opts = {**options(kind, name), **kwargs}
    key = canonical_json(opts)
    with _LOCK:
        obj = _INSTANCES.get((kind, name), {}).get(key)
    if obj is None:
        obj = create(kind, name, **opts)
        with _LOCK:
            obj = _INSTANCES.setdefault((kind, name), {}).setdefault(key, obj)
    return obj


def snapshot() -> dict[str, Any]:
    """This process's registrations and options, for a worker process (picklable when every
    registered factory is a module-level object)."""
    with _LOCK:
        return {"runtime": {k: dict(v) for k, v in _RUNTIME.items()},
                "descriptions": dict(_DESCRIPTIONS), "options": {k: dict(v) for k, v in _OPTIONS.items()}}


def restore(state: dict[str, Any] | None) -> None:
    """Replace this process's registrations and options with a :func:`snapshot`."""
    with _LOCK:
        before = {(k, n): f for k, v in _RUNTIME.items() for n, f in v.items()}
        old_options = dict(_OPTIONS)
        _RUNTIME.clear()
        _DESCRIPTIONS.clear()
        _OPTIONS.clear()
        if state:
            for k, v in state["runtime"].items():
                _RUNTIME[k] = dict(v)
            _DESCRIPTIONS.update(state["descriptions"])
            _OPTIONS.update({k: dict(v) for k, v in state["options"].items()})
        after = {(k, n): f for k, v in _RUNTIME.items() for n, f in v.items()}
        changed = {kn for kn in before.keys() | after.keys() if before.get(kn) is not after.get(kn)}
        changed |= {kn for kn in old_options.keys() | _OPTIONS.keys() if old_options.get(kn) != _OPTIONS.get(kn)}
        for kn in changed:                  # instances of untouched backends stay shared
            _INSTANCES.pop(kn, None)

