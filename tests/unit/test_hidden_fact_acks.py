"""Every canned take-up of a hidden fact names enough of the fact to pass ``hidden_fact_addressed``.

That check drops the words the agent already said in its previous turn before looking for an
overlap with the fact's value, so an ack sharing a single word with the value fails whenever the
agent happened to use that word just before. Two distinct words of the value's own (no digits, no
everyday words such as "time" or "day") keep the take-up visible in any context.
"""

from __future__ import annotations

import re

import pytest
import yaml

from bargein.generators.catalogue_loader import domain_files
from bargein.verify.quality import _EVERYDAY
from bargein.verify.text import content_words

_SLOT = re.compile(r"\{\w+\}")


def _hidden_facts(node):
    if isinstance(node, dict):
        if "key" in node and "value" in node and "ack" in node:
            yield node
        for v in node.values():
            yield from _hidden_facts(v)
    elif isinstance(node, list):
        for v in node:
            yield from _hidden_facts(v)


def _cases() -> list[tuple[str, str, str, str]]:
    out = []
    for path in domain_files():
        domain = path.stem[len("domain_"):]
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for fact in _hidden_facts(data):
            for ack in fact["ack"]:
                out.append((domain, fact["key"], fact["value"], ack))
    return out


_CASES = _cases()


def test_the_catalogue_has_hidden_fact_acks():
    assert len({p.stem for p in domain_files()}) >= 10
    assert len(_CASES) >= 30


@pytest.mark.parametrize(("domain", "key", "value", "ack"), _CASES,
                         ids=[f"{d}-{k}-{i}" for i, (d, k, _, _) in enumerate(_CASES)])
def test_ack_shares_two_words_of_the_fact(domain, key, value, ack):
    words = content_words(_SLOT.sub("", value))
    shared = {w for w in content_words(ack) & words if not w.isdigit() and w not in _EVERYDAY}
    assert len(shared) >= 2, (
        f"{domain}: the ack of hidden fact {key!r} shares {sorted(shared)} with its value "
        f"{value!r}; needs two words of it: {ack!r}")
