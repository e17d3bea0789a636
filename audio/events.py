"""Turn-taking events on two-channel audio: mutual silences, clean shifts and holds, backchannels.

Input is per-channel speech segments ``[(start_s, end_s), ...]`` (from VAD or a timeline).
A shift/hold region follows the VAP criterion: a mutual silence with exactly one active
speaker in the 1 s before it and exactly one in the 1 s after it::

    A  ====|                        A  ====|        |====
    B      |   silence   |====      B      |silence |
           <-1 s->       <-1 s->           shift: A -> B          hold: A -> A

Backchannels are short isolated listener segments: transcript-based when the segment's
words are known (``bargein.lexicon``), else by duration and context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bargein import lexicon
from bargein.audio.labels import _span, is_backchannel

Span = tuple[float, float]

BC_MAX_S = 1.0          # a VAD-only backchannel lasts at most this long
BC_CONTEXT_S = 0.3      # ... and the other speaker talks within this margin before and after


@dataclass(frozen=True)
class Region:
    """A clean mutual silence between ``speaker_before`` and ``speaker_after``."""

    start_s: float
    end_s: float
    kind: str                   # "shift" or "hold"
    speaker_before: int
    speaker_after: int

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Backchannel:
    channel: int
    start_s: float              # exact audio span to copy (word times when known)
    end_s: float
    text: str | None = None
    source: str = "vad"         # "words", "kind" or "vad"

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class DialogueEvents:
    duration_s: float
    segments: tuple[tuple[Span, ...], ...]
    silences: tuple[Span, ...]
    shifts: tuple[Region, ...]
    holds: tuple[Region, ...]
    backchannels: tuple[Backchannel, ...] = field(default=())


def normalize_phrase(text: str) -> str:
    return lexicon.normalize(text)


def is_backchannel_text(text: str) -> bool:
    """A backchannel by the one lexicon (``bargein.lexicon``): short, listed, no opener."""
    return lexicon.is_backchannel(text)


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def mutual_silences(segments: Sequence[Sequence[Span]], duration_s: float,
                    min_s: float = 0.0) -> list[Span]:
    """Intervals where no channel speaks (file edges included), at least ``min_s`` long."""
    speech = merge_spans([s for ch in segments for s in ch])
    out, t = [], 0.0
    for a, b in speech:
        if a - t > min_s and a > t:
            out.append((t, a))
        t = max(t, b)
    if duration_s - t > min_s and duration_s > t:
        out.append((t, duration_s))
    return out


def _active(spans: Sequence[Span], a: float, b: float) -> bool:
    return any(s < b and e > a for s, e in spans)


def shift_hold_regions(segments: Sequence[Sequence[Span]], duration_s: float,
                       context_s: float = 1.0) -> tuple[list[Region], list[Region]]:
    """(shifts, holds) by the VAP criterion; silences touching the file edges are excluded."""
    shifts, holds = [], []
    for a, b in mutual_silences(segments, duration_s):
        if a <= 0.0 or b >= duration_s or a - context_s < 0 or b + context_s > duration_s:
            continue
        before = [c for c, ch in enumerate(segments) if _active(ch, a - context_s, a)]
        after = [c for c, ch in enumerate(segments) if _active(ch, b, b + context_s)]
        if len(before) != 1 or len(after) != 1:
            continue
        kind = "shift" if before[0] != after[0] else "hold"
        (shifts if kind == "shift" else holds).append(Region(a, b, kind, before[0], after[0]))
    return shifts, holds


def backchannels_from_vad(segments: Sequence[Sequence[Span]], max_s: float = BC_MAX_S,
                          context_s: float = BC_CONTEXT_S) -> list[Backchannel]:
    """Short listener segments inside the other speaker's turn (VAD-only heuristic)."""
    out = []
    for c, ch in enumerate(segments):
        other = [s for o, och in enumerate(segments) if o != c for s in och]
        for a, b in ch:
            if b > a and is_backchannel((a, b), other, max_s, context_s):
                out.append(Backchannel(c, a, b, None, "vad"))
    return sorted(out, key=lambda x: (x.start_s, x.channel))


def backchannels_from_records(segments: Sequence[Any], pad_s: float = 0.02,
                              max_s: float = BC_MAX_S) -> list[Backchannel]:
    """Transcript-based: rendered segments whose spoken text is a backchannel of the lexicon
    (at most 3 words, never an interruption opener such as "Wait,"; ``kind`` alone does not
    make one) and that last at most ``max_s``; the span comes from the word timings."""
    out = []
    for seg in segments:
        text = getattr(seg, "spoken_text", None) or getattr(seg, "text", "") or ""
        if not is_backchannel_text(text):
            continue
        a0, b0 = _span(seg)
        if b0 - a0 > max_s:
            continue
        words = getattr(seg, "words", ()) or ()
        if words:
            a, b = words[0].start_s - pad_s, words[-1].end_s + pad_s
            src = "words"
        else:
            a, b = _span(seg)
            src = "kind"
        out.append(Backchannel(int(seg.channel), max(0.0, a), b, normalize_phrase(text), src))
    return sorted(out, key=lambda x: (x.start_s, x.channel))


def detect_events(segments: Sequence[Sequence[Span]], duration_s: float,
                  records: Sequence[Any] | None = None) -> DialogueEvents:
    """All events of one dialogue from per-channel segments (+ rendered segment records)."""
    segs = tuple(tuple((float(a), float(b)) for a, b in (_span(s) for s in ch)) for ch in segments)
    shifts, holds = shift_hold_regions(segs, duration_s)
    # with a transcript only its backchannels count; the duration heuristic is for bare audio
    bcs = backchannels_from_records(records) if records else backchannels_from_vad(segs)
    return DialogueEvents(duration_s, segs, tuple(mutual_silences(segs, duration_s)),
                          tuple(shifts), tuple(holds), tuple(bcs))


def detect_events_audio(samples: np.ndarray, sample_rate: int, vad: Any,
                        records: Sequence[Any] | None = None) -> DialogueEvents:
    """Run ``vad`` on each channel of (n, 2) audio, then :func:`detect_events`."""
    from bargein.audio.vad import segments_to_tuples

    chans = vad.channel_segments(samples, sample_rate)
    return detect_events([segments_to_tuples(c) for c in chans], len(samples) / sample_rate, records)
