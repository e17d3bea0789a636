"""The checks of the second reading (bargein.verify.discourse) and the widened quality rules.

Each check is shown a hand-written defect (found, with its index and evidence) and a
hand-written near miss that is not a defect. Recall on a seeded corpus is measured by
bench/verify_recall.py, not here.
"""

from __future__ import annotations

from bargein.verify import run_checks, verify_conversation
from bargein.verify.discourse import value_spans, yes_no_question
from bargein.verify.quality import grammar_issues
from doubles.conversation_examples import (
    EXAMPLE_TURNS, build_conversation, example_conversation, example_scenario,
)

SCN = example_scenario()


def conv_with(changes: dict[int, tuple], **kw):
    return build_conversation(SCN, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)], **kw)


def found(conv, check: str):
    return [v for v in run_checks(conv) if v.check == check]


# ---- presupposed_value --------------------------------------------------------------------
def test_a_value_framed_as_the_callers_before_they_gave_it_is_presupposed():
    said = ("Thanks for calling Northwind Mobile. You mentioned your zip code is 60614, so could "
            "you tell me your full name and the account number on your bill?")
    (v,) = found(conv_with({0: ("assistant", said, {"stage": "identity_verification"})}),
                 "presupposed_value")
    assert v.message_index == 0 and "billing_zip='60614'" in v.issue and not v.fixable
    # the records stating it is no presupposition
    records = said.replace("You mentioned your zip code is 60614", "Our records list 60614")
    assert found(conv_with({0: ("assistant", records, {"stage": "identity_verification"})}),
                 "presupposed_value") == []
    # a value the caller did give (message 1), read back later: fine
    ok = "Just to check, I have 4471 0932 58 written down. When did the outage start?"
    assert found(conv_with({8: ("assistant", ok, {"stage": "troubleshooting"})}),
                 "presupposed_value") == []


def test_a_so_thats_read_back_of_a_value_never_given_is_presupposed():
    """Seen in hand reads of seeds 31415 and 23: "So that's Canada, leaving Tuesday and returning
    Monday, October 6. Is that right?" with no return date from the caller; "So that's Keller,
    Warren and Powell, and you're David Adams" with no business name. (The example caller gives
    the zip code 60614 in message 5.)"""
    stage = {"stage": "identity_verification"}
    said = "Thank you, Dana. So that's 60614 for the billing zip. Is that right?"
    (v,) = found(conv_with({2: ("assistant", said, stage)}), "presupposed_value")
    assert v.message_index == 2 and "billing_zip='60614'" in v.issue
    opener = "Okay, as I was saying, so you're in 60614. Did I get that right?"
    assert found(conv_with({2: ("assistant", opener, stage)}), "presupposed_value")
    # the same read-back once the caller has said it: fine
    assert found(conv_with({8: ("assistant", "So that's 60614 for the billing zip. Is that right?",
                                {"stage": "troubleshooting"})}), "presupposed_value") == []
    # a record and its consequence, not a read-back ("..., so you're covered")
    record = ("Thank you, Dana. The line was set up in 60614 last spring, and the outage started "
              "today, so you're covered by the service credit.")
    assert found(conv_with({2: ("assistant", record, stage)}), "presupposed_value") == []


def test_a_gold_recovery_that_reads_back_an_unsaid_value_is_presupposed():
    gold = {3: "account. Let me read that back: the zip code is 60614. Is that right?"}
    (v,) = found(conv_with({}, gold=gold), "presupposed_value")
    assert v.message_index == 3 and "gold recovery" in v.issue


