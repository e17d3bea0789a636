"""Cut-in truncation of an interrupted assistant message, in samples of one clip.

::

    words   |--Your--|--claim--|--needs--|--three--|--documents:--|...
    heard   <====== ended by the onset =====>                           heard = 3 words
    onset                                  ^ = end of word 3 + jitter (< end of word 4)
    stop                                   |-- overlap_ms --X            fade ends at stop
    spoken  <========= started before stop ===========>                 spoken = 4 words

*Heard* words are those whose audio ends at or before the user's onset; *spoken* words are
those that start before the stop. The onset is drawn from the conversation's heard text, so
text and audio agree; when a given onset (e.g. one planned on an earlier synthesis) would
hear other words, the onset is moved to the text's cut word (``onset_moved``); only when the
text's cut cannot be realised in this audio is the heard text updated (``text_updated``).

The stop is defined on the audio: given the samples, a stop that would fall in a pause (the
assistant already silent) is re-planned by moving the onset later inside the same heard-word
window, so the assistant is still sounding ``overlap_ms`` after the user starts::

    audio    |==documents:==|.....pause.....|==a==|==photo==
    planned          onset ^      stop ^                         stop in silence
    re-planned                    onset ^  stop ^                same heard words, same overlap

When no such onset exists (the message ends in the pause) the record follows the audio: the
stop is where the sound ends, and the overlap is what is left of it (``stop - onset``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bargein.audio.dsp import equal_power_ramp
from bargein.audio.timeline import WordSpan
from bargein.errors import AudioError
from bargein.records.conversation import Interruption

RESOLUTIONS = ("as_planned", "onset_moved", "text_updated")


@dataclass(frozen=True)
class CutIn:
    onset: int              # user onset, samples from the clip start
    stop: int               # the assistant is silent from here on
    heard: int              # words heard (ended by the onset)
    spoken: int             # words started before the stop
    heard_text: str
    spoken_text: str
    resolution: str         # one of RESOLUTIONS
    overlap: int            # stop - onset, samples (shorter than planned if the message ended)


def prefix_text(text: str, words: Sequence[WordSpan], n: int) -> str:
    """The text up to (not including) word ``n``: what the first ``n`` words say."""
    if n >= len(words):
        return text.strip()
    if words[n].char_start is not None:
        return text[: words[n].char_start].rstrip()
    return " ".join(w.word for w in words[:n])


def heard_count(words: Sequence[WordSpan], onset: int) -> int:
    """Words whose audio ends at or before ``onset`` (they must be the leading words)."""
    n = 0
    while n < len(words) and words[n].end <= onset:
        n += 1
    return n


def text_cut_word(words: Sequence[WordSpan], text: str, interruption: Interruption) -> int:
    """How many of ``words`` the conversation's heard text contains."""
    boundary = len(interruption.heard_text)
    if words and all(w.char_start is not None for w in words):
        return sum(1 for w in words if w.char_start < boundary)
    return min(interruption.cut_word_index, len(words))


def _window(words: Sequence[WordSpan], k: int) -> tuple[int, int]:
    """Onsets that hear exactly ``k`` words: ``[end of word k-1, end of word k)``."""
    lo = words[k - 1].end if k > 0 else 0
    return lo, words[k].end


def _realisable(words: Sequence[WordSpan], k: int) -> bool:
    if not 1 <= k < len(words):
        return False
    lo, hi = _window(words, k)
    return hi > lo and all(words[i].end <= lo for i in range(k))


STOP_INTO_SOUND_MS = 40.0   # a re-planned stop lands this far into the resumed sound


def _audible(samples: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int]:
    """Per 5 ms frame: is the clip audible there (-40 dB under its loudest frame)."""
    from bargein.audio.wordtimes import SILENCE_DB, frame_energy

    e, hop = frame_energy(samples, sample_rate)
    return e > (e.max() if e.size else 0.0) * 10 ** (SILENCE_DB / 20.0), hop


