"""The quality checks (bargein.verify.quality), the quality report and the release gate.

Each check is shown one hand-written defect (found, with its message index and evidence) and
the hand-written clean example conversation (not flagged). The recall on a seeded corpus is
measured by bench/verify_recall.py, not here.
"""

from __future__ import annotations

import pytest

from bargein.errors import ConfigError
from bargein.records.conversation import Rubric
from bargein.verify import run_checks, verify_conversation
from bargein.verify.quality import grammar_issues, whole_phrase
from bargein.verify.report import check_thresholds, dpo_separability, parse_thresholds
from doubles.conversation_examples import (
    EXAMPLE_TURNS, build_conversation, example_conversation, example_scenario,
)

SCN = example_scenario()


def conv_with(changes: dict[int, tuple], **kw):
    return build_conversation(SCN, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)], **kw)


def found(conv, check: str):
    return [v for v in run_checks(conv) if v.check == check]


def test_the_clean_example_passes_the_quality_checks():
    assert run_checks(example_conversation()) == []


def test_pushback_on_a_fragment_is_not_grounded():
    bad = conv_with({15: ("user", "Wait, earliest? Nobody told me about earliest.")})
    (v,) = found(bad, "interjection_grounded")
    assert v.message_index == 15 and "earliest" in v.issue and not v.fixable


def test_pushback_that_agrees_is_not_a_pushback():
    bad = conv_with({15: ("user", "Lovely, go ahead with that then.")})
    (v,) = found(bad, "interjection_grounded")
    assert "does not object" in v.issue


def test_impatient_cut_inside_a_question_has_nothing_to_skip():
    turns = list(EXAMPLE_TURNS)
    text = turns[10][1] + " Is your modem the grey one from us or your own model?"
    bad = conv_with({10: ("assistant", text, {"stage": "troubleshooting", "cut": 38,
                                                "type": "impatient"})})
    (v,) = found(bad, "impatient_has_rest")
    assert v.message_index == 11 and "inside a question" in v.issue


@pytest.mark.parametrize("text,rule", [
    ("Great. you're verified now.", "lower-case"),
    ("I has the account number here.", "'I has'"),
    ("You can use a online form.", "'an' before"),
    ("We will send the the letter.", "doubled"),
    ("Do you has the code?", "'you has'"),
    # seen in a hand read of seed 9001: a question with a plural subject after "is"
    ("Sorry, is the last four digits really necessary for this?", "'is the last four digits'"),
])
def test_grammar_and_casing_errors_are_found_and_repaired(text, rule):
    bad = conv_with({19: ("user", text)})
    vs = found(bad, "grammar_casing")
    assert vs and any(rule in v.issue for v in vs) and all(v.fixable for v in vs)
    vc = verify_conversation(bad)
    assert vc.accepted and vc.conversation.messages[19].text != text


def test_grammar_leaves_near_misses_alone():
    for ok in ("It takes an hour, e.g. on an iPhone.", "A user gets a one-time code at 9 a.m. "
               "tomorrow.", "Does it have a unique ID?", "mm-hm",
               "It is the details of the plan that matter.", "The problem is the charges on my bill.",
               # a noun before a noun (hand read of seed 5151: "are the records office open")
               "Um, by the way, is the records office open on Saturdays?",
               # a hyphenated word's tail (hand read of seed 8585: the repair made "You get
               # single sign-on the Business plan")
               "You get single sign-on on the Business plan.", "We checked the add-on on your bill.",
               # spelled letters (hand read of seed 2929: "D Y A A F A" was repaired to DYAFA)
               "Yep, D Y A A F A."):
        assert grammar_issues(ok) == [] or ok == "mm-hm"


def test_you_said_about_something_never_said():
    bad = conv_with({8: ("assistant", "You mentioned your neighbour had the same outage last "
                                      "week. When did the outage start?", {"stage": "troubleshooting"})})
    (v,) = found(bad, "attribution_grounded")
    assert v.message_index == 8 and "neighbour" in v.issue
    ok = conv_with({8: ("assistant", "You said it's the fiber line at your apartment. When did "
                                     "the outage start?", {"stage": "troubleshooting"})})
    assert found(ok, "attribution_grounded") == []
    # a condition attributes nothing ("If you believe insurance made a mistake, I can open a
    # review": a wording of "If you think ... incorrectly", flagged on seed 5)
    cond = conv_with({8: ("assistant", "If you believe your neighbour had the same outage, I can "
                                       "check the street. When did the outage start?",
                          {"stage": "troubleshooting"})})
    assert found(cond, "attribution_grounded") == []


