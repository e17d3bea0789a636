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


def test_a_caller_standing_by_their_choice_is_not_repeating():
    """Seen on the 1.5B model (bench/llm_real.py, travel): the caller chose to cancel the whole
    booking, was then told what a partial cancellation would mean, and said "I understand. I'll
    cancel the whole booking for everyone." Nine answers like it were refused (its own earlier
    choice counted as parroting the question and as a line said again) and the conversation was
    discarded. Words the caller said before are theirs; a line said again means near word for
    word."""
    call = [
        {"role": "assistant", "text": "The booking covers 4 passengers on Boston to Orlando. Should I "
                                      "cancel the whole booking for everyone, or only some of the travellers?"},
        {"role": "user", "text": "Cancel the whole booking for everyone, please."},
        {"role": "assistant", "text": "If you only cancel part of it, I'll split the booking first, so "
                                      "the remaining travellers keep their seats and fares exactly as they are."},
    ]
    for line in ("I understand. I'll cancel the whole booking for everyone.",
                 "I understand. I'll cancel the whole booking for everyone. Let me confirm."):
        assert repeats(line, call) == [], line
    # the same line again, or the question read back, is still refused
    assert any("earlier line of theirs" in e
               for e in repeats("Cancel the whole booking for everyone, please.", call))
    assert any("repeats the assistant's words" in e for e in repeats(
        "If you only cancel part of it, you'll split the booking first so the travellers keep their seats.", call))
