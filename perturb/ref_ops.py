"""``turnnat-ref``: the public TurnNat generator's five edits on a whole dialogue, then its crop.

``scan`` finds candidates with :mod:`ref_rules` (80 ms frames); ``apply`` edits the whole
dialogue, returns the perturbed audio plus the edit's boundaries, anchors and the map from
edited time back to natural time, so :func:`crop_pair` can cut the perturbed clip with the
reference crop rule and the natural clip at the matching source bounds::

    late response / shift-instead-of-hold (insert d at p):  t_nat = t        (t <= p)
                                                                  = p        (p < t <= p + d)
                                                                  = t - d    (t > p + d)
    early entry (cut e after c):                            t_nat = t (t <= c), t + e after
    hold-instead-of-shift, excessive backchannel:           length unchanged, t_nat = t

The public script (``turnnat/scripts/build_perturbations.py``) is followed where the released
samples differ (they come from a later revision): hold-instead-of-shift replaces the responder
with room tone and keeps the clip's length (no compaction of the gap).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any

import numpy as np

from bargein.errors import GenerationFailed
from bargein.perturb import edits as E
from bargein.perturb import ref_edits as X
from bargein.perturb import ref_rules as R

SR_GUARD_S = 0.05
EE_GAP_S = (0.2, 1.0)            # early entry: the original silent gap
EE_ADVANCE_S = (1.2, 2.5)
LATE_DELAY_S = (1.2, 2.0)
HOLD_RESPONDER_S = (1.2, 8.0)    # CLI defaults of make-unnatural
HOLD_EDITED_GAP_MS = (500.0, 1500.0)
SHIFT_GAP_MS = (300.0, 1000.0)
SHIFT_INSERT_S = (1.0, 4.0)
SHIFT_GAIN = 0.9
SHIFT_AVOID_MS = 15000.0
BC_COUNT = 2
BC_MIN_GAP_MS = 800.0


@dataclass(frozen=True)
class ScanInput:
    """Both channels' reference turn segments (>= 250 ms and >= 40 ms pieces) and activity."""

    segs: tuple[tuple[R.RefSeg, ...], ...]
    segs_short: tuple[tuple[R.RefSeg, ...], ...]
    n_frames: int

    def vads(self, short: bool = False) -> tuple[np.ndarray, np.ndarray]:
        s = self.segs_short if short else self.segs
        return R.activity(s[0], self.n_frames), R.activity(s[1], self.n_frames)


def scan_input(x: np.ndarray, sr: int, texts: Sequence[Sequence[tuple[float, float, str]]] = ((), ()),
               probs: Sequence[np.ndarray] | None = None) -> ScanInput:
    """Run the reference turn VAD on both channels (one silero pass each)."""
    from bargein.audio.io import resample
    from bargein.audio.vad import silero_probs

    x16 = resample(x, sr, 16000) if sr != 16000 else x
    segs, short = [], []
    for ch in (0, 1):
        p = probs[ch] if probs is not None else silero_probs(np.ascontiguousarray(x16[:, ch]), 16000)
        for out, m in ((segs, R.MIN_PIECE_MS), (short, R.MIN_PIECE_MS_SHORT)):
            out.append(tuple(R.perturbation_segments(x16[:, ch], 16000, min_ms=m, probs=p, items=texts[ch])))
    return ScanInput(tuple(segs), tuple(short), R.n_frames(len(x), sr))


def seg_dict(g: R.RefSeg) -> dict:
    return {"start": g.start, "end": g.end, "start_s": g.start_s, "end_s": g.end_s, "text": g.text}


def seg_of(d: dict) -> R.RefSeg:
    return R.RefSeg(int(d["start"]), int(d["end"]), float(d["start_s"]), float(d["end_s"]), d.get("text", ""))


