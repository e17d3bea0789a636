"""Full-Duplex-Bench v1 / v1.5 metrics (``fdb-v1``, ``fdb-v1.5``) on word chunks and VAD spans.

A *chunk* is one recognised word of the system output with ``(text, start_s, end_s)`` (end may
be ``None``, as CrisperWhisper's last word sometimes is). v1 decides per item whether the
system *took the turn* (TOR)::

    no chunks                                   -> TOR 0
    span = last end - first start < 1 s  and  <= 3 chunks   -> TOR 0 (a backchannel, not a turn)
    otherwise                                   -> TOR 1, latency = first start - user end

Aggregates are plain means: take-over rate = mean TOR; latency = mean over TOR = 1 items with
negative latencies counted as 0. Backchannel: silero segments of the output (default settings,
seconds rounded to 0.1 s) up to the first one longer than 3 s are backchannel candidates;
frequency = candidates / output duration; the candidates' 0.2 s-bin histogram (+1e-10,
normalised) is compared with a ground-truth distribution resampled to the same length by linear
interpolation, using SciPy's ``jensenshannon`` (the JS *distance*, natural log; 1 when there is
no candidate). v1.5 timing: user spans merged across gaps <= 0.6 s, system spans across
<= 0.5 s; stop latency = each user/system overlap interval (the shortest per end time);
response latency = user end -> next system onset (the latest user end per onset).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TURN_S = 1.0
TURN_WORDS = 3
BC_MAX_S = 3.0
BC_BIN_S = 0.2
EPS = 1e-10
USER_MERGE_S = 0.6
SYSTEM_MERGE_S = 0.5


@dataclass(frozen=True)
class Chunk:
    text: str
    start_s: float | None
    end_s: float | None


def as_chunks(words: Sequence) -> list[Chunk]:
    """Chunks from ``{"text", "timestamp": [s, e]}`` dicts, ``(text, s, e)`` tuples or objects
    with ``word``/``start_s``/``end_s``."""
    out = []
    for w in words:
        if isinstance(w, Chunk):
            out.append(w)
        elif isinstance(w, dict):
            s, e = w["timestamp"]
            out.append(Chunk(str(w.get("text", "")), s, e))
        elif isinstance(w, (tuple, list)):
            out.append(Chunk(str(w[0]), w[1], w[2]))
        else:
            out.append(Chunk(str(getattr(w, "word", "")), w.start_s, w.end_s))
    return out


def take_turn(chunks: Sequence[Chunk], *, none_end_uses_start: bool = True) -> tuple[int, float | None]:
    """(TOR, first word start) by Full-Duplex-Bench v1's rule (module docstring)."""
    if not chunks:
        return 0, None
    first, last = chunks[0].start_s, chunks[-1].end_s
    if last is None:
        if not none_end_uses_start:
            raise ValueError("last chunk has no end time")
        last = chunks[-1].start_s
    if last - first < TURN_S and len(chunks) <= TURN_WORDS:
        return 0, first
    return 1, first


def turn_item(chunks: Sequence, user_end_s: float) -> dict:
    """One smooth-turn-taking / user-interruption item: TOR and latency (``None`` if TOR 0)."""
    tor, first = take_turn(as_chunks(chunks))
    return {"tor": tor, "latency_s": (first - user_end_s) if tor else None}


def turn_summary(items: Sequence[dict]) -> dict:
    """Mean TOR and mean latency over TOR = 1 items, negatives counted as 0."""
    if not items:
        return {"tor": math.nan, "latency_s": math.nan, "n": 0}
    lat = [max(0.0, it["latency_s"]) for it in items if it["tor"] == 1]
    return {"tor": sum(it["tor"] for it in items) / len(items),
            "latency_s": sum(lat) / len(lat) if lat else math.nan, "n": len(items)}


def _words_in(chunks: Sequence[Chunk], start: float, end: float) -> list[str]:
    out = []
    for c in chunks:
        t0, t1 = c.start_s, c.end_s
        if t0 is None or (t1 is None and t0 < end):
            continue
        if t1 is None:
            t1 = t0
        if (t0 >= start and t1 <= end) or (t0 <= end and t1 > end) or (t0 <= start and t1 > start):
            out.append(c.text)
    return out


def seconds_spans(spans_samples: Sequence[tuple[int, int]], n_samples: int, sr: int = 16000,
                  resolution: int = 1) -> list[tuple[float, float]]:
    """silero's ``return_seconds=True`` conversion: rounded to ``resolution`` decimals, end
    clipped to the audio length."""
    dur = n_samples / sr
    return [(max(round(a / sr, resolution), 0), min(round(b / sr, resolution), dur))
            for a, b in spans_samples]


