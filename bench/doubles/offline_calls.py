"""Offline calls for tests: a batch of packaged scenarios and one rule-agent simulation each,
the way the offline build makes them (no model, no files but the scenario stage's work dir)."""

from __future__ import annotations

import random
from pathlib import Path

from bargein.generators.conversation import RuleAgents, _run_sync, simulate
from bargein.generators.scenarios import generate_scenarios
from bargein.records import Conversation, Scenario


def scenario_batch(n: int, seed: int, workdir: Path) -> list[Scenario]:
    """``n`` scenarios of the packaged catalogue for ``seed``; every one must come out."""
    res = generate_scenarios(n, seed, workdir=workdir, progress=False)
    assert not res.failures, res.failures
    return res.outputs


def run(scn: Scenario, seed: int = 0) -> Conversation:
    """One offline conversation of ``scn`` (rule agents, a seeded RNG)."""
    return _run_sync(simulate(scn, random.Random(seed), RuleAgents(scn)))