def side_answer(said: str):
    """The example call with ``said`` in the answer to the caller's side question (message 18)."""
    return conv_with({18: ("assistant", f"That increase is the annual equipment fee. {said} "
                                        "Now, back to your repair: shall I keep Thursday?")})


def test_a_promise_in_the_answer_to_a_side_request_is_kept():
    """Hand read of seed 9191: "I'll send you how to book one", "I can book one after this",
    and the call closed with none of it done or offered again (11 of 52 points)."""
    promise = ("assistant", "That increase is the annual equipment fee; I'll email you the fee "
                            "schedule after this. Now, back to your repair: shall I keep Thursday "
                            "as your booking?")
    bad = conv_with({18: promise})
    (v,) = found(bad, "promise_kept")
    assert v.message_index == 18 and "fee schedule" in v.issue and not v.fixable
    kept = conv_with({18: promise, 20: ("assistant", "Done. You're booked for Thursday between 9 "
                                        "and 11 am, and I've emailed you the fee schedule. Is "
                                        "there anything else?")})
    assert found(kept, "promise_kept") == []
    offered = conv_with({18: promise, 20: ("assistant", "Done, you're booked for Thursday. Now, "
                                           "about your other question from earlier: shall we "
                                           "take care of that now, or another time?")})
    assert found(offered, "promise_kept") == []
    # a condition or a standing arrangement is no promise to keep on this call
    for said in ("If the line drops, I'll call you straight back.",
                 "Noted, I'll send codes to your email instead while you're away.",
                 "The moment they answer, I'll send you an email.",
                 "Noted, I'll send any updates by email.",
                 "Understood, I'll send letters only to the address we confirm today."):
        assert found(side_answer(said), "promise_kept") == [], said


def test_more_ways_of_putting_a_promise_off():
    """Seen in an independent hand read of seed 5151: "I'll give you their details afterwards"
    (the municipal court, for a parking ticket) and the call closed at the next turns with
    nothing given; "afterwards", "at the end", "when we're done" and "in my follow-up" put a
    thing off as "after this" does."""
    for said in ("I'll give you their details afterwards.",
                 "I'll text you the wildlife department's number at the end.",
                 "I'll walk you through it when we're done.",
                 "I'll put the branch hours in my follow-up."):
        (v,) = found(side_answer(said), "promise_kept")
        assert v.message_index == 18, said
    # "at the end of the month" is when something happens, not a thing put off on this call
    calm = conv_with({18: ("assistant", "That increase is the annual equipment fee, billed at the "
                                        "end of the month. Now, back to your repair: shall I keep "
                                        "Thursday?")})
    assert found(calm, "promise_kept") == []


def test_a_slip_the_caller_never_puts_right():
    """The scenario plans "Monday" as a slip for the outage day it holds as "Sunday". Said and
    never put right, the call carries a value its own labels contradict (seed 5151, read by
    hand: card digits and a patient ID taken wrong, the planned correction never made)."""
    assert found(example_conversation(), "slip_corrected") == []      # put right at message 13
    never = conv_with({13: ("user", "Hmm, Thursday, okay."),
                       12: ("assistant", "Of course. The earliest technician visit is Thursday "
                                         "between 9 and 11 am. Does that work for you?",
                            {"stage": "schedule_technician"})})
    (v,) = found(never, "slip_corrected")
    assert v.message_index == 9 and "'Monday'" in v.issue and "'Sunday'" in v.issue
    # a change of mind (the first value the one on record) is true without a correction
    from bargein.records import Correction
    scn = SCN.model_copy(update={"intent": SCN.intent.model_copy(update={"corrections": (
        Correction(key="outage_day", first_value="Sunday", corrected_value="Monday"),)})})
    calm = build_conversation(scn, [{13: ("user", "Hmm, Thursday, okay.")}.get(i, t)
                                    for i, t in enumerate(EXAMPLE_TURNS)])
    assert found(calm, "slip_corrected") == []


def test_a_tf_criterion_asking_for_given_information():
    rubrics = list(example_conversation().rubrics)
    rubrics[0] = Rubric(message_index=3, type="filler", tf_criterion="The response asks the "
                        "caller for their account number to continue.", rq_criteria=rubrics[0].rq_criteria)
    bad = conv_with({}, rubrics=rubrics)
    (v,) = found(bad, "tf_not_given")
    assert v.message_index == 3 and "account number" in v.issue


def test_an_rq_criterion_quoting_a_fragment():
    rubrics = list(example_conversation().rubrics)
    r = rubrics[4]
    rubrics[4] = r.with_(rq_criteria=("Engages with the caller's concern (too long to be).",
                                      *r.rq_criteria[1:]))
    (v,) = found(conv_with({}, rubrics=rubrics), "rq_whole_phrase")
    assert v.message_index == r.message_index
    conv = example_conversation()
    assert whole_phrase("the earliest technician visit", conv)
    assert whole_phrase("Thursday? That's way too long to be without internet.", conv)
    assert not whole_phrase("visit is Thursday between", conv)


