"""Synthetic two-speaker dialogues for bench/timing.py and the perturbation/timing tests.

* :func:`burst_audio`: noise bursts exactly on a hand-built timeline (energy VAD finds them
  to the frame), for unit tests;
* :func:`random_timeline`: a seeded human-like turn sequence (gaps -0.2..0.6 s, holds,
  backchannels), the shape of dialogue every perturbation needs;
* :func:`speech_dialogue`: the same timeline voiced by a TTS engine (espeak by default),
  returned as stereo audio plus :class:`Segment` records with word timings.
"""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

import numpy as np

from bargein.records.audio import Segment, WordTiming

Span = tuple[float, float]
BC_WORDS = ("yeah", "uh-huh", "right", "mhm", "okay", "i see", "oh really", "sure")
SENTENCES = (
    "I called last week about the invoice and nobody got back to me",
    "Could you tell me which plan I am on at the moment",
    "The package was supposed to arrive on Tuesday but it never came",
    "Sure, I can check that for you right away",
    "Let me pull up your account details first",
    "It says here the payment went through on the third",
    "I would like to change the delivery address to my office",
    "That should not take more than a couple of minutes",
    "Do you have the reference number from the confirmation email",
    "We can also send you a replacement if you prefer",
    "Honestly I just want to know when it will be fixed",
    "The technician can come on Friday morning between nine and twelve",
)


def burst_audio(segments: Sequence[Sequence[Span]], duration_s: float, sample_rate: int = 16000,
                seed: int = 0, level: float = 0.2, floor: float = 0.0) -> np.ndarray:
    """(n, 2) float32: modulated noise inside each segment, ``floor`` noise elsewhere."""
    rng = np.random.default_rng(seed)
    n = int(round(duration_s * sample_rate))
    x = (rng.standard_normal((n, len(segments))) * floor).astype(np.float32)
    for c, segs in enumerate(segments):
        for a, b in segs:
            i0, i1 = int(round(a * sample_rate)), min(n, int(round(b * sample_rate)))
            t = np.arange(i1 - i0) / sample_rate
            env = 0.6 + 0.4 * np.sin(2 * np.pi * 4.0 * t)
            x[i0:i1, c] = (rng.standard_normal(i1 - i0) * level * env).astype(np.float32)
    return np.clip(x, -1, 1)


def random_timeline(rng: Random, duration_s: float = 60.0, bc_rate: float = 0.5
                    ) -> list[tuple[int, float, float, str]]:
    """(channel, start_s, length_s, kind) turns: alternating speakers, some holds, backchannels.

    Lengths are targets; :func:`speech_dialogue` replaces them with the synthesised length.
    """
    out, t, spk = [], 0.5, 0
    while t < duration_s - 3:
        length = rng.uniform(1.3, 6.0)
        out.append((spk, t, length, "message"))
        if length > 3.0 and rng.random() < bc_rate:
            out.append((1 - spk, t + rng.uniform(0.8, length - 1.2), 0.4, "backchannel"))
        t += length
        r = rng.random()
        if r < 0.25:            # hold: same speaker continues after a short pause
            t += rng.uniform(0.35, 0.9)
        else:                   # shift with a human-like gap / small overlap
            t += rng.uniform(-0.15, 0.6)
            spk = 1 - spk
    return out


def speech_dialogue(rng: Random, *, duration_s: float = 60.0, sample_rate: int = 16000,
                    voices: tuple[str, str] = ("en-us", "en-gb+f3"), engine: str = "espeak",
                    bc_rate: float = 0.5) -> tuple[np.ndarray, list[Segment]]:
    """A voiced seeded dialogue: stereo audio (n, 2) and its segments (word times absolute).

    Same shape as :func:`random_timeline` (holds 25%, gaps -0.15..0.6 s, backchannels inside
    long turns), built from the real synthesised lengths.
    """
    from bargein.audio.io import resample
    from bargein.audio.tts import get_engine

    tts = get_engine(engine)

    def voice(text: str, ch: int) -> tuple[np.ndarray, tuple, float]:
        sp = tts.synthesize(text, voices[ch])
        y = resample(sp.samples, sp.sample_rate, sample_rate)
        nz = np.flatnonzero(np.abs(y) > 1e-3)
        lead = nz[0] / sample_rate if len(nz) else 0.0
        return (y[nz[0]: nz[-1] + 1] if len(nz) else y), sp.words, lead

    placed: list[tuple[int, float, np.ndarray, Segment]] = []

    def put(ch: int, st: float, text: str, kind: str) -> float:
        y, words, lead = voice(text, ch)
        dur = len(y) / sample_rate
        wt = tuple(WordTiming(word=w.word, start_s=round(max(st, st + w.start_s - lead), 4),
                              end_s=round(min(st + dur, st + w.end_s - lead), 4)) for w in words)
        seg = Segment(message_index=len(placed), channel=ch, start_s=round(st, 4),
                      end_s=round(st + dur, 4), text=text, words=wt,
                      voice_id=f"{engine}:{voices[ch]}", kind=kind)
        placed.append((ch, st, y, seg))
        return dur

    t, spk, free = 0.5, 0, [0.0, 0.0]
    while t < duration_s - 3:
        text = rng.choice(SENTENCES)
        if rng.random() < 0.3:
            text = text + ". " + rng.choice(SENTENCES)
        st = max(t, free[spk] + 0.3)
        dur = put(spk, st, text, "message")
        free[spk] = st + dur
        if dur > 2.5 and rng.random() < bc_rate:
            bt = st + rng.uniform(0.6, dur - 1.2)
            if bt > free[1 - spk] + 0.5:
                free[1 - spk] = bt + put(1 - spk, bt, rng.choice(BC_WORDS), "backchannel")
        t = st + dur
        if rng.random() < 0.25:
            t += rng.uniform(0.35, 0.9)
        else:
            t += rng.uniform(-0.15, 0.6)
            spk = 1 - spk
    n = int((max(s.end_s for *_, s in placed) + 1.0) * sample_rate)
    x = np.zeros((n, 2), dtype=np.float32)
    for ch, st, y, _ in placed:
        i = int(round(st * sample_rate))
        x[i:i + len(y), ch] += y[: n - i]
    peak = float(np.max(np.abs(x))) or 1.0
    segs = sorted((p[3] for p in placed), key=lambda s: (s.start_s, s.channel))
    segs = [s.with_(message_index=k) for k, s in enumerate(segs)]
    return (x / peak * 0.7).astype(np.float32), segs
