"""The five TurnNat timing perturbations: where each can happen, and how it is applied.

A = the speaker before the event, B = the other (responder / listener). Times in seconds.

::

    late_response          A ====|  B |====          ->  A ====|      d       B |====
    early_entry            A ========|  B |====      ->  A ========|  B |==== (e earlier)
    hold_instead_of_shift  A ==|  B |======|  A |==  ->  A ==|  g  |==        (B's turn removed)
    shift_instead_of_hold  A ==| h |==               ->  A ==| B |=====| |==  (B turn inserted)
    excessive_backchannel  A ==============          ->  A ==============
                           B                             B   |bc|    |bc|  |bc|  (>= 0.8 s apart)

Parameters (REFERENCE.md): d 1.2-2.0 s (both turns >= 1 s, overlap <= 200 ms); e 1.2-2.5 s
into the other's speech; removed turn 1.2-8.0 s at a clean shift, gap closed to 0.5-1.5 s;
inserted turn 1-4 s into a 0.3-1.0 s hold; 2-3 distinct backchannels >= 0.8 s apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from random import Random
from typing import Any

import numpy as np

from bargein.audio.events import Backchannel, _active, shift_hold_regions
from bargein.errors import GenerationFailed
from bargein.perturb import edits as E
from bargein.records.derived import Edit

Span = tuple[float, float]
SPEC: dict[str, tuple[float, float]] = {
    "late_response": (1.2, 2.0),            # delay of the response
    "early_entry": (1.2, 2.5),              # advance of the response
    "hold_instead_of_shift": (0.5, 1.5),    # closed gap; removed turn 1.2-8.0 s
    "shift_instead_of_hold": (1.0, 4.0),    # inserted turn; hold gap 0.3-1.0 s
    "excessive_backchannel": (2, 3),        # inserted count; >= 0.8 s apart
}
TURN_MIN_S = 1.0            # late response: both turns at least this long
MAX_OVERLAP_S = 0.2         # late response: original overlap at most this
RESPONSE_MAX_GAP_S = 1.0    # a "response" starts within this of the previous turn's end
REMOVED_TURN_S = (1.2, 8.0)
HOLD_GAP_S = (0.3, 1.0)
BC_SPACING_S = 0.8
BC_PLACE_MARGIN_S = 0.1     # VAD pads speech by 40 ms a side: place 0.9 s apart to measure >= 0.8
BC_CLEAR_S = 0.3            # inserted backchannels stay this far from the listener's speech
BC_WINDOW_S = (3.0, 12.0)
BC_MAX_S = 1.0              # a backchannel is short: at most this much sound
REF_BC_COUNT = 2            # turnnat-ref: backchannels inserted per pair
EE_GUARD_S = 0.05           # early entry: cuts stay this far from speech (the reference's guard)


def _edit(**kw: Any) -> Edit:
    """An Edit with times rounded to the microsecond (stable JSON)."""
    for k in ("at_s", "duration_s", "source_start_s"):
        if kw.get(k) is not None:
            kw[k] = round(float(kw[k]), 6)
    return Edit(**kw)


def _next_start(segs: Sequence[Span], t: float) -> float:
    return next((a for a, _ in segs if a >= t), float("inf"))


def _prev_end(segs: Sequence[Span], t: float) -> float:
    ends = [b for _, b in segs if b <= t]
    return max(ends) if ends else float("-inf")


def _turn_end(segs_b: Sequence[Span], b0: float, until: float) -> float:
    return max(b for a, b in segs_b if b0 <= a < until)


def _responses(segs: Sequence[Sequence[Span]]):
    """(A, B, A segment, B response): B starts within [a1 - 0.2, a1 + 1.0], B was silent
    during A's segment, B's response lasts >= 1 s and A stays silent for its first second."""
    for ca in (0, 1):
        cb = 1 - ca
        for a0, a1 in segs[ca]:
            b0 = _next_start(segs[cb], a1 - MAX_OVERLAP_S)
            if b0 <= a0 or b0 > a1 + RESPONSE_MAX_GAP_S or _active(segs[cb], a0, b0 - 1e-6):
                continue
            b1 = next(b for a, b in segs[cb] if a == b0)
            if b1 - b0 < TURN_MIN_S or _next_start(segs[ca], a1 + 1e-6) < min(b1, b0 + 1.0):
                continue                    # a short reply, or A goes on: not a turn shift
            yield ca, cb, (a0, a1), (b0, b1)


def find_candidates(segs: Sequence[Sequence[Span]], duration_s: float,
                    backchannels: Sequence[Backchannel],
                    synth_channels: Sequence[int] = ()) -> dict[str, list[dict[str, Any]]]:
    """Every place each perturbation could be applied; ``need`` must lie inside the crop.
    ``synth_channels``: listeners whose backchannels can be synthesised in their own voice."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in SPEC}
    for ca, cb, (a0, a1), (b0, b1) in _responses(segs):
        if a1 - a0 >= TURN_MIN_S:
            out["late_response"].append(dict(a=ca, b=cb, a0=a0, a1=a1, b0=b0, b1=b1,
                                             need=(a1 - 1.0, b0 + 1.0)))
        until = _next_start(segs[ca], b0 + 1e-6)
        bt1 = _turn_end(segs[cb], b0, until)
        e_lo = max(SPEC["early_entry"][0], (b0 - a1) + 0.2)
        e_hi = min(SPEC["early_entry"][1], b0 - a0 - 0.3,
                   b0 - _prev_end(segs[cb], b0) - 2 * EE_GUARD_S,          # B silent before its cut
                   _next_start(segs[ca], a1 + 1e-6) - a1 - 2 * EE_GUARD_S)  # A silent after its cut
        if e_lo <= e_hi:
            out["early_entry"].append(dict(a=ca, b=cb, a0=a0, a1=a1, b0=b0, bt1=bt1,
                                           e_lo=e_lo, e_hi=e_hi, need=(b0 - e_hi - 1.0, bt1)))
    shifts, holds = shift_hold_regions(segs, duration_s)
    for r in shifts:
        ca, cb = r.speaker_before, r.speaker_after
        t_a = _next_start(segs[ca], r.end_s)
        if not np.isfinite(t_a):
            continue
        bt1 = _turn_end(segs[cb], r.end_s, t_a)
        if REMOVED_TURN_S[0] <= bt1 - r.end_s <= REMOVED_TURN_S[1]:
            out["hold_instead_of_shift"].append(dict(a=ca, b=cb, s=r.start_s, e=r.end_s, t_a=t_a,
                                                     bt1=bt1, need=(r.start_s - 1.0, t_a + 1.0)))
    for r in holds:
        if HOLD_GAP_S[0] <= r.duration_s <= HOLD_GAP_S[1]:
            ca = r.speaker_before
            out["shift_instead_of_hold"].append(dict(a=ca, b=1 - ca, s=r.start_s, e=r.end_s,
                                                     need=(r.start_s - 1.0, r.end_s + 1.0)))
    for cb in (0, 1):
        ca = 1 - cb
        if len({(b.start_s, b.end_s) for b in backchannels if b.channel == cb}) < 2 \
                and cb not in synth_channels:
            continue
        for w0, w1 in _stretches(segs[ca]):
            w1 = min(w1, w0 + BC_WINDOW_S[1])
            free = [f for f in E.complement(segs[cb], w0, w1, BC_CLEAR_S) if f[1] - f[0] > 0.3]
            if w1 - w0 >= BC_WINDOW_S[0] and sum(b - a for a, b in free) >= 2.0:
                out["excessive_backchannel"].append(dict(a=ca, b=cb, w0=w0, w1=w1,
                                                         need=(w0, w1)))
    return out


