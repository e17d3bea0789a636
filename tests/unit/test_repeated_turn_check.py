"""assistant_turn_repeated (bargein.verify.repeated_turn): an assistant turn that says a whole
earlier assistant turn again, heard in full, is found; a restart of a cut turn, a short formula
said twice and a turn sharing only one sentence are not.

The defect is the one read by hand in an LLM-written call the verifier accepted (bench/llm_real.py,
commit a1acd21, ecommerce): the photo request of message 6 said again, word for word, as the
answer to the caller's cut-in at message 17.
"""

from __future__ import annotations

from bargein.verify import run_checks
from bargein.verify.repeated_turn import repeated_turns
from doubles.conversation_examples import EXAMPLE_TURNS, build_conversation, example_scenario

SCN = example_scenario()
WRAP = {"stage": "wrap_up"}


def conv_with(changes: dict[int, tuple]):
    return build_conversation(SCN, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)])


def found(conv):
    return [v for v in run_checks(conv) if v.check == "assistant_turn_repeated"]


def test_a_whole_earlier_turn_said_again_is_found():
    # message 18 was heard whole (not cut); message 20 says it again after an acknowledgement
    again = ("assistant", "Sure. " + EXAMPLE_TURNS[18][1], WRAP)
    (v,) = found(conv_with({20: again}))
    assert v.message_index == 20 and not v.fixable and "turn 18" in v.issue
    assert v.evidence.startswith("That increase is the annual equipment fee")
    # the same words with other casing and punctuation are the same turn
    shouted = ("assistant", EXAMPLE_TURNS[8][1].upper().replace(",", ""), WRAP)
    assert repeated_turns(conv_with({20: shouted})) == [(8, 20)]


def test_the_clean_call_and_a_restart_of_a_cut_turn_are_not_found():
    # message 4 says the unheard rest of message 2, which was cut off (a filler recovery), and
    # message 8 restarts cut message 6's question: recoveries, not repeats
    assert found(conv_with({})) == []
    restart = ("assistant", "Sorry. " + EXAMPLE_TURNS[16][1], WRAP)      # message 16 was cut
    assert found(conv_with({20: restart})) == []


def test_a_short_formula_or_one_shared_sentence_is_not_found():
    short = build_conversation(SCN, [*EXAMPLE_TURNS[:19], ("assistant", "Thanks, I have that.", WRAP),
                                     ("user", "Great."), ("assistant", "Thanks, I have that.", WRAP)])
    assert repeated_turns(short) == []
    # one sentence of message 18 again, the rest new: not the whole turn
    part = ("assistant", "That increase is the annual equipment fee on your account. "
                         "You're booked for Thursday. Is there anything else?", WRAP)
    assert found(conv_with({20: part})) == []
