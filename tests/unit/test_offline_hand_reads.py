"""Defects of the offline agents found by independent hand-reads of the fifth shift (1.8% of
points), each checked at its cause: a nod after a question heard whole, impatient cut-ins in a
row, "that's settled" after "I'm not sure", a credit union offering "a detail from your last
bill", pushback on a service window the business gives, and a fact's key read out as a noun in
a question ("What is the income change?")."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.generators.assistant_sim import RuleAssistant
from bargein.generators.planner import RulePlanner
from bargein.generators.planner_cut import place_cut
from doubles.offline_calls import run, scenario_batch  # noqa: E402
from bargein.records import INTERRUPTION_TYPES, Conversation, Scenario


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(40, 4242, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def convs(scenarios) -> list[Conversation]:
    """Every scenario with a caller who cuts in often (more points to look at)."""
    return [run(s.with_(intent=s.intent.with_(interruption_rate=0.6, id=""), id=""), n)
            for n, s in enumerate(scenarios)]


# ---- a question heard whole is answered, not nodded at ---------------------------------------
def test_a_nod_never_lands_after_a_question_heard_whole():
    text = ("Now, on with the upgrade. Could I get your loyalty number? It begins with M A, "
            "and it's on the back of your card or in the app.")
    start = text.index("Could")
    for seed in range(40):
        k = place_cut(text, start, random.Random(seed).random(), random.Random(seed),
                      at_boundary=True)
        heard = P.prefix_words(text, k) if k else ""
        assert k is None or "?" not in heard[start:], heard


def test_no_filler_in_the_corpus_follows_a_heard_question(convs):
    # ("Where was I? Right." is the agent's own resume lead, not a question to the caller)
    bad = [(c.id, u.index, m.heard_text[-60:]) for c in convs for m, u in c.interruptions
           if m.interruption.type == "filler"
           and "?" in m.heard_text.replace("Where was I?", "")]
    assert not bad, bad[:5]
    assert sum(m.interruption.type == "filler" for c in convs for m, _ in c.interruptions) >= 10


# ---- a hurried caller skips once, then lets the agent talk -----------------------------------
def test_impatient_cut_ins_do_not_come_in_runs(scenarios):
    """Seed 7 before the fix: one call cut in 'skip ahead' at messages 6, 10, 12 and 16."""
    hurried = [s.with_(intent=s.intent.with_(interruption_rate=0.65, id="",
                                             interruption_probs={**{t: 0.02 for t in s.intent.interruption_probs},
                                                                 "impatient": 0.9}), id="")
               for s in scenarios[:25]]
    total = 0
    for n, s in enumerate(hurried):
        c = run(s, n)
        cuts = [(k, p.type) for k, p in enumerate(c.plan) if p.interrupt]
        imp = [k for k, t in cuts if t == "impatient"]
        total += len(imp)
        assert len(imp) <= 3, (c.id, cuts)
        for (i, a), (j, b) in zip(cuts, cuts[1:]):
            assert not (a == b == "impatient" and j - i < 5), (c.id, cuts)
    assert total >= 25                  # the hurried callers still cut in impatiently


# ---- "I'm not completely sure" is not acknowledged as settled --------------------------------
_SETTLED = re.compile(r"\b(?:settled|sorted|that's all I need|that part is done|step done|"
                      r"that's everything|that's great|wonderful|perfect)\b", re.I)
_UNSURE_REPLY = re.compile(r"\b(?:not (?:completely )?sure|have to check|don't remember|"
                           r"can't say for certain)\b", re.I)


def test_an_unsure_answer_is_not_acknowledged_as_settled(scenarios):
    seen = 0
    for n, s in enumerate(scenarios):
        c = run(s, 1000 + n)
        for a, b in zip(c.messages, c.messages[1:]):
            if a.role == "user" and a.interruption is None and _UNSURE_REPLY.search(a.text) \
                    and b.role == "assistant" and a.index > 0 \
                    and c.messages[a.index - 1].interruption is None:
                seen += 1
                first = re.split(r"(?<=[.!?])\s", b.text)[:2]
                assert not _SETTLED.search(" ".join(first)), (c.id, a.index, a.text, b.text[:120])
    assert seen >= 1


def test_the_agent_takes_an_unsure_answer_as_open(scenarios):
    """The round after a reply "Hmm, I'm not completely sure.": its acknowledgement is one of
    the unsure ones and no "that's settled, moving on" lead follows it."""
    scn = scenarios[0]
    planner, rng = RulePlanner(scn), random.Random(3)
    st = planner.new_state(rng)
    first = planner.plan(st, rng, frozenset(INTERRUPTION_TYPES))    # a round without a cut
    said = first.model_copy(update={"user_action": "choose",
                                    "user_facts": {"reply": "Hmm, I'm not completely sure."}})
    planner.apply(st, said, first.unit.text or "Is there anything else I should know?", None, rng)
    nxt = planner.plan(st, rng, frozenset(INTERRUPTION_TYPES))
    assert nxt.ack.get("kind") == "unknown"
    unsure = set(P.bank("assistant", "ack_unsure"))
    leads = set(P.bank("assistant", "lead_on"))
    for seed in range(20):
        turn = RuleAssistant(scn).normal(nxt.model_copy(update={"stage_lead": True}),
                                         random.Random(seed))
        assert turn.acknowledgement in unsure, turn.acknowledgement
        assert not any(lead in turn.acknowledgement for lead in leads)


# ---- an alternative the business has --------------------------------------------------------
@pytest.mark.parametrize("domain", ["financial_services", "education", "government", "ecommerce",
                                    "travel", "professional_services", "healthcare", "saas"])
def test_only_a_business_that_bills_offers_a_detail_from_the_last_bill(domain):
    """Seen: a credit union offering to "check a detail from your last bill"."""
    texts = [G.recover_pushback(random.Random(seed), "requirement", "your date of birth",
                                domain=domain) for seed in range(300)]
    assert not [t for t in texts if re.search(r"\bbills?\b", t)]


def test_a_telecom_and_a_bank_keep_their_own_record_checks():
    tel = [G.recover_pushback(random.Random(s), "requirement", "your date of birth", domain="telecom")
           for s in range(300)]
    bank = [G.recover_pushback(random.Random(s), "requirement", "your date of birth",
                               domain="financial_services") for s in range(300)]
    assert any("last bill" in t for t in tel)
    assert any("last statement" in t for t in bank)


# ---- a service window is not a rule to push back on ------------------------------------------
def test_a_pickup_window_is_no_object_to_push_back_on():
    """Seen: "Sorry, I can't go along with a two-hour pickup window" against the courier's
    courtesy of emailing one."""
    text = ("The carrier will collect it from 8285 Thornton St, Cleveland. They'll email a "
            "two-hour pickup window the evening before, and you only need to leave it somewhere "
            "they can reach.")
    found = [o.phrase for o in G.objects_in(text, G.PUSHBACK_KINDS)]
    assert not [f for f in found if "window" in f], found


def test_how_long_a_referral_stays_valid_is_no_object_to_push_back_on():
    """Hand read of seed 6262: "The referral stays valid for ninety days" -- "Wait, ninety
    days? That doesn't work for me." (what the caller was given lasts: a favour, not a rule)."""
    text = ("Dr. Payne has approved it. The referral stays valid for ninety days, so there's "
            "plenty of time to book.")
    assert not [o for o in G.objects_in(text, G.PUSHBACK_KINDS) if "ninety" in o.phrase]


