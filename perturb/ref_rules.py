"""``turnnat-ref`` perturbation rules: the reference's turn VAD and where each edit may go.

The public TurnNat generator works on 80 ms frames. Its turn VAD is silero (threshold 0.5,
min speech 120 ms, min silence 120 ms, pad 40 ms) read back in seconds rounded to 0.1 s;
pieces shorter than 250 ms (40 ms for excessive backchannel and shift-instead-of-hold) are
dropped, the rest put on the frame grid (start = floor, end = ceil - 1) and pieces of one
speaker whose frame gap is <= ceil(180 / 80) = 3 frames are merged::

    seconds   1.1 ----- 2.4     2.7 --- 3.5          (0.1 s resolution)
    frames    13 ...... 29      33 .... 43           floor(1100 / 80), ceil(2400 / 80) - 1
    merged    13 ................... 43              gap 33 - 29 - 1 = 3 frames <= 3

Candidate rules (``frames`` below are 80 ms frames)::

    proper shift   A ====[13 frames A alone]|  >= 2 silent frames  |[13 frames B alone]==== B
                   both turns >= 12 frames (0.96 s)
    proper hold    A ====[13 A alone]|  >= 2 silent  |[13 A alone]====  (same speaker)
    late response  A ==(>= 13)==|  B ==(>= 13)==   13 frames alone each side, no overlap,
                   any positive gap mutually silent
    shift-return   A -> B -> A, gap A->B >= 2 frames, the next substantive turn is A's and A
                   is alone for its first 13 frames

Everything here is derived from the public script; the code is bargein's own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

FRAME_MS = 80.0
SILERO_REF = {"threshold": 0.5, "min_speech_ms": 120.0, "min_silence_ms": 120.0, "speech_pad_ms": 40.0}
MERGE_GAP_MS = 180.0
MIN_PIECE_MS = 250.0             # candidate VAD default
MIN_PIECE_MS_SHORT = 40.0        # excessive backchannel and shift-instead-of-hold
ALONE_MS = 1000.0                # single-speaker activity before the offset / after the onset
EVAL_SILENCE_MS = 150.0          # 50 + 100 ms evaluation window: the least mutual silence
SUBSTANTIVE_FRAMES = 12          # 0.96 s
SUBSTANTIVE_WORDS = 4

# the reference's own backchannel vocabulary (a protocol constant, not bargein's lexicon)
REF_BACKCHANNELS = frozenset({
    "mm", "mhm", "hm", "hmm", "um", "uh", "uh huh", "uh-huh", "yeah", "yea", "yep", "yes",
    "right", "okay", "ok", "sure", "true", "exactly", "wow", "oh", "oh wow",
    "hell yeah", "yeah yeah", "yeah right"})
REF_BC_STARTS = ("yeah", "yep", "yes", "right", "ok", "okay", "mm", "hm", "uh", "oh")
REF_WH = ("what", "why", "how", "when", "where", "who")


def frames(ms: float, frame_ms: float = FRAME_MS) -> int:
    """``max(1, ceil(ms / frame_ms))``: a duration in whole frames, as the reference counts."""
    return max(1, int(math.ceil(ms / frame_ms)))


@dataclass(frozen=True)
class RefSeg:
    """One speaker's turn on the 80 ms grid: frames ``start..end`` inclusive, plus the
    second-resolution bounds it came from (used for sample positions)."""

    start: int
    end: int
    start_s: float
    end_s: float
    text: str = ""

    @property
    def dur(self) -> int:
        return self.end - self.start + 1

    @property
    def start_ms(self) -> float:
        return round(self.start_s * 1000.0, 1)

    @property
    def end_ms(self) -> float:
        return round(self.end_s * 1000.0, 1)

    def start_sample(self, sr: int) -> int:
        return max(0, int(round(self.start_s * sr)))

    def end_sample(self, sr: int) -> int:
        return max(0, int(round(self.end_s * sr)))


# ------------------------------------------------------------------------------ turn VAD
def seconds_1dp(spans: Sequence[tuple[int, int]], sample_rate: int = 16000,
                n_samples: int | None = None) -> list[tuple[float, float]]:
    """Sample spans -> seconds rounded to 0.1 s (silero's ``return_seconds``, ``time_resolution``
    1); since silero-vad 6.0 (the reference asks for >= 5.1, which installs 6.x) a rounded end is
    also capped at the audio's length in seconds (``n_samples / sample_rate``)."""
    cap = math.inf if n_samples is None else n_samples / sample_rate
    return [(max(round(a / sample_rate, 1), 0), min(round(b / sample_rate, 1), cap)) for a, b in spans]


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9']+", " ", text.lower())).strip()


