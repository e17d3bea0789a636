"""The LLM rubric generator: one task-fulfillment criterion and 2-4 recovery-quality criteria
per interruption, written by a model from the conversation up to the interjection, the cut and
the recovery round's plan; checked (:func:`check_rubric`) and re-asked like every agent's answer.
The rule-based form and the slots both forms share are in :mod:`bargein.generators.rubric`.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bargein.generators.facts import find_placeholders
from bargein.generators.llm_agents import ask_valid, llm_for
from bargein.generators.llm_messages import history_view
from bargein.generators.rubric import _indices, interruption_context, recovery_plans
from bargein.prompts import render
from bargein.records import INTERRUPTION_TYPES, Conversation, Rubric
from bargein.runner import StageContext


class RubricOut(BaseModel):
    """LLM rubric generator output (the content rules the checks apply are in the schema too)."""

    model_config = ConfigDict(extra="forbid")
    tf_criterion: str = Field(min_length=20, max_length=400)
    rq_criteria: list[Annotated[str, StringConstraints(min_length=15, max_length=300)]] = Field(
        min_length=2, max_length=4)


_LABELS = frozenset({*INTERRUPTION_TYPES, "normal", "interruption", "recovery", "filler",
                     "pass", "fail", "yes", "no"})
MIN_CRITERION_WORDS = 4


def check_rubric(out: RubricOut) -> list[str]:
    """Content rules: 2-4 distinct full-sentence criteria, none a type label, no placeholders."""
    errs = []
    rq = [c.strip() for c in out.rq_criteria if c.strip()]
    if len(out.tf_criterion.split()) < MIN_CRITERION_WORDS:
        errs.append("tf_criterion must be a full sentence naming the next goal")
    if not 2 <= len(rq) <= 4 or len({c.lower() for c in rq}) != len(rq):
        errs.append(f"rq_criteria must be 2-4 distinct pass/fail checks, got {len(rq)}")
    labels = [c for c in rq if len(c.split()) < MIN_CRITERION_WORDS
              or c.lower().strip(" .").replace(" ", "_") in _LABELS]
    if labels:
        errs.append(f"rq_criteria {labels} are labels, not pass/fail checks: write each as a "
                    "sentence saying what the response must do")
    found = find_placeholders(" ".join([out.tf_criterion, *rq]))
    if found:
        errs.append(f"placeholders: {found[:3]}")
    return errs


async def llm_rubric(conv: Conversation, idx: int, llm: Any, rng: random.Random) -> Rubric:
    cut = conv.messages[idx - 1]
    nxt = recovery_plans(conv).get(idx)
    system = render("rubric_generator", system_prompt=conv.scenario.system_prompt)
    prompt = render("rubric_interruption",
                    history=history_view(conv.messages[: idx + 1]), type=cut.interruption.type,
                    heard=json.dumps(cut.interruption.heard_text),
                    unsaid=json.dumps(cut.text[len(cut.interruption.heard_text):]),
                    interjection=json.dumps(conv.messages[idx].text),
                    next_step=json.dumps((nxt.assistant_goal or nxt.rationale) if nxt is not None else ""),
                    details=json.dumps(interruption_context(conv, idx)))
    out = await ask_valid(llm, [{"role": "system", "content": system},
                                {"role": "user", "content": prompt}], RubricOut,
                          agent="rubric_generator", check=check_rubric)
    return Rubric(message_index=idx, type=cut.interruption.type,
                  tf_criterion=out.tf_criterion.strip(),
                  rq_criteria=tuple(c.strip() for c in out.rq_criteria if c.strip()))


async def rubrics_llm(conv: Conversation, ctx: StageContext) -> Conversation:
    llm = llm_for(ctx, ctx.config["llm"])
    rubrics = await asyncio.gather(*(llm_rubric(conv, i, llm, random.Random(ctx.item_seed + i))
                                     for i in _indices(conv)))
    return conv.with_(rubrics=tuple(rubrics))
