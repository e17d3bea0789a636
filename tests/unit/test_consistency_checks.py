"""The consistency checks (bargein.verify.consistency), the agreement rules of grammar_issues and
the business-price rule of user_states_system_value.

Each is shown a hand-written defect (found at its message, with its evidence) and a hand-written
near miss that is no defect. The defect classes are those of a hand-read of offline output (a
pushback on the disputed charge, an impatient cut in a read-back, "Checking X are routine", a
re-asked value, a re-asked identity detail after verification, a caller quoting the consult fee);
recall on a seeded corpus is measured by bench/verify_recall.py, not here.
"""

from __future__ import annotations

from bargein.records.scenario import UserFact
from bargein.verify import run_checks
from bargein.verify.quality import grammar_issues
from doubles.conversation_examples import EXAMPLE_TURNS, build_conversation, example_scenario

SCN = example_scenario()


def conv_with(changes: dict[int, tuple], scenario=SCN, **kw):
    return build_conversation(scenario, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)],
                              **kw)


def found(conv, check: str):
    return [v for v in run_checks(conv) if v.check == check]


def with_facts(*facts: UserFact, provides: tuple[str, ...] = ()):
    return SCN.with_(kb=SCN.kb.with_(user_facts=(*SCN.kb.user_facts, *facts)),
                     intent=SCN.intent.with_(provides=provides))


# ---- pushback_on_cost -----------------------------------------------------------------------
def _pushback(planned: str, cut: int, said: str):
    return conv_with({14: ("assistant", planned, {"stage": "schedule_technician", "cut": cut,
                                                  "type": "pushback"}),
                      15: ("user", said)})


def test_a_pushback_on_the_disputed_purchase_is_not_on_a_cost():
    planned = ("I'm looking at the card ending in 7416. I see a charge of $498.77 from Skyline "
               "Electronics on June 14. Is that the one you're calling about?")
    (v,) = found(_pushback(planned, 13, "Hang on, why is there a charge? I never agreed to a "
                                        "charge."), "pushback_on_cost")
    assert v.message_index == 15 and "purchase record" in v.issue and "Skyline" in v.issue
    assert not v.fixable and "interjection" in v.evidence
    # a fee the company sets, same words of objection: grounded
    fee = ("There is a $35 late fee on the account, which we charge after the due date. Would "
           "you like to pay it today?")
    assert found(_pushback(fee, 6, "Hang on, why is there a fee? I never agreed to a fee."),
                 "pushback_on_cost") == []


def test_a_pushback_on_the_subject_of_a_question_is_not_on_a_cost():
    planned = ("Do you still have the card with you, and have you noticed any other charges in "
               "the last thirty days that you don't recognise?")
    (v,) = found(_pushback(planned, 15, "No, where do any other charges come from? I never "
                                        "agreed to that."), "pushback_on_cost")
    assert v.message_index == 15 and "subject of a question" in v.issue
    # a question that asks the caller to pay: a cost they bear
    pay = "To rebook, would you pay the $75 change fee now, or add it to your next bill?"
    assert found(_pushback(pay, 9, "Wait, a change fee? That's too much."),
                 "pushback_on_cost") == []


# ---- impatient_at_readback ------------------------------------------------------------------
def _impatient(planned: str, cut: int):
    return conv_with({10: ("assistant", planned, {"stage": "troubleshooting", "cut": cut,
                                                  "type": "impatient"}),
                      11: ("user", "I don't need the details. What's next?")})


def test_an_impatient_cut_in_a_read_back_is_found():
    planned = ("Thanks. Let me read that back so I get it right: Dana Whitfield, account 4471 "
               "0932 58. Is that correct?")
    (v,) = found(_impatient(planned, 4), "impatient_at_readback")
    assert v.message_index == 11 and "read-back" in v.issue and "4471 0932 58" in v.evidence
    # an explanation left to skip, then a question: a fair impatient cut
    long = ("Thanks. Amber lights usually mean the signal isn't reaching the modem from the "
            "street cabinet, which happens after storms. Is that right?")
    assert found(_impatient(long, 3), "impatient_at_readback") == []
    # the example's own impatient cut (a restart explanation)
    assert found(conv_with({}), "impatient_at_readback") == []


# ---- agreement (grammar_casing, grammar_gold) -------------------------------------------------
def test_a_singular_subject_with_a_plural_verb_is_found_and_fixed():
    (g,) = grammar_issues("Checking the last four digits are routine, and nothing is kept.")
    assert g[2] == "is" and "gerund" in g[3]
    text = "Here it is: a confirmation with all the details are going to your email."
    (a,) = grammar_issues(text)
    assert text[a[0]:a[1]] == "are" and a[2] == "is"
    for ok in ("Checking the forms is routine.", "A couple of the forms are missing.",
               "A copy of the forms you are sending is fine.", "Nothing in the details is wrong.",
               "The details of the plan are in your email."):
        assert grammar_issues(ok) == [], ok
    bad = conv_with({20: ("assistant", "Done. A confirmation with the visit details are on its "
                                       "way. Is there anything else?", {"stage": "wrap_up"})})
    (v,) = found(bad, "grammar_casing")
    assert v.message_index == 20 and v.fixable and '"is"' in v.edit
    gold = conv_with({}, gold={3: "account. Checking the billing zip code are routine. Could you "
                                  "confirm it?"})
    (v,) = found(gold, "grammar_gold")
    assert v.message_index == 3 and "gerund" in v.issue