# ---- cut_inside_value ---------------------------------------------------------------------
def test_a_cut_inside_a_date_or_name_is_found_and_moved_to_the_value_end():
    text = ("The earliest visit is Thursday, March 6, 2025 at the Eastgate Clinic. "
            "Does that work for you?")
    bad = conv_with({14: ("assistant", text, {"stage": "schedule_technician", "cut": 6,
                                             "type": "pushback"})})
    (v,) = found(bad, "cut_inside_value")
    assert v.message_index == 15 and "'Thursday, March 6, 2025'" in v.issue and v.fixable
    assert '"value": 8' in v.edit                      # after "2025": the whole date heard
    vc = verify_conversation(bad)
    assert vc.accepted and vc.conversation.messages[14].heard_text.endswith("2025")
    # the same cut after the whole date is clean
    ok = conv_with({14: ("assistant", text, {"stage": "schedule_technician", "cut": 8,
                                            "type": "pushback"})})
    assert found(ok, "cut_inside_value") == []
    spans = {text[s:e] for s, e, _ in value_spans(ok, text)}
    assert "Eastgate Clinic" in spans


def test_a_name_ends_before_the_clause_that_follows_it():
    """"the trace is open with Crosscountry Freight, | and I've sent the reference": a nod after
    the carrier's name splits no value (seed 99: two good calls discarded because the name run
    reached over ", and I've")."""
    text = "Here's the plan: the trace is open with Crosscountry Freight, and I've sent the reference."
    spans = {text[s:e].rstrip(",") for s, e, _ in value_spans(conv_with({}), text)}
    assert "Crosscountry Freight" in spans and not any("and" in v for v in spans)
    ok = conv_with({14: ("assistant", text, {"stage": "schedule_technician", "cut": 10,
                                            "type": "pushback"})})
    assert found(ok, "cut_inside_value") == []
    # cut inside the name: still found
    bad = conv_with({14: ("assistant", text, {"stage": "schedule_technician", "cut": 9,
                                             "type": "pushback"})})
    assert len(found(bad, "cut_inside_value")) == 1


def test_a_backchannel_inside_a_name_is_unfixable():
    text = "Thanks for calling Keystone Federal Credit Union, this is Sam. How can I help?"
    bad = conv_with({2: ("assistant", text, {"stage": "identity_verification", "cut": 5,
                                            "type": "filler"}),
                     4: ("assistant", "Union, this is Sam. How can I help?",
                         {"stage": "identity_verification"})}, gold={3: "Union, this is Sam."})
    (v,) = found(bad, "cut_inside_value")
    assert v.message_index == 3 and not v.fixable and "Keystone Federal Credit Union" in v.issue


# ---- yes_no_answered ----------------------------------------------------------------------
def test_yes_no_questions_are_told_from_wh_questions():
    assert yes_no_question("I can hold it. Would you like that?") == "Would you like that?"
    assert yes_no_question("Okay, so, is that right?") == "Okay, so, is that right?"
    assert yes_no_question("That's booked, right?") == "That's booked, right?"
    assert yes_no_question("When did the outage start?") == ""
    assert yes_no_question("Which day suits you?") == ""


def test_a_side_remark_after_a_yes_no_question_is_no_answer():
    bad = conv_with({16: ("assistant", "I can add you to the cancellation list for an earlier "
                                       "slot. Shall I do that?", {"stage": "schedule_technician"}),
                     17: ("user", "My neighbour had the same outage last week.")})
    (v,) = found(bad, "yes_no_answered")
    assert v.message_index == 17 and "Shall I do that?" in v.evidence and not v.fixable
    for reply in ("Go for it.", "Nah, not today.", "I'd rather keep Thursday.",
                  "Yes, please do that.",
                  # no preference answers "do you have a preferred time?" (seed 5)
                  "Honestly, whatever's easiest. Whatever is soonest."):
        ok = conv_with({16: bad.messages[16].text and ("assistant", bad.messages[16].text,
                                                       {"stage": "schedule_technician"}),
                        17: ("user", reply)})
        assert found(ok, "yes_no_answered") == [], reply


def test_a_question_asked_again_after_a_side_remark_is_still_open():
    q = "I can add you to the cancellation list for an earlier slot. Shall I do that?"
    ok = conv_with({16: ("assistant", q, {"stage": "schedule_technician"}),
                    17: ("user", "My neighbour had the same outage last week."),
                    18: ("assistant", "Sorry to hear that. " + q, {"stage": "wrap_up"})})
    assert found(ok, "yes_no_answered") == []


