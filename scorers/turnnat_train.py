"""Training the built-in turn-taking predictor on natural two-channel dialogue."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from bargein.errors import BargeinError, ConfigError

log = logging.getLogger("bargein.turnnat")
BETAS = (1.0, 3.0, 10.0, 30.0, 100.0)      # Witten-Bell backoff weights tried on held-out data


def dialogue_activities(dialogues: Sequence, *, vad_name: str = "silero", labels: str = "vad",
                        cache_dir: Path | None = None, skipped: list | None = None) -> Iterator[np.ndarray]:
    """(frames, 2) activity per natural dialogue: from VAD on the audio (default, as scored)
    or from the rendered timeline (``labels="timeline"``). Unusable dialogues are skipped
    and listed in ``skipped``."""
    from bargein.audio.labels import activity_from_segments, segments_by_channel
    from bargein.audio.vad import get_vad
    from bargein.scorers.turnnat import ClipScorer

    class _FrameHz:
        frame_hz = 50
        id = "none"

    scorer = ClipScorer(_FrameHz(), get_vad(vad_name), cache_dir) if labels == "vad" else None
    for rd in dialogues:
        try:
            if labels == "timeline":
                if not rd.segments:
                    raise ConfigError(f"{rd.id} has no timeline segments; use --labels vad")
                yield activity_from_segments(segments_by_channel(rd.segments), rd.duration_s)
            else:
                yield scorer.activity(Path(rd.audio_path))[0]
        except BargeinError as e:
            log.warning("skipping %s: %s", rd.id, e)
            if skipped is not None:
                skipped.append({"item_id": rd.id, "reason": str(e)})


def train_predictor(dialogues_path: Path, out: Path, *, workdir: Path, vad: str = "silero",
                    labels: str = "vad", swap: bool = True, tbu_weight: float = 1.0) -> dict:
    """Train the built-in predictor on natural dialogues and save it; returns a summary."""
    from bargein.perturb.sources import load_sources
    from bargein.scorers.predictors import BuiltinPredictor

    t0 = time.perf_counter()
    dialogues = load_sources(dialogues_path, workdir)
    skipped: list = []
    acts = list(dialogue_activities(dialogues, vad_name=vad, labels=labels,
                                    cache_dir=workdir / "turnnat" / "vad", skipped=skipped))
    if not acts:
        raise ConfigError(f"{dialogues_path}: no usable two-channel dialogue to train on")
    n_dev = max(1, len(acts) // 10) if len(acts) >= 5 else 0
    dev, train = acts[:n_dev], acts[n_dev:]
    model = BuiltinPredictor.train(train, swap=swap, tbu_weight=tbu_weight)
    summary = {"dialogues": len(acts), "skipped": skipped, "train_frames": model.meta["frames"],
               "hours": round(sum(len(a) for a in train) / 50 / 3600, 3)}
    if dev:          # pick the backoff weight on held-out TBU frames; compare with state-only
        from bargein.scorers.turnnat import tbu_mask

        def dev_nll(m: BuiltinPredictor) -> float:
            return float(np.nanmean(np.concatenate([m.frame_nll(a)[tbu_mask(a)] for a in dev])))

        scores = {b: dev_nll(model.with_beta(b)) for b in BETAS}
        beta = min(scores, key=lambda b: (scores[b], b))
        base = BuiltinPredictor([np.zeros_like(c) for c in model.counts[:3]] + [model.counts[3]],
                                dict(model.meta, beta=beta))
        summary.update(beta=beta, dev_nll=round(scores[beta], 4), dev_nll_state_only=round(dev_nll(base), 4))
        model = BuiltinPredictor.train(acts, swap=swap, tbu_weight=tbu_weight).with_beta(beta)
    model.meta.update(vad=vad, labels=labels)
    model.save(out)
    summary.update(out=str(out), seconds=round(time.perf_counter() - t0, 2))
    return summary
