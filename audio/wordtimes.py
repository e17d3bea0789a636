"""Words of a text and their times: the shared helpers behind every TTS engine and aligner.

A *word* is a whitespace-separated token that contains at least one letter or digit; its
``char_start`` is its offset in the text, so ``text[:words[k].char_start]`` is everything said
before word ``k``. Punctuation stays attached (``"documents:"``)::

    text   "Your claim needs three documents: a photo"
    words   Your|claim|needs|three|documents:|a|photo
    start   0    5     11    17    23         34 36       (char_start)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from bargein.errors import AudioError
from bargein.records.audio import WordTiming

_TOKEN = re.compile(r"\S+")
SILENCE_DB = -40.0          # relative to the clip's peak frame energy
FRAME_MS = 5.0
WORDTIMES_VERSION = "words-v3"   # in every engine version: a change here re-keys the caches


def split_words(text: str) -> list[tuple[str, int]]:
    """``(word, char_start)`` for every pronounceable whitespace token of ``text``."""
    return [(m.group(), m.start()) for m in _TOKEN.finditer(text)
            if any(ch.isalnum() for ch in m.group())]


def check_text(text: str, engine: str) -> list[tuple[str, int]]:
    """The words of ``text``; empty or unpronounceable text raises :class:`AudioError`."""
    if not isinstance(text, str) or not text.strip():
        raise AudioError(f"{engine}: cannot synthesise empty text {text!r}. "
                         "Fix: drop the empty message or give it words.")
    words = split_words(text)
    if not words:
        raise AudioError(f"{engine}: text {text!r} has nothing pronounceable (no letters or digits). "
                         "Fix: give the message words.")
    return words


def frame_energy(samples: np.ndarray, sample_rate: int, frame_ms: float = FRAME_MS) -> tuple[np.ndarray, int]:
    """RMS per frame and the hop in samples."""
    x = np.asarray(samples, dtype=np.float64)
    hop = max(1, int(round(sample_rate * frame_ms / 1000.0)))
    n = len(x) // hop
    if n == 0:
        return np.zeros(0), hop
    frames = x[: n * hop].reshape(n, hop)
    return np.sqrt(np.mean(frames * frames, axis=1)), hop


def speech_bounds(samples: np.ndarray, sample_rate: int, floor_db: float = SILENCE_DB) -> tuple[int, int]:
    """First and last sample of audible speech (``(0, 0)`` if the clip is silent)."""
    e, hop = frame_energy(samples, sample_rate)
    if e.size == 0 or e.max() <= 0:
        return 0, 0
    loud = np.flatnonzero(e > e.max() * 10 ** (floor_db / 20.0))
    return int(loud[0] * hop), int(min(len(samples), (loud[-1] + 1) * hop))


def check_audio(samples: np.ndarray, engine: str, text: str) -> None:
    """Silent, empty or non-finite synthesis output raises :class:`AudioError`."""
    x = np.asarray(samples)
    if x.size == 0 or not np.all(np.isfinite(x)) or float(np.max(np.abs(x))) < 1e-4:
        raise AudioError(f"{engine}: synthesis of {text[:60]!r} produced no audible audio. "
                         "Fix: check the text is pronounceable in this voice's language.")


MIN_WORD_S = 0.032         # no word is shorter than this (30 ms, with room for resampling)
MAX_TAIL_S = 0.3           # a word's sound may run this far past its last phoneme into a pause
END_DB = -40.0             # word ends settle where the level falls this far under the peak
OWN_SOUND_DB = SILENCE_DB  # a word owns sound: frames over the silence floor (under the peak) ...
OWN_SOUND_S = 0.010        # ... for at least this long, inside its span (a weak t release counts)


def timings_from_starts(words: Sequence[tuple[str, int]], starts_samples: Sequence[int],
                        samples: np.ndarray, sample_rate: int,
                        ends_samples: Sequence[int | None] | None = None) -> tuple[WordTiming, ...]:
    """Word timings from exact start samples (and the engine's own ends, when it has them).

    A word ends at its last phoneme (or, without ends, where the next one starts), then settles on
    the energy boundary: pulled back over silence before a pause (a pause at a comma is not part
    of the word), or carried forward to where its sound stops inside the pause (a tail the
    synthesiser's durations leave out). The last word ends at the end of audible speech. A start
    that lies inside a pause moves to the acoustic onset; no word is shorter than ``MIN_WORD_S``::

        |--Hello,--|....|--world--|...
        ^start0    ^end0^start1   ^end1 (trailing silence trimmed)

    Finally every word owns sound (:func:`_own_sound`): a word whose span holds no audible frame
    (a reduced "it" or "a" whose phonemes the model placed in the stop closure after it) takes
    its length from the nearest sound, the end of the previous word's or the start of the next's.
    """
    if len(words) != len(starts_samples):
        raise ValueError("one start per word")
    if ends_samples is not None and len(ends_samples) != len(words):
        raise ValueError("one end per word")
    e, hop = frame_energy(samples, sample_rate)
    thresh = (e.max() if e.size else 0.0) * 10 ** (SILENCE_DB / 20.0)
    _, speech_end = speech_bounds(samples, sample_rate)
    starts = [int(s) for s in starts_samples]
    for i in range(1, len(starts)):             # monotone, even if an engine reports otherwise
        starts[i] = max(starts[i], starts[i - 1])
    end_thresh = (e.max() if e.size else 0.0) * 10 ** (END_DB / 20.0)
    tail, min_len = int(MAX_TAIL_S * sample_rate), int(round(MIN_WORD_S * sample_rate))
    spans: list[list[int]] = []
    nominal: list[int] = []                     # each word's length as the engine gave it
    for i, s in enumerate(starts):
        nxt = starts[i + 1] if i + 1 < len(starts) else max(speech_end, s)
        end = nxt
        if ends_samples is not None and ends_samples[i] is not None:
            end = min(max(int(ends_samples[i]), s), nxt)
        if i + 1 == len(starts):
            end = max(end, nxt)
        nominal.append(end - s)
        s = _settle_start(e, hop, thresh, s, end)
        end = _settle_end(e, hop, end_thresh, s, end, min(nxt, end + tail) if i + 1 < len(starts) else end)
        spans.append([s, end])
    for i in range(len(spans)):                 # sound just before a start that no word owns
        lo = max(spans[i - 1][1] if i else 0, spans[i][0] - tail)
        spans[i][0] = _extend_back(e, hop, end_thresh, spans[i][0], lo)
    n = len(samples)
    for i, (s, end) in enumerate(spans):        # no word shorter than min_len, none overlapping
        if end - s < min_len:
            hi = spans[i + 1][0] if i + 1 < len(spans) else n
            end = min(max(end, s + min_len), max(hi, end))
            if end - s < min_len:
                lo = spans[i - 1][1] if i else 0
                s = max(lo, min(s, end - min_len))
            if end - s < min_len and i + 1 < len(spans) and spans[i + 1][1] - (s + min_len) >= min_len:
                end = spans[i + 1][0] = s + min_len        # take the time from the next word
            if end - s < min_len and i and spans[i - 1][1] - spans[i - 1][0] >= 2 * min_len:
                s = spans[i - 1][1] = end - min_len        # or from the previous one
            spans[i] = [s, end]
    _own_sound(spans, nominal, e, hop, (e.max() if e.size else 0.0) * 10 ** (OWN_SOUND_DB / 20.0),
               max(1, int(round(OWN_SOUND_S * sample_rate / hop))), min_len)
    return tuple(WordTiming(word=word, start_s=round(s / sample_rate, 6), end_s=round(end / sample_rate, 6),
                            char_start=cs)
                 for (word, cs), (s, end) in zip(words, spans))


def _loud_frames(e: np.ndarray, hop: int, thresh: float, a: int, b: int) -> int:
    """Frames of ``[a, b)`` (samples; frames wholly inside) louder than ``thresh``."""
    f0, f1 = -(-a // hop), min(len(e), b // hop)
    return int(np.sum(e[f0:f1] > thresh)) if f1 > f0 else 0


def _own_sound(spans: list[list[int]], nominal: Sequence[int], e: np.ndarray, hop: int,
               thresh: float, need: int, min_len: int) -> None:
    """Give every word sound of its own (``need`` frames over ``thresh``), in place.

    A word without moves to the nearer sound: the end of the sound before it (taking the tail of
    the previous word) or the start of the sound after it (taking the head of the next one),
    keeping its engine length (at least ``min_len``) and leaving the neighbour ``min_len``::

        before   |--finish--|  it  |..closure..|--properly--|     "it" lies in the t closure
        after    |--finish-|-it-|  |..closure..|--properly--|     "it" ends with the sound
    """
    loud = e > thresh
    for i, (s, end) in enumerate(spans):
        if _loud_frames(e, hop, thresh, s, end) >= need:
            continue
        length = max(min_len, int(nominal[i]) if i < len(nominal) else min_len)
        f = min(len(e), s // hop)
        before = np.flatnonzero(loud[:f])
        g = min(len(e), -(-end // hop))
        after = np.flatnonzero(loud[g:])
        options = []
        if before.size and i:                               # the tail of the sound before
            snd_end = int(before[-1] + 1) * hop
            lo = spans[i - 1][0] + min_len
            new_s = max(lo, snd_end - length)
            if snd_end - new_s >= min_len:
                options.append((s - snd_end, 0, new_s, snd_end))
        if after.size and i + 1 < len(spans):               # the head of the sound after
            snd_start = int(g + after[0]) * hop
            hi = spans[i + 1][1] - min_len
            new_e = min(hi, snd_start + length)
            if new_e - snd_start >= min_len:
                options.append((snd_start - end, 1, snd_start, new_e))
        for _dist, side, new_s, new_e in sorted(options):
            if _loud_frames(e, hop, thresh, new_s, new_e) < need:
                continue
            spans[i] = [new_s, new_e]
            if side == 0:
                spans[i - 1][1] = min(spans[i - 1][1], new_s)
                for k in range(i + 1, len(spans)):          # later words stay after it
                    if spans[k][0] >= new_e:
                        break
                    spans[k][0] = new_e
            else:
                spans[i + 1][0] = max(spans[i + 1][0], new_e)
            break


def _trim_back(e: np.ndarray, hop: int, thresh: float, start: int, end: int) -> int:
    """Move ``end`` back over silent frames, never before ``start`` + one frame."""
    if end <= start:
        return end
    f_lo, f = start // hop + 1, min(len(e), end // hop)
    while f > f_lo and e[f - 1] <= thresh:
        f -= 1
    return max(min(end, f * hop), min(end, start + hop))


def _settle_end(e: np.ndarray, hop: int, thresh: float, start: int, end: int, limit: int) -> int:
    """``end`` on the energy boundary: back over silence, or forward (up to ``limit``) to where
    the sound stops when a pause follows the word."""
    f = min(len(e), end // hop)
    if f == 0 or f >= len(e) or e[f - 1] <= thresh or e[f] <= thresh:
        return _trim_back(e, hop, thresh, start, end)
    g, f_lim = f, min(len(e), limit // hop)
    while g < f_lim and e[g] > thresh:
        g += 1
    if g < f_lim:                               # a silence before the limit: the word ends there
        return g * hop
    return end


def _extend_back(e: np.ndarray, hop: int, thresh: float, start: int, lo: int) -> int:
    """Move ``start`` back over audible frames to the acoustic onset, never before ``lo``, and
    only when the sound before it is preceded by silence inside ``[lo, start)``."""
    f, f_lo = start // hop, -(-lo // hop)
    g = f
    while g > f_lo and g - 1 < len(e) and e[g - 1] > thresh:
        g -= 1
    if g == f or g <= f_lo:                     # nothing to take, or sound runs on into lo
        return start
    return g * hop


def _settle_start(e: np.ndarray, hop: int, thresh: float, start: int, end: int) -> int:
    """A start inside a pause (silence that began before it) moves to the acoustic onset."""
    f = start // hop
    if f < 2 or f >= len(e) or e[f] > thresh or e[f - 1] > thresh or e[f - 2] > thresh:
        return start
    g, f_end = f, end // hop
    while g < f_end and e[g] <= thresh:
        g += 1
    return g * hop if g < f_end else start


def fill_missing(starts: list[int | None], words: Sequence[tuple[str, int]], total: int) -> list[int]:
    """Interpolate missing word starts by character position between known neighbours."""
    known = [i for i, s in enumerate(starts) if s is not None]
    if not known:
        raise AudioError("no word times to interpolate from")
    out: list[int] = []
    for i, s in enumerate(starts):
        if s is not None:
            out.append(int(s))
            continue
        prev = max((k for k in known if k < i), default=None)
        nxt = min((k for k in known if k > i), default=None)
        c0, t0 = (words[prev][1], starts[prev]) if prev is not None else (0, 0)
        c1, t1 = (words[nxt][1], starts[nxt]) if nxt is not None else (
            words[-1][1] + len(words[-1][0]), total)
        frac = (words[i][1] - c0) / max(1, c1 - c0)
        out.append(int(round(t0 + frac * (t1 - t0))))
    return out


def check_timings(words: Sequence[WordTiming], duration_s: float) -> None:
    """Assert timings are monotone and inside the clip (engine bugs surface here)."""
    prev = 0.0
    for w in words:
        if not (prev - 1e-6 <= w.start_s <= w.end_s <= duration_s + 1e-3):
            raise AudioError(f"non-monotone word timing {w.word!r} {w.start_s:.3f}-{w.end_s:.3f}s "
                             f"(previous start {prev:.3f}s, clip {duration_s:.3f}s)")
        prev = w.start_s


def dist_version(dist: str, default: str = "?") -> str:
    """The installed version of a distribution (``default`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return default


class AlignedWordTimes:
    """Mixin for engines that give no word times of their own: a forced aligner supplies them.

    The engine sets ``aligner_name`` / ``aligner_options``; ``aligner_tag`` goes into its
    ``version`` so a different aligner means different cache keys.
    """

    aligner_name: str = "whisper"
    aligner_options: dict = {}

    @cached_property
    def aligner(self):
        from bargein.audio.align import get_aligner

        return get_aligner(self.aligner_name, **self.aligner_options)

    @property
    def aligner_tag(self) -> str:
        return f"align-{self.aligner.id}-{self.aligner.version}"
