"""Anti-pattern simulator: realistic *bad* recoveries, the rejected side of DPO pairs.

The failures are IHBench's anti-patterns, written the way a model makes them — usually after the
same opening move the good recovery makes, so a classifier cannot tell them apart by the first
words, and cut to about the length of the good recovery, so it cannot by length::

    restart        re-delivers the cut sentence from its start (the caller heard half of it)
    ignore         carries on as if nothing was said (a correction: keeps the old value)
    over_apologise apologises at length for the interruption, then repeats the remainder
    lose_thread    answers from an earlier point of the call, not the one that was cut
    repeat_heard   echoes the last words the caller heard, then goes on

Each is grounded in the item (its planned turn, heard part, history and gold); none has a fixed
opener.
"""

from __future__ import annotations

import random
import re

from bargein.generators import phrases as P
from bargein.generators.assistant_sim import lower_first
from bargein.records import EvalItem

ANTIPATTERNS: dict[str, tuple[str, ...]] = {
    "filler": ("restart", "repeat_heard", "over_apologise"),
    "impatient": ("restart", "ignore", "over_apologise"),
    "correction": ("ignore", "lose_thread", "over_apologise"),
    "topic_switch": ("ignore", "lose_thread", "over_apologise"),
    "normal": ("ignore", "lose_thread", "over_apologise"),
    "pushback": ("ignore", "lose_thread", "over_apologise"),
}
_APOLOGY = (
    ("Oh, I'm so sorry.", "Oh gosh, sorry about that.", "I do apologise.", "Sorry, sorry.",
     "My apologies.", "Oh no, I'm sorry.", "Apologies for that."),
    ("I didn't mean to talk over you", "That was my fault for rushing", "I should have paused "
     "there", "I really shouldn't have kept going", "I hate it when that happens",
     "I got ahead of myself", "I was going far too fast"),
    ("and I'm sorry if that was confusing.", "and I apologise for the trouble.", "so please bear "
     "with me.", "and I'm truly sorry.", "and thank you for your patience.",
     "and I feel terrible about it.", "which isn't how this should go."),
)


def cut_sentence(planned: str, heard: str) -> str:
    """The planned text from the start of the sentence the cut fell in."""
    cut, start = len(heard), 0
    for i in range(min(cut, len(planned)) - 1, 0, -1):
        if planned[i] == " " and planned[i - 1] in ".!?" and not re.search(
                r"\b(?:Dr|Mr|Mrs|Ms|St|No|[A-Z])\.$", planned[:i]):
            start = i + 1
            break
    return planned[start:].strip()


def _sents(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.?!])\s+", text.strip()) if s]


def _opening(gold: str, itype: str) -> str:
    """The good recovery's first move (its acknowledgement), '' after a backchannel."""
    s = _sents(gold)
    return s[0] if itype != "filler" and len(s) >= 2 else ""


def _body(name: str, item: EvalItem, d: dict[str, str], rng: random.Random) -> str:
    planned, heard = item.planned_text, item.heard_text
    rest = planned[len(heard):].strip()
    again = cut_sentence(planned, heard)
    if name == "restart":
        return planned if item.type == "impatient" else again
    if name == "ignore":
        if item.type == "correction" and d.get("old") and d.get("new"):
            return item.gold_recovery.replace(d["new"], d["old"])
        return lower_first(rest) if rest else again
    if name == "repeat_heard":
        tail = " ".join(heard.split()[-rng.randint(4, 7):])
        return P.join(tail[:1].upper() + tail[1:].rstrip(",;:"), rest)
    if name == "over_apologise":
        a, b, c = (rng.choice(part) for part in _APOLOGY)
        apology = f"{a} {b}, {c}"
        return P.join(apology, again)
    if name == "lose_thread":
        earlier = [m.content for m in item.history[:-2] if m.role == "assistant"
                   and P.n_words(m.content) >= 8 and m.content not in planned
                   and m.content.rstrip().endswith((".", "?", "!"))]      # not a cut turn
        if not earlier:
            return ""
        msg = rng.choice(earlier[-4:])
        sents = _sents(msg)
        long = [x for x in sents if P.n_words(x) >= 5]
        # from its first real sentence: a short acknowledgement first would be cut away alone
        first = next((i for i, x in enumerate(sents) if P.n_words(x) >= 5), 0)
        return rng.choice(long) if long and rng.random() < 0.5 else " ".join(sents[first:])
    raise ValueError(f"unknown anti-pattern {name!r}")


def fit_length(text: str, target: int, extra: list[str]) -> str:
    """``text`` cut at a sentence (or clause) end, or extended with ``extra`` sentences, to about
    ``target`` words (within 20%)."""
    lo, hi = int(target * 0.8), max(int(target * 1.2), target + 2)
    sents = _sents(text)
    out: list[str] = []
    for s in sents:
        if out and P.n_words(" ".join(out + [s])) > hi:
            break
        out.append(s)
    text = " ".join(out)
    if P.n_words(text) > hi:                     # one long sentence: cut at a clause
        words = text.split()
        for k in range(min(hi, len(words)) - 1, lo - 1, -1):
            if words[k - 1].endswith(","):
                return " ".join(words[:k]).rstrip(",") + "."
        return " ".join(words[:max(lo, 1)]).rstrip(",;:") + "."
    for s in extra:
        if P.n_words(text) >= lo:
            break
        if P.norm(s) not in P.norm(text) and P.n_words(text + " " + s) <= hi:
            text = P.join(text, s)
    return text


def _keeps(body: str, text: str, n: int = 4) -> bool:
    b, t = P.tokens(body), " ".join(P.tokens(text))
    return len(b) < n or any(" ".join(b[k:k + n]) in t for k in range(len(b) - n + 1))


def _tidy(text: str) -> str:
    """Sentence casing repaired; a start mid-sentence (the rest of a cut turn) kept as it is."""
    out = P.tidy(text)
    return text[:1] + out[1:] if text[:1].islower() else out


def rejected_response(item: EvalItem, detail: dict[str, str], rng: random.Random) -> tuple[str, str]:
    """(anti-pattern name, a bad recovery) for ``item``; never equal to the gold recovery."""
    gold = item.gold_recovery
    names = list(ANTIPATTERNS[item.type])
    rng.shuffle(names)
    rest = item.planned_text[len(item.heard_text):]
    planned = _sents(item.planned_text)
    extra = _sents(rest) + _sents(cut_sentence(item.planned_text, item.heard_text)) + planned[1:]
    for name in names:
        body = _body(name, item, detail, rng)
        if not body:
            continue
        keeps_old = name == "ignore" and item.type == "correction"
        opening = _opening(gold, item.type) if name != "over_apologise" and not keeps_old else ""
        text = P.join(opening, body) if opening and not body.startswith(opening) else body
        text = _tidy(fit_length(text, P.n_words(gold), extra))
        if not _keeps(body, text) or (name == "restart" and not _keeps(" ".join(body.split()[:4]), text)):
            continue                         # the failure itself was cut away: try another
        if text and P.norm(text) != P.norm(gold) and " ".join(text.split()) != " ".join(gold.split()):
            return name, text
    # nothing fits the good recovery's length: the restart, whole (a rare length mismatch)
    if item.type == "impatient":                 # the restart of an explanation: all of it
        return "restart", item.planned_text
    return "restart", cut_sentence(item.planned_text, item.heard_text) or item.planned_text
