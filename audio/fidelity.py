r"""Fidelity of the audio labels, measured on the output audio by instruments that did not make them.

Every label a release ships is a claim about its audio. These checks read the audio back:

* **word boundaries** - an energy detector finds the pauses (>= 150 ms) inside each message;
  the word the timings say is sounding before the pause must end within 30 ms of the real end of
  sound. Also counted: words shorter than 30 ms, words lying wholly in silence.
* **cuts** - the assistant's last sound before ``stop_s`` and the user's first sound after
  ``cut_s`` are found on their channels; ``stop_s``, ``cut_s`` and the overlap
  ``stop_s - cut_s`` are compared with them. Whisper transcribes the assistant channel up to the
  cut; its last words must be the heard text's. A disagreement where Whisper only adds words
  after the heard ones (the word the cut fell in: started, not ended, so not heard by
  definition) is counted apart: Whisper tiny completes a word from its first phonemes, and
  sometimes a sentence from none.
* **frame labels** - the VAP classes shipped in ``labels.npz`` against VAP classes of the
  activity the energy detector measures (speech runs merged across gaps < 180 ms, as the
  labels' speech units are).
* **repair items** - Whisper on every masked clip: an unanswerable clip must not give the value
  back; answerable and unanswerable masks must hide the same amount of audio.

The energy detector (:func:`activity`) is separate from the one that settles word ends in
:mod:`bargein.audio.wordtimes`: 5 ms windows every 1 ms, a threshold 40 dB under the channel's
99th-percentile window level (never under -70 dBFS); an active run shorter than 5 ms is a
click or a breath blip in a pause, not speech::

    level  ____/\/\/\____/\/\/\/\__________/\/\____
    active     |=====|   |=======|         |===|
    pause            |...|  < 150 ms: not a pause
                                 |.........| >= 150 ms: word end checked here
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

WIN_S = 0.005
HOP_S = 0.001
BELOW_REF_DB = 40.0
MIN_RUN_S = 0.005           # shorter bursts (clicks) are not speech
FLOOR_DBFS = -70.0
PAUSE_S = 0.15
WORD_TOL_S = 0.03
MIN_WORD_S = 0.03
IPU_MERGE_S = 0.18


# ---------------------------------------------------------------- the energy detector
@dataclass(frozen=True)
class Activity:
    """Per-window activity of one channel: window ``i`` is centred at ``(i + 0.5) * hop_s + ...``."""

    active: np.ndarray          # bool per window
    hop_s: float
    win_s: float

    def time(self, i: int | np.ndarray) -> Any:
        """Centre of window ``i`` in seconds."""
        return np.asarray(i) * self.hop_s + self.win_s / 2

    def index(self, t: float) -> int:
        return int(np.clip(round((t - self.win_s / 2) / self.hop_s), 0, len(self.active)))

    def runs(self, t0: float = 0.0, t1: float | None = None, *, active: bool = True
             ) -> list[tuple[float, float]]:
        """(start_s, end_s) of the runs of active (or silent) windows inside ``[t0, t1)``."""
        i0, i1 = self.index(t0), self.index(t1) if t1 is not None else len(self.active)
        x = self.active[i0:i1] == active
        if x.size == 0:
            return []
        d = np.diff(np.concatenate([[0], x.astype(np.int8), [0]]))
        s, e = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        # a run of windows [a, b) spans from the centre of a minus half a hop to the centre of b-1
        # plus half a hop: the sound starts/ends between the last silent and the first loud centre
        return [(float(self.time(i0 + a) - self.hop_s / 2), float(self.time(i0 + b - 1) + self.hop_s / 2))
                for a, b in zip(s, e)]


def activity(x: np.ndarray, sample_rate: int, *, win_s: float = WIN_S, hop_s: float = HOP_S,
             below_ref_db: float = BELOW_REF_DB, floor_dbfs: float = FLOOR_DBFS) -> Activity:
    """Energy activity of a mono signal (see the module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    win, hop = max(1, int(round(win_s * sample_rate))), max(1, int(round(hop_s * sample_rate)))
    if len(x) < win:
        return Activity(np.zeros(0, bool), hop / sample_rate, win / sample_rate)
    c = np.concatenate([[0.0], np.cumsum(x * x)])
    starts = np.arange(0, len(x) - win + 1, hop)
    ms = (c[starts + win] - c[starts]) / win
    db = 10 * np.log10(np.maximum(ms, 1e-20))
    loud = db[db > floor_dbfs]
    ref = float(np.percentile(loud, 99)) if loud.size else 0.0
    thr = max(floor_dbfs, ref - below_ref_db)
    act = db > thr
    d = np.diff(np.concatenate([[0], act.astype(np.int8), [0]]))
    min_run = max(1, int(round(MIN_RUN_S / (hop / sample_rate))))
    for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
        if b - a < min_run:
            act[a:b] = False
    return Activity(act, hop / sample_rate, win / sample_rate)


def merged_runs(runs: Sequence[tuple[float, float]], max_gap_s: float) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in runs:
        if out and a - out[-1][1] < max_gap_s:
            out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


# ---------------------------------------------------------------- word boundaries
@dataclass
class VoiceWords:
    """Word-boundary accuracy of one voice."""

    errors_ms: list[float] = field(default_factory=list)    # timed end - real end, at pauses
    words: int = 0
    short: int = 0              # < 30 ms
    in_silence: int = 0         # no active window inside the word
    offenders: list[dict[str, Any]] = field(default_factory=list)   # which words, for a reader

    def summary(self) -> dict[str, Any]:
        e = np.abs(np.asarray(self.errors_ms, dtype=float))
        return {"pauses": int(e.size),
                "word_end_within_30ms": round(float(np.mean(e <= WORD_TOL_S * 1000)), 4) if e.size else None,
                "word_end_error_ms_p50": round(float(np.percentile(e, 50)), 1) if e.size else None,
                "word_end_error_ms_p95": round(float(np.percentile(e, 95)), 1) if e.size else None,
                "words": self.words, "words_shorter_than_30ms": self.short, "words_in_silence": self.in_silence,
                "offending_words": self.offenders[:20]}


def channel_activity(rd: Any, audio: np.ndarray) -> list[Activity]:
    return [activity(audio[:, c], rd.sample_rate) for c in range(audio.shape[1])]


def word_boundaries(dialogues: Iterable[tuple[Any, np.ndarray]],
                    out: dict[str, VoiceWords] | None = None) -> dict[str, VoiceWords]:
    """Per voice: word ends at pauses against the energy detector, short and silent words.

    ``dialogues`` yields ``(RenderedDialogue, audio (n, 2))`` or ``(RenderedDialogue, [Activity])``;
    counts add into ``out``.
    """
    out = {} if out is None else out
    for rd, audio in dialogues:
        acts = audio if isinstance(audio, list) else channel_activity(rd, audio)
        for seg in rd.segments:
            if seg.kind != "message" or not seg.words:
                continue
            vw = out.setdefault(seg.voice_id or "?", VoiceWords())
            act = acts[seg.channel]
            words = seg.words
            for k, w in enumerate(words):
                vw.words += 1
                short = w.end_s - w.start_s < MIN_WORD_S - 1e-6
                silent = not act.runs(w.start_s, w.end_s)
                vw.short += short
                vw.in_silence += silent
                if short or silent:
                    vw.offenders.append({
                        "dialogue": getattr(rd, "id", "?"), "message": seg.message_index, "word": w.word,
                        "start_s": round(w.start_s, 3), "end_s": round(w.end_s, 3),
                        "why": "in silence" if silent else "shorter than 30 ms",
                        "context": " ".join(v.word for v in words[max(0, k - 3): k + 4]),
                        "sound_near": [(round(a, 3), round(b, 3))
                                       for a, b in act.runs(w.start_s - 0.2, w.end_s + 0.2)]})
            sound = act.runs(seg.start_s, seg.end_s + 0.05)
            if not sound:
                continue
            pauses = [(a, b) for a, b in act.runs(sound[0][0], sound[-1][1], active=False)
                      if b - a >= PAUSE_S]
            ends = [a for a, _ in pauses]
            if seg.stop_s is None:            # the natural end, if silence follows it
                after = act.runs(sound[-1][1], sound[-1][1] + PAUSE_S)
                if not after:
                    ends.append(sound[-1][1])
            for t in ends:
                before = [w for w in words if w.start_s < t]
                if before:
                    vw.errors_ms.append((before[-1].end_s - t) * 1000.0)
    return out


# ---------------------------------------------------------------- cuts
@dataclass
class CutCheck:
    dialogue_id: str
    message_index: int
    stop_error_ms: float | None         # measured stop - stop_s
    cut_error_ms: float | None          # measured onset of the interjection - cut_s
    overlap_error_ms: float | None      # measured overlap - (stop_s - cut_s)
    heard_text: str
    partial_word: str = ""              # the word sounding at the cut (started, not ended)
    partial_heard_ms: float = 0.0       # how much of it lies before the cut
    asr_prefix: str | None = None
    heard_agrees: bool | None = None
    asr_only_adds_words: bool | None = None     # disagreeing only by words after the heard ones


def cut_checks(rd: Any, audio: np.ndarray | list[Activity]) -> list[CutCheck]:
    """Each cut of a dialogue against the energy detector on both channels."""
    acts = audio if isinstance(audio, list) else channel_activity(rd, audio)
    segs = sorted(rd.segments, key=lambda s: s.start_s)
    out = []
    for seg in segs:
        if seg.stop_s is None or seg.cut_s is None:
            continue
        ch = seg.channel
        later = [s.start_s for s in segs if s.channel == ch and s.start_s > seg.start_s]
        limit = min([seg.stop_s + 0.3] + later)
        sound = acts[ch].runs(seg.start_s, limit)
        stop = sound[-1][1] if sound else None
        inter = [s for s in segs if s.channel != ch and s.kind == "message"
                 and abs(s.start_s - seg.cut_s) < 0.5]
        onset = None
        if inter:
            runs = acts[1 - ch].runs(seg.cut_s - 0.3, seg.cut_s + 0.5)
            onset = runs[0][0] if runs else None
        planned_overlap = seg.stop_s - seg.cut_s
        partial = next((w for w in seg.words if w.start_s < seg.cut_s < w.end_s), None)
        out.append(CutCheck(
            dialogue_id=rd.id, message_index=seg.message_index,
            stop_error_ms=None if stop is None else (stop - seg.stop_s) * 1000.0,
            cut_error_ms=None if onset is None else (onset - seg.cut_s) * 1000.0,
            overlap_error_ms=None if stop is None or onset is None else
            ((stop - onset) - planned_overlap) * 1000.0,
            heard_text=seg.heard_text or "",
            partial_word=partial.word if partial else "",
            partial_heard_ms=round((seg.cut_s - partial.start_s) * 1000.0, 1) if partial else 0.0))
    return out


def heard_text_agrees(heard_text: str, asr_text: str, tail_chars: int = 12) -> bool:
    """Whether an ASR pass on the audio up to the cut ends with the heard text's last words
    (canonical forms: case, punctuation and number spellings folded)."""
    from bargein.masking.spans import canonical

    def spoken(t: str) -> str:              # "$40" is how Whisper writes "40 dollars"
        return re.sub(r"\$(\d[\d,]*)(?:\.(\d\d))?", lambda m: m.group(1) + " dollars"
                      + (f" {m.group(2)} cents" if m.group(2) else ""), t)

    a, b = canonical(spoken(heard_text)), canonical(spoken(asr_text))
    if not a or not b:
        return a == b
    a, b = a[-tail_chars:], b[-tail_chars:]
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.75


def asr_text(samples: np.ndarray, sample_rate: int) -> str:
    """What Whisper tiny.en hears (faster-whisper's own greedy decoding with its fallbacks)."""
    from bargein.audio.align import transcribe

    return transcribe(samples, sample_rate)[0]


def asr_heard_prefix(rd: Any, audio: np.ndarray, check: CutCheck) -> CutCheck:
    """Fill ``asr_prefix`` / ``heard_agrees``: Whisper on the assistant channel up to ``cut_s``."""

    seg = next(s for s in rd.segments if s.message_index == check.message_index and s.stop_s is not None)
    sr = rd.sample_rate
    x = audio[int(seg.start_s * sr): int(seg.cut_s * sr), seg.channel]
    if len(x) < int(0.1 * sr):
        text = ""
    else:
        text = asr_text(np.ascontiguousarray(x, dtype=np.float32), sr)
    return with_asr_prefix(check, text)


def with_asr_prefix(check: CutCheck, text: str) -> CutCheck:
    """``check`` with what the ASR heard on the prefix: agreement, and whether a disagreement is
    only the ASR going on past the heard words (completing the word the cut fell in, or a
    sentence from nothing): some shorter prefix of the ASR text agrees with the heard text."""
    agrees = heard_text_agrees(check.heard_text, text)
    words = text.split()
    adds = not agrees and any(heard_text_agrees(check.heard_text, " ".join(words[:k]))
                              for k in range(1, len(words)))
    return CutCheck(**{**check.__dict__, "asr_prefix": text, "heard_agrees": agrees,
                       "asr_only_adds_words": adds})


# ---------------------------------------------------------------- frame labels
def measured_activity(audio: np.ndarray, sample_rate: int, duration_s: float, frame_hz: float) -> np.ndarray:
    """(frames, 2) activity from the energy detector, speech units merged across < 180 ms gaps."""
    from bargein.audio.labels import activity_from_segments

    per_ch = []
    for c in range(audio.shape[1]):
        runs = activity(audio[:, c], sample_rate).runs()
        per_ch.append(merged_runs(runs, IPU_MERGE_S))
    return activity_from_segments(per_ch, duration_s, frame_hz)


def frame_label_agreement(labels: dict[str, np.ndarray], audio: np.ndarray, sample_rate: int,
                          duration_s: float) -> tuple[int, int]:
    """(agreeing frames, valid frames): shipped VAP classes vs classes of measured activity."""
    from bargein.audio.labels import FRAME_HZ, vap_targets

    shipped = np.asarray(labels["vap"])
    act = measured_activity(audio, sample_rate, duration_s, FRAME_HZ)
    n = min(len(shipped), act.shape[0])
    measured = vap_targets(act[:n], FRAME_HZ)
    ok = (shipped[:n] >= 0) & (measured >= 0)
    return int(np.sum(shipped[:n][ok] == measured[ok])), int(np.sum(ok))


# ---------------------------------------------------------------- repair items
def mask_recovery(item: Any, samples: np.ndarray, sample_rate: int) -> tuple[bool, str]:
    """(Whisper still says the item's value, what Whisper heard) for one masked clip."""
    from bargein.masking.spans import contains_value

    text = asr_text(np.asarray(samples, dtype=np.float32), sample_rate)
    return (bool(item.answer) and contains_value(text, item.answer)), text


def mask_length_ratio(items: Iterable[Any]) -> dict[str, Any]:
    """Masked seconds, answerable vs unanswerable: ratio of medians, ratios at the quartiles,
    per-pair ratios, and ``length_auc``: how well mask length alone tells an unanswerable item
    from an answerable one (0.5: not at all; 1.0: always)."""
    by_pair: dict[tuple, dict[str, float]] = {}
    for it in items:
        s = it.measured.get("masked_s")
        if s is None:
            s = sum(sp.end_s - sp.start_s for sp in it.spans)
        key = (it.source_id, it.message_index, it.slot, it.signal, it.window_ms)
        by_pair.setdefault(key, {})[it.condition] = float(s)
    ans = [v["answerable"] for v in by_pair.values() if "answerable" in v]
    una = [v["unanswerable"] for v in by_pair.values() if "unanswerable" in v]
    pairs = [v["answerable"] / v["unanswerable"] for v in by_pair.values()
             if "answerable" in v and "unanswerable" in v and v["unanswerable"] > 0]
    if not ans or not una:
        return {"ratio_of_medians": None, "pairs": 0}
    p = np.asarray(pairs)
    a, u = np.asarray(ans)[:, None], np.asarray(una)[None, :]
    auc = float(np.mean((u > a) + 0.5 * (u == a)))     # P(an unanswerable mask is the longer one)
    q = [25, 50, 75]
    return {"ratio_of_medians": round(float(np.median(ans) / np.median(una)), 4), "pairs": len(pairs),
            "length_auc": round(auc, 4),
            "quantile_ratios": {f"p{k}": round(float(np.percentile(ans, k) / np.percentile(una, k)), 4) for k in q},
            "pair_ratio_p05": round(float(np.percentile(p, 5)), 4) if p.size else None,
            "pair_ratio_p95": round(float(np.percentile(p, 95)), 4) if p.size else None,
            "pairs_within_0.8_1.25": round(float(np.mean((p >= 0.8) & (p <= 1.25))), 4) if p.size else None}


def p95_abs(values: Iterable[float | None]) -> float | None:
    v = np.abs([x for x in values if x is not None])
    return round(float(np.percentile(v, 95)), 1) if v.size else None
