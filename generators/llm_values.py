"""Whether a value was said, in any of the forms a person says or writes it.

A model asked to give ``HH-1389-4005`` may say "H H, one three eight nine, four zero zero five",
"double H thirteen eighty-nine, forty oh five" or write it as given; a date ``June 3, 2025``
may come back as "the third of June" (with the year, if the value has one, anywhere near).
The checks on LLM answers compare values through :func:`canonical` so every form counts::

    said("It's double H, thirteen eighty-nine, four oh oh five", "HH-1389-4005")   -> True
    said("the third of June, twenty twenty-five", "June 3, 2025")                  -> True
    said("forty-five dollars and fifty cents", "$45.50")                            -> True
"""

from __future__ import annotations

import re

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_UNITS["oh"] = 0
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety"
                                          .split()) if w != "_"}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
             "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
             "thirteenth": 13, "fourteenth": 14, "fifteenth": 15, "sixteenth": 16,
             "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20,
             "thirtieth": 30}
_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6}
_REPEAT = {"double": 2, "triple": 3}
# words that carry no part of a value's identity when it is spoken (joiners, units, symbols)
_FILLER = frozenset("""and dollars dollar usd cents cent point dot dash hyphen slash at the of
number is its it's a an percent pounds euros euro""".split())


def _tokens(text: str) -> list[str]:
    # an underscore is part of an address: said as "underscore", never dropped (seen: "Samantha
    # Green at AOL.com" passed for samantha_green@aol.com)
    text = text.lower().replace("@", " at ").replace("&", " and ").replace("_", " underscore ")
    text = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text)        # 3rd -> 3
    return re.findall(r"[a-z]+|\d+", text.replace("'", ""))


def _numbers(words: list[str]) -> list[str]:
    """Number words as digit strings: a run with a scale word ('one thousand two hundred') is
    summed; otherwise each group ('thirteen eighty-nine', 'one three', 'twenty twenty-five')
    is written out in turn."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in _REPEAT and i + 1 < len(words):
            nxt = words[i + 1]
            if nxt in _UNITS and _UNITS[nxt] < 10 or re.fullmatch(r"\d|[a-z]", nxt):
                rep = str(_UNITS[nxt]) if nxt in _UNITS else nxt
                out.extend([rep] * _REPEAT[w])
                i += 2
                continue
        if w in _UNITS or w in _TENS or w in _ORDINALS or (w in _SCALES and out and out[-1].isdigit()):
            j = i
            run = []
            while j < len(words) and (words[j] in _UNITS or words[j] in _TENS or words[j] in _SCALES
                                      or words[j] in _ORDINALS
                                      or (words[j] == "and" and run and j + 1 < len(words)
                                          and words[j + 1] in {**_UNITS, **_TENS})):
                run.append(words[j])
                j += 1
            out.extend(_run_digits(run))
            i = j
            continue
        out.append(w)
        i += 1
    return out


def _run_digits(run: list[str]) -> list[str]:
    run = [w for w in run if w != "and"]
    if any(w in _SCALES for w in run):
        total, cur = 0, 0
        for w in run:
            if w in _SCALES:
                cur = max(cur, 1) * _SCALES[w]
                if _SCALES[w] >= 1000:
                    total, cur = total + cur, 0
            else:
                cur += _UNITS.get(w, _TENS.get(w, _ORDINALS.get(w, 0)))
        return [str(total + cur)]
    groups: list[int] = []
    prev_tens = False
    for w in run:
        v = _UNITS.get(w, _TENS.get(w, _ORDINALS.get(w)))
        if prev_tens and v is not None and v < 10 and w != "oh":
            groups[-1] += v                    # "eighty nine" -> 89
            prev_tens = False
            continue
        groups.append(v)
        prev_tens = w in _TENS or w in ("twentieth", "thirtieth")
    return [str(g) for g in groups]


def canonical(text: str) -> str:
    """Letters and digits of ``text`` as spoken, joiners dropped: ``"HH-1389"`` and "double H,
    thirteen eighty-nine" both give ``"hh1389"``; a month name becomes ``m<N>`` ("june" -> m6)."""
    toks = _numbers(_tokens(text))
    out = []
    for t in toks:
        if t in _FILLER:
            continue
        if t in _MONTHS:
            out.append(f"m{_MONTHS[t]}")
        else:
            out.append(t)
    return "".join(out)


_DATE_NUM = re.compile(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?\b")


def _dates(text: str) -> set[tuple[int, int]]:
    """(month, day) pairs mentioned in ``text``: 'June 3', '3 June', 'the third of June', '6/3'."""
    toks = _numbers(_tokens(text))
    found = set()
    for i, t in enumerate(toks):
        if t in _MONTHS:
            m = _MONTHS[t]
            for j in (i + 1, i - 1, i - 2):
                if 0 <= j < len(toks) and toks[j].isdigit() and 1 <= int(toks[j]) <= 31:
                    if j == i - 2 and toks[i - 1] != "of":
                        continue
                    found.add((m, int(toks[j])))
    for a, b, _ in _DATE_NUM.findall(text):
        found.add((int(a), int(b)))
    return found


def _year(text: str) -> str | None:
    m = re.search(r"\b(19|20)\d\d\b", text)
    return m.group(0) if m else None


def said(text: str, value: str) -> bool:
    """Whether ``value`` is in ``text`` in any spoken or written form (digits or words, letters
    spelled or not, a date in any order). An empty value counts as said."""
    if not value.strip():
        return True
    value = re.sub(r"(\d)\.00\b", r"\1", value)         # "$45.00" is said "forty-five dollars"
    want = canonical(value)
    got = canonical(text)
    if want and want in got:
        return True
    dates = _dates(value)
    if dates:
        (date,) = sorted(dates)[:1]
        if date not in _dates(text):
            return False
        year = _year(value)
        return year is None or year in " ".join(_numbers(_tokens(text))) or year in got
    return False
