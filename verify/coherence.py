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

They read only the conversation's own content (criteria, heard text, gold, messages and the
scenario's workflow), never the writers' phrase banks.
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


# ---- task_abandoned_on_skip --------------------------------------------------------------------
# a turn that closes the request (general English closings)
_WRAP_UP = re.compile(r"\b(?:that wraps (?:\w+ )?up|wraps (?:it|things|everything) up|"
                      r"that's everything|that completes|we're (?:all )?done|you're all set|"
                      r"all done)\b|\banything else\b[^.?!]*\?", re.I)


def skipped_stages(conv: Conversation, stage: str | None) -> list[str]:
    """Workflow stages after ``stage`` that no message of the conversation visits and that the
    workflow does not let go: a stage is optional when it has a skip transition of its own,
    when a skip transition jumps over it, or when it is reached only by a skip or a failure
    (an alternative branch, such as a refund instead of a rebooking)."""
    wf = conv.scenario.kb.workflow
    names = [s.name for s in wf.stages]
    if stage not in names:
        return []
    at = names.index(stage)
    visited = {m.stage for m in conv.messages}
    skips = [t for t in wf.transitions if t.kind == "skip" and t.source in names]
    jumps = [(names.index(t.source), names.index(t.target)) for t in skips if t.target in names]
    own_skip = {t.source for t in skips}
    incoming: dict[str, set[str]] = {}
    for t in wf.transitions:
        incoming.setdefault(t.target, set()).add(t.kind)
    ends = {names.index(t.source) for t in wf.transitions
            if t.kind == "terminate" and t.target == conv.outcome and t.source in names
            and conv.outcome not in (None, "resolved")}
    # only the stages the main path still leads to ("next" from here on) are owed: a branch
    # reached by a failure (a technician visit when the fix did not hold) is not
    nexts = {t.source: t.target for t in wf.transitions if t.kind == "next"}
    ahead, node = set(), stage
    while node in nexts and nexts[node] in names and nexts[node] not in ahead:
        node = nexts[node]
        ahead.add(node)
    out = []
    for k in range(at + 1, len(names)):
        n = names[k]
        if n not in ahead or n in visited or n in own_skip or "next" not in incoming.get(n, {"next"}) \
                or any(a < k < b for a, b in jumps) or any(e < k for e in ends):
            continue
        out.append(n)
    return out


@check("task_abandoned_on_skip")
def task_abandoned_on_skip(conv: Conversation) -> list[Verdict]:
    """After an impatient interjection the gold recovery may skip explanation, not work: it
    does not close the request ("that wraps up", "anything else?") while a later stage of the
    workflow is never carried out in the conversation (no skip transition allows it)."""
    out = []
    for m, u in conv.interruptions:
        gold = conv.gold_recoveries.get(u.index, "")
        if m.interruption.type != "impatient" or not (mm := _WRAP_UP.search(gold)):
            continue
        left = skipped_stages(conv, m.stage)
        if left:
            out.append(_verdict("task_abandoned_on_skip", u.index, f"the gold recovery closes "
                                f"the request ({mm.group(0)!r}) while the stage(s) {left} after "
                                f"{m.stage!r} are never carried out", fixable=False,
                                evidence=f"cut in {m.stage!r}: {m.text[len(m.heard_text or ''):][:120]!r}; "
                                         f"gold {gold[:160]!r}"))
    return out


# ---- pushback_on_benefit -----------------------------------------------------------------------
_QTY = re.compile(r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                  r"fourteen|fifteen|twenty|thirty|forty|fifty|sixty|ninety|hundred)"
                  r"(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?"
                  r"(?:[- ](?:business|working|calendar))?[- ](?:minutes?|hours?|days?|weeks?|"
                  r"months?|years?|dollars?|percent|miles?)\b|[$\u20ac\u00a3]\s?\d[\d,.]*", re.I)
# a clause stating a condition the caller meets ("since it's within seven days", "you're within
# our twenty-four hour window") and words of a benefit in the sentence or the next
_MET = r"(?:\b(?:since|because|as|given that|now that|as long as)\b[^.?!;]*?|\b(?:you're|you are|it's|it is|that's|still)\s+(?:well\s+)?(?:within|under|inside)\s+[^.?!;]*?)"
_BENEFIT = re.compile(r"\b(?:qualif\w*|eligible|entitled|free|no (?:extra )?(?:fee|charge|cost)|"
                      r"full refund|waive\w*|at no (?:extra )?(?:cost|charge)|covered|"
                      r"costs? (?:you )?nothing|nothing to pay|won't (?:cost|charge) you)\b", re.I)


def benefit_object(planned: str, interjection: str) -> tuple[str, str] | None:
    """(value, sentence) when the interjection pushes back on a value that the planned text
    says only inside a condition the caller meets with a benefit attached."""
    sents = sentences(planned)
    said = normalise(interjection).replace("-", " ")
    for j, (s, e) in enumerate(sents):
        sent = planned[s:e]
        for mm in _QTY.finditer(sent):
            v = normalise(mm.group(0)).replace("-", " ")     # "twenty-four hour", "four hour"
            tail = " ".join(v.split()[-2:])
            if not (f" {v} " in f" {said} " or (len(v.split()) > 2 and f" {tail} " in f" {said} ")):
                continue
            if not re.search(_MET + re.escape(mm.group(0)), sent, re.I):
                continue
            nxt = planned[sents[j + 1][0]:sents[j + 1][1]] if j + 1 < len(sents) else ""
            if _BENEFIT.search(sent) or _BENEFIT.search(nxt):
                return mm.group(0), sent.strip()
    return None


@check("pushback_on_benefit")
def pushback_on_benefit(conv: Conversation) -> list[Verdict]:
    """A pushback objects to a burden (a fee, a wait, a requirement), not to a condition the
    caller meets: its value is not one the planned turn says only as "since it's within X,
    you qualify"."""
    out = []
    for m, u in conv.interruptions:
        if m.interruption.type != "pushback":
            continue
        if hit := benefit_object(m.text, u.text):
            out.append(_verdict("pushback_on_benefit", u.index, f"the pushback objects to "
                                f"{hit[0]!r}, which the turn gives as a condition the caller "
                                "meets, with a benefit", fixable=False,
                                evidence=f"planned {hit[1]!r}; interjection {u.text!r}"))
    return out
