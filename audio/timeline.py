"""The two-channel timeline: turn gaps, clip placement, listener backchannels.

Everything here is in integer samples at the output rate, so every time written to a
:class:`~bargein.records.audio.RenderedDialogue` is exact. Channel 0 = user, 1 = assistant::

    ch1 assistant |--msg 0--|          |--msg 2 (cut)-----X            |--msg 4--|
    ch0 user                 |--msg 1--|     gap<0 ok  |--msg 3 (interjection)--|
                         gap ^                 onset ^  ^ stop = onset + overlap
    ch0 user (bc)   |mm-hm|   (optional backchannel during a long assistant turn)

A normal turn starts ``gap`` after the previous message's audible end (a gap < 0 is a small
overlap); an interjection is first heard at the cut onset inside the interrupted message (its
quiet lead-in, kept so soft onsets are not clipped, starts just before); no channel ever overlaps
itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from bargein.audio.wordtimes import speech_bounds

BACKCHANNEL_PHRASES: tuple[str, ...] = ("mm-hm", "uh-huh", "yeah", "right", "okay", "I see")


class GapComponent(BaseModel):
    """A truncated normal over turn gaps in ms (negative = the next speaker overlaps)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    weight: float = Field(gt=0)
    mean_ms: float
    sd_ms: float = Field(ge=0)
    min_ms: float
    max_ms: float

    @model_validator(mode="after")
    def _bounds(self) -> "GapComponent":
        if self.min_ms > self.max_ms:
            raise ValueError(f"gap component min_ms {self.min_ms} > max_ms {self.max_ms}")
        return self


