"""side_request_answered (bargein.verify.side_request): a side request answered by the cut turn
said again is found; an answer in other words, or one naming the request, is not.

The defect is the one read by hand in an LLM-written call the verifier accepted (bench/llm_real.py,
commit 9cfb7cd): "do you deliver to PO boxes?" followed by the interrupted turn word for word.
Recall and false positives on a seeded corpus are measured by bench/verify_recall.py.
"""

from __future__ import annotations

from bargein.verify import run_checks
from doubles.conversation_examples import EXAMPLE_TURNS, build_conversation, example_scenario

SCN = example_scenario()
# the hand-written call's topic-switch cut (message i), the caller's request (i+1), the reply (i+2)
CUT = next(i for i, t in enumerate(EXAMPLE_TURNS)
           if len(t) > 2 and t[2].get("type") == "topic_switch")
STAGE = {"stage": "schedule_technician"}


def conv_with(changes: dict[int, tuple], **kw):
    return build_conversation(SCN, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)], **kw)


def found(conv):
    return [v for v in run_checks(conv) if v.check == "side_request_answered"]


def test_the_cut_turn_said_again_after_a_side_request_is_found():
    again = ("assistant", "Sure. " + EXAMPLE_TURNS[CUT][1], STAGE)
    (v,) = found(conv_with({CUT + 2: again}))
    assert v.message_index == CUT + 1 and not v.fixable and "next turn" in v.issue
    assert "bill go up" in v.evidence
    # an acknowledgement of one new word before the turn again is still no answer
    again = ("assistant", "I understand. " + EXAMPLE_TURNS[CUT][1], STAGE)
    assert len(found(conv_with({CUT + 2: again}))) == 1


def test_an_answer_in_other_words_or_naming_the_request_is_not_found():
    # the hand-written call: "why did my last bill go up" - "That increase is the annual
    # equipment fee on your account." (no word of the request, a new statement)
    assert found(conv_with({})) == []
    names = ("assistant", "Your bill went up twelve dollars this month. " + EXAMPLE_TURNS[CUT][1],
             STAGE)
    assert found(conv_with({CUT + 2: names})) == []


def test_the_gold_recovery_is_judged_too():
    conv = conv_with({})
    gold = dict(conv.gold_recoveries)
    gold[CUT + 1] = EXAMPLE_TURNS[CUT][1]
    (v,) = found(conv.model_copy(update={"gold_recoveries": gold}))
    assert v.message_index == CUT + 1 and "gold recovery" in v.issue
