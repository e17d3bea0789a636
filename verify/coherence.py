"""Checks that a turn or a gold recovery is coherent with itself and with its own rubric.

- ``gold_meets_own_rubric``: an RQ criterion quotes a span the caller heard as something not
  to repeat ("Does not re-explain or repeat what the caller already heard ("<quote>")") while
  the gold recovery of the same point restates that span (its content words in the same
  order) or re-asks the quoted question. The gold then fails its own criterion. The verifier
  only flags it (not fixable here): the repair belongs to the rubric writer, which should not
  quote a pending question (one the caller still has to answer) as "do not repeat", since
  re-asking it is the next concrete step; a restated statement is a gold defect instead.
- ``doubled_phrase``: one turn (an assistant message or a gold recovery) says the same clause
  of four or more words in two adjacent sentences ("let me tell you what I can do instead.
  Here's what I can do: ...").

Both read only the conversation's own text (criteria, heard text, gold, messages).
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check
from bargein.verify.text import STOPWORDS, normalise, sentences, stem, tokens


def _content_seq(text: str) -> list[str]:
    """Stemmed content tokens of ``text`` in order (no stopwords, 3+ chars or digits)."""
    out = []
    for t in tokens(text):
        s = stem(t)
        if t in STOPWORDS or s in STOPWORDS or (len(t) < 3 and not t.isdigit()):
            continue
        out.append(s)
    return out


def _lcs(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


# ---- gold_meets_own_rubric ---------------------------------------------------------------------
_NO_REPEAT = re.compile(r"\b(?:does not|doesn't|do not|don't|never|avoids?|without)\b[^\"\u201c]*?"
                        r"\b(?:repeat\w*|re-?explain\w*|restat\w*|re-?ask\w*|re-?deliver\w*|"
                        r"say\w* again|go\w*(?: back)? over)\b", re.I)
_QUOTE = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d")


def restates(quote: str, sent: str) -> str:
    """How ``sent`` restates ``quote`` ('' when it does not): 'the same question re-asked' (both
    questions sharing two content words in order, or all of a short quote's), or 'the same
    content words in the same order' (at least three and three fifths of the quote's)."""
    if len(tokens(quote)) >= 3 and f" {normalise(quote)} " in f" {normalise(sent)} ":
        return "the quoted span said again word for word"
    q, g = _content_seq(quote), _content_seq(sent)
    if not q or not g:
        return ""
    common = _lcs(q, g)
    if quote.rstrip().endswith("?") and sent.rstrip().endswith("?") \
            and common >= min(2, len(set(q))):
        return "the same question re-asked"
    if common >= max(3, -(-3 * len(q) // 5)) or (len(q) <= 3 and common == len(q) >= 2
                                                 and not quote.rstrip().endswith("?")):
        return "the same content words in the same order"
    return ""


@check("gold_meets_own_rubric")
def gold_meets_own_rubric(conv: Conversation) -> list[Verdict]:
    """A gold recovery does not break an RQ criterion of its own rubric that quotes a span the
    caller heard as something not to repeat."""
    out = []
    msgs = conv.messages
    for r in conv.rubrics:
        gold = conv.gold_recoveries.get(r.message_index)
        if not gold or not 1 <= r.message_index < len(msgs):
            continue
        heard = " ".join(m.spoken_text for m in msgs[:r.message_index])
        for crit in r.rq_criteria:
            if not _NO_REPEAT.search(crit):
                continue
            for mm in _QUOTE.finditer(crit):
                quote = mm.group(1) or mm.group(2)
                if len(tokens(quote)) < 3 or normalise(quote) not in normalise(heard):
                    continue                   # only a span the caller heard is checkable here
                hit = next(((how, gold[s:e]) for s, e in sentences(gold)
                            if (how := restates(quote, gold[s:e]))), None)
                if hit:
                    out.append(_verdict(
                        "gold_meets_own_rubric", r.message_index,
                        f"the gold recovery restates the quoted heard span ({hit[0]}) that its "
                        "own RQ criterion says not to repeat", fixable=False,
                        evidence=f"criterion {crit!r}; gold sentence {hit[1]!r}"))
                    break
    return out


# ---- doubled_phrase ----------------------------------------------------------------------------
_CLAUSE = re.compile(r"[,;:\u2014]|\s-\s")
_MIN_RUN = 4


def _clauses(text: str, s: int, e: int) -> list[tuple[int, int]]:
    out, start = [], s
    for m in _CLAUSE.finditer(text, s, e):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, e))
    return [(a, b) for a, b in out if text[a:b].strip()]


def doubled_run(text: str) -> tuple[str, str] | None:
    """(run, evidence) when two adjacent sentences of ``text`` share a run of four or more
    words, two of them content words, between the last clause of the first and the first
    clause of the second ("... let me tell you what I can do instead. Here's what I can do:")."""
    sents = sentences(text)
    for (s1, e1), (s2, e2) in zip(sents, sents[1:]):
        a0, a1 = _clauses(text, s1, e1)[-1]
        heads = [c for c in _clauses(text, s2, e2) if len(tokens(text[c[0]:c[1]])) >= 2]
        if not heads:
            continue
        b0, b1 = heads[0]                    # "Okay, what we can offer is this": past "Okay"
        ta, tb = tokens(text[a0:a1]), tokens(text[b0:b1])
        grams = {tuple(tb[i:i + _MIN_RUN]) for i in range(len(tb) - _MIN_RUN + 1)}
        for i in range(len(ta) - _MIN_RUN + 1):
            g = tuple(ta[i:i + _MIN_RUN])
            if g in grams:
                return " ".join(g), f"{text[s1:e1].strip()!r} / {text[s2:e2].strip()!r}"
    return None


@check("doubled_phrase")
def doubled_phrase(conv: Conversation) -> list[Verdict]:
    """No turn says the same clause of four or more words twice in a row (adjacent sentences:
    the end of one and the start of the next)."""
    out = []
    for m in conv.messages:
        if m.role == "assistant" and (hit := doubled_run(m.text)):
            out.append(_verdict("doubled_phrase", m.index, f"the turn says {hit[0]!r} twice in "
                                "adjacent sentences", evidence=hit[1], fixable=False))
    for k, gold in sorted(conv.gold_recoveries.items()):
        if hit := doubled_run(gold):
            out.append(_verdict("doubled_phrase", k, f"the gold recovery says {hit[0]!r} twice "
                                "in adjacent sentences", evidence=hit[1], fixable=False))
    return out