def _merged_text(old: str, new: str) -> str:
    old, new = old.strip(), new.strip()
    o = re.sub(r"\s+", " ", old.lower()).strip()
    n = re.sub(r"\s+", " ", new.lower()).strip()
    if not old:
        return new
    if new and o not in n and n not in o:
        return f"{old} {new}".strip()
    if new and len(new) > len(old):
        return new
    return old


def to_frames(spans_s: Sequence[tuple[float, float]], *, min_ms: float = MIN_PIECE_MS,
              frame_ms: float = FRAME_MS, merge_gap_ms: float = MERGE_GAP_MS,
              texts: Sequence[str] | None = None) -> list[RefSeg]:
    """Second spans -> frame segments: drop pieces < ``min_ms``, snap (floor / ceil - 1), merge
    same-speaker pieces whose frame gap is <= ceil(merge_gap_ms / frame_ms)."""
    segs = []
    for k, (a, b) in enumerate(spans_s):
        if (b - a) * 1000.0 < min_ms or not (math.isfinite(a) and math.isfinite(b)) or b <= a:
            continue
        s = max(0, int(math.floor(a * 1000.0 / frame_ms)))
        e = max(s, int(math.ceil(b * 1000.0 / frame_ms)) - 1)
        segs.append(RefSeg(s, e, a, b, texts[k] if texts else ""))
    if merge_gap_ms <= 0:
        return sorted(segs, key=lambda g: (g.start, g.end))
    gap = int(math.ceil(merge_gap_ms / frame_ms))
    out: list[RefSeg] = []
    for g in sorted(segs, key=lambda g: (g.start, g.end)):
        if not out or g.start - out[-1].end - 1 > gap:
            out.append(g)
            continue
        p = out[-1]
        out[-1] = RefSeg(p.start, max(p.end, g.end), min(p.start_s, g.start_s), max(p.end_s, g.end_s),
                         _merged_text(p.text, g.text))
    return out


def activity(segs: Sequence[RefSeg], n_frames: int) -> np.ndarray:
    """0/1 per frame."""
    v = np.zeros(max(0, n_frames), dtype=np.uint8)
    for g in segs:
        s, e = max(0, min(n_frames, g.start)), max(0, min(n_frames, g.end + 1))
        v[s:e] = 1
    return v


def n_frames(n_samples: int, sr: int, frame_ms: float = FRAME_MS) -> int:
    return int(math.ceil(n_samples / float(int(round(sr * frame_ms / 1000.0)))))


def piece_text(start_s: float, end_s: float, items: Sequence[tuple[float, float, str]]) -> str:
    """The transcript text of one detector piece: every item overlapping [start_s, end_s]
    (``min(ends) > max(starts)``), joined by spaces, in item order."""
    return " ".join(x.strip() for a, b, x in items if min(end_s, b) > max(start_s, a) and x.strip())


def attach_text(segs: Sequence[RefSeg], items: Sequence[tuple[float, float, str]]) -> list[RefSeg]:
    """Text of the transcript items overlapping each (already merged) segment. The reference
    attaches text to each detector piece *before* merging (see :func:`perturbation_segments`);
    this is for hand-built segments only."""
    return [replace(g, text=piece_text(g.start_s, g.end_s, items)) for g in segs]