def candidates(x: np.ndarray, sr: int, si: ScanInput) -> dict[str, list[dict[str, Any]]]:
    """Every place each edit could go by the reference rules (times in dialogue seconds)."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in (
        "late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold",
        "excessive_backchannel")}
    segs, vads = si.segs, si.vads()
    a_, b_ = x[:, 0], x[:, 1]
    for ca, pre, post in R.alone_shifts(segs, vads):
        out["late_response"].append(dict(a=ca, b=1 - ca, a0=pre.start_s, a1=pre.end_s, b0=post.start_s,
                                          b1=post.end_s, pre=seg_dict(pre), post=seg_dict(post)))
    g = int(round(sr * SR_GUARD_S))
    for ca, pre, post in R.proper_shifts(segs, vads):
        gs, ge = pre.end_sample(sr), post.start_sample(sr)
        if not int(round(EE_GAP_S[0] * sr)) <= ge - gs <= int(round(EE_GAP_S[1] * sr)):
            continue
        nxt = [s for s in segs[ca] if s.start > post.end and R.substantive(s)]
        if not nxt:
            continue
        nx = min(nxt, key=lambda s: s.start)
        budget = max(0, nx.start_sample(sr) - g - (gs + g))
        hi = min(int(round(EE_ADVANCE_S[1] * sr)), max(0, ge - pre.start_sample(sr) - int(round(0.3 * sr))), budget)
        if hi < int(round(EE_ADVANCE_S[0] * sr)) or not X.pair_silent(a_, b_, gs, ge, sr):
            continue
        out["early_entry"].append(dict(a=ca, b=1 - ca, a0=pre.start_s, a1=pre.end_s, b0=post.start_s,
                                       b1=post.end_s, adv_hi=hi, pre=seg_dict(pre), post=seg_dict(post), next=seg_dict(nx)))
    for ca, pre, post, nx in R.shift_returns(segs, vads):
        if not (R.word_count(pre.text) >= 2 and R.word_count(post.text) >= 2 and R.word_count(nx.text) >= 2
                and R.distinct_text(pre, post) and not R.question_like(post)):
            continue
        if not HOLD_RESPONDER_S[0] <= (post.end_ms - post.start_ms) / 1000.0 <= HOLD_RESPONDER_S[1]:
            continue
        if not HOLD_EDITED_GAP_MS[0] <= nx.start_ms - pre.end_ms <= HOLD_EDITED_GAP_MS[1]:
            continue
        out["hold_instead_of_shift"].append(dict(a=ca, b=1 - ca, s=pre.end_s, e=post.start_s, t_a=nx.start_s,
                                                 bt1=post.end_s, pre=seg_dict(pre), post=seg_dict(post), next=seg_dict(nx)))
    short, svads = si.segs_short, si.vads(short=True)
    for ca, cur, nx in R.proper_holds(short, svads):
        if not (R.word_count(cur.text) >= 2 and R.word_count(nx.text) >= 2 and R.distinct_text(cur, nx)):
            continue
        gs, ge = cur.end_sample(sr), nx.start_sample(sr)
        gap_ms = round((ge - gs) * 1000.0 / sr, 1)
        if not SHIFT_GAP_MS[0] <= gap_ms <= SHIFT_GAP_MS[1] or not X.pair_silent(a_, b_, gs, ge, sr):
            continue
        avoid0 = max(0, cur.start - int(round(SHIFT_AVOID_MS / R.FRAME_MS)))
        avoid1 = nx.end + int(round(SHIFT_AVOID_MS / R.FRAME_MS))
        pool = [s for s in short[1 - ca]
                if R.word_count(s.text) >= 3 and R.substantive(s, min_frames=10, min_words=3)
                and (s.end < avoid0 or s.start > avoid1)
                and int(round(SHIFT_INSERT_S[0] * sr)) <= s.end_sample(sr) - s.start_sample(sr)
                <= int(round(SHIFT_INSERT_S[1] * sr))]
        if pool:
            out["shift_instead_of_hold"].append(dict(a=ca, b=1 - ca, s=cur.end_s, e=nx.start_s, cur=seg_dict(cur),
                                                     next=seg_dict(nx), sources=[seg_dict(s) for s in pool]))
    for cb in (0, 1):
        ca = 1 - cb
        for w in short[ca]:
            out["excessive_backchannel"].append(dict(a=ca, b=cb, w0=w.start_s, w1=w.end_s, window=seg_dict(w)))
    return out


def coverable(cands: dict[str, list[dict[str, Any]]], si: ScanInput, total_s: float) -> dict[str, list[dict[str, Any]]]:
    """The candidates that can pass the reference's scorer-coverage guard (see :func:`_coverable`)."""
    return {t: [c for c in v if _coverable(t, c, si, total_s)] for t, v in cands.items()}


