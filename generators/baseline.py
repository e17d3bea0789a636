"""The ``baseline`` responses TF is measured against: a configured model, as in IHBench.

    res = fill_baselines(items, llm="openai:gpt-4o-audio-preview", seed=7, workdir="work")
    res.outputs[0].baseline_model    # "openai:gpt-4o-audio-preview; temperature 0.7; ..."

IHBench's baseline is GPT-4o Audio answering from the same context; here any configured model
plays it, through ``prompts/baseline.jinja2``, and ``baseline_model`` records which model and
which settings made it. With no model (``offline`` / ``smoke``) a rule-based stand-in fills the
field for pipeline smoke tests only: it is labelled "smoke test, not a model" and is built to
never equal the gold recovery (it carries a typical flaw: a restart after a backchannel, a
generic lead-in before the rest of the interrupted message otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bargein.errors import GenerationFailed
from bargein.records import EvalItem
from bargein.runner import Stage, StageContext, run_stage

SMOKE_MODEL = "smoke-rule-baseline@2 (smoke test, not a model)"
OFFLINE_MODEL = SMOKE_MODEL          # the name older callers use
BASELINE_VERSION = "2"
DEFAULT_TEMPERATURE = 0.7
_LEADS = {"impatient": "Sure, let's move on.", "correction": "Thanks, I've updated that.",
          "topic_switch": "I can help with that once we've finished here.",
          "normal": "Thanks for letting me know.", "pushback": "I understand your concern."}


def _remainder(item: EvalItem) -> str:
    if item.heard_text and item.planned_text.startswith(item.heard_text):
        return item.planned_text[len(item.heard_text):].strip()
    return item.planned_text


def smoke_baseline(item: EvalItem) -> str:
    """The rule-based stand-in; never equal to the gold recovery."""
    if item.type == "filler":
        text = item.planned_text                        # restarts instead of continuing
    else:
        text = f"{_LEADS[item.type]} {_remainder(item)}".strip()
    if text.strip() == (item.gold_recovery or "").strip():
        text = f"Let me start again. {item.planned_text}"
    return text


def model_label(llm: str, temperature: float | None, max_tokens: int) -> str:
    from bargein.prompts import load

    return (f"{llm}; temperature {temperature if temperature is not None else 'provider default'}; "
            f"max_tokens {max_tokens}; prompt baseline v{load('baseline').version}; text history")


def _messages(item: EvalItem) -> list[dict[str, str]]:
    from bargein.prompts import render

    return [{"role": "system", "content": render("baseline", system_prompt=item.system_prompt)}] + [
        {"role": m.role, "content": m.content} for m in item.history]


def _smoke(item: EvalItem, ctx: StageContext) -> EvalItem:
    return item.with_(baseline=smoke_baseline(item), baseline_model=SMOKE_MODEL)


async def _with_llm(item: EvalItem, ctx: StageContext) -> EvalItem:
    from bargein.generators.conversation import llm_for

    cfg = ctx.config
    llm = llm_for(ctx, cfg["llm"])
    out = await llm.complete(_messages(item), agent="baseline", temperature=cfg["temperature"],
                             max_tokens=cfg["max_tokens"])
    text = out.text.strip()
    if not text:
        raise GenerationFailed(f"baseline for {item.id}: the model returned an empty response",
                               evidence={"item": item.id, "model": cfg["llm"]})
    return item.with_(baseline=text, baseline_model=cfg["label"])


def baseline_stage(llm: str = "offline", concurrency: int = 32, *,
                   temperature: float | None = DEFAULT_TEMPERATURE, max_tokens: int = 512) -> Stage:
    from bargein.llm.base import is_offline

    if is_offline(llm) or llm.strip().lower() == "smoke":
        return Stage(name="baseline", fn=_smoke, output=EvalItem, config={"llm": SMOKE_MODEL},
                     version=BASELINE_VERSION)
    cfg = {"llm": llm, "temperature": temperature, "max_tokens": max_tokens,
           "label": model_label(llm, temperature, max_tokens)}
    return Stage(name="baseline", fn=_with_llm, output=EvalItem, config=cfg,
                 version=BASELINE_VERSION, prompts=("baseline",), backends=(llm,), kind="io",
                 concurrency=concurrency)


def fill_baselines(items: list[EvalItem], *, llm: str, seed: int, workdir: str | Path,
                   resources: dict[str, Any] | None = None, progress: bool | None = None,
                   temperature: float | None = DEFAULT_TEMPERATURE, max_tokens: int = 512):
    """Every item with ``baseline`` filled; the runner's result (failures included)."""
    return run_stage(baseline_stage(llm, temperature=temperature, max_tokens=max_tokens), items,
                     workdir=workdir, seed=seed, resources=resources, progress=progress)
