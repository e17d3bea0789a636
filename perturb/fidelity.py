"""Are the perturbation sidecars true? Every timing figure of every sidecar recomputed on the
written audio by an independent instrument, and the error reported.

The edits were placed with silero and the sidecars measured with silero plus 5 ms energy
boundaries; this check re-measures with the plain energy detector (10 ms frames, no padding, no
gap merging) on the natural and perturbed files, through the same :func:`measure` of the
sidecar's own candidate, and reports ``|sidecar - re-measured|`` in ms::

    rep = sidecar_report(Path("work/perturb/pairs.jsonl"), [Path("work")])
    rep["sidecar_error_ms_p95"]          # the release card's fidelity table shows it
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

# figures that are counts, flags or levels, not times
NOT_TIMES = frozenset({"in_spec", "count", "listener_in_gap", "residue_over_floor_db"})


def energy_spans(x: np.ndarray, sr: int) -> list[tuple[float, float]]:
    """Sound spans of one channel by frame energy, unpadded and unmerged."""
    from bargein.audio.vad import get_vad, segments_to_tuples

    return segments_to_tuples(get_vad("energy", pad_ms=0.0, merge_gap_ms=0.0).segments(x, sr))


def _find(rel: str, roots: list[Path]) -> Path | None:
    p = Path(rel)
    if p.is_absolute():
        return p if p.is_file() else None
    return next((r / p for r in roots if (r / p).is_file()), None)


def sidecar_errors(pairs_jsonl: Path, roots: list[Path]) -> tuple[list[float], dict[str, list[float]], int, list[str]]:
    """(every error in ms, errors by perturbation type, pairs checked, problems)."""
    from bargein.audio.io import read_audio
    from bargein.perturb.measure import measure
    from bargein.records.derived import PerturbationPair
    from bargein.store import iter_jsonl

    base = pairs_jsonl.parent
    roots = [base, *roots]
    errs: list[float] = []
    by_type: dict[str, list[float]] = {}
    problems: list[str] = []
    n = 0
    for p in iter_jsonl(pairs_jsonl, PerturbationPair):
        side_path = base / "sidecars" / f"{p.id}.json"
        nat, pert = _find(p.natural_path, roots), _find(p.perturbed_path, roots)
        if not side_path.is_file() or nat is None or pert is None:
            problems.append(f"{p.id}: sidecar or audio missing")
            continue
        side = json.loads(side_path.read_text(encoding="utf-8"))
        segs = []
        for path in (nat, pert):
            y, sr = read_audio(path)
            y = y if y.ndim == 2 else y[:, None]
            segs.append([energy_spans(np.ascontiguousarray(y[:, c]), sr) for c in range(y.shape[1])])
        if "perturbed_crop_edited_timeline_s" in side:      # turnnat-ref: the natural clip may start later
            off = float(side["crop_start_s"]) - float(side["perturbed_crop_edited_timeline_s"][0])
            segs[0] = [[(a + off, b + off) for a, b in ch] for ch in segs[0]]
        mine = measure(p.type, segs[0], segs[1], side["candidate"], side["params"])
        n += 1
        for k, v in side.get("measured", {}).items():
            if k in NOT_TIMES:
                continue
            e = abs(float(v) - mine[k]) * 1000 if k in mine else float("inf")
            errs.append(e)
            by_type.setdefault(p.type, []).append(e)
    return errs, by_type, n, problems


def sidecar_report(pairs_jsonl: str | Path, roots: list[Path]) -> dict[str, Any]:
    """The fidelity figures of a release's timing pairs (the card's hook)."""
    errs, by_type, n, problems = sidecar_errors(Path(pairs_jsonl), [Path(r) for r in roots])
    if not errs:
        return {"sidecar_error_ms_p95": "n/a", "pairs": n, "problems": problems[:10]}
    return {
        "sidecar_error_ms_p95": round(float(np.percentile(errs, 95)), 1),
        "sidecar_error_ms_max": round(float(max(errs)), 1),
        "figures": len(errs), "pairs": n,
        "by_type_p95": {t: round(float(np.percentile(e, 95)), 1) for t, e in sorted(by_type.items())},
        "instrument": "energy detector, 10 ms frames, no padding or merging",
        "problems": problems[:10],
    }
