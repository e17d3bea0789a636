"""A scripted stand-in model for the LLM path (bench/generation.py and the LLM tests).

It answers bargein's conversation-agent prompts, sent through a real provider SDK to
:class:`bargein.testing.loopback.LoopbackLLMServer`, with schema-valid JSON that the rule-based
agents build from what each prompt shows (the ``<plan>``, ``<assistant_message>``,
``<system_prompt>`` sections) — the way a mock model replays answers. ``override`` lets a test
inject bad answers (re-asks, re-plans, failures) or verifier/modifier verdicts::

    llm = ScriptedLLM(scenarios, override=lambda call: ... or None)
    with LoopbackLLMServer(responder=llm, latency_s=0.2) as srv: ...
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bargein.generators import phrases as P
from bargein.generators.assistant_sim import RuleAssistant
from bargein.generators.llm_messages import DIRECTION, caller_details_withheld
from bargein.generators.planner import RoundPlan
from bargein.generators.rubric import RQ
from bargein.generators.user_sim import RuleUser, UserPlan
from bargein.records import Scenario
from bargein.seeding import stable_int


@dataclass(frozen=True)
class Call:
    """One request as the scripted model sees it."""

    schema: str                 # the requested output schema (AssistantTurn, UserInterjection, ...)
    prompt: str                 # the first user message (the rendered agent prompt)
    attempt: int                # 1 for the first ask, 2+ for re-asks in the same chat
    request: dict[str, Any]


def _section(prompt: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", prompt, re.S)
    return m.group(1) if m else None


def schema_name(req: dict[str, Any]) -> str:
    rf = req.get("response_format") or {}
    if isinstance(rf, dict) and rf.get("json_schema"):
        return rf["json_schema"].get("name", "")
    text = json.dumps(req.get("messages", []))
    m = re.search(r"JSON Schema for (\w+)", text)
    return m.group(1) if m else ""


class ScriptedLLM:
    """Responder for the loopback server; deterministic in the request content."""

    def __init__(self, scenarios: Iterable[Scenario] = (), *,
                 override: Callable[[Call], str | None] | None = None):
        # the assistant's system message carries the scenario's system prompt with the caller's
        # own details withheld; that text names the scenario
        self.scenarios = {caller_details_withheld(s).strip(): s for s in scenarios}
        self.override = override
        self.calls: Counter[str] = Counter()

    def __call__(self, req: dict[str, Any]) -> str:
        msgs = req.get("messages", [])
        users = [m["content"] for m in msgs if m.get("role") == "user"]
        # an agent's conversation: system, the call as turns, a direction, then re-asks; the
        # prompt a script reads is the system text and the direction (or the one user message)
        first = next((i for i, m in enumerate(msgs) if m.get("role") == "user"
                      and m["content"].startswith(DIRECTION)), None)
        if first is None:       # no direction: the user messages of the request itself,
            # after a worked example's answer if the conversation opens with one
            users_at = [i for i, m in enumerate(msgs) if m.get("role") == "user"]
            example = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"
                       and users_at and i < users_at[-1] and all(
                           msgs[j].get("role") == "user" for j in range(i + 1, users_at[-1] + 1))]
            start = example[0] + 1 if example else 0
            end = next((i for i, m in enumerate(msgs[start:], start) if m.get("role") == "assistant"),
                       len(msgs))
            shown = [m["content"] for m in msgs[start:end] if m.get("role") == "user"]
            first = next((i for i, m in enumerate(msgs[start:], start) if m.get("role") == "user"),
                         len(msgs))
        else:
            shown = [msgs[first]["content"]]
        prompt = "\n".join([m["content"] for m in msgs if m.get("role") == "system"] + shown)
        call = Call(schema=schema_name(req), prompt=prompt,
                    attempt=sum(1 for m in msgs[first:] if m.get("role") == "user"), request=req)
        self.calls[call.schema] += 1
        if self.override is not None:
            out = self.override(call)
            if out is not None:
                return out
        handler = getattr(self, f"_{call.schema}", None)
        if handler is None:
            raise ValueError(f"scripted model: no answer for schema {call.schema!r}")
        rng = random.Random(stable_int("scripted", req.get("messages"), req.get("seed")))
        return json.dumps(handler(call, rng))

    # -- conversation agents ------------------------------------------------------------------
    def _PlannerOut(self, call: Call, rng: random.Random) -> dict:
        d = json.loads(_section(call.prompt, "plan") or "{}")
        return {"assistant_goal": f"{d.get('assistant_action', 'continue')}: "
                                  f"{(d.get('content') or 'the next step')[:80]}",
                "user_goal": d.get("user_action", "reply"),
                "rationale": f"realises the sampled decisions ({d.get('type') or 'no interruption'})"}

    def _AssistantTurn(self, call: Call, rng: random.Random) -> dict:
        scn = self.scenarios.get((_section(call.prompt, "system_prompt") or "").strip())
        if scn is None:
            raise ValueError("scripted model: the assistant prompt names an unknown scenario")
        view = json.loads(_section(call.prompt, "plan") or "{}")
        turn = RuleAssistant(scn).respond(RoundPlan.model_validate(view), rng)
        return turn.model_dump()

    def _UserReply(self, call: Call, rng: random.Random) -> dict:
        up = UserPlan.model_validate_json(_section(call.prompt, "plan") or "{}")
        return {"utterance": RuleUser().reply(up, rng)}

    def _UserInterjection(self, call: Call, rng: random.Random) -> dict:
        up = UserPlan.model_validate_json(_section(call.prompt, "plan") or "{}")
        heard = _section(call.prompt, "heard") or ""
        detail = dict(up.detail)
        m = re.search(r'^Push back on "(.*)"|^Ask a quick question about "(.*)"', call.prompt, re.M)
        if m:
            detail["anchor"] = m.group(1) or m.group(2)
        if up.type == "pushback" and detail.get("anchor") and detail.get("variant") != "sensitive":
            # the object the direction names (what the rule-based caller picked at this cut)
            return {"interjection": P.pick(rng, "user", "pushback_suspicion", anchor=detail["anchor"])}
        # what the rule-based caller says at this cut (the heard words only)
        return {"interjection": RuleUser()._say(up, detail.get("variant", ""), heard, detail, rng)}

    def _RubricOut(self, call: Call, rng: random.Random) -> dict:
        itype = re.search(r"^Interruption type: (\w+)", call.prompt, re.M).group(1)
        details = json.loads(re.search(r"^Details: (.*)$", call.prompt, re.M).group(1))
        nxt = json.loads(re.search(r"^Planned next step of the workflow: (.*)$", call.prompt, re.M).group(1))
        core, _ = RQ[itype]
        return {"tf_criterion": f"After the {itype.replace('_', ' ')} interruption the response "
                                f"goes on to {nxt or 'the next workflow step'}.",
                "rq_criteria": [P.fill(c, **details) for c in core]}

    # -- verifier / modifier (clean by default; tests script issues through ``override``) ----
    def _VerifierReport(self, call: Call, rng: random.Random) -> dict:
        return {"issues": []}

    def _ReplyCheck(self, call: Call, rng: random.Random) -> dict:
        return {"asked": "what the assistant asked", "responds": True}

    def _ModifierOutput(self, call: Call, rng: random.Random) -> dict:
        wanted = [int(k) for k in re.findall(r"^- message (\d+):", call.prompt, re.M)]
        texts = dict(re.findall(r"^\[(\d+)\] \w+: (.*)$", call.prompt, re.M))
        return {"edits": [{"message_index": k, "text": texts.get(str(k), "")} for k in wanted]}