def _coverable(kind: str, c: dict, si: ScanInput, total_s: float) -> bool:
    """The part of the reference's scorer-coverage guard that does not depend on the random
    draws (the reference rejects such a candidate and draws another): the first boundary (the
    first speaker's turn onset) >= 5 s, and for the edits that keep every later turn in place
    relative to the clip's end, the last boundary + 2 s inside the clip. The exact guard runs
    again on the edited clip (:func:`ref_edits.check_scorer_coverage`)."""
    first = seg_of(c["window"]) if kind == "excessive_backchannel" else seg_of(c.get("pre") or c["cur"])
    if first.start_ms - (X.SCORER_CONTEXT_S + X.SCORER_UNIT_PRE_S) * 1000.0 < 0.0:
        return False
    if kind in ("hold_instead_of_shift", "shift_instead_of_hold"):
        last = seg_of(c["next"]).end_ms
    elif kind == "late_response":
        post = seg_of(c["post"])
        nxt = next((s for s in si.segs[c["a"]] if s.start > post.end and R.substantive(s)), None)
        last = max(post.end_ms, nxt.end_ms if nxt is not None else -math.inf)
    else:
        return True
    return last + X.SCORER_FUTURE_S * 1000.0 <= total_s * 1000.0


def bc_frames(window: R.RefSeg, v_speaker: np.ndarray, v_listener: np.ndarray, clip_frames: int,
              rng: Random, count: int = BC_COUNT, min_gap_ms: float = BC_MIN_GAP_MS) -> list[int]:
    """Onset frames inside the speaker's turn where the listener stays silent for
    ``clip_frames`` frames, onsets >= max(clip_frames, ceil(800 / 80)) frames apart."""
    if window.dur < clip_frames:
        return []
    lo, hi = max(0, window.start), min(len(v_speaker), window.end + 1 - clip_frames)
    ok = [f for f in range(lo, hi) if v_speaker[f] > 0 and R.silent(v_listener, f, f + clip_frames)]
    gap = max(clip_frames, int(np.ceil(min_gap_ms / R.FRAME_MS)))
    got = X.pick_spaced(ok, count, gap, rng)
    return got if len(got) >= count else []


def source_pool(c: dict, x: np.ndarray, sr: int, bcs: Sequence[Any]) -> list[tuple[str | None, np.ndarray, float]]:
    """Every isolated backchannel of the listener (``c["b"]``) as (text, audio, source start):
    each is its own source, two with the same words included (the reference numbers its
    sources and never reuses one; it does not merge equal texts)."""
    return [(b.text, np.array(x[int(round(b.start_s * sr)):int(round(b.end_s * sr)), c["b"]], dtype=np.float32),
             b.start_s) for b in sorted(bcs, key=lambda b: b.start_s) if b.channel == c["b"]]


def last_clip_end(onsets: Sequence[int], clip_samples: Sequence[int], frame_len: int) -> int:
    """The frame after which the next turn is searched: the latest onset + that clip's own
    length in whole frames (clips assigned to the sorted onsets in pool order)."""
    return max(int(f) + max(1, int(np.ceil(n / float(frame_len)))) for f, n in zip(onsets, clip_samples))


