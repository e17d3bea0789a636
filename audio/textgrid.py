"""Praat TextGrid files (long and short text formats) into interval tiers and word timings.

    tiers = read_textgrid("utt.TextGrid")          # {"words": [(0.0, 0.31, "hello"), ...], ...}
    words = words_from_tier(tiers, "Hello, world.")  # WordTiming per transcript word

MFA writes a ``words`` tier (empty labels are silences) and a ``phones`` tier.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from bargein.audio.wordtimes import split_words
from bargein.errors import AlignmentFailed, AudioError
from bargein.records.audio import WordTiming

Interval = tuple[float, float, str]
_TOKEN = re.compile(r'"((?:[^"]|"")*)"|(\S+)')
_SILENCE = {"", "sil", "sp", "spn", "<eps>", "<sil>"}


def _tokens(text: str) -> list[str]:
    """Values of a TextGrid in order: quoted strings (with "" unescaped) and bare numbers/flags.

    In the long format ``key = value`` lines reduce to their values; ``name = "x"`` keys and
    ``intervals [3]:`` headers are dropped, which leaves exactly the short format's token stream.
    """
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("!"):
            continue
        if "=" in line and not line.startswith('"'):
            key, _, line = line.partition("=")
            line = line.strip()
        elif re.match(r"^(item|intervals|points)\s*\[\d*\]\s*:?$", line) or line in ("item []:", "tiers? <exists>"):
            continue
        if line == "<exists>":
            out.append(line)
            continue
        for m in _TOKEN.finditer(line):
            out.append(m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2))
    return out


def parse_textgrid(text: str, source: str = "<text>") -> dict[str, list[Interval]]:
    """Interval tiers by name (point tiers are skipped)."""
    toks = _tokens(text.lstrip("\ufeff"))
    try:
        if toks[:2] != ["ooTextFile", "TextGrid"]:
            raise ValueError("missing 'File type = \"ooTextFile\"' / 'Object class = \"TextGrid\"' header")
        i = 4                                    # file type, class, xmin, xmax
        if toks[i] == "<exists>":
            i += 1
        n_tiers = int(toks[i])
        i += 1
        tiers: dict[str, list[Interval]] = {}
        for _ in range(n_tiers):
            klass, name = toks[i], toks[i + 1]
            n = int(toks[i + 4])
            i += 5
            if klass == "IntervalTier":
                tiers[name] = [(float(toks[i + 3 * k]), float(toks[i + 3 * k + 1]), toks[i + 3 * k + 2])
                               for k in range(n)]
                i += 3 * n
            elif klass == "TextTier":
                i += 2 * n
            else:
                raise ValueError(f"unknown tier class {klass!r}")
        return tiers
    except (IndexError, ValueError) as e:
        raise AudioError(f"cannot parse TextGrid {source}: {e}. Fix: check it is a Praat TextGrid in "
                         "long or short text format.") from e


def read_textgrid(path: str | os.PathLike) -> dict[str, list[Interval]]:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise AudioError(f"cannot read TextGrid {p}: {e}") from e
    for enc in ("utf-8-sig", "utf-16"):
        try:
            return parse_textgrid(raw.decode(enc), str(p))
        except UnicodeDecodeError:
            continue
    raise AudioError(f"TextGrid {p} is neither UTF-8 nor UTF-16")


def _norm(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())


def words_from_tier(tiers: dict[str, list[Interval]], transcript: str, tier: str = "words"
                    ) -> tuple[WordTiming, ...]:
    """Map a word tier's labelled intervals onto the transcript's words, in order.

    Labels are compared without case and punctuation; a transcript word that the aligner split
    (``don't`` -> ``do`` ``n't``) or spelled differently takes the intervals up to the next match.
    """
    if tier not in tiers:
        raise AlignmentFailed(f"TextGrid has no {tier!r} tier (tiers: {sorted(tiers)})")
    ivs = [(a, b, lab) for a, b, lab in tiers[tier] if lab.strip().lower() not in _SILENCE]
    words = split_words(transcript)
    if not words:
        raise AlignmentFailed(f"transcript {transcript!r} has no words")
    if not ivs:
        raise AlignmentFailed("the TextGrid word tier has no labelled intervals")
    out: list[WordTiming] = []
    j = 0
    for k, (word, cs) in enumerate(words):
        if j >= len(ivs):
            raise AlignmentFailed(f"TextGrid ran out of intervals at word {k} {word!r}",
                                  evidence={"intervals": ivs})
        target, start, end, acc = _norm(word), ivs[j][0], ivs[j][1], _norm(ivs[j][2])
        j += 1
        nxt = _norm(words[k + 1][0]) if k + 1 < len(words) else None
        while j < len(ivs) and acc != target and len(acc) < len(target) and _norm(ivs[j][2]) != nxt:
            acc += _norm(ivs[j][2])
            end = ivs[j][1]
            j += 1
        out.append(WordTiming(word=word, start_s=round(start, 6), end_s=round(end, 6), char_start=cs))
    return tuple(out)
