"""Checks for how a turn sounds next to the one before it (issue 12's second read).

* ``tone_after_bad_news``: the assistant opens with a cheerful acknowledgement ("Okay,
  wonderful.", "Great, ...", "Good to know ...") right after the caller reported something bad
  (a flood, a lost card, a job loss, a fraud, an illness)::

      user       "It's water up to two feet on the ground floor and a ruined furnace."
      assistant  "Okay, wonderful. ..."          <- flagged; repaired to "I'm sorry to hear that."

* ``repeated_marker``: one assistant turn says the same discourse marker twice in a row where
  two pieces were joined ("Now, to continue, now could you ...", "Okay, wonderful. Okay, next.");
  repaired by deleting the second marker.

Both judge the text as written (offline or LLM agents alike), with the word lists below (their
own; the generators only call :func:`is_distressing` / :func:`dedupe_markers` to avoid them).
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check
from bargein.verify.edits import delete_edit, replace_edit
from bargein.verify.text import sentences

_DISTRESS = re.compile(
    r"\b(flood(?:ed|ing)?|fire|storm|damaged?|collapsed?|ruined|destroyed|unsafe|not safe|"
    r"stolen|theft|robbed|lost|missing|fraud(?:ulent)?|scam(?:med)?|hacked|"
    r"died|passed away|death|funeral|bereave\w*|sick|ill|illness|hospital\w*|injur\w+|surgery|"
    r"cancer|pain|emergency|evict\w*|homeless|shelter|sleeping in the car|laid off|"
    r"lost (?:my|their|his|her) job|unemployed|can't afford|cannot afford|worried|nervous|"
    r"anxious|scared|frightened|overdrawn|declined|denied|rejected|broken|stranded|delayed|"
    r"cancelled|canceled|disabled|disability|limited mobility)\b", re.I)
_UPBEAT = re.compile(r"\b(wonderful|lovely|great|perfect|fantastic|excellent|awesome|brilliant|"
                     r"glad|happy to hear|good to know|good news|nice|splendid|super)\b", re.I)
MARKERS = frozenset("okay ok now so right alright well anyway great good perfect sure thanks "
                    "then also understood noted fine".split())


def is_distressing(text: str) -> bool:
    """Whether ``text`` reports something bad happening to the caller."""
    return bool(_DISTRESS.search(text or ""))


def upbeat(text: str) -> re.Match | None:
    return _UPBEAT.search(text or "")


def _opening(text: str) -> tuple[int, int]:
    """The acknowledgement a turn opens with: its first sentence, when short (<= 8 words)."""
    spans = sentences(text)
    if not spans:
        return 0, 0
    a, b = spans[0]
    return (a, b) if len(text[a:b].split()) <= 8 else (a, a + len(" ".join(text[a:b].split()[:4])))


@check("tone_after_bad_news")
def tone_after_bad_news(conv: Conversation) -> list[Verdict]:
    out = []
    msgs = conv.messages
    for prev, m in zip(msgs, msgs[1:]):
        if m.role != "assistant" or prev.role != "user":
            continue
        bad = _DISTRESS.search(prev.text)
        if not bad:
            continue
        a, b = _opening(m.text)
        cheer = _UPBEAT.search(m.text[a:b])
        if not cheer:
            continue
        whole = len(m.text[a:b].split()) <= 8 and sentences(m.text)[0] == (a, b)
        cut = len(m.heard_text) if m.interruption is not None else None
        fixable = whole and (cut is None or cut > b)
        out.append(_verdict(
            "tone_after_bad_news", m.index,
            f"a cheerful {cheer.group(0)!r} right after the caller said {bad.group(0)!r}",
            fixable=fixable, evidence=f"user: {prev.text[:120]!r} / assistant: {m.text[a:b]!r}",
            edit=replace_edit(m, a, b, "I'm sorry to hear that.") if fixable else None))
    return out


_LEAD = re.compile(r"^\W*(\w+)\b")


def marker_repeats(text: str) -> list[tuple[int, int, str]]:
    """(start, end, marker) of a discourse marker said again at the very next join: the start
    of the next sentence, or the next clause after a comma-ended lead ("Now, to continue, now")."""
    out = []
    spans = sentences(text)
    prev_first = None
    for a, b in spans:
        s = text[a:b]
        clauses = [(a + mm.start(1), a + mm.end(1)) for mm in
                   re.finditer(r"(?:^|,\s+)(\w+)\b", s)][:3]
        words = [(x, y, text[x:y].lower()) for x, y in clauses]
        if words and prev_first and words[0][2] == prev_first and prev_first in MARKERS \
                and text[words[0][1]:words[0][1] + 1] == ",":
            out.append(words[0])
        for x2, y2, w2 in words[1:]:
            if words[0][2] == w2 and w2 in MARKERS:
                out.append((x2, y2, w2))
                break
        prev_first = words[0][2] if words and text[words[0][1]:words[0][1] + 1] == "," else None
    for (a0, b0), (a, b) in zip(spans, spans[1:]):      # "..., thank you. Thanks. And ..."
        mm = _THANKS_ONLY.match(text[a:b + 1])
        if mm and _THANKED.search(text[a0:b0]):
            out.append((a, a + len(mm.group(0).rstrip()) - 1, "thanks"))
    return sorted(out)


def _deletion(text: str, s: int, e: int) -> tuple[int, int]:
    """The marker plus its comma (the span a minimal edit removes)."""
    if e < len(text) and text[e] in ",.!":
        e += 1
    return s, e


@check("repeated_marker")
def repeated_marker(conv: Conversation) -> list[Verdict]:
    out = []
    for m in conv.messages:
        if m.role != "assistant":
            continue
        cut = len(m.heard_text) if m.interruption is not None else None
        for s, e, w in reversed(marker_repeats(m.text)):
            ds, de = _deletion(m.text, s, e)
            capital = ds == 0 or m.text[:ds].rstrip().endswith((".", "!", "?"))
            nxt = de
            while nxt < len(m.text) and m.text[nxt].isspace():
                nxt += 1
            fixable = (cut is None or cut < ds or cut > nxt + 1) and nxt < len(m.text)
            edit = None
            if fixable:
                edit = replace_edit(m, ds, nxt + 1, m.text[nxt].upper()) if capital \
                    else delete_edit(m, ds, de)
            out.append(_verdict("repeated_marker", m.index, f"the marker {w!r} twice in a row",
                                fixable=fixable, evidence=m.text[max(0, s - 40):e + 30], edit=edit))
    return out


def dedupe_markers(parts: list[str]) -> list[str]:
    """Pieces of one turn joined in order, each without a leading marker an earlier piece
    already used ("Okay, wonderful." + "Okay, next." -> "Okay, wonderful." + "Next.";
    "Now, to continue," + "now could you" -> "Now, to continue," + "could you")."""
    out: list[str] = []
    said: set[str] = set()
    for p in parts:
        p = p.strip()
        if not p:
            continue
        mm = re.match(r"^\W*(\w+)\b(,?)", p)
        w = mm.group(1).lower() if mm else ""
        if out and w in MARKERS and w in said and (mm.group(2) or out[-1].endswith(",")):
            rest = p[mm.end():].lstrip()
            if rest:
                p = rest[:1].upper() + rest[1:] if not out[-1].endswith(",") else rest
        said |= {x.lower() for x in re.findall(r"(?:^|[.!?,]\s+)(\w+)[,.!]", p)}
        if out and _THANKS_ONLY.match(p) and any(_THANKED.search(x) for x in out):
            rest = _THANKS_ONLY.sub("", p, count=1).lstrip()     # "Thank you." + "Thanks. And"
            if not rest:
                continue
            p = rest
        if _THANKED.search(p):
            said.add("thanks")
        out.append(p)
    return out


_THANKS_ONLY = re.compile(r"^(?:thanks|thank you)(?: so much| very much)?[.!]\s*", re.I)
_THANKED = re.compile(r"\b(?:thanks|thank you)\b", re.I)
