"""IHBench judges: the same two verbs, offline (rule-based) or an LLM through the prompt files.

    judge = get_judge("offline")                      # or "openai:gpt-4o-mini", "anthropic:…"
    winner, deficiency, status = await judge.compare(item, response_a, response_b, sample=0)
    rq = await judge.assess(item, response, sample=0)  # RQJudgment

``compare`` must name a concrete deficiency of the loser. A length/detail-only reason ("longer",
"more detail") is rejected: the LLM judge is re-asked with the reason, and after ``reasks``
failed attempts the judgment counts as a tie with status ``judge_failed``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Protocol

from bargein.errors import GenerationFailed
from bargein.records import EvalItem
from bargein.scorers import ihbench_rules as rules

TYPE_DEFINITIONS = {
    "normal": "a relevant cut-in with a new detail or a quick clarification; recover by "
              "addressing it, then resuming the workflow with a fresh start",
    "impatient": "the user wants to skip ahead; recover by skipping the interrupted content "
                 "without re-explaining what was asked to skip",
    "correction": "the user corrects something they said in an earlier turn; recover by "
                  "accepting it without pushback, integrating the corrected value, continuing",
    "topic_switch": "an unrelated request; recover by addressing it, then steering back to the "
                    "workflow without blending the two",
    "filler": "a backchannel like 'mm-hm'; recover by continuing the interrupted utterance "
              "exactly where it was cut, without repeating, restarting or acknowledging it",
    "pushback": "resistance or dispute grounded in what the assistant said; recover by "
                "de-escalating with empathy and offering alternatives",
}
_VAGUE = frozenset("""longer shorter length lengthy long short brief briefer concise verbose wordy
more less detail details detailed elaborate elaborated comprehensive thorough thoroughly complete
completeness extensive information info content context explanation explanations response
answer it is was the a an and too very much not enough lacks lacking has have provides provide
gives give includes include contains contain fewer""".split())


def vague_deficiency(text: str) -> str | None:
    """Why ``text`` is not a concrete deficiency, or None when it names one."""
    ws = re.findall(r"[a-z]+", (text or "").lower())
    if len(ws) < 3:
        return "too short to name a concrete deficiency"
    if all(w in _VAGUE for w in ws):
        return "only about length or amount of detail"
    return None


class Judge(Protocol):
    id: str

    async def compare(self, item: EvalItem, a: str, b: str, *, sample: int) -> tuple[str, str, str]: ...

    async def assess(self, item: EvalItem, response: str, *, sample: int): ...


class OfflineJudge:
    """The rule-based judge (``bargein.scorers.ihbench_rules``): deterministic, no network."""

    id = "offline-rules@1"

    async def compare(self, item: EvalItem, a: str, b: str, *, sample: int) -> tuple[str, str, str]:
        winner, deficiency = rules.compare(item, a, b)
        if winner == "tie":
            return "tie", "", "tie"
        if vague_deficiency(deficiency):
            return "tie", deficiency, "judge_failed"
        return winner, deficiency, "ok"

    async def assess(self, item: EvalItem, response: str, *, sample: int):
        from bargein.scorers.ihbench import CriterionVerdict, RQJudgment

        crit = [CriterionVerdict(criterion=c, met=ok, reason=why)
                for c, ok, why in rules.assess(item, response)]
        return RQJudgment(criteria=crit, verdict="pass" if all(c.met for c in crit) else "fail")


def _context(item: EvalItem) -> dict:
    return {"system_prompt": item.system_prompt,
            "history": [{"role": m.role, "content": m.content} for m in item.history],
            "planned_text": item.planned_text, "heard_text": item.heard_text,
            "interjection": item.interjection, "type": item.type}


class LLMJudge:
    """Renders ``judge_tf`` / ``judge_rq`` and asks any provider for a schema-checked answer."""

    def __init__(self, spec: str, *, workdir: Path, reasks: int = 2, llm=None):
        self.spec = spec
        self.id = f"{spec} (prompts judge_tf, judge_rq)"
        self.reasks = reasks
        if llm is None:
            from bargein.llm import get_llm

            llm = get_llm(spec, workdir=workdir)
        self.llm = llm                    # anything with ``async structured(messages, Schema, ...)``

    async def compare(self, item: EvalItem, a: str, b: str, *, sample: int) -> tuple[str, str, str]:
        from bargein.prompts import render
        from bargein.scorers.ihbench import TFJudgment

        chat = [{"role": "user", "content": render(
            "judge_tf", **_context(item), tf_criterion=item.rubric.tf_criterion,
            response_a=a, response_b=b)}]
        last = ""
        for _ in range(self.reasks + 1):
            try:
                ans = await self.llm.structured(chat, TFJudgment, agent="judge_tf", sample=sample)
            except GenerationFailed as e:
                return "tie", f"judge gave no valid answer: {e}", "judge_failed"
            ans = ans if isinstance(ans, TFJudgment) else TFJudgment.model_validate(ans)
            why = vague_deficiency(ans.loser_deficiency)
            if why is None:
                return ans.winner, ans.loser_deficiency, "ok"
            last = ans.loser_deficiency
            chat = chat + [
                {"role": "assistant", "content": json.dumps(ans.model_dump(), ensure_ascii=False)},
                {"role": "user", "content": f"'{ans.loser_deficiency}' is not accepted: it is {why}. "
                 "Name one concrete thing the losing response does wrong or fails to do in this "
                 "context, and answer again with the JSON object only."}]
        return "tie", last, "judge_failed"

    async def assess(self, item: EvalItem, response: str, *, sample: int):
        from bargein.prompts import render
        from bargein.scorers.ihbench import CriterionVerdict, RQJudgment

        chat = [{"role": "user", "content": render(
            "judge_rq", **_context(item), type_definition=TYPE_DEFINITIONS[item.type],
            rq_criteria=list(item.rubric.rq_criteria), response=response)}]
        for _ in range(self.reasks + 1):
            try:
                ans = await self.llm.structured(chat, RQJudgment, agent="judge_rq", sample=sample)
            except GenerationFailed:
                break
            ans = ans if isinstance(ans, RQJudgment) else RQJudgment.model_validate(ans)
            if len(ans.criteria) == len(item.rubric.rq_criteria):
                # the verdict is mechanical: recompute it from the criteria, never trust it
                crit = [CriterionVerdict(criterion=c, met=v.met, reason=v.reason)
                        for c, v in zip(item.rubric.rq_criteria, ans.criteria)]
                return RQJudgment(criteria=crit, verdict="pass" if all(c.met for c in crit) else "fail")
            chat = chat + [
                {"role": "assistant", "content": json.dumps(ans.model_dump(), ensure_ascii=False)},
                {"role": "user", "content": f"You assessed {len(ans.criteria)} criteria; there are "
                 f"{len(item.rubric.rq_criteria)}. Assess each one, in order, and answer again."}]
        crit = [CriterionVerdict(criterion=c, met=False, reason="judge gave no valid answer")
                for c in item.rubric.rq_criteria]
        return RQJudgment(criteria=crit, verdict="fail")


def get_judge(spec: str | None, *, workdir: Path) -> Judge:
    from bargein.llm.base import is_offline

    if is_offline(spec):
        return OfflineJudge()
    return LLMJudge(spec, workdir=workdir)
