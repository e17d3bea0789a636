"""TurnNat: turn-taking naturalness from future voice-activity likelihood.

Turn-taking boundary units (TBUs): every VAD utterance >= 200 ms gives one unit at its onset
and one at its offset, each the frames in [boundary - 2 s, boundary]::

    A  ......|=========== utt ===========|..........
             ^onset                      ^offset
      [--2 s--]                  [--2 s--]          <- two TBUs (frames scored)

Frame NLL = -log p(observed 256-state future | history); unit score = mean frame NLL;
MeanNLL over units, TailNLL = mean of the worst 25 %; NLL = 0.5 Mean + 0.5 Tail;
naturalness = -NLL. Pair accuracy = share of pairs with NLL(perturbed) > NLL(natural);
C-index over all perturbed x natural clips, ties excluded.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bargein.audio.labels import FRAME_HZ, activity_from_segments, segments_from_activity
from bargein.cache import ContentCache, cache_key
from bargein.errors import AudioError, ConfigError
from bargein.records.derived import PerturbationPair
from bargein.records.release import Aggregate, ItemScore, ScoreReport
from bargein.scorers.stats import bootstrap_ci
from bargein.seeding import file_sha256

MIN_UTT_S = 0.2
CONTEXT_S = 2.0
TAIL_FRAC = 0.25
LAMBDA = 0.5


def tbus(activity: np.ndarray, frame_hz: int = FRAME_HZ, min_utt_s: float = MIN_UTT_S,
         context_s: float = CONTEXT_S) -> list[tuple[int, int, str, int]]:
    """(first frame, last frame inclusive, "onset"|"offset", channel) for every unit."""
    out = []
    L = int(round(context_s * frame_hz))
    for c, spans in enumerate(segments_from_activity(activity, frame_hz)):
        for a, b in spans:
            if b - a < min_utt_s - 1e-9:
                continue
            for kind, tau in (("onset", a), ("offset", b)):
                f = int(round(tau * frame_hz))
                out.append((max(0, f - L), min(f, len(activity) - 1), kind, c))
    return sorted(out)


def tbu_mask(activity: np.ndarray, frame_hz: int = FRAME_HZ) -> np.ndarray:
    """Frames inside any TBU (used to weight training)."""
    m = np.zeros(len(activity), dtype=bool)
    for a, b, _, _ in tbus(activity, frame_hz):
        m[a:b + 1] = True
    return m


def unit_scores(frame_nll: np.ndarray, units: Sequence[tuple[int, int, str, int]]) -> np.ndarray:
    """Mean frame NLL per unit over its frames with a defined target (NaN-free units only)."""
    out = []
    for a, b, _, _ in units:
        v = frame_nll[a:b + 1]
        v = v[np.isfinite(v)]
        if v.size:
            out.append(float(v.mean()))
    return np.array(out)


def pool(scores: np.ndarray, tail_frac: float = TAIL_FRAC, lam: float = LAMBDA) -> dict[str, float]:
    """MeanNLL, TailNLL (mean of the worst ``tail_frac``), NLL and naturalness."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return {"mean_nll": math.nan, "tail_nll": math.nan, "nll": math.nan,
                "naturalness": math.nan, "units": 0}
    k = max(1, int(math.ceil(tail_frac * s.size)))
    mean, tail = float(s.mean()), float(np.sort(s)[-k:].mean())
    nll = lam * mean + (1 - lam) * tail
    return {"mean_nll": mean, "tail_nll": tail, "nll": nll, "naturalness": -nll, "units": int(s.size)}


def score_activity(activity: np.ndarray, predictor: Any, *, audio: np.ndarray | None = None,
                   sample_rate: int | None = None) -> dict[str, float]:
    nll = predictor.frame_nll(activity, audio=audio, sample_rate=sample_rate)
    return pool(unit_scores(nll, tbus(activity, predictor.frame_hz)))


