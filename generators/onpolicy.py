"""On-policy rejected responses for DPO: the configured model's own failures.

    res = sample_rejects(train_items, conversations, llm="openai:gpt-4o-mini", seed=7, workdir="work")
    res.outputs[0].source      # "model": ``text`` is a failing answer of the model; "none"

With an LLM configured, every training item is put to the model as a responder gets it (the
``baseline`` prompt: the system prompt and the history up to the interjection, the cut turn as
heard), up to ``samples`` answers at ``temperature`` (sample k is its own cache entry and
provider seed). The agent is ``policy``: route it to the model being trained with
``BARGEIN_LLM_AGENTS=policy=openai:my-model`` (or a build config's ``llm_agents``); otherwise
the stage's ``--llm`` answers. Each answer, in sample order, is checked until one fails:

1. form: a spoken turn — not empty, not cut at ``max_tokens``, no JSON, markup, code fence or
   role label. An answer that is not is skipped (it teaches nothing about recovery); when no
   answer is, the item fails (``dpo_rejects.failures.jsonl``, with the answers as evidence) and
   its DPO row keeps the offline anti-pattern, the batch going on;
2. the release's deterministic checks (:func:`bargein.verify.checks.run_checks`): the answer is
   put in the gold recovery's place (the conversation cut after it) and every verdict the gold
   itself does not get there is a failure of the answer (an ignored volunteered fact, a value
   re-asked, a false "you said", a broken quoted criterion, casing ...);
3. the rubric, by the IHBench judge (:class:`bargein.scorers.ihbench_judges.LLMJudge`, agents
   ``judge_tf`` / ``judge_rq_*``): TF fails when the gold recovery wins the pairwise judgment
   in both orders; RQ fails on a criterion the judge finds not met or broken (a "met" without
   quoted evidence, downgraded by the judge's own evidence rule, does not count against it).

The first failing answer is the rejected response (``source="model"``, with what it failed);
when every well-formed answer passes, ``source="none"`` and the export keeps the offline
anti-pattern. Results are cached per item like every stage (the LLM answers too), so a rerun
is deterministic and a killed run resumes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from bargein.errors import GenerationFailed
from bargein.records import Conversation, EvalItem
from bargein.records.base import Record
from bargein.runner import Stage, StageContext, StageResult, run_stage

ONPOLICY_VERSION = "1"
POLICY_AGENT = "policy"
JUDGE_AGENTS = ("judge_tf", "judge_rq_criterion", "judge_rq_avoid")
DEFAULT_SAMPLES = 3
DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 512


class OnPolicyReject(Record):
    """What the model answered to one training item and whether an answer failed."""

    id_prefix = "onp"
    item_id: str
    source: Literal["model", "none"]
    text: str = ""                       # the failing answer (source "model")
    sample: int | None = None            # which sample it was
    failed: tuple[str, ...] = ()         # "check <name>: <issue>" | "tf: <deficiency>" | "rq: <criterion>"
    checked: int = 0                     # well-formed answers checked
    malformed: int = 0                   # answers skipped for their form
    model: str = ""                      # model and settings (:func:`model_label`)


# ---- 1. form -----------------------------------------------------------------------------------
_ROLE = re.compile(r"^\s*(?:\*\*)?(?:assistant|agent|user|caller|system|representative)(?:\*\*)?\s*:",
                   re.I)
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s|[-*]\s|\d+\.\s)|```|</?[a-z]+>", re.I | re.M)


def malformed(text: str, truncated: bool = False) -> str:
    """Why ``text`` is not a spoken turn ('' when it is)."""
    t = text.strip()
    if not t:
        return "empty answer"
    if truncated:
        return "answer cut at max_tokens"
    if t[0] in "{[":
        return "JSON, not a spoken turn"
    if _ROLE.match(t):
        return "starts with a role label"
    if _MARKUP.search(t):
        return "markup (a heading, list, tag or code fence), not a spoken turn"
    return ""


# ---- 2. the release's deterministic checks -----------------------------------------------------
def _replied(conv: Conversation, idx: int, reply: str) -> Conversation:
    """``conv`` up to interjection ``idx``, then ``reply`` as the assistant's next turn."""
    from bargein.records.conversation import Message

    msgs = list(conv.messages[: idx + 1])
    nxt = conv.messages[idx + 1] if idx + 1 < len(conv.messages) else None
    stage = nxt.stage if nxt is not None and nxt.role == "assistant" else msgs[-1].stage
    msgs.append(Message(index=idx + 1, role="assistant", text=reply, stage=stage))
    golds = {k: v for k, v in conv.gold_recoveries.items() if k < idx}
    golds[idx] = reply
    return conv.with_(messages=tuple(msgs), gold_recoveries=golds, outcome=None,
                      rubrics=tuple(r for r in conv.rubrics if r.message_index <= idx))


def check_failures(conv: Conversation | None, item: EvalItem, answer: str) -> list[str]:
    """Verdicts of the deterministic checks the answer gets in the gold's place and the gold
    does not (by check and message)."""
    if conv is None:
        return []
    from bargein.verify.checks import run_checks

    idx = item.message_index
    base = {(v.check, v.message_index) for v in run_checks(_replied(conv, idx, item.gold_recovery))}
    return [f"check {v.check}: {v.issue}" for v in run_checks(_replied(conv, idx, answer))
            if (v.check, v.message_index) not in base]


