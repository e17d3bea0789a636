"""Defects an independent hand read of offline calls (seed 7373, 57 interruption points, 19 with
a substance defect) found, each checked at its cause on calls of another seed: a recovery that
says again a sentence the caller heard almost whole, intents that promise a correction the call
never has, a charge disputed afresh after it was settled, a check back ("was that Sunday?")
scored as new information, a correction after the step that used the value was done, offers in
talking points that nothing carries out."""

from __future__ import annotations

import random
import re

import pytest

from bargein.generators.catalogue_loader import load_catalogue
from bargein.generators.plan_state import ConversationState, Unit
from bargein.generators.planner_cut import resume_text
from bargein.generators.planner_text import _unheard_price
from bargein.generators.rubric import rule_rubric
from bargein.generators.workflow import check_stages
from doubles.offline_calls import cut_recovery, run_busy, scenario_batch  # noqa: E402
from bargein.records import Conversation, Scenario

_MONEY = re.compile(r"\$\d[\d,]*(?:\.\d\d)?")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(40, 8383, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def convs(scenarios) -> list[Conversation]:
    return [run_busy(s, n) for n, s in enumerate(scenarios)]



def test_a_cut_in_a_later_clause_resumes_that_clause_not_the_whole_sentence():
    """[8] "Your Standard plan allows up to five profiles, and you have room for one more, so we
    can | add ..." -- the recovery said the whole sentence again, reworded (seed 7373, #50/#51)."""
    text = ("Your Standard plan allows up to five profiles, and you have room for one more, so we "
            "can add a profile today without changing the price.")
    assert resume_text(text, cut_recovery(text, text[:text.index("add a")])) == \
        "We can add a profile today without changing the price."
    # cut in the first clause: the sentence from its start, as before
    assert resume_text(text, cut_recovery(text, "Your Standard plan allows")) == text
    # a list's noun phrase is no clause to start at ("and | last year's return")
    listed = "The checklist covers read-only bank access, and last year's return, all through the portal."
    assert resume_text(listed, cut_recovery(listed, "The checklist covers read-only bank access, and last year's")) \
        == listed
    # nor a clause that points back ("and it ...")
    back = "We checked the parcel at the depot this morning, and it is already on the van to you."
    assert resume_text(back, cut_recovery(back, "We checked the parcel at the depot this morning, and it is")) \
        == back


def test_no_correction_is_planned_on_a_detail_a_check_or_lookup_takes(scenarios):
    """The check passes with what the caller says: a planned slip or change of the account email
    there never happens ("forgetful, corrects themselves" and no correction in the call)."""
    seen = 0
    for s in scenarios:
        checked = {k for st in check_stages(s.kb.workflow) for k in st.required_info}
        for c in s.intent.corrections:
            seen += 1
            assert c.key not in checked, (s.id, c.key)
    assert seen >= 10


def test_a_conversation_lists_the_corrections_its_caller_made(scenarios, convs):
    """A planned change of mind the call never came to is no label of the call: the intent in
    the conversation lists what happened; the scenario keeps its id (pool, split, eval items)."""
    dropped = 0
    for s, c in zip(scenarios, convs):
        for corr in c.scenario.intent.corrections:
            made = any(m.interruption.type == "correction" and corr.corrected_value in u.text
                       for m, u in c.interruptions)
            slipped = any(m.role == "user" and corr.first_value in m.text for m in c.messages)
            assert made or slipped, (c.id, corr)
        dropped += len(s.intent.corrections) - len(c.scenario.intent.corrections)
        planned = s.with_(intent=s.intent.with_(interruption_rate=0.6, id=""), id="")
        assert c.scenario.id == planned.id
    assert dropped >= 1          # some planned corrections never happen, and are not listed


def test_a_settled_charge_is_not_disputed_afresh(convs):
    """"Hmm, why do I have to pay the $1,549.12 charge? I wasn't told about any charge." after
    the caller had disputed it twice and accepted a supervisor review (seed 7 of the bench)."""
    seen = 0
    for c in convs:
        for m, u in c.interruptions:
            if m.interruption.type != "pushback":
                continue
            before = c.messages[m.index - 1] if m.index else None
            if before is not None and before.role == "user" and c.messages[m.index - 2].interruption \
                    is not None and c.messages[m.index - 2].interruption.type == "pushback":
                continue                # the objection kept up on the very answer to it
            for amount in _MONEY.findall(u.text):
                seen += 1
                earlier = [x.index for x in c.messages[:u.index] if x.role == "user" and amount in x.text]
                assert not earlier, (c.id, u.index, u.text, earlier)
    assert seen >= 3


def test_a_check_back_is_scored_as_a_check_not_as_new_information(convs):
    """"So that's Sunday, February 2, 2025?" scored with "takes the new information into
    account" (seed 7373, #30)."""
    seen = 0
    for c in convs:
        for p in c.plan:
            if p.type == "normal" and p.detail.get("variant") == "clarify":
                r = rule_rubric(c, p.message_index + 1, random.Random(0))
                text = " ".join(r.rq_criteria)
                assert "into account" not in text and "what the caller added" not in text, r.rq_criteria
                assert re.search(r"\bcheck\b", text), r.rq_criteria
                seen += 1
    assert seen >= 2


def test_a_refund_is_no_price_to_agree_to_and_a_cut_price_is_not_said_again_from_its_start():
    refund = "The booking is cancelled, and I've requested a refund of $787.62 to your card."
    assert _unheard_price(refund, 10) == ""
    fee = "After the plan paid most of it and applied a discount, $328.38 is left for you to pay."
    assert _unheard_price(fee, 20) == fee


def test_a_value_a_reported_action_used_is_not_corrected_after_it(scenarios):
    """"I've put the redirect through to the carrier." -- "Oops, my mistake. The new address is
    ..." (seed 8383 of the hand-read tests): a change after the step's work is done."""
    for s in scenarios:
        for stage in s.kb.workflow.stages:
            keys = set(stage.required_info) & {c.key for c in s.intent.corrections}
            if not keys:
                continue
            st = ConversationState(scenario=s, target_messages=40)
            for c in s.intent.corrections:
                st.stated[c.key] = c.first_value
                st.uttered.add(c.key)
            free = set(st.correctable())
            if not keys & free:
                continue
            done = Unit(kind="inform", stage=stage.name, text="I've submitted it now, and that's done.")
            talk = Unit(kind="inform", stage=stage.name, text="Let me explain what happens next here.")
            assert not keys & set(st.correctable_in(done))
            assert keys & free <= set(st.correctable_in(talk))
            return
    pytest.skip("no scenario of the batch has a correction in a stage of its own")


_OPEN_OFFER = re.compile(r"\bif you'd like, I can\b|\bI can \w+[^.?!]* if you're interested\b|"
                         r"\bI can (?:email|send|text) you\b[^.?!]*\bif you'd like\b|^Would you like that\?$",
                         re.I)


def test_no_talking_point_makes_an_offer_nothing_carries_out():
    """"If you'd like, I can email you a short guide", "I can split it into two payments. Would
    you like that?": accepted, and never done (hand reads of seeds 6262 and 7373). A talking point
    says what the agent does or what the caller can do; offers live where a step carries them out."""
    cat = load_catalogue()
    n = 0
    for dname, dom in cat.domains.items():
        for gname, goal in dom.goals.items():
            for st in goal.workflow.stages:
                for tp in st.talking_points:
                    for sent in re.split(r"(?<=[.?!])\s+", tp):
                        n += 1
                        assert not _OPEN_OFFER.search(sent), (dname, gname, st.name, sent)
    assert n > 500