def test_a_window_the_caller_must_act_within_still_is():
    text = "Changes must be made within the 24-hour window before departure, and not after it."
    assert [o for o in G.objects_in(text, G.PUSHBACK_KINDS) if "window" in o.phrase]


def test_a_minimum_fee_is_not_the_fee_a_caller_pays():
    """Hand read of seed 5151: "The fee runs roughly one percent, at least 75 dollars" on an
    $18,500 garage, then "75 dollars, seriously?" and "75 dollars is what this costs"."""
    text = ("We base the permit fee on that estimated cost. The fee runs roughly one percent, at "
            "least 75 dollars, and it's paid after the plans are approved.")
    assert not [o for o in G.objects_in(text, G.PUSHBACK_KINDS) if "75" in o.phrase]
    assert [o for o in G.objects_in("There's a 75 dollar change fee on this fare.", G.PUSHBACK_KINDS)
            if "75" in o.phrase]


def test_the_life_of_a_link_is_not_a_wait():
    """Hand read of seed 5151: "Since it only works for fifteen minutes, ..." answered "I can't
    shorten the fifteen minutes myself" (as if it were a wait to sit out)."""
    heard = ("I've sent a one-time sign-in link to your email. Since it only works for fifteen "
             "minutes, it's")
    for seed in range(40):
        out = G.recover_pushback(random.Random(seed), "policy", "fifteen minutes", heard=heard)
        assert "shorten" not in out and "speed it up" not in out and "wait of" not in out, out
    waits = {G.recover_pushback(random.Random(s), "policy", "ten business days",
                                heard="The refund takes ten business days to arrive.") for s in range(40)}
    assert any("shorten" in w or "speed it up" in w or "wait of" in w or "cut for" in w for w in waits)


