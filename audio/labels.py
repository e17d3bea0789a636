"""Frame labels for turn-taking: VAP 256-state future activity (50 Hz) and Talking-Turns 40 ms.

Activity is a boolean matrix ``(frames, 2)``: column 0 = user, column 1 = assistant. Frame
``i`` covers ``[i/fh, (i+1)/fh)`` and is active when its centre lies inside a segment.

VAP target of frame t (TurnNat / VAP): the 100 frames after t, split per speaker into 4 bins::

    t | 0-200 ms | 200-600 ms | 600-1200 ms | 1200-2000 ms |     frames t+1 .. t+100 at 50 Hz
      |  10 fr   |   20 fr    |    30 fr    |     40 fr    |
    bin active  <=>  >= 50% of its frames active

Bit order (VAP's codebook, least significant first)::

    index = sum(bit[j] << j),  bit[0..3] = speaker 0 bins 0..3,  bit[4..7] = speaker 1 bins 0..3

so class 0 = silence everywhere, 15 = only speaker 0 in every bin, 240 = only speaker 1,
255 = both in every bin. Frames whose window runs past the end get -1.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from bargein.errors import AudioError
from bargein.store import atomic_write_bytes

FRAME_HZ = 50
VAP_BIN_MS: tuple[int, ...] = (200, 400, 600, 800)     # bin widths: 0-200, 200-600, 600-1200, 1200-2000
VAP_THRESHOLD = 0.5
N_VAP_CLASSES = 256
TT_CHUNK_S = 0.04
TT_START_S = 0.2
TT_LABELS: tuple[str, ...] = ("C", "NA", "I", "BC", "T")
BACKCHANNEL_MAX_S = 1.0        # VAD-only heuristic for listener feedback (see is_backchannel)


# ---------------------------------------------------------------- segments <-> activity
def _span(seg: Any) -> tuple[float, float]:
    if hasattr(seg, "start_s") and hasattr(seg, "end_s"):
        return float(seg.start_s), float(seg.end_s)
    a, b = seg[0], seg[1]
    return float(a), float(b)


def _kind(seg: Any) -> str | None:
    k = getattr(seg, "kind", None)
    if k is None and isinstance(seg, (tuple, list)) and len(seg) > 2:
        k = seg[2]
    return k


def n_frames(duration_s: float, frame_hz: float = FRAME_HZ) -> int:
    return int(round(duration_s * frame_hz))


def activity_from_segments(segments_per_channel: Sequence[Iterable[Any]], duration_s: float,
                           frame_hz: float = FRAME_HZ) -> np.ndarray:
    """Per-channel segments (records with start_s/end_s, or (start, end) tuples) -> bool (frames, C)."""
    if duration_s <= 0 or not np.isfinite(duration_s):
        raise AudioError(f"activity_from_segments: duration_s must be > 0, got {duration_s}")
    n = n_frames(duration_s, frame_hz)
    centres = (np.arange(n) + 0.5) / frame_hz
    act = np.zeros((n, len(segments_per_channel)), dtype=bool)
    for c, segs in enumerate(segments_per_channel):
        for seg in segs:
            a, b = _span(seg)
            if not (np.isfinite(a) and np.isfinite(b)) or b < a:
                raise AudioError(f"channel {c}: invalid segment ({a}, {b}); need start <= end")
            lo, hi = np.searchsorted(centres, [a, b], side="left")
            act[lo:hi, c] = True
    return act


def segments_from_activity(activity: np.ndarray, frame_hz: float = FRAME_HZ) -> list[list[tuple[float, float]]]:
    """Runs of active frames per channel as (start_s, end_s)."""
    act = np.asarray(activity, dtype=bool)
    out = []
    for c in range(act.shape[1]):
        x = np.concatenate([[False], act[:, c], [False]]).astype(np.int8)
        d = np.diff(x)
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        out.append([(s / frame_hz, e / frame_hz) for s, e in zip(starts, ends)])
    return out


def segments_by_channel(segments: Iterable[Any], n_channels: int = 2) -> list[list[Any]]:
    """Split records that carry ``channel`` (e.g. RenderedDialogue.segments) into per-channel lists."""
    out: list[list[Any]] = [[] for _ in range(n_channels)]
    for s in segments:
        out[int(s.channel)].append(s)
    for lst in out:
        lst.sort(key=lambda s: _span(s))
    return out


# ---------------------------------------------------------------- VAP 256-state targets
def _bin_edges(frame_hz: float, bin_ms: Sequence[int]) -> np.ndarray:
    widths = [int(round(w * frame_hz / 1000)) for w in bin_ms]
    return np.concatenate([[0], np.cumsum(widths)]).astype(int)


def vap_bits(activity: np.ndarray, frame_hz: float = FRAME_HZ, bin_ms: Sequence[int] = VAP_BIN_MS,
             threshold: float = VAP_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """(bits (frames, 2, 4) bool, valid (frames,) bool): future-bin activity after each frame."""
    act = np.asarray(activity, dtype=bool)
    if act.ndim != 2 or act.shape[1] != 2:
        raise AudioError(f"VAP targets need a (frames, 2) activity matrix, got {act.shape}")
    edges = _bin_edges(frame_hz, bin_ms)
    horizon = int(edges[-1])
    n = act.shape[0]
    csum = np.concatenate([np.zeros((1, 2)), np.cumsum(act, axis=0)])   # csum[k] = sum act[:k]
    t = np.arange(n)
    valid = t + horizon < n
    bits = np.zeros((n, 2, len(edges) - 1), dtype=bool)
    for k in range(len(edges) - 1):
        lo = np.minimum(t + 1 + edges[k], n)
        hi = np.minimum(t + 1 + edges[k + 1], n)
        frac = (csum[hi] - csum[lo]) / float(edges[k + 1] - edges[k])
        bits[:, :, k] = frac >= threshold
    bits[~valid] = False
    return bits, valid


def vap_index(bits: np.ndarray) -> np.ndarray:
    """bits (..., 2, 4) -> class index; speaker 0 bin 0 is the least significant bit."""
    b = np.asarray(bits, dtype=np.int64)
    b = b.reshape(*b.shape[:-2], b.shape[-2] * b.shape[-1])     # explicit: 0 frames is fine
    return (b << np.arange(b.shape[-1])).sum(axis=-1)


def vap_bits_from_index(index: np.ndarray | int, n_bins: int = 4) -> np.ndarray:
    """Inverse of :func:`vap_index`: (..., 2, n_bins) bool."""
    idx = np.asarray(index, dtype=np.int64)
    bits = (idx[..., None] >> np.arange(2 * n_bins)) & 1
    return bits.reshape(*idx.shape, 2, n_bins).astype(bool)


def vap_targets(activity: np.ndarray, frame_hz: float = FRAME_HZ) -> np.ndarray:
    """256-state future voice-activity class per frame (int16), -1 where the window runs out."""
    bits, valid = vap_bits(activity, frame_hz)
    idx = vap_index(bits).astype(np.int16)
    idx[~valid] = -1
    return idx


# ---------------------------------------------------------------- Talking-Turns 40 ms labels
def is_backchannel(seg: tuple[float, float], other: Sequence[tuple[float, float]],
                   max_s: float = BACKCHANNEL_MAX_S, margin_s: float = 0.3) -> bool:
    """VAD-only heuristic: a short listener segment inside the other speaker's turn.

    Short (<= ``max_s``) and the other speaker is active within ``margin_s`` before its onset
    and within ``margin_s`` after its offset (the other keeps the floor around it).
    """
    a, b = seg
    if b - a > max_s:
        return False
    before = any(s <= a and e >= a - margin_s for s, e in other)
    after = any(e >= b and s <= b + margin_s for s, e in other)
    return before and after


def _ipus(segments_per_channel: Sequence[Iterable[Any]]) -> list[tuple[float, float, int, bool]]:
    """(start, end, channel, is_backchannel) for every segment, sorted by start."""
    spans = [[_span(s) for s in segs] for segs in segments_per_channel]
    kinds = [[_kind(s) for s in segs] for segs in segments_per_channel]
    out = []
    for c in range(len(spans)):
        other = [x for o in range(len(spans)) if o != c for x in spans[o]]
        for (a, b), k in zip(spans[c], kinds[c]):
            bc = (k == "backchannel") if k is not None else is_backchannel((a, b), other)
            out.append((a, b, c, bc))
    return sorted(out)


def talking_turns_labels(segments_per_channel: Sequence[Iterable[Any]], duration_s: float, *,
                         chunk_s: float = TT_CHUNK_S, start_s: float = TT_START_S) -> list[str]:
    """One label per 40 ms chunk from ``start_s``: C, NA, I, BC or T.

    An event label marks the chunk where the event starts; the others are C or NA::

        spk0  |======== turn ========|        |== turn ==|
        spk1           |bc|             |=== turn ===|     |=== turn
        label C C C C  BC C C C C C  NA T  C C C  I  C  NA T ...

    * BC: a listener backchannel starts (segment ``kind="backchannel"``, else
      :func:`is_backchannel`);
    * I: the listener starts a non-backchannel turn while the floor holder is still speaking;
    * T: the listener starts a turn after the holder stopped (turn change);
    * C: someone speaks and no event starts; NA: nobody speaks.

    The first talker takes the floor with T. Bargein chooses this onset-marking rule; the
    paper's judge labels come from a trained model, so rates here are of detected events.
    """
    ipus = _ipus(segments_per_channel)
    n = int(np.floor((duration_s - start_s) / chunk_s + 1e-9))
    if n <= 0:
        return []
    starts = start_s + chunk_s * np.arange(n)
    labels = np.full(n, "NA", dtype=object)
    for a, b, _c, _bc in ipus:          # someone speaking -> C
        lo, hi = np.searchsorted(starts + chunk_s, a, "right"), np.searchsorted(starts, b, "left")
        labels[lo:hi] = "C"
    holder, holder_end = None, -np.inf
    for a, b, c, bc in ipus:
        ev = None
        if holder is not None and c != holder and bc:
            ev = "BC"
        elif c != holder:
            ev = "I" if holder is not None and holder_end > a else "T"
            holder, holder_end = c, b
        else:
            holder_end = max(holder_end, b)
        k = int(np.floor((a - start_s) / chunk_s + 1e-9))
        if ev is not None and 0 <= k < n:
            labels[k] = ev
    return list(labels)


def talking_turns_from_activity(activity: np.ndarray, frame_hz: float = FRAME_HZ, **kw) -> list[str]:
    """Talking-Turns labels from a (frames, 2) activity matrix (backchannels by heuristic)."""
    act = np.asarray(activity, dtype=bool)
    return talking_turns_labels(segments_from_activity(act, frame_hz), act.shape[0] / frame_hz, **kw)


# ---------------------------------------------------------------- files
def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz with fixed zip timestamps: same arrays -> same bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            arr = io.BytesIO()
            np.lib.format.write_array(arr, np.asarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, arr.getvalue())
    return buf.getvalue()


def frame_labels(segments_per_channel: Sequence[Iterable[Any]], duration_s: float,
                 frame_hz: float = FRAME_HZ) -> dict[str, np.ndarray]:
    """All labels of one dialogue: activity, VAP targets, Talking-Turns labels (as codes)."""
    act = activity_from_segments(segments_per_channel, duration_s, frame_hz)
    tt = talking_turns_labels(segments_per_channel, duration_s)
    return {
        "activity": act.astype(np.uint8),
        "vap": vap_targets(act, frame_hz) if act.shape[1] == 2 else np.zeros(0, np.int16),
        "tt": np.array([TT_LABELS.index(x) for x in tt], dtype=np.uint8),
        "frame_hz": np.array(frame_hz, dtype=np.float64),
        "tt_chunk_s": np.array(TT_CHUNK_S), "tt_start_s": np.array(TT_START_S),
        "tt_names": np.array(TT_LABELS),
    }


def save_frame_labels(path: str | os.PathLike, segments_per_channel: Sequence[Iterable[Any]] | None = None,
                      duration_s: float | None = None, *, labels: dict[str, np.ndarray] | None = None,
                      frame_hz: float = FRAME_HZ, source: str = "timeline") -> dict[str, np.ndarray]:
    """Write an .npz (atomically, byte-deterministic) with ``activity`` (frames, 2) uint8,
    ``vap`` (frames,) int16 (-1 at the end), ``tt`` codes into ``tt_names`` (C, NA, I, BC, T)
    per 40 ms chunk from ``tt_start_s``, ``frame_hz`` and ``source`` ("timeline" or "vad:<id>").

    Give either per-channel segments + duration, or precomputed ``labels``.
    """
    if labels is None:
        if segments_per_channel is None or duration_s is None:
            raise AudioError("save_frame_labels needs segments_per_channel and duration_s, or labels")
        labels = frame_labels(segments_per_channel, duration_s, frame_hz)
    labels = dict(labels)
    labels["source"] = np.array(source)
    atomic_write_bytes(path, _npz_bytes(labels))
    return labels


def load_frame_labels(path: str | os.PathLike) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise AudioError(f"cannot read frame labels {path}: {e}. Fix: regenerate them.") from e


def dialogue_frame_labels(rendered: Any, frame_hz: float = FRAME_HZ) -> dict[str, np.ndarray]:
    """Ground-truth labels of a RenderedDialogue from its segments (audible start..end)."""
    return frame_labels(segments_by_channel(rendered.segments), rendered.duration_s, frame_hz)


def tt_label_names(codes: np.ndarray) -> list[str]:
    return [TT_LABELS[int(c)] for c in np.asarray(codes)]