@dataclass
class Applied:
    """A whole-dialogue edit: audio, edits, crop constraints and the edited -> natural map."""

    audio: np.ndarray
    edits: list[dict[str, Any]]
    params: dict[str, Any]
    boundaries_s: list[float]
    anchors_s: list[float]
    required_end_s: list[float] = field(default_factory=list)
    early_new_start_s: float | None = None
    source_required_end_s: float | None = None      # the natural clip covers this (response + 0.5 s)
    insert: tuple[float, float] | None = None       # (at, duration) of a length-growing insert
    cut: tuple[float, float] | None = None          # (at, duration) of a length-keeping shift

    def to_natural_ms(self, t_ms: float) -> float:
        """:meth:`to_natural` in ms, as the reference computes it: the insert/cut position and
        length taken at 0.1 ms resolution (``sample_to_ms``), the result not yet rounded."""
        if self.insert is not None:
            p, d = round(self.insert[0] * 1000.0, 1), round(self.insert[1] * 1000.0, 1)
            return t_ms if t_ms <= p else (p if t_ms <= p + d else t_ms - d)
        if self.cut is not None:
            c, e = round(self.cut[0] * 1000.0, 1), round(self.cut[1] * 1000.0, 1)
            return t_ms if t_ms <= c else t_ms + e
        return t_ms

    def to_natural(self, t: float) -> float:
        if self.insert is not None:
            p, d = self.insert
            return t if t <= p else (p if t <= p + d else t - d)
        if self.cut is not None:
            c, e = self.cut
            return t if t <= c else t + e
        return t


def _tone(x: np.ndarray, sr: int, segs: Sequence[R.RefSeg], near_s: float, n: int) -> np.ndarray:
    spans = [(g.start_s, g.end_s) for g in segs]
    return E.room_tone(x, sr, spans, near_s, n, int(round(0.012 * sr)))


def late_response(x: np.ndarray, sr: int, c: dict, si: ScanInput, rng: Random) -> Applied:
    pre, post = seg_of(c["pre"]), seg_of(c["post"])
    ca, cb = c["a"], c["b"]
    d = int(round(sr * rng.uniform(LATE_DELAY_S[0] * 1000, LATE_DELAY_S[1] * 1000) / 1000.0))
    p_a, p_b = pre.end_sample(sr), post.start_sample(sr)
    n = int(round(sr * X.SPLICE_MS / 1000.0))
    y = np.zeros((len(x) + d, 2), dtype=np.float32)
    y[:, ca] = X.insert(x[:, ca], p_a, d, _tone(x[:, ca], sr, si.segs[ca], pre.end_s, d + 2 * n), sr)
    y[:, cb] = X.insert(x[:, cb], p_b, d, _tone(x[:, cb], sr, si.segs[cb], post.start_s, d + 2 * n), sr)
    anchor = min(p_a, p_b) / sr
    ds = d / sr
    nxt = next((s for s in si.segs[ca] if s.start > post.end and R.substantive(s)), None)
    bounds = [pre.start_ms / 1000, pre.end_ms / 1000, (p_b + d) / sr, post.end_ms / 1000 + ds]
    if nxt is not None:
        bounds += [(nxt.start_sample(sr) + d) / sr, (nxt.end_sample(sr) + d) / sr]
    edits = [dict(op="insert_silence", channel=ca, at_s=p_a / sr, duration_s=ds, note="after the turn (60 ms splices)"),
             dict(op="insert_silence", channel=cb, at_s=p_b / sr, duration_s=ds,
                  note=f"response delayed by {ds:.3f} s (60 ms splices)")]
    return Applied(y, edits, {"delay_s": ds}, bounds, [anchor],
                   required_end_s=[post.end_ms / 1000 + ds + X_RESP_POST],
                   source_required_end_s=post.end_ms / 1000 + X_RESP_POST, insert=(anchor, ds))