def pair_accuracy(nll_natural: Sequence[float], nll_perturbed: Sequence[float]) -> float:
    """Share of pairs whose perturbed clip has the higher NLL (a tie counts as a miss)."""
    n, p = np.asarray(nll_natural, float), np.asarray(nll_perturbed, float)
    if n.size == 0:
        return math.nan
    return float(np.mean(p > n))


def c_index(nll_perturbed: Sequence[float], nll_natural: Sequence[float]) -> float:
    """P(NLL(perturbed) > NLL(natural)) over all perturbed x natural combinations, ties excluded."""
    p, n = np.asarray(nll_perturbed, float)[:, None], np.asarray(nll_natural, float)[None, :]
    conc, disc = int((p > n).sum()), int((p < n).sum())
    return conc / (conc + disc) if conc + disc else math.nan


@dataclass
class ClipScore:
    path: str
    nll: float
    mean_nll: float
    tail_nll: float
    units: int


class ClipScorer:
    """``turnnat-bargein``: VAD -> activity -> predictor NLL per clip (every VAD segment gives
    units), with VAD results cached by file hash."""

    protocol = "turnnat-bargein"

    def __init__(self, predictor: Any, vad: Any, cache_dir: Path | None = None):
        self.predictor, self.vad, self.cache_dir = predictor, vad, cache_dir

    def activity(self, path: Path) -> tuple[np.ndarray, np.ndarray, int]:
        from bargein.audio.vad import segments_to_tuples
        from bargein.perturb.stage import load_stereo

        x = load_stereo(str(path), 16000, "turnnat")
        sr = 16000
        key = cache_key("vad-segments", file_sha256(path), self.vad.id, self.vad.version)
        cache = ContentCache(self.cache_dir) if self.cache_dir else None
        text = cache.get_text(key) if cache is not None else None
        if text is not None:
            segs = json.loads(text)
        else:
            segs = [segments_to_tuples(s) for s in self.vad.channel_segments(x, sr)]
            if cache is not None:
                cache.put_text(key, json.dumps(segs))
        return activity_from_segments(segs, len(x) / sr, self.predictor.frame_hz), x, sr

    def score(self, path: Path) -> ClipScore:
        act, x, sr = self.activity(path)
        r = score_activity(act, self.predictor, audio=x, sample_rate=sr)
        if r["units"] == 0:
            raise AudioError(f"{path}: no utterance >= {MIN_UTT_S * 1000:.0f} ms found by VAD; "
                             "cannot score turn-taking")
        return ClipScore(str(path), r["nll"], r["mean_nll"], r["tail_nll"], r["units"])


class RefClipScorer:
    """``turnnat-ref``: the reference scoring VAD (silero 0.5/100/50/30 ms, 50 Hz, cleaned) and
    the reference units (merged utterances, first 3 s unscored, >= 5 frames, fallbacks)."""

    protocol = "turnnat-ref"

    def __init__(self, predictor: Any, cache_dir: Path | None = None):
        from bargein.audio.vad import SileroVAD

        self.predictor, self.cache_dir = predictor, cache_dir
        self.vad = SileroVAD()
        self.vads = (self.vad, SileroVAD())          # one per channel: both run in parallel

    def activity(self, path: Path) -> tuple[np.ndarray, np.ndarray, int]:
        from bargein.perturb.stage import load_stereo
        from bargein.scorers.turnnat_ref import scoring_activity

        x = load_stereo(str(path), 16000, "turnnat")
        key = cache_key("turnnat-ref-activity", file_sha256(path), self.vad.version)
        cache = ContentCache(self.cache_dir) if self.cache_dir else None
        text = cache.get_text(key) if cache is not None else None
        if text is not None:
            act = np.array(json.loads(text), dtype=np.int8).reshape(-1, 2)
        else:
            act = scoring_activity(x, 16000, vads=self.vads)
            if cache is not None:
                cache.put_text(key, json.dumps(act.tolist()))
        return act, x, 16000

    def score(self, path: Path) -> ClipScore:
        from bargein.scorers import turnnat_ref

        act, x, sr = self.activity(path)
        r = turnnat_ref.score_activity(act, self.predictor, len(x) / sr, audio=x, sample_rate=sr)
        if r["units"] == 0:
            raise AudioError(f"{path}: nothing to score (no frame after the first "
                             f"{turnnat_ref.CONTEXT_S:.0f} s)")
        return ClipScore(str(path), r["nll"], r["mean_nll"], r["tail_nll"], r["units"])


