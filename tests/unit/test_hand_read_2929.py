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
from bargein.verify.checks import run_checks
from doubles.offline_calls import cut_recovery, run_busy, scenario_batch  # noqa: E402

_SENT = re.compile(r"(?<=[.!?])\s+")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    return scenario_batch(40, 4646, tmp_path_factory.mktemp("scn"))


@pytest.fixture(scope="module")
def convs(scenarios) -> list[Conversation]:
    return [run_busy(s, n) for n, s in enumerate(scenarios)]



def test_a_cut_right_after_a_full_stop_resumes_with_the_next_sentence():
    """"Ryan Powell could see you on Monday, May 19, 2025 at 3:00 PM. | After the meeting ..."
    -- the gold said the whole slot sentence again (seed 8585, #11)."""
    text = ("Ryan Powell could see you on Monday, May 19, 2025 at 3:00 PM. After the meeting, we "
            "bill the consultation at a fixed 120 dollars for 30 minutes.")
    heard = text[:text.index(" After")]
    assert resume_text(text, cut_recovery(text, heard)).startswith("After the meeting")
    # the heard sentence ends with an abbreviation's stop: no sentence end, started afresh
    dr = "Your visit is with Dr. Payne on Friday at nine in the morning."
    assert resume_text(dr, cut_recovery(dr, "Your visit is with Dr.")) == dr


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
    from bargein.generators.assistant_sim import _THANKS_ALONE
    assert _THANKS_ALONE.match("Alright, thanks for that.") and _THANKS_ALONE.match("Okay, great, thanks.")
    # a sentence that says something besides the thanks is kept ("I have Sheila Weaver, thanks.")
    assert not _THANKS_ALONE.match("I have Sheila Weaver, thanks.")
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
                c = run_busy(s, k)
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


def test_an_impatient_caller_claims_to_know_an_explanation_never_a_status_from_the_record():
    """"Robert Osborne's record is up on my screen. | Right, right, I know all that" (seed
    2929, #23)."""
    from bargein.generators.user_sim import impatient_line
    for seed in range(60):
        line = impatient_line("Robert Osborne's record is up on my screen. Your current visit is",
                              (), random.Random(seed))
        assert not re.search(r"know all that|heard this|familiar with|got the gist|done this before",
                             line, re.I), line


def test_a_caller_says_how_to_be_spoken_to_before_the_close_not_at_it(convs):
    """"English isn't my first language, so please keep it simple." to "Is there anything else
    you wanted to sort out today?" (seed 2929, #14)."""
    manner = re.compile(r"first language|hard of hearing|on hold for|might have to pause|meeting in "
                        r"about fifteen|second time I've called", re.I)
    closing = re.compile(r"\banything else\b|\bsomething else I can\b|\bwhat else can I\b|"
                         r"\bThat wraps up\b", re.I)
    seen = 0
    for c in convs:
        for m, u in c.interruptions:
            if manner.search(u.text):
                seen += 1
                said = " ".join(x.text for x in c.messages[:m.index] if x.role == "assistant")
                assert not closing.search(f"{said} {m.text}"), (c.id, m.text, u.text)
    assert seen >= 2


def test_side_answers_and_alternatives_promise_nothing_the_call_cannot_do():
    """"I'll send anything that has to be signed to both of you" (no contact for the partner,
    nothing to sign; seed 2929, #54); "check it against the details on your engagement letter",
    the letter the client number is printed on (#52); a monthly payment that is "what the offer
    letter shows" (seed 8585, #46)."""
    from bargein.generators.catalogue_loader import load_catalogue
    pairs = [p for key in P.bank_keys("pairs") if key.startswith("normal_constraint")
             for p in P.bank("pairs", key)]
    partner = [p for p in pairs if "business partner" in p["user"]]
    assert partner and not any(re.search(r"\bI'll send\b", a) for p in partner for a in p["assistant"])
    assert not any("engagement letter" in a for a in P.bank("assistant", "alternatives_requirement.professional_services"))
    text = str(load_catalogue())
    assert "what the offer letter shows" not in text


