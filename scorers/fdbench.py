"""FD-Bench v1 objective metrics exactly as the public benchmark computes them (``fdbench-v1``).

Input per conversation: user and system speech spans in **samples at 16 kHz** (silero VAD,
threshold 0.5, min silence 1500 ms, min speech 250 ms, pad 30 ms). One *round* per user span.
Each round ``[us, ue]`` (next user onset ``n``) visits the system spans ``[s, e]`` in order::

    system  |======== S ========|                      s < us < e: an interruption (flag on)
    user              |==== round ====|      |== next
    system                 |=E=|                        us < s < ue - 0.5 s: early (wrong) interrupt,
                                                        EIT lead = ue - s; if e < ue it also counts as
                                                        a successful interrupt with IRD = e - s
    system                        |=|                   ue - 0.5 s <= s < ue: early reply, ERT = ue - s
    system                              |== reply ==|   ue < s < n: reply, FSED = s - ue
    system  |====== S ====X                             e in (us, ue] after an interruption: success,
                                                        IRD = e - us

After an interruption the first reply goes to SRIR (and, if the interruption has no stop yet,
succeeds with IRD = reply end - us). A system span ending in a gap ``(ue, n)`` at least 2.5 s
before ``n`` and shorter than 5.5 s is a noise interrupt (NIR), counted per span.

Pooled over conversations: SRR = replies / rounds; EIR = early interrupts / rounds;
SIR = successes / interruptions; SRIR = replies after interruption / successes;
NIR = noise spans / (rounds - 1); all x100. Delays: each positive value in samples becomes
``int(v / 16)`` ms, aggregated by the median (0 when empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

SR = 16000
EARLY = 8000            # 0.5 s
NOISE_LEAD = 40000      # 2.5 s
NOISE_MAX = 88000       # 5.5 s
Span = tuple[int, int]


@dataclass
class _Round:
    flagged: bool = False           # an interruption is pending in this round
    ird: int = 0                    # 0 = none yet; values are clamped to >= 1
    delay: int = 0
    delay_int: int = 0
    lead: int = 0
    lead_int: int = 0
    wrong_leads: list[int] = field(default_factory=list)


@dataclass
class ConversationMarks:
    """Counts and per-round timings (samples) of one conversation."""

    rounds: int = 0
    interruptions: int = 0
    successes: int = 0
    replies: int = 0
    replies_after_interruption: int = 0
    early_interrupts: int = 0
    noise: int = 0
    ird: list[int] = field(default_factory=list)
    reply_delay: list[int] = field(default_factory=list)
    reply_delay_after_interruption: list[int] = field(default_factory=list)
    lead: list[int] = field(default_factory=list)
    lead_after_interruption: list[int] = field(default_factory=list)
    early_leads: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _reply(r: _Round, m: ConversationMarks, s: int, e: int, us: int, ue: int) -> None:
    """A system onset after the user's end (``ue < s``)."""
    if not r.flagged:
        if r.delay == 0:
            m.replies += 1
            r.delay = s - ue
        return
    if r.delay_int == 0 and r.lead_int == 0:
        m.replies_after_interruption += 1
        r.delay_int = max(s - ue, 1)
        r.flagged = False
        if r.ird == 0:
            m.successes += 1
            r.ird = max(e - us, 1)