def test_the_steps_own_action_is_never_trimmed_for_length():
    """Hand read of seed 5151: a lost-card call closed "resolved" with the card never blocked
    ("I'm blocking the card ending in 4421 right now" trimmed for length)."""
    from bargein.generators.planner_text import _essential
    from bargein.records import Unit

    for text in ("I'm blocking the card ending in 4421 right now. Once it's blocked, it can't be "
                 "used anywhere.", "Understood, I'll refund the unused ticket in full to your "
                 "original payment method."):
        assert _essential(Unit(kind="inform", stage="block_card", text=text)), text
    for text in ("Once it's signed, I'll submit the petition.",
                 "The card will have a new number, but your PIN stays the same."):
        assert not _essential(Unit(kind="inform", stage="block_card", text=text)), text


def test_do_you_remember_is_answered_by_the_fact():
    """Hand read of seed 5151: "Do you remember the last place you used the card?" -- "Yeah,
    that's correct. Right, at a grocery store yesterday."
    """
    from bargein.generators.user_sim import RuleUser, UserPlan

    up = UserPlan(action="answer", facts={"last_used": "at a grocery store yesterday"})
    for seed in range(30):
        said = RuleUser().reply(up, random.Random(seed), last="Do you remember the last place you "
                                "used the card? That helps me find the right records.")
        assert "correct" not in said.lower() and "grocery store" in said, said


# ---- a value is asked for with a question, not by its key read out as a noun ------------------
_KEY_NOUNS = {"income_change": "income change", "cancel_reason": "cancel reason",
              "change_type": "change type", "entity_type": "entity type",
              "insurance_status": "insurance status", "monthly_transactions": "monthly transactions",
              "lost_device": "reason for the reset", "annual_income": "annual income"}


@pytest.mark.parametrize("key", sorted(_KEY_NOUNS))
def test_a_value_is_asked_for_in_words_a_person_asks_with(key):
    """Seen: "What is the income change?" -- the fact key read out as a noun."""
    for seed in range(20):
        q = RuleAssistant._question((key,), random.Random(seed))
        assert _KEY_NOUNS[key] not in q.lower() and q.endswith("?"), q
    pair = RuleAssistant._question(("full_name", key), random.Random(0))
    assert "full name" in pair and _KEY_NOUNS[key] not in pair.lower() and " And " in pair, pair


