"""LLM checks (LLM path only): naturalness and interruption-type fit, plus anything else the
verifier model finds that the deterministic checks missed.

The verifier sees the whole conversation, the knowledge base, the user intent and the type
definitions (as in IHBench, Appendix I.6); each issue it reports is fixable (a rewrite
instruction for the modifier) or unfixable (the conversation is discarded).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from bargein.errors import GenerationFailed
from bargein.prompts import render
from bargein.records.conversation import Conversation, Verdict
from bargein.verify.edits import rewrite_edit
from bargein.verify.modifier import REASKS, LLMClient, message_view

VERIFIER_PROMPT = "verifier"
LLMCheck = Literal["naturalness", "type_fit", "state_machine_leakage", "undelivered_content",
                   "other"]


class LLMIssue(BaseModel):
    check: LLMCheck
    message_index: int
    issue: str
    fixable: bool
    instruction: str = ""       # for the modifier: what to change in that message


class VerifierReport(BaseModel):
    """The LLM verifier's answer; an empty ``issues`` list means the conversation passes."""

    issues: list[LLMIssue]


def _kb_view(conv: Conversation) -> dict:
    kb = conv.scenario.kb
    return {
        "stages": [{"name": s.name, "description": s.description,
                    "skip_conditions": list(s.skip_conditions),
                    "failure_handling": list(s.failure_handling),
                    "termination_conditions": list(s.termination_conditions)}
                   for s in kb.workflow.stages],
        "terminals": list(kb.workflow.terminals),
        "guidelines": list(kb.guidelines) + list(conv.scenario.domain.guidelines),
        "user_facts": {f.key: f.value for f in kb.user_facts},
    }


def _intent_view(conv: Conversation) -> dict:
    it = conv.scenario.intent
    return {"profile": it.profile,
            "hidden_facts": {f.key: f.value for f in it.hidden_facts},
            "corrections": [c.model_dump(exclude={"id"}) for c in it.corrections]}


def _validate(conv: Conversation, report: VerifierReport) -> list[str]:
    n = len(conv.messages)
    errors = []
    for k, iss in enumerate(report.issues):
        if not 0 <= iss.message_index < n:
            errors.append(f"issues[{k}].message_index {iss.message_index} is outside 0..{n - 1}")
        if iss.fixable and not iss.instruction.strip():
            errors.append(f"issues[{k}] is fixable but has no instruction for the modifier")
    return errors


def to_verdicts(conv: Conversation, report: VerifierReport) -> list[Verdict]:
    out = []
    for iss in report.issues:
        msg = conv.messages[iss.message_index]
        edit = rewrite_edit(msg, iss.instruction.strip()).to_str() if iss.fixable else None
        out.append(Verdict(check=f"llm_{iss.check}", message_index=iss.message_index,
                           issue=iss.issue, fixable=iss.fixable, edit=edit,
                           evidence=msg.text[:300]))
    return out


async def llm_checks(conv: Conversation, llm: LLMClient, *,
                     known: Sequence[Verdict] = ()) -> list[Verdict]:
    """Ask the verifier model; re-ask on an answer that names no message or lacks instructions.

    ``known``: issues the deterministic checks already found this round (not to be repeated).
    """
    prompt = render(
        VERIFIER_PROMPT, domain=conv.scenario.domain.title, goal=conv.scenario.goal.description,
        knowledge_base=json.dumps(_kb_view(conv), ensure_ascii=False, indent=1),
        user_intent=json.dumps(_intent_view(conv), ensure_ascii=False, indent=1),
        messages=message_view(conv.messages),
        known_issues=[f"message {v.message_index}: {v.check}: {v.issue}" for v in known])
    chat = [{"role": "user", "content": prompt}]
    answers, errors = [], []
    for _ in range(REASKS + 1):
        # schema errors are re-asked by the client; here: answers that name no real message
        report = await llm.structured(chat, VerifierReport, agent="verifier", sample=0)
        answers.append(report.model_dump())
        errors = _validate(conv, report)
        if not errors:
            return to_verdicts(conv, report)
        chat = chat + [
            {"role": "assistant", "content": json.dumps(report.model_dump(), ensure_ascii=False)},
            {"role": "user", "content": "Your answer is invalid: " + "; ".join(errors)
             + ". Answer again with the JSON object only."}]
    raise GenerationFailed(
        f"verifier: no valid answer for conversation {conv.id} after {REASKS + 1} attempts "
        f"({'; '.join(errors)})", evidence={"answers": answers, "errors": errors})
