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


def test_recovery_repeat_rate_counts_recoveries_that_say_heard_words_again():
    """Hand-computed: two recoveries after a side remark, one saying seven heard words again
    word for word, one starting the point afresh in other words; a backchannel's continuation
    is not a recovery that could repeat (it goes on from the cut)."""
    from bargein.verify.report import recovery_repeat_rate

    q = "Are you the patient, or are you calling on their behalf today?"
    turns = [
        ("assistant", q, {"cut": 9, "type": "normal"}),      # heard: "... calling on their"
        ("user", "Oh, by the way, I'm in a bit of a rush."),
        ("assistant", "I'll keep it quick. Are you the patient, or are you calling for them?"),
        ("user", "I'm the patient."),
        ("assistant", q, {"cut": 9, "type": "topic_switch"}),
        ("user", "Sorry, is there parking at the clinic?"),
        ("assistant", "There's a free garage next door. Is this visit for you, or for someone else?"),
        ("user", "For me."),
        ("assistant", q, {"cut": 9, "type": "filler"}),
        ("user", "mm-hm"),
        ("assistant", "behalf today? Are you the patient, or are you calling on their behalf today?"),
    ]
    conv = build_conversation(example_scenario(), turns)
    assert recovery_repeat_rate([conv]) == 0.5
    assert recovery_repeat_rate([conv], run=9) == 0.0
    report = quality_report([verify_conversation(conv)])
    assert "recovery_repeat_rate" in report and "assistant_distinct2_spoken" in report
    lines = "\n".join(quality_section({"generation": {"quality": report}}))
    assert "6+ words the caller already heard" in lines and "over what was said" in lines