def test_no_question_in_the_corpus_names_a_key_as_a_noun(convs):
    qs = [(c.id, m.index, s) for c in convs for m in c.messages if m.role == "assistant"
          for s in re.findall(r"[^.?!]*\?", m.text)
          if any(f"the {lab}" in s.lower() for lab in _KEY_NOUNS.values())]
    assert not qs, qs[:3]


# ---- the type mix: an objection drawn where there is nothing to object to is kept --------------
def test_a_pushback_drawn_on_a_turn_with_nothing_to_object_to_waits_for_one(scenarios):
    """Seed 7 before: 209 of 242 pushback draws fell on turns with no fee, requirement or rule
    and were re-planned as other types, so a skeptical caller's pushbacks went to nods and
    questions (realised pushback 14% against IHBench Appendix A's 24.5%, normal 31%)."""
    from bargein.generators.plan_state import Unit

    s = scenarios[0]
    probs = {t: 0.01 for t in s.intent.interruption_probs}
    probs["pushback"] = 0.95
    s = s.with_(intent=s.intent.with_(interruption_probs=probs, interruption_rate=0.9, id=""), id="")
    planner = RulePlanner(s)
    st = planner.new_state(random.Random(0))
    st.round, st.n_messages = 3, 6
    plain = Unit(kind="inform", stage=st.stage, text="Let me pull that up for you now, it only "
                 "takes a moment while the system loads everything.")
    fee = Unit(kind="inform", stage=st.stage, text="Just so you know, there is a $75 change fee on "
               "this fare, and it is charged when the change goes through today.")
    drawn = [planner._interruption(st, plain, random.Random(seed))[0] for seed in range(10)]
    assert "pushback" not in drawn              # nothing in it to object to
    assert st.held.get("pushback") == 1
    for seed in range(5):                       # the next turn with a fee takes the objection
        probe = dataclasses.replace(st, held=dict(st.held))
        assert planner._interruption(probe, fee, random.Random(seed))[0] == "pushback"
        assert not probe.held.get("pushback")


def test_a_question_in_its_own_words_is_answered_in_full():
    """Seed 7: "Roughly when did you last sign in successfully, and about what year was the
    workspace first created?" -- "2022." and then "Our records show a last sign-in on ...,
    so that matches" (the sign-in was never asked of the caller's plan)."""
    from bargein.generators.plan_state import asked_keys

    text = ("I'll ask three quick questions about the account. Roughly when did you last sign in "
            "successfully, and about what year was the workspace first created?")
    assert asked_keys(text, ("last_login_date", "account_created_year", "lost_device")) == \
        ("last_login_date", "account_created_year")


# ---- hand-read of seed 4242 (this shift) ------------------------------------------------------
def test_an_impatient_cut_in_says_please_once():
    """conv-84f79434555e8d83 #11: "Okay, sure, just the short version, please. Move on, please." """
    from bargein.generators.user_sim import impatient_line

    heard = "If you've changed insurers recently, let me know, because"
    lines = [impatient_line(heard, (), random.Random(s)) for s in range(400)]
    for x in lines:
        words = re.findall(r"[a-z']+", x.lower())
        assert words.count("please") <= 1 and words.count("skip") <= 1, x
    assert sum("please" in x.lower() for x in lines) >= 20


def test_no_detail_of_the_callers_own_cuts_into_the_alternative_they_asked_for(scenarios):
    """conv-76c9e9efbb3a080a #21: "Is there really nothing else?" -- "What I can do is this: we |"
    -- "Sorry, before you go on, my email is ...". """
    from bargein.generators.plan_state import Unit

    planner = RulePlanner(scenarios[0])
    st = planner.new_state(random.Random(0))
    st.round, st.n_messages = 4, 8
    alt = Unit(kind="inform", stage=st.stage, purpose="deescalate",
               text="I understand. What I can do is this: we could check a detail from your last "
                    "bill instead. Would that work for you?")
    assert "normal" not in planner._feasible(st, alt)


