"""Caller lines that are not the caller's own words are refused (re-asked). The cases are lines
the 1.5B model wrote in one call of bench/llm_real.py (read and labelled by hand), which the
earlier checks let through: the impatient example copied three times, the caller reading back
an assistant turn from earlier in the call."""

from __future__ import annotations

from bargein.generators.llm_agents import copies, repeats
from bargein.generators.llm_messages import _INTERJECTION_EXAMPLES

UPLOAD = ("I understand. I understand. I'll upload everything to the permit portal under your "
          "application number. Incomplete applications are the most common reason for delays, so "
          "it's worth double-checking.")
CALL = [
    {"role": "assistant", "text": "Let me confirm what I wrote down, it's fifty thirteen Kingsley Place."},
    {"role": "user", "text": "Sorry, can we skip that part? I just need it done."},
    {"role": "assistant", "text": UPLOAD},
    {"role": "user", "text": "Sure, I'll upload everything to the permit portal under your"},
    {"role": "assistant", "text": "After approval, you'll have inspections at key stages, like "
                                  "footings and final. Anything else I can help with?"},
]


def test_an_earlier_assistant_turn_read_back_is_refused():
    line = "I understand. I understand. I'll upload everything to the permit portal under your name."
    assert any("repeats the assistant's words" in e for e in repeats(line, CALL))


def test_an_earlier_caller_line_said_again_is_refused():
    again = "Sorry, can we skip that part? I just need it done."
    assert any("earlier line of theirs" in e for e in repeats(again, CALL))


def test_the_impatient_example_copied_is_caught():
    assert copies("Sorry, can we skip that part? I just need it done.", _INTERJECTION_EXAMPLES["impatient"])
    assert not copies("Can you just get to the fee, please?", _INTERJECTION_EXAMPLES["impatient"])


def test_the_callers_own_words_pass():
    for line in ("No, that's all, thanks.", "Will the inspector call me before coming out?",
                 "Yes.", "Okay, and how long does the review usually take?"):
        assert repeats(line, CALL) == [], line
