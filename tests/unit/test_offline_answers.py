"""The offline caller answers what it is asked, and a cut never splits a name, date or value.

Expected answers and protected cuts are labelled by hand below (not derived from the banks)."""

from __future__ import annotations

import random

import pytest

from bargein.generators import phrases as P
from bargein.generators.plan_state import answer_question, question_kind
from bargein.generators.planner_cut import place_cut, resume_text, unheard_question
from bargein.records.plan import Recovery

# hand-labelled: how a caller answers each question (from the catalogue's keyless questions)
KINDS = [
    ("Can I ask what's prompting the change?", "reason"),
    ("Before I do, would you mind telling me what's prompting the change?", "reason"),
    ("Are you the patient, or are you calling on their behalf?", "either"),
    ("Would you like me to hold Thursday, July 3, 2025 at 2:00 PM?", "offer"),
    ("Do you still want me to go ahead?", "offer"),
    ("Shall I go ahead and apply the upgrade?", "offer"),
    ("Could you take two quick photos, one of the damage and one of the label?", "request"),
    ("Is this your primary residence, where you lived most of the year before the disaster?", "fact"),
    ("Is that the one you need refilled?", "fact"),
    ("Do you have any other Keystone cards you'll be taking, like a credit card?", "no"),
    ("Does that include any overtime or tips?", "no"),
    ("Before I do that, do you want to keep the account on a monthly plan instead?", "keep"),
    ("Before I search, do you have a preferred time of day?", "flexible"),
    ("Where should it go?", "open"),
    ("Could I have your name and the legal name of the business?", "open"),
    ("Which would you prefer?", "which"),
]


@pytest.mark.parametrize("question,kind", KINDS)
def test_question_kinds_match_hand_labels(question, kind):
    assert question_kind(question) == kind


def test_answers_answer_the_question():
    rng = random.Random(3)
    for _ in range(20):
        k, a = answer_question("Are you the patient, or are you calling on their behalf?", rng)
        assert a in ("I'm the patient.", "I'm calling on their behalf.")
        k, a = answer_question("Do you still want me to go ahead?", rng)
        assert a.lower().startswith(("yes", "yeah", "sure", "oh, yes", "mm, yes", "definitely", "yep"))
        k, a = answer_question("Does that include any overtime or tips?", rng)
        assert a.lower().startswith(("no", "nope", "um, no", "hmm, no", "not really"))
        k, a = answer_question("Before I quote anything, is the main goal more automation rules, "
                               "the reporting dashboards, or single sign-on?", rng)
        assert k == "which" and any(o in a.lower() for o in ("automation rules", "reporting dashboards",
                                                             "single sign-on"))
    assert answer_question("We'll send it today.", rng) is None


def test_a_lead_in_before_a_choice_is_no_option():
    """Seen on seed 7: "Just so I know, are you the patient, or are you calling for someone
    else?" was answered "Are you the patient, I'd say." (the lead-in counted as an option)."""
    rng = random.Random(5)
    for q in ("Just so I know, are you the patient, or are you calling for someone else?",
              "For my notes, are you the patient, or someone calling on their behalf?"):
        for _ in range(10):
            assert answer_question(q, rng) == ("either", "I'm the patient.")
    said = {answer_question("For delivery, would you like standard, express, or overnight?", rng)[1]
            for _ in range(40)}
    picked = {o for o in ("standard", "express", "overnight") for a in said if o in a.lower()}
    assert picked == {"standard", "express", "overnight"}
    assert not any("would you" in a.lower() or "delivery" in a.lower() for a in said)


def _cuts(text: str, values=()) -> list[str]:
    """The text with '|' after every word a cut must not follow."""
    ks = P.protected_cuts(text, values)
    return [w + ("|" if i in ks else "") for i, w in enumerate(text.split(), 1)]


def test_protected_cuts_keep_names_dates_amounts_and_values_whole():
    # hand-marked: the boundaries inside a name, a date/time, an amount with its unit, a spelled value
    assert " ".join(_cuts("You're upgraded to Premium Select on flight MA 9986 today.")) == \
        "You're upgraded to Premium| Select on flight MA| 9986 today."
    assert " ".join(_cuts("You're booked on Wednesday, June 25, 2025 at 12:00 PM. See you then.")) == \
        "You're booked on Wednesday,| June| 25,| 2025 at 12:00| PM. See you then."
    assert " ".join(_cuts("It usually takes two business days to arrive.")) == \
        "It usually takes two| business| days to arrive."
    assert " ".join(_cuts("So that's Rice, Duncan and Mitchell, and you own it.")) == \
        "So that's Rice,| Duncan| and| Mitchell, and you own it."
    assert " ".join(_cuts("I have a wired ethernet connection noted here.",
                          ("a wired ethernet connection",))) == \
        "I have a| wired| ethernet| connection noted here."


def test_place_cut_avoids_protected_cuts():
    text = "Okay. Your booking with Barbara Nichols on Wednesday, June 25, 2025 at 12:00 PM is confirmed now."
    prot = P.protected_cuts(text)
    for seed in range(30):
        rng = random.Random(seed)
        k = place_cut(text, 6, rng.random(), rng, protected=prot)
        assert k is not None and k not in prot


def test_unheard_question_and_resume():
    text = "The earliest slot is Tuesday at 1:20 PM. Visits are about an hour. Would that work for you?"
    assert unheard_question(text, 20) == "Would that work for you?"
    assert unheard_question(text, len(text)) == ""
    cut = "I ask for it so nobody else can change it. Alternatively, we could call you back. Would that help?"
    heard = "I ask for it so nobody else can change it. Alternatively, we could"
    rec = Recovery(type="normal", message_index=1, planned_text=cut, heard_text=heard, remainder="",
                   interjection="x", content_start=0)
    assert resume_text(cut, rec) == "We could call you back. Would that help?"