class GapModel(BaseModel):
    """A mixture of truncated normals; the default puts ~88% of gaps in -200..+400 ms.

    The main mode (200 +/- 150 ms, -200..400) follows the human floor-transfer offset
    distribution (small overlaps allowed); the second component gives occasional longer pauses.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    components: tuple[GapComponent, ...] = (
        GapComponent(weight=0.88, mean_ms=200, sd_ms=150, min_ms=-200, max_ms=400),
        GapComponent(weight=0.12, mean_ms=700, sd_ms=300, min_ms=400, max_ms=1500),
    )
    same_speaker_min_ms: float = Field(250, ge=0)   # two messages in a row by one speaker
    max_overlap_fraction: float = Field(0.5, ge=0, le=1)  # a gap < 0 eats at most this share
                                                    # of the previous message

    @model_validator(mode="after")
    def _nonempty(self) -> "GapModel":
        if not self.components:
            raise ValueError("gap model needs at least one component")
        return self

    def draw_ms(self, rng: random.Random) -> float:
        """One gap in ms: pick a component by weight, then a truncated normal draw."""
        total = sum(c.weight for c in self.components)
        u, acc = rng.random() * total, 0.0
        comp = self.components[-1]
        for c in self.components:
            acc += c.weight
            if u < acc:
                comp = c
                break
        if comp.sd_ms == 0:
            return float(min(comp.max_ms, max(comp.min_ms, comp.mean_ms)))
        for _ in range(64):
            x = rng.gauss(comp.mean_ms, comp.sd_ms)
            if comp.min_ms <= x <= comp.max_ms:
                return float(x)
        return float(rng.uniform(comp.min_ms, comp.max_ms))


@dataclass(frozen=True)
class WordSpan:
    """A word inside a clip, in samples from the clip start (output rate)."""

    word: str
    start: int
    end: int
    char_start: int | None = None


@dataclass(frozen=True)
class Clip:
    """A message's (or backchannel's) audio ready to place: mono, output rate, cut applied.

    ``onset`` (interrupted messages only) is where the other speaker starts, from the clip start.
    """

    message_index: int
    channel: int
    samples: np.ndarray
    words: tuple[WordSpan, ...]
    text: str
    voice_id: str
    kind: str = "message"
    onset: int | None = None

    @property
    def n(self) -> int:
        return int(len(self.samples))


@dataclass(frozen=True)
class Placement:
    clip: Clip
    start: int                      # sample on the timeline

    @property
    def end(self) -> int:
        return self.start + self.clip.n


def acoustic_onset(samples: np.ndarray, sample_rate: int) -> int:
    """Samples of quiet lead-in before a clip is audible: its first 5 ms frame over the speech
    floor the word timings use (``SILENCE_DB`` under the clip's loudest frame). Clips are trimmed
    at a lower floor so soft word onsets are kept; this is where a listener (or an energy
    detector) first hears them::

        clip   |..lead-in (-50..-40 dB)..|==first word==...
               0                         ^ acoustic_onset
    """
    return speech_bounds(samples, sample_rate)[0]


def place_clips(clips: Sequence[Clip], gaps: GapModel, rng: random.Random, sample_rate: int,
                *, lead_in_s: float = 0.3) -> list[Placement]:
    """Lay messages out in order; an interjection follows the ``onset`` of the clip before it."""
    out: list[Placement] = []
    chan_end = {0: 0, 1: 0}
    lead = int(round(lead_in_s * sample_rate))
    same_min = int(round(gaps.same_speaker_min_ms * sample_rate / 1000))
    for clip in clips:
        prev = out[-1] if out else None
        other = 1 - clip.channel
        if prev is None:
            start = lead
        elif prev.clip.onset is not None and clip.channel != prev.clip.channel:
            # the cut-in, as planned: the interjection's acoustic onset (not its quiet lead-in)
            # lands on the cut, so ``cut_s`` is where the user is first heard
            at = prev.start + prev.clip.onset
            start = max(0, chan_end[clip.channel], at - acoustic_onset(clip.samples, sample_rate))
            out.append(Placement(clip, start))
            chan_end[clip.channel] = out[-1].end
            continue
        else:
            gap = int(round(gaps.draw_ms(rng) * sample_rate / 1000))
            if clip.channel == prev.clip.channel:
                gap = max(gap, same_min)
            gap = max(gap, -int(gaps.max_overlap_fraction * prev.clip.n))
            start = max(prev.start, prev.end + gap)
        start = max(start, chan_end[clip.channel] + (same_min if chan_end[clip.channel] else 0))
        if clip.onset is not None:      # the interjection must come after the listener's last word
            start = max(start, chan_end[other] + same_min - clip.onset)
        out.append(Placement(clip, int(start)))
        chan_end[clip.channel] = out[-1].end
    return out


def plan_backchannels(placements: Sequence[Placement], rng: random.Random, sample_rate: int, *,
                      prob: float = 0.5, min_turn_s: float = 3.0, margin_s: float = 1.0,
                      delay_ms: float = 120.0, clear_s: float = 0.4) -> list[tuple[int, int, int]]:
    """``(at_sample, listener_channel, message_index)`` for listener backchannels.

    Only uncut messages of at least ``min_turn_s`` get one (with probability ``prob``), just
    after a word end at least ``margin_s`` from either edge, where the listener is silent for
    ``clear_s`` around it.
    """
    plans = []
    min_n, margin = int(min_turn_s * sample_rate), int(margin_s * sample_rate)
    clear, delay = int(clear_s * sample_rate), int(delay_ms * sample_rate / 1000)
    for p in placements:
        c = p.clip
        if c.kind != "message" or c.onset is not None or c.n < min_n:
            continue
        if rng.random() >= prob:
            continue
        ends = [p.start + w.end + delay for w in c.words[:-1]
                if margin <= w.end <= c.n - margin]
        if not ends:
            continue
        at = ends[rng.randrange(len(ends))]
        listener = 1 - c.channel
        busy = any(q.clip.channel == listener and q.start - clear < at + clear and q.end + clear > at
                   for q in placements)
        if not busy:
            plans.append((at, listener, c.message_index))
    return plans


def add_backchannels(placements: list[Placement], plans: Sequence[tuple[int, int, int]],
                     make_clip: Callable[[int, int, int], Clip | None], clear_s: float = 0.4,
                     sample_rate: int = 16000) -> list[Placement]:
    """Place ``make_clip(channel, message_index, k)`` at each planned point that stays clear
    (a ``None`` clip is skipped)."""
    out = list(placements)
    clear = int(clear_s * sample_rate)
    for k, (at, ch, idx) in enumerate(plans):
        clip = make_clip(ch, idx, k)
        if clip is None:
            continue
        end = at + clip.n
        if any(q.clip.channel == ch and q.start - clear < end and q.end + clear > at for q in out):
            continue
        out.append(Placement(clip, at))
    return out


def timeline_length(placements: Sequence[Placement], sample_rate: int, tail_s: float = 0.5) -> int:
    return max((p.end for p in placements), default=0) + int(round(tail_s * sample_rate))
