"""The fidelity report of a build: rendered dialogues and repair items measured on their audio.

    rep = fidelity_report("work/render.jsonl", "work/mask.jsonl", audio_root="work")
    rep["voices"]["hibari:heart"]["word_end_within_30ms"], rep["cuts"]["stop_error_ms_p95"], ...

The release card's fidelity section and ``bench/fidelity.py`` print it. ASR passes are capped at
``max_asr`` items each (a stable, id-ordered subset), so a large release costs minutes, not hours.
``rep["sidecars"]`` is filled by the perturbation stage's hook (:func:`sidecar_report`), which
measures its sidecars on the perturbed audio; without one it reads ``n/a``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bargein.audio import fidelity as F
from bargein.seeding import stable_hash


def _records(path: Path | None, cls) -> Iterator[Any]:
    if path is None or not Path(path).is_file():
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield cls.model_validate_json(line)


def _read(path: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return x, int(sr)


def _resolve(rel: str, roots: list[Path]) -> Path:
    p = Path(rel)
    if p.is_absolute():
        return p
    for r in roots:
        if (r / p).exists():
            return r / p
    raise FileNotFoundError(f"audio {rel!r} not found under {', '.join(map(str, roots))}")


def _subset(items: list, key, n: int) -> list:
    return sorted(items, key=lambda it: stable_hash("fidelity", key(it)))[:n]


def fidelity_report(rendered: str | Path | None, repair: str | Path | None = None, *,
                    audio_root: str | Path | Sequence[str | Path] = (), timing: str | Path | None = None,
                    max_asr: int = 400, asr: bool = True) -> dict[str, Any]:
    """Measure a build (see :mod:`bargein.audio.fidelity` for each figure)."""
    from bargein.audio.labels import load_frame_labels
    from bargein.records import MaskedItem, RenderedDialogue

    roots = [Path(audio_root)] if isinstance(audio_root, (str, Path)) else [Path(r) for r in audio_root]
    if rendered is not None:
        roots.append(Path(rendered).parent)
    voices: dict[str, F.VoiceWords] = {}
    cuts: list[F.CutCheck] = []
    heard: list[F.CutCheck] = []
    agree = valid = 0
    dialogues = list(_records(Path(rendered) if rendered else None, RenderedDialogue))
    cut_ids = [(d.id, s.message_index) for d in dialogues for s in d.segments if s.stop_s is not None]
    asr_ids = set(_subset(cut_ids, lambda t: t, max_asr)) if asr else set()
    for rd in dialogues:
        audio, _sr = _read(_resolve(rd.clean_audio_path or rd.audio_path, roots))
        acts = F.channel_activity(rd, audio)
        F.word_boundaries([(rd, acts)], voices)
        for c in F.cut_checks(rd, acts):
            cuts.append(c)
            if (rd.id, c.message_index) in asr_ids:
                heard.append(F.asr_heard_prefix(rd, audio, c))
        if rd.frame_labels_path:
            a, n = F.frame_label_agreement(load_frame_labels(_resolve(rd.frame_labels_path, roots)),
                                           audio, rd.sample_rate, rd.duration_s)
            agree, valid = agree + a, valid + n
    stops = [c.stop_error_ms for c in cuts]
    rep: dict[str, Any] = {
        "voices": {v: vw.summary() for v, vw in sorted(voices.items())},
        "cuts": {"cuts": len(cuts), "stop_error_ms_p95": F.p95_abs(stops),
                 "stop_within_10ms": round(float(np.mean([abs(s) <= 10 for s in stops if s is not None])), 4)
                 if any(s is not None for s in stops) else None,
                 "cut_error_ms_p95": F.p95_abs(c.cut_error_ms for c in cuts),
                 "overlap_error_ms_p95": F.p95_abs(c.overlap_error_ms for c in cuts),
                 "asr_checked": len(heard),
                 "heard_text_asr_agreement": round(float(np.mean([h.heard_agrees for h in heard])), 4)
                 if heard else None,
                 "disagreements_asr_only_adds_words": sum(bool(h.asr_only_adds_words) for h in heard),
                 "disagreements": [{"dialogue": h.dialogue_id, "message": h.message_index,
                                    "heard_text": h.heard_text[-60:], "asr": (h.asr_prefix or "")[-60:],
                                    "partial_word": h.partial_word, "partial_heard_ms": h.partial_heard_ms,
                                    "asr_only_adds_words": h.asr_only_adds_words}
                                   for h in heard if not h.heard_agrees][:20]},
        "frames": {"frames": valid,
                   "frame_label_agreement": round(agree / valid, 4) if valid else None},
    }
    items = list(_records(Path(repair) if repair else None, MaskedItem))
    rep["repair"] = _repair(items, roots + ([Path(repair).parent] if repair else []), max_asr, asr)
    rep["asr"] = {"model": "faster-whisper tiny.en", "max_items": max_asr}
    rep["sidecars"] = sidecar_report(timing, roots)
    return rep


def sidecar_report(timing: str | Path | None, roots: list[Path]) -> dict[str, Any]:
    """The perturbation sidecars measured on their audio, by the perturbation stage's own check:
    ``bargein.perturb.fidelity.sidecar_report(pairs_jsonl, audio_roots) -> {"sidecar_error_ms_p95":
    ..., ...}`` when that module exists (the hook), else ``n/a``."""
    import importlib

    if timing is None or not Path(timing).is_file():
        return {"sidecar_error_ms_p95": "n/a"}
    try:
        mod = importlib.import_module("bargein.perturb.fidelity")
    except ImportError:
        return {"sidecar_error_ms_p95": "n/a"}
    fn = getattr(mod, "sidecar_report", None)
    return dict(fn(Path(timing), list(roots))) if fn else {"sidecar_error_ms_p95": "n/a"}



def _repair(items: list, roots: list[Path], max_asr: int, asr: bool) -> dict[str, Any]:
    """Whisper on masked clips (and once on each original, the premise: does Whisper hear the
    value at all? An answerable clip can only be expected to keep a value Whisper can hear)."""
    out: dict[str, Any] = {"items": len(items), "sources": len({(it.source_id, it.message_index, it.slot)
                                                                  for it in items}),
                           "mask_len": F.mask_length_ratio(items)}
    by_cond: dict[str, list] = {"unanswerable": [], "answerable": []}
    kept_given_heard: list[bool] = []
    recovered: list[dict] = []
    originals: dict[str, bool] = {}
    if asr:
        for cond in by_cond:
            pool = [it for it in items if it.condition == cond]
            for it in _subset(pool, lambda it: it.id, max_asr):
                x, sr = _read(_resolve(it.audio_path, roots))
                hit, text = F.mask_recovery(it, x[:, 0], sr)
                by_cond[cond].append(hit)
                if cond == "answerable" and it.original_audio_path:
                    if it.original_audio_path not in originals:
                        xo, sro = _read(_resolve(it.original_audio_path, roots))
                        originals[it.original_audio_path] = F.mask_recovery(it, xo[:, 0], sro)[0]
                    if originals[it.original_audio_path]:
                        kept_given_heard.append(hit)
                if hit and cond == "unanswerable" or not hit and cond == "answerable":
                    recovered.append({"item": it.id, "answer": it.answer, "asr": text[:120]})
    for cond, hits in by_cond.items():
        out[f"{cond}_items"] = len(hits)
        out[f"{cond}_asr_recovery"] = round(float(np.mean(hits)), 4) if hits else None
    out["answerable_heard_in_original"] = len(kept_given_heard)
    out["answerable_asr_kept_given_original"] = (round(float(np.mean(kept_given_heard)), 4)
                                                 if kept_given_heard else None)
    out["evidence"] = recovered[:20]
    return out
