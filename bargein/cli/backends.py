"""``bargein backends list``."""

from __future__ import annotations

import click

from bargein import registry

@click.group()
def backends() -> None:
    """Registered backends."""


@backends.command("list")
def list_backends() -> None:
    """Every installed backend by kind (entry points ``bargein.<kind>``), and whether it can run here."""
    for kind in ("tts", "aligner", "vad", "llm", "predictor"):
        for name in registry.names(kind):
            click.echo(f"{kind:10s} {name:16s} {registry.describe(kind, name)}")
