"""Run statistics in the layout of IHBench Appendix A, as a dict (``stats.json``) and a table.

    | Statistic                      | Value        |
    |--------------------------------|--------------|
    | Conversations                  | 45           |
    | Total interruption points      | 428          |
    | Pushback                       | 105 (24.5%)  |
    | 0-4                            | 169 (39.5%)  |
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable

from bargein.records import INTERRUPTION_TYPES, EvalItem, VerifiedConversation
from bargein.records.release import Failure

TYPE_ORDER = ("pushback", "impatient", "normal", "topic_switch", "filler", "correction")
DEPTH_BINS = ((0, 4), (5, 9), (10, 14), (15, 19), (20, None))
TYPE_TITLES = {"topic_switch": "Topic switch"}


def depth_bin(depth: int) -> str:
    for lo, hi in DEPTH_BINS:
        if hi is None or depth <= hi:
            return f"{lo}+" if hi is None else f"{lo}-{hi}"
    raise AssertionError(depth)


def _reason_key(reason: str) -> str:
    return reason.split(":", 1)[0].strip()


def run_stats(verified: Iterable[VerifiedConversation], items: Iterable[EvalItem],
              failures: dict[str, list[Failure]] | None = None, *, agents: str = "offline") -> dict:
    """Counts for a run; ``failures`` maps a stage name to the items it could not make."""
    verified, items = list(verified), list(items)
    accepted = [v for v in verified if v.accepted]
    lens = [len(v.conversation.messages) for v in accepted]
    types = Counter(i.type for i in items)
    depths = Counter(depth_bin(i.depth) for i in items)
    discards: Counter[str] = Counter()
    for v in verified:
        if not v.accepted:
            for key in dict.fromkeys(_reason_key(r) for r in v.discard_reasons):
                discards[f"verify: {key}"] += 1
    for stage, fails in (failures or {}).items():
        for f in fails:
            discards[f"{stage}: {f.error_type}"] += 1
    n = len(items)
    pct = lambda c: round(100.0 * c / n, 1) if n else 0.0  # noqa: E731
    return {
        "agents": agents,
        "simulated": len(verified),
        "conversations": len(accepted),
        "repaired": sum(1 for v in accepted if v.rounds > 0),
        "domains": len({v.conversation.scenario.domain.name for v in accepted}),
        "interruption_points": n,
        "messages_per_conversation": {
            "mean": round(statistics.mean(lens), 1) if lens else 0.0,
            "min": min(lens) if lens else 0, "max": max(lens) if lens else 0},
        "types": {t: {"count": types[t], "percent": pct(types[t])} for t in TYPE_ORDER},
        "depth": {depth_bin(lo): {"count": depths[depth_bin(lo)], "percent": pct(depths[depth_bin(lo)])}
                  for lo, _ in DEPTH_BINS},
        "outcomes": dict(sorted(Counter(v.conversation.outcome or "turn cap" for v in accepted).items())),
        "discards": dict(sorted(discards.items())),
    }


def format_stats(s: dict) -> str:
    """The statistics as a Markdown table (Appendix A layout)."""
    rows = [("Conversations", f"{s['conversations']} (of {s['simulated']} simulated, "
                              f"{s['repaired']} repaired)"),
            ("Domains", str(s["domains"])),
            ("Total interruption points", str(s["interruption_points"])),
            ("Avg. messages per conversation", f"{s['messages_per_conversation']['mean']:.1f}"),
            ("Min / max messages", f"{s['messages_per_conversation']['min']} / "
                                   f"{s['messages_per_conversation']['max']}"),
            ("Interruption type distribution", "")]
    for t in TYPE_ORDER:
        c = s["types"][t]
        rows.append((f"  {TYPE_TITLES.get(t, t.capitalize())}", f"{c['count']} ({c['percent']:.1f}%)"))
    rows.append(("Interruptions by depth (user turn index)", ""))
    for b, c in s["depth"].items():
        rows.append((f"  {b}", f"{c['count']} ({c['percent']:.1f}%)"))
    rows.append(("Outcomes", ", ".join(f"{k} {v}" for k, v in s["outcomes"].items()) or "-"))
    rows.append(("Discarded", str(sum(s["discards"].values()))))
    for reason, c in s["discards"].items():
        rows.append((f"  {reason}", str(c)))
    if "resampled" in s:
        rows.append(("Scenarios rescued by a re-simulation", str(s["resampled"])))
    w = max(len(r[0]) for r in rows)
    v = max(max(len(r[1]) for r in rows), 5)
    out = [f"| {'Statistic':<{w}} | {'Value':<{v}} |", f"|{'-' * (w + 2)}|{'-' * (v + 2)}|"]
    out += [f"| {a:<{w}} | {b:<{v}} |" for a, b in rows]
    return "\n".join(out)


assert set(TYPE_ORDER) == set(INTERRUPTION_TYPES)