def _stretches(segs: Sequence[Span], join_s: float = 0.6) -> list[Span]:
    out: list[list[float]] = []
    for a, b in segs:
        if out and a - out[-1][1] < join_s:
            out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


@dataclass
class Clip:
    """A natural crop being edited: stereo samples, crop-time segments, fade length."""

    audio: np.ndarray
    sr: int
    segs: list[list[Span]]
    n_fade: int

    def n(self, t_s: float) -> int:
        return int(round(t_s * self.sr))

    def tone(self, ch: int, near_s: float, n_samples: int) -> np.ndarray:
        return E.room_tone(self.audio[:, ch], self.sr, self.segs[ch], near_s, n_samples, self.n_fade)


def _stack(a: np.ndarray, b: np.ndarray, ca: int) -> np.ndarray:
    n = min(len(a), len(b))
    if len(a) != len(b):
        raise GenerationFailed(f"internal: channel lengths differ ({len(a)} vs {len(b)})")
    out = np.zeros((n, 2), dtype=np.float32)
    out[:, ca], out[:, 1 - ca] = a, b
    return out


def late_response(clip: Clip, c: dict, rng: Random) -> tuple[np.ndarray, list[Edit], dict]:
    d = rng.uniform(*SPEC["late_response"])
    dn = clip.n(d)
    x = clip.audio
    ya = E.insert(x[:, c["a"]], clip.n(c["a1"]), clip.tone(c["a"], c["a1"], dn + 2 * clip.n_fade), clip.n_fade)
    yb = E.insert(x[:, c["b"]], clip.n(c["b0"]), clip.tone(c["b"], c["b0"], dn + 2 * clip.n_fade), clip.n_fade)
    d = dn / clip.sr
    edits = [_edit(op="insert_silence", channel=c["a"], at_s=c["a1"], duration_s=d, note="after the turn"),
             _edit(op="insert_silence", channel=c["b"], at_s=c["b0"], duration_s=d,
                  note=f"response delayed by {d:.3f} s")]
    return _stack(ya, yb, c["a"]), edits, {"delay_s": d}


