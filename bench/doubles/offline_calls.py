"""Offline calls for tests: a batch of packaged scenarios and one rule-agent simulation each,
the way the offline build makes them (no model, no files but the scenario stage's work dir)."""

from __future__ import annotations

import random
from pathlib import Path

from bargein.generators.conversation import RuleAgents, _run_sync, simulate
from bargein.generators.scenarios import generate_scenarios
from bargein.records import Conversation, Scenario
from bargein.records.plan import Recovery


def scenario_batch(n: int, seed: int, workdir: Path) -> list[Scenario]:
    """``n`` scenarios of the packaged catalogue for ``seed``; every one must come out."""
    res = generate_scenarios(n, seed, workdir=workdir, progress=False)
    assert not res.failures, res.failures
    return res.outputs


def run(scn: Scenario, seed: int = 0) -> Conversation:
    """One offline conversation of ``scn`` (rule agents, a seeded RNG)."""
    return _run_sync(simulate(scn, random.Random(seed), RuleAgents(scn)))


def run_busy(scn: Scenario, seed: int = 0, rate: float = 0.6) -> Conversation:
    """``run`` with the caller cutting in at ``rate`` (more interruption points a call)."""
    return run(scn.with_(intent=scn.intent.with_(interruption_rate=rate, id=""), id=""), seed)


def cut_recovery(text: str, heard: str) -> Recovery:
    """The recovery record of a ``normal`` cut-in that left ``heard`` of ``text`` said."""
    return Recovery(type="normal", message_index=1, planned_text=text, heard_text=heard,
                    remainder=text[len(heard):], interjection="Oh, by the way ...",
                    content_start=0, detail={})
