"""Hand-built timelines with expected values derived by hand from the reference definitions.

Each case names the reference file and lines it follows, the input, and the values worked out
on paper from that definition (the derivation is in the comment next to each number). The tests
and ``bench/protocol_conformance.py`` run our implementation on every case and compare.

References (read at the public heads):
* FD-Bench ``benchmark/benchmarking.py``: per-round rules L670-807, noise L809-817, pooled
  rates L961-1002, ``int(v / 16)`` ms L1003-1009, median ``time_average`` L62-97.
* Full-Duplex-Bench ``v1_v1.5/evaluation/eval_smooth_turn_taking.py`` L59-92,
  ``eval_pause_handling.py`` L43-60, ``eval_backchannel.py`` L37-153, ``get_timing.py`` L60-118.
* TurnNat ``dualturn/scripts/score_vap_nll_naturalness.py``: silero frames L100-130, clean
  L133-168, merge L267-313, units L348-424, unit rows + fallbacks L568-667, pooling L670-700;
  settings ``turnnat/scripts/score_fvad_checkpoint.py`` L243-258; silero's
  ``get_speech_timestamps`` (snakers4/silero-vad ``src/silero_vad/utils_vad.py``) for the spans;
  early entry ``turnnat/scripts/build_perturbations.py`` L3082-3312 and L1843-1853.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

S = 16000


def _samples(spans):
    return [(round(a * S), round(b * S)) for a, b in spans]


@dataclass(frozen=True)
class Case:
    family: str                 # "fdbench", "fdb" or "turnnat"
    name: str
    reference: str
    run: Callable[[], dict[str, Any]]
    expected: dict[str, Any]


# ----------------------------------------------------------------------------- FD-Bench
def _fd(user, system, *, drop_first=False, in_samples=False):
    from bargein.scorers.fdbench import aggregate, conversation_marks

    def go():
        convs = user if isinstance(user[0], list) else [user]
        syss = system if isinstance(system[0], list) else [system]
        marks = [conversation_marks(u if in_samples else _samples(u), s if in_samples else _samples(s),
                                    drop_first_system=drop_first) for u, s in zip(convs, syss)]
        return aggregate(marks)
    return go


FD_REF = "pengyizhou/FD-Bench benchmark/benchmarking.py L597-817, L945-1040"
FDBENCH_CASES = [
    # u1 replied after 0.5 s; S1 and S2 end >= 2.5 s before the next user onset (noise x2);
    # u2 early onset at 11.0 (lead 1.0 s), u4 early onset at 24.7 (lead 1.3 s): EIT median 1150;
    # S3 starts in u2's gap (reply, 2.6 s), spans u3's onset (interruption) and stops at 18.2
    # inside u3 (IRD 18.2 - 16.0 = 2200 ms); S4 replies 0.5 s after u3 (SRIR).
    # SRR = 2/4, EIR = 2/4, SIR = 1/1, NIR = 2/3, FSED = median(500, 2600, 500) = 500.
    Case("fdbench", "issue-15-conversation", FD_REF,
         _fd([(1.0, 4.0), (8.5, 12.0), (16.0, 19.0), (22.6, 26.0)],
             [(4.5, 5.5), (11.0, 13.0), (14.6, 18.2), (19.5, 21.0), (24.7, 27.0)]),
         {"SRR": 50.0, "EIR": 50.0, "SIR": 100.0, "NIR": 66.67, "SRIR": 100.0, "FSED_ms": 500.0,
          "ERT_ms": 0.0, "EIT_ms": 1150.0, "IRD_ms": 2200.0}),
    # onset 3.7 is within 0.5 s of u1's end 4.0: an early reply, ERT = 300 ms; SRR 1/2;
    # SIR and SRIR have zero denominators -> 0; S ends 2.0 s before u2: not noise.
    Case("fdbench", "early-reply", FD_REF,
         _fd([(1.0, 4.0), (8.0, 10.0)], [(3.7, 6.0)]),
         {"SRR": 50.0, "EIR": 0.0, "SIR": 0.0, "NIR": 0.0, "SRIR": 0.0, "ERT_ms": 300.0,
          "FSED_ms": 0.0, "EIT_ms": 0.0, "IRD_ms": 0.0}),
    # last round: S0 spans the onset (interruption) and ends after it -> success, IRD 500;
    # S1 starts 3.0 s before the user's end: an early interrupt (EIT 3000), no second success.
    Case("fdbench", "last-round-success-no-preamble-drop", FD_REF,
         _fd([(1.0, 5.0)], [(0.0, 1.5), (2.0, 3.0)]),
         {"SIR": 100.0, "IRD_ms": 500.0, "EIT_ms": 3000.0, "EIR": 100.0, "SRR": 0.0}),
    # the same with the first system span dropped (their Moshi preamble rule): the early
    # interrupt S1 ends before the user's end, so it is itself the success, IRD = 3.0 - 2.0.
    Case("fdbench", "moshi-preamble-dropped", FD_REF,
         _fd([(1.0, 5.0)], [(0.0, 1.5), (2.0, 3.0)], drop_first=True),
         {"SIR": 100.0, "IRD_ms": 1000.0, "EIT_ms": 3000.0, "EIR": 100.0, "SRR": 0.0}),
    # S0 holds the floor past u1's end (no stop inside u1); S1 replies at 7.0 -> SRIR, and the
    # pending interruption succeeds with IRD = reply end 9.0 - user onset 2.0 = 7000 ms;
    # both spans end >= 2.5 s before u2 and last < 5.5 s: NIR = 2 / 1 gap = 200 %.
    Case("fdbench", "reply-after-barge-in-and-per-span-noise", FD_REF,
         _fd([(2.0, 4.0), (12.0, 14.0)], [(1.0, 6.0), (7.0, 9.0)]),
         {"SRR": 0.0, "SIR": 100.0, "SRIR": 100.0, "NIR": 200.0, "FSED_ms": 3000.0, "IRD_ms": 7000.0}),
    # two conversations pooled: delays 4005 and 8000 samples -> int(250.3) = 250 and 500 ms;
    # even count: median = (250 + 500) / 2 = 375; SRR = 2/2.
    Case("fdbench", "pooled-median-and-truncation", FD_REF,
         _fd([[(16000, 48000)], [(16000, 48000)]], [[(52005, 60000)], [(56000, 70000)]], in_samples=True),
         {"SRR": 100.0, "FSED_ms": 375.0, "NIR": 0.0}),
]


# ----------------------------------------------------------------------- Full-Duplex-Bench
FDB_REF = "DanielLin94144/Full-Duplex-Bench v1_v1.5/evaluation/"
_SMOOTH = [
    ([], 5.0),                                                                   # TOR 0
    ([("mm", 5.1, 5.3), ("hm", 5.4, 5.6), ("yes", 5.7, 5.9)], 5.0),              # 0.8 s, 3 words: 0
    ([("I", 4.7, 4.8), ("think", 4.8, 5.0), ("so", 5.0, 5.2), ("too", 5.2, 5.4)], 5.0),  # 4 words: 1, -0.3 -> 0
    ([("Sure", 5.5, 5.9), ("thing", 6.0, 6.7)], 5.0),                            # 1.2 s: 1, 0.5
    ([("Yes", 5.9, 6.2), ("it", 6.3, 6.4), ("is", 6.4, 6.6), ("fine", 6.6, 7.0)], 5.0),  # 1, 0.9
]


def _smooth():
    from bargein.scorers.fdb import turn_item, turn_summary
    return turn_summary([turn_item(w, e) for w, e in _SMOOTH])


def _pause():
    from bargein.scorers.fdb import as_chunks, take_turn
    return {"tor": take_turn(as_chunks([{"text": "okay", "timestamp": [3.0, None]}]))[0]}


_BC_SEGS = [(1.0, 1.4), (3.0, 3.6), (5.0, 9.0)]
_BC_WORDS = [("yeah", 1.05, 1.35), ("uh", 3.05, 3.2), ("huh", 3.25, 3.5), ("so", 5.1, 5.3)]


def _bc(gt):
    from bargein.scorers.fdb import backchannel_item

    def go():
        r = backchannel_item(_BC_SEGS, _BC_WORDS, 10.0, gt)
        return {"tor": r["tor"], "frequency_hz": r["frequency_hz"], "jsd": r["jsd"],
                "backchannels": len(r["backchannels"])}
    return go


# By hand: 51 bins of 0.2 s (int(10 / 0.2) + 1). In floating point 1.4 / 0.2 = 6.999... (int 6)
# and 3.6 / 0.2 = 18.0, so the short segments fill bins 5-6 and 15-18: p = 1/6 on 6 bins; a
# constant ground truth resampled is uniform, q = 1/51. m = (p + q) / 2; JS distance =
# sqrt((KL(p||m) + KL(q||m)) / 2), natural log (epsilon 1e-10 moves it by < 1e-8).
_m = (1 / 6 + 1 / 51) / 2
_KLP = math.log((1 / 6) / _m)
_KLQ = 6 * (1 / 51) * math.log((1 / 51) / _m) + 45 * (1 / 51) * math.log(2)
_JSD = math.sqrt(0.5 * (_KLP + _KLQ))


def _timing():
    from bargein.scorers.fdb import timing_item, timing_summary
    it = timing_item([(1.0, 2.0), (2.5, 4.0), (8.0, 9.0)], [(3.0, 3.4), (3.8, 6.0), (9.5, 11.0)])
    return {**it, **timing_summary([it])}


def _seconds():
    from bargein.scorers.fdb import seconds_spans
    return {"spans": seconds_spans([(16800, 23040)], 160000)}


FDB_CASES = [
    # five items: TOR 1, 1, 1 of 5 = 0.6; latencies max(0, -0.3), 0.5, 0.9 -> mean 0.466667
    Case("fdb", "smooth-turn-taking", FDB_REF + "eval_smooth_turn_taking.py L59-92", _smooth,
         {"tor": 0.6, "latency_s": (0.0 + 0.5 + 0.9) / 3, "n": 5}),
    # a last word without an end: span = its start - first start = 0 s, one word -> TOR 0
    Case("fdb", "pause-handling-open-end", FDB_REF + "eval_pause_handling.py L46-60", _pause, {"tor": 0}),
    # segments 0.4 s (1 word) and 0.6 s (2 words) are backchannels; the 4 s one ends the scan with
    # TOR 1; frequency = 2 / 10 s
    Case("fdb", "backchannel-uniform-gt", FDB_REF + "eval_backchannel.py L53-153", _bc([1.0] * 26),
         {"tor": 1, "frequency_hz": 0.2, "jsd": _JSD, "backchannels": 2}),
    Case("fdb", "backchannel-none", FDB_REF + "eval_backchannel.py L117-118",
         lambda: {k: v for k, v in __import__("bargein.scorers.fdb", fromlist=["x"]).backchannel_item(
             [(0.5, 4.0)], [], 10.0, [1.0]).items() if k in ("tor", "jsd", "frequency_hz")},
         {"tor": 1, "jsd": 1.0, "frequency_hz": 0.0}),
    # return_seconds: round(16800 / 16000, 1) = round(1.05, 1) = 1.1; 23040 / 16000 = 1.44 -> 1.4
    Case("fdb", "silero-seconds", "snakers4/silero-vad utils_vad.py get_speech_timestamps (return_seconds)",
         _seconds, {"spans": [(1.1, 1.4)]}),
    # users merge across 0.5 s (<= 0.6) -> (1, 4), (8, 9); system across 0.4 s -> (3, 6), (9.5, 11);
    # overlap (3, 4); responses 4 -> 9.5 and 9 -> 9.5 share the onset, the later end wins
    Case("fdb", "v1.5-timing", FDB_REF + "get_timing.py L60-118", _timing,
         {"latency_stop_list": [[3.0, 4.0]], "latency_resp_list": [[9.0, 9.5]],
          "stop_latency_s": 1.0, "response_latency_s": 0.5}),
]


# --------------------------------------------------------------------------------- TurnNat
TN_REF = "TedZhangHao/turn-taking-naturalness dualturn/scripts/score_vap_nll_naturalness.py"
_P1 = [0.1, 0.1] + [0.9] * 8 + [0.4, 0.1, 0.1, 0.1, 0.9, 0.9] + [0.1] * 6        # 22 windows
_P2 = [0.1, 0.1] + [0.9] * 8 + [0.1, 0.1] + [0.9] * 6 + [0.1] * 4               # 22 windows


def _ts(probs, **kw):
    from bargein.audio.vad import silero_timestamps
    return lambda: {"spans": silero_timestamps(np.array(probs), 22 * 512, **kw)}


def _frames():
    from bargein.scorers.turnnat_ref import spans_to_frames
    v = spans_to_frames([(544, 6112)], 11264)
    return {"n": len(v), "active": [int(i) for i in np.flatnonzero(v)]}


def _clean():
    from bargein.scorers.turnnat_ref import clean
    v = [1] * 3 + [0] * 8 + [1] * 10 + [0] * 3 + [1] * 10 + [0] * 5 + [1] * 3
    return {"clean": [int(x) for x in clean(np.array(v))]}


def _activity(runs, n):
    v = np.zeros((n, 2), dtype=np.int8)
    for ch, a, b in runs:
        v[a:b, ch] = 1
    return v


_UNIT_RUNS = [(0, 50, 100), (0, 130, 180), (0, 300, 350), (0, 400, 450), (0, 560, 569),
              (1, 360, 380), (1, 132, 154)]


def _units():
    from bargein.scorers.turnnat_ref import pool, unit_scores, units, utterances
    v = _activity(_UNIT_RUNS, 600)
    nll = np.ones(600)
    nll[325:350] = 3.0
    us = units(v, 12.0)
    rows = unit_scores(nll, us, v)
    return {"utterances": [(u["speaker"], u["start"], u["end"]) for u in utterances(v)],
            "units": len(us), "scored": [round(r["unit_nll"], 9) for r in rows],
            "nll": pool(rows)["nll"]}


def _fallback(runs, hot):
    from bargein.scorers.turnnat_ref import unit_scores, units

    def go():
        v = _activity(runs, 500)
        nll = np.ones(500)
        nll[hot[0]:hot[1]] = hot[2]
        rows = unit_scores(nll, units(v, 10.0), v)
        return {"kind": rows[0]["unit_type"], "unit_nll": rows[0]["unit_nll"]}
    return go


def _units_model_rate():
    from bargein.scorers.turnnat_ref import pool, unit_scores, units
    v = _activity([(0, 200, 300)], 400)
    rows = unit_scores(np.arange(100, dtype=np.float64), units(v, 8.0), v, frame_hz=12.5)
    return {"scored": [r["unit_nll"] for r in rows], "nll": pool(rows)["nll"]}


def _early_entry():
    """Early entry on hand-placed noise bursts, measured by frame energy on the output."""
    from random import Random

    from bargein.perturb import ops

    sr = 16000
    rng = np.random.default_rng(0)
    x = np.zeros((sr * 20, 2), dtype=np.float32)
    for ch, a, b in ((0, 2.0, 6.0), (1, 6.5, 9.0), (0, 12.0, 14.0), (1, 15.0, 16.5)):
        x[int(a * sr):int(b * sr), ch] = 0.3 * rng.standard_normal(int((b - a) * sr))
    segs = [[(2.0, 6.0), (12.0, 14.0)], [(6.5, 9.0), (15.0, 16.5)]]
    clip = ops.Clip(x, sr, segs, int(0.011 * sr))
    c = dict(a=0, b=1, a0=2.0, a1=6.0, b0=6.5, bt1=9.0, e_lo=1.5, e_hi=1.5)
    y, edits, params = ops.early_entry(clip, c, Random(0))

    def onsets(sig):
        fr = (np.abs(sig[: len(sig) // 160 * 160]).reshape(-1, 160).max(axis=1) > 0.01).astype(int)
        return [round(i * 0.01, 2) for i in np.flatnonzero(np.diff(np.concatenate([[0], fr])) == 1)]

    return {"length_unchanged": len(y) == len(x), "advance_s": round(params["advance_s"], 3),
            "b_onsets": onsets(y[:, 1]), "a_onsets": onsets(y[:, 0])}


def _bc_ref():
    """turnnat-ref excessive backchannel on hand-placed bursts, measured on the output samples."""
    from random import Random

    from bargein.perturb import ops

    sr = 16000
    rng = np.random.default_rng(1)
    x = np.zeros((sr * 20, 2), dtype=np.float32)
    x[2 * sr:12 * sr, 0] = 0.2 * rng.standard_normal(10 * sr)          # A talks 2-12 s
    x[6 * sr:int(6.5 * sr), 1] = 0.2 * rng.standard_normal(sr // 2)     # B's own speech 6.0-6.5 s
    segs = [[(2.0, 12.0)], [(6.0, 6.5)]]
    clip = ops.Clip(x, sr, segs, int(0.011 * sr))
    bc1 = np.full(int(0.3 * sr), 0.1, dtype=np.float32)
    bc2 = np.full(int(0.4 * sr), -0.1, dtype=np.float32)
    c = dict(a=0, b=1, w0=2.0, w1=12.0)
    y, edits, _ = ops.excessive_backchannel_ref(clip, c, Random(3), [("yeah", bc1, 20.0), ("right", bc2, 21.0)])
    added = y[:, 1] - x[:, 1]
    ons = sorted(e.at_s for e in edits)
    inside = all(2.0 <= e.at_s and e.at_s + e.duration_s <= 12.0 for e in edits)
    clear = all(e.at_s + e.duration_s <= 6.0 or e.at_s >= 6.5 for e in edits)
    exact = all(np.allclose(added[int(round(e.at_s * sr)):int(round(e.at_s * sr)) + int(round(e.duration_s * sr))],
                            bc1[0] if "yeah" in e.note else bc2[0]) for e in edits)
    rest = added.copy()
    for e in edits:
        rest[int(round(e.at_s * sr)):int(round((e.at_s + e.duration_s) * sr))] = 0.0
    return {"count": len(edits), "onset_gap_ok": ons[1] - ons[0] >= 0.8 - 1e-9, "inside_speaker_turn": inside,
            "listener_silent": clear, "added_without_fades": exact,
            "untouched_elsewhere": not np.any(rest)}


TURNNAT_CASES = [
    # onset window 2 (1024); window 10 (0.4) neither starts nor ends; silence from window 11
    # (5632) lasts >= 800 samples at window 13 -> [1024, 5632]; the second span (1024 samples)
    # is not > 1600 -> dropped; pad 480: [544, 6112]
    Case("turnnat", "silero-timestamps-min-speech", "silero utils_vad.py get_speech_timestamps; "
         "score_fvad_checkpoint.py L245-247", _ts(_P1, min_speech_ms=100, min_silence_ms=50, speech_pad_ms=30),
         {"spans": [(544, 6112)]}),
    # with min speech 50 ms the second span [7168, 8192] stays; gap 1536 >= 2 pads -> each padded
    Case("turnnat", "silero-timestamps-two-spans", "silero utils_vad.py get_speech_timestamps",
         _ts(_P1, min_speech_ms=50, min_silence_ms=50, speech_pad_ms=30),
         {"spans": [(544, 6112), (6688, 8672)]}),
    # spans [1024, 5120] and [6144, 9216]; gap 1024 < 2 x 640 -> split at 5632
    Case("turnnat", "silero-timestamps-split-gap", "silero utils_vad.py get_speech_timestamps",
         _ts(_P2, min_speech_ms=100, min_silence_ms=30, speech_pad_ms=40),
         {"spans": [(384, 5632), (5632, 9856)]}),
    # 11264 // 320 = 35 frames; 544 // 320 = 1 to 6112 // 320 = 19 (exclusive)
    Case("turnnat", "frames-50hz", TN_REF + " L100-130", _frames,
         {"n": 35, "active": list(range(1, 19))}),
    # speech run of 3 at the start dropped; silences of 3 and 5 frames before speech filled;
    # the final 3-frame run is never checked (the clip ends inside it)
    Case("turnnat", "clean-150ms", TN_REF + " L133-168", _clean, {"clean": [0] * 11 + [1] * 31}),
    # ch0 runs 1.0-2.0 and 2.6-3.6 merge (gap 0.6 s, ch1 silent in frames 100-129); 6.0-7.0 and
    # 8.0-9.0 do not (gap 1.0 s, ch1 active 20 of 50 = 40 %); 11.2-11.38 is < 0.2 s: no unit.
    # Units (frames 150+ only): [1.6, 3.6] -> 30 frames of 1; [4, 6] 1; [5, 7] (25 x 3 + 75) /
    # 100 = 1.5; ch1 7.2-7.6: [5.2, 7.2] 1.5, [5.6, 7.6] 1.5; [6, 8] 1.5; [7, 9] 1; ch1 2.64-3.08:
    # start unit ends at frame 132 < 150 (empty), end unit has 4 frames (< 5): both dropped;
    # [0, 1] empty. 10 units, 7 scored: mean 9 / 7, tail ceil(1.75) = 2 -> 1.5; NLL = (9/7 + 1.5) / 2.
    Case("turnnat", "units-merge-context-min-frames", TN_REF + " L267-424, L589-667, L670-700", _units,
         {"utterances": [(0, 1.0, 3.6), (1, 2.64, 3.08), (0, 6.0, 7.0), (1, 7.2, 7.6), (0, 8.0, 9.0),
                         (0, 11.2, 11.38)],
          "units": 10, "scored": [1.0, 1.0, 1.5, 1.5, 1.5, 1.5, 1.0], "nll": (9 / 7 + 1.5) / 2}),
    # only a 0.1 s utterance: VAD changes at frames 200 and 205 -> frames [100, 306) after 150:
    # 150 frames of 2.0 and 6 of 1.0 -> 306 / 156
    Case("turnnat", "fallback-vad-boundaries", TN_REF + " L575-586, L637-651",
         _fallback([(0, 200, 205)], (100, 300, 2.0)),
         {"kind": "fallback_vad_boundaries", "unit_nll": 306 / 156}),
    # silence throughout: every frame from 150: 150 x 1.0 + 200 x 3.0 -> 750 / 350
    Case("turnnat", "fallback-all-valid", TN_REF + " L653-667",
         _fallback([], (300, 500, 3.0)), {"kind": "fallback_all_valid", "unit_nll": 750 / 350}),
    # a 12.5 Hz predictor (the reference's DualTurn rate): utterance 4.0-6.0 s (50 Hz frames
    # 200-300) -> units [2, 4] and [4, 6] sliced at 12.5 Hz after ceil(3 x 12.5) = 38: frames
    # 38-49 and 50-74 of nll = 0, 1, 2, ... -> means 43.5 and 62.0; NLL 0.5 x 52.75 + 0.5 x 62
    Case("turnnat", "units-at-predictor-rate", "TedZhangHao/turn-taking-naturalness turnnat/scripts/"
         "score_fvad_checkpoint.py L230-231 (frame_hz 12.5 for DualTurn); train_fvad_head.py L1382-1392, "
         "L1457-1465; " + TN_REF.split()[-1] + " L589-593", _units_model_rate,
         {"scored": [43.5, 62.0], "nll": 57.375}),
    # advance 1.5 s: B's response 6.5 -> 5.0 (inside A's turn), and everything after the cuts moves
    # 1.5 s earlier in both channels: A 12.0 -> 10.5, B 15.0 -> 13.5; the clip keeps its length
    Case("turnnat", "early-entry-moves-both-channels", "TedZhangHao/turn-taking-naturalness "
         "turnnat/scripts/build_perturbations.py L3082-3312, L1843-1853", _early_entry,
         {"length_unchanged": True, "advance_s": 1.5, "b_onsets": [5.0, 13.5], "a_onsets": [2.0, 10.5]}),
    # two clips (0.3 s, 0.4 s): exactly 2 inserted, onsets >= max(0.8, 0.4) s apart, each inside
    # A's turn with B silent under it, the clip added sample for sample (no fade), nothing else
    # changed
    Case("turnnat", "excessive-backchannel-ref", "TedZhangHao/turn-taking-naturalness "
         "turnnat/scripts/build_perturbations.py L3492-3600 (bc_insert_count 2, bc_insert_min_gap_ms 800), "
         "pick_spaced_frames L2304-2320, paste_add L774-784", _bc_ref,
         {"count": 2, "onset_gap_ok": True, "inside_speaker_turn": True, "listener_silent": True,
          "added_without_fades": True, "untouched_elsewhere": True}),
]

def _perturb_cases() -> list[Case]:
    from bargein.scorers.conformance_perturb import cases
    return [Case("turnnat", name, ref, run, expected) for name, ref, run, expected in cases()]


TURNNAT_CASES += _perturb_cases()

CASES: dict[str, list[Case]] = {"fdbench": FDBENCH_CASES, "fdb": FDB_CASES, "turnnat": TURNNAT_CASES}


def matches(got: Any, want: Any, tol: float = 1e-6) -> bool:
    """Deep comparison; floats to ``tol`` (relative for large values)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and matches(got[k], v, tol) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (isinstance(got, (list, tuple)) and len(got) == len(want)
                and all(matches(g, w, tol) for g, w in zip(got, want)))
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want
    if isinstance(want, (int, float)):
        return isinstance(got, (int, float)) and math.isclose(float(got), float(want), rel_tol=tol, abs_tol=tol)
    return got == want


def check(case: Case) -> list[str]:
    """The names of expected values the implementation misses (empty when conformant)."""
    got = case.run()
    return [k for k, v in case.expected.items() if not matches(got.get(k), v)]


def conformance(family: str) -> tuple[int, int, list[str]]:
    """(values matched, values expected, failures) over every case of ``family``."""
    ok = total = 0
    failures = []
    for case in CASES[family]:
        bad = check(case)
        total += len(case.expected)
        ok += len(case.expected) - len(bad)
        failures += [f"{case.name}:{k}" for k in bad]
    return ok, total, failures


__all__ = ["Case", "CASES", "check", "conformance", "matches"]
