"""State-machine leakage: the user names stages, stage order or KB internals they could not know.

A user message may repeat what the assistant said to them earlier (in heard text only: the
unheard remainder of a cut message does not count); anything else from the workflow is a leak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from bargein.records.conversation import Conversation, Message
from bargein.verify.edits import EditCommand, delete_edit, replace_edit, rewrite_edit
from bargein.verify.text import STOPWORDS, contains_phrase, normalise, sentences, tokens

STAGE_WORD = r"(?:stage|step|phase|state|node)s?"
NGRAM = 5                 # a KB n-gram of this many tokens with >= 2 content tokens is a leak
NEUTRAL_STAGE = "this part"

# (pattern, what it reveals, neutral replacement or None = delete the sentence / rewrite)
_GENERIC: list[tuple[re.Pattern[str], str, str | None]] = [
    (re.compile(r"\b(?:the |your )?(?:workflow|state machine|flow ?chart|decision tree|"
                r"knowledge base)\b", re.I), "the internal workflow", "the process"),
    (re.compile(r"\bnext (?:step|stage|phase)s? (?:is|are|will be|would be|should be)\b", re.I),
     "the workflow order", None),
    (re.compile(r"\b(?:after|before|following|preceding) (?:the|this|that|your) "
                r"(?:[\w-]+ ){0,3}(?:stage|phase)s?\b", re.I), "the workflow order", None),
    (re.compile(r"\b(?:first|second|third|fourth|fifth|final|last|next|previous) (?:stage|phase)s?\b",
                re.I), "the workflow order", None),
    (re.compile(r"\b(?:stage|phase) (?:one|two|three|four|five|six|\d+)\b", re.I),
     "the workflow order", None),
    (re.compile(r"\b(?:skip|termination|terminate|failure|escalation|exit) "
                r"(?:condition|criteria|criterion|rule)s?\b", re.I), "KB conditions", None),
]


@dataclass(frozen=True)
class Leak:
    start: int
    end: int
    what: str
    replacement: str | None     # None: remove the sentence (or rewrite when it is the only one)


@lru_cache(maxsize=256)
def _stage_patterns(names: tuple[str, ...]) -> list[tuple[re.Pattern[str], str, str]]:
    """(pattern, the humanised phrase the assistant may have said, description) per stage."""
    out = []
    for name in names:
        toks = [t for t in re.split(r"[_\s-]+", name.lower()) if t]
        if not toks:
            continue
        if len(toks) > 1:
            out.append((re.compile(r"\b(?:the |this |your )?" + re.escape(name) + r"\b", re.I),
                        " ".join(toks), f"stage id {name!r}"))
        if len(toks) >= 3:
            out.append((re.compile(r"\b(?:the |this |your )?" + r"[\s_-]+".join(map(re.escape, toks))
                                   + rf"(?:\s+{STAGE_WORD})?\b", re.I),
                        " ".join(toks), f"stage name {name!r}"))
        for i in range(len(toks)):
            suffix = toks[i:]
            if not any(t not in STOPWORDS and len(t) >= 4 for t in suffix):
                continue
            body = r"[\s_-]+".join(map(re.escape, suffix))
            out.append((re.compile(rf"\b(?:the |this |that |your )?{body}\s+{STAGE_WORD}\b", re.I),
                        " ".join(suffix), f"stage {name!r}"))
    return out


def _kb_ngrams(conv: Conversation) -> dict[tuple[str, ...], str]:
    """Token n-grams of KB internals (descriptions, talking points, conditions, guidelines)."""
    kb = conv.scenario.kb
    sources: list[tuple[str, str]] = []
    for st in kb.workflow.stages:
        sources.append((st.description, f"stage {st.name!r} description"))
        sources += [(p, f"stage {st.name!r} talking point") for p in st.talking_points]
        for label, items in (("skip condition", st.skip_conditions),
                             ("failure handling", st.failure_handling),
                             ("termination condition", st.termination_conditions)):
            sources += [(c, f"stage {st.name!r} {label}") for c in items]
    sources += [(t.condition, f"transition {t.source}->{t.target} condition")
                for t in kb.workflow.transitions if t.condition]
    sources += [(g, "KB guideline") for g in kb.guidelines]
    sources += [(g, "domain guideline") for g in conv.scenario.domain.guidelines]
    own = {t for t in tokens(_user_knowledge(conv)) if t not in STOPWORDS}   # user knows these
    grams: dict[tuple[str, ...], str] = {}
    for text, label in sources:
        toks = tokens(text)
        for i in range(len(toks) - NGRAM + 1):
            g = tuple(toks[i:i + NGRAM])
            if sum(t not in STOPWORDS for t in g) >= 2 and not own.intersection(g):
                grams.setdefault(g, label)
    return grams


def _user_knowledge(conv: Conversation) -> str:
    sc = conv.scenario
    facts = list(sc.kb.user_facts) + list(sc.intent.hidden_facts)
    parts = [f"{f.value} {f.spoken}" for f in facts]
    parts += [f"{c.first_value} {c.corrected_value}" for c in sc.intent.corrections]
    # what the caller's own details are called ("the last four digits of my card"): a caller
    # names what they give
    from bargein.verify.objects import label
    parts += [f"the {label(k)}" for k in sc.intent.provides]
    return " . ".join(parts)


def _token_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"[a-z0-9]+(?:['\u2019-][a-z0-9]+)*", text.lower())]


def find_leaks(msg: Message, known: str, conv: Conversation, *, _cache: dict | None = None
               ) -> list[Leak]:
    """Leaks in user message ``msg`` given ``known`` (what the assistant said that they heard)."""
    cache = _cache if _cache is not None else {}
    if "stages" not in cache:
        cache["stages"] = _stage_patterns(conv.scenario.kb.workflow.stage_names)
        cache["grams"] = _kb_ngrams(conv)
        cache["user"] = _user_knowledge(conv)
    text, leaks = msg.text, []

    def taken(s: int, e: int) -> bool:
        return any(s < lk.end and lk.start < e for lk in leaks)

    for pat, phrase, what in cache["stages"]:
        for m in pat.finditer(text):
            if not taken(*m.span()) and not contains_phrase(known, phrase):
                leaks.append(Leak(m.start(), m.end(), f"names the {what}", NEUTRAL_STAGE))
    for pat, what, repl in _GENERIC:
        for m in pat.finditer(text):
            if not taken(*m.span()) and not contains_phrase(known, m.group(0)):
                leaks.append(Leak(m.start(), m.end(), f"reveals {what}: {m.group(0)!r}", repl))
    spans = _token_spans(text)
    toks = tokens(text)
    if len(toks) == len(spans):
        known_norm = f" {normalise(known)} {normalise(cache['user'])} "
        runs: list[list] = []           # [first token, end token, label]: merged matching n-grams
        for i in range(len(toks) - NGRAM + 1):
            g = tuple(toks[i:i + NGRAM])
            label = cache["grams"].get(g)
            if label and f" {' '.join(g)} " not in known_norm:
                if runs and i <= runs[-1][1]:
                    runs[-1][1] = i + NGRAM
                else:
                    runs.append([i, i + NGRAM, label])
        for first, end, label in runs:
            s, e = spans[first][0], spans[end - 1][1]
            if not taken(s, e):
                leaks.append(Leak(s, e, f"quotes the {label}: {text[s:e]!r}", None))
    return sorted(leaks, key=lambda lk: lk.start)


def leak_edit(msg: Message, leak: Leak) -> EditCommand:
    """The minimal edit for one leak: neutral phrase, else drop its sentence, else rewrite."""
    text = msg.text
    if leak.replacement is not None:
        new = leak.replacement
        before = text[: leak.start].rstrip()
        if not before or before[-1] in ".!?":
            new = new[:1].upper() + new[1:]
        return replace_edit(msg, leak.start, leak.end, new)
    sents = sentences(text)
    if len(sents) > 1:
        for s, e in sents:
            if s <= leak.start < e:
                return delete_edit(msg, s, e)
    return rewrite_edit(msg, f"remove the user's reference to {text[leak.start:leak.end]!r} "
                             "(internal workflow the user could not know); keep everything else")
