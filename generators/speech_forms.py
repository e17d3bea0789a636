"""Spoken forms of written values, for TTS and for what a caller says aloud.

    int_words(1249)            -> "one thousand two hundred forty-nine"
    code_spoken("4471 0932")   -> "four four seven one, zero nine three two"
    amount_spoken(1249.5)      -> "one thousand two hundred forty-nine dollars and fifty cents"
    date_spoken(date(2025, 6, 12))  -> "June twelfth, twenty twenty-five"
    email_spoken("m.lopez84@gmail.com") -> "m dot lopez eight four at gmail dot com"
"""

from __future__ import annotations

import re
from datetime import date

from bargein.spoken import DIGIT_WORDS, int_words, ordinal_words, year_words

__all__ = ["int_words", "ordinal_words", "year_words", "date_spoken", "time_spoken",
           "amount_spoken", "code_spoken", "email_spoken"]

def date_spoken(d: date, weekday: bool = False) -> str:
    s = f"{d.strftime('%B')} {ordinal_words(d.day)}, {year_words(d.year)}"
    return f"{d.strftime('%A')}, {s}" if weekday else s


def time_spoken(hour: int, minute: int) -> str:
    h = (hour - 1) % 12 + 1
    suffix = "a.m." if hour < 12 else "p.m."
    if minute == 0:
        return f"{int_words(h)} {suffix}"
    m = int_words(minute) if minute >= 10 else f"oh {int_words(minute)}"
    return f"{int_words(h)} {m} {suffix}"


def amount_spoken(amount: float) -> str:
    cents_total = round(amount * 100)
    dollars, cents = divmod(cents_total, 100)
    s = f"{int_words(dollars)} dollar{'s' if dollars != 1 else ''}"
    if cents:
        s += f" and {int_words(cents)} cent{'s' if cents != 1 else ''}"
    return s


def code_spoken(code: str) -> str:
    """Characters read one by one; spaces, dashes and slashes become group pauses."""
    groups = [g for g in re.split(r"[\s\-/]+", code.strip()) if g]
    out = []
    for g in groups:
        out.append(" ".join(DIGIT_WORDS[int(c)] if c.isdigit() else c.upper() for c in g if c.isalnum()))
    return ", ".join(o for o in out if o)


def email_spoken(email: str) -> str:
    local, _, domain = email.partition("@")

    def part(s: str) -> str:
        s = s.replace(".", " dot ").replace("_", " underscore ").replace("-", " dash ")
        s = re.sub(r"\d", lambda m: f" {DIGIT_WORDS[int(m.group(0))]} ", s)
        return re.sub(r"\s+", " ", s).strip()

    return f"{part(local)} at {part(domain)}"
