"""``bargein score ihbench | ear | turnnat | timing | fdb | validate-judge``."""

from __future__ import annotations

import click

from bargein.cli.util import LazyGroup

SCORE_COMMANDS: dict[str, tuple[str, str]] = {
    "ihbench": ("bargein.cli.score_ihbench:ihbench", "TF win rate and RQ pass rate."),
    "ear": ("bargein.cli.score_ear:ear", "EAR on repair items."),
    "turnnat": ("bargein.cli.turnnat:score_turnnat", "TurnNat pair accuracy / C-index."),
    "timing": ("bargein.cli.score_timing:timing", "FD-Bench and Talking-Turns timing metrics."),
    "fdb": ("bargein.cli.score_fdb:fdb", "Full-Duplex-Bench v1 / v1.5 metrics."),
    "validate-judge": ("bargein.cli.score_validate:validate_judge",
                       "A judge's accuracy and Cohen's kappa on the labelled control set."),
}


@click.group(cls=LazyGroup, lazy=SCORE_COMMANDS)
def score() -> None:
    """Score model outputs against a release."""
