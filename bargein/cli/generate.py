"""``bargein generate scenarios|conversations``."""

from __future__ import annotations

import click

from bargein.cliutil import LazyGroup

GENERATE_COMMANDS = {
    "scenarios": ("bargein.generators.scenarios_cli:scenarios",
                  "Sample (domain, goal, intent) scenarios with KBs and system prompts."),
    "conversations": ("bargein.generators.conversations_cli:conversations",
                      "Simulate, verify and export conversations with interruptions."),
}


@click.group(cls=LazyGroup, lazy=GENERATE_COMMANDS)
def generate() -> None:
    """Generate scenarios or conversations."""
