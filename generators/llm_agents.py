"""The LLM agents of the simulate stage: round planner, assistant and user simulators.

Each agent renders its prompt (:mod:`bargein.generators.llm_messages`), asks
``llm.structured`` for a schema-checked object and checks it against the round plan with the
same checks the rule-based agents pass (:func:`ask_valid`): an answer that breaks the plan is
re-asked with the errors and a new sampling seed, then :class:`PlanBroken` carries every attempt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from bargein.errors import BackendUnavailable
from bargein.generators import phrases as P
from bargein.generators.assistant_sim import AssistantTurn, check_turn
from bargein.generators.llm_messages import assistant_messages, history_view, user_messages
from bargein.generators.planner import ConversationState, RoundPlan
from bargein.generators.user_sim import (
    Interjected, PlanBroken, UserInterjection, UserReply, anchors, check_interjection, check_reply,
    user_plan,
)
from bargein.prompts import render
from bargein.records import Conversation, Scenario
from bargein.runner import StageContext

ASK_ATTEMPTS = 3        # one answer + two re-asks with the errors


class PlannerOut(BaseModel):
    """LLM round planner output: the round's content, consistent with the sampled decisions."""

    model_config = ConfigDict(extra="forbid")
    assistant_goal: str
    user_goal: str
    interrupt: bool
    type: str | None = None
    cut_after: str = ""
    rationale: str = ""


async def ask_valid(llm: Any, messages: list[dict[str, str]], schema: type[BaseModel], *,
                    agent: str, check: Callable[[Any], list[str]], sample: int = 0) -> Any:
    """Ask for ``schema``; re-ask with the plan errors; raise :class:`PlanBroken` with evidence."""
    attempts: list[dict[str, Any]] = []
    msgs = list(messages)
    for n in range(ASK_ATTEMPTS):
        obj = await llm.structured(msgs, schema, agent=agent, sample=sample * ASK_ATTEMPTS + n)
        errs = check(obj)
        if not errs:
            return obj
        answer = obj.model_dump_json()
        attempts.append({"attempt": n, "answer": json.loads(answer), "errors": errs})
        msgs = msgs + [{"role": "assistant", "content": answer},
                       {"role": "user", "content": "Your answer breaks the plan:\n- " + "\n- ".join(errs)
                        + "\nAnswer again with the whole JSON object, fixed."}]
    raise PlanBroken(f"{agent}: {len(attempts)} answers broke the plan; last: {attempts[-1]['errors']}",
                     evidence={"agent": agent, "attempts": attempts})


class LLMAgents:
    """Every agent through ``llm.structured`` with its own prompt; answers checked against the plan."""

    def __init__(self, scenario: Scenario, llm: Any, spec: str):
        self.scenario, self.llm, self.name = scenario, llm, spec

    async def refine_plan(self, plan: RoundPlan, st: ConversationState, messages, rng, sample) -> RoundPlan:
        sc = self.scenario
        stage = sc.kb.workflow.stage(plan.stage) if plan.stage in sc.kb.workflow.stage_names else None
        prompt = render("round_planner", domain=sc.domain.title, goal=sc.goal.description,
                        profile=sc.intent.profile,
                        stage=json.dumps(stage.model_dump(exclude={"id"}) if stage else {}, indent=1),
                        history=history_view(messages), decisions=json.dumps({
                            "assistant_action": plan.assistant_action,
                            "content": plan.unit.text if plan.unit else "",
                            "asks_for": list(plan.unit.keys) if plan.unit else [],
                            "user_action": plan.user_action, "user_facts": plan.user_facts,
                            "interrupt": plan.interrupt, "type": plan.type, "detail": plan.detail,
                            "recovering_from": plan.recovery.type if plan.recovery else None},
                            indent=1))

        def check(out: PlannerOut) -> list[str]:
            errs = []
            if out.interrupt != plan.interrupt:
                errs.append(f"interrupt must be {plan.interrupt} in this round")
            if plan.interrupt and out.type != plan.type:
                errs.append(f"the interruption type must be {plan.type!r}, not {out.type!r}")
            if not out.assistant_goal.strip():
                errs.append("assistant_goal is empty")
            return errs

        out = await ask_valid(self.llm, [{"role": "user", "content": prompt}], PlannerOut,
                              agent="round_planner", check=check, sample=sample)
        return plan.model_copy(update={"assistant_goal": out.assistant_goal,
                                       "user_goal": out.user_goal,
                                       "rationale": out.rationale or plan.rationale})

    async def assistant_turn(self, plan, messages, rng, sample) -> AssistantTurn:
        agent, msgs = assistant_messages(plan, self.scenario, messages)
        return await ask_valid(self.llm, msgs, AssistantTurn, agent=agent,
                               check=lambda t: check_turn(plan, t), sample=sample)

    async def user_reply(self, plan, heard, rng, sample) -> str:
        up = user_plan(plan)
        agent, msgs = user_messages(up, heard)
        out = await ask_valid(self.llm, msgs, UserReply, agent=agent,
                              check=lambda r: check_reply(up, r.utterance), sample=sample)
        return out.utterance.strip()

    async def user_interject(self, plan, message, content_start, context, heard, rng, sample) -> Interjected:
        up = user_plan(plan)
        agent, msgs = user_messages(up, heard, message, content_start)
        out = await ask_valid(
            self.llm, msgs, UserInterjection, agent=agent, sample=sample,
            check=lambda o: check_interjection(up, message, content_start, o.heard_prefix,
                                               o.interjection, context))
        heard_text = out.heard_prefix.rstrip()
        k = P.word_index_of_prefix(message, heard_text)
        assert k is not None
        detail = dict(plan.detail)
        if plan.type in ("pushback", "normal") and "anchor" not in detail:
            said = [a for a in anchors(heard_text[content_start:]) if _said(out.interjection, a)]
            if said:                           # what the caller picked up on, for the recovery
                detail["anchor"] = said[-1]
        return Interjected(heard=heard_text, cut_word_index=k, interjection=out.interjection.strip(),
                           overlap_ms=plan.overlap_ms or 300, detail=detail)


def _said(text: str, phrase: str) -> bool:
    from bargein.verify.text import contains_phrase

    core = re.sub(r"^(?:the|a|an|my|your|this|that|our)\s+", "", phrase)
    return contains_phrase(text, phrase) or contains_phrase(text, core)


def llm_for(ctx: StageContext, spec: str) -> Any:
    """The stage's LLM client: ``ctx.resources['llm']`` or ``get_llm(spec)``."""
    llm = ctx.resources.get("llm")
    if llm is None:
        try:
            from bargein.llm import get_llm
        except ImportError as e:
            raise BackendUnavailable(f"--llm {spec}: bargein.llm.get_llm is not available ({e}). "
                                     "Fix: use --llm offline") from e
        llm = ctx.resources["llm"] = get_llm(spec, workdir=ctx.workdir)
    return llm


async def simulate_llm(scenario: Scenario, ctx: StageContext) -> Conversation:
    from bargein.generators.conversation import simulate

    spec = ctx.config["llm"]
    return await simulate(scenario, ctx.rng, LLMAgents(scenario, llm_for(ctx, spec), spec))