def perturbation_segments(x: np.ndarray, sr: int, *, min_ms: float = MIN_PIECE_MS,
                          probs: np.ndarray | None = None,
                          items: Sequence[tuple[float, float, str]] = ()) -> list[RefSeg]:
    """The reference turn VAD of one mono channel (``probs``: silero window probabilities at
    16 kHz when already computed). With transcript ``items`` (start_s, end_s, text) each kept
    detector piece gets the text of the items it overlaps, and merged pieces combine their
    texts by the reference's merge rule (a text contained in the other is not repeated)."""
    from bargein.audio.vad import silero_probs, silero_timestamps

    x16 = x
    if sr != 16000:
        from bargein.audio.io import resample
        x16 = resample(np.asarray(x, dtype=np.float32), sr, 16000)
    p = silero_probs(x16, 16000) if probs is None else probs
    spans = silero_timestamps(p, len(x16), **SILERO_REF)
    segs = pieces_to_segments(seconds_1dp(spans, 16000, len(x16)), min_ms=min_ms, items=items)
    return segs or rms_segments(x, sr)           # the reference falls back to its RMS VAD


def rms_segments(x: np.ndarray, sr: int, threshold: float = 0.015, frame_ms: float = FRAME_MS) -> list[RefSeg]:
    """The reference's fallback turn VAD for a channel where silero finds no speech: 80 ms
    frames (the last zero-padded) active when sqrt(max(mean(x^2), 1e-8)) >= ``threshold``, runs
    of active frames as segments (no transcript text)."""
    n = max(1, int(round(sr * frame_ms / 1000.0)))
    y = np.asarray(x, dtype=np.float32).reshape(-1)
    if len(y) % n:
        y = np.pad(y, (0, n - len(y) % n))
    act = np.sqrt(np.maximum((y.reshape(-1, n) ** 2).mean(axis=1), 1e-8)) >= threshold
    p = np.concatenate(([False], act, [False]))
    starts, ends = np.flatnonzero(~p[:-1] & p[1:]), np.flatnonzero(p[:-1] & ~p[1:])
    return [RefSeg(int(a), int(b) - 1, float(a * n / sr), float(b * n / sr)) for a, b in zip(starts, ends)]


def pieces_to_segments(spans_s: Sequence[tuple[float, float]], *, min_ms: float = MIN_PIECE_MS,
                       items: Sequence[tuple[float, float, str]] = ()) -> list[RefSeg]:
    """Second-resolution pieces -> frame segments, each piece carrying its own transcript text
    (pieces shorter than ``min_ms`` are dropped with their text) before the merge."""
    texts = [piece_text(a, b, items) for a, b in spans_s] if items else None
    return to_frames(spans_s, min_ms=min_ms, texts=texts)