def test_an_owner_disputing_an_assessment_thinks_the_home_is_worth_less():
    """owner_estimate=$431,000 against an assessed value of $332,000, disputed as too high (seed
    2929, call 2): an amount fact can be drawn below another."""
    from datetime import date

    from bargein.errors import ConfigError
    from bargein.generators.facts import FactMaker, FactSpec
    for seed in range(30):
        m = FactMaker(seed, date(2025, 5, 1))
        a = m.make("assessed_value", FactSpec.parse({"kind": "amount", "min": 185000, "max": 620000,
                                                     "step": 1000}))
        b = m.make("owner_estimate", FactSpec.parse({"kind": "amount", "below": "assessed_value",
                                                     "step": 1000}))
        va, vb = (float(re.sub(r"[^\d.]", "", x.value)) for x in (a, b))
        assert 0.7 * va <= vb < va and vb % 1000 == 0, (a.value, b.value)
    with pytest.raises(ConfigError, match="names no amount fact listed before it"):
        FactMaker(1, date(2025, 5, 1)).make("x", FactSpec.parse({"kind": "amount", "below": "y"}))


def test_the_step_of_suspending_a_lost_phone_and_blocking_it_is_done_in_the_call():
    """A lost-phone call marked resolved whose line was never suspended and whose phone was
    only proposed for a block, then summed up as "suspended" and "blocked" (seed 8585, call 4)."""
    calls = 0
    for seed in (21, 22, 23):
        for s in scenario_batch(60, seed, Path(tempfile.mkdtemp())):
            if s.goal.name != "report_lost_phone":
                continue
            for k in range(2):
                c = run_busy(s, k)
                if c.outcome != "resolved":
                    continue
                calls += 1
                said = " ".join((m.heard_text or m.text) if m.interruption else m.text
                                for m in c.messages if m.role == "assistant")
                # the action itself, not the summary's "service ... is suspended"
                assert re.search(r"I'm suspending|being suspended|putting a suspension", said), c.id
                assert re.search(r"I'm (?:also )?(?:blocking|putting a block)|thing I'm doing is blocking",
                                 said), c.id
    assert calls >= 2


def test_a_caller_does_not_check_back_a_date_they_said_aloud_themselves():
    """"And I fly out on Sunday, October fifth, twenty twenty-five." -- "Sorry, so that's
    Sunday, October 5, 2025? I'm writing it down." (seed 6161, #29)."""
    from bargein.generators.conversation import RuleAgents
    seen = 0
    for s in scenario_batch(40, 5757, Path(tempfile.mkdtemp())):
        spoken = {f.value: f.spoken for f in s.kb.user_facts if f.spoken}
        assert RuleAgents(s).user.spoken == spoken
        seen += bool(spoken)
    assert seen >= 10
    from bargein.generators.user_sim import PlanBroken, RuleUser, UserPlan
    msg = ("You're headed to Costa Rica, leaving Sunday, October 5, 2025 and returning Monday, "
           "October 20, 2025. Did I get that right, and will there be any stopovers on the trip?")
    user = RuleUser(values=("Sunday, October 5, 2025", "Monday, October 20, 2025"),
                    spoken={"Sunday, October 5, 2025": "Sunday, October fifth, twenty twenty-five"})
    context = ("Where are you traveling to, and what are your dates?",
               "It's Costa Rica. And I fly out on Sunday, October fifth, twenty twenty-five.")
    checked = 0
    for seed in range(20):
        up = UserPlan(action="interject", interrupt=True, type="normal",
                      detail={"variant": "clarify"}, cut_fraction=0.5)
        try:
            out = user.interject(up, msg, 0, context, random.Random(seed))
        except PlanBroken:          # no object left to check back: the planner draws another
            continue
        checked += 1
        assert "October 5" not in out.interjection, out.interjection
    # the return date the caller never said is still checked back
    assert checked >= 5