def test_a_slip_is_caught_before_the_agent_reads_out_the_right_value():
    """conv-76c9e9efbb3a080a #13 (seed 4242): the agent said "(716) 527-8218", and the caller
    then cut in "the port number is wrong. It's (716) 527-8218"."""
    from bargein.generators.user_sim import RuleUser, UserPlan

    message = ("I'm checking whether (716) 527-8218 can move over from Veridian Wireless. Please "
               "don't cancel your old service yet, because cancelling first can lose the number.")
    up = UserPlan(action="interrupt", interrupt=True, type="correction", cut_fraction=0.6,
                  detail={"key": "port_number", "label": "port number",
                          "old": "(716) 527-8281", "new": "(716) 527-8218"})
    for seed in range(10):
        out = RuleUser(values=("(716) 527-8218", "(716) 527-8281")).interject(
            up, message, 0, ("Can I take the number you're porting?", "It's (716) 527-8281.",
                             "Great, (716) 527-8281 for the port number."), random.Random(seed))
        assert "527-8218" not in out.heard and "527-8218" in out.interjection, out.heard


# ---- hand-read of seed 5151 (this shift) ------------------------------------------------------
def test_a_fee_whose_amount_was_not_heard_is_not_called_too_much():
    """conv-bcd57f3eb11ddd75 #15: "The permit fee |" -- "the permit fee? That's a lot more than I
    expected" (the amount came after the cut)."""
    from bargein.verify.objects import find_objects

    text = "The permit fee is based on that estimated cost, and you pay it once the plans are approved."
    obj = next(o for o in find_objects(text) if o.phrase.lower() == "the permit fee")
    lines = [G.pushback(random.Random(s), obj, text) for s in range(200)]
    assert not [x for x in lines if G._SIZE_JUDGED.search(x)]
    priced = next(o for o in find_objects("There's a $75 change fee on this fare.") if "$75" in o.phrase)
    assert any(G._SIZE_JUDGED.search(G.pushback(random.Random(s), priced, "There's a $75 change fee "
                                                "on this fare.")) for s in range(200))


def test_a_reason_for_cancelling_reads_as_the_caller_says_it():
    """conv-d3269c8a330f1614 #18: "Of course, it's no longer needs it." (and the agent's "You
    mentioned you no longer needs it")."""
    from bargein.generators.catalogue_loader import load_catalogue

    cat = load_catalogue()
    goal = cat.domains["ecommerce"].goals["cancel_order_before_shipping"]
    for option in goal.facts["cancel_reason"].params["options"]:
        said = P.clause(option)
        assert said and said.startswith("I "), option
        assert not re.search(r"\bI \w+s\b", said), said     # "I no longer needs it"


# ---- hand read of seed 4242 (2026-11-25): reasons that would not be true ------------------------
def test_a_detail_another_company_holds_is_no_identity_check_to_push_back_on():
    """Seen: "I'm only matching your account number against what's already on file" for the
    account number with the old carrier, which the port needs and this business never held."""
    text = ("The PIN is different from your voicemail PIN, and it's generated in their app. Could "
            "you read me two things from Veridian Wireless: your account number with them and the "
            "six-digit transfer PIN?")
    assert not [o for o in G.objects_in(text, G.PUSHBACK_KINDS) if o.kind == "requirement"]
    own = ("For security, can you also read me the account number? It's ten digits and printed "
           "at the top right of your monthly bill.")
    assert [o.phrase for o in G.objects_in(own, G.PUSHBACK_KINDS)] == ["the account number"]


