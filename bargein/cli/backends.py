"""``bargein backends list``."""

from __future__ import annotations

import importlib

import click

from bargein import registry

# importing these modules registers their built-in backends
_BUILTIN_MODULES = ("bargein.audio.tts", "bargein.audio.align", "bargein.audio.vad", "bargein.llm",
                    "bargein.scorers.predictors")


@click.group()
def backends() -> None:
    """Registered backends."""


@backends.command("list")
def list_backends() -> None:
    """Every registered backend by kind, and whether it can run here."""
    for mod in _BUILTIN_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    for kind in ("tts", "aligner", "vad", "llm", "predictor"):
        for name in registry.names(kind):
            click.echo(f"{kind:10s} {name:16s} {registry.describe(kind, name)}")