def stop_on_sound(samples: np.ndarray, sample_rate: int, words: Sequence[WordSpan], k: int,
                  onset: int, stop: int, overlap: int) -> tuple[int, int]:
    """``(onset, stop)`` so the assistant is audible up to the stop (see the module docstring)."""
    loud, hop = _audible(samples, sample_rate)
    n = len(samples)
    if not loud.size:
        return onset, stop
    f = min(len(loud), stop // hop)
    if f > 0 and loud[f - 1]:
        return onset, stop                      # sounding right up to the stop
    nxt = f
    while nxt < len(loud) and not loud[nxt]:
        nxt += 1
    hi = words[k].end                           # the onset must stay before word k ends
    if nxt < len(loud):
        new_stop = min(n, nxt * hop + int(round(STOP_INTO_SOUND_MS * sample_rate / 1000.0)))
        new_onset = onset + (new_stop - stop)
        if new_onset < hi and new_stop - new_onset == stop - onset:
            return new_onset, new_stop
    g = f                                       # follow the audio: the sound ends before the stop
    while g > 0 and not loud[g - 1]:
        g -= 1
    return onset, max(1, min(stop, g * hop))


MIN_FRAGMENT_MS = 32.0      # a word the stop cuts into is either not started or this long


def whole_fragment(samples: np.ndarray, sample_rate: int, words: Sequence[WordSpan], k: int,
                   onset: int, stop: int) -> tuple[int, int]:
    """Move ``(onset, stop)`` together (same heard words, same overlap) so the word the stop
    cuts into has at least ``MIN_FRAGMENT_MS`` of audio: a 5 ms sliver is not a word."""
    frag = int(round(MIN_FRAGMENT_MS * sample_rate / 1000.0))
    cut = next((w for w in words if w.start < stop < w.start + frag and w.end > stop), None)
    if cut is None:
        return onset, stop
    lo, hi = _window(words, k)
    earlier = stop - cut.start                  # first choice: the word is not started at all
    if onset - earlier >= lo:                   # (and the onset stays clear of word k)
        loud, hop = _audible(samples, sample_rate)
        f = (stop - earlier) // hop
        if 0 < f <= len(loud) and loud[f - 1]:
            return onset - earlier, stop - earlier
    later = cut.start + frag - stop
    if onset + later < hi and stop + later <= len(samples):
        return onset + later, stop + later
    return onset, stop


def plan_cut(words: Sequence[WordSpan], n_samples: int, sample_rate: int, text: str,
             interruption: Interruption, *, rng: random.Random, jitter_ms: float = 40.0,
             onset: int | None = None, samples: np.ndarray | None = None) -> CutIn:
    """Where the user cuts in and where the assistant stops (see the module docstring).

    Without ``onset`` the onset is the end of the text's last heard word plus a seeded jitter
    in ``[0, jitter_ms]`` (one-sided: an earlier onset would un-hear that word), never past the
    start of the next word. With ``onset``
    it is checked against the text and moved when it hears other words. With ``samples`` the
    stop is made true to the audio (:func:`stop_on_sound`).
    """
    if len(words) < 2:
        raise AudioError(f"an interrupted message needs at least 2 timed words, got {len(words)} "
                         f"for {text[:60]!r}. Fix: give the message more words or drop the "
                         "interruption.")
    k = text_cut_word(words, text, interruption)
    resolution = "as_planned"
    if not _realisable(words, k):
        ok = [j for j in range(1, len(words)) if _realisable(words, j)]
        if not ok:
            raise AudioError(f"no word boundary in the audio of {text[:60]!r} can carry a cut-in "
                             "(degenerate word timings)")
        k = min(ok, key=lambda j: (abs(j - k), j))
        resolution = "text_updated"
    lo, hi = _window(words, k)
    # the jitter stays in the silence before word k: a cut inside word k would let the listener
    # hear its first sounds, which the heard text (whole words) cannot say
    room_ms = max(0.0, (words[k].start - lo) * 1000.0 / sample_rate)
    jitter = int(round(rng.uniform(0.0, max(0.0, min(jitter_ms, room_ms))) * sample_rate / 1000.0))
    if onset is None:
        onset = lo + jitter
    if heard_count(words, onset) != k:
        onset = min(max(onset, lo), hi - 1)
        if resolution == "as_planned":
            resolution = "onset_moved"
    assert heard_count(words, onset) == k
    overlap = int(round(interruption.overlap_ms * sample_rate / 1000.0))
    stop = min(onset + overlap, n_samples)
    if samples is not None:
        x = np.asarray(samples)
        onset, stop = stop_on_sound(x, sample_rate, words, k, int(onset), int(stop), overlap)
        onset, stop = whole_fragment(x, sample_rate, words, k, onset, stop)
        assert heard_count(words, onset) == k
    spoken = sum(1 for w in words if w.start < stop)
    if samples is not None and spoken > k:      # a started word the stop left silent (a closure) was not spoken
        loud, hop = _audible(np.asarray(samples), sample_rate)
        w = words[spoken - 1]
        if not loud[w.start // hop: max(w.start // hop + 1, min(stop, w.end) // hop)].any():
            spoken -= 1
    heard_text = interruption.heard_text if resolution != "text_updated" else prefix_text(text, words, k)
    return CutIn(onset=int(onset), stop=int(stop), heard=k, spoken=spoken, heard_text=heard_text,
                 spoken_text=prefix_text(text, words, spoken), resolution=resolution,
                 overlap=int(stop - onset))


def apply_cut(samples: np.ndarray, cut: CutIn, sample_rate: int, fade_ms: float = 10.0) -> np.ndarray:
    """The clip up to ``cut.stop`` with an equal-power fade-out that ends exactly there."""
    if not 5.0 <= fade_ms <= 20.0:
        raise AudioError(f"cut-in fade_ms={fade_ms} is outside 5..20 ms")
    x = np.array(samples[: cut.stop], dtype=np.float32, copy=True)
    n = min(len(x), int(round(fade_ms * sample_rate / 1000.0)))
    if n and cut.stop < len(samples):
        x[len(x) - n:] *= equal_power_ramp(n, rising=False)
    return x


def cut_words(words: Sequence[WordSpan], cut: CutIn) -> tuple[WordSpan, ...]:
    """The spoken words, the last one ending no later than the stop."""
    return tuple(WordSpan(w.word, w.start, min(w.end, cut.stop), w.char_start)
                 for w in words[: cut.spoken])
