"""Which words to mask: semantic-invariant function words and the answer-critical span.

Both work on a word list (the aligned transcript). Matching is *normalised*: lowercase, no
punctuation, accents folded, number words read as digits (``"four four seven one"`` and
``"4471"`` and ``"44-71"`` are the same; ``"nineteen fifty-six"`` is ``"1956"``), so a value
written one way is found in a transcript that says it another::

    words    Of | course, | it's | C | C, | four four seven three four three five seven.
    pieces   of   course    its    c   c    4    4    7     3     4    3     5    7
    value    "CC-4734357" -> "cc4734357"  matches pieces 3..12 at piece boundaries
    critical span = words 3..12 ; function words = {Of}

Function words are closed-class (determiners, prepositions, auxiliaries, conjunctions);
negations are never masked, nor any word of the critical span or next to it.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bargein.errors import BargeinError
from bargein.records.audio import WordTiming
from bargein.records.scenario import UserFact


class SpanNotFound(BargeinError):
    """The answer-critical span could not be located in the transcript."""


# ---------------------------------------------------------------- closed-class words
DETERMINERS = frozenset("""a an the this that these those my your his her its our their some any
each every either neither another such what which whose""".split())
PREPOSITIONS = frozenset("""of in on at to for with from by about into onto over under after before
between through during without within along across behind beyond toward towards upon around
among near off out up down via per than like""".split())
AUXILIARIES = frozenset("""is am are was were be been being do does did have has had will would
shall should can could may might must it's that's there's i'm i've i'll i'd you're you've we're
we've they're he's she's""".split())
CONJUNCTIONS = frozenset("and or but so nor yet because if while although though as".split())
FUNCTION_WORDS = DETERMINERS | PREPOSITIONS | AUXILIARIES | CONJUNCTIONS
# never masked: they flip the meaning
NEGATIONS = frozenset("""no not never nothing none nobody can't cannot don't doesn't didn't won't
wouldn't isn't aren't wasn't weren't shouldn't couldn't haven't hasn't hadn't""".split())


def word_key(word: str) -> str:
    """A word as the function-word lists spell it: lowercase, curly quotes straightened, edge
    punctuation stripped (``"Of"`` -> ``"of"``, ``"it’s,"`` -> ``"it's"``)."""
    w = _fold(word).lower().replace("\u2019", "'").replace("\u2018", "'")
    return w.strip(".,;:!?\"()[]{}-\u2014\u2013\u2026")


def is_function_word(word: str) -> bool:
    k = word_key(word)
    return k in FUNCTION_WORDS and k not in NEGATIONS


# ---------------------------------------------------------------- number words
_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine".split())}
_TEENS = {w: i + 10 for i, w in enumerate(
    "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: (i + 2) * 10 for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
_ORD_UNITS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
              "eighth": 8, "ninth": 9}
_ORD_TEENS = {"tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
              "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19}
_ORD_TENS = {w[:-4] + "ieth": v for w, v in _TENS.items()}             # twentieth, thirtieth, ...
_AMBIGUOUS_ORD = frozenset({"first", "second", "third"})                # "wait a second"
_MONTHS = frozenset("""january february march april may june july august september october november
december jan feb mar apr jun jul aug sep sept oct nov dec""".split())
_DIGIT_ORD = re.compile(r"^(\d+)(st|nd|rd|th)$")


def _fold(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _num_kind(tok: str) -> tuple[str, int] | None:
    if tok in _UNITS:
        return "unit", _UNITS[tok]
    if tok in _TEENS:
        return "teen", _TEENS[tok]
    if tok in _TENS:
        return "tens", _TENS[tok]
    if tok in _SCALES:
        return "scale", _SCALES[tok]
    if tok in _ORD_UNITS:
        return "ord_unit", _ORD_UNITS[tok]
    if tok in _ORD_TEENS:
        return "ord_teen", _ORD_TEENS[tok]
    if tok in _ORD_TENS:
        return "ord_tens", _ORD_TENS[tok]
    return None


@dataclass(frozen=True)
class Piece:
    """A canonical token and the word range ``[w0, w1)`` it came from."""

    text: str
    w0: int
    w1: int
    brk: bool = False       # a phrase break (punctuation) follows


def _tokens(words: Sequence[str]) -> list[tuple[str, int, bool]]:
    """(lowercase alnum token, word index, ends a phrase) for every sub-token of every word."""
    out = []
    for i, w in enumerate(words):
        w = _fold(w).lower().replace("\u2019", "'")
        ends = bool(re.search(r"[.,;:!?]$", w))
        w = w.replace("$", " $ ")
        parts = [p for p in re.split(r"[-\s/]+", w) if p]
        for k, p in enumerate(parts):
            t = re.sub(r"[^0-9a-z$]", "", p)
            t = _DIGIT_ORD.sub(r"\1", t)
            if t and t != "$":      # "4471-0932": the hyphen separates digit groups
                out.append((t, i, (ends and k == len(parts) - 1) or (k < len(parts) - 1 and t.isdigit())))
    return out


def canonical_pieces(words: Sequence[str]) -> list[Piece]:
    """Canonical pieces of a word list; number-word runs become digit groups (see module doc)."""
    toks = _tokens(words)
    out: list[Piece] = []
    n = len(toks)
    i = 0
    while i < n:
        tok, wi, _ = toks[i]
        kind = _num_kind(tok)
        prev_num = i > 0 and (_num_kind(toks[i - 1][0]) is not None or toks[i - 1][0].isdigit())
        if kind is not None and kind[0].startswith("ord") and tok in _AMBIGUOUS_ORD and not (
                prev_num or (i > 0 and toks[i - 1][0] in _MONTHS)):
            kind = None
        if tok == "oh" and prev_num and i + 1 < n and _num_kind(toks[i + 1][0]) is not None:
            kind = ("unit", 0)
        if kind is None:
            out.append(Piece(tok, wi, wi + 1, toks[i][2]))
            i += 1
            continue
        j = _number_run(toks, i, out)
        if j == i:                            # not a number after all
            out.append(Piece(tok, wi, wi + 1, toks[i][2]))
            j = i + 1
        i = j
    return out


def _number_run(toks: list[tuple[str, int, bool]], i: int, out: list[Piece]) -> int:
    """Parse number words from ``toks[i]``; append one piece per number group; return next index."""
    total = current = 0
    last: str | None = None
    start_w = toks[i][1]
    end_w = start_w
    has = brk = False

    def flush() -> None:
        nonlocal total, current, last, has
        if has:
            out.append(Piece(str(total + current), start_w, end_w + 1, brk))
        total = current = 0
        last, has = None, False

    n = len(toks)
    first = i
    while i < n:
        tok, wi, ends = toks[i]
        kind = _num_kind(tok)
        if tok == "oh" and (has or i == first) and i + 1 < n and _num_kind(toks[i + 1][0]) is not None:
            kind = ("unit", 0)
        if kind is None:
            break
        k, v = kind
        base = k.replace("ord_", "")
        if base in ("unit", "teen", "tens") and (
                last in ("unit", "teen") or (last == "tens" and base != "unit")):
            flush()
        if not has:
            start_w = wi
        if base == "scale":
            if v == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * v
                current = 0
        else:
            current += v
        has, last, end_w, brk = True, base, wi, ends
        i += 1
        if k.startswith("ord") or ends:       # an ordinal or a comma closes the number
            flush()
    flush()
    return i


def canonical(text_or_words: str | Sequence[str]) -> str:
    """The canonical string of a text: its pieces concatenated (``"$3,550"`` -> ``"3550"``)."""
    words = text_or_words.split() if isinstance(text_or_words, str) else text_or_words
    return "".join(p.text for p in canonical_pieces(words))


_ARTICLES = ("the", "a", "an")


def answer_forms(answer: str) -> list[str]:
    """Canonical strings an answer may appear as: as written, without a leading article, money
    with cents spoken (``"$12.50"`` -> ``"12dollarsand50cents"``)."""
    forms = [canonical(answer)]
    words = answer.split()
    if len(words) > 1 and word_key(words[0]) in _ARTICLES:
        forms.append(canonical(words[1:]))
    m = re.fullmatch(r"\$?\s*([\d,]+)\.(\d\d)", answer.strip())
    if m:
        forms.append(f"{m.group(1).replace(',', '')}dollarsand{int(m.group(2))}cents")
    m = re.fullmatch(r"\$\s*([\d,]+)", answer.strip())
    if m:
        forms.append(f"{m.group(1).replace(',', '')}dollars")
    seen: list[str] = []
    for f in forms:
        if f and f not in seen:
            seen.append(f)
    return sorted(seen, key=len, reverse=True)


def find_span(words: Sequence[str], target: str | Iterable[str]) -> tuple[int, int] | None:
    """First word range ``[w0, w1)`` whose canonical form equals a form of ``target`` (matched at
    piece boundaries only, so ``"44"`` never matches inside ``"4471"``); longest form first."""
    forms = answer_forms(target) if isinstance(target, str) else list(target)
    pieces = canonical_pieces(words)
    if not pieces:
        return None
    starts, s = {}, ""
    ends = {}
    for k, p in enumerate(pieces):
        starts[len(s)] = k
        s += p.text
        ends[len(s)] = k
    for form in forms:
        if not form:
            continue
        pos = s.find(form)
        while pos >= 0:
            end = pos + len(form)
            if pos in starts and end in ends and _clean_edges(pieces, starts[pos], ends[end]):
                return pieces[starts[pos]].w0, pieces[ends[end]].w1
            pos = s.find(form, pos + 1)
    return None


def _clean_edges(pieces: Sequence[Piece], a: int, b: int) -> bool:
    """A match may not start or end inside a run of digits: "44" is not in "four four seven"."""
    if a > 0 and pieces[a].text[0].isdigit() and pieces[a - 1].text[-1].isdigit() and not pieces[a - 1].brk:
        return False
    if b + 1 < len(pieces) and pieces[b].text[-1].isdigit() and pieces[b + 1].text[0].isdigit() \
            and not pieces[b].brk:
        return False
    return True


def contains_value(text: str, value: str) -> bool:
    """Whether ``text`` says ``value`` (normalised match at piece boundaries)."""
    return find_span(text.split(), value) is not None


# ---------------------------------------------------------------- critical spans in conversations
@dataclass(frozen=True)
class CriticalSpan:
    word_start: int
    word_end: int           # exclusive
    fact: UserFact


def fact_forms(fact: UserFact) -> list[str]:
    """Canonical forms of a user fact: its spoken form first (what TTS said), then its value."""
    forms: list[str] = []
    for text in (fact.spoken, fact.value):
        if text:
            for f in answer_forms(text):
                if f not in forms:
                    forms.append(f)
    return forms


def find_fact(words: Sequence[str], fact: UserFact) -> tuple[int, int] | None:
    """The word range where ``words`` speak ``fact`` (spoken form preferred, longest match)."""
    best = None
    for form in fact_forms(fact):
        hit = find_span(words, [form])
        if hit and (best is None or hit[1] - hit[0] > best[1] - best[0]):
            best = hit
    return best


def critical_spans(words: Sequence[str], facts: Sequence[UserFact]) -> list[CriticalSpan]:
    """Every fact of ``facts`` that ``words`` speak, in order of position; overlapping matches
    keep the longer one (a full address over the city inside it)."""
    found = [CriticalSpan(*hit, fact=f) for f in facts if (hit := find_fact(words, f))]
    found.sort(key=lambda c: (c.word_start, -(c.word_end - c.word_start)))
    out: list[CriticalSpan] = []
    for c in found:
        if out and c.word_start < out[-1].word_end:
            if c.word_end - c.word_start > out[-1].word_end - out[-1].word_start:
                out[-1] = c
            continue
        out.append(c)
    return out


# ---------------------------------------------------------------- function-word spans
def function_word_candidates(words: Sequence[WordTiming], critical: tuple[int, int], *,
                             window_s: float = 0.0, guard_s: float = 0.02,
                             duration_s: float | None = None) -> list[int]:
    """Indices of function words whose masked region (± ``window_s``) stays ``guard_s`` clear of
    the critical span's audio and that are not next to it::

        |of|the|  [ critical span ]  |to|      masked(of) + window + guard < critical start
    """
    t0, t1 = _critical_times(words, critical)
    c0, c1 = critical
    return [i for i, w in enumerate(words)
            if not c0 - 1 <= i <= c1 and is_function_word(w.word)
            and _clear(w, t0, t1, window_s, guard_s, duration_s) and w.end_s > w.start_s]


def _critical_times(words: Sequence[WordTiming], critical: tuple[int, int]) -> tuple[float, float]:
    c0, c1 = critical
    if not (0 <= c0 < c1 <= len(words)):
        raise ValueError(f"critical span {critical} outside 0..{len(words)}")
    return words[c0].start_s, words[c1 - 1].end_s


def _clear(w: WordTiming, t0: float, t1: float, window_s: float, guard_s: float,
           duration_s: float | None) -> bool:
    """Whether ``w`` masked (± ``window_s``, within the clip) stays ``guard_s`` clear of t0..t1."""
    a, b = w.start_s - window_s, w.end_s + window_s
    if duration_s is not None:
        a, b = max(0.0, a), min(duration_s, b)
    return not (b > t0 - guard_s and a < t1 + guard_s)


def maskable_candidates(words: Sequence[WordTiming], critical: tuple[int, int], *, window_s: float = 0.0,
                        guard_s: float = 0.02, duration_s: float | None = None,
                        content: bool = True, protected: Sequence[tuple[int, int]] = ()
                        ) -> list[tuple[int, int]]:
    """``(tier, index)`` of words an answerable variant may mask without touching the value:
    tier 0 function words, tier 1 fillers and backchannel words (the lexicon), tier 2 (when
    ``content``) any other word but a negation; never a word of a ``protected`` range (another
    fact's value: an answerable item that hid it would call for a repair too). Same clearance
    rules as :func:`function_word_candidates`."""
    from bargein.lexicon import BACKCHANNEL_WORDS, FILLERS

    t0, t1 = _critical_times(words, critical)
    c0, c1 = critical
    out = []
    for i, w in enumerate(words):
        if c0 - 1 <= i <= c1 or w.end_s <= w.start_s or any(a <= i < b for a, b in protected):
            continue
        k = word_key(w.word)
        if not k or k in NEGATIONS or not _clear(w, t0, t1, window_s, guard_s, duration_s):
            continue
        if is_function_word(w.word):
            out.append((0, i))
        elif k in FILLERS or k in BACKCHANNEL_WORDS:
            out.append((1, i))
        elif content:
            out.append((2, i))
    return out


def select_matched(candidates: Sequence[tuple[int, int]], target_s: float, rng: random.Random,
                   measure: Callable[[list[int]], float], *, high: float = 1.1) -> list[int]:
    """Words (lowest tier first, seeded order inside a tier) whose masked time ``measure(chosen)``
    reaches ``target_s`` without passing ``high * target_s``: the answerable mask hides as much
    audio as the unanswerable one, so its length says nothing about the label."""
    tiers: dict[int, list[int]] = {}
    for tier, i in candidates:
        tiers.setdefault(tier, []).append(i)
    order: list[int] = []
    for tier in sorted(tiers):
        group = list(tiers[tier])
        rng.shuffle(group)
        order += group
    chosen: list[int] = []
    total = 0.0
    for i in order:
        if total >= target_s:
            break
        trial = sorted(chosen + [i])
        t = measure(trial)
        if t <= high * target_s:
            chosen, total = trial, t
    return chosen


def select_function_words(words: Sequence[WordTiming], candidates: Sequence[int], target_s: float,
                          rng: random.Random) -> list[int]:
    """Function words in a seeded random order until their duration reaches ``target_s`` (the
    critical span's duration: both variants hide about as much speech), or all are used."""
    order = list(candidates)
    rng.shuffle(order)
    chosen, total = [], 0.0
    for i in order:
        if total >= target_s and chosen:
            break
        chosen.append(i)
        total += words[i].end_s - words[i].start_s
    return sorted(chosen)


def group_runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive word indices as ``[start, end)`` runs: ``[1, 2, 5] -> [(1, 3), (5, 6)]``."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1]:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return [(a, b) for a, b in runs]


# ---------------------------------------------------------------- leaks: the value said elsewhere
_MONTH_NAMES = tuple("""january february march april may june july august september october november
december""".split())
_MONTH_NUM = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}
_MONTH_NUM.update({m[:3]: i for m, i in list(_MONTH_NUM.items())})
_MONTH_NUM["sept"] = 9
_DATE_WORDS = re.compile(r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?([a-z]+)\.?\s+(\d{1,2})"
                         r"(?:st|nd|rd|th)?,?\s+(\d{4}|\d{2}\s+\d{2})\b")     # "2025" or spoken "20 25"
_DATE_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_DATE_US = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})")
MIN_PARTIAL_DIGITS = 4          # a run of this many of the value's digits, said elsewhere, leaks it