X_RESP_POST = X.RESPONSE_POST_MS / 1000.0


def early_entry(x: np.ndarray, sr: int, c: dict, si: ScanInput, rng: Random) -> Applied:
    """The reference's synchronized cuts: A loses ``e`` of silence just after its offset, B just
    before its onset; both channels are padded at the end (length unchanged)."""
    pre, post, nx = seg_of(c["pre"]), seg_of(c["post"]), seg_of(c["next"])
    ca, cb = c["a"], c["b"]
    g = int(round(sr * SR_GUARD_S))
    e = rng.randint(int(round(EE_ADVANCE_S[0] * sr)), int(c["adv_hi"]))
    gs, ge = pre.end_sample(sr), post.start_sample(sr)
    a0, a1 = gs + g, gs + g + e
    b1 = ge - g
    b0 = b1 - e
    vads = si.vads()
    for ch, lo, hi, what in ((cb, b0, b1, "responder"), (ca, a0, a1, "speaker")):
        frame_ok = R.silent(vads[ch], int(np.floor(lo * 1000.0 / sr / R.FRAME_MS)),
                            int(np.ceil(hi * 1000.0 / sr / R.FRAME_MS)))
        if lo < 0 or hi > len(x) or not frame_ok or not X.channel_silent(x[:, ch], lo, hi, sr):
            raise GenerationFailed(f"early_entry (turnnat-ref): the {what} channel is not quiet enough "
                                   f"in [{lo / sr:.3f}, {hi / sr:.3f}] s for a {e / sr:.3f} s cut")
    y = np.zeros_like(x, dtype=np.float32)
    y[:, ca] = X.cut_and_append(x[:, ca], a0, a1, _tone(x[:, ca], sr, si.segs[ca], post.start_s, e), sr)
    y[:, cb] = X.cut_and_append(x[:, cb], b0, b1, _tone(x[:, cb], sr, si.segs[cb], post.start_s, e), sr)
    es = e / sr
    new_on = (post.start_sample(sr) - e) / sr
    dur = (post.end_sample(sr) - post.start_sample(sr)) / sr
    bounds = [pre.start_ms / 1000, pre.end_ms / 1000, new_on, new_on + dur,
              (nx.start_sample(sr) - e) / sr, (nx.end_sample(sr) - e) / sr]
    edits = [dict(op="remove_silence", channel=ca, at_s=a0 / sr, duration_s=es, source_start_s=a0 / sr,
                  note="silence after A's turn cut: A's later speech moves earlier"),
             dict(op="remove_silence", channel=cb, at_s=b0 / sr, duration_s=es, source_start_s=b0 / sr,
                  note=f"silence before B's response cut: response advanced by {es:.3f} s")]
    dur_ms = (post.end_ms - post.start_ms) / 1000.0          # the reference's response length
    return Applied(y, edits, {"advance_s": es}, bounds, [new_on],
                   required_end_s=[new_on + dur_ms + X_RESP_POST], early_new_start_s=new_on,
                   source_required_end_s=post.end_ms / 1000 + X_RESP_POST, cut=(b0 / sr, es))


def hold_instead_of_shift(x: np.ndarray, sr: int, c: dict, si: ScanInput, rng: Random) -> Applied:
    """The responder's turn (A's offset to A's next onset) replaced by its room tone."""
    pre, post, nx = seg_of(c["pre"]), seg_of(c["post"]), seg_of(c["next"])
    cb = c["b"]
    r0, r1 = pre.end_sample(sr), nx.start_sample(sr)
    y = np.array(x, dtype=np.float32, copy=True)
    y[:, cb] = X.replace_smooth(x[:, cb], r0, r1, _tone(x[:, cb], sr, si.segs[cb], pre.end_s, r1 - r0), sr)
    removed = (post.end_ms - post.start_ms) / 1000.0
    bounds = [pre.start_ms / 1000, pre.end_ms / 1000, post.start_ms / 1000, post.end_ms / 1000,
              nx.start_ms / 1000, nx.end_ms / 1000]
    edits = [dict(op="remove", channel=cb, at_s=r0 / sr, duration_s=(r1 - r0) / sr, source_start_s=r0 / sr,
                  note=f"responding turn ({removed:.3f} s) replaced by room tone; gap "
                       f"{(nx.start_ms - pre.end_ms) / 1000:.3f} s kept")]
    return Applied(y, edits, {"gap_s": (nx.start_ms - pre.end_ms) / 1000.0, "removed_turn_s": removed},
                   bounds, [post.start_ms / 1000])