def test_no_knowledge_claim_and_no_yes_opener_in_a_pushback_answer():
    """"Is there really nothing else?" -- "Absolutely, I'd ask the same thing ..." (seed 6161,
    #15); "nothing is kept after the call" said of a case number (#8)."""
    assert not {"Yes,", "Absolutely,"} & set(P.bank("assistant", "pb_empathy_open"))
    assert not any("nothing is kept after the call" in w
                   for w in P.bank("assistant", "recover_pb_why_requirement"))


def test_an_impatient_caller_does_not_skip_the_summary_of_what_was_done(convs):
    """"Here's where things stand: ... the Moto G Power is blocked | -- let's get to what
    matters" and the summary was never said (seed 6161, #38)."""
    seen = 0
    for c in convs:
        for m, _ in c.interruptions:
            if m.interruption.type == "impatient":
                seen += 1
                assert not re.search(r"here's where things stand|here's a quick summary|to recap|"
                                     r"to sum up", m.text, re.I), (c.id, m.text)
    assert seen >= 5


def test_a_rubric_never_forbids_repeating_a_pleasantry(convs):
    """"Does not re-explain or repeat what the caller already heard ("Got it, and thanks for
    listening.")" (seed 6161, #41)."""
    seen = 0
    for c in convs:
        for m, u in c.interruptions:
            r = rule_rubric(c, u.index, random.Random(0))
            for q in r.rq_criteria:
                quoted = re.search(r'already heard \("(.*)"\)', q)
                if quoted:
                    seen += 1
                    words = set(re.findall(r"[a-z']+", quoted.group(1).lower()))
                    assert len(words - {"got", "it", "and", "thanks", "for", "listening", "okay",
                                        "great", "thank", "you", "right"}) >= 3, q
    assert seen >= 5


def test_a_gerund_subject_keeps_its_singular_verb_when_slots_are_filled():
    """"asking for the last four digits are what would stop them" and "Giving you the last four
    digits of my card are still what's bothering me" (seeds 7070 and 2929): the plural noun is
    the gerund's object, not the subject."""
    assert P.fill("If someone else called pretending to be you, asking for {obj} is what would "
                  "stop them.", obj="the last four digits").endswith("digits is what would stop them.")
    assert P.tidy("Giving you the last four digits of my card is still what's bothering me.") \
        .startswith("Giving you the last four digits of my card is still")
    # the plural subject itself is still put right
    assert P.fill("{obj} is only there to protect you.", obj="the last four digits") \
        .startswith("The last four digits are")
    assert P.tidy("Hmm, the last four digits of my card still bothers me.").endswith("still bother me.")


def test_a_new_client_is_checked_against_no_record_they_do_not_have_yet():
    """Seed 7070, call 8 (intake of a new bookkeeping client): "confirm it with the date your
    engagement began", "a one-time code by text to the number we have", "matching your phone
    number against what's already on file"."""
    from bargein.generators.grounded import recover_pushback
    from bargein.generators.workflow import ON_RECORD, unfit_alternatives
    unfit = unfit_alternatives("Take intake details for a new small-business bookkeeping client, "
                               "explain the engagement letter and the onboarding checklist.")
    assert unfit is not None and unfit_alternatives("Book a paid consultation with a tax advisor.") is None
    for seed in range(40):
        said = recover_pushback(random.Random(seed), "requirement", "your phone number",
                                domain="professional_services", unfit=unfit)
        assert not ON_RECORD.search(said), said


