"""Text helpers for the verifier: words, cut points, content words, sentences, values.

A *word* is a run of non-space characters. Cutting a planned message after word ``k`` keeps
``text[:end of word k]`` (no trailing space)::

    "Your claim needs three documents: a photo"
     0    1     2     3     4          5 6      <- word indices
    cut_word_index=4 -> heard "Your claim needs three"   cut_char_offset=21
"""

from __future__ import annotations

import re
from functools import lru_cache

from bargein import lexicon

_WORD = re.compile(r"\S+")
_TOKEN = re.compile(r"[a-z0-9]+(?:['\u2019-][a-z0-9]+)*")
# no sentence ends after a title or a Latin abbreviation ("Dr. Steven Morse", "e.g. a bill")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)"
                           r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)\s+")

# Function words plus conversational glue, and backchannels: the one lexicon (bargein.lexicon).
STOPWORDS: frozenset[str] = lexicon.CONTENT_STOP_WORDS
BACKCHANNELS: frozenset[str] = lexicon.BACKCHANNELS
BACKCHANNEL_WORDS: frozenset[str] = lexicon.BACKCHANNEL_WORDS
MAX_BACKCHANNEL_WORDS = lexicon.MAX_BACKCHANNEL_WORDS


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def word_ends(text: str) -> list[int]:
    """Character offset just after each word of ``text``."""
    return [m.end() for m in _WORD.finditer(text)]


def prefix_at_word(text: str, k: int) -> str:
    """The first ``k`` words of ``text`` as they appear in it (``k >= 1``)."""
    ends = word_ends(text)
    if not 1 <= k <= len(ends):
        raise ValueError(f"word index {k} outside 1..{len(ends)}")
    return text[: ends[k - 1]]


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens (apostrophes and hyphens inside a token kept)."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def stem(tok: str) -> str:
    """A light plural/possessive fold so "documents" meets "document"."""
    if tok.endswith("'s"):
        tok = tok[:-2]
    if len(tok) > 4 and tok.endswith("ies"):
        return tok[:-3] + "y"
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith(("ss", "us", "is")):
        return tok[:-1]
    return tok


@lru_cache(maxsize=16384)
def content_words(text: str) -> frozenset[str]:
    """Stemmed tokens of ``text`` that carry content (no stopwords, 3+ chars or digits)."""
    out = set()
    for t in tokens(text):
        s = stem(t)
        if t in STOPWORDS or s in STOPWORDS or (len(t) < 3 and not t.isdigit()):
            continue
        out.add(s)
    return frozenset(out)


def normalise(text: str) -> str:
    """Lower-cased tokens joined by single spaces (for phrase matching)."""
    return " ".join(tokens(text))


def contains_phrase(haystack: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``haystack`` on token boundaries, case and punctuation folded."""
    p = normalise(phrase)
    return bool(p) and f" {p} " in f" {normalise(haystack)} "


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of ``text``."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    if start < len(text.rstrip()) or not spans:
        spans.append((start, len(text.rstrip())))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def is_backchannel(text: str) -> bool:
    """A short reflexive backchannel (:func:`bargein.lexicon.is_backchannel`)."""
    return lexicon.is_backchannel(text)


# ---- values (for corrections) ------------------------------------------------------------
_MONTHS = ("january february march april may june july august september october november "
           "december jan feb mar apr jun jul aug sep sept oct nov dec").split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_VALUE_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("email", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    ("time", re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)", re.I)),
    ("money", re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|euros|pounds)\b",
                         re.I)),
    ("date", re.compile(r"\b(?:%s)\b(?:\s+\d{1,2}(?:st|nd|rd|th)?)?" % "|".join(_MONTHS + _DAYS),
                        re.I)),
    ("number", re.compile(r"(?<![\w$€£])\d(?:[\d\s.-]*\d)?(?![\w])")),
]
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*")
_NOT_NAMES = frozenset(["I", "I'm", "I'll", "I've", "I'd", "Okay", "OK", "Yes", "No", "Oh",
                        "Actually", "Sorry", "Wait", "Hi", "Hello", "Thanks", "Mr", "Mrs", "Ms",
                        "Dr"] + [m.title() for m in _MONTHS + _DAYS])


def _fold(kind: str, raw: str) -> str:
    if kind in ("number", "money"):
        return re.sub(r"[^\d.]", "", raw).rstrip(".")
    if kind == "email":
        return raw.lower()
    return normalise(raw)


@lru_cache(maxsize=4096)
def extract_values(text: str) -> frozenset[tuple[str, str]]:
    """(kind, folded value) pairs: emails, times, money, dates, numbers, proper names."""
    out: set[tuple[str, str]] = set()
    taken: list[tuple[int, int]] = []
    for kind, pat in _VALUE_PATTERNS:
        for m in pat.finditer(text):
            if any(s <= m.start() < e for s, e in taken):
                continue
            taken.append(m.span())
            v = _fold(kind, m.group(0))
            if v:
                out.add((kind, v))
    for m in _NAME.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        parts = re.split(r"[ -]", m.group(0))
        lead = 0
        while lead < len(parts) and parts[lead] in _NOT_NAMES:
            lead += 1
        before = text[: m.start()].rstrip()
        sentence_start = lead == 0 and (not before or before[-1] in ".!?")
        name = parts[lead:]
        if not name or (sentence_start and len(name) == 1):
            continue
        out.add(("name", normalise(" ".join(name))))
    return frozenset(out)
