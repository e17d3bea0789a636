"""How the offline caller says a fact whose label is no noun a caller would use of it.

A hand read of seed 7 found caller lines built from fact keys: "And the check amount is ...",
"And the last visit is ...", "Sorry, scratch that, the cancel reason is the team got smaller."
A key may carry its own wordings (``state_<key>`` in phrases_user.yaml); these tests hold the
wordings to the catalogue and the lines that use them to what a caller would say.
"""

from __future__ import annotations

import random
import re

import pytest

from bargein.generators import phrases as P
from bargein.generators.catalogue_loader import load_catalogue
from bargein.generators.user_sim import fact_wordings, pick_fact_line

_STATE_KEYS = sorted(k[len("state_"):] for k in P.bank_keys("user") if k.startswith("state_"))


def _facts() -> dict:
    out = {}
    for d in load_catalogue().domains.values():
        for g in d.goals.values():
            out.update(g.facts)
    return out


def test_every_wording_names_a_fact_of_the_catalogue():
    facts = _facts()
    assert _STATE_KEYS, "no state_<key> wordings in phrases_user.yaml"
    unknown = [k for k in _STATE_KEYS if k not in facts]
    assert not unknown, f"state_<key> wordings for keys no goal declares: {unknown}"


def test_every_wording_holds_the_value_once_and_no_label():
    for key in _STATE_KEYS:
        for w in fact_wordings(key):
            assert w.count("{value}") == 1, (key, w)
            assert "{label}" not in w, (key, w)


@pytest.mark.parametrize("key", [k for k in _STATE_KEYS if _facts()[k].kind == "choice"])
def test_choice_values_read_whole_in_every_wording(key):
    """Each option the catalogue can draw, in each wording: the value is there as drawn, and
    the line carries no leftover slot."""
    for option in _facts()[key].params["options"]:
        for w in fact_wordings(key):
            line = P.tidy(w.format(value=option) + ".")
            assert option.lower() in line.lower() and "{" not in line, (key, line)


@pytest.mark.parametrize("bank", ["correction", "normal_volunteer", "volunteer", "answer_fact"])
def test_bank_lines_say_the_fact_in_its_own_wording(bank):
    """Forty draws of a bank for "check_amount": never "check amount", never a line that names
    the label some other way ("I gave you the wrong check amount"), always the new value."""
    slots = {"label": P.label("check_amount"), "value": "forty dollars", "new": "forty dollars",
             "old": "fourteen dollars"}
    rng = random.Random(3)
    seen = set()
    for _ in range(40):
        line = pick_fact_line(rng, bank, "check_amount", **slots)
        assert "check amount" not in line.lower(), line
        assert "forty dollars" in line.lower(), line
        seen.add(line)
    assert len(seen) > 3            # still a bank, not one fixed line


def test_a_key_without_wordings_keeps_its_label_lines():
    rng = random.Random(5)
    lines = {pick_fact_line(rng, "correction", "order_number", label="order number",
                            old="one two", new="three four") for _ in range(60)}
    assert any("order number" in line for line in lines)


def test_correction_of_a_date_reads_as_a_caller_says_it():
    rng = random.Random(11)
    lines = {pick_fact_line(rng, "correction", "last_visit", label="last visit",
                            old="Friday, July 18", new="Sunday, July 20") for _ in range(40)}
    worded = [line for line in lines
              if re.search(r"\b(?:my last visit was on|I was last in on) Sunday, July 20\b", line, re.I)]
    assert worded, lines
    # the rest name no fact at all ("Sorry, my mistake, it's Sunday, July 20, not Friday, July 18.")
    assert all("last visit" not in line.lower() and "Sunday, July 20" in line
               for line in set(lines) - set(worded)), lines


def test_nobody_is_unsure_of_their_own_name():
    """Seen in a hand read of seed 9001: "Lance Wood, I believe." as the caller's own name."""
    rng = random.Random(2)
    for _ in range(80):
        line = pick_fact_line(rng, "answer_fact", "full_name", value="Lance Wood", label="full name")
        assert not re.search(r"\bI (?:think|believe)\b", line), line
    # an order number may still be read off uncertainly
    lines = {pick_fact_line(rng, "answer_fact", "order_number", value="H H, one two",
                            label="order number") for _ in range(200)}
    assert any(re.search(r"\bI (?:think|believe)\b", line) for line in lines)


def test_a_wh_question_is_not_answered_yes():
    """Seen in a hand read of seed 27182: "How many days of supply do you have left?" answered
    "Yeah, it's one day."."""
    from bargein.generators.user_sim import asks_wh

    assert asks_wh("Thanks. How many days of supply do you have left?")
    assert asks_wh("Okay, so what's the order number?")
    assert not asks_wh("Could you tell me the order number?")
    rng = random.Random(4)
    lines = {pick_fact_line(rng, "answer_fact", "days_remaining", wh=True, value="one day",
                            label="days remaining") for _ in range(120)}
    assert not [x for x in lines if re.match(r"(?:yes|yeah|yep)\b", x, re.I)], lines
    assert len(lines) > 5


def test_surnames_are_written_as_people_write_them():
    """Faker's en_US surnames include "Mccarthy" and "Obrien"; read-backs and rubrics showed
    them so (two hand reads)."""
    from bargein.generators.facts import surname

    assert surname("Mccarthy") == "McCarthy" and surname("Obrien") == "O'Brien"
    assert surname("Mcdonald") == "McDonald" and surname("Oneill") == "O'Neill"
    assert surname("Olson") == "Olson" and surname("Mack") == "Mack" and surname("Ochoa") == "Ochoa"
