"""Defects two independent hand reads of offline calls found (seeds 2929 and 8585, 57 and 52
interruption points, 13 and 17 with a substance defect), each checked at its cause on calls of
other seeds: thanks said twice, a nod that answers a question, a recovery that says a sentence
again that the caller heard whole, a filler's task criterion quoting a sentence's first word,
"the phone number is wrong" before the agent said one, "Anything else?" answered with "No, that's
not the case.", a promise made at the close never kept, texts sent to a lost phone, a resume
lead that puts the caller off."""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path

import pytest

from bargein.generators import phrases as P
from bargein.generators.plan_state import question_kind
from bargein.generators.planner_cut import place_cut, resume_text
from bargein.generators.rubric import rule_rubric
from bargein.records import Conversation, Scenario
from bargein.records.plan import Recovery
from bargein.verify.checks import run_checks
from doubles.offline_calls import run, scenario_batch  # noqa: E402

_SENT = re.compile(r"(?<=[.!?])\s+")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(40, 4646, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def convs(scenarios) -> list[Conversation]:
    return [run(s.with_(intent=s.intent.with_(interruption_rate=0.6, id=""), id=""), n)
            for n, s in enumerate(scenarios)]


def _rec(text: str, heard: str) -> Recovery:
    return Recovery(type="normal", message_index=1, planned_text=text, heard_text=heard,
                    remainder=text[len(heard):], interjection="Oh, by the way ...",
                    content_start=0, detail={})


def test_a_cut_right_after_a_full_stop_resumes_with_the_next_sentence():
    """"Ryan Powell could see you on Monday, May 19, 2025 at 3:00 PM. | After the meeting ..."
    -- the gold said the whole slot sentence again (seed 8585, #11)."""
    text = ("Ryan Powell could see you on Monday, May 19, 2025 at 3:00 PM. After the meeting, we "
            "bill the consultation at a fixed 120 dollars for 30 minutes.")
    heard = text[:text.index(" After")]
    assert resume_text(text, _rec(text, heard)).startswith("After the meeting")
    # the heard sentence ends with an abbreviation's stop: no sentence end, started afresh
    dr = "Your visit is with Dr. Payne on Friday at nine in the morning."
    assert resume_text(dr, _rec(dr, "Your visit is with Dr.")) == dr


def test_a_nod_never_falls_inside_a_question():
    """"Are you the patient, | -- Sure." reads as the answer (seed 8585, #29)."""
    text = ("Just so I have it right, are you the patient yourself, or are you phoning on someone "
            "else's behalf today? It changes which record I open for you.")
    inside = text.index("or are")           # a clause edge ("..., | or") inside the question
    for seed in range(40):
        k = place_cut(text, 0, random.Random(seed).uniform(0.1, 0.9), random.Random(seed),
                      at_boundary=True)
        if k is None:
            continue
        heard = P.prefix_words(text, k)
        assert not (len(heard) <= inside + 1 and "?" not in heard), heard


def test_nods_in_calls_are_at_no_point_inside_a_question(convs):
    seen = 0
    for c in convs:
        for m, _ in c.interruptions:
            if m.interruption.type != "filler":
                continue
            seen += 1
            heard = m.interruption.heard_text
            rest = m.text[len(heard):]
            end = re.search(r"[.?!](?=\s|$)", rest)
            assert heard.rstrip()[-1:] in ".!?" or not end or end.group() != "?", (c.id, heard, rest)
    assert seen >= 10


def test_filler_task_criteria_quote_whole_phrases(convs):
    """"... if you rebook later. Knowing..." and "... behalf?..." (seed 2929, #4 and the fillers)."""
    seen = 0
    for c in convs:
        for m, u in c.interruptions:
            if m.interruption.type != "filler":
                continue
            tf = rule_rubric(c, u.index, random.Random(0)).tf_criterion
            quote = re.search(r'"(.*)"', tf).group(1)
            seen += 1
            assert not re.search(r"[.?!]\.\.\.$", quote), tf          # "behalf?..."
            assert not re.search(r"[.?!] \S+\.\.\.$", quote), tf      # "later. Knowing..."
            assert m.text[len(m.interruption.heard_text):].strip().startswith(quote.rstrip(".")), tf
    assert seen >= 10


def test_a_correction_says_the_agent_had_it_wrong_only_after_the_agent_said_it(convs):
    """"Hang on, the phone number is wrong." to a turn cut before any number (seed 8585, #33)."""
    seen = 0
    for c in convs:
        for m, u in c.interruptions:
            if m.interruption.type != "correction" or not re.search(r"\bis wrong\b", u.text):
                continue
            seen += 1
            olds = [x.first_value for x in c.scenario.intent.corrections]
            assert any(o in m.interruption.heard_text for o in olds), (c.id, m.interruption.heard_text, u.text)
    # the calls hold corrections cut before the value: none of them says "is wrong"
    assert sum(1 for c in convs for m, _ in c.interruptions if m.interruption.type == "correction") >= 5


def test_thanks_are_said_once_at_the_start_of_a_turn(convs):
    """"Alright, thanks for that. Thank you, Sheila." (seed 8585, [8])."""
    seen = 0
    for c in convs:
        for m in c.messages:
            if m.role != "assistant":
                continue
            sents = _SENT.split(m.text)
            for a, b in zip(sents, sents[1:]):
                if re.match(r"\W*(?:thanks|thank you)\b", b, re.I):
                    seen += 1
                    assert not re.search(r"\b(?:thanks|thank you)\b", a, re.I), (c.id, m.index, m.text)
    assert seen >= 1


def test_an_acknowledgement_is_not_acknowledged():
    """"Got it." -- "Understood." and "Noted." -- "Wonderful." (seed 2929)."""
    from bargein.generators.assistant_sim import _ACK_ONLY
    for ack in ("Got it.", "Noted.", "Okay, sounds good.", "Right, I see."):
        assert _ACK_ONLY.match(ack), ack
    for said in ("Yes, Sheila Weaver.", "Okay, my email is a@b.com.", "No, that's wrong."):
        assert not _ACK_ONLY.match(said), said


def test_calls_meet_a_bare_acknowledgement_with_no_acknowledgement_of_their_own(convs):
    bare = re.compile(r"\W*(?:got it|noted|okay|ok|sure|right|understood|sounds good)[.!]?$", re.I)
    one_word = re.compile(r"(?:understood|wonderful|appreciated|noted|lovely|got it|good|great|"
                          r"perfect|thank you|thanks)\.$", re.I)
    seen = 0
    for c in convs:
        for u, a in zip(c.messages, c.messages[1:]):
            if u.role == "user" and a.role == "assistant" and bare.match(u.text):
                seen += 1
                assert not one_word.match(_SENT.split(a.text)[0]), (c.id, u.text, a.text)
    assert seen >= 5


def test_anything_else_is_answered_as_a_close():
    """"Anything else?" -- "No, that's not the case. Go ahead." (seed 2929, [25])."""
    assert question_kind("Anything else?") == "done"
    assert question_kind("Is there anything else I can help you with today?") == "done"
    assert question_kind("Do you have anything else on the account?") == "no"
    for line in P.bank("user", "qa_done"):
        assert not re.search(r"\bnot the case\b|\bgo ahead\b", line, re.I), line


def test_promises_made_at_the_close_are_kept(convs):
    """A side request at the close ("I'd like a written confirmation of all this") answered
    "it will go out once we're done", then goodbye (seed 7, the data bench: two discards)."""
    for c in convs:
        broken = [v for v in run_checks(c) if v.check == "promise_kept"]
        assert not broken, (c.id, broken[0].issue)


def test_nothing_is_texted_to_a_lost_phone():
    """"I'll text you today's values" and a one-time code "to the mobile number on the
    account" in a lost-phone call (seeds 2929 #39, 8585 #21): before the fix 14 agent turns of
    18 such calls said something went by text."""
    calls = 0
    for seed in (11, 12, 13, 14):
        for s in scenario_batch(60, seed, Path(tempfile.mkdtemp())):
            if "lost" not in s.goal.description or "phone" not in s.goal.description:
                continue
            for k in range(2):
                c = run(s.with_(intent=s.intent.with_(interruption_rate=0.6, id=""), id=""), k)
                calls += 1
                for m in c.messages:
                    if m.role == "assistant":
                        assert not re.search(r"\btext(?:ed|ing)?\b|\bby text\b", m.text, re.I), m.text
    assert calls >= 4


def test_resume_leads_take_up_the_agents_own_sentence():
    """"Let me come back to that." read as putting the caller's point off (seed 2929, #38);
    "Let me finish that thought." before a question (seed 8585, #9)."""
    for lead in P.bank("assistant", "resume_lead_full"):
        assert not re.search(r"\b(?:come back to that|back to that|that thought|go back to that)\b",
                             lead, re.I), lead
