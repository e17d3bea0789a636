"""A caller's reply that parrots the turn it answers is refused; an answer that picks one option of
the question, in the question's own words, is an answer."""

from bargein.generators.llm_agents import parrots

Q = "The booking covers 2 passengers on Boston to Orlando. Should I cancel the whole booking for everyone, or only some of the travellers?"


def test_choosing_an_option_is_not_parroting():
    assert not parrots("Cancel the whole booking for everyone, please.", Q)
    assert not parrots("Just some of the travellers.", Q)


def test_repeating_the_turn_is_parroting():
    assert parrots("Should I cancel the whole booking for everyone, or only some of the travellers?", Q)
    assert parrots("The booking covers 2 passengers on Boston to Orlando, cancel everyone.", Q)
