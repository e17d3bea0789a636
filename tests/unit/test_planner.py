"""Round planner: cut placement, stage content, the workflow walk, type sampling, corrections."""

from __future__ import annotations

import inspect
import random
import re

from bargein.verify.objects import system_keys

import pytest

from bargein.generators import phrases as P
from bargein.generators.plan_state import (
    EDGE_WORDS, MAX_MESSAGES, MIN_MESSAGES, asked_keys, choose_option, stage_units,
)
from bargein.generators.planner_cut import place_cut
from bargein.generators.scenarios import generate_scenarios
from bargein.generators.llm_messages import user_messages as llm_messages
from bargein.generators.user_sim import RuleUser, UserPlan, user_plan
from doubles.offline_calls import run, scenario_batch  # noqa: E402
from bargein.records import Conversation, Scenario, UserIntent


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(24, 11, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def convs(scenarios) -> list[Conversation]:
    return [run(s, n) for n, s in enumerate(scenarios)]


def with_intent(scn: Scenario, **changes) -> Scenario:
    return scn.with_(intent=scn.intent.with_(**changes, id=""), id="")


# ---- cut placement ------------------------------------------------------------------------
def test_place_cut_stays_inside_the_content_away_from_both_ends():
    rng = random.Random(0)
    words = "one two three four five six seven eight nine ten eleven twelve thirteen".split()
    for _ in range(300):
        n = rng.randint(1, len(words))
        ack = " ".join(words[: rng.randint(0, 3)])
        content = " ".join(rng.choice(words) for _ in range(n))
        text = P.join(ack, content)
        start = len(ack) + 1 if ack else 0
        k = place_cut(text, start, rng.random(), rng)
        first = P.n_words(ack)
        if n < 2 * EDGE_WORDS:
            assert k is None
            continue
        assert k is not None and first + EDGE_WORDS <= k <= P.n_words(text) - EDGE_WORDS
        assert text.startswith(P.prefix_words(text, k))


def test_place_cut_prefers_mid_sentence_and_honours_min_word():
    text = "First part ends here. Then the second sentence goes on for a while longer."
    k = place_cut(text, 0, 0.2, random.Random(1))
    assert not P.prefix_words(text, k).endswith((".", ","))
    assert place_cut(text, 0, 0.0, random.Random(1), min_word=9) >= 9
    assert place_cut("too short to cut", 0, 0.5, random.Random(1)) is None


# ---- stage content ------------------------------------------------------------------------
def test_asked_keys_finds_labels_and_synonyms_in_order():
    q = "Could you give me the mobile number on the account and your full name?"
    assert asked_keys(q, ("full_name", "phone_number", "account_number")) == ("phone_number", "full_name")
    assert asked_keys("What is your account number?", ("account_number", "full_name")) == ("account_number",)
    assert asked_keys("Is that still correct?", ("billing_address",)) == ()
    # "... your account number with them and the six-digit transfer PIN?" answered with the
    # PIN alone, and the account never asked again (hand-read of seed 31337)
    q = ("Could you read me two things from Veridian Wireless: your account number with them "
         "and the six-digit transfer PIN?")
    assert asked_keys(q, ("old_carrier_account", "transfer_pin")) == ("old_carrier_account",
                                                                       "transfer_pin")


def test_choose_option_picks_one_listed_option():
    q = ("Before I quote anything, can you tell me what matters most to you, more high-speed "
         "data, a mobile hotspot, or international calling? That tells me which plan fits.")
    picks = {choose_option(q, random.Random(i)) for i in range(20)}
    assert picks <= {"high-speed data", "mobile hotspot", "international calling"} and len(picks) > 1
    assert choose_option("Is that still correct, or has it changed recently?", random.Random(0)) is None


def test_every_required_key_is_asked_or_read_out(scenarios):
    for scn in scenarios:
        produced = {k for s in scn.kb.workflow.stages for k in s.produces}
        produced |= system_keys(scn)        # held by the system: read out, never asked for
        facts = {f.key: f for f in scn.kb.user_facts}
        for st in scn.kb.workflow.stages:
            units = stage_units(scn, st.name)
            asked = [k for u in units for k in u.keys]
            # no key is asked twice; a later unit may confirm it (its text reads the value back:
            # "You mentioned you have about 5 days left. Is that the one?")
            asking = [k for u in units for k in u.keys if not (u.text and k in facts and (
                facts[k].value in u.text or (facts[k].spoken and facts[k].spoken in u.text)))]
            assert len(asking) == len(set(asking)), (st.name, asked)
            for key in st.required_info:
                if key in produced or key in asked:
                    continue
                f = facts[key]
                assert any(f.value in u.text or (f.spoken and f.spoken in u.text) for u in units), key
            assert all(u.kind != "close" or u is units[-1] for u in units)


# ---- the workflow walk --------------------------------------------------------------------
def test_conversations_walk_the_graph_to_an_end_within_the_length_range(convs):
    for conv in convs:
        wf = conv.scenario.kb.workflow
        edges = {(t.kind, t.source, t.target) for t in wf.transitions}
        msgs = conv.messages
        assert MIN_MESSAGES <= len(msgs) <= MAX_MESSAGES, len(msgs)
        assert msgs[0].role == "assistant" and msgs[-1].role == "assistant"
        assert all(m.role == ("assistant" if i % 2 == 0 else "user") for i, m in enumerate(msgs))
        assert msgs[0].stage == wf.start
        for p in conv.plan:
            t = p.transition
            if t and not t.startswith("end:"):
                kind, rest = t.split(":", 1)
                assert (kind, *rest.split("->")) in edges, t
        stages = [m.stage for m in msgs if m.role == "assistant" and m.stage]
        order = {s: i for i, s in enumerate(wf.stage_names)}
        assert all(order[a] <= order[b] or any(tr.target == b for tr in wf.transitions)
                   for a, b in zip(stages, stages[1:]))
        assert conv.outcome is None or conv.outcome in wf.terminals


def test_lengths_and_interruption_rate_are_paper_like(convs):
    lens = [len(c.messages) for c in convs]
    assert 24 <= sum(lens) / len(lens) <= 36
    cut = sum(len(c.interruptions) for c in convs)
    turns = sum(1 for c in convs for m in c.messages if m.role == "assistant")
    rate = sum(c.scenario.intent.interruption_rate for c in convs) / len(convs)
    assert abs(cut / turns - rate) < 0.12, (cut / turns, rate)


def test_cuts_fall_inside_the_stage_content(convs):
    for conv in convs:
        recoveries = {p.recovery.message_index: p.recovery for p in conv.plan if p.recovery}
        for cut, inter in conv.interruptions:
            rec = recoveries[inter.index]
            first = P.n_words(cut.text[: rec.content_start])
            k = cut.interruption.cut_word_index
            assert first + EDGE_WORDS <= k <= P.n_words(cut.text) - EDGE_WORDS
            assert 100 <= cut.interruption.overlap_ms <= 600


# ---- types and corrections ----------------------------------------------------------------
def test_correction_only_changes_a_value_the_user_gave_before(convs):
    seen = 0
    for conv in convs:
        for cut, inter in conv.interruptions:
            if cut.interruption.type != "correction":
                continue
            seen += 1
            d = next(p for p in conv.plan if p.message_index == cut.index).detail
            corr = next(c for c in conv.scenario.intent.corrections if c.key == d["key"])
            assert (d["old"], d["new"]) == (corr.first_value, corr.corrected_value)
            earlier = [m.text for m in conv.messages[: cut.index] if m.role == "user"]
            # (a value that opens the caller's sentence is capitalised: "A 2020 Subaru Outback.")
            assert any(d["old"].lower() in t.lower() for t in earlier), (d, earlier)
            assert d["new"].lower() in inter.text.lower()
    assert seen, "no correction in 24 conversations"


def test_types_follow_the_profile_and_the_rate(scenarios):
    scn = scenarios[0]
    probs = dict.fromkeys(scn.intent.interruption_probs, 0.0)
    fillers = run(with_intent(scn, interruption_probs={**probs, "filler": 1.0}, interruption_rate=0.7))
    types = {c.interruption.type for c, _ in fillers.interruptions}
    assert types == {"filler"}
    quiet = run(with_intent(scn, interruption_rate=0.0))
    assert quiet.interruptions == []


def test_no_correction_without_a_correctable_value(scenarios):
    scn = scenarios[1]
    probs = dict.fromkeys(scn.intent.interruption_probs, 0.0)
    only_corr = with_intent(scn, interruption_probs={**probs, "correction": 1.0},
                            interruption_rate=1.0, corrections=())
    assert run(only_corr).interruptions == []


def test_filler_recovery_is_never_cut_when_too_short(convs):
    for conv in convs:
        for p in conv.plan:
            rec = p.recovery
            if rec and rec.type == "filler" and P.n_words(rec.remainder) < 10:
                assert not p.interrupt


# ---- the user simulator gets the plan, not the intent -------------------------------------
def test_user_simulator_never_receives_the_intent(convs):
    for fn in (RuleUser.reply, RuleUser.interject, llm_messages):
        for param in inspect.signature(fn).parameters.values():
            assert "UserIntent" not in str(param.annotation)
    assert not set(UserPlan.model_fields) & set(UserIntent.model_fields) - {"profile"}
    conv = next(c for c in convs if c.interruptions)
    plan = next(p for p in conv.plan if p.interrupt)
    from bargein.generators.planner import RoundPlan

    up = user_plan(plan)
    cut = conv.messages[plan.message_index]
    _, msgs = llm_messages(up, [], cut.text, 0)
    prompt = msgs[0]["content"]
    for secret in ("interruption_probs", "interruption_rate", "hidden_facts", "provides"):
        assert secret not in prompt
    probs = conv.scenario.intent.interruption_probs
    assert sum(f"{v}" in prompt for v in probs.values()) < len(probs)   # not the profile's numbers


def test_replan_excludes_interruption_types_that_failed(scenarios):
    """A round whose interruption could not be realised is re-planned with another type."""
    from bargein.generators.planner import RulePlanner

    scn = with_intent(scenarios[0], interruption_rate=1.0)
    planner = RulePlanner(scn)
    st = planner.new_state(random.Random(0))
    st.round = 1
    seen, excluded = set(), frozenset({"pushback", "normal"})
    for seed in range(60):
        plan = planner.plan(st, random.Random(seed), excluded)
        if plan.interrupt:
            seen.add(plan.type)
    assert seen and not seen & excluded
    everything = planner.plan(st, random.Random(1), frozenset(
        ["normal", "impatient", "correction", "topic_switch", "filler", "pushback"]))
    assert not everything.interrupt


def test_an_accepted_identity_alternative_is_carried_out_before_the_call_moves_on(scenarios):
    """A caller who pushes back on an identity detail and takes the offered alternative ("we
    could ask you a couple of questions about recent activity instead" -- "fine") is asked
    those questions next; before, the next turn said "Thank you, Christina, you're verified"
    with nothing checked (hand-read of seed 271828, two of eight conversations). The offers
    are read from the bank data, the carried-out steps from the conversations."""
    import yaml
    from importlib import resources

    steps = yaml.safe_load(resources.files("bargein.generators").joinpath(
        "catalogue/phrases_pairs.yaml").read_text())["alternative_steps"]
    offers = [(s["alternative"].removesuffix(" instead").lower(), s) for s in steps]
    seen = carried = 0
    for seed in range(4):
        for n, scn in enumerate(scenarios):
            msgs = run(scn, 100 * seed + n).messages
            for i, m in enumerate(msgs[:-2]):
                if m.role != "assistant" or m.interruption is not None:
                    continue
                step = next((s for probe, s in offers if probe in m.text.lower()), None)
                nxt = msgs[i + 2].text
                if step is None or any(p in nxt.lower() for p, _ in offers):
                    continue                # no offer, or offered again after a side turn
                if msgs[i + 1].text.rstrip().endswith("?"):
                    continue                # the caller asked something back first
                seen += 1
                ask = re.sub(r"^(?:okay|then|so),?\s*", "", step["assistant"], flags=re.I).lower()
                # a caller nobody has named yet is asked who they are first (a code "to the
                # email on file" went out before any name, a hand read of seed 6262)
                # (and read back, or a side question of theirs answered, on the way)
                at = i + 2 if ask[:40] in nxt.lower() else next(
                    (j for j in range(i + 4, min(i + 14, len(msgs) - 1), 2)
                     if ask[:40] in msgs[j].text.lower()), None) if re.search(
                    r"\bname\b|who (?:am i speaking|do i have|is this|have i got)", nxt, re.I) else None
                if at is not None:              # nobody says "you're verified" before the step
                    assert not any(re.search(r"\byou're (?:now )?verified\b", msgs[j].text, re.I)
                                   for j in range(i + 2, at, 2)), scn.id
                if at is not None:              # (a leading "Okay," merges with the ack)
                    carried += 1
                    answer = msgs[at + 1].text
                    assert answer and not answer.endswith("?"), (scn.id, answer)
    assert seen >= 5, seen
    assert carried == seen, (carried, seen)


def test_a_pushback_on_a_charge_the_call_credits_is_not_defended(tmp_path):
    """A caller disputing a bill line ("I'm not paying $43.97 for this") on a call whose plan
    credits that very amount is not told "the $43.97 is set by our pricing rules, so I can't
    just remove it myself" (hand-read of seed 271828: the gold contradicted the credit applied
    two turns later)."""
    res = generate_scenarios(60, 5, workdir=tmp_path, progress=False)
    defended = re.compile(r"pricing rules|can't just remove|isn't something I can waive|"
                          r"is what this costs|standard amount|set out in your terms", re.I)
    money = re.compile(r"\$\d[\d,]*(?:\.\d\d)?")
    seen = 0
    for k, scn in enumerate(res.outputs):
        credits = [tp for st in scn.kb.workflow.stages for tp in st.talking_points
                   if re.search(r"\b(?:credit|refund)", tp, re.I)]
        for seed in range(3):
            msgs = run(scn, seed * 1000 + k).messages
            for i, m in enumerate(msgs[:-2]):
                if m.interruption is None or m.interruption.type != "pushback":
                    continue
                amounts = money.findall(msgs[i + 1].text)
                if not any(a in tp for a in amounts for tp in credits):
                    continue
                seen += 1
                assert not defended.search(msgs[i + 2].text), msgs[i + 2].text
    assert seen >= 1


def _asked(text: str) -> str:
    """The question a reply answers: the turn's last question, with the sentence before it when
    the question alone names nothing ("That's X. Is that right?"). A value said in a statement
    before another question ("I've taken X as the email. ... a 2021 Kia Telluride?") is not
    confirmed by the answer to that question."""
    sents = re.split(r"(?<=[.?!])\s+", text.strip())
    q = max((k for k, x in enumerate(sents) if "?" in x), default=len(sents) - 1)
    return " ".join(sents[q - 1:q + 1] if q and len(sents[q].split()) < 6 else sents[q:q + 1])


def test_a_value_the_caller_confirmed_at_a_read_back_is_not_corrected_later(scenarios):
    """"That's hestrada34@icloud.com, is that correct?" -- "Correct, yes, that's mine." is not
    followed by "Sorry, my mistake, it's hestrada@williams-phillips.com" (hand-read of seed
    5150: a correction of a value confirmed one turn earlier). Corrections still happen."""
    yes = re.compile(r"^\W*(?:yes|yep|yeah|correct|mm-hm|uh-huh|that's (?:it|right|mine|correct))",
                     re.I)
    corrections = 0
    for seed in range(3):
        for n, scn in enumerate(scenarios):
            msgs = run(scn, 50 * seed + n).messages
            for i, m in enumerate(msgs):
                if m.interruption is None or m.interruption.type != "correction":
                    continue
                fix = next((c for c in scn.intent.corrections
                            if c.corrected_value in msgs[i + 1].text), None)
                if fix is None:
                    continue
                corrections += 1
                for j in range(i):
                    a = msgs[j]
                    if a.role == "assistant" and a.interruption is None and "?" in a.text \
                            and fix.first_value in _asked(a.text) and j + 1 < i:
                        assert not yes.search(msgs[j + 1].text), (scn.id, a.text, msgs[j + 1].text)
    assert corrections >= 5, corrections


def test_nobody_cuts_in_on_the_greeting_or_skips_a_payment_link(scenarios):
    """"Thank you for calling |" -- "Sorry, off topic, are your offices open ...?" cut in one
    second into the call (hand-read of seed 5150, two of ten conversations); and an impatient
    "skip this part" dropped "I'll text you a secure payment link", after which the new flight
    was confirmed unpaid."""
    greeting = re.compile(r"^(?:thank you|thanks) for (?:calling|ringing)[^.?!]*[.?!]|"
                          r"^good (?:morning|afternoon|evening)[^.?!]*[.?!]", re.I)
    openings = payments = 0
    for seed in range(3):
        for n, scn in enumerate(scenarios):
            msgs = run(scn, 70 * seed + n).messages
            for m in msgs:
                if m.interruption is None:
                    continue
                g = greeting.match(m.text)
                if g and m.index == 0:
                    openings += 1
                    assert len(m.heard_text) > g.end(), m.heard_text
                rest = m.text[len(m.heard_text):]
                if m.interruption.type == "impatient":
                    payments += 1
                    assert not re.search(r"\b(?:secure|payment) link\b|\bread me the (?:code|digits)\b",
                                         rest), m.text
    assert openings >= 5 and payments >= 5, (openings, payments)


def test_no_run_of_asides_and_no_clarifying_the_callers_own_value(scenarios):
    """Four "by the way" asides in five turns, two of them on the same resumed sentence, and
    "Friday, October 31, 2025? I want to be sure I heard it right" of a date the caller had
    just given (hand-read of seed 112358). Six seeds a scenario, so the sample holds a few
    clarifying questions to look at (a clarification is about one normal cut-in in twenty-five)."""
    value = re.compile(r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \w+ \d+, \d{4}"
                       r"|\$[\d,]+(?:\.\d\d)?|[\w.]+@[\w.-]+\.\w+")
    asides = clarifies = 0
    for seed in range(6):
        for n, scn in enumerate(scenarios):
            msgs = run(scn, 90 * seed + n).messages
            for i, m in enumerate(msgs):
                if m.interruption is None:
                    continue
                if m.interruption.type in ("normal", "topic_switch"):
                    asides += 1
                    prev = msgs[i - 2] if i >= 2 else None
                    assert not (prev is not None and prev.interruption is not None
                                and prev.interruption.type in ("normal", "topic_switch")), \
                        (scn.id, prev.interruption.interjection, m.interruption.interjection)
                said = m.interruption.interjection
                if m.interruption.type == "normal" and "?" in said:
                    clarifies += 1
                    own = " ".join(x.text for x in msgs[:i] if x.role == "user")
                    for v in value.findall(said):
                        assert v not in own, (scn.id, said)
    assert asides >= 10 and clarifies >= 3, (asides, clarifies)


def test_skipping_ahead_never_skips_the_report_that_the_work_was_done(scenarios):
    """"Skip ahead, please" on "With that, I can file a claim and a replacement ships ..."
    dropped the rest of the stage with its explanation: the call closed 'resolved' with no
    replacement ordered (hand-read of seed 8080). Skipping ahead drops explanation, never the
    report that the work was done ("I've filed the claim")."""
    from collections import deque

    from bargein.generators.planner import RulePlanner
    from bargein.records.plan import Recovery, Unit

    planner = RulePlanner(scenarios[0])
    st = planner.new_state(random.Random(0))
    cut = Unit(kind="inform", stage=st.stage, text="With that, I can file a claim and a "
               "replacement ships to you, usually arriving within two business days.")
    extra = Unit(kind="inform", stage=st.stage, text="Replacement phones are refurbished to "
                 "the same standard as new ones, and they carry the full warranty as well.")
    done = Unit(kind="inform", stage=st.stage, text="I've filed the claim. The replacement "
                "comes with a new SIM already linked to your number.")
    st.units = deque([extra, done])
    st.pending = Recovery(type="impatient", message_index=1, planned_text=cut.text,
                          heard_text=cut.text[:40], remainder=cut.text[40:],
                          interjection="Uh-huh, I know, I don't need the background.")
    st.pending_unit = cut
    unit, _ = planner._recovery_unit(st, random.Random(0))
    ahead = [unit.text] + [u.text for u in st.units]
    from bargein.generators.rewordings import canonical       # (said in any of its wordings)
    assert any(canonical(t).endswith(done.text) for t in ahead), ahead
    assert extra.text not in ahead


def test_a_clause_value_is_not_read_back_as_a_thing():
    """"So I've got that noted correctly, that's did not make or authorise the purchase, yes?"
    (hand-read of seed 8080): a value that is a clause about the caller is not read back."""
    from bargein.generators.planner_text import _readable

    assert not _readable("did not make or authorise the purchase")
    assert not _readable("doesn't recognise the merchant")
    assert _readable("Streamora Subscription") and _readable("Thursday, March 6, 2025")


def test_asked_to_check_something_the_caller_reports_what_they_found():
    """"Could you check whether other apps are streaming fine?" answered "Yeah, give me a
    second." and the agent said "That's sorted." with the check never reported (hand-read of
    seed 55555): the caller looks and says what they found."""
    from bargein.generators.plan_state import answer_question

    q = ("While the TV restarts, could you check whether other apps are streaming fine? "
         "That tells us whether it's the connection or our app.")
    for seed in range(6):
        kind, reply = answer_question(q, random.Random(seed))
        assert "other apps are streaming fine" in reply and "second" not in reply, reply
    _, reply = answer_question("Could you check if your router light is green?", random.Random(0))
    assert "my router light is green" in reply
    # a request to do something (not to find something out) is still agreed to
    _, reply = answer_question("Could you restart the router for me?", random.Random(0))
    assert "router" not in reply


def test_big_counts_are_written_with_thousands_separators():
    """"You have 50000 miles in your account" beside "20,000 miles" in the same call (hand-read
    of seed 55555): a count is written as an agent writes it, and said in words."""
    from datetime import date

    from bargein.generators.facts import FactMaker

    maker = FactMaker(3, date(2025, 4, 1))
    written, spoken = maker._integer(min=30000, max=30000, unit="mile")
    assert written == "30,000 miles" and spoken == "thirty thousand miles"
    assert maker._integer(min=4, max=4, unit="seat") == ("4 seats", "four seats")


def test_no_stage_lead_before_a_done_report_and_no_all_done_before_a_read_back(scenarios):
    """"Okay, appreciated. That's settled. Moving on. Done. You're upgraded ..." and "That's
    all I need there. Let me read that back ..." (hand-read of seed 55555)."""
    from bargein.generators.assistant_sim import RuleAssistant
    from bargein.records.plan import RoundPlan, Unit

    agent = RuleAssistant(scenarios[0])
    leads = set(P.bank("assistant", "lead_on"))
    done = Unit(kind="inform", stage=None, text="Done. You're upgraded to Premium Select.")
    done_too = Unit(kind="inform", stage=None, text="Everything's set. The stop runs for six months.")
    readback = Unit(kind="ask", stage=None, purpose="readback",
                    text="Let me read that back to make sure I have it right: 4471. Is that right?")
    for seed in range(60):
        plan = RoundPlan(round=3, stage=None, assistant_action="inform", unit=done,
                         stage_lead=True, ack={"kind": "plain"})
        turn = agent.normal(plan, random.Random(seed))
        assert not any(lead in turn.acknowledgement for lead in leads), turn
        turn = agent.normal(plan.model_copy(update={"unit": done_too}), random.Random(seed))
        assert not any(lead in turn.acknowledgement for lead in leads), turn
        plan = plan.model_copy(update={"unit": readback, "assistant_action": "ask"})
        turn = agent.normal(plan, random.Random(seed))
        assert not re.search(r"all I need|everything I needed", turn.acknowledgement), turn


def test_a_caller_who_asked_for_patience_does_not_hurry_the_agent(scenarios):
    """"Sorry, I should mention, I'm hard of hearing, so please speak slowly." and on the very
    next turn "Okay, okay, I've been through this part twice now. Move on, please." (hand-read
    of seed 90210): after asking for slowness the caller never cuts in impatiently."""
    from bargein.generators.plan_state import ConversationState
    from bargein.generators.planner import RulePlanner
    from bargein.records.plan import Unit

    key = "normal_constraint"
    bank = P.bank("pairs", key)
    slow = next(i for i, p in enumerate(bank) if isinstance(p, dict) and "speak slowly" in p["user"])
    text = ("Standard with Ads at 7.99 a month includes short ad breaks, streams in full HD "
            "rather than 4K, and allows two screens at once instead of four screens.")
    unit = Unit(kind="inform", stage=None, text=text)
    for scn in scenarios[:6]:
        planner = RulePlanner(scn)
        st = ConversationState(scenario=scn, target_messages=40)
        st.round = 4
        before = planner._feasible(st, unit)
        st.used_pairs[key] = {slow}
        assert st.asked_for_patience()
        after = planner._feasible(st, unit)
        assert "impatient" in before and "impatient" not in after, (before, after)


def _said(value: str, text: str) -> bool:
    return bool(value) and value in text


@pytest.fixture(scope="module")
def wide_convs(tmp_path_factory) -> list[Conversation]:
    scns = scenario_batch(48, 90210, tmp_path_factory.mktemp("wide"))
    return [run(s, n) for n, s in enumerate(scns)]


def test_a_misstated_value_is_caught_before_the_agent_says_the_right_one(wide_convs):
    """The caller volunteered "(816) 506-8377", the agent noted it, and the call ended with "a
    reminder text at (816) 560-8377" and no correction (hand-read of seed 90210): once the
    agent is about to say the right form of a value the caller misstated, the caller corrects
    it, so no call carries two values for one fact."""
    checked = 0
    for c in wide_convs:
        for corr in c.scenario.intent.corrections:
            if corr.first_value == corr.corrected_value:
                continue
            msgs = c.messages
            first = next((i for i, m in enumerate(msgs) if m.role == "user"
                          and _said(corr.first_value, m.text)), None)
            if first is None:
                continue
            later = next((i for i, m in enumerate(msgs) if i > first and m.role == "assistant"
                          and _said(corr.corrected_value, m.text)), None)
            if later is None:
                continue
            checked += 1
            fixed = any(m.role == "user" and _said(corr.corrected_value, m.text)
                        for m in msgs[first + 1:later + 2])
            assert fixed, (c.id, corr.key, msgs[later].text)
    assert checked, "no misstated value read out in the batch"


def test_the_rest_of_a_disputed_question_is_still_asked(wide_convs):
    """"Could I get the patient's full name and date of birth?" -- "is it safe to give you my
    date of birth?" -- an alternative for the date of birth, and then "I've got Charles
    Rodriguez's record open" with the name never given (hand-read of seed 90210)."""
    checked = 0
    for c in wide_convs:
        name = next((f.value for f in c.scenario.kb.user_facts if f.key == "full_name"), "")
        if not name:
            continue
        for i, m in enumerate(c.messages):
            it = m.interruption
            if not (it and it.type == "pushback" and "date of birth" in c.messages[i + 1].text
                    and "full name" in it.heard_text):
                continue
            checked += 1
            assert any(x.role == "user" and name in x.text for x in c.messages), c.id
            said_by_agent = next((j for j, x in enumerate(c.messages) if j > i
                                  and x.role == "assistant" and name in x.text), None)
            if said_by_agent is not None:
                assert any(x.role == "user" and name in x.text
                           for x in c.messages[:said_by_agent]), (c.id, c.messages[said_by_agent].text)
    assert checked, "no pushback on a date of birth asked together with the name"


def test_an_impatient_caller_does_not_repeat_their_own_words():
    """"Okay, okay, we can skip the script. What's the bottom line?" and six turns later "Yep,
    yep, you don't need to walk me through it. What's the bottom line?" (hand-read of seed
    90210)."""
    from bargein.generators.user_sim import impatient_line

    heard = "Your Gold status sets your waitlist priority if space runs out, but right now"
    context = ("Thank you, Jodi. I see your account.", "Okay, okay, we can skip the script. "
               "What's the bottom line?")
    tails = [t for t in P.bank("user", "impatient_core_tail") if t]
    lines = [impatient_line(heard, context, random.Random(s)) for s in range(200)]
    assert not [x for x in lines if "bottom line" in x.lower()]
    assert not [x for x in lines if "skip the script" in x.lower()]
    assert {t for t in tails for x in lines if t in x} - {"What's the bottom line?"}, lines[:5]


def test_nothing_given_is_not_thanked_as_everything_needed(scenarios):
    """"Okay, fine, carry on. Then what?" -- "Perfect, that's everything I needed there." (five
    times in 60 points of seed 31337): only a turn that gave something is "all I need"."""
    from bargein.generators.assistant_sim import RuleAssistant
    from bargein.records.plan import RoundPlan, Unit

    agent = RuleAssistant(scenarios[0])
    unit = Unit(kind="inform", stage=None, text="Most ports finish within a few hours.")
    plan = RoundPlan(round=3, stage=None, assistant_action="inform", unit=unit,
                     ack={"kind": "plain"})
    for seed in range(150):
        ack = agent.normal(plan, random.Random(seed)).acknowledgement
        assert not re.search(r"all I need|everything I needed", ack), (seed, ack)
    given = {agent.normal(RoundPlan(round=3, stage=None, assistant_action="inform", unit=unit,
                                    ack={"kind": "plain", "value": "Ryan Chan 4471"}),
                          random.Random(seed)).acknowledgement for seed in range(150)}
    assert any(re.search(r"all I need|everything I needed", a) for a in given)


def test_a_title_and_the_name_after_it_are_never_cut_apart():
    """"... your blood pressure check with Dr. | Joe Roy on ..." with the rest "Joe Roy on
    Wednesday ..." as the continuation (hand-read of seed 31337)."""
    text = "It shows your blood pressure check with Dr. Joe Roy on Wednesday, September 17, 2025."
    words = text.split()
    k = words.index("Dr.") + 1
    assert k in P.protected_cuts(text) and k + 1 in P.protected_cuts(text)


def test_the_agent_thanks_once_per_turn(scenarios):
    """"Okay, Leslie Heath, thank you. Thank you, Leslie. I can see your account ..." (hand-read
    of seed 27182)."""
    from bargein.generators.assistant_sim import RuleAssistant
    from bargein.records.plan import RoundPlan, Unit

    agent = RuleAssistant(scenarios[0])
    unit = Unit(kind="inform", stage=None, text="Thank you, Leslie. I can see your account and "
                "your upcoming trip, booking ZVGGTM.")
    for seed in range(80):
        plan = RoundPlan(round=5, stage=None, assistant_action="inform", unit=unit,
                         ack={"kind": "fact", "key": "full_name", "value": "Leslie Heath"})
        turn = agent.respond(plan, random.Random(seed))
        said = f"{turn.acknowledgement} {turn.content}".lower()
        assert len(re.findall(r"\bthank(?:s| you)\b", said)) == 1, said


def test_a_choice_put_to_the_caller_is_made():
    """"You have two options ... Which would you prefer?" -- "Either is fine with me." and the
    agent carried on with neither chosen (hand-read of seed 27182): the caller picks one."""
    from bargein.generators.plan_state import answer_question

    q = ("Because it arrived damaged, there's no pickup fee either way, and you don't need to "
         "repack it in the original box. Which would you prefer?")
    for seed in range(30):
        kind, reply = answer_question(q, random.Random(seed))
        assert kind == "which" and re.search(r"\bfirst\b", reply), reply


def test_what_a_side_answer_promised_is_taken_up_before_the_close(scenarios):
    """Hand read of seed 9191: "I'll send you how to book one" and "I can book one after this"
    were never done or mentioned again. Before the call closes, what was to be sent is said to
    be sent, and a request put off until "after this" is offered again for the caller to take
    up or leave; a condition ("if we get cut off, I'll call you back") promises nothing."""
    from bargein.generators.planner import RulePlanner, promises_in

    assert promises_in("Travel vaccines need a separate nurse visit; I'll send you how to book "
                       "one.") == [("send", "you how to book one")]
    assert promises_in("Notary service is free for members; I can book one after this.") == \
        [("after", "I can book one after this.")]
    assert promises_in("No problem, if we get cut off I'll call you straight back.") == []
    assert promises_in("Thanks, I'll send updates by text.") == []      # a way of sending
    # seen in a hand read of seed 5151: "I'll give you their details afterwards" never given; the
    # catalogue now texts a named thing, and every way of putting it off is read as one
    assert promises_in("The municipal court handles parking tickets; I'll text you the court's "
                       "payment details afterwards.") == [("text", "you the court's payment details")]
    assert promises_in("Saturday hours vary; I'll text you your branch's Saturday hours.") == \
        [("text", "you your branch's Saturday hours")]
    assert promises_in("A profile lock is in settings; I'll walk you through it when we're done.") \
        == [("after", "I'll walk you through it when we're done.")]
    assert promises_in("Payments are taken at the end of the month.") == []

    planner = RulePlanner(scenarios[0])
    st = planner.new_state(random.Random(0))
    assert planner._follow_up(st, random.Random(0)) is None            # nothing promised
    st.promises = [("send", "you the guide"), ("after", "I can book one after this.")]
    unit = planner._follow_up(st, random.Random(0))
    assert unit.purpose == "follow_up" and unit.kind == "ask"
    assert "I've sent you the guide." in unit.text and unit.text.rstrip().endswith("?")
    assert planner._follow_up(st, random.Random(0)) is None            # once
    st2 = planner.new_state(random.Random(0))
    st2.promises = [("email", "you the range")]
    unit = planner._follow_up(st2, random.Random(1))
    assert unit.kind == "inform" and "I've emailed you the range." in unit.text


def test_an_identity_detail_is_given_right_first(scenarios):
    """A slip in a detail an identity check takes would pass the check with a wrong value: the
    slip check (verify.consistency.slip_corrected) found 9 calls of 50 on seed 7 with card
    digits, member numbers and patient IDs taken wrong and never put right. The caller gives
    those right; a slip elsewhere stays a slip until corrected."""
    from bargein.generators.plan_state import ConversationState
    from bargein.records import Correction

    found = 0
    for scn in scenarios:
        checks = [s for s in scn.kb.workflow.stages
                  if re.match(r"(?:verify|authenticat|identify|confirm_identity)", s.name)]
        keys = [k for s in checks for k in s.required_info
                if any(f.key == k for f in scn.kb.user_facts)]
        others = [f.key for f in scn.kb.user_facts if f.key not in keys]
        if not keys or not others:
            continue
        found += 1
        for key in (keys[0], others[0]):
            fact = next(f for f in scn.kb.user_facts if f.key == key)
            slipped = with_intent(scn, corrections=(
                Correction(key=key, first_value=fact.value + "9", corrected_value=fact.value),))
            st = ConversationState(scenario=slipped, target_messages=40)
            want = (fact.spoken or fact.value) if key == keys[0] else fact.value + "9"
            assert st.value_for(key) == want, (scn.goal.name, key)
    assert found >= 3
