"""A paired side remark's answer (``phrases_pairs.yaml``) comes in several wordings of the same
answer: each keeps the words of the caller's request that the pair's own wording names (the
planner's ``_answer_says_nothing_new`` reads them), no wording asks a question its first does not,
and the simulators draw among them, so one answer is not the same line in every call."""

from __future__ import annotations

import random

from bargein.generators import phrases as P
from bargein.verify.text import content_words

_KEYS = [k for k in P.bank_keys("pairs") if k.startswith(("topic_switch", "normal_constraint"))]


def test_every_wording_of_an_answer_keeps_the_request_words_of_the_first():
    checked = 0
    for key in _KEYS:
        for pr in P.bank("pairs", key):
            said = P.answers(pr)
            assert len(said) >= 2 and len(set(said)) == len(said), (key, pr["user"])
            named = content_words(said[0]) & content_words(pr["user"])
            for w in said[1:]:
                kept = content_words(w) & named
                # a word may change its form ("prefer" -> "preference", "fly" -> "flights") but
                # most of what the request named stays, and at least one word as it was
                stems = {x[:4] for x in content_words(w)}
                assert kept or not named, (key, pr["user"], w)
                assert 2 * len({x for x in named if x[:4] in stems}) >= len(named), (key, w, named)
                assert w.count("?") <= said[0].count("?"), (key, w)
                checked += 1
    assert checked >= 400


def test_an_answer_is_drawn_among_its_wordings_and_reproducibly():
    detail = {"pair": "topic_switch#0"}
    drawn = {P.answer(detail, "topic_switch", random.Random(s)) for s in range(40)}
    assert drawn == set(P.answers(P.pair(detail, "topic_switch")))
    assert P.answer(detail, "topic_switch", random.Random(3)) == \
        P.answer(detail, "topic_switch", random.Random(3))


def test_a_single_line_answer_is_still_one_wording():
    assert P.answers({"user": "Oh, one thing.", "assistant": "Of course."}) == ("Of course.",)