def _cut_and_pad(clip: Clip, ch: int, p0: int, n_cut: int, near_s: float) -> np.ndarray:
    """Remove ``[p0, p0 + n_cut)`` from one channel and append ``n_cut`` samples of its room
    tone, so everything after the cut moves ``n_cut`` earlier and the length is unchanged."""
    nf = clip.n_fade
    y = E.remove(clip.audio[:, ch], p0, p0 + n_cut, nf)
    return E._xfade(y, clip.tone(ch, near_s, n_cut + nf), nf)


def early_entry(clip: Clip, c: dict, rng: Random) -> tuple[np.ndarray, list[Edit], dict]:
    """B's response starts ``e`` earlier, inside A's turn, and everything after it moves too.

    The reference cuts ``e`` of silence from *both* channels: from A's silence just after A
    stops and from B's silence just before B starts, then pads both ends with room tone::

        A  ======|..cut..|             ====      ->  A  ======|             ====
        B            |..cut..|=====              ->  B     |=====                (e earlier)
    """
    e = rng.uniform(c["e_lo"], c["e_hi"])
    en = clip.n(e)
    g = clip.n(EE_GUARD_S)
    a_cut = clip.n(c["a1"]) + g
    b_cut = clip.n(c["b0"]) - g - en
    ya = _cut_and_pad(clip, c["a"], a_cut, en, c["a1"])
    yb = _cut_and_pad(clip, c["b"], b_cut, en, c["b0"] - e)
    e = en / clip.sr
    turn_s = clip.n(c["bt1"]) / clip.sr - c["b0"]
    edits = [_edit(op="remove_silence", channel=c["a"], at_s=a_cut / clip.sr, duration_s=e,
                   source_start_s=a_cut / clip.sr, note="silence after A's turn cut: A's later speech moves earlier"),
             _edit(op="remove_silence", channel=c["b"], at_s=b_cut / clip.sr, duration_s=e,
                   source_start_s=b_cut / clip.sr,
                   note=f"silence before B's response cut: response ({turn_s:.3f} s) advanced by {e:.3f} s")]
    return _stack(ya, yb, c["a"]), edits, {"advance_s": e}


def hold_instead_of_shift(clip: Clip, c: dict, rng: Random) -> tuple[np.ndarray, list[Edit], dict]:
    g = rng.uniform(*SPEC["hold_instead_of_shift"])
    x = clip.audio
    # the whole turn goes, its crossfades included: the overwrite starts and ends in B's silence
    guard = clip.n_fade + clip.n(0.01)
    prev_b = max((b for a, b in clip.segs[c["b"]] if b <= c["e"]), default=0.0)
    next_b = min((a for a, b in clip.segs[c["b"]] if a >= c["bt1"]), default=len(x) / clip.sr)
    e0 = max(clip.n(c["e"]) - guard, clip.n(prev_b))
    e1 = min(clip.n(c["bt1"]) + guard, clip.n(next_b), len(x))
    yb = E.overwrite(x[:, c["b"]], e0, clip.tone(c["b"], c["e"], e1 - e0), clip.n_fade)
    ya = x[:, c["a"]]
    cut0 = clip.n(c["s"] + g / 2)
    cut1 = cut0 + clip.n(c["t_a"] - c["s"] - g)
    ya, yb = E.remove(ya, cut0, cut1, clip.n_fade), E.remove(yb, cut0, cut1, clip.n_fade)
    removed = (cut1 - cut0) / clip.sr
    g = c["t_a"] - c["s"] - removed
    at = cut0 / clip.sr
    edits = [_edit(op="remove", channel=c["b"], at_s=at, duration_s=c["bt1"] - c["e"],
                  source_start_s=c["e"], note="responding turn removed"),
             _edit(op="remove_silence", channel=-1, at_s=at, duration_s=removed,
                  source_start_s=at, note=f"gap closed to {g:.3f} s (both channels)")]
    return _stack(ya, yb, c["a"]), edits, {"gap_s": g, "removed_turn_s": c["bt1"] - c["e"]}