def test_a_county_fee_is_not_set_by_pricing_rules_nor_avoided_by_a_cheaper_option():
    """Seen: a registration renewal fee answered with "I'm able to look for a cheaper option that
    avoids it" and "set by our pricing rules"."""
    for seed in range(60):
        text = G.recover_pushback(random.Random(seed), "fee", "$48.84", domain="government")
        assert not re.search(r"cheaper option|pricing rules|terms on your account|credit on the "
                             r"account", text), text
    # the same draws for a mobile plan still may offer a cheaper option
    assert any("cheaper option" in G.recover_pushback(random.Random(s), "fee", "$48.84",
                                                      domain="telecom") for s in range(60))


def test_the_number_behind_its_last_four_digits_is_not_what_was_asked_for():
    """Seen in a hand read of seed 9001: "nobody asked me for my Social Security number last time"
    and a gold "We only use your Social Security number ..." when only its last four digits were
    asked for."""
    text = ("And to finish verifying, your date of birth and the last four digits of your Social "
            "Security number?")
    found = [o.phrase for o in G.objects_in(text, ("requirement",))]
    assert "the last four digits" in found and "your Social Security number" not in found, found


def test_asked_to_run_a_test_and_say_what_they_see_the_caller_reports_it():
    """Seen in a hand read of seed 9001: "Could you ... run a speed test ... and tell me what you
    see?" answered "Yes, yes, it is. Go on." """
    from bargein.generators.planner_text import _task_asked

    asked = ("Your gateway is back online and I'm seeing a clean signal. Could you open a web page "
             "or run a speed test on one of your devices and tell me what you see?")
    assert _task_asked(asked) == "report"
    assert _task_asked("Is that the right address?") == ""
    for line in P.bank("user", "task_done_report"):
        assert not re.match(r"(?:yes|yeah|yep)\b", line, re.I), line


def test_no_read_back_gives_the_caller_a_value_they_never_said(convs):
    """Seen in hand reads of seeds 31415, 23 and 11: "So that's Canada, leaving ... and
    returning Monday, October 6" (no return date said), "So that's Keller, Warren and Powell,
    and you're David Adams" (no business name), "So you'd like visit notes ... sent to Summit
    Cardiology Group" (nothing said of either). Judged by the verifier's check, which reads the
    conversation only, on the raw conversations (before any repair)."""
    from bargein.verify import run_checks

    bad = [(c.id, v.issue) for c in convs for v in run_checks(c) if v.check == "presupposed_value"]
    assert not bad, bad[:3]


def test_a_hidden_fact_is_told_once_not_again_as_a_side_remark(convs):
    """Seen in a hand read of seed 27183: "Hold on, I'm an international student." and, three
    turns later, "Oh, by the way, I'm an international student and need to stay enrolled
    full-time for visa reasons." (a side remark of the bank and the caller's hidden fact)."""
    from bargein.verify.text import content_words

    glue = content_words("oh by the way sorry I should mention just so you know also hold on "
                         "wait one thing quick need")
    # a date shares its month and year with any other date ("Sunday, August 3, 2025?" asked
    # back is not "a gift ... on Wednesday, August 6, 2025" told again)
    calendar = content_words("january february march april may june july august september "
                             "october november december monday tuesday wednesday thursday "
                             "friday saturday sunday")
    for c in convs:
        # the caller's own details are not the fact told again: "Barbara Kane" shares a surname
        # with the caller, whose email "heather.kane@gmail.com" is read out with their account
        own = content_words(" ".join(f.value for f in c.scenario.kb.user_facts
                                     if f.kind in ("name", "email", "work_email")))
        # nor a detail stated by its label: "the new address is 582 Carver Ln" tells the
        # new_address fact, not "is moving to a new place ... not at this address much longer"
        own |= content_words(" ".join(P.label(f.key) for f in c.scenario.kb.user_facts))
        for f in c.scenario.intent.hidden_facts:
            theirs = {w for w in content_words(f.value) - glue - calendar - own if not w.isdigit()}
            told = [m.index for m in c.messages if m.role == "user"
                    and len((content_words(m.text) - glue) & theirs) >= 2]
            assert len(told) <= 1 or len(theirs) < 2, (c.id, f.value, told)
