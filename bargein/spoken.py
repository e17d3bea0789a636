"""Numbers as they are said: the one place both the generators (what a caller says aloud, what
TTS reads) and the scorers (a quote matching a reply that says a number the other way) take
their number words from. Neutral on purpose: a scorer must not import the generators.

    int_words(1249)    -> "one thousand two hundred forty-nine"
    ordinal_words(22)  -> "twenty-second"
    year_words(2025)   -> "twenty twenty-five"
"""

from __future__ import annotations

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen").split()
DIGIT_WORDS = ONES[:10]
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORD = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
        "nine": "ninth", "twelve": "twelfth"}


def int_words(n: int) -> str:
    """Cardinal number in words (American style, no 'and')."""
    if n < 0:
        return "minus " + int_words(-n)
    if n < 20:
        return ONES[n]
    if n < 100:
        t, o = divmod(n, 10)
        return _TENS[t] + (f"-{ONES[o]}" if o else "")
    for size, word in ((10**9, "billion"), (10**6, "million"), (1000, "thousand"),
                       (100, "hundred")):
        if n >= size:
            hi, lo = divmod(n, size)
            return f"{int_words(hi)} {word}" + (f" {int_words(lo)}" if lo else "")
    raise AssertionError(n)


def ordinal_words(n: int) -> str:
    """Ordinal in words: 22 -> "twenty-second", 30 -> "thirtieth"."""
    words = int_words(n)
    head, sep, last = words.rpartition("-") if "-" in words else words.rpartition(" ")
    if last in _ORD:
        last = _ORD[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return f"{head}{sep}{last}"


def year_words(y: int) -> str:
    """A year as said: 2005 -> "two thousand five", 2025 -> "twenty twenty-five",
    1905 -> "nineteen oh five", 1900 -> "nineteen hundred"."""
    if 2000 <= y < 2010:
        return int_words(y)
    hi, lo = divmod(y, 100)
    if lo == 0:
        return f"{int_words(hi)} hundred"
    return f"{int_words(hi)} {int_words(lo) if lo >= 10 else 'oh ' + int_words(lo)}"
