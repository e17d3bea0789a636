"""The offline assistant's banks: no repeats, every fill grammatical for every key it is used
with, rewordings that never touch a value or a question, and the acts that depend on the call
(goodbyes, name acknowledgements, read-backs) right in their context."""

from __future__ import annotations

import random
import re

import pytest

from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.generators.assistant_sim import RuleAssistant, _own_attribute
from bargein.generators.catalogue_loader import load_catalogue
from bargein.generators.plan_state import READBACK_KINDS
from bargein.generators.scenarios import generate_scenarios
from bargein.records.plan import RoundPlan, Unit
from bargein.verify.quality import grammar_issues


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory):
    return generate_scenarios(20, 3, workdir=tmp_path_factory.mktemp("scn"), progress=False).outputs


def _keys_by_kind(scenarios) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for s in scenarios:
        for f in s.kb.user_facts:
            out.setdefault(f.kind, set()).add(f.key)
    return out


# ---- no bank repeats an entry ------------------------------------------------------------------
def test_no_assistant_bank_holds_an_entry_twice():
    for key in P.bank_keys("assistant"):
        items = [x if isinstance(x, str) else repr(sorted(x.items())) for x in P.bank("assistant", key)]
        if key.endswith(("_open", "_tail")):
            items = [x for x in items if x]          # "" twice weights "no opener"
        dup = {x for x in items if items.count(x) > 1}
        assert not dup, (key, dup)


# ---- questions by the kind of detail --------------------------------------------------------------
def test_every_kind_question_is_grammatical_for_every_key_of_its_kind(scenarios):
    """Each ``ask_kind.<kind>`` line, filled for every key of that kind the scenarios hold, is
    one question ending in "?", with no slot left and no casing or agreement slip."""
    kinds = _keys_by_kind(scenarios)
    banks = [k for k in P.bank_keys("assistant") if k.startswith("ask_kind.")]
    assert {"ask_kind.name", "ask_kind.date_of_birth", "ask_kind.phone", "ask_kind.email"} <= set(banks)
    checked = 0
    for bank in banks:
        for key in sorted(kinds.get(bank.split(".", 1)[1], ())):
            lab = P.label(key)
            what = f"{'your' if _own_attribute(lab) else 'the'} {lab}"
            for tpl in P.bank("assistant", bank):
                q = P.fill(tpl, what=what)
                assert q.endswith("?") and "{" not in q and not grammar_issues(q), (bank, key, q)
                checked += 1
    assert checked >= 20


def test_a_single_detail_is_often_asked_in_its_own_words_and_still_asks_for_it(scenarios):
    """A date of birth asked alone: sometimes "When were you born?", never a question about
    anything else; two details together still name both."""
    kinds = {"date_of_birth": "date_of_birth", "full_name": "name"}
    qs = {RuleAssistant._question(("date_of_birth",), random.Random(i), kinds) for i in range(60)}
    assert set(P.bank("assistant", "ask_kind.date_of_birth")) & qs
    assert all(re.search(r"\bborn\b|date of birth", q) for q in qs), qs
    both = RuleAssistant._question(("full_name", "date_of_birth"), random.Random(0), kinds)
    assert "full name" in both and "date of birth" in both


# ---- read-backs name the detail -------------------------------------------------------------------
def test_every_readback_fill_is_grammatical_for_every_readable_key(scenarios):
    kinds = _keys_by_kind(scenarios)
    keys = sorted(k for kind in READBACK_KINDS for k in kinds.get(kind, ()))
    assert len(keys) >= 5
    for key in keys:
        for tpl in P.bank("assistant", "readback"):
            t = P.fill(tpl, value="June 4, 2025", label=P.label(key))
            assert t.endswith("?") and "{" not in t and not grammar_issues(t), (key, t)


# ---- goodbyes answer how the call ended ---------------------------------------------------------
def _bye(agent: RuleAssistant, seed: int) -> str:
    plan = RoundPlan(round=9, stage=None, assistant_action="farewell", unit=Unit(kind="farewell"))
    return agent.normal(plan, random.Random(seed)).text


def test_a_goodbye_thanked_is_welcomed_and_named_only_once_the_name_was_said(scenarios):
    scn = next(s for s in scenarios if any(f.kind == "name" for f in s.kb.user_facts))
    name = next(f.value for f in scn.kb.user_facts if f.kind == "name")
    agent = RuleAssistant(scn)
    agent.caller_said = ("No, that's everything. Thanks so much.",)
    welcomes = set(P.bank("assistant", "bye_thanked"))
    byes = [_bye(agent, i) for i in range(40)]
    assert all(any(b.startswith(w) for w in welcomes) for b in byes), byes
    assert not any(name.split()[0] in b for b in byes)          # never said it: not known
    agent.caller_said = (f"Sure, it's {name}.", "That's all, thank you.")
    assert any(name.split()[0] in _bye(agent, i) for i in range(40))


def test_no_glad_its_sorted_after_a_hand_over(scenarios):
    agent = RuleAssistant(scenarios[0])
    agent.caller_said = ("Okay.",)
    done = set(P.bank("assistant", "bye_done"))
    for bank in ("outcome_escalated", "outcome_terminated", "closing_cap"):
        for line in P.bank("assistant", bank):
            agent.before = line
            assert not [b for b in (_bye(agent, i) for i in range(30)) if any(d in b for d in done)]
    agent.before = "Is there anything else I can help you with today?"
    assert any(any(d in _bye(agent, i) for d in done) for i in range(60))