def _date_parts(value: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a written or spoken date ("June twelfth, twenty twenty-five")."""
    return _date_parts_text(value) or _date_parts_text(" ".join(p.text for p in canonical_pieces(value.split())))


def _date_parts_text(value: str) -> tuple[int, int, int] | None:
    v = _fold(value).lower().strip()
    if m := _DATE_WORDS.search(v):
        month = _MONTH_NUM.get(m.group(1))
        return (int(m.group(3).replace(" ", "")), month, int(m.group(2))) if month else None
    if m := _DATE_ISO.search(v):
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    if m := _DATE_US.search(v):
        return int(m.group(3)), int(m.group(1)), int(m.group(2))
    return None


def leak_forms(values: Iterable[str]) -> list[str]:
    """Canonical strings that give a value away: every answer form, and for a date every way of
    writing or saying it (month name or number, day first or last, with or without the year)."""
    out: list[str] = []
    for value in values:
        if not value:
            continue
        out += answer_forms(value)
        parts = _date_parts(value)
        if parts:
            y, mo, d = parts
            name = _MONTH_NAMES[mo - 1] if 1 <= mo <= 12 else ""
            out += [f"{name}{d}{y}", f"{d}{name}{y}", f"{d}of{name}{y}", f"{name}{d}", f"{d}{name}",
                    f"{d}of{name}", f"{y}{mo:02d}{d:02d}",
                    f"{mo}{d}{y}", f"{mo:02d}{d:02d}{y}", f"{d}{mo}{y}"]
    seen: list[str] = []
    for f in out:
        if f and f not in seen:
            seen.append(f)
    return sorted(seen, key=len, reverse=True)


def _leak_range(words: Sequence[str], values: Sequence[str]) -> tuple[int, int, str] | None:
    """``(w0, w1, what)``: the words of ``words`` that give a value away (see :func:`value_leak`)."""
    if not words:
        return None
    forms = leak_forms(values)
    pieces = canonical_pieces(words)
    s, at = "", []                       # at[k] = piece of character k of s
    for k, p in enumerate(pieces):
        s += p.text
        at += [k] * len(p.text)
    for f in forms:
        if len(f) < 3:
            hit = find_span(words, [f])
            if hit is not None:
                return hit[0], hit[1], f
            continue
        pos = s.find(f)
        if pos >= 0:
            a, b = at[pos], at[pos + len(f) - 1]
            return pieces[a].w0, pieces[b].w1, f
    # partial digit runs: codes and numbers only (a date's year alone does not give it away)
    values = list(values)
    digits = ["".join(c for c in f if c.isdigit()) for f in leak_forms(v for v in values if not _date_parts(v))]
    digits = [d for d in digits if len(d) >= MIN_PARTIAL_DIGITS]
    run, first = "", None
    for k, p in enumerate(pieces + [Piece("", 0, 0)]):
        if p.text.isdigit():
            run, first = run + p.text, k if first is None else first
            continue
        if len(run) >= MIN_PARTIAL_DIGITS and any(run in d or d in run for d in digits):
            return pieces[first].w0, pieces[k - 1].w1, run
        run, first = "", None
    return None


def value_leak(text: str | Sequence[str], values: Iterable[str]) -> str | None:
    """What in ``text`` gives one of ``values`` away, or None.

    Stricter than :func:`find_span` on purpose: any canonical form of the value anywhere in the
    text (digits, number words, spelled letters, dates in any form), and any run of at least
    ``MIN_PARTIAL_DIGITS`` of the value's digits ("ending in 0785")::

        value "33-115-0785"   text "I have parcel 33-115-0785"    -> "331150785"
        value "RF-031507"     text "R F zero three one five ..."  -> "rf031507"
    """
    words = text.split() if isinstance(text, str) else list(text)
    hit = _leak_range(words, list(values))
    return hit[2] if hit else None


WITHHELD = "[withheld]"


def redact_value(text: str, values: Sequence[str], placeholder: str = WITHHELD) -> tuple[str, int]:
    """``text`` with every mention of the values (any form :func:`value_leak` finds) replaced by
    ``placeholder`` (the last word's trailing punctuation kept), and how many were replaced::

        "- Order number: HH-1389-4005"  ->  "- Order number: [withheld]"
    """
    n = 0
    for _ in range(64):
        toks = list(re.finditer(r"\S+", text))
        hit = _leak_range([t.group() for t in toks], values)
        if hit is None:
            return text, n
        w0, w1, _ = hit
        last = toks[w1 - 1].group()
        tail = last[len(last.rstrip(".,;:!?\"')")):]
        text = text[: toks[w0].start()] + placeholder + tail + text[toks[w1 - 1].end():]
        n += 1
    raise SpanNotFound(f"cannot redact the value from {text[:80]!r}")
