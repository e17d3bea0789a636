"""The baseline stage: fill each eval item's ``baseline`` response (IHBench's GPT-4o-audio role).

    bargein baseline --llm openai:gpt-4o-audio-preview --items work/eval_items.jsonl
    bargein baseline --llm offline --items work/eval_items.jsonl     # rule-based, "offline-rule"

With a provider the model sees ``prompts/baseline.jinja2`` (the system prompt) and the history
up to the interjection and answers with ``complete``. Offline the rule-based assistant recovers
from the item's context alone, and the item is marked ``baseline_model="offline-rule"``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from bargein.generators import phrases as P
from bargein.generators.antipatterns import cut_sentence
from bargein.generators.assistant_sim import lower_first
from bargein.records import EvalItem
from bargein.runner import Stage, StageContext, run_stage

OFFLINE_MODEL = "offline-rule"
BASELINE_VERSION = "1"


def rule_baseline(item: EvalItem, rng: random.Random) -> str:
    """A context-only rule-based recovery: what the offline assistant does seeing just the item."""
    rest = item.planned_text[len(item.heard_text):].strip()
    again = cut_sentence(item.planned_text, item.heard_text)
    t = item.type
    if t == "filler":
        return rest
    if t == "impatient":
        questions = [s.strip() + "?" for s in rest.split("?")[:-1] if s.strip()]
        nxt = questions[-1].split(". ")[-1] if questions else "Let's move on to the next step."
        return P.join(P.pick(rng, "assistant", "recover_impatient"), nxt)
    if t == "pushback":
        alt = rng.choice(P.bank("assistant", "alternatives"))
        return P.join(P.pick(rng, "assistant", "recover_pushback_empathy"),
                      P.pick(rng, "assistant", "recover_pushback_offer", alternative=alt))
    lead = {"correction": "Thanks for correcting that, I've updated it.",
            "topic_switch": "I can help with that once we've finished here.",
            "normal": "Thanks for letting me know."}[t]
    return P.join(lead, rng.choice(["So,", "Now,", "Okay, so"]), lower_first(again))


def _messages(item: EvalItem) -> list[dict[str, str]]:
    from bargein.prompts import render

    return [{"role": "system", "content": render("baseline", system_prompt=item.system_prompt)}] + [
        {"role": m.role, "content": m.content} for m in item.history]


def _offline(item: EvalItem, ctx: StageContext) -> EvalItem:
    return item.with_(baseline=rule_baseline(item, ctx.rng), baseline_model=OFFLINE_MODEL)


async def _with_llm(item: EvalItem, ctx: StageContext) -> EvalItem:
    from bargein.generators.conversation import llm_for

    llm = llm_for(ctx, ctx.config["llm"])
    out = await llm.complete(_messages(item), agent="baseline")
    text = out.text.strip()
    if not text:
        from bargein.errors import GenerationFailed

        raise GenerationFailed(f"baseline for {item.id}: the model returned an empty response",
                               evidence={"item": item.id, "model": ctx.config["llm"]})
    return item.with_(baseline=text, baseline_model=ctx.config["llm"])


def baseline_stage(llm: str = "offline", concurrency: int = 32) -> Stage:
    from bargein.llm.base import is_offline

    if is_offline(llm):
        return Stage(name="baseline", fn=_offline, output=EvalItem,
                     config={"llm": OFFLINE_MODEL, "phrases": P.fingerprint()}, version=BASELINE_VERSION)
    return Stage(name="baseline", fn=_with_llm, output=EvalItem, config={"llm": llm},
                 version=BASELINE_VERSION, prompts=("baseline",), backends=(llm,), kind="io",
                 concurrency=concurrency)


def fill_baselines(items: list[EvalItem], *, llm: str, seed: int, workdir: str | Path,
                   resources: dict[str, Any] | None = None, progress: bool | None = None):
    """Every item with ``baseline`` filled; the runner's result (failures included)."""
    return run_stage(baseline_stage(llm), items, workdir=workdir, seed=seed, resources=resources,
                     progress=progress)