# ---- 3. the rubric -------------------------------------------------------------------------------
async def rubric_failures(judge: Any, item: EvalItem, answer: str) -> list[str]:
    """TF: the gold beats the answer in both orders; RQ: a criterion judged not met or broken."""
    from bargein.scorers.ihbench_judges import RQJudgment

    tf = await judge.compare(item, answer, item.gold_recovery, sample=0)
    if tf.status == "ok" and tf.winner == "B":
        return [f"tf: {tf.deficiency}"]
    rq = await judge.assess(item, answer, sample=0)
    if isinstance(rq, RQJudgment):
        return [f"rq: {c.criterion} ({c.reason})" for c in rq.criteria
                if not c.met and not c.reason.startswith("judged met")]
    return []


# ---- the stage ---------------------------------------------------------------------------------
def _messages(item: EvalItem) -> list[dict[str, str]]:
    from bargein.prompts import render

    return [{"role": "system", "content": render("baseline", system_prompt=item.system_prompt)}] + [
        {"role": m.role, "content": m.content} for m in item.history]


def model_label(llm: str, samples: int = DEFAULT_SAMPLES,
                temperature: float | None = DEFAULT_TEMPERATURE,
                max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """Which model answered and how: the ``policy`` agent's model (its route, else ``llm``),
    sampling, the prompt version and the judge."""
    from bargein.llm import agent_models
    from bargein.prompts import load

    policy = agent_models().get(POLICY_AGENT, llm)
    judge = agent_models().get("judge_tf", llm)
    return (f"{policy}; {samples} samples; temperature "
            f"{temperature if temperature is not None else 'provider default'}; max_tokens "
            f"{max_tokens}; prompt baseline v{load('baseline').version}; judged by {judge} "
            f"(judge_tf v{load('judge_tf').version} both orders, judge_rq_criterion "
            f"v{load('judge_rq_criterion').version} + judge_rq_avoid "
            f"v{load('judge_rq_avoid').version}) and the release's deterministic checks")


async def _reject(item: EvalItem, ctx: StageContext) -> OnPolicyReject:
    from bargein.generators.llm_agents import llm_for
    from bargein.scorers.ihbench_judges import LLMJudge

    cfg = ctx.config
    llm = llm_for(ctx, cfg["llm"])
    judge = ctx.resources.get("judge")
    if judge is None:
        judge = ctx.resources["judge"] = LLMJudge(cfg["llm"], workdir=ctx.workdir, llm=llm)
    conv = (ctx.resources.get("conversations") or {}).get(item.conversation_id)
    skipped: list[dict[str, Any]] = []
    checked = 0
    for k in range(cfg["samples"]):
        out = await llm.complete(_messages(item), agent=POLICY_AGENT, sample=k,
                                 temperature=cfg["temperature"], max_tokens=cfg["max_tokens"])
        why = malformed(out.text, out.truncated)
        if why:
            skipped.append({"sample": k, "reason": why, "answer": out.text[:300]})
            continue
        answer = " ".join(out.text.split())
        checked += 1
        if answer == " ".join(item.gold_recovery.split()):
            continue                                     # the gold itself: nothing to reject
        failed = check_failures(conv, item, answer) or await rubric_failures(judge, item, answer)
        if failed:
            return OnPolicyReject(id=f"{item.id}_onp", item_id=item.id, source="model", text=answer,
                                  sample=k, failed=tuple(failed), checked=checked,
                                  malformed=len(skipped), model=cfg["label"])
    if not checked:
        raise GenerationFailed(
            f"on-policy reject for {item.id}: none of the {cfg['samples']} answers of "
            f"{cfg['label'].split(';')[0]} is a spoken turn ({skipped[-1]['reason']}); the DPO row "
            "keeps the offline anti-pattern",
            evidence={"item": item.id, "model": cfg["label"], "answers": skipped})
    return OnPolicyReject(id=f"{item.id}_onp", item_id=item.id, source="none", checked=checked,
                          malformed=len(skipped), model=cfg["label"])


def reject_stage(llm: str, *, samples: int = DEFAULT_SAMPLES,
                 temperature: float | None = DEFAULT_TEMPERATURE,
                 max_tokens: int = DEFAULT_MAX_TOKENS, concurrency: int = 16) -> Stage:
    from bargein.llm import stage_agent_models, stage_concurrency

    if samples < 1:
        raise ValueError(f"on-policy rejects: samples={samples}; it must be >= 1")
    routed = stage_agent_models(llm, (POLICY_AGENT, *JUDGE_AGENTS))
    cfg = {"llm": llm, "samples": samples, "temperature": temperature, "max_tokens": max_tokens,
           "label": model_label(llm, samples, temperature, max_tokens),
           **({"agents": routed} if routed else {})}
    return Stage(name="dpo_rejects", fn=_reject, output=OnPolicyReject, config=cfg,
                 version=ONPOLICY_VERSION,
                 prompts=("baseline", "judge_tf", "judge_rq_criterion", "judge_rq_avoid"),
                 backends=(llm,), kind="io", concurrency=stage_concurrency(llm, concurrency))


def sample_rejects(items: list[EvalItem], conversations: Iterable[Conversation], *, llm: str,
                   seed: int, workdir: str | Path, samples: int = DEFAULT_SAMPLES,
                   temperature: float | None = DEFAULT_TEMPERATURE,
                   max_tokens: int = DEFAULT_MAX_TOKENS, resources: dict[str, Any] | None = None,
                   progress: bool | None = None) -> StageResult:
    """The on-policy stage over ``items`` (see the module docstring); the runner's result."""
    res = {**(resources or {}), "conversations": {c.id: c for c in conversations}}
    return run_stage(reject_stage(llm, samples=samples, temperature=temperature,
                                  max_tokens=max_tokens), items,
                     workdir=workdir, seed=seed, resources=res, progress=progress)