def shift_instead_of_hold(clip: Clip, c: dict, rng: Random, source: np.ndarray, sr: int,
                          turns: Sequence[Span], crop: Span) -> tuple[np.ndarray, list[Edit], dict]:
    if not turns:
        raise GenerationFailed("no 1-4 s turn of the other speaker (with the first speaker "
                               "silent) to insert in this dialogue")
    outside = [t for t in turns if t[1] <= crop[0] or t[0] >= crop[1]]
    src = rng.choice(outside or list(turns))
    audio = source[int(round(src[0] * sr)): int(round(src[1] * sr)), c["b"]]
    p = clip.n(0.5 * (c["s"] + c["e"]))
    nf = clip.n_fade
    fill_b = np.concatenate([clip.tone(c["b"], c["s"], nf), audio, clip.tone(c["b"], c["e"], nf)])
    yb = E.insert(clip.audio[:, c["b"]], p, fill_b, nf)
    ya = E.insert(clip.audio[:, c["a"]], p, clip.tone(c["a"], c["s"], len(audio) + 2 * nf), nf)
    t = len(audio) / clip.sr
    edits = [_edit(op="insert", channel=c["b"], at_s=p / clip.sr, duration_s=t, source_start_s=src[0],
                  note="turn of the other speaker inserted into a hold"),
             _edit(op="insert_silence", channel=c["a"], at_s=p / clip.sr, duration_s=t)]
    return _stack(ya, yb, c["a"]), edits, {"inserted_turn_s": t, "hold_gap_s": c["e"] - c["s"],
                                            "at_s": p / clip.sr}


def backchannel_pool(c: dict, source: np.ndarray, sr: int, bcs: Sequence[Backchannel],
                     crop: Span) -> list[tuple[str | None, np.ndarray, float | None]]:
    """The listener's own distinct backchannels as (text, audio, source start), those outside
    the crop first."""
    mine = [b for b in bcs if b.channel == c["b"]]
    distinct: dict[Any, Backchannel] = {}
    for b in sorted(mine, key=lambda b: (b.start_s < crop[0] or b.start_s > crop[1], b.start_s),
                    reverse=True):                      # outside the crop first
        distinct[b.text or (b.start_s, b.end_s)] = b
    return [(b.text, source[int(round(b.start_s * sr)): int(round(b.end_s * sr)), c["b"]], b.start_s)
            for b in distinct.values()]