# ---- grammar_gold and the widened grammar rules -------------------------------------------
def test_grammar_slips_in_a_gold_recovery_are_found():
    gold = {15: "I understand. the earliest slot is Thursday; I can add you to the list."}
    (v,) = found(conv_with({}, gold={3: example_conversation().gold_recoveries[3], **gold}),
                 "grammar_gold")
    assert v.message_index == 15 and "lower-case" in v.issue
    ok = {15: "I understand. The earliest slot is Thursday; Dr. Patel can see you then."}
    assert found(conv_with({}, gold={3: example_conversation().gold_recoveries[3], **ok}),
                 "grammar_gold") == []


def test_agreement_and_day_casing_rules():
    rules = lambda t: [r for *_, r in grammar_issues(t)]  # noqa: E731
    assert rules("I wants a refund.") == ["'I wants': the verb does not agree"]
    assert rules("Sure, thursday works.") == ["the day or month 'thursday' in lower case"]
    assert rules("We was told Monday.") == ["'We was': the verb does not agree"]
    for fine in ("I always check.", "I guess so.", "I was told Monday.", "I focus on it.",
                 "I may call in May."):
        assert grammar_issues(fine) == [], fine


# ---- escalation_addressed -----------------------------------------------------------------
def test_a_request_for_a_supervisor_passed_over_is_found():
    bad = conv_with({17: ("user", "This is ridiculous. I'd like to speak to a supervisor.")})
    (v,) = found(bad, "escalation_addressed")
    assert v.message_index == 17 and "supervisor" in v.issue
    ok = conv_with({17: ("user", "This is ridiculous. I'd like to speak to a supervisor."),
                    18: ("assistant", "I'll ask my team leader to call you back today. Shall I "
                                      "keep Thursday as a backup?", {"stage": "schedule_technician"})})
    assert found(ok, "escalation_addressed") == []


# ---- confirmation_has_object --------------------------------------------------------------
def test_is_that_right_after_a_question_or_nothing_is_found():
    for lead in ("Which day suits you?", "Let's look at the next part."):
        bad = conv_with({16: ("assistant", f"I can add you to the list. {lead} Is that right?",
                              {"stage": "schedule_technician"})})
        (v,) = found(bad, "confirmation_has_object")
        assert v.message_index == 16 and lead in v.evidence
    ok = conv_with({16: ("assistant", "I have 4471 0932 58 as the account. Is that right?",
                         {"stage": "schedule_technician"})})
    assert found(ok, "confirmation_has_object") == []


def test_a_sentence_is_not_ended_by_a_title():
    from bargein.verify.quality import whole_phrase
    conv = conv_with({16: ("assistant", "Okay. Dr. Steven Morse can see you Thursday at 2 pm. "
                                        "Does that work?", {"stage": "schedule_technician"})})
    assert whole_phrase("Dr. Steven Morse can see you Thursday at 2 pm.", conv)
    assert not whole_phrase("Steven Morse can see you Thursday at 2 pm.", conv)


