"""Training exports for recovery post-training, in the chat format TRL and HF chat templates read.

    sft.jsonl  {"id", "messages": [system, ...history, assistant(gold)], "type", "depth", ...}
    dpo.jsonl  {"id", "prompt": [system, ...history], "chosen": [assistant(gold)],
                "rejected": [assistant(anti-pattern)], "antipattern", "type", ...}

Both load with ``datasets.load_dataset("json", data_files=...)``; the rejected side comes from
:mod:`bargein.generators.antipatterns`, seeded per item. The items come from the *train* pool of
:func:`split_pools` — whole goals that never appear in the test pool (``eval_items``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from bargein.generators.antipatterns import rejected_response
from bargein.records import Conversation, EvalItem
from bargein.seeding import item_rng, stable_int
from bargein.store import write_jsonl


def _chat(item: EvalItem) -> list[dict[str, str]]:
    return [{"role": "system", "content": item.system_prompt}] + [
        {"role": m.role, "content": m.content} for m in item.history]


def _meta(item: EvalItem) -> dict:
    return {"eval_item": item.id, "conversation_id": item.conversation_id, "domain": item.domain,
            "type": item.type, "depth": item.depth}


def sft_record(item: EvalItem) -> dict:
    return {"id": f"{item.id}_sft", "messages": _chat(item) + [
        {"role": "assistant", "content": item.gold_recovery}], **_meta(item)}


def dpo_record(item: EvalItem, detail: dict[str, str], seed: int) -> dict:
    name, bad = rejected_response(item, detail, item_rng(seed, "dpo", item.id))
    return {"id": f"{item.id}_dpo", "prompt": _chat(item),
            "chosen": [{"role": "assistant", "content": item.gold_recovery}],
            "rejected": [{"role": "assistant", "content": bad}], "antipattern": name, **_meta(item)}


def interruption_details(conversations: Iterable[Conversation]) -> dict[tuple[str, int], dict]:
    """(conversation id, interjection index) -> the interruption's plan details."""
    out = {}
    for conv in conversations:
        for p in conv.plan:
            if p.interrupt and p.message_index is not None:
                out[(conv.id, p.message_index + 1)] = dict(p.detail)
    return out


def goal_key(conv: Conversation) -> str:
    return f"{conv.scenario.domain.name}/{conv.scenario.goal.name}"


def split_pools(conversations: Iterable[Conversation], *, seed: int,
                train_percent: int = 30) -> dict[str, str]:
    """conversation id -> "train" | "test": whole goals (domain/goal templates, so no talking
    point of a test goal is ever a training target) go to one pool. Goals are ordered by a
    stable hash of (seed, goal); the first ``train_percent`` of them (at least one and at most
    all but one, when there are two or more) are the training pool."""
    conversations = list(conversations)
    goals = sorted({goal_key(c) for c in conversations},
                   key=lambda g: (stable_int("pool", seed, g), g))
    n = len(goals)
    k = round(n * train_percent / 100)
    if n >= 2 and train_percent > 0:
        k = min(n - 1, max(1, k))
    else:
        k = 0
    train = set(goals[:k])
    return {c.id: "train" if goal_key(c) in train else "test" for c in conversations}


def split_record(conversations: Iterable[Conversation], pools: dict[str, str],
                 train_percent: int) -> dict:
    """What the card reports about the split (goals and conversations per pool, overlap)."""
    goals: dict[str, set[str]] = {"train": set(), "test": set()}
    convs = {"train": 0, "test": 0}
    for c in conversations:
        p = pools.get(c.id, "test")
        goals[p].add(goal_key(c))
        convs[p] += 1
    return {"by": "domain/goal", "train_percent": train_percent,
            "train_goals": len(goals["train"]), "test_goals": len(goals["test"]),
            "train_conversations": convs["train"], "test_conversations": convs["test"],
            "goal_overlap": len(goals["train"] & goals["test"])}


def write_exports(items: list[EvalItem], conversations: Iterable[Conversation],
                  workdir: str | os.PathLike, *, seed: int, sft: bool = True,
                  dpo: bool = True) -> dict[str, int]:
    """Write ``sft.jsonl`` and ``dpo.jsonl`` into ``workdir``; returns the row counts."""
    workdir = Path(workdir)
    counts = {}
    if sft:
        counts["sft"] = write_jsonl(workdir / "sft.jsonl", [sft_record(i) for i in items])
    if dpo:
        details = interruption_details(conversations)
        counts["dpo"] = write_jsonl(workdir / "dpo.jsonl", [
            dpo_record(i, details.get((i.conversation_id, i.message_index), {}), seed)
            for i in items])
    return counts
