"""Timing metrics of two-channel recordings: FD-Bench event metrics and Talking-Turns statistics.

Channel 0 = user, channel 1 = system. The user turns come from the scripted schedule when
given (its ``kind`` may mark ``interruption`` or ``noise``), else from user VAD segments.

FD-Bench, per user turn u = [s, e] and the next user onset n::

    user    |=====u=====|                         |==== next
    system        ^EI      ^ERT |====reply====|         reply window: [e - 0.5 s, n)
                  (onset < e - 0.5: early interrupt, EIT = e - onset)
                           (e - 0.5 <= onset < e: early reply, ERT = e - onset)
                                (onset >= e: FSED = onset - e)

    system  |=========== speaking ====X           interruption: user onset inside a system
    user               |==== u ====|     segment; success when the system stops before e;
                       <-- IRD -->               SRI when it then replies in [e - 0.5 s, n)

* SRR = replied inquiries / inquiries; EIR = inquiries with an early system onset / inquiries
* SIR = successful interrupts / interruptions; SRIR = replies after a success / successes
* NIR = gaps between user turns holding a system segment that ends >= 2.5 s before the next
  user onset and lasts < 5.5 s (it stopped on its own: a noise interrupt) / gaps
* IRD, FSED, ERT, EIT: medians in ms.

Differences from the public FD-Bench code, on purpose: rates are fractions in [0, 1] (the code
prints them with a % sign without scaling) and the timing aggregates are medians (the code
calls them averages). Inquiries that are interruptions count in SIR/SRIR, not in SRR/EIR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bargein.audio.events import backchannels_from_vad, merge_spans, mutual_silences
from bargein.audio.labels import TT_LABELS, talking_turns_labels

Span = tuple[float, float]
EARLY_S = 0.5
NOISE_LEAD_S = 2.5
NOISE_MAX_S = 5.5


@dataclass(frozen=True)
class UserTurn:
    start_s: float
    end_s: float
    kind: str = "auto"          # "inquiry", "interruption", "noise" or "auto" (decided by VAD)


@dataclass
class FDBenchEvents:
    """Per-recording indicators and delays; pooled across recordings for the aggregates."""

    replied: list[float] = field(default_factory=list)          # per inquiry
    early: list[float] = field(default_factory=list)            # per inquiry
    interrupt_ok: list[float] = field(default_factory=list)     # per interruption
    reply_after: list[float] = field(default_factory=list)      # per successful interrupt
    noise_stop: list[float] = field(default_factory=list)       # per gap
    ird_ms: list[float] = field(default_factory=list)
    fsed_ms: list[float] = field(default_factory=list)
    ert_ms: list[float] = field(default_factory=list)
    eit_ms: list[float] = field(default_factory=list)

    def extend(self, other: FDBenchEvents) -> None:
        for k in self.__dataclass_fields__:
            getattr(self, k).extend(getattr(other, k))

    def metrics(self) -> dict[str, float]:
        def rate(x):
            return float(np.mean(x)) if x else math.nan

        def med(x):
            return float(np.median(x)) if x else math.nan

        return {"SRR": rate(self.replied), "EIR": rate(self.early), "SIR": rate(self.interrupt_ok),
                "SRIR": rate(self.reply_after), "NIR": rate(self.noise_stop),
                "IRD_ms": med(self.ird_ms), "FSED_ms": med(self.fsed_ms), "ERT_ms": med(self.ert_ms),
                "EIT_ms": med(self.eit_ms)}


def user_turns_from_vad(user: Sequence[Span], join_s: float = 0.0) -> list[UserTurn]:
    """User VAD segments as turns (segments closer than ``join_s`` are joined)."""
    out: list[list[float]] = []
    for a, b in sorted(user):
        if out and a - out[-1][1] < join_s:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [UserTurn(a, b) for a, b in out]


def _containing(spans: Sequence[Span], t: float) -> Span | None:
    return next(((a, b) for a, b in spans if a < t < b), None)


def fdbench_events(user_turns: Sequence[UserTurn], system: Sequence[Span],
                   duration_s: float) -> FDBenchEvents:
    """FD-Bench indicators for one recording (see the module docstring)."""
    ev = FDBenchEvents()
    system = merge_spans(system)
    onsets = [a for a, _ in system]
    turns = sorted(user_turns, key=lambda u: u.start_s)
    speech = [u for u in turns if u.kind != "noise"]
    for i, u in enumerate(speech):
        nxt = speech[i + 1].start_s if i + 1 < len(speech) else duration_s
        kind = u.kind
        holding = _containing(system, u.start_s)
        if kind == "auto":
            kind = "interruption" if holding is not None else "inquiry"
        reply = next((o for o in onsets if u.end_s - EARLY_S <= o < nxt and o > u.start_s), None)
        if kind == "interruption":
            stop = holding[1] if holding is not None else None
            ok = stop is not None and stop <= u.end_s
            ev.interrupt_ok.append(float(ok))
            if ok:
                ev.ird_ms.append(1000 * (stop - u.start_s))
                after = next((o for o in onsets if o >= stop and u.end_s - EARLY_S <= o < nxt), None)
                ev.reply_after.append(float(after is not None))
                if after is not None and after >= u.end_s:
                    ev.fsed_ms.append(1000 * (after - u.end_s))
            continue
        early = [o for o in onsets if u.start_s < o < u.end_s - EARLY_S]
        ev.early.append(float(bool(early)))
        if early:
            ev.eit_ms.append(1000 * (u.end_s - early[0]))
        ev.replied.append(float(reply is not None))
        if reply is not None:
            if reply < u.end_s:
                ev.ert_ms.append(1000 * (u.end_s - reply))
            else:
                ev.fsed_ms.append(1000 * (reply - u.end_s))
    for prev, nxt_u in zip(speech, speech[1:]):
        gap_segs = [(a, b) for a, b in system if prev.end_s <= b <= nxt_u.start_s]
        stopped = any(nxt_u.start_s - b >= NOISE_LEAD_S and b - a < NOISE_MAX_S for a, b in gap_segs)
        ev.noise_stop.append(float(stopped))
    return ev


# ---------------------------------------------------------------- Talking-Turns statistics
def _tt_raw(segments: Sequence[Sequence[Span]], duration_s: float) -> dict[str, Any]:
    segs = [sorted(merge_spans(ch)) for ch in segments]
    ipus = [b - a for ch in segs for a, b in ch]
    pauses, gaps = [], []
    for a, b in mutual_silences(segs, duration_s):
        before = [c for c, ch in enumerate(segs) for _, e in ch if abs(e - a) < 1e-9]
        after = [c for c, ch in enumerate(segs) for s, _ in ch if abs(s - b) < 1e-9]
        if not before or not after:
            continue                        # leading or trailing silence
        (pauses if before[0] == after[0] else gaps).append(b - a)
    overlaps = [min(b, d) - max(a, c) for a, b in segs[0] for c, d in segs[1] if min(b, d) > max(a, c)]
    labels = talking_turns_labels(segs, duration_s)
    return {"duration_s": duration_s, "ipus": ipus, "pauses": pauses, "gaps": gaps,
            "overlaps": overlaps, "backchannels": len(backchannels_from_vad(segs)), "labels": labels}


def talking_turns_stats(recordings: Sequence[tuple[Sequence[Sequence[Span]], float]]) -> dict[str, Any]:
    """Corpus statistics pooled over ``(segments, duration_s)`` recordings: IPUs, pauses (same
    speaker), gaps (speaker change), overlaps, backchannel / interruption / turn-change rates
    per minute and the 40 ms label counts.

    A pause or gap is a mutual silence between two IPUs: a pause when the same speaker talks
    before and after it, a gap otherwise. Percentages are of the total duration; durations
    are medians in ms.
    """
    raws = [_tt_raw(s, d) for s, d in recordings]
    total = sum(r["duration_s"] for r in raws)
    minutes = total / 60.0

    def pool(key):
        return [x for r in raws for x in r[key]]

    def ms(x):
        return float(np.median(x) * 1000) if x else math.nan

    labels = pool("labels")
    counts = {k: labels.count(k) for k in TT_LABELS}
    out: dict[str, Any] = {"recordings": len(raws), "duration_s": total}
    for key in ("ipus", "pauses", "gaps", "overlaps"):
        vals = pool(key)
        out[key] = len(vals)
        out[f"{key[:-1]}_median_ms"] = ms(vals)
        if key != "ipus":
            out[f"{key[:-1]}_pct"] = 100 * sum(vals) / total if total else math.nan
    rate = (lambda n: n / minutes) if minutes else (lambda n: math.nan)
    out.update(backchannels_per_min=rate(sum(r["backchannels"] for r in raws)),
               interruptions_per_min=rate(counts["I"]), turn_changes_per_min=rate(counts["T"]),
               labels=counts)
    return out


_CODES = {"C": "c", "NA": "-", "I": "I", "BC": "b", "T": "T"}


def label_string(labels: Sequence[str]) -> str:
    """One character per 40 ms chunk: c continuation, - silence, I interruption, b backchannel,
    T turn change."""
    return "".join(_CODES[x] for x in labels)