def shift_instead_of_hold(x: np.ndarray, sr: int, c: dict, si: ScanInput, rng: Random) -> Applied:
    """A turn of the other speaker (1-4 s, from >= 15 s away) inserted at the middle of the hold
    gap: both channels open with 60 ms splices, the turn (12 ms edge fades, gain 0.9) replaces
    the inserted room tone."""
    cur, nx = seg_of(c["cur"]), seg_of(c["next"])
    ca, cb = c["a"], c["b"]
    src = seg_of(rng.choice(c["sources"]))
    clip = np.array(x[src.start_sample(sr):src.end_sample(sr), cb], dtype=np.float32)
    if clip.size == 0:
        raise GenerationFailed("shift_instead_of_hold (turnnat-ref): empty source turn")
    X.edge_fades(clip, 0, len(clip), sr)
    gs, ge = cur.end_sample(sr), nx.start_sample(sr)
    p = gs + max(0, (ge - gs) // 2)
    d = src.end_sample(sr) - src.start_sample(sr)
    y = np.zeros((len(x) + d, 2), dtype=np.float32)
    for ch in (0, 1):       # the reference's fill is only d long: its last fade runs out of zeros
        y[:, ch] = X.insert(x[:, ch], p, d, _tone(x[:, ch], sr, si.segs_short[ch], p / sr, d), sr)
    seg = y[p:p + len(clip), cb]
    seg[:] = SHIFT_GAIN * clip[:len(seg)]
    np.clip(y[:, cb], -1.0, 1.0, out=y[:, cb])        # the whole channel, as the reference's paste
    ds = d / sr
    bounds = [cur.start_ms / 1000, cur.end_ms / 1000, p / sr, (p + d) / sr,
              nx.start_ms / 1000 + ds, nx.end_ms / 1000 + ds]
    edits = [dict(op="insert", channel=cb, at_s=p / sr, duration_s=ds, source_start_s=src.start_s,
                  note="turn of the other speaker inserted into a hold (60 ms splices)"),
             dict(op="insert_silence", channel=ca, at_s=p / sr, duration_s=ds)]
    return Applied(y, edits, {"inserted_turn_s": ds, "hold_gap_s": (ge - gs) / sr, "at_s": p / sr},
                   bounds, [p / sr], required_end_s=[nx.end_ms / 1000 + ds + X_RESP_POST],
                   source_required_end_s=nx.end_ms / 1000 + X_RESP_POST, insert=(p / sr, ds))


def excessive_backchannel(x: np.ndarray, sr: int, c: dict, si: ScanInput, rng: Random,
                          pool: Sequence[tuple[str | None, np.ndarray, float | None]]) -> Applied:
    """Two distinct backchannels of the listener added (no fades) at 80 ms frame onsets inside
    one speaker turn, onsets >= max(longest clip, 0.8 s) apart, the listener silent under each."""
    pool = list(pool)
    if len(pool) < BC_COUNT:
        raise GenerationFailed(f"listener channel {c['b']} has {len(pool)} distinct backchannel(s); need {BC_COUNT}")
    frame_len = int(round(sr * R.FRAME_MS / 1000.0))
    clip_frames = max(int(np.ceil(len(a) / frame_len)) for _, a, _ in pool)
    sv = si.vads(short=True)
    picked = bc_frames(seg_of(c["window"]), sv[c["a"]], sv[c["b"]], clip_frames, rng)
    if not picked:
        raise GenerationFailed(f"no {BC_COUNT} listener-silent onsets >= 0.8 s apart in the speaker's turn "
                               f"[{c['w0']:.2f}, {c['w1']:.2f}] s")
    rng.shuffle(pool)
    y = np.array(x, dtype=np.float32, copy=True)
    edits = []
    for f, (text, audio, src) in zip(picked, pool):
        p = f * frame_len
        y[:, c["b"]] = X.add(y[:, c["b"]], audio, p)
        n = min(len(audio), len(y) - p)
        edits.append(dict(op="insert", channel=c["b"], at_s=p / sr, duration_s=n / sr, source_start_s=src,
                          note=f"backchannel {text or ''}".strip() + ("" if src is not None else " (synthesised)")))
    ons = [e["at_s"] for e in edits]
    bounds = [c["w0"], c["w1"]] + [t for e in edits for t in (e["at_s"], e["at_s"] + e["duration_s"])]
    # the next turn is searched after the end of each inserted clip (its own length in frames)
    last = last_clip_end(picked, [len(a) for _, a, _ in pool], frame_len)
    nxt = [g for ch in (0, 1) for g in si.segs_short[ch] if g.start > last and R.substantive(g)]
    if nxt:
        g = min(nxt, key=lambda g: g.start)
        bounds += [g.start_ms / 1000, g.end_ms / 1000]
    return Applied(y, edits, {"count": float(len(edits)), "texts": [b[0] for b in pool[:len(edits)]],
                              "synthesised": sum(b[2] is None for b in pool[:len(edits)]), "onset_spacing": 1.0},
                   bounds, [ons[0]])


APPLY = {"late_response": late_response, "early_entry": early_entry,
         "hold_instead_of_shift": hold_instead_of_shift, "shift_instead_of_hold": shift_instead_of_hold}


def crop_pair(nat_full: np.ndarray, app: Applied, sr: int, rng: Random) -> tuple[tuple[int, int], tuple[int, int]]:
    """(perturbed crop, natural crop) in samples: the reference crop of the edited audio, and
    its bounds mapped back to the natural timeline (the natural end extended to cover the
    original response + 0.5 s)."""
    st, en = X.choose_crop(app.audio, sr, rng, boundaries_s=app.boundaries_s, anchors_s=app.anchors_s,
                           required_end_s=app.required_end_s, early_new_start_s=app.early_new_start_s)
    return (st, en), natural_bounds(app, st, en, sr, len(nat_full))


def natural_bounds(app: Applied, st: int, en: int, sr: int, n_total: int) -> tuple[int, int]:
    """The natural clip (samples) matching the perturbed crop [st, en): the crop's ends in ms
    (0.1 ms), mapped back through the edit, the end extended to the original response + 0.5 s,
    rounded to 0.1 ms and turned into samples, as the reference's natural-reference crop."""
    ns = app.to_natural_ms(round(st * 1000.0 / sr, 1))
    ne = app.to_natural_ms(round(en * 1000.0 / sr, 1))
    if app.source_required_end_s is not None:
        ne = max(ne, round(app.source_required_end_s * 1000.0, 1))
    ns, ne = round(max(0.0, ns), 1), round(max(0.0, ne), 1)        # the natural crop in 0.1 ms
    n0 = max(0, min(n_total, int(round(ns * sr / 1000.0))))
    n1 = max(n0, min(n_total, int(round(ne * sr / 1000.0))))
    return n0, n1


__all__ = ["ScanInput", "scan_input", "candidates", "Applied", "APPLY", "excessive_backchannel",
           "crop_pair", "natural_bounds", "bc_frames", "source_pool", "last_clip_end",
           "coverable", "seg_of", "seg_dict"]