def backchannel_item(segments_s: Sequence[tuple[float, float]], chunks: Sequence,
                     duration_s: float, gt_distribution: Sequence[float] | None) -> dict:
    """One backchannel item: TOR, backchannel frequency (per second) and JSD against
    ``gt_distribution`` (``None`` when no ground truth is given)."""
    from scipy.interpolate import interp1d
    from scipy.spatial.distance import jensenshannon

    ch = as_chunks(chunks)
    tor, bcs = 0, []
    for a, b in segments_s:
        dur = b - a
        if dur > BC_MAX_S:
            tor = 1
            break
        n = len(_words_in(ch, a, b))
        tor = 1 if n > 3 or dur >= 1 or n > 2 else 0
        bcs.append((a, b))
    freq = len(bcs) / duration_s
    jsd: float | None
    if not bcs:
        jsd = 1.0
    elif gt_distribution is None:
        jsd = None
    else:
        hist = np.zeros(int(duration_s / BC_BIN_S) + 1)
        for a, b in bcs:
            for i in range(int(a / BC_BIN_S), int(b / BC_BIN_S) + 1):
                if i < len(hist):
                    hist[i] += 1
        hist = hist + EPS
        hist = hist / hist.sum()
        gt = np.asarray(gt_distribution, dtype=np.float64)
        f = interp1d(np.linspace(0, 1, len(gt)), gt, kind="linear", fill_value="extrapolate")
        jsd = float(jensenshannon(hist, f(np.linspace(0, 1, len(hist)))))
    return {"tor": tor, "frequency_hz": freq, "jsd": jsd, "backchannels": bcs}


def backchannel_summary(items: Sequence[dict]) -> dict:
    """Means (and population standard deviations) over items, as the reference prints them."""
    out: dict = {"n": len(items)}
    for key in ("jsd", "tor", "frequency_hz"):
        vals = [it[key] for it in items if it[key] is not None]
        out[key] = float(np.mean(vals)) if vals else math.nan
        out[f"{key}_std"] = float(np.std(vals)) if vals else math.nan
    return out


# ------------------------------------------------------------------ v1.5 timing
def merge(spans: Sequence[tuple[float, float]], gap_s: float) -> list[tuple[float, float]]:
    """Join spans whose gap is <= ``gap_s``."""
    out: list[tuple[float, float]] = []
    for s, e in sorted(spans):
        if out and s - out[-1][1] <= gap_s:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def stop_intervals(user: Sequence[tuple[float, float]], system: Sequence[tuple[float, float]]) -> list[list[float]]:
    """Overlaps of user and system speech, walking both lists; the shortest per end (ms)."""
    raw, i, j = [], 0, 0
    while i < len(user) and j < len(system):
        (us, ue), (ms, me) = user[i], system[j]
        s, e = max(us, ms), min(ue, me)
        if e > s:
            raw.append((s, e))
        if ue < me:
            i += 1
        else:
            j += 1
    best: dict[int, tuple[float, float]] = {}
    for s, e in raw:
        k = int(round(e * 1000))
        if k not in best or (e - s) < (best[k][1] - best[k][0]):
            best[k] = (s, e)
    return [[round(s, 3), round(e, 3)] for s, e in sorted(best.values(), key=lambda x: x[1])]


def response_intervals(user: Sequence[tuple[float, float]], system: Sequence[tuple[float, float]]) -> list[list[float]]:
    """User end -> first system onset after it; per onset the latest user end (ms)."""
    onsets = [s for s, _ in system]
    tmp: dict[int, list[float]] = {}
    for _, ue in user:
        nxt = next((s for s in onsets if s > ue), None)
        if nxt is None:
            continue
        k = int(round(nxt * 1000))
        cand = [round(ue, 3), round(nxt, 3)]
        if k not in tmp or cand[0] > tmp[k][0]:
            tmp[k] = cand
    return [iv for _, iv in sorted(tmp.items(), key=lambda kv: kv[1][1])]


def timing_item(user_s: Sequence[tuple[float, float]], system_s: Sequence[tuple[float, float]]) -> dict:
    """v1.5 ``latency_intervals`` of one item from raw VAD spans (seconds)."""
    u, m = merge(user_s, USER_MERGE_S), merge(system_s, SYSTEM_MERGE_S)
    return {"latency_stop_list": stop_intervals(u, m), "latency_resp_list": response_intervals(u, m)}


def timing_summary(items: Sequence[dict]) -> dict:
    """Mean stop and response latency (s) over all intervals of all items."""
    stop = [e - s for it in items for s, e in it["latency_stop_list"]]
    resp = [e - s for it in items for s, e in it["latency_resp_list"]]
    return {"stop_latency_s": float(np.mean(stop)) if stop else math.nan, "stop_n": len(stop),
            "response_latency_s": float(np.mean(resp)) if resp else math.nan, "response_n": len(resp)}


def vad_spans_samples(samples: np.ndarray, sample_rate: int, vad=None) -> tuple[list[tuple[int, int]], int]:
    """silero ``get_speech_timestamps`` with its default settings, in 16 kHz samples."""
    from bargein.audio.vad import silero_probs, silero_timestamps

    n = int(round(len(samples) * 16000 / sample_rate))
    return silero_timestamps(silero_probs(samples, sample_rate, vad), n), n


__all__ = ["Chunk", "as_chunks", "take_turn", "turn_item", "turn_summary", "backchannel_item",
           "backchannel_summary", "seconds_spans", "merge", "stop_intervals", "response_intervals",
           "timing_item", "timing_summary", "vad_spans_samples"]
