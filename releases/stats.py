"""Release statistics, accumulated while rows stream past (nothing is kept per item).

The table follows IHBench Appendix A: conversations, domains, interruption points, messages per
conversation, type counts, depth bins (user turn index), plus verifier discards by reason and
audio totals.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bargein.records import (
    INTERRUPTION_TYPES, Conversation, EvalItem, MaskedItem, PerturbationPair, RenderedDialogue,
)

DEPTH_BINS: tuple[tuple[int, int], ...] = ((0, 4), (5, 9), (10, 14), (15, 19), (20, 10_000))


def depth_bin(depth: int) -> str:
    for lo, hi in DEPTH_BINS:
        if lo <= depth <= hi:
            return f"{lo}–{hi}" if hi < 10_000 else f"{lo}+"
    return "?"


def depth_bin_labels() -> list[str]:
    return [depth_bin(lo) for lo, _ in DEPTH_BINS]


def user_turn_index(conv: Conversation, message_index: int) -> int:
    """How many user messages come before message ``message_index`` (the paper's depth)."""
    return sum(1 for m in conv.messages[:message_index] if m.role == "user")


@dataclass
class ReleaseStats:
    conversations: int = 0
    domains: Counter = field(default_factory=Counter)
    messages_sum: int = 0
    messages_min: int | None = None
    messages_max: int | None = None
    interruptions: int = 0
    types: Counter = field(default_factory=Counter)
    depths: Counter = field(default_factory=Counter)
    agents: Counter = field(default_factory=Counter)
    discarded: int = 0
    discard_reasons: Counter = field(default_factory=Counter)
    verifier_issues: Counter = field(default_factory=Counter)
    eval_items: int = 0
    baselines: int = 0
    baseline_models: Counter = field(default_factory=Counter)
    audio_s: float = 0.0
    voices: Counter = field(default_factory=Counter)
    engines: Counter = field(default_factory=Counter)
    repair: Counter = field(default_factory=Counter)
    timing: Counter = field(default_factory=Counter)
    rows: dict[str, dict[str, int]] = field(default_factory=dict)

    def add_conversation(self, conv: Conversation, verdict_checks: list[str] = ()) -> None:
        n = len(conv.messages)
        self.conversations += 1
        self.domains[conv.scenario.domain.name] += 1
        self.messages_sum += n
        self.messages_min = n if self.messages_min is None else min(self.messages_min, n)
        self.messages_max = n if self.messages_max is None else max(self.messages_max, n)
        self.agents[conv.agents] += 1
        for check in verdict_checks:
            self.verifier_issues[check] += 1
        for cut, user in conv.interruptions:
            self.interruptions += 1
            self.types[cut.interruption.type] += 1
            self.depths[depth_bin(user_turn_index(conv, user.index))] += 1

    def add_discard(self, reasons: tuple[str, ...]) -> None:
        self.discarded += 1
        for r in reasons or ("unspecified",):
            self.discard_reasons[r] += 1

    def add_eval_item(self, item: EvalItem) -> None:
        self.eval_items += 1
        if item.baseline is not None:
            self.baselines += 1
            self.baseline_models[item.baseline_model or "unknown"] += 1

    def add_rendered(self, rd: RenderedDialogue) -> None:
        self.audio_s += rd.duration_s
        for role, voice in sorted(rd.voices.items()):
            self.voices[f"{role}={voice}"] += 1
        for e in rd.engines:
            self.engines[e] += 1

    def add_repair(self, m: MaskedItem) -> None:
        self.repair[f"{m.condition}/{m.signal}"] += 1

    def add_timing(self, p: PerturbationPair) -> None:
        self.timing[p.type] += 1

    def set_rows(self, config: str, split: str, n: int) -> None:
        self.rows.setdefault(config, {})[split] = n

    def to_dict(self) -> dict[str, Any]:
        mean = self.messages_sum / self.conversations if self.conversations else 0.0
        return {
            "conversations": self.conversations,
            "domains": dict(sorted(self.domains.items())),
            "interruption_points": self.interruptions,
            "messages_per_conversation": {"mean": round(mean, 2), "min": self.messages_min,
                                          "max": self.messages_max},
            "types": {t: self.types.get(t, 0) for t in INTERRUPTION_TYPES},
            "depth_bins": {b: self.depths.get(b, 0) for b in depth_bin_labels()},
            "agents": dict(sorted(self.agents.items())),
            "discarded": self.discarded,
            "discard_reasons": dict(sorted(self.discard_reasons.items())),
            "verifier_issues_by_check": dict(sorted(self.verifier_issues.items())),
            "eval_items": self.eval_items, "baselines": self.baselines,
            "baseline_models": dict(sorted(self.baseline_models.items())),
            "audio_hours": round(self.audio_s / 3600.0, 4),
            "voices": dict(sorted(self.voices.items())),
            "tts_engines": dict(sorted(self.engines.items())),
            "repair": dict(sorted(self.repair.items())),
            "timing": dict(sorted(self.timing.items())),
            "rows": {c: dict(sorted(s.items())) for c, s in sorted(self.rows.items())},
        }