def test_a_reason_the_caller_gave_is_not_asked_for_again_and_the_offer_is_made():
    """Seed 7070, call 1: "the main reason is budget cuts" (and corrected), then "What's
    prompting the change?" twice; the retention offer's own sentence ("Given what you said, we
    could offer ...") was dropped as an attribution, leaving "I won't bring this up again"."""
    calls = offers = 0
    for seed in (31, 32, 33):
        for s in scenario_batch(60, seed, Path(tempfile.mkdtemp())):
            if s.goal.name != "cancel_subscription":
                continue
            facts = {f.key: f.value for f in s.kb.user_facts}
            for k in range(3):
                c = run_busy(s, k)
                calls += 1
                said = False
                for m in c.messages:
                    if m.role == "user" and facts["cancel_reason"] in m.text:
                        said = True
                    if m.role == "assistant":
                        assert not (said and "prompting the change" in m.text), (c.id, m.index)
                        offers += facts["retention_offer"] in m.text
    assert calls >= 3 and offers >= 1


def test_a_put_off_side_request_is_offered_again_by_name():
    """"You also asked about something else earlier" (seeds 6161, 7070, 8585): two put-off
    requests collapsed into "your other question", and the caller could not tell which."""
    from bargein.generators.planner_text import request_topic
    assert request_topic("Oh, while I have you, can I get a paper copy of my bill each month?") == \
        "getting a paper copy of your bill each month"
    assert request_topic("Sorry, off topic, but who do I talk to about a complaint?") == \
        "who to talk to about a complaint"
    assert request_topic("Oh, by the way, do you price match if something goes on sale after I "
                         "buy it?") == "whether we price match if something goes on sale after you buy it"
    assert request_topic("Sorry, random question, why did a show disappear?") == ""


def test_calls_name_the_request_they_put_off(convs):
    named = generic = 0
    for c in convs:
        for m in c.messages:
            if m.role != "assistant":
                continue
            if re.search(r"\byou asked about\b|\byour question about\b|\basked earlier about\b", m.text):
                named += 1
                assert not re.search(r"about (?:my|I)\b", m.text), m.text
            if re.search(r"\byour other (?:question|request)\b|\bsomething else earlier\b", m.text):
                generic += 1
    assert named >= 3 and generic <= named // 3, (named, generic)


def test_every_side_answer_the_verifier_reads_as_a_promise_is_one_the_planner_keeps():
    """"I'll send you both." was a promise to the verifier and none to the planner: the call
    ended without it and was discarded (seed 7 of the data bench, two of fifty)."""
    import glob

    import yaml

    from bargein.generators.planner import promises_in
    from bargein.verify.promises import _promises
    answers = []
    for key in P.bank_keys("pairs"):
        for p in P.bank("pairs", key):
            if isinstance(p, dict) and "assistant" in p:
                a = p["assistant"]
                answers += [a] if isinstance(a, str) else list(a)
    root = Path(P.__file__).resolve().parent / "catalogue"
    for f in glob.glob(str(root / "domain_*.yaml")):
        for h in yaml.safe_load(open(f)).get("hidden_facts") or []:
            answers += h.get("ack") or []
    assert len(answers) > 300
    missed = [a for a in answers if _promises(a) and not promises_in(a)]
    assert not missed, missed[:5]


def test_hand_read_4242_small_things():
    """Seed 4242: "a thirty dollars fee"; "I'll send you how to book one"; "I don't have a car"
    in a vehicle registration; an "anxious first-timer" who has "done this before"; "I'm
    required to check your date of birth on every call" and then an alternative to it."""
    from bargein.generators.user_sim import impatient_line
    assert P.tidy("There is a thirty dollars fee for that.") == "There is a thirty-dollar fee for that."
    assert P.tidy("You pay thirty dollars for the fee.") == "You pay thirty dollars for the fee."
    pairs = [a for key in P.bank_keys("pairs") for p in P.bank("pairs", key)
             if isinstance(p, dict) for a in ([p.get("assistant")] if isinstance(p.get("assistant"), str)
                                              else p.get("assistant") or [])]
    assert not [a for a in pairs if re.search(r"\b(?:send|email|text) you how to\b", a)]
    car = [p for p in P.bank("pairs", "normal_constraint.government") if "have a car" in p["user"]]
    assert car and all(re.search(car[0]["unless"], "Renew a vehicle registration") for _ in car)
    for seed in range(80):
        line = impatient_line("The fee covers the stop for six months, and", (), random.Random(seed),
                              persona="anxious first-timer; unsure of the process")
        assert not re.search(r"done this before|familiar with|know all that|heard this before", line), line
    assert not any("required to check {obj} on every call" in w
                   for w in P.bank("assistant", "recover_pb_why_requirement"))