# ---- user_states_system_value: a value told back --------------------------------------------
def test_a_value_the_assistant_stated_told_back_as_news_is_found_and_cut():
    said = "Okay. The fiber line at your apartment has a new modem on file, the Netgear CM1200."
    bad = conv_with({8: ("assistant", said + " When did the outage start?",
                         {"stage": "troubleshooting"}),
                     9: ("user", "It started Monday around 7 pm, and the lights are amber. "
                                 "And the modem model is the Netgear CM1200.")})
    facts = [f.model_copy(update={"key": "modem_model", "value": "the Netgear CM1200",
                                   "kind": "text"})
             for f in SCN.kb.user_facts[:1]]
    scn = SCN.model_copy(update={"kb": SCN.kb.model_copy(update={
        "user_facts": tuple(SCN.kb.user_facts) + tuple(facts)})})
    bad = bad.model_copy(update={"scenario": scn})
    (v,) = found(bad, "user_states_system_value")      # a value only the records held, told back
    assert v.message_index == 9 and "Netgear" in v.evidence
    # a value the caller provides (no record stated it first as its own), told back after the
    # assistant read it: the sentence goes, the rest of the turn stays
    scn2 = scn.model_copy(update={"intent": scn.intent.model_copy(update={
        "provides": tuple(scn.intent.provides) + ("modem_model",)})})
    (v,) = found(bad.model_copy(update={"scenario": scn2}), "user_states_system_value")
    assert v.message_index == 9 and "tells back" in v.issue and v.fixable
    vc = verify_conversation(bad.model_copy(update={"scenario": scn2}))
    assert vc.accepted and vc.conversation.messages[9].text == \
        "It started Monday around 7 pm, and the lights are amber."


# ---- gold_meets_own_rubric (bargein.verify.coherence) -----------------------------------------
def _impatient_rubric(quote: str):
    from bargein.records.conversation import Rubric

    return Rubric(message_index=11, type="impatient",
                  tf_criterion="Books the technician visit without finishing the restart steps.",
                  rq_criteria=("Skips the rest of the interrupted explanation instead of finishing it.",
                               f"Does not re-explain or repeat what the caller already heard "
                               f"(\"{quote}\")."))


def test_a_gold_that_restates_the_span_its_criterion_forbids_is_found():
    quote = "Amber lights usually mean the signal isn't reaching the modem."
    gold = ("Sure. Amber lights mean the signal is not reaching your modem, so I'll book "
            "someone. The earliest visit is Thursday.")
    (v,) = found(conv_with({}, rubrics=[_impatient_rubric(quote)], gold={11: gold}),
                 "gold_meets_own_rubric")
    assert v.message_index == 11 and not v.fixable
    assert "Amber lights mean the signal" in v.evidence and "reaching the modem" in v.evidence
    # the same criterion, a gold that moves on: fine
    ok = "Sure, let's book someone. The earliest technician visit is Thursday between 9 and 11 am."
    assert found(conv_with({}, rubrics=[_impatient_rubric(quote)], gold={11: ok}),
                 "gold_meets_own_rubric") == []
    # a quote the caller never heard is not checkable here (rq_whole_phrase's business)
    unheard = "Unplug the power cord and wait thirty seconds."
    assert found(conv_with({}, rubrics=[_impatient_rubric(unheard)],
                           gold={11: "Sure. Unplug the power cord and wait thirty seconds."}),
                 "gold_meets_own_rubric") == []


def test_a_quoted_question_asked_again_counts_as_a_restatement():
    from bargein.verify.coherence import restates

    # conv-2ae7150a3f3901b7 ev13 of the lead's reading (seed 23)
    assert restates("What's the new delivery address?", "What new address should I use?")
    assert restates("Where should it go?", "Okay. Where should it go?")
    assert not restates("What's the new delivery address?", "What time suits you for delivery?")
    assert not restates("I'm sorry your bag didn't arrive.", "Could you read me the bag tag number?")


# ---- doubled_phrase -------------------------------------------------------------------------------
def test_the_same_clause_twice_in_adjacent_sentences_is_doubled():
    doubled = ("Fourteen days are fixed on our side, so let me tell you what I can do instead. "
               "Here's what I can do: I can add you to the cancellation list.")
    (v,) = found(conv_with({20: ("assistant", doubled, {"stage": "wrap_up"})}), "doubled_phrase")
    assert v.message_index == 20 and "what i can do" in v.issue
    (g,) = found(conv_with({}, gold={3: example_conversation().gold_recoveries[3],
                                     15: "Sure. So, the options you have here. Okay, the options "
                                         "you have here are two."}), "doubled_phrase")
    assert g.message_index == 15 and "gold recovery" in g.issue
    once = ("Fourteen days are fixed on our side, so let me tell you what I can do instead. "
            "I can add you to the cancellation list.")
    assert found(conv_with({20: ("assistant", once, {"stage": "wrap_up"})}), "doubled_phrase") == []
    apart = ("Let me tell you what I can do for you. First the list. Then, what I can do for "
             "you is a callback.")
    assert found(conv_with({20: ("assistant", apart, {"stage": "wrap_up"})}), "doubled_phrase") == []


