"""Training exports for recovery post-training, in the chat format TRL and HF chat templates read.

    sft.jsonl  {"id", "messages": [system, ...history, assistant(gold)], "type", "depth", ...}
    dpo.jsonl  {"id", "prompt": [system, ...history], "chosen": [assistant(gold)],
                "rejected": [assistant(a failure)], "rejected_source", "antipattern", "type", ...}

Both load with ``datasets.load_dataset("json", data_files=...)``. The rejected side is, offline,
an anti-pattern of :mod:`bargein.generators.antipatterns`, seeded per item
(``rejected_source: "anti_pattern"``). With an LLM configured it is the model's own failing
answer to the same prompt (:mod:`bargein.generators.onpolicy`; ``rejected_source: "model"``,
``rejected_model`` its model and settings, ``rejected_failed`` what it failed); an item whose
answers all pass, or are all malformed, keeps the anti-pattern, ``rejected_fallback`` saying
why (``model_answers_passed`` / ``model_answers_malformed``, or ``model_failed`` when the model
could not be asked: ``dpo_rejects.failures.jsonl`` has the evidence). The items come from the *train*
pool of :func:`split_pools` — whole goals that never appear in the test pool (``eval_items``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bargein.generators.antipatterns import rejected_response
from bargein.generators.onpolicy import OnPolicyReject, model_label
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


def dpo_record(item: EvalItem, detail: dict[str, str], seed: int,
               onpolicy: OnPolicyReject | None = None, model: str | None = None,
               fallback: str = "") -> dict:
    """One DPO row. ``onpolicy`` is the model's result for the item (None offline, or when the
    item failed there: ``model`` then names the model, ``fallback`` why it gave no reject)."""
    if onpolicy is not None and onpolicy.source == "model":
        return {"id": f"{item.id}_dpo", "prompt": _chat(item),
                "chosen": [{"role": "assistant", "content": item.gold_recovery}],
                "rejected": [{"role": "assistant", "content": onpolicy.text}],
                "rejected_source": "model", "antipattern": "model_failure",
                "rejected_model": onpolicy.model, "rejected_failed": list(onpolicy.failed),
                **_meta(item)}
    name, bad = rejected_response(item, detail, item_rng(seed, "dpo", item.id))
    row = {"id": f"{item.id}_dpo", "prompt": _chat(item),
           "chosen": [{"role": "assistant", "content": item.gold_recovery}],
           "rejected": [{"role": "assistant", "content": bad}], "rejected_source": "anti_pattern",
           "antipattern": name, **_meta(item)}
    if onpolicy is not None:
        row.update(rejected_model=onpolicy.model, rejected_fallback="model_answers_passed")
    elif model is not None:
        row.update(rejected_model=model, rejected_fallback=fallback or "model_failed")
    return row


def _why(failure: Any) -> str:
    """The fallback a failed on-policy item gets: its answers were malformed, or the model
    could not be asked (a transport error, the budget) — the failures file has the evidence."""
    return ("model_answers_malformed" if failure is not None and "is a spoken turn" in failure.reason
            else "model_failed")


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
                  dpo: bool = True, llm: str = "offline", resources: dict[str, Any] | None = None,
                  progress: bool | None = None) -> dict[str, int]:
    """Write ``sft.jsonl`` and ``dpo.jsonl`` into ``workdir``; returns the row counts. With an
    LLM (``llm`` not offline) the rejected sides are the model's own failures where it has
    them (the ``dpo_rejects`` stage: cached, resumable, ``dpo_rejects.failures.jsonl``)."""
    from bargein.llm.base import is_offline

    workdir = Path(workdir)
    conversations = list(conversations)
    counts = {}
    if sft:
        counts["sft"] = write_jsonl(workdir / "sft.jsonl", [sft_record(i) for i in items])
    if dpo:
        details = interruption_details(conversations)
        found: dict[str, OnPolicyReject] = {}
        failed: dict[str, Any] = {}
        model = None
        if not is_offline(llm) and items:
            from bargein.generators.onpolicy import sample_rejects

            res = sample_rejects(items, conversations, llm=llm, seed=seed, workdir=workdir,
                                 resources=resources, progress=progress)
            found = {r.item_id: r for r in res.outputs}
            failed = {f.item_id: f for f in res.failures}
            model = model_label(llm)
        counts["dpo"] = write_jsonl(workdir / "dpo.jsonl", [
            dpo_record(i, details.get((i.conversation_id, i.message_index), {}), seed,
                       found.get(i.id), model if i.id not in found else None,
                       _why(failed.get(i.id)))
            for i in items])
    return counts
