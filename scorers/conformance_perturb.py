"""``turnnat-ref`` perturbation conformance: hand-built timelines and audio, values by hand.

Every case names the lines of the public generator it reproduces
(``TedZhangHao/turn-taking-naturalness`` ``turnnat/scripts/build_perturbations.py``, abbreviated
``BP``); the expected values are worked out in the comments from that definition, not taken
from running it. :mod:`bargein.scorers.conformance` counts them in ``turnnat``.
"""

from __future__ import annotations

import math
from random import Random
from typing import Any

import numpy as np

BP = "TedZhangHao/turn-taking-naturalness turnnat/scripts/build_perturbations.py"
SR = 16000


# ------------------------------------------------------------------------------- turn VAD
# silero spans in samples -> seconds (0.1 s): 1.102/2.397 -> 1.1/2.4; 2.694/3.501 -> 2.7/3.5;
# 4.049/5.299 -> 4.0/5.3; 5.706/6.0 -> 5.7/6.0; 6.306/6.5 -> 6.3/6.5 (0.2 s).
# frames: floor(s * 1000 / 80), ceil(e * 1000 / 80) - 1: (13, 29) (33, 43) (50, 66) (71, 74) (78, 81)
# merge when start - previous end - 1 <= ceil(180 / 80) = 3: 33 - 29 - 1 = 3 merges; 50 - 43 - 1 = 6
# and 71 - 66 - 1 = 4 do not; 78 - 74 - 1 = 3 merges, but only when 0.2 s pieces are kept (40 ms).
_VAD_SPANS = [(17632, 38350), (43100, 56020), (64790, 84780), (91300, 96000), (100900, 104000)]


def _vad(min_ms: float):
    def go():
        from bargein.perturb import ref_rules as R
        segs = R.to_frames(R.seconds_1dp(_VAD_SPANS), min_ms=min_ms)
        return {"segs": [(g.start, g.end, g.start_s, g.end_s) for g in segs]}
    return go


# --------------------------------------------------------------------------- candidates
# frames (80 ms). A: a1 0-24, a2 48-70, a3 74-100, a4 130-160, a6 250-280;
#                 B: b1 27-45, b2 103-113 (11 frames), b3 148 (one frame), b4 163-190, b6 282-300.
# proper shift (>= 2 silent frames, 13 frames alone each side, turns >= 12 frames):
#   a1->b1 (silence 25-26), b1->a2 (46-47), b4->a6 (191-249); a4->b4 fails (b3 is in A's last
#   13 frames 148-160, though not in the last 12); a6->b6 fails (1 silent frame); b2 is not
#   substantive.
# late response (turns >= 13, alone 13, overlap <= 3 frames, a positive gap mutually silent):
#   the three above plus a6->b6 (1 silent frame is enough here).
# hold: a2->a3 (silence 71-73, A alone 58-70 and 74-86); every other pair has the other speaker
#   inside the gap.
# shift-return (no overlap, gap >= 2 frames, the next substantive turn is the first speaker's,
#   alone 13 frames): a1->b1->a2 and b4->a6->b6; b1->a2 is followed by a3 (A), not B.
_A = [(0, 24), (48, 70), (74, 100), (130, 160), (250, 280)]
_B = [(27, 45), (103, 113), (148, 148), (163, 190), (282, 300)]


def _timeline():
    from bargein.perturb import ref_rules as R
    segs = [[R.RefSeg(a, b, a * 0.08, (b + 1) * 0.08) for a, b in ch] for ch in (_A, _B)]
    return segs, [R.activity(s, 310) for s in segs]


def _spans(c):
    return [(ch, *[(g.start, g.end) for g in gs]) for ch, *gs in c]


def _candidates():
    from bargein.perturb import ref_rules as R
    segs, v = _timeline()
    return {"proper_shifts": _spans(R.proper_shifts(segs, v)), "late": _spans(R.alone_shifts(segs, v)),
            "holds": _spans(R.proper_holds(segs, v)), "returns": _spans(R.shift_returns(segs, v))}


def _substantive():
    # >= 12 frames; with text also >= 4 words and not backchannel-like (a phrase of the list, or
    # <= 14 frames, <= 4 words and starting "yeah"/"ok"/...; never with "?" or a wh-word).
    from bargein.perturb import ref_rules as R
    cases = {"bc_start_4_words": (12, "yeah I think so"), "five_words": (12, "I would like to book"),
             "two_words": (12, "sure thing"), "no_text_12": (11, ""), "no_text_11": (10, ""),
             "wh_word": (12, "what do you think right"), "long_yeah": (20, "yeah I think so")}
    return {k: R.substantive(R.RefSeg(0, e, 0.0, (e + 1) * 0.08, t)) for k, (e, t) in cases.items()}


