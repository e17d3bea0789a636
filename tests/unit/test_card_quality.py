"""The release card's quality table lists every deterministic check with its measured rates."""

from __future__ import annotations

from bargein.verify import verify_conversation
from bargein.verify.checks import CHECKS
from bargein.verify.report import quality_report
from doubles.conversation_examples import (
    EXAMPLE_TURNS, build_conversation, example_conversation, example_scenario,
)
from releases.card import quality_section


def test_every_check_has_a_row_with_its_flagged_and_discard_rates():
    turns = list(EXAMPLE_TURNS)
    turns[16] = ("assistant", "I can add you to the list. Shall I do that?",
                 {"stage": "schedule_technician"})
    turns[17] = ("user", "My neighbour had the same outage last week.")
    bad = build_conversation(example_scenario(), turns)
    verified = [verify_conversation(example_conversation()), verify_conversation(bad)]
    assert verified[0].accepted and not verified[1].accepted
    report = quality_report(verified)
    assert report["flagged_conversation_rate.yes_no_answered"] == 0.5
    assert report["discard_rate.yes_no_answered"] == 0.5
    lines = "\n".join(quality_section({"generation": {"quality": report}})).splitlines()
    rows = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
            for ln in lines if ln.startswith("| `")}
    assert set(rows) == {f"`{c}`" for c in CHECKS}
    assert rows["`yes_no_answered`"] == ["0.0%", "50.0%", "50.0%"]
    assert rows["`cut_inside_value`"] == ["0.0%", "0.0%", "0.0%"]
    assert any("conversations flagged" in ln for ln in lines)