def conversation_marks(user: Sequence[Span], system: Sequence[Span], *,
                       drop_first_system: bool = False) -> ConversationMarks:
    """FD-Bench per-conversation marks from sample spans (benchmarking.py
    ``analyze_VAD_interruption_new2``); ``drop_first_system`` drops a preamble (their Moshi runs)."""
    us_list = [int(a) for a, _ in user]
    ue_list = [int(b) for _, b in user]
    sys_spans = [(int(a), int(b)) for a, b in system][1 if drop_first_system else 0:]
    m = ConversationMarks(rounds=len(us_list))
    for i, (us, ue) in enumerate(zip(us_list, ue_list)):
        r = _Round()
        last = i == len(us_list) - 1
        nxt = None if last else us_list[i + 1]
        for s, e in sys_spans:
            if s < us < e:
                m.interruptions += 1
                r.flagged = True
            if us < s < ue - EARLY:
                m.early_interrupts += 1
                r.wrong_leads.append(ue - s)
                if e < ue and r.ird == 0:
                    m.interruptions += 1
                    m.successes += 1
                    r.flagged = True
                    r.ird = max(e - s, 1)
                continue
            if us < s < ue:
                if not r.flagged:
                    m.replies += 1
                    r.lead = ue - s
                elif r.lead_int == 0 and r.delay_int == 0:
                    m.replies_after_interruption += 1
                    r.lead_int = max(ue - s, 1)
                    r.flagged = False
                    if r.ird == 0:
                        m.successes += 1
                        r.ird = max(e - us, 1)
                continue
            if s < us:
                stops = us < e <= ue if not last else us < e
                if stops and r.flagged and r.ird == 0:
                    m.successes += 1
                    r.ird = max(e - us, 1)
                continue
            if (not last and ue < s < nxt) or (last and ue < s):
                _reply(r, m, s, e, us, ue)
        m.ird.append(r.ird)
        m.reply_delay.append(r.delay)
        m.reply_delay_after_interruption.append(r.delay_int)
        m.lead.append(r.lead)
        m.lead_after_interruption.append(r.lead_int)
        m.early_leads.extend(r.wrong_leads)
    for s, e in sys_spans:
        for i in range(len(us_list) - 1):
            if ue_list[i] < e < us_list[i + 1] and us_list[i + 1] - e >= NOISE_LEAD and e - s < NOISE_MAX:
                m.noise += 1
    return m


def _median_ms(values: Sequence[int]) -> float:
    ms = sorted(int(v / 16) for v in values if v > 0)
    if not ms:
        return 0.0
    mid = len(ms) // 2
    return float(ms[mid]) if len(ms) % 2 else (ms[mid - 1] + ms[mid]) / 2


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def aggregate(marks: Sequence[ConversationMarks]) -> dict[str, float]:
    """Pooled FD-Bench scores (``analyze_VAD_marks(type="interruption")``): rates in % (x100),
    times in ms (medians)."""
    ms = [m for m in marks if m.rounds > 0]
    rounds = sum(m.rounds for m in ms)
    gaps = sum(m.rounds - 1 for m in ms)
    succ = sum(m.successes for m in ms)

    def pool(key: str) -> list[int]:
        return [v for m in ms for v in getattr(m, key)]

    out = {
        "SRR": 100 * _ratio(sum(m.replies for m in ms), rounds),
        "SIR": 100 * _ratio(succ, sum(m.interruptions for m in ms)),
        "EIR": 100 * _ratio(sum(m.early_interrupts for m in ms), rounds),
        "NIR": 100 * _ratio(sum(m.noise for m in ms), gaps),
        "SRIR": 100 * _ratio(sum(m.replies_after_interruption for m in ms), succ),
        "FSED_ms": _median_ms(pool("reply_delay") + pool("reply_delay_after_interruption")),
        "ERT_ms": _median_ms(pool("lead") + pool("lead_after_interruption")),
        "EIT_ms": _median_ms(pool("early_leads")),
        "IRD_ms": _median_ms(pool("ird")),
    }
    out = {k: round(float(v), 2) for k, v in out.items()}
    out.update(conversations=len(ms), rounds=rounds)
    return out


def vad_spans(samples: np.ndarray, sample_rate: int, *, vad=None,
              min_silence_ms: float = 1500.0) -> list[Span]:
    """One channel's speech spans in 16 kHz samples with FD-Bench's VAD call (silero,
    threshold 0.5, min silence 1500 ms, other settings silero's defaults)."""
    from bargein.audio.vad import silero_probs, silero_timestamps

    probs = silero_probs(samples, sample_rate, vad)
    n = int(round(len(samples) * SR / sample_rate))
    return silero_timestamps(probs, n, threshold=0.5, min_silence_ms=min_silence_ms)


def score_recording(stereo: np.ndarray, sample_rate: int, *, vad=None,
                    drop_first_system: bool = False) -> tuple[ConversationMarks, list[list[Span]]]:
    """Marks of one two-channel recording (channel 0 = user, 1 = system)."""
    spans = [vad_spans(np.ascontiguousarray(stereo[:, c]), sample_rate, vad=vad) for c in (0, 1)]
    return conversation_marks(spans[0], spans[1], drop_first_system=drop_first_system), spans


__all__ = ["ConversationMarks", "conversation_marks", "aggregate", "vad_spans", "score_recording"]