# ---- task_abandoned_on_skip -----------------------------------------------------------------------
def test_a_gold_that_closes_the_request_with_a_stage_never_done_abandons_the_task():
    """The cut at message 10 is in troubleshooting; the technician visit (schedule_technician)
    is the work left. A conversation that never schedules it, with a gold that says "that wraps
    up", is flagged; the same gold in a conversation that does schedule it, or a gold that
    moves on, is not."""
    ex = example_conversation()
    never = tuple(m.with_(stage="wrap_up") if m.stage == "schedule_technician" else m
                  for m in ex.messages)
    closing = "Sure. That wraps up your request. Is there anything else I can do?"
    bad = ex.with_(messages=never, gold_recoveries={**ex.gold_recoveries, 11: closing})
    (v,) = found(bad, "task_abandoned_on_skip")
    assert v.message_index == 11 and "schedule_technician" in v.issue and not v.fixable
    onward = "Sure. Let's book a technician: the earliest visit is Thursday."
    assert found(bad.with_(gold_recoveries={**ex.gold_recoveries, 11: onward}),
                 "task_abandoned_on_skip") == []
    assert found(ex.with_(gold_recoveries={**ex.gold_recoveries, 11: closing}),
                 "task_abandoned_on_skip") == []
    # a workflow that lets the stage go (a skip transition over it) excuses it
    wf = ex.scenario.kb.workflow
    from bargein.records.scenario import Transition
    t = Transition(source="schedule_technician", target="wrap_up", kind="skip",
                   condition="the caller fixed it themselves")
    sc = ex.scenario.with_(kb=ex.scenario.kb.with_(workflow=wf.with_(
        transitions=(*wf.transitions, t))))
    assert found(bad.with_(scenario=sc), "task_abandoned_on_skip") == []


# ---- pushback_on_benefit ----------------------------------------------------------------------------
def test_a_pushback_on_a_condition_the_caller_meets_is_found():
    """conv-13f33a9f8a801229 ev7 of the lead's reading: "Since it's within seven days [you
    qualify for a full refund]" -> "Seven days? That seems unreasonable."."""
    def with_turn(planned: str, said: str):
        return conv_with({14: ("assistant", planned, {"stage": "schedule_technician", "cut": 14,
                                                      "type": "pushback"}),
                          15: ("user", said)})

    benefit = ("Since it's within seven days of the outage, you qualify for a free visit. "
               "The earliest technician visit is Thursday.")
    (v,) = found(with_turn(benefit, "Seven days? That seems unreasonable."), "pushback_on_benefit")
    assert v.message_index == 15 and "seven days" in v.issue and not v.fixable
    burden = ("Because of demand, a visit takes seven days from today, I'm sorry to say. The "
              "earliest technician visit is Thursday.")
    assert found(with_turn(burden, "Seven days? That seems unreasonable."),
                 "pushback_on_benefit") == []
    # the benefit said, the pushback on something else
    assert found(with_turn(benefit, "Thursday? That's way too long to be without internet."),
                 "pushback_on_benefit") == []
    # "given that" states a condition as "since" does, and "costs you nothing" is a benefit (two
    # of the seeded corpus's misses, bench/verify_recall.py --show-misses)
    given = ("Given that it's only been seven days, the visit costs you nothing. The earliest "
             "technician visit is Thursday.")
    (v,) = found(with_turn(given, "Seven days? That seems unreasonable."), "pushback_on_benefit")
    assert v.message_index == 15
