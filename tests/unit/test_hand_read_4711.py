"""Defects an independent hand read of offline calls (seed 4711, 51 interruption points) found,
each checked at its cause on calls of another seed: a topic switch on the greeting, an impatient
"I get it" after one short sentence or after a question heard whole, a slip the agent reads out
as the line's last four digits, a caller nodding at a date ("Oh, on Saturday, I can do that."),
a doubtful nod that asks for something nobody answers, "Good catch" to the caller's own slip."""

from __future__ import annotations

import re

import pytest

from bargein.generators import phrases as P
from bargein.generators.planner_caller import CallerRounds
from bargein.generators.planner_cut import impatient_cuts
from doubles.offline_calls import run, scenario_batch  # noqa: E402
from bargein.records import Conversation, Scenario


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(30, 9091, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def convs(scenarios) -> list[Conversation]:
    return [run(s.with_(intent=s.intent.with_(interruption_rate=0.6, id=""), id=""), n)
            for n, s in enumerate(scenarios)]


def test_no_topic_switch_on_the_greeting(convs):
    first = [c.messages[0].interruption.type for c in convs if c.messages[0].interruption]
    assert first, "no call was cut on its greeting: the check would see nothing"
    assert "topic_switch" not in first


def test_an_impatient_cut_comes_after_something_explained_and_no_question(convs):
    seen = 0
    for c in convs:
        for m, _u in c.interruptions:
            if m.interruption.type != "impatient":
                continue
            seen += 1
            plan = next(p for p in c.plan if p.message_index == m.index)
            start = len(m.text) - len(plan.unit.text) if plan.unit and plan.unit.text and \
                m.text.endswith(plan.unit.text) else 0
            heard = m.heard_text[start:] if len(m.heard_text) > start else m.heard_text
            assert "?" not in heard, (m.heard_text, m.text)
            assert P.n_words(heard) >= 6, (m.heard_text, m.text)
    assert seen >= 5


def test_impatient_cut_points_by_hand():
    text = ("I can help you cancel. Before I do, would you mind telling me what's prompting the "
            "change? It helps us understand what we could do better, though it's completely optional.")
    # one short sentence heard, then a question, then an explanation: no place to say "I get it"
    assert impatient_cuts(text, 0) == []
    text = ("Your refund goes back to the card you paid with, and it normally shows within five "
            "business days. Some banks take a little longer to post it, so if it's not there by "
            "next Friday, just give us a call.")
    ks = impatient_cuts(text, 0)
    words = text.split()
    assert ks and min(ks) >= 6
    assert all("?" not in " ".join(words[:k]) for k in ks)


def test_a_slip_read_out_as_its_last_four_digits_is_caught_at_that_turn():
    from types import SimpleNamespace

    from bargein.records.scenario import Correction, UserFact  # noqa: F401

    c = Correction(key="phone_number", first_value="(720) 344-3362", corrected_value="(720) 344-3326")
    st = SimpleNamespace(correctable=lambda: ["phone_number"], correction=lambda k: c,
                         facts={"phone_number": UserFact(key="phone_number", value="(720) 344-3326",
                                                         kind="phone")})
    unit = SimpleNamespace(text="Got it. I have the line ending in 3326 here. For security, can you "
                                "also read me the account number?")
    assert CallerRounds._slip_read_out(st, unit) == "phone_number"
    unit.text = "I have the line ending in 3362 here."          # what the caller said: no slip
    assert CallerRounds._slip_read_out(st, unit) is None
    # the slip itself read back for the caller to confirm: they correct it now (a hand read of
    # seed 3131: "Yep, that matches" to the value they were about to correct)
    check = SimpleNamespace(text="Just checking I heard you right: (720) 344-3362?",
                            keys=("phone_number",))
    assert CallerRounds._slip_read_out(st, check) == "phone_number"


def test_the_caller_nods_at_no_value_and_a_doubtful_nod_asks_for_nothing(convs):
    nods = [x for x in P.bank("user", "ack_info_skeptical")]
    assert not [x for x in nods if re.search(r"\b(?:I'd like|please|can you|could you)\b", x, re.I)]
    for c in convs:
        for m in c.messages:
            if m.role == "user":
                # "Oh, on Saturday, I can do that." / "Friday, February 21, 2025. Fine by me."
                assert not re.search(r"\b(?:19|20)\d\d\b.{0,20}\b(?:fine by me|I can do that|"
                                     r"I can live with that)", m.text, re.I), m.text


def test_a_correction_is_taken_without_calling_it_the_agents_catch():
    for key in ("recover_correction", "recover_correction_short"):
        for line in P.bank("assistant", key):
            assert not re.search(r"\bgood catch\b|\bsorry about that\b", line, re.I), line


def test_a_spelled_code_starting_with_the_letter_i_is_not_the_caller_speaking():
    """Seed 6262: "Oh, by the way, I N V, eight eight zero five zero seven." told back as "I've
    written down that you N V, eight eight zero five zero seven"."""
    code = "I N V, eight eight zero five zero seven"
    assert P.clause(code) is None
    assert P.second_person(code) == code and P.first_person(code) == code
    assert P.second_person("I need it by Friday") == "you need it by Friday"