def test_a_name_acknowledgement_does_not_come_before_a_turn_that_names_the_caller(scenarios):
    scn = next(s for s in scenarios if any(f.kind == "name" for f in s.kb.user_facts))
    f = next(f for f in scn.kb.user_facts if f.kind == "name")
    first = f.value.split()[0]
    agent = RuleAssistant(scn)
    info = {"kind": "fact", "key": f.key, "value": f.value}
    acks = {agent._ack(info, random.Random(i)) for i in range(40)}
    assert any(a.endswith(f"{first}.") for a in acks)
    upcoming = f"Thank you, {first}. I can see your account."
    named = {P.fill(t, first=first) for t in P.bank("assistant", "ack_name")}
    assert not named & {agent._ack(info, random.Random(i), upcoming=upcoming) for i in range(40)}


# ---- pushback reasons of a line of business ------------------------------------------------------
@pytest.mark.parametrize("domain", ["healthcare", "financial_services", "telecom", "government",
                                    "education", "ecommerce", "saas", "subscription_media",
                                    "travel", "professional_services"])
def test_each_line_of_business_gives_its_own_reasons_for_an_identity_check(domain):
    own = [P.fill(t, obj="your date of birth") for t in
           P.bank("assistant", f"recover_pb_why_requirement.{domain}")]
    texts = [G.recover_pushback(random.Random(i), "requirement", "your date of birth", domain=domain)
             for i in range(200)]
    assert any(any(o[:30] in t for o in own) for t in texts)
    for t in texts:
        assert not grammar_issues(t) and "{" not in t, t


# ---- rewordings never touch a value or a question -----------------------------------------------
def test_rewording_keeps_every_value_and_every_question(catalogue):
    """Over every talking point of the catalogue and many draws: the ``{slots}`` (values) and
    the number of questions stay, and the text still ends the way it ended."""
    tps = {tp for dom in catalogue.domains.values() for goal in dom.goals.values()
           for st in goal.workflow.stages for tp in st.talking_points}
    assert len(tps) > 200
    changed = 0
    for tp in sorted(tps):
        for seed in range(4):
            out = P.vary(tp, random.Random(seed), fresh=bool(seed % 2))
            assert sorted(re.findall(r"\{\w+\}", out)) == sorted(re.findall(r"\{\w+\}", tp)), (tp, out)
            assert out.count("?") == tp.count("?") and out[-1:] == tp[-1:], (tp, out)
            changed += out != tp
    assert changed > len(tps)          # most talking points have a rewording that applies


def test_every_offer_opener_fits_every_offer_core():
    """Seen: "One option is that the other option is for me to ..." (an opener and a core that
    each frame the offer): every opener + core is one plain offer, grammatical."""
    for opener in P.bank("assistant", "pb_offer_open"):
        for core in P.bank("assistant", "pb_offer"):
            said = P.tidy(P.join(opener, P.fill(core, alternative="send you a secure link")))
            assert not grammar_issues(said), said
            assert len(re.findall(r"\b(?:option|alternatively|instead|another way)\b", said, re.I)) <= 1, said


def test_a_persisting_caller_is_not_told_the_same_understanding_again():
    first = G.recover_pushback(random.Random(1), "requirement", "your date of birth", domain="healthcare")
    for seed in range(40):
        again = G.recover_pushback(random.Random(seed), "requirement", "your date of birth",
                                   said=first, domain="healthcare")
        assert first.split(".")[0].split(",")[-1].strip().lower()[:30] not in again.lower(), (first, again)


def test_several_details_are_not_asked_for_as_one_it():
    """Seen: "Next, I need the check number and check amount and payee and check date. What is
    it?"."""
    keys = ("check_number", "check_amount", "payee")
    for seed in range(60):
        q = RuleAssistant._question(keys, random.Random(seed))
        assert "What is it?" not in q and q.endswith("?"), q


def test_a_steer_back_before_a_fresh_start_is_a_whole_sentence():
    """Seen on seed 7: "As for the plan upgrade, The receipt for today's prorated charge ..." (a
    steer-back ending in a comma before content that starts afresh with its capital)."""
    for key in ("back_to_topic", "back_to_task", "resume_topic"):
        for lead in P.bank("assistant", key):
            assert lead.rstrip()[-1:] in ".?!", (key, lead)


def test_a_corrected_label_in_the_plural_takes_are():
    """Seen on seed 7: "The record types is medication history and allergy list now"."""
    for seed in range(40):
        said = P.pick(random.Random(seed), "assistant", "recover_correction", label="record types",
                      be=P.be_for("record types"), old="visit notes", new="lab results")
        assert " types is " not in said and not grammar_issues(said), said
    assert P.be_for("email address") == "is" and P.be_for("last four digits") == "are"


def test_a_wrap_up_question_is_one_a_done_caller_answers_no():
    """The caller who is done says "No, that's all"; a wrap-up asked the other way round ("Does
    that cover what you called about?") drew "No, that's all for today." (two hand reads)."""
    from bargein.generators.plan_state import question_kind

    wraps = list(P.bank("assistant", "wrap"))
    para = [e for e in P.bank("assistant", "paraphrase") if "anything else" in e["match"]]
    for q in wraps + [w for e in para for w in e["say"]]:
        assert question_kind(q) in ("no", "open", "done"), q     # "done": "No, that's everything"
        assert not re.search(r"\b(?:is that|was that) (?:everything|all)\b|\bcover\b", q, re.I), q
