"""How much audio an answerable mask hides, and whose length it copies.

An unanswerable item masks the value; its answerable twin masks words that do not carry the value,
as much audio as the value (``MASK_LEN_RATIO``), so a model cannot read the label off the mask's
length. A value that fills most of its utterance ("Sure, it's H H, one three eight nine, four zero
zero five.") leaves too few other words to match it. Such a source is not dropped when another
source can take its length: the two *swap targets* (:func:`pair_lengths`), each answerable mask
copying the other's value length::

    source   value (unanswerable)   other words    answerable target
    u        3.4 s                  0.9 s          v_p = 0.8 s   (u cannot hide 3.4 s)
    p        0.8 s                  6.0 s          v_u = 3.4 s
    masked time, unanswerable {3.4, 0.8}  ==  answerable {0.8, 3.4}: the same distribution

Per pair the two lengths then differ, but over the release answerable and unanswerable masks
have one length distribution (``bargein.audio.fidelity.mask_length_ratio`` measures it on the
items: ratio of medians and the length AUC). A source no partner can take stays out, with its
reason.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from bargein.errors import BargeinError
from bargein.masking.signals import expand_region
from bargein.masking.spans import SpanNotFound, group_runs, maskable_candidates, select_matched
from bargein.records import WordTiming
from bargein.seeding import stable_int

MASK_LEN_RATIO = (0.8, 1.25)     # answerable masked time / its target (the value's masked time)


def merged_s(regions: Sequence[tuple[float, float, int, int]]) -> float:
    """Seconds covered by the union of ``(start_s, end_s, ...)`` regions."""
    total, end = 0.0, -1.0
    for s, e, _a, _b in sorted(regions):
        if s >= end:
            total += e - s
        elif e > end:
            total += e - end
        end = max(end, e)
    return total


def answerable_regions(words: Sequence[WordTiming], critical: tuple[int, int], window_ms: int,
                       duration_s: float, config: Any, seed: int, *, target_s: float,
                       content: bool = True, protected: Sequence[tuple[int, int]] = ()
                       ) -> list[tuple[float, float, int, int]]:
    """Regions of words that do not carry the value (function words first, then fillers, then
    other words when ``content``; never a ``protected`` word: another fact's value) hiding
    ``target_s`` of audio within ``MASK_LEN_RATIO``."""
    cand = maskable_candidates(words, critical, window_s=window_ms / 1000.0, guard_s=config.guard_ms / 1000.0,
                               duration_s=duration_s, content=content, protected=protected)
    if not cand:
        raise SpanNotFound(
            f"no word can be masked for the answerable variant with a ±{window_ms} ms "
            f"window (each must stay {config.guard_ms:g} ms clear of the critical span and not be "
            "next to it)", evidence={"words": [w.word for w in words], "critical": list(critical)})

    def regions(chosen: list[int]) -> list[tuple[float, float, int, int]]:
        out = []
        for a, b in group_runs(chosen):
            s, e = expand_region(words[a].start_s, words[b - 1].end_s, window_ms, duration_s)
            out.append((s, e, a, b))
        return out

    chosen = select_matched(cand, target_s, random.Random(stable_int("mask.fw", seed, window_ms)),
                            lambda ch: merged_s(regions(ch)))
    out = regions(chosen)
    got = merged_s(out)
    lo, hi = MASK_LEN_RATIO
    if not lo * target_s <= got <= hi * target_s:
        raise SpanNotFound(
            f"the answerable variant can hide only {got:.2f} s of words that do not carry the value, "
            f"against {target_s:.2f} s for the value: mask length would give the label away "
            f"(need {lo}..{hi} x)", evidence={"words": [w.word for w in words], "critical": list(critical),
                                             "chosen": chosen, "masked_s": round(got, 3),
                                             "target_s": round(target_s, 3)})
    return out


def value_lengths(src: Any, config: Any) -> tuple[float, ...]:
    """The value's masked seconds at each of ``config.windows_ms`` (the unanswerable masks)."""
    words, (c0, c1) = src.words, src.critical
    duration = max((w.end_s for w in words), default=0.0)
    out = []
    for window in config.windows_ms:
        s, e = expand_region(words[c0].start_s, words[c1 - 1].end_s, window, duration)
        out.append(e - s)
    return tuple(out)


def targets(src: Any, config: Any) -> tuple[float, ...]:
    """What the source's answerable masks must hide, per window: its partner's value lengths
    when it has one, else its own."""
    return tuple(src.answerable_target_s) if src.answerable_target_s else value_lengths(src, config)


def why_unmatched(src: Any, config: Any, want: Sequence[float] | None = None) -> str | None:
    """Why the source's answerable masks cannot hide ``want`` (default: its own value lengths)
    at some window, or None when they can (checked when listing, so a cap on items picks
    sources that can be built)."""
    words, (c0, c1) = src.words, src.critical
    duration = max((w.end_s for w in words), default=0.0)
    try:
        want = tuple(want) if want is not None else value_lengths(src, config)
        for window, target in zip(config.windows_ms, want):
            answerable_regions(words, (c0, c1), window, duration, config, 0, target_s=target,
                               content=src.kind == "conversation", protected=src.protected)
    except BargeinError as e:
        return str(e).split(" (need")[0]
    return None


def pair_lengths(matched: Sequence[Any], unmatched: Sequence[tuple[Any, str]], config: Any
                 ) -> tuple[list[Any], list[tuple[Any, str]]]:
    """Swap answerable targets between each unmatched source and a matched one that can take its
    length (see the module docstring). Returns ``(sources, still unmatched with reasons)``;
    ``sources`` keeps the matched ones' order, each paired source placed after its partner.

    Longest values first; a partner is taken once. Among the partners that fit, the one whose
    value is longest (the least change to the unmatched source's own mask), ties by id.
    """
    own = {s.id: value_lengths(s, config) for s in matched}
    free = {s.id: s for s in matched}
    swapped: dict[str, Any] = {}
    after: dict[str, Any] = {}
    left: list[tuple[Any, str]] = []
    for u, why in sorted(unmatched, key=lambda t: (-value_lengths(t[0], config)[0], t[0].id)):
        vu = value_lengths(u, config)
        fits = [p for p in free.values()
                if why_unmatched(p, config, vu) is None and why_unmatched(u, config, own[p.id]) is None]
        if not fits:
            left.append((u, f"{why}; no other source can take its length"))
            continue
        p = max(fits, key=lambda p: (own[p.id][0], p.id))
        del free[p.id]
        swapped[p.id] = p.model_copy(update={"answerable_target_s": vu, "length_partner": u.id})
        after[p.id] = u.model_copy(update={"answerable_target_s": own[p.id], "length_partner": p.id})
    out = []
    for s in matched:
        out.append(swapped.get(s.id, s))
        if s.id in after:
            out.append(after[s.id])
    return out, left
