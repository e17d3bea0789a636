"""Rules of the offline agents found by hand-reads of the third shift, each checked on its own:
a call reaches its goal (it ends unfinished only at the hard cap), side questions do not come in
runs, a change is not made before the caller says yes, a constraint on a choice already made is
not raised, an airline has no monthly bill, and three checks that discarded good conversations
(a refused confirmation code, a failure branch, the caller's own detail named)."""

from __future__ import annotations

import random
import re

import pytest

from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.generators.planner_text import _ACTS, _essential
from bargein.generators.plan_state import ConversationState, Unit
from bargein.generators.scenarios import generate_scenarios
from doubles.offline_calls import run, scenario_batch  # noqa: E402
from bargein.records import Conversation, Scenario


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(30, 4242, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def busy(scenarios) -> list[Conversation]:
    """Every scenario with a caller who cuts in often (the calls that used to hit the cap)."""
    out = []
    for n, s in enumerate(scenarios):
        hot = s.with_(intent=s.intent.with_(interruption_rate=0.6, id=""), id="")
        out.append(run(hot, n))
    return out


def test_a_busy_call_still_reaches_its_goal(busy):
    # seed 7 before the fix: 5 of 50 calls ended at the turn cap with the goal not reached
    unfinished = [c.id for c in busy if c.outcome is None]
    assert not unfinished, unfinished
    assert sum(len(c.interruptions) for c in busy) >= 4 * len(busy)   # still busy calls


def test_side_questions_do_not_come_in_runs(busy):
    for c in busy:
        types = [m.interruption.type for m in c.messages if m.interruption]
        assert types.count("topic_switch") <= 2, (c.id, types)
        # never a side question cutting into the answer to the one before
        rounds = [(m.index, m.interruption.type) for m in c.messages if m.interruption]
        for (i, a), (j, b) in zip(rounds, rounds[1:]):
            assert not (a == b == "topic_switch" and j == i + 2), (c.id, i, j)


def test_the_agent_asks_before_it_makes_a_quoted_change(busy):
    """After a price, "I'm applying the upgrade now" comes only after a yes to a question."""
    for c in busy:
        priced = False
        for k, m in enumerate(c.messages):
            if m.role != "assistant":
                continue
            text = m.spoken_text
            if re.search(r"[$]\s?\d|\b\d+ dollars\b", text) and "?" not in text:
                priced = True
            if priced and any(_ACTS.match(text[a:]) for a in [0] + [x.end() for x in
                                                                  re.finditer(r"[.!?]\s+", text)]):
                prev_q = next((p for p in reversed(c.messages[:k]) if p.role == "assistant"), None)
                assert prev_q is not None and prev_q.spoken_text.rstrip().endswith("?"), (c.id, k)
                priced = False


def test_acting_turns_are_recognised_and_never_trimmed():
    assert _ACTS.match("I'm applying the upgrade now. The new features turn on immediately.")
    assert _ACTS.match("Good. I'm setting the change to take effect on Sunday, December 7, 2025.")
    assert _ACTS.match("The change is going through now.")
    assert not _ACTS.match("I'm sending a six-digit code to your email now.")
    assert not _ACTS.match("If you'd like, I'm happy to email you the prorated amount.")
    assert _essential(Unit(kind="inform", stage="s", text="I'm applying the upgrade now."))


def test_a_constraint_on_a_choice_already_made_is_not_raised(scenarios):
    scn = next(s for s in scenarios if s.domain.name == "travel")
    st = ConversationState(scenario=scn, target_messages=30)
    pair = {"user": "Quick thing, I'd rather not fly overnight.", "assistant": "x",
            "until": r"\bI'm holding\b"}
    assert st._fits_goal(pair)
    st.said = "On Monday, flight MA 1234 has seats. I'm holding the new flight for you."
    assert not st._fits_goal(pair)
    # the packaged flight-choice pairs carry such a condition
    bank = P.bank("pairs", "normal_constraint.travel")
    overnight = next(p for p in bank if "overnight" in p["user"])
    assert re.search(overnight["until"], "I'm holding the new flight for you.")
    assert re.search(overnight["until"], "You're now on flight MA 1234 on Monday.")


def test_a_hidden_fact_past_its_until_is_not_volunteered(scenarios):
    from bargein.generators.catalogue_loader import load_catalogue
    goal = load_catalogue().domains["travel"].goals["change_flight_date"]
    wedding = next(h for h in goal.hidden if h.key == "connecting_event")
    assert wedding.until and re.search(wedding.until, "You're now on flight MA 2020 on Friday.")
    scn = next((s for s in scenarios if any(h.key == "connecting_event"
                                            for h in s.intent.hidden_facts)), None)
    if scn is None:
        pytest.skip("no scenario of this seed has the wedding")
    st = ConversationState(scenario=scn, target_messages=30)
    assert "connecting_event" in st.volunteerable()
    st.said = "I'm holding the new flight for you."
    assert "connecting_event" not in st.volunteerable()


def test_hidden_facts_only_reach_goals_they_fit():
    from bargein.generators.catalogue_loader import load_catalogue
    doms = load_catalogue().domains
    def fits(dom: str, goal: str, key: str) -> bool:
        g = doms[dom].goals[goal]
        text = " ".join([g.goal.name, g.goal.description,
                         *(tp for st in g.workflow.stages for tp in st.talking_points)])
        h = next(h for h in g.hidden if h.key == key)
        return not h.when or re.search(h.when, text, re.I) is not None
    assert not fits("healthcare", "request_medical_records", "work_schedule")
    assert fits("healthcare", "reschedule_appointment", "work_schedule")
    assert not fits("subscription_media", "add_family_member", "budget_pressure")
    assert not fits("saas", "recover_admin_access", "procurement_rule")
    assert not fits("telecom", "port_in_number", "competitor_offer")
    assert fits("telecom", "upgrade_mobile_plan", "competitor_offer")


def test_an_airline_offers_no_monthly_bill_as_identity_check():
    for i in range(40):
        text = G.recover_pushback(random.Random(i), "requirement", "my confirmation code",
                                  domain="travel")
        assert not re.search(r"\bbill\b|activity on the account|security questions", text), text
    # other domains keep them
    seen = {G.recover_pushback(random.Random(i), "requirement", "my account number",
                               domain="telecom") for i in range(60)}
    assert any("bill" in t or "activity on the account" in t for t in seen)


# ---- checks that discarded good conversations --------------------------------------------------
def _conv(scn: Scenario, texts: list[tuple[str, str]], cut: dict[int, str] | None = None,
          stages: list[str | None] | None = None) -> Conversation:
    from bargein.records.conversation import Interruption, Message
    msgs = []
    for i, (role, text) in enumerate(texts):
        heard = (cut or {}).get(i)
        inter = None
        if heard is not None:
            inter = Interruption(type="pushback", cut_word_index=len(heard.split()),
                                 cut_char_offset=len(heard), heard_text=heard, overlap_ms=300,
                                 interjection=texts[i + 1][1])
        msgs.append(Message(index=i, role=role, text=text, heard_text=heard, interruption=inter,
                            stage=(stages or [None] * len(texts))[i]))
    return Conversation(scenario=scn, messages=tuple(msgs), outcome="resolved")


def test_a_refused_code_the_agent_asked_for_is_no_system_value(scenarios):
    from bargein.verify.quality import user_states_system_value
    # a goal whose first stage asks the caller for the code (the loyalty upgrade finds the
    # booking from the loyalty number: the code is the system's there)
    scn = next((s for s in scenarios if s.domain.name == "travel"
                and s.goal.name != "redeem_loyalty_upgrade"), None)
    if scn is None:
        pytest.skip("no booking-code travel call in this seed")
    scn = scn.with_(intent=scn.intent.with_(provides=tuple(
        k for k in scn.intent.provides if k != "confirmation_code"), id=""), id="")
    code = scn.kb.fact("confirmation_code").value
    asked = "Could I get your six-character confirmation code and the last name on the booking?"
    conv = _conv(scn, [
        ("assistant", f"Thanks for calling. {asked} The code is at the top of your email."),
        ("user", "I'd rather not give out my six-character confirmation code over the phone."),
        ("assistant", "That's fair. I can look the booking up from the number you're calling from."),
        ("user", "Okay, do that."),
        ("assistant", f"I have booking {code} for you. Let me read the itinerary back."),
    ], cut={0: "Thanks for calling. Could I get your six-character confirmation code"})
    assert not user_states_system_value(conv)
    # a value the records state first and the caller then "corrects" is still the defect
    told = _conv(scn, [
        ("assistant", f"I have booking {code} here, departing on Monday."),
        ("user", "No, that's wrong, the confirmation code is not that, it's ABCDEF."),
        ("assistant", "Let me check that."),
    ])
    assert user_states_system_value(told)


def test_a_stage_on_a_failure_branch_is_not_owed_after_a_skip(scenarios):
    from bargein.verify.coherence import skipped_stages
    scn = next((s for s in scenarios if s.goal.name == "troubleshoot_home_internet"), None)
    if scn is None:
        from bargein.generators.catalogue_loader import load_catalogue  # noqa: F401
        pytest.skip("seed has no troubleshooting call")
    names = scn.kb.workflow.stage_names
    before = names[:names.index("verify_fix") + 1]
    texts, stages = [], []
    for n in before:
        texts += [("assistant", f"Now the {n} step."), ("user", "Okay.")]
        stages += [n, n]
    conv = _conv(scn, texts[:-1], stages=stages[:-1])
    # verify_fix's "next" ends the call (service restored); the technician visit and its
    # confirmation are the failure branch
    assert skipped_stages(conv, "verify_fix") == []
    # a stage the main path still leads to is owed
    owed = []
    for other in scenarios:                 # a call that stopped after its first stage
        first = other.kb.workflow.stage_names[0]
        owed += skipped_stages(_conv(other, [("assistant", "Hello there."), ("user", "Hi."),
                                             ("assistant", "Bye now.")],
                                     stages=[first, first, first]), first)
    assert owed


def test_a_caller_may_name_their_own_detail(scenarios):
    from bargein.records.conversation import Message
    from bargein.verify.leakage import find_leaks
    scn = next((s for s in scenarios if "card_last4" in s.intent.provides), None)
    if scn is None:
        pytest.skip("no scenario of this seed has the caller give card digits")
    conv = _conv(scn, [("assistant", "What's the email on the account?"), ("user", "x")])
    msg = Message(index=1, role="user", text="Oh, and the last four digits of my card are 2328.")
    assert not find_leaks(msg, "What's the email on the account?", conv)


def test_a_backchannel_after_a_number_and_a_comma_is_not_inside_a_quantity():
    from bargein.verify.discourse import _MULTI
    qty = dict(_MULTI)["quantity"]
    assert not qty.search("upgraded on flight MA 2692, seat 3C")
    assert qty.search("it covers 2 seats on the plan")
    assert qty.search("within 3,500 dollars of it")


def test_an_offer_the_caller_turned_down_is_not_made_again():
    from bargein.generators.planner_text import _drop_declined, _offered_words
    words = _offered_words("You qualify for a full refund. Before I do that, would you rather "
                           "keep the membership on a quarterly plan instead?")
    assert words == {"quarterly", "membership"} or "quarterly" in words
    later = ("You can either cancel it outright, or move to quarterly billing and keep access. "
             "Quarterly costs a little more over a year. If you cancel, your lists are kept.")
    assert _drop_declined(later, words) == "If you cancel, your lists are kept."
    assert _drop_declined("Your refund goes to the card.", words) == "Your refund goes to the card."
    assert not _offered_words("I've noted the new address. What's the postcode?")


def test_a_backchannel_never_nods_again_at_the_rest_of_a_nodded_sentence(busy):
    for c in busy:
        prev = None
        for m in c.messages:
            if m.role != "assistant":
                continue
            t = m.interruption.type if m.interruption else None
            assert not (prev == "filler" and t == "filler"), (c.id, m.index)
            prev = t


def test_the_caller_does_what_the_turn_asks_and_says_so():
    """'read it to me when you see it' -- 'Thank you, that's clear' left the code unread and
    the call went on verified; 'let me know once you've signed' -- 'Right, I hadn't realised
    that' and the next turn said 'I've received the signed form' (hand-read, seed 8675)."""
    from bargein.generators.planner_text import _task_asked
    assert _task_asked("It can take up to a minute to arrive, so just read it to me when you "
                       "see it.") == "code"
    assert _task_asked("The form lists what's shared. Let me know once you've signed and I'll "
                       "check it came through.") == "sign"
    assert _task_asked("Tell me once you've entered the new card.") == "done"
    assert _task_asked("Could you read me the code when it arrives?") == ""   # a question
    assert _task_asked("I'm sending a secure link. It opens the billing page.") == ""
    for key in ("task_done_code", "task_done_sign", "task_done_done"):
        assert P.bank("user", key)


def test_a_resume_lead_does_not_repeat_the_contents_first_word():
    from bargein.generators.assistant_sim import _resume
    for i in range(200):
        lead, content = _resume(random.Random(i), "So that's 2 copies by electronic PDF.")
        said = f"{lead} {content}".lower()
        assert "so, so " not in said and "so so " not in said, said


def test_side_remarks_reach_only_goals_they_fit():
    bank = {p["user"]: p for k in ("normal_constraint.travel", "normal_constraint.education")
            for p in P.bank("pairs", k)}
    dog = next(p for u, p in bank.items() if "service dog" in u)
    scholarship = next(p for u, p in bank.items() if "scholarship" in u)
    assert not re.search(dog["when"], "cancel_within_24_hours")     # a booking being cancelled
    assert re.search(dog["when"], "change_flight_date")
    assert not re.search(scholarship["when"], "order_official_transcript")
    from bargein.generators.catalogue_loader import load_catalogue
    goal = load_catalogue().domains["travel"].goals["cancel_within_24_hours"]
    text = " ".join([goal.goal.name, goal.goal.description,
                     *(tp for st in goal.workflow.stages for tp in st.talking_points)])
    assert not [h.key for h in goal.hidden if not h.when or re.search(h.when, text, re.I)]


def test_a_read_back_question_restarts_at_its_sentence_not_after_a_title():
    """'Heather Taylor on Friday, October 3, 2025. Is that the one ...?' resumed after 'Dr.'
    (hand-read, seed 8675)."""
    from bargein.generators.planner_cut import resume_text
    from bargein.records.plan import Recovery
    text = "I have your checkup with Dr. Ana Ruiz on Friday, May 2. Is that the one to move?"
    rec = Recovery(type="normal", message_index=1, planned_text=text, remainder="",
                   heard_text="I have your checkup with Dr. Ana Ruiz on Friday, May 2. Is that",
                   interjection="x", content_start=0)
    assert resume_text(text, rec) == text


def test_someone_elses_name_is_no_identity_detail_to_refuse(scenarios):
    """'I'm not comfortable giving out my family member over the phone' (seed 8675)."""
    from bargein.generators.planner_text import sensitive_key
    scn = scenarios[0]
    st = ConversationState(scenario=scn, target_messages=30)
    keys = {f.key: f for f in scn.kb.user_facts}
    fake = dict(keys)
    from bargein.records import UserFact
    fake["family_member"] = UserFact(key="family_member", value="Eric Anderson", kind="name")
    fake["member_number"] = UserFact(key="member_number", value="12345", kind="code")
    st.__class__ = type("S", (ConversationState,), {"facts": property(lambda self: fake)})
    assert not sensitive_key(st, "family_member")
    assert sensitive_key(st, "member_number")


def test_the_options_of_a_choice_are_not_skipped_by_impatience():
    from bargein.generators.planner_text import _OPTIONS
    assert _OPTIONS.search("You have two options. We can send a replacement, which ships "
                           "within three business days, or refund the $461.02 to your card.")
    assert _OPTIONS.search("You can either close the membership, or switch to monthly billing.")
    assert not _OPTIONS.search("I'll send the release form to your email; it takes two minutes.")


def test_an_accepted_fee_or_policy_alternative_is_carried_out():
    """'see whether there's a credit on the account' -- 'let's go with that' -- 'The payment
    went through' (seed 8675): every generic fee, policy and document alternative has the step
    that carries it out."""
    from bargein.generators.planner_text import alternative_step
    for kind in ("fee", "policy", "document"):
        for alt in P.bank("assistant", f"alternatives_{kind}"):
            step = alternative_step(f"What I can do is this: I could {alt}. Would that help?")
            assert step is not None, alt
            assert step["assistant"].strip() and step["user"].strip()


def test_an_accepted_identity_alternative_is_carried_out():
    """Hand read of seed 5151: "it's no trouble for me to confirm it with a recent transaction
    on the account instead" -- "Let's go with that" -- "Lovely, I'll sort that now. Could you
    read out the last four digits ...": every requirement alternative, generic or a line of
    business's own, has the step that carries it out."""
    from bargein.generators.planner_text import alternative_step
    keys = [k for k in P.bank_keys("assistant") if k.split(".")[0] == "alternatives_requirement"]
    assert len(keys) >= 10
    for key in keys:
        for alt in P.bank("assistant", key):
            step = alternative_step(f"If you'd prefer, I can {alt}. Would that work for you?")
            assert step is not None, (key, alt)
            assert step["assistant"].strip() and step["user"].strip()


def test_a_conditional_instruction_to_the_caller_is_not_skipped():
    """'If you haven't heard back by then, | file the formal appeal anyway' -- 'skip it' --
    'Anything else?' (seed 24601)."""
    from bargein.generators.planner_text import _CALLER_TASK
    assert _CALLER_TASK.search("If you haven't heard back by then, file the formal appeal anyway "
                               "to keep your rights.")
    assert not _CALLER_TASK.search("If you haven't chosen a car yet, I can pre-approve you.")


def test_a_clause_answer_is_not_acknowledged_as_a_thing_held():
    """'Thank you, I have for an online order this morning.' (seed 24601)"""
    from bargein.generators.assistant_sim import RuleAssistant
    from bargein.generators.catalogue_loader import load_catalogue  # noqa: F401
    import tempfile
    scn = generate_scenarios(1, 3, workdir=tempfile.mkdtemp(), progress=False).outputs[0]
    agent = RuleAssistant(scn)
    for i in range(40):
        ack = agent._ack({"kind": "fact", "key": "last_used", "value": "for an online order "
                          "this morning"}, random.Random(i))
        assert "for an online order" not in ack, ack


def test_a_constraint_is_not_raised_on_the_turn_that_presents_the_choice(scenarios):
    scn = next(s for s in scenarios if s.domain.name == "travel")
    st = ConversationState(scenario=scn, target_messages=30)
    bank = P.bank("pairs", "normal_constraint.travel")
    overnight = next(p for p in bank if "overnight" in p["user"])
    st.current = "The earliest option is flight MA 7232, departing at 1:10 PM."
    assert not st._fits_goal(overnight)


def test_a_label_inside_another_word_is_no_correction(scenarios):
    """'Oh, something else, I had another damaged order ...' was read as correcting the
    system-held 'damage' (two discards, seed 24601)."""
    from bargein.verify.quality import user_states_system_value
    import tempfile
    pool = scenarios + generate_scenarios(40, 7, workdir=tempfile.mkdtemp(), progress=False).outputs
    scn = next(s for s in pool if s.goal.name == "return_damaged_item")
    dmg = scn.kb.fact("damage").value          # the records state it first: held by the system
    conv = _conv(scn, [("assistant", f"I'm sorry the item arrived with {dmg}."),
                       ("user", "Oh, something else, I had another damaged order 7 months ago."),
                       ("assistant", "I've noted it.")])
    from bargein.verify.quality import held_keys
    assert "damage" in held_keys(conv)
    assert not [v for v in user_states_system_value(conv) if "'damage'" in v.issue]


def test_no_nod_right_after_a_question_heard_whole():
    """'Are you the patient, or are you calling on their behalf? |' -- 'Oh yeah.' and the
    question was never answered (seed 31337)."""
    from bargein.generators.planner_cut import place_cut
    text = ("I have the record here. Are you the patient, or are you calling on their behalf? If "
            "you're calling for someone else, I'll just check you're listed as a representative.")
    q_end = len(text[:text.index("behalf?") + len("behalf?")].split())
    for i in range(30):
        k = place_cut(text, 0, 0.45, random.Random(i), at_boundary=True)
        assert k != q_end, k


def test_a_caller_asks_to_hear_a_value_again_once_a_call(busy):
    for c in busy:
        n = sum(1 for p in c.plan if p.interrupt and p.type == "normal"
                and p.detail.get("variant") == "clarify")
        assert n <= 2, (c.id, n)


def test_a_check_the_agent_asks_is_answered_as_a_check_not_an_offer():
    """'Did I hear that correctly?' -- 'Yes please, that's what I want.' and 'Can I just check
    you're the contact of record?' -- 'Oh, yes, do that, please.' (seed 55555)."""
    from bargein.generators.plan_state import question_kind
    assert question_kind("Did I hear that correctly?") == "fact"
    assert question_kind("Can I just check you're the contact of record on this file?") == "fact"
    assert question_kind("Have I got that right?") == "fact"
    assert question_kind("Shall I go ahead and apply the upgrade?") == "offer"
    assert question_kind("Can I check whether you qualify for a waiver?") == "offer"
