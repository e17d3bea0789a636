"""prompt_wording (bargein.verify.wording) and the 'You <noun> is' rule of grammar_casing: two
defects read by hand in LLM-written calls the verifier accepted (bench/llm_real.py, commit
a1acd21): a caller saying "Please provide me with the exact words I heard" (the wording of the
cut-in instruction), and "You return is confirmed" / "You plan review is scheduled"."""

from __future__ import annotations

from bargein.verify import run_checks
from bargein.verify.quality import grammar_issues
from bargein.verify.wording import instruction_words
from doubles.conversation_examples import EXAMPLE_TURNS, build_conversation, example_scenario

SCN = example_scenario()
USER = next(i for i, t in enumerate(EXAMPLE_TURNS) if t[0] == "user" and i > 4)


def found(conv, name):
    return [v for v in run_checks(conv) if v.check == name]


def test_instruction_wording_in_a_callers_line_is_found():
    turns = list(EXAMPLE_TURNS)
    turns[USER] = ("user", "Please provide me with the exact words I heard.", *turns[USER][2:])
    (v,) = found(build_conversation(SCN, turns), "prompt_wording")
    assert v.message_index == USER and not v.fixable and "exact words I heard" in v.issue
    assert not found(build_conversation(SCN, list(EXAMPLE_TURNS)), "prompt_wording")


def test_people_s_words_are_not_instruction_wording():
    for said in ("Could you repeat the last part? I didn't catch it.",
                 "You said the fee was 45 dollars, right?",
                 "The talk was about points on my card.", "I heard you say Friday."):
        assert instruction_words(said) == [], said
    assert instruction_words("As an AI language model, I can't.") != []


def test_you_before_a_noun_and_a_singular_verb_is_your():
    for bad in ("You return is confirmed.", "Thanks. You plan review is scheduled for Tuesday."):
        assert [f[2] for f in grammar_issues(bad)] == ["Your"], bad
    for good in ("What you need is a code.", "You said it was fine.", "You know that is true.",
                 "You are all set.", "You can pay online, and the fee is waived."):
        assert not [f for f in grammar_issues(good) if f[2] == "Your"], good