# ---- reasks_given_value ---------------------------------------------------------------------
def test_asking_again_for_a_value_the_caller_gave_is_found():
    ask = ("assistant", "Got it. Could you tell me your full name, please?",
           {"stage": "troubleshooting"})
    (v,) = found(conv_with({8: ask}), "reasks_given_value")
    assert v.message_index == 8 and "'Dana Whitfield'" in v.issue and "full name" in v.evidence
    # asked again on purpose, or a read-back naming the value: fine
    again = ("assistant", "Sorry, could you tell me your full name again?", {"stage": "troubleshooting"})
    assert found(conv_with({8: again}), "reasks_given_value") == []
    back = ("assistant", "I have Dana Whitfield. What's your full name as on the bill, Dana "
                         "Whitfield?", {"stage": "troubleshooting"})
    assert found(conv_with({8: back}), "reasks_given_value") == []
    # a name inside an email address is not the name given
    email = ("user", "Sure, it's dana_whitfield@mail.com, and the account number is 4471 0932 58.")
    assert found(conv_with({1: email, 8: ask}), "reasks_given_value") == []
    # a gold recovery that asks for it again
    gold = conv_with({}, gold={7: "Noted, the fiber line. What's your full name, please?"})
    (v,) = found(gold, "reasks_given_value")
    assert v.message_index == 7 and v.issue.startswith("gold recovery")


# ---- reasks_after_verified ------------------------------------------------------------------
SSN = UserFact(key="ssn_last4", value="8315", kind="code")


def test_asking_for_an_identity_detail_after_verification_is_found():
    ask = ("assistant", "Got it. What are the last four digits of your Social Security number?",
           {"stage": "troubleshooting"})
    (v,) = found(conv_with({8: ask}, scenario=with_facts(SSN)), "reasks_after_verified")
    assert v.message_index == 8 and "message 6" in v.issue
    # before the caller is verified, the same question is fine
    early = ("assistant", "Thank you, Dana. What are the last four digits of your Social "
                          "Security number?", {"stage": "identity_verification"})
    unverified = ("assistant", "Once you're verified, we'll look at the internet problem. When "
                               "did the outage start?", {"stage": "troubleshooting", "cut": 12,
                                                         "type": "normal"})
    conv = conv_with({4: early, 6: unverified, 8: ask}, scenario=with_facts(SSN))
    assert found(conv, "reasks_after_verified") == []


def test_every_reask_after_verification_is_found_not_only_the_first():
    """A conversation that asks for one identity detail after verification and later for
    another gets a verdict for each (the recall corpus missed an injected re-ask whenever the
    conversation itself had asked for another detail first)."""
    dob = UserFact(key="date_of_birth", value="March 3, 1980", kind="code")
    first = ("assistant", "Got it. What are the last four digits of your Social Security number?",
             {"stage": "troubleshooting"})
    later = ("assistant", "Before we go on, what's your date of birth?", {"stage": "troubleshooting"})
    vs = found(conv_with({8: first, 10: later}, scenario=with_facts(SSN, dob)),
               "reasks_after_verified")
    assert [v.message_index for v in vs] == [8, 10]
    assert "Social Security" in vs[0].evidence and "date of birth" in vs[1].evidence


# ---- user_states_system_value: a price the business sets ------------------------------------
def test_the_caller_stating_a_business_price_is_found_even_when_the_scenario_provides_it():
    fee = UserFact(key="consult_fee", value="175 dollars for 45 minutes", kind="choice")
    said = ("user", "Oh, and it's the fiber line. If it helps, the consult fee is 175 dollars for "
                    "45 minutes.")
    (v,) = found(conv_with({7: said}, scenario=with_facts(fee, provides=("consult_fee",))),
                 "user_states_system_value")
    assert v.message_index == 7 and "consult fee" in v.issue
    # a "charge" that is a description the caller gives (what they dispute) is theirs
    what = UserFact(key="disputed_charge", value="international roaming", kind="text")
    said = ("user", "Oh, and the disputed charge is international roaming.")
    assert found(conv_with({7: said}, scenario=with_facts(what, provides=("disputed_charge",))),
                 "user_states_system_value") == []


def test_a_one_word_system_value_inside_a_spelled_code_is_not_stated():
    """conv-dca1322182bbfb67 (seed 101): "payment plan months" = "six" is no value the caller
    states when they spell their patient ID "R F, eight five nine nine one six"; nor is the
    label "change reason" a correction."""
    months = UserFact(key="payment_plan_months", value="six", kind="choice")
    scn = with_facts(months)
    said = ("user", "Oh, and it's the fiber line. My code is R F, eight five nine nine one six.")
    assert found(conv_with({7: said}, scenario=scn), "user_states_system_value") == []
    # the helper: inside the spelled code only, or said on its own
    from bargein.verify.quality import _in_spelled_run
    assert _in_spelled_run("R F, eight five nine nine one six.", "six")
    assert not _in_spelled_run("I'd like to spread it over six months.", "six")