def test_an_impatient_caller_hears_the_short_version(convs):
    """"Right then, here's the short version" and then "Since a single wrong digit in the street
    number can send it back to the depot, ..." (seeds 6161 and 7070): what the caller asked to
    skip was said anyway."""
    from bargein.generators.planner_text import _KEEPS, _WHY_ONLY, short_version
    assert short_version("Before I search, what new date would you like? Morning flights on this "
                         "route fill up quickly, so knowing that helps me find the best option.") \
        == "Before I search, what new date would you like?"
    keep = "The replacement ships today. It usually arrives within two business days."
    assert short_version(keep) == keep
    seen = 0
    for c in convs:
        for p in c.plan:
            if p.recovery is not None and p.recovery.type == "impatient" and p.unit is not None \
                    and p.unit.text and not p.unit.purpose:
                seen += 1
                for s in _SENT.split(p.unit.text):
                    assert _KEEPS.search(s) or not _WHY_ONLY.search(s), (c.id, s)
    assert seen >= 5


def test_a_slip_is_made_only_while_the_call_can_put_it_right():
    """A phone number slipped at message 27 of a call capped at 40 was never corrected and the
    call was discarded (seed 11 of the data bench)."""
    from bargein.generators.plan_state import MAX_MESSAGES, SLIP_ROOM
    from bargein.generators.planner import RulePlanner
    seen = 0
    for s in [x for seed in (5151, 5252, 5353) for x in scenario_batch(60, seed, Path(tempfile.mkdtemp()))]:
        for corr in s.intent.corrections:
            st = RulePlanner(s).new_state(random.Random(0))
            fact = next(f for f in s.kb.user_facts if f.key == corr.key)
            if corr.key in st.checked_keys() or corr.first_value in (fact.value, fact.spoken):
                continue                # (a change of mind from the fact's own value: no slip)
            seen += 1
            assert st.value_for(corr.key) == corr.first_value
            st.n_messages = MAX_MESSAGES - SLIP_ROOM + 1
            assert st.value_for(corr.key) != corr.first_value
    assert seen >= 3


def test_nobody_claims_to_know_what_was_just_reported_done():
    """"The stop payment is now in place on check 2098. | Alright, I know all that." (seed 11)."""
    from bargein.generators.user_sim import impatient_line
    for seed in range(60):
        line = impatient_line("Alright, all noted. The stop payment is now in place on check 2098. The",
                              (), random.Random(seed))
        assert not re.search(r"know all that|heard this|familiar with|got the gist", line), line


def test_hand_read_3535_small_things():
    """Seed 3535: "All I do with the last four digits of your card are match it to your file";
    "before we change the booking" in a delayed-bag report; "so I pull up the right record"."""
    from bargein.generators.catalogue_loader import load_catalogue
    assert P.fill("All I do with {obj} is match it to your file.",
                  obj="the last four digits of your card").endswith("your card is match it to your file.")
    text = str(load_catalogue())
    assert "Before we change the booking, can you confirm" not in text
    from bargein.generators.rewordings import groups
    wordings = [w for g in groups() for w in g.wordings]
    assert not [w for w in wordings if "so I pull up" in w]
    assert not [w for w in wordings if "trip you're calling about" in w and "change the booking" in w]