def excessive_backchannel_ref(clip: Clip, c: dict, rng: Random,
                              pool: Sequence[tuple[str | None, np.ndarray, float | None]]
                              ) -> tuple[np.ndarray, list[Edit], dict]:
    """``turnnat-ref``: exactly 2 distinct backchannels of the listener, each starting where the
    speaker talks and the listener stays silent for the clip's length, onsets at least
    max(0.8 s, longest clip) apart, *added* to the listener channel without fades (TurnNat
    build_perturbations.py ``make_excessive_backchannel``: bc_insert_count 2,
    bc_insert_min_gap_ms 800, ``pick_spaced_frames``, ``paste_add``)::

        A  ============================      speaker active at both onsets
        B       |bc|          |bc|           onset to onset >= 0.8 s, listener silent under each
    """
    pool = list(pool)
    if len(pool) < REF_BC_COUNT:
        raise GenerationFailed(f"listener channel {c['b']} has {len(pool)} distinct backchannel(s); "
                               f"need {REF_BC_COUNT}")
    rng.shuffle(pool)
    chosen = pool[:REF_BC_COUNT]
    longest = max(len(a) for _, a, _ in chosen) / clip.sr
    gap = max(BC_SPACING_S, longest)
    step = 0.01
    starts = []
    for a0, a1 in clip.segs[c["a"]]:
        lo, hi = max(a0, c["w0"]), min(a1, c["w1"]) - longest
        for t in np.arange(lo, hi, step):
            t = round(float(t), 4)
            if not _active(clip.segs[c["b"]], t, t + longest):
                starts.append(t)
    rng.shuffle(starts)
    picked: list[float] = []
    for t in starts:
        if all(abs(t - u) >= gap - 1e-9 for u in picked):
            picked.append(t)
            if len(picked) == REF_BC_COUNT:
                break
    if len(picked) < REF_BC_COUNT:
        raise GenerationFailed(f"no {REF_BC_COUNT} onsets >= {gap:.2f} s apart inside the speaker's turn "
                               f"with the listener silent in [{c['w0']:.2f}, {c['w1']:.2f}] s")
    yb = clip.audio[:, c["b"]].astype(np.float32).copy()
    edits = []
    for t, (text, audio, src) in zip(sorted(picked), chosen):
        p = clip.n(t)
        n = min(len(audio), len(yb) - p)
        yb[p:p + n] += audio[:n]
        np.clip(yb, -1.0, 1.0, out=yb)
        edits.append(_edit(op="insert", channel=c["b"], at_s=p / clip.sr, duration_s=n / clip.sr,
                           source_start_s=src,
                           note=f"backchannel {text or ''}".strip() + ("" if src is not None else " (synthesised)")))
    return (_stack(clip.audio[:, c["a"]].copy(), yb, c["a"]), edits,
            {"count": float(len(edits)), "texts": [b[0] for b in chosen],
             "synthesised": sum(b[2] is None for b in chosen), "onset_spacing": 1.0})


def excessive_backchannel(clip: Clip, c: dict, rng: Random,
                          pool: Sequence[tuple[str | None, np.ndarray, float | None]]
                          ) -> tuple[np.ndarray, list[Edit], dict]:
    """Insert 2-3 distinct backchannels of the listener (``pool``: text, audio, source start or
    None when synthesised in the listener's voice) where the listener was silent."""
    pool = list(pool)
    if len(pool) < 2:
        raise GenerationFailed(f"listener channel {c['b']} has {len(pool)} distinct backchannel(s); "
                               "need at least 2")
    k = min(rng.choice([2, 3]), len(pool))
    chosen = rng.sample(pool, k)
    free = [f for f in E.complement(clip.segs[c["b"]], c["w0"], c["w1"], BC_CLEAR_S)]
    for _ in range(200):
        places, last_end = [], -np.inf
        for b in sorted(chosen, key=lambda b: rng.random()):
            dur = len(b[1]) / clip.sr
            slots = [(max(a, last_end + BC_SPACING_S + BC_PLACE_MARGIN_S), e - dur) for a, e in free]
            slots = [s for s in slots if s[1] > s[0]]
            if not slots:
                break
            lens = np.array([s[1] - s[0] for s in slots])
            s = slots[int(np.searchsorted(np.cumsum(lens), rng.random() * lens.sum()))]
            at = rng.uniform(s[0], min(s[1], s[0] + 2.0))
            places.append((at, b))
            last_end = at + dur
        if len(places) == k:
            break
    else:
        raise GenerationFailed(f"could not place {k} backchannels >= {BC_SPACING_S} s apart in "
                               f"[{c['w0']:.2f}, {c['w1']:.2f}] s where the listener is silent")
    yb = clip.audio[:, c["b"]].copy()
    edits = []
    for at, (text, audio, src) in places:
        p = clip.n(at)
        yb = E.overwrite(yb, p, audio, clip.n_fade)     # crossfades in and out of the room tone
        edits.append(_edit(op="insert", channel=c["b"], at_s=p / clip.sr, duration_s=len(audio) / clip.sr,
                           source_start_s=src,
                           note=f"backchannel {text or ''}".strip() + ("" if src is not None else " (synthesised)")))
    return (_stack(clip.audio[:, c["a"]].copy(), yb, c["a"]), edits,
            {"count": float(len(places)), "texts": [b[0] for _, b in places],
             "synthesised": sum(b[2] is None for _, b in places)})
