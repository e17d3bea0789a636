"""Re-measure each perturbation by VAD on the output audio and check it against the spec.

``nat`` and ``pert`` are per-channel VAD segments of the natural and perturbed crops;
``c`` is the candidate in crop time and ``params`` what was drawn. The tolerance covers the
VAD's time resolution (silero decides per 32 ms window).
"""

from __future__ import annotations

from collections.abc import Sequence

from bargein.perturb.ops import BC_SPACING_S, HOLD_GAP_S, REMOVED_TURN_S, SPEC

Span = tuple[float, float]
TOLERANCE_S = 0.06
# pieces of one inserted backchannel ("mm | hm", the stop closure in "exact|ly") are one event:
# well under the spacing the spec asks between backchannels (>= 0.8 s)
BC_JOIN_S = 0.25


def _joined(segs: Sequence[Span], gap: float) -> list[Span]:
    out: list[Span] = []
    for s, e in segs:
        if out and s - out[-1][1] < gap:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _nearest(values: Sequence[float], target: float, within: float = 0.35) -> float | None:
    best = min(values, key=lambda v: abs(v - target), default=None)
    return best if best is not None and abs(best - target) <= within else None


def _onsets(segs: Sequence[Span]) -> list[float]:
    return [a for a, _ in segs]


def _offsets(segs: Sequence[Span]) -> list[float]:
    return [b for _, b in segs]


def _inside(v: float | None, lo: float, hi: float, tol: float) -> bool:
    return v is not None and lo - tol <= v <= hi + tol


def measure(kind: str, nat: Sequence[Sequence[Span]], pert: Sequence[Sequence[Span]], c: dict,
            params: dict, tol: float = TOLERANCE_S) -> dict[str, float]:
    """Measured edit sizes plus ``in_spec`` (1.0 / 0.0)."""
    A, B = c["a"], c["b"]
    m: dict[str, float] = {}
    ok = False
    if kind in ("late_response", "early_entry"):
        shift = params["delay_s"] if kind == "late_response" else -params["advance_s"]
        on_nat = _nearest(_onsets(nat[B]), c["b0"])
        on_pert = _nearest(_onsets(pert[B]), c["b0"] + shift)
        off_a = _nearest(_offsets(pert[A]), c["a1"])
        if on_nat is not None and on_pert is not None:
            moved = on_pert - on_nat
            lo, hi = SPEC[kind]
            if kind == "late_response":
                m["delay_s"] = moved
                ok = _inside(moved, lo, hi, tol) and off_a is not None
                if off_a is not None:
                    m["gap_s"] = on_pert - off_a
            else:
                m["advance_s"] = -moved
                overlap = min(off_a, on_pert + 10) - on_pert if off_a is not None else 0.0
                m["overlap_s"] = overlap
                ok = _inside(-moved, lo, hi, tol) and overlap > 0
    elif kind == "hold_instead_of_shift":
        off = _nearest(_offsets(pert[A]), c["s"])
        nxt = min((a for a in _onsets(pert[A]) if off is not None and a > off), default=None)
        turn_on = _nearest(_onsets(nat[B]), c["e"])
        turn_off = max((b for a, b in nat[B] if turn_on is not None and turn_on <= a < c["t_a"]),
                       default=None)
        if off is not None and nxt is not None and turn_on is not None and turn_off is not None:
            gap = nxt - off
            b_in_gap = any(s < nxt and e > off for s, e in pert[B])
            m.update(gap_s=gap, removed_turn_s=turn_off - turn_on, listener_in_gap=float(b_in_gap))
            ok = (_inside(gap, *SPEC[kind], tol) and not b_in_gap
                  and _inside(turn_off - turn_on, *REMOVED_TURN_S, tol))
    elif kind == "shift_instead_of_hold":
        at, t = params["at_s"], params["inserted_turn_s"]
        off = _nearest(_offsets(nat[A]), c["s"])
        nxt = min((a for a in _onsets(nat[A]) if off is not None and a > off), default=None)
        ins = [(s, e) for s, e in pert[B] if s < at + t + tol and e > at - tol]
        if off is not None and nxt is not None and ins:
            turn = max(e for _, e in ins) - min(s for s, _ in ins)
            m.update(hold_gap_s=nxt - off, inserted_turn_s=turn)
            ok = _inside(nxt - off, *HOLD_GAP_S, tol) and _inside(turn, *SPEC[kind], tol)
    elif kind == "excessive_backchannel":
        new = _joined([(s, e) for s, e in pert[B] if not any(s < ne and e > ns for ns, ne in nat[B])], BC_JOIN_S)
        # turnnat-ref spaces onsets; bargein spaces the silence between backchannels
        gaps = [b[0] - (a[0] if params.get("onset_spacing") else a[1]) for a, b in zip(new, new[1:])]
        m.update(count=float(len(new)), min_spacing_s=min(gaps) if gaps else 0.0)
        ok = SPEC[kind][0] <= len(new) <= SPEC[kind][1] and all(g >= BC_SPACING_S - tol for g in gaps)
    m["in_spec"] = 1.0 if ok else 0.0
    return {k: round(float(v), 6) for k, v in m.items()}