# ----------------------------------------------------------------------- text predicates
def word_count(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9']+", text or ""))


def backchannel_like(g: RefSeg, max_frames: int = 14, max_words: int = 4) -> bool:
    raw, text = g.text or "", normalized(g.text or "")
    if "?" in raw or any(w in text.split() for w in REF_WH):
        return False
    if not text:
        return g.dur <= max_frames
    if text in REF_BACKCHANNELS:
        return True
    return g.dur <= max_frames and word_count(raw) <= max_words and text.startswith(REF_BC_STARTS)


def substantive(g: RefSeg, min_frames: int = SUBSTANTIVE_FRAMES, min_words: int = SUBSTANTIVE_WORDS) -> bool:
    """>= 12 frames; with text also >= 4 words and not backchannel-like."""
    if g.dur < min_frames:
        return False
    if not (g.text or "").strip():
        return True
    return word_count(g.text) >= min_words and not backchannel_like(g)


# ------------------------------------------------------------------------ frame predicates
def _clip(v: np.ndarray, s: int, e: int) -> tuple[int, int]:
    s = max(0, min(len(v), s))
    return s, max(s, min(len(v), e))


def silent(v: np.ndarray, s: int, e: int) -> bool:
    s, e = _clip(v, s, e)
    return e <= s or int(v[s:e].max()) == 0


def active(v: np.ndarray, s: int, e: int) -> bool:
    s, e = _clip(v, s, e)
    return e > s and int(v[s:e].max()) > 0


def only_active(on: np.ndarray, off: np.ndarray, s: int, e: int) -> bool:
    """``on`` active in every frame of [s, e) and ``off`` in none; False off the edges."""
    if s < 0 or e > len(on) or e > len(off) or e <= s:
        return False
    return int(on[s:e].min()) > 0 and int(off[s:e].max()) == 0


def proper_transition(pre: RefSeg, post: RefSeg, v_pre: np.ndarray, v_post: np.ndarray,
                      max_gap_ms: float | None = None, same_speaker: bool = False) -> bool:
    """``pre`` then ``post`` across >= 2 mutually silent frames, the first speaker alone for
    13 frames up to its offset and the next alone for 13 frames from its onset."""
    if post.start <= pre.end:
        return False
    n_alone, n_sil = frames(ALONE_MS), frames(EVAL_SILENCE_MS)
    s0, s1 = pre.end + 1, post.start
    if s1 - s0 < n_sil:
        return False
    if max_gap_ms is not None and (s1 - s0) * FRAME_MS > max_gap_ms:
        return False
    if not (silent(v_pre, s0, s1) and silent(v_post, s0, s1)):
        return False
    if not only_active(v_pre, v_post, pre.end + 1 - n_alone, pre.end + 1):
        return False
    if same_speaker:
        return only_active(v_pre, v_post, post.start, post.start + n_alone)
    return only_active(v_post, v_pre, post.start, post.start + n_alone)


Cand = tuple[int, RefSeg, RefSeg]            # (first speaker's channel, first turn, next turn)


def proper_shifts(segs: Sequence[Sequence[RefSeg]], vads: Sequence[np.ndarray],
                  max_gap_ms: float | None = None) -> list[Cand]:
    """Every substantive turn followed by a proper shift to a substantive turn of the other."""
    out = []
    for ca in (0, 1):
        cb = 1 - ca
        for pre in segs[ca]:
            if not substantive(pre):
                continue
            for post in segs[cb]:
                if substantive(post) and proper_transition(pre, post, vads[ca], vads[cb], max_gap_ms):
                    out.append((ca, pre, post))
                    break
    return out


def proper_holds(segs: Sequence[Sequence[RefSeg]], vads: Sequence[np.ndarray]) -> list[Cand]:
    """Consecutive turns of one speaker across a proper hold (no substantive-turn test)."""
    out = []
    for ca in (0, 1):
        s = segs[ca]
        for cur, nxt in zip(s, s[1:]):
            if proper_transition(cur, nxt, vads[ca], vads[1 - ca], same_speaker=True):
                out.append((ca, cur, nxt))
    return out


def alone_shifts(segs: Sequence[Sequence[RefSeg]], vads: Sequence[np.ndarray], *,
                 max_overlap_ms: float = 200.0, max_gap_ms: float | None = None,
                 min_turn_ms: float = 1000.0) -> list[Cand]:
    """A -> B with both turns >= 13 frames, each alone for 13 frames at the change, no more than
    ``max_overlap_ms`` of frame overlap and any positive gap mutually silent (late response)."""
    n_alone, n_min = frames(ALONE_MS), frames(min_turn_ms)
    max_ov = max(0, int(math.ceil(max_overlap_ms / FRAME_MS)))
    max_gap = None if max_gap_ms is None else max(0, int(math.ceil(max_gap_ms / FRAME_MS)))
    out = []
    for ca in (0, 1):
        cb = 1 - ca
        va, vb = vads[ca], vads[cb]
        for pre in segs[ca]:
            for post in segs[cb]:
                if pre.dur < n_min or post.dur < n_min:
                    continue
                gap = post.start - pre.end
                if gap < -max_ov or (max_gap is not None and gap > max_gap):
                    continue
                if gap > 0 and not (silent(va, pre.end + 1, post.start) and silent(vb, pre.end + 1, post.start)):
                    continue
                if only_active(va, vb, pre.end + 1 - n_alone, pre.end + 1) and \
                        only_active(vb, va, post.start, post.start + n_alone):
                    out.append((ca, pre, post))
                    break
    return out


def next_substantive(segs: Sequence[Sequence[RefSeg]], after_frame: int) -> tuple[int, RefSeg] | None:
    """The earliest substantive turn (either speaker) starting after ``after_frame``; the
    first channel wins a tie."""
    c = [(g.start, ch, g) for ch in (0, 1) for g in segs[ch] if g.start > after_frame and substantive(g)]
    if not c:
        return None
    _, ch, g = min(c, key=lambda t: t[0])
    return ch, g


def shift_returns(segs: Sequence[Sequence[RefSeg]], vads: Sequence[np.ndarray], *,
                  min_silence_ms: float = 100.0) -> list[tuple[int, RefSeg, RefSeg, RefSeg]]:
    """A -> B -> A: an :func:`alone_shifts` change without overlap whose frame gap is >= 2
    frames, after which the next substantive turn is A's with A alone for its first 13 frames."""
    n_sil, n_alone = frames(min_silence_ms), frames(ALONE_MS)
    out = []
    for ca, pre, post in alone_shifts(segs, vads, max_overlap_ms=0.0):
        if post.start - pre.end < n_sil:
            continue
        nxt = next_substantive(segs, post.end)
        if nxt is None or nxt[0] != ca:
            continue
        if only_active(vads[ca], vads[1 - ca], nxt[1].start, nxt[1].start + n_alone):
            out.append((ca, pre, post, nxt[1]))
    return out


def isolated_backchannels(listener: Sequence[RefSeg], v_listener: np.ndarray, v_speaker: np.ndarray, *,
                          max_ms: float = 1000.0, pre_ms: float = 1000.0, post_ms: float = 2000.0) -> list[RefSeg]:
    """Listener turns of <= 13 frames that look like backchannels, with the listener silent
    13 frames before and 25 after, and the speaker active before and during them."""
    n_max, n_pre, n_post = frames(max_ms), frames(pre_ms), frames(post_ms)
    out = []
    for g in listener:
        if g.dur > n_max or not backchannel_like(g, max_frames=n_max):
            continue
        if (silent(v_listener, g.start - n_pre, g.start) and silent(v_listener, g.end + 1, g.end + 1 + n_post)
                and active(v_speaker, g.start - n_pre, g.start) and active(v_speaker, g.start, g.end + 1)):
            out.append(g)
    return out


def question_like(g: RefSeg) -> bool:
    return any(q in (g.text or "") for q in ("?", "\uff1f", "\u00bf"))


def distinct_text(a: RefSeg, b: RefSeg) -> bool:
    ta, tb = normalized(a.text), normalized(b.text)
    return bool(ta and tb and ta != tb)


__all__ = ["RefSeg", "FRAME_MS", "SILERO_REF", "to_frames", "seconds_1dp", "activity", "n_frames",
           "perturbation_segments",
           "pieces_to_segments", "piece_text", "rms_segments", "attach_text", "substantive", "backchannel_like", "proper_transition",
           "proper_shifts", "proper_holds", "isolated_backchannels", "alone_shifts", "shift_returns", "next_substantive",
           "only_active", "silent", "active", "frames", "word_count", "question_like", "distinct_text"]
