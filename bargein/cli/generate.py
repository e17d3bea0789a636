"""``bargein generate scenarios|conversations``."""

from __future__ import annotations

import click

from bargein.cli.util import LazyGroup

GENERATE_COMMANDS = {
    "scenarios": ("bargein.cli.generate_scenarios:scenarios",
                  "Sample (domain, goal, intent) scenarios with KBs and system prompts."),
    "conversations": ("bargein.cli.generate_conversations:conversations",
                      "Simulate, verify and export conversations with interruptions."),
}


@click.group(cls=LazyGroup, lazy=GENERATE_COMMANDS)
def generate() -> None:
    """Generate scenarios or conversations."""