def _isolated_bc():
    # listener: 30-33 "yeah" (silent 17-29 before and 34-58 after, speaker 10-75 talking before
    # and during: kept); 70-72 "mhm" (listener back at 80, within 25 frames: no); 80-95 (16 > 13
    # frames: no); 130-131 "uh-huh" (speaker 131-160 silent in 117-129 before it: no).
    from bargein.perturb import ref_rules as R
    lis = [R.RefSeg(30, 33, 2.4, 2.72, "yeah"), R.RefSeg(70, 72, 5.6, 5.84, "mhm"),
           R.RefSeg(80, 95, 6.4, 7.68, "I see what you mean there"), R.RefSeg(130, 131, 10.4, 10.56, "uh-huh")]
    spk = [R.RefSeg(10, 75, 0.8, 6.08), R.RefSeg(131, 160, 10.48, 12.88)]
    got = R.isolated_backchannels(lis, R.activity(lis, 200), R.activity(spk, 200))
    return {"kept": [(g.start, g.end) for g in got]}


def _noise_stereo(spans: list[tuple[int, float, float]], dur_s: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros((int(dur_s * SR), 2), dtype=np.float32)
    for ch, a, b in spans:
        x[int(round(a * SR)):int(round(b * SR)), ch] = 0.2 * rng.standard_normal(int(round(b * SR)) - int(round(a * SR)))
    return x


def _ee_scan(a_turn: tuple[float, float], b_turn: tuple[float, float], a_next: tuple[float, float]):
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R
    spans = [(0, *a_turn), (1, *b_turn), (0, *a_next)]
    x = _noise_stereo(spans, 20.0)
    segs = tuple(tuple(R.to_frames([(a, b) for ch, a, b in spans if ch == c])) for c in (0, 1))
    si = ref_ops.ScanInput(segs, segs, R.n_frames(len(x), SR))
    return x, si


def _early_candidates():
    # A 2.0-6.0, B 6.5-9.0, A 12.0-14.0: gap 0.5 s in [0.2, 1.0]; advance <= min(2.5 s,
    #   6.5 - 2.0 - 0.3 = 4.2 s, 12.0 - 0.05 - (6.0 + 0.05) = 5.9 s) = 2.5 s = 40000 samples.
    # A 5.0-6.0, B 6.5-9.0: 6.5 - 5.0 - 0.3 = 1.2 s = 19200 samples (exactly the minimum advance).
    # A 4.9-6.0, B 6.2-9.0 (gap 0.2 s, frames 75-76 silent: a proper shift): 6.2 - 4.9 - 0.3 =
    #   1.0 s < 1.2 s -> no early-entry candidate.
    from bargein.perturb import ref_ops
    out = {}
    for name, a, b in (("wide", (2.0, 6.0), (6.5, 9.0)), ("tight", (5.0, 6.0), (6.5, 9.0)),
                       ("short", (4.9, 6.0), (6.2, 9.0))):
        x, si = _ee_scan(a, b, (12.0, 14.0))
        c = ref_ops.candidates(x, SR, si)
        out[name] = [int(k["adv_hi"]) for k in c["early_entry"]]
    from bargein.perturb import ref_rules as R
    x, si = _ee_scan((4.9, 6.0), (6.2, 9.0), (12.0, 14.0))
    out["short_is_proper_shift"] = len(R.proper_shifts(si.segs, si.vads())) >= 1
    return out


def _onsets(sig: np.ndarray) -> list[float]:
    fr = (np.sqrt((sig[: len(sig) // 160 * 160].astype(np.float64).reshape(-1, 160) ** 2).mean(1)) > 0.01)
    d = np.diff(np.concatenate([[0], fr.astype(int)]))
    return [round(i * 0.01, 2) for i in np.flatnonzero(d == 1)]


def _early_entry():
    # A 2.0-6.0, B 6.5-9.0, A 12.0-14.0, B 15.0-16.5 on noise. With the advance range pinned to
    # 1.2 s (adv_hi = 19200) the cut is 19200 samples: A loses [6.05, 7.25), B [5.25, 6.45);
    # B's response 6.5 -> 5.3 (inside A's turn), A 12.0 -> 10.8, B 15.0 -> 13.8; length kept.
    from bargein.perturb import ref_ops
    spans = [(0, 2.0, 6.0), (1, 6.5, 9.0), (0, 12.0, 14.0), (1, 15.0, 16.5)]
    x = _noise_stereo(spans, 20.0, seed=2)
    from bargein.perturb import ref_rules as R
    segs = tuple(tuple(R.to_frames([(a, b) for ch, a, b in spans if ch == c])) for c in (0, 1))
    si = ref_ops.ScanInput(segs, segs, R.n_frames(len(x), SR))
    c = next(k for k in ref_ops.candidates(x, SR, si)["early_entry"] if k["a"] == 0)
    c = dict(c, adv_hi=19200)
    app = ref_ops.early_entry(x, SR, c, si, Random(0))
    return {"length_unchanged": len(app.audio) == len(x), "advance_s": app.params["advance_s"],
            "a_onsets": _onsets(app.audio[:, 0]), "b_onsets": _onsets(app.audio[:, 1]),
            "natural_of_13_8": round(app.to_natural(13.8), 6)}


# ----------------------------------------------------------------- excessive backchannel
def _bc_frames():
    # A's turn frames 25-149 (2.0-12.0 s), B active 75-81; clips of 0.4 s = 5 frames. Legal
    # onsets f in [25, 145) with B silent in [f, f + 5): f <= 70 or f >= 82; spacing
    # max(5, ceil(800 / 80) = 10) frames. A short turn 25-40 with B at 30-31 leaves
    # {25, 32, 33, 34, 35}: no two 10 frames apart -> nothing. A turn 25-40 with B at 30-34
    # leaves exactly {25, 35}, 10 frames apart -> [25, 35].
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R
    w = R.RefSeg(25, 149, 2.0, 12.0)
    va, vb = R.activity([w], 200), R.activity([R.RefSeg(75, 81, 6.0, 6.56)], 200)
    got = ref_ops.bc_frames(w, va, vb, 5, Random(4))
    legal = all((25 <= f <= 70 or 82 <= f < 145) for f in got)
    w2 = R.RefSeg(25, 40, 2.0, 3.28)
    none = ref_ops.bc_frames(w2, R.activity([w2], 60), R.activity([R.RefSeg(30, 31, 2.4, 2.56)], 60), 5, Random(4))
    w3 = R.RefSeg(25, 40, 2.0, 3.28)
    exact = ref_ops.bc_frames(w3, R.activity([w3], 60), R.activity([R.RefSeg(30, 34, 2.4, 2.8)], 60), 5, Random(4))
    return {"count": len(got), "legal": legal, "spacing_ok": abs(got[1] - got[0]) >= 10 if len(got) == 2 else False,
            "no_room": none, "exactly_ten_apart": exact}


def _bc_add():
    # the two clips are added at frame onsets (multiples of 1280 samples) with no fade: the
    # difference output - input is exactly the clip there and zero elsewhere.
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R
    x = _noise_stereo([(0, 2.0, 12.0), (1, 6.0, 6.5)], 20.0, seed=1)
    segs = (tuple(R.to_frames([(2.0, 12.0)])), tuple(R.to_frames([(6.0, 6.5)])))
    si = ref_ops.ScanInput(segs, segs, R.n_frames(len(x), SR))
    w = segs[0][0]
    c = dict(a=0, b=1, w0=w.start_s, w1=w.end_s, window=ref_ops.seg_dict(w))
    bc1, bc2 = np.full(int(0.3 * SR), 0.1, np.float32), np.full(int(0.4 * SR), -0.1, np.float32)
    app = ref_ops.excessive_backchannel(x, SR, c, si, Random(3), [("yeah", bc1, 20.0), ("right", bc2, 21.0)])
    diff = app.audio[:, 1] - x[:, 1]
    rest = diff.copy()
    exact = True
    for e in app.edits:
        p = int(round(e["at_s"] * SR))
        n = int(round(e["duration_s"] * SR))
        want = bc1 if "yeah" in e["note"] else bc2
        exact &= bool(np.allclose(diff[p:p + n], want[:n], atol=1e-6))
        rest[p:p + n] = 0.0
    ons = sorted(int(round(e["at_s"] * SR)) for e in app.edits)
    return {"count": len(app.edits), "on_frame_grid": all(o % 1280 == 0 for o in ons),
            "onset_gap_ok": ons[1] - ons[0] >= 0.8 * SR, "added_without_fades": exact,
            "untouched_elsewhere": not np.any(np.abs(rest) > 1e-7), "channel_a_untouched":
            bool(np.array_equal(app.audio[:, 0], x[:, 0]))}


# ---------------------------------------------------------------------------- splices
def _insert():
    # x = ones(2000), insert 500 zeros at 1000 with 60 ms (960-sample) fades: length 2500;
    # x[:40] unchanged, fade-out cos over [40, 1000) (starts at cos 0 = 1, ends at cos(pi/2) = 0),
    # the 500 fill samples, fade-in sin over [1500, 2460) (0 -> 1), then x[1960:] at 2460.
    from bargein.perturb import ref_edits as X
    x = np.ones(2000, dtype=np.float32)
    y = X.insert(x, 1000, 500, np.zeros(500 + 2 * 960, np.float32), SR)
    return {"length": len(y), "before": float(y[39]), "fade_out_first": float(y[40]),
            "fade_out_last": round(float(y[999]), 6), "fill_zero": bool(np.all(y[1000:1500] == 0)),
            "fade_in_first": round(float(y[1500]), 6), "fade_in_last": round(float(y[2459]), 6),
            "after_moved": bool(np.array_equal(y[2460:], x[1960:]))}


def _cut():
    # cut [1000, 1500) from a ramp, append 500 zeros: same length; y[1320 + k] = x[1820 + k]
    # (after the 40 ms fade window [680, 1320)), the tail is the fill; before 680 nothing moves.
    from bargein.perturb import ref_edits as X
    x = np.arange(4000, dtype=np.float32) / 4000
    y = X.cut_and_append(x, 1000, 1500, np.zeros(500, np.float32), SR)
    return {"length": len(y), "before": bool(np.array_equal(y[:680], x[:680])),
            "after_moved": bool(np.array_equal(y[1320:3500], x[1820:4000])),
            "tail_fill": bool(np.all(y[3500:] == 0)),
            "fade_len": int(np.count_nonzero(y[680:872] != x[680:872]))}


def _loudness():
    # ch0 0.1, ch1 0.05 constant: stereo RMS sqrt((0.01 + 0.0025) / 2) = 0.0790569, gain to
    # 0.1 (-20 dBFS) = 1.2649111; peak 0.1265 < 10^(-1/20) = 0.891: ch0 0.1264911, ch1 0.0632456
    # (the 2:1 ratio kept: one gain for the file). A 0.95 click limits the gain to 0.891 / 0.95.
    from bargein.perturb import ref_edits as X
    x = np.stack([np.full(1000, 0.1, np.float32), np.full(1000, 0.05, np.float32)], 1)
    y, g = X.normalize_stereo(x)
    z = x.copy()
    z[10, 0] = 0.95
    _, g2 = X.normalize_stereo(z)
    return {"gain": g, "ch0": float(y[0, 0]), "ch1": float(y[0, 1]), "peak_limited_gain": g2}


# ---------------------------------------------------------------------------------- crop
def _crop_audio(islands: list[tuple[float, float]]) -> np.ndarray:
    x = np.full((60 * SR, 2), 0.1, dtype=np.float32)
    x[1::2] *= -1.0
    for a, b in islands:
        x[int(round(a * SR)):int(round(b * SR))] = 0.0
    return x


def _crop(islands, rng_seed=0):
    def go():
        from bargein.errors import GenerationFailed
        from bargein.perturb import ref_edits as X
        try:
            st, en = X.choose_crop(_crop_audio(islands), SR, Random(rng_seed), boundaries_s=[20.0, 22.0],
                                   anchors_s=[21.0])
        except GenerationFailed:
            return {"crop": None}
        return {"crop": (st, en)}
    return go


# Boundaries 20-22 s, anchor 21 s: the scorer needs 5 s before 20 (start <= 15 s) and 2 s after
# 22 (end >= 24 s); mid = (21 + 24) / 2 = 22.5 s. Starts every 80 ms from 0 with 350 ms of
# silence after: in [9.0, 9.5] 9.04, 9.12; in [14.0, 14.5] 14.0, 14.08. Ends every 80 ms from
# 24.35 with 350 ms before: 30.35, 30.43, 36.35, 36.43. 20-25 s long: 9.0x->30.4x (frac
# 0.63) and 14.0x->36.4x (frac 0.38). Random(0): target = min(25, 3 + 18 + 12 x 0.8444) = 25 s,
# frac target 0.25 + 0.5 x 0.7580 = 0.6290; scores |d - 25| + 1.5 |frac - 0.629|: 9.04->30.43
# 3.61, 14.0->36.43 2.57 + 0.375 = 2.945 (best) -> (224000, 582880).
_ISLANDS = [(9.0, 9.5), (14.0, 14.5), (30.0, 30.5), (36.0, 36.5)]


# ------------------------------------------------------------- audit of the second shift
def _vad_end_capped():
    # silero >= 6.0 (the reference asks for silero-vad >= 5.1, which installs 6.x) rounds a
    # span to 0.1 s and caps the end at the audio's length: a span 16000-160960 of a 160960-
    # sample file is 1.0-10.06 s, not 1.0-10.1 s; frames floor(1000 / 80) = 12 and
    # ceil(10060 / 80) - 1 = 125 (10.1 s would give 126).
    from bargein.perturb import ref_rules as R
    sec = R.seconds_1dp([(16000, 160960)], 16000, 160960)
    g = R.to_frames(sec)[0]
    return {"seconds": sec, "frames": (g.start, g.end), "end_sample": g.end_sample(SR)}


def _piece_text():
    # pieces 1.0-2.0 and 2.2-3.0 s -> frames (12, 24) and (27, 37): gap 27 - 24 - 1 = 2 <= 3,
    # merged. Items X 0.9-1.5 "well", Y 1.5-2.5 "I think", Z 2.5-3.1 "so yes". Piece 1 overlaps
    # X and Y (min(2.0, 2.5) = 2.0 > max(1.0, 1.5)) -> "well I think"; piece 2 overlaps Y
    # (min(3.0, 2.5) = 2.5 > 2.2) and Z -> "I think so yes". Merge: "well i think" is not in
    # "i think so yes" nor the reverse -> "well I think I think so yes" (7 words). A 0.2 s piece
    # 3.3-3.5 with its item "okay" is dropped (< 250 ms) before the text is attached.
    from bargein.perturb import ref_rules as R
    items = [(0.9, 1.5, "well"), (1.5, 2.5, "I think"), (2.5, 3.1, "so yes"), (3.3, 3.5, "okay")]
    segs = R.pieces_to_segments([(1.0, 2.0), (2.2, 3.0), (3.3, 3.5)], items=items)
    return {"segs": [(g.start, g.end, g.text) for g in segs], "words": R.word_count(segs[0].text)}


def _coverage():
    # every candidate: first boundary - (3 + 2) s >= 0 and last boundary + 2 s <= the edited
    # clip's length, checked before (and without) the crop. A 20 s clip is not cropped:
    # boundaries 6-17 s pass -> (0, 320000); 4.0 s fails the left guard; 18.5 + 2 > 20 fails the
    # right. In a 60 s clip 4.9-22 s fails although a crop could be found.
    from bargein.errors import GenerationFailed
    from bargein.perturb import ref_edits as X
    out = {}
    for name, dur, b in (("ok_short", 20.0, [6.0, 17.0]), ("left_short", 20.0, [4.0, 10.0]),
                         ("right_short", 20.0, [6.0, 18.5]), ("left_long", 60.0, [4.9, 22.0])):
        x = _crop_audio([(9.0, 9.5), (14.0, 14.5), (30.0, 30.5), (36.0, 36.5)])[: int(dur * SR)]
        try:
            out[name] = X.choose_crop(x, SR, Random(0), boundaries_s=b, anchors_s=[b[0] + 1.0])
        except GenerationFailed:
            out[name] = None
    return out


def _coverage_scan():
    # A 3.0-6.0, B 6.5-9.0, A 12.0-14.0 in 20 s (frames A 37-74, 150-174; B 81-112).
    #   late response A -> B starts at 3.0 s (< 5 s of context): dropped; B -> A at 6.5 s, its
    #   last boundary A's 14.0 s end (B has no later turn), 16 <= 20: kept. Early entry: only
    #   A -> B has a 0.2-1.0 s gap, dropped. Excessive backchannel windows at 12.0 (A) and 6.5
    #   (B) kept, 3.0 dropped.
    # The same 4 s later (A 7.0-10.0, B 10.5-13.0, A 16.0-18.0): late A -> B (last boundary A's
    #   next turn end 18.0, 18 + 2 = 20 <= 20) and B -> A kept; early entry A -> B kept (its end
    #   guard depends on the drawn advance: checked after the edit); windows 7.0, 16.0, 10.5.
    # A hold whose next turn ends at 19.0 s in a 20 s file (19 + 2 > 20) is dropped; 17.5: kept.
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R

    def first(t, c):
        return ref_ops.seg_of(c["window"] if t == "excessive_backchannel" else c.get("pre") or c["cur"])

    out = {}
    for name, off in (("early_in_file", 0.0), ("later", 4.0)):
        x, si = _ee_scan((3.0 + off, 6.0 + off), (6.5 + off, 9.0 + off), (12.0 + off, 14.0 + off))
        c = ref_ops.coverable(ref_ops.candidates(x, SR, si), si, len(x) / SR)
        out[name] = {t: sorted((k["a"], round(first(t, k).start_s, 2)) for k in v) for t, v in c.items() if v}
    for name, end in (("hold_tail", 19.0), ("hold_inside", 17.5)):
        segs = (tuple(R.to_frames([(6.0, 8.0), (8.5, end)])), ())
        si = ref_ops.ScanInput(segs, segs, R.n_frames(20 * SR, SR))
        c = {"hold_instead_of_shift": [dict(a=0, b=1, pre=ref_ops.seg_dict(segs[0][0]), post=ref_ops.seg_dict(segs[0][0]),
                                            next=ref_ops.seg_dict(segs[0][1]))]}
        out[name] = len(ref_ops.coverable(c, si, 20.0)["hold_instead_of_shift"])
    return out


def _bc_sources_and_next_turn():
    # sources: every isolated backchannel of the listener (channel 1) is its own source, two
    # "yeah"s included: 2.0-2.3 s and 9.0-9.4 s -> 4800 and 6400 samples (channel 0's is not).
    # next-turn search: onsets [10, 40] with clips of 16000 and 4800 samples (13 and 4 frames of
    # 1280) end at max(10 + 13, 40 + 4) = 44, not 40 + 13 = 53.
    from types import SimpleNamespace as NS

    from bargein.perturb import ref_ops
    x = _noise_stereo([(0, 1.0, 12.0), (1, 2.0, 2.3), (1, 9.0, 9.4)], 14.0, seed=5)
    bcs = [NS(channel=1, start_s=9.0, end_s=9.4, text="yeah"), NS(channel=1, start_s=2.0, end_s=2.3, text="yeah"),
           NS(channel=0, start_s=5.0, end_s=5.2, text="mhm")]
    pool = ref_ops.source_pool(dict(a=0, b=1), x, SR, bcs)
    return {"sources": [(t, len(a), s) for t, a, s in pool],
            "last_frame": ref_ops.last_clip_end([10, 40], [16000, 4800], 1280)}


def _shift_insert_clips_channel():
    # shift-instead-of-hold pastes the turn and clips the *whole* inserted channel to [-1, 1]
    # (paste_replace): a 1.5 sample at 1.0 s on channel 1, far before the insert, becomes 1.0
    # (and moves nowhere: the insert is at the hold gap's middle, 20.5 s).
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R
    spans = [(0, 18.0, 20.0), (0, 21.0, 23.0), (1, 2.0, 4.0)]
    x = _noise_stereo(spans, 30.0, seed=6)
    x[SR, 1] = 1.5
    segs = tuple(tuple(R.to_frames([(a, b) for ch, a, b in spans if ch == c])) for c in (0, 1))
    si = ref_ops.ScanInput(segs, segs, R.n_frames(len(x), SR))
    c = dict(a=0, b=1, cur=ref_ops.seg_dict(segs[0][0]), next=ref_ops.seg_dict(segs[0][1]),
             sources=[ref_ops.seg_dict(segs[1][0])])
    app = ref_ops.shift_instead_of_hold(x, SR, c, si, Random(0))
    return {"clipped": float(app.audio[SR, 1]), "at_s": app.params["at_s"]}


def _crop_grid_0p1ms():
    # 60 s clip, silent islands 15.0-15.5 s and 36.0-36.5 s; boundaries 21 and 28 s, anchor 22 s,
    # required end 480001 samples = 30000.0625 ms, stored as 30000.1 ms -> sample 480002 (the
    # reference keeps ms at 0.1 ms). s_lo = 480002 - 400000 = 80002; starts every 1280 with
    # 350 ms (5600) of silence after, inside [240000, 248000): 240002, 241282. e_lo = 480002, ends
    # from 485602 every 1280 with 350 ms before, inside [576000, 584000): 581602, 582882.
    # target 25 s (8 s span + U(18, 30) > 25), frac target 0.25 + 0.5 x 0.75795 = 0.62898; mid
    # (352000 + 480002) // 2 = 416001. Scores |d - 25 s| + 1.5 |frac - 0.629|: 240002->581602
    # 3.650 + 0.171, 240002->582882 3.570 + 0.174 = 3.744 (best), 241282->... >= 3.826.
    from bargein.perturb import ref_edits as X
    x = _crop_audio([(15.0, 15.5), (36.0, 36.5)])
    return {"crop": X.choose_crop(x, SR, Random(0), boundaries_s=[21.0, 28.0], anchors_s=[22.0],
                                  required_end_s=[480001 / SR])}


def _rms_fallback():
    # silero finds nothing (window probabilities all 0) -> the reference's RMS VAD on 80 ms
    # frames (1280 samples): 0.01 everywhere (RMS 0.01 < 0.015), 0.02 in 0.4-1.2 s (frames 5-14,
    # RMS 0.02), 100 samples of 0.5 after 2.0 s in a zero-padded last frame (RMS sqrt(100 x 0.25
    # / 1280) = 0.14): segments (5, 14) 0.4-1.2 s and (25, 25) 2.0-2.08 s, no text.
    from bargein.perturb import ref_rules as R
    x = np.full(32100, 0.01, dtype=np.float32)
    x[6400:19200] = 0.02
    x[32000:] = 0.5
    segs = R.perturbation_segments(x, SR, probs=np.zeros(63))
    return {"segs": [(g.start, g.end, round(g.start_s, 6), round(g.end_s, 6), g.text) for g in segs]}


def _natural_bounds():
    # late response at 16 kHz: anchor sample 160001 = 10000.0625 ms -> 10000.1 ms, delay 19201
    # samples = 1200.0625 ms -> 1200.1 ms (both at 0.1 ms, ``sample_to_ms``). Crop [80001,
    # 500001): start 5000.0625 -> 5000.1 ms (before the anchor, unchanged) -> round(80001.6) =
    # 80002; end 31250.0625 -> 31250.1 ms, after anchor + delay -> 31250.1 - 1200.1 = 30050.0 ms
    # -> 480800 (exact sample arithmetic would give 480800.6 -> 480801).
    from bargein.perturb import ref_ops
    app = ref_ops.Applied(np.zeros((10, 2), np.float32), [], {}, [], [], insert=(160001 / SR, 19201 / SR))
    return {"natural": ref_ops.natural_bounds(app, 80001, 500001, SR, 10 ** 7)}


def cases() -> list[tuple[str, str, Any, dict[str, Any]]]:
    """(name, reference, run, expected) for :mod:`bargein.scorers.conformance`."""
    return [
        ("ref-vad-frames-merge", f"{BP} L386-461 (load_silero_segments), L223-235, L343-383",
         _vad(250.0), {"segs": [(13, 43, 1.1, 3.5), (50, 66, 4.0, 5.3), (71, 74, 5.7, 6.0)]}),
        ("ref-vad-frames-short-pieces", f"{BP} L3500-3503, L3854-3857 (min_transcript_ms=40)",
         _vad(40.0), {"segs": [(13, 43, 1.1, 3.5), (50, 66, 4.0, 5.3), (71, 81, 5.7, 6.5)]}),
        ("ref-candidate-rules", f"{BP} L1894-1904, L1985-2070, L2072-2097, L2099-2152, L2154-2171, L2221-2263",
         _candidates,
         {"proper_shifts": [(0, (0, 24), (27, 45)), (1, (27, 45), (48, 70)), (1, (163, 190), (250, 280))],
          "late": [(0, (0, 24), (27, 45)), (0, (250, 280), (282, 300)), (1, (27, 45), (48, 70)),
                   (1, (163, 190), (250, 280))],
          "holds": [(0, (48, 70), (74, 100))],
          "returns": [(0, (0, 24), (27, 45), (48, 70)), (1, (163, 190), (250, 280), (282, 300))]}),
        ("ref-substantive-turn", f"{BP} L1861-1904 (is_backchannel_like, is_substantive_turn)", _substantive,
         {"bc_start_4_words": False, "five_words": True, "two_words": False, "no_text_12": True,
          "no_text_11": False, "wh_word": True, "long_yeah": True}),
        ("ref-isolated-backchannels", f"{BP} L2266-2292 (find_isolated_backchannels)", _isolated_bc,
         {"kept": [(30, 33)]}),
        ("ref-early-entry-candidates", f"{BP} L3082-3140", _early_candidates,
         {"wide": [40000], "tight": [19200], "short": [], "short_is_proper_shift": True}),
        ("ref-early-entry-moves-both-channels", f"{BP} L3141-3245, L1843-1852, L2729-2745", _early_entry,
         {"length_unchanged": True, "advance_s": 1.2, "a_onsets": [2.0, 10.8], "b_onsets": [5.3, 13.8],
          "natural_of_13_8": 15.0}),
        ("ref-excessive-backchannel-frames", f"{BP} L3548-3600 (bc_insert_count 2, bc_insert_min_gap_ms 800), "
         "L2266-2292, L2304-2320", _bc_frames,
         {"count": 2, "legal": True, "spacing_ok": True, "no_room": [], "exactly_ten_apart": [25, 35]}),
        ("ref-excessive-backchannel-added", f"{BP} L3614-3625, L774-784 (paste_add)", _bc_add,
         {"count": 2, "on_frame_grid": True, "onset_gap_ok": True, "added_without_fades": True,
          "untouched_elsewhere": True, "channel_a_untouched": True}),
        ("ref-splice-60ms", f"{BP} L1733-1774, L2999-3039 (splice_fade_ms 60)", _insert,
         {"length": 2500, "before": 1.0, "fade_out_first": 1.0, "fade_out_last": 0.0, "fill_zero": True,
          "fade_in_first": 0.0, "fade_in_last": 1.0, "after_moved": True}),
        ("ref-cut-and-append", f"{BP} L1843-1852, L807-816, L3233-3245", _cut,
         {"length": 4000, "before": True, "after_moved": True, "tail_fill": True, "fade_len": 191}),
        ("ref-loudness-whole-file", f"{BP} L2342-2367, L2370-2410, L2413-2463", _loudness,
         {"gain": 0.1 / math.sqrt(0.00625), "ch0": 0.1 * 0.1 / math.sqrt(0.00625),
          "ch1": 0.05 * 0.1 / math.sqrt(0.00625), "peak_limited_gain": 10 ** (-1 / 20) / 0.95}),
        ("ref-crop-silent-ends-context", f"{BP} L2524-2550, L2676-2694, L2770-2900", _crop(_ISLANDS),
         {"crop": (224000, 582880)}),
        # without the 14.0 island no start <= 15 s has 350 ms of silence except 9.0x, whose crops
        # to 30.4x are 21.3 s at frac 0.63 -> (144640, 486880): 9.04->30.43 scores 3.61 best
        ("ref-crop-next-best", f"{BP} L2770-2900", _crop([(9.0, 9.5), (30.0, 30.5), (36.0, 36.5)]),
         {"crop": (144640, 486880)}),
        # a 0.3 s island is not 350 ms of silence; an island at 15.5 s leaves < 5 s of context
        ("ref-crop-needs-350ms-and-5s-context", f"{BP} L2524-2550, L2855-2870",
         _crop([(9.0, 9.3), (15.5, 16.0), (30.0, 30.5), (36.0, 36.5)]), {"crop": None}),
        ("ref-vad-seconds-capped-at-audio-length", f"{BP} L416-426 (return_seconds=True); requirements.txt "
         "silero-vad>=5.1 (6.x: end = min(round(end / sr, 1), length))", _vad_end_capped,
         {"seconds": [(1.0, 10.06)], "frames": (12, 125), "end_sample": 160960}),
        ("ref-transcript-text-per-piece", f"{BP} L428-438, L238-292 (_overlapping_transcript), L343-383", _piece_text,
         {"segs": [(12, 37, "well I think I think so yes")], "words": 7}),
        ("ref-scorer-coverage-guard", f"{BP} L2676-2726 (validate_protected_unit_coverage), L4283-4300", _coverage,
         {"ok_short": (0, 320000), "left_short": None, "right_short": None, "left_long": None}),
        ("ref-scorer-coverage-candidates", f"{BP} L4283-4300, L2607-2673 (_edit_scorer_boundary_ms)", _coverage_scan,
         {"early_in_file": {"late_response": [(1, 6.5)], "excessive_backchannel": [(0, 12.0), (1, 6.5)]},
          "later": {"late_response": [(0, 7.0), (1, 10.5)], "early_entry": [(0, 7.0)],
                    "excessive_backchannel": [(0, 7.0), (0, 16.0), (1, 10.5)]},
          "hold_tail": 0, "hold_inside": 1}),
        ("ref-excessive-backchannel-sources-next-turn", f"{BP} L3505-3526 (source_pool, source_id), "
         "L3646-3648 (last_end per clip), L3398-3400", _bc_sources_and_next_turn,
         {"sources": [("yeah", 4800, 2.0), ("yeah", 6400, 9.0)], "last_frame": 44}),
        ("ref-shift-insert-clips-whole-channel", f"{BP} L3955-3963, L786-797 (paste_replace)",
         _shift_insert_clips_channel, {"clipped": 1.0, "at_s": 20.5}),
        ("ref-crop-times-in-0.1ms", f"{BP} L2503-2521, L2571-2588, L2676-2694, L2810-2832 (ms values), "
         "L2524-2550", _crop_grid_0p1ms, {"crop": (240002, 582882)}),
        ("ref-rms-fallback-turn-vad", f"{BP} L164-189 (rms_vad, segments_from_vad), L562-584", _rms_fallback,
         {"segs": [(5, 14, 0.4, 1.2, ""), (25, 25, 2.0, 2.08, "")]}),
        ("ref-natural-crop-in-0.1ms", f"{BP} L2729-2767 (_source_crop_bounds_from_edits), L3055-3058, L2421-2423",
         _natural_bounds, {"natural": (80002, 480800)}),
    ]


__all__ = ["cases"]