def test_resolved_without_the_final_stage():
    conv = example_conversation()
    wf = conv.scenario.kb.workflow
    final = {t.source for t in wf.transitions if t.kind == "next" and t.target in wf.terminals}
    short = conv.with_(messages=tuple(m for m in conv.messages if m.stage not in final),
                       outcome="resolved")
    if final and len(short.messages) < len(conv.messages):
        (v,) = found(short, "resolved_goal_reached")
        assert v.message_index is None and "never happens" in v.issue
    assert found(conv.with_(outcome="resolved"), "resolved_goal_reached") == []


def test_thresholds_name_known_figures_and_gate():
    report = {"user_distinct2": 0.30, "dpo_first2_accuracy": 0.6, "train_test_overlap": 0}
    with pytest.raises(ConfigError) as e:
        parse_thresholds({"user_distinct": 0.4}, report)
    assert "user_distinct2" in str(e.value) and "dpo_first2_accuracy" in str(e.value)
    missed = check_thresholds(report, {"user_distinct2": {"min": 0.45},
                                       "dpo_first2_accuracy": "<= 0.65"})
    assert missed == ["user_distinct2 = 0.3 misses the threshold >= 0.45"]


def test_dpo_separability_is_chance_for_indistinguishable_pairs_and_one_for_fixed_openers():
    same = [{"conversation_id": f"c{i}", "chosen": [{"content": f"Sure thing {i} ok"}],
             "rejected": [{"content": f"Sure thing {i} no"}]} for i in range(40)]
    assert dpo_separability(same)["dpo_first2_accuracy"] == 0.5
    fixed = [{"conversation_id": f"c{i}", "chosen": [{"content": f"Right {i} then"}],
              "rejected": [{"content": f"Anyway so {i} then and more words"}]} for i in range(40)]
    sep = dpo_separability(fixed)
    assert sep["dpo_first_word_accuracy"] == 1.0 and sep["dpo_length_accuracy"] == 1.0