def _ci_stat(values: np.ndarray, fn, seed: int, n_boot: int = 1000) -> tuple[float, float, float]:
    idx = np.arange(len(values))
    return bootstrap_ci(idx, n_boot=n_boot, seed=seed, statistic=lambda i: fn(values[np.asarray(i, int)]))


def score_pairs(pairs: Sequence[PerturbationPair], root: Path, scorer: ClipScorer, *,
                seed: int = 0, n_boot: int = 1000) -> tuple[list[ItemScore], ScoreReport, list[dict]]:
    """Score both halves of every pair; aggregates overall and per type with bootstrap CIs.

    Returns (item scores, report, per-item failures). A pair whose audio cannot be scored
    is reported as a failure and left out.
    """
    items, failures, rows = [], [], []
    for p in pairs:
        try:
            nat = scorer.score(root / p.natural_path)
            pert = scorer.score(root / p.perturbed_path)
        except (AudioError, ConfigError) as e:
            failures.append({"item_id": p.id, "reason": str(e), "error_type": type(e).__name__})
            continue
        rows.append((p.type, nat.nll, pert.nll))
        items.append(ItemScore(item_id=p.id, metric="turnnat_pair_correct",
                               value=1.0 if pert.nll > nat.nll else 0.0, group={"type": p.type},
                               detail={"nll_natural": nat.nll, "nll_perturbed": pert.nll,
                                       "naturalness_natural": -nat.nll,
                                       "naturalness_perturbed": -pert.nll,
                                       "units_natural": nat.units, "units_perturbed": pert.units}))
    aggs = []
    groups = [("all", rows)] + [(t, [r for r in rows if r[0] == t]) for t in sorted({r[0] for r in rows})]
    for name, rs in groups:
        if not rs:
            continue
        arr = np.array([[r[1], r[2]] for r in rs])
        group = {} if name == "all" else {"type": name}
        acc = _ci_stat(arr, lambda a: pair_accuracy(a[:, 0], a[:, 1]), seed, n_boot)
        ci = _ci_stat(arr, lambda a: c_index(a[:, 1], a[:, 0]), seed, n_boot)
        aggs.append(Aggregate(metric="pair_accuracy", group=group, value=acc[0], ci_low=acc[1],
                              ci_high=acc[2], n=len(rs)))
        aggs.append(Aggregate(metric="c_index", group=group, value=ci[0], ci_low=ci[1],
                              ci_high=ci[2], n=len(rs)))
        for col, metric in ((0, "naturalness_natural"), (1, "naturalness_perturbed")):
            m = bootstrap_ci(-arr[:, col], n_boot=n_boot, seed=seed)
            aggs.append(Aggregate(metric=metric, group=group, value=m[0], ci_low=m[1], ci_high=m[2],
                                  n=len(rs)))
    from bargein.scorers.protocols import get_protocol

    protocol = get_protocol(getattr(scorer, "protocol", "turnnat-bargein"), "turnnat").record()
    report = ScoreReport(scorer="turnnat", release=str(root), aggregates=tuple(aggs),
                         config={"protocol": protocol,
                                 "predictor": f"{scorer.predictor.id}@{getattr(scorer.predictor, 'version', '')}",
                                 "vad": f"{scorer.vad.id}@{scorer.vad.version}", "seed": seed,
                                 "n_boot": n_boot, "min_utt_s": MIN_UTT_S, "context_s": CONTEXT_S,
                                 "tail_frac": TAIL_FRAC, "lambda": LAMBDA,
                                 "failures": len(failures)})
    return items, report, failures