def test_an_old_or_incomplete_conversation_file_fails_per_line_with_evidence(tmp_path):
    import json

    from click.testing import CliRunner

    from bargein.cli import cli
    from bargein.verify.inputs import read_conversations

    good = example_conversation()
    old = json.loads(good.model_dump_json())
    old["gold"] = old.pop("gold_recoveries")              # a field renamed since
    del old["messages"][3]["role"]
    no_scenario = json.loads(good.model_dump_json())
    del no_scenario["scenario"]
    path = tmp_path / "convs.jsonl"
    path.write_text("\n".join([json.dumps(old), json.dumps(no_scenario), good.model_dump_json(),
                               "{oops"]) + "\n")
    convs, fails = read_conversations(path)
    assert [c.id for c in convs] == [good.id]
    assert [f.evidence["line"] for f in fails] == [1, 2, 4]
    assert list(fails[0].evidence["unknown"]) == ["gold"] and "messages.3.role" in fails[0].evidence["missing"]
    assert "older or hand-edited" in fails[0].reason and "Fix:" in fails[0].reason
    assert list(fails[1].evidence["missing"]) == ["scenario"] and "not JSON" in fails[2].reason
    res = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "w"), "verify", "--conversations",
                                   str(path)])
    assert res.exit_code == 0 and "1 accepted" in res.output and "3 failed" in res.output
    lines = (tmp_path / "w" / "verify.failures.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["error_type"] == "InvalidInput"


def _scenario_with(user_facts=(), hidden=()):
    kb = SCN.kb.with_(user_facts=tuple(SCN.kb.user_facts) + tuple(user_facts))
    intent = SCN.intent.with_(hidden_facts=tuple(SCN.intent.hidden_facts) + tuple(hidden))
    return SCN.with_(kb=kb, intent=intent)


def _tf_rubrics(tf: str):
    rubrics = list(example_conversation().rubrics)
    rubrics[0] = Rubric(message_index=3, type="filler", tf_criterion=tf,
                        rq_criteria=rubrics[0].rq_criteria)
    return rubrics


def test_tf_asking_for_a_value_said_only_inside_an_email_is_not_flagged():
    """The caller gave "dana.whitfield@example.com", never the name "Dana Whitfield" itself:
    asking for the full name asks for something not yet given (seen in the bench's clean
    look-alikes, conv-93e9f67237a024ab)."""
    tf = "The response asks the caller for their full name so the request can continue."
    turns = list(EXAMPLE_TURNS)
    turns[1] = ("user", "Sure, it's dana.whitfield@example.com, and the account number is 4471 0932 58.")
    email_only = build_conversation(SCN, turns, rubrics=_tf_rubrics(tf))
    assert found(email_only, "tf_not_given") == []
    said = conv_with({}, rubrics=_tf_rubrics(tf))            # the name said as itself: flagged
    (v,) = found(said, "tf_not_given")
    assert "full name" in v.issue


def test_tf_naming_a_longer_fact_is_about_that_fact():
    """"account number PIN" names the PIN (not given), not the account number (given)."""
    from bargein.records.scenario import UserFact

    scn = _scenario_with(user_facts=[UserFact(key="account_number_pin", value="7734", kind="code")])
    pin = build_conversation(scn, EXAMPLE_TURNS, rubrics=_tf_rubrics(
        "The response asks the caller for their account number pin before going on."))
    assert found(pin, "tf_not_given") == []
    number = build_conversation(scn, EXAMPLE_TURNS, rubrics=_tf_rubrics(
        "The response asks the caller for their account number before going on."))
    (v,) = found(number, "tf_not_given")
    assert "account number" in v.issue


def test_a_hidden_fact_said_again_is_not_news_but_its_first_mention_is():
    from bargein.records.scenario import UserFact

    scn = _scenario_with(hidden=[UserFact(key="big_event", value="a watch party on Tuesday",
                                          kind="event")])
    turns = list(EXAMPLE_TURNS)
    turns[9] = ("user", "It started Monday around 7 pm, and the lights are amber. I have a "
                        "watch party on Tuesday.")
    turns[10] = ("assistant", "Amber lights with a watch party on Tuesday coming up: let's get "
                              "this fixed. I'd like to walk you through a restart first: unplug "
                              "the power cord, wait thirty seconds, and then plug it back in.",
                 turns[10][2])
    taken_up = build_conversation(scn, turns)
    assert found(taken_up, "hidden_fact_addressed") == []
    # said again later: the reply need not take it up a second time
    again = list(turns)
    again[11] = ("user", "I already did all that, remember the watch party on Tuesday, can we just book someone?")
    assert found(build_conversation(scn, again), "hidden_fact_addressed") == []
    # the first mention ignored is still found
    ignored = list(EXAMPLE_TURNS)
    ignored[9] = turns[9]
    (v,) = found(build_conversation(scn, ignored), "hidden_fact_addressed")
    assert v.message_index == 10


def test_one_everyday_word_or_number_in_common_is_no_take_up():
    """"Right, the next part." shares only "part" with "an interpreter for the complicated
    parts": the volunteered fact is still ignored (a miss of the seeded corpus)."""
    from bargein.records.scenario import UserFact

    scn = _scenario_with(hidden=[UserFact(key="needs_interpreter", kind="need",
                                          value="a Somali interpreter for the complicated parts")])
    turns = list(EXAMPLE_TURNS)
    turns[9] = ("user", "It started Monday around 7 pm, and the lights are amber. I'd like a "
                        "Somali interpreter for the complicated parts.")
    ignored = list(turns)
    ignored[10] = ("assistant", "Right, the next part. I'd like to walk you through a restart "
                                "first: unplug the power cord, wait thirty seconds, and then plug "
                                "it back in.", turns[10][2])
    (v,) = found(build_conversation(scn, ignored), "hidden_fact_addressed")
    assert v.message_index == 10
    taken = list(turns)
    taken[10] = ("assistant", "I'll note that you'd like a Somali interpreter. I'd like to walk "
                              "you through a restart first: unplug the power cord, wait thirty "
                              "seconds, and then plug it back in.", turns[10][2])
    assert found(build_conversation(scn, taken), "hidden_fact_addressed") == []


def test_a_value_put_down_in_its_own_sentence_frames_no_next_sentence():
    """Seed 11: "I've put down george_reilly@icloud.com as your email. The fee for the
    consultation is 175 dollars ..." was read as the caller's fee (a read-back lead frames the
    next sentence only when it holds no value of its own)."""
    from bargein.verify.discourse import _framed_spans

    said = ("Thanks. I've put down ann.lee@mail.com as your email. The fee for the consultation "
            "is 175 dollars for 45 minutes.")
    assert [said[a:b] for a, b in _framed_spans(said)] == [
        "I've put down ann.lee@mail.com as your email."]
    lead = "Let me read that back. The account number is 4471 0932 58."
    assert [lead[a:b] for a, b in _framed_spans(lead)] == [
        "Let me read that back.", "The account number is 4471 0932 58."]
