"""The simulate stage: Scenario -> Conversation, round by round.

    plan round ──► assistant (normal | interruption branch) ──► user (normal | interrupting)
        ▲                                                              │
        └──────────── state: stage, facts stated, pending recovery ◄───┘

Offline every agent is rule-based and seeded from ``ctx.rng``. With an LLM each agent renders
its prompt and asks for a schema-checked object; an answer that breaks the plan is re-asked with
the errors, then the round is re-planned, then the conversation fails with all the evidence
(the runner writes it to ``simulate.failures.jsonl``; nothing half-written is kept).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
from collections import deque
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from bargein.errors import GenerationFailed
from bargein.generators import phrases as P
from bargein.generators.assistant_sim import AssistantTurn, RuleAssistant, check_turn, goal_topic
from bargein.generators.llm_agents import llm_for  # noqa: F401  (stages of other packages use it)
from bargein.generators.planner import ConversationState, Recovery, RoundPlan, RulePlanner
from bargein.generators.user_sim import Interjected, PlanBroken, RuleUser, user_plan
from bargein.records import (
    INTERRUPTION_TYPES, Conversation, EvalItem, Interruption, Message, Scenario, VerifiedConversation,
)
from bargein.runner import Stage, StageContext, StageResult, run_stage
from bargein.seeding import stable_hash
from bargein.store import atomic_write_text, write_jsonl
from bargein.verify.text import sentences

REPLANS = 2             # then the round is planned again, at most this often
RESAMPLES = 2           # a scenario whose conversation is discarded is simulated again this often
SIMULATE_VERSION = "1"
PROMPTS = ("round_planner", "assistant_simulator.system", "assistant_simulator.normal",
           "assistant_simulator.interruption", "user_simulator.system",
           "user_simulator.normal", "user_simulator.interrupting")


def conversation_id(scenario: Scenario, agents: str, attempt: int = 0) -> str:
    """The first attempt keeps the id it always had; a re-simulation gets its own."""
    if attempt:
        return f"conv-{stable_hash('conversation', scenario.id, agents, attempt)[:16]}"
    return f"conv-{stable_hash('conversation', scenario.id, agents)[:16]}"


def _clone(st: ConversationState) -> ConversationState:
    return dataclasses.replace(
        st, units=deque(st.units), visits=dict(st.visits), stated=dict(st.stated),
        corrected=set(st.corrected), used_pairs={k: set(v) for k, v in st.used_pairs.items()},
        last_user=dict(st.last_user), read_back=set(st.read_back), uttered=set(st.uttered),
        delivered=set(st.delivered), acted=set(st.acted))


# ---- agents ---------------------------------------------------------------------------------
class RuleAgents:
    """Offline: deterministic given the RNG."""

    name = "offline"

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.assistant = RuleAssistant(scenario)
        self.user = RuleUser(values=said_values(scenario),
                             spoken={f.value: f.spoken for f in scenario.kb.user_facts if f.spoken})
        self.purposes = caller_purposes(scenario)

    async def refine_plan(self, plan, st, messages, rng, sample) -> RoundPlan:
        return plan

    async def _assistant_turn(self, plan, messages, rng, sample) -> AssistantTurn:
        self.assistant.before = next((m.spoken_text for m in reversed(messages)
                                      if m.role == "assistant"), "")
        self.assistant.caller_said = tuple(m.spoken_text for m in messages if m.role == "user")
        turn = self.assistant.respond(plan, rng)
        errs = check_turn(plan, turn)
        if errs:
            raise PlanBroken(f"rule-based assistant broke its plan: {errs}",
                             evidence={"plan": plan.model_dump(mode="json"), "turn": turn.model_dump()})
        return turn

    async def assistant_turn(self, plan, messages, rng, sample) -> AssistantTurn:
        turn = await self._assistant_turn(plan, messages, rng, sample)
        said = messages[-1].text if messages and messages[-1].role == "user" else ""
        if plan.recovery is None and said and self.purposes and any(
                said.startswith(p) for p in self.purposes):
            # the caller has just said why they are calling: the agent takes it up
            topic = goal_topic(self.scenario)
            if topic:
                doing = topic.split()[0].endswith("ing")     # "getting you rebooked"
                lines = P.bank("assistant", "purpose_ack_doing" if doing else "purpose_ack")
                if re.match(r"\W*thank", turn.content, re.I):     # "... Thank you. I've got"
                    lines = [x for x in lines if "thank" not in x.lower()] or lines
                took = P.fill(rng.choice(lines), where="assistant.purpose_ack", topic=topic)
                # no "Right, the next part." between the caller's reason and the agent's
                # answer to it: a step-done transition reads as not having listened
                moving = set(P.bank("assistant", "lead_on"))
                ack = turn.acknowledgement
                kept = [ack[a:b].strip() for a, b in sentences(ack) if ack[a:b].strip() not in moving]
                # a bare nod before it ("Alright. Right, the room change.") is two openers in a
                # row (a hand read): the reason taken up is the acknowledgement
                kept = [k for k in kept if P.n_words(k) > 4]
                turn = turn.model_copy(update={"acknowledgement": P.join(*kept, took)})
        return turn

    async def user_reply(self, plan, heard, rng, sample) -> str:
        last = next((m["text"] for m in reversed(heard) if m["role"] == "assistant"), "") if heard else ""
        reply = self.user.reply(user_plan(plan), rng, last)
        if self.purposes and not any(m["role"] == "user" and m["text"].startswith(self.purposes)
                                     for m in heard):
            # the caller's first plain reply says why they are calling: the agent's workflow is
            # the goal's, and a call in which nobody says what it is about reads as scripted
            # (an independent read of seed 8086: 6 of 8 calls)
            reply = P.join(rng.choice(self.purposes), reply)
        return reply

    async def user_interject(self, plan, message, content_start, context, heard, rng, sample) -> Interjected:
        got = self.user.interject(user_plan(plan), message, content_start, context, rng)
        if self.purposes and not context:
            # a caller cutting in on the greeting says why they called first ("Hi, I need a
            # refill. Oh, by the way, ..."): the agent's next words presuppose it
            got = dataclasses.replace(got, interjection=P.join(rng.choice(self.purposes),
                                                               got.interjection))
        return got


def caller_purposes(scenario: Scenario) -> tuple[str, ...]:
    """How a caller of this goal says why they are calling (``caller_purpose`` in the user
    phrase bank); empty for a goal the bank does not know (an LLM-written one)."""
    return tuple(next((e["say"] for e in P.bank("user", "caller_purpose")
                       if e.get("goal") == scenario.goal.name), ()))


def said_values(scenario: Scenario) -> tuple[str, ...]:
    """Every value of the scenario as written and as spoken (a cut never splits one)."""
    facts = [*scenario.kb.user_facts, *scenario.intent.hidden_facts]
    vals = [v for f in facts for v in (f.value, f.spoken) if v]
    vals += [v for c in scenario.intent.corrections for v in (c.first_value, c.corrected_value)]
    return tuple(dict.fromkeys(vals))


# ---- the loop -------------------------------------------------------------------------------
def _heard_view(messages: list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "text": m.spoken_text, "cut": m.interruption is not None}
            for m in messages]


async def simulate(scenario: Scenario, rng: random.Random, agents: Any) -> Conversation:
    """One conversation; raises :class:`GenerationFailed` with evidence when a round cannot be made.

    ``agents``: :class:`RuleAgents`, or :class:`bargein.generators.llm_agents.LLMAgents`."""
    planner = RulePlanner(scenario)
    st = planner.new_state(rng)
    messages: list[Message] = []
    plans: list[RoundPlan] = []
    gold: dict[int, str] = {}
    while True:
        evidence: list[Any] = []
        failed_types: set[str] = set()
        replan = free = 0
        while replan <= REPLANS:
            snapshot = _clone(st)
            # a re-plan avoids the interruption types that could not be realised this round;
            # the last one does not interrupt at all (a round without a cut always exists)
            if replan == REPLANS:
                failed_types |= set(INTERRUPTION_TYPES)
            plan = planner.plan(st, rng, frozenset(failed_types))
            try:
                plan = await agents.refine_plan(plan, st, messages, rng, replan)
                turn = await agents.assistant_turn(plan, messages, rng, replan)
                text, inter, reply = turn.text, None, None
                if plan.interrupt:
                    context = tuple(m.spoken_text for m in messages)
                    inter = await agents.user_interject(plan, text, turn.content_start, context,
                                                        _heard_view(messages), rng, replan)
                elif plan.assistant_action != "farewell":
                    # the caller hears the turn it answers (every agent, the LLM one too)
                    heard = _heard_view(messages) + [{"role": "assistant", "text": text}]
                    reply = await agents.user_reply(plan, heard, rng, replan)
                check_round = getattr(agents, "check_round", None)
                if check_round is not None:       # the LLM agents: the verifier's checks, per round
                    new_msgs, new_plan = _round_records(len(messages), plan, text, inter, reply)
                    new_gold = {plan.recovery.message_index: text} if plan.recovery is not None else {}
                    await check_round(
                        _partial(scenario, messages, plans, gold, agents.name),
                        _partial(scenario, [*messages, *new_msgs], [*plans, new_plan],
                                 {**gold, **new_gold}, agents.name))
                break
            except GenerationFailed as e:      # plan broken, or no schema-valid answer
                if plan.type is not None:
                    failed_types.add(plan.type)
                evidence.append({"round": plan.round, "replan": replan, "reason": str(e),
                                 "evidence": e.evidence})
                st = snapshot
                # a cut type found impossible for this turn in code, before any model call, is
                # no chance spent: the agents keep their REPLANS + 1 tries (a 1.5B call failed
                # after two impossible cuts left the model one plan)
                known = isinstance(e.evidence, dict) and e.evidence.get("before_any_call")
                if known and plan.type is not None and free < len(INTERRUPTION_TYPES):
                    free += 1
                    continue
                replan += 1
        else:
            raise GenerationFailed(
                f"scenario {scenario.id}: round {st.round} broke its plan {REPLANS + 1} times "
                f"({agents.name} agents)", evidence={"scenario": scenario.id, "rounds": evidence})
        i = len(messages)
        if plan.recovery is not None:
            gold[plan.recovery.message_index] = text
        new_msgs, new_plan = _round_records(i, plan, text, inter, reply)
        messages += new_msgs
        plans.append(new_plan)
        if inter is None:
            planner.apply(st, plan, turn.content, None, rng, text=text)
        else:
            rec = Recovery(type=plan.type, message_index=i + 1, planned_text=text, heard_text=inter.heard,
                           remainder=P.remainder_after(text, inter.cut_word_index),
                           interjection=inter.interjection, content_start=turn.content_start,
                           detail=inter.detail)
            planner.apply(st, plan, turn.content, rec, rng, text=text)
        if plan.assistant_action == "farewell":
            break
    return Conversation(id=conversation_id(scenario, agents.name), scenario=_as_played(scenario, st),
                        messages=tuple(messages), gold_recoveries=gold, plan=tuple(plans),
                        agents=agents.name, outcome=st.outcome)


def _as_played(scenario: Scenario, st: ConversationState) -> Scenario:
    """The scenario as the call played it: its intent lists the corrections the caller made,
    not every one planned. A planned change of mind the call never came to is no label of this
    call (an independent read of seed 7373 found intents promising a correction in 5 of 8
    calls that had none, and read the agent's use of the value on record as an error). A slip
    the caller gave and never put right stays listed, for ``slip_corrected`` to find. The
    scenario keeps its id: the pool, the split and the eval items still name it."""
    on_record = {f.key: f.value for f in scenario.kb.user_facts}
    kept = tuple(c for c in scenario.intent.corrections
                 if c.key in st.corrected or (st.stated.get(c.key) == c.first_value
                                              and on_record.get(c.key) != c.first_value))
    if kept == scenario.intent.corrections:
        return scenario
    # a detail the caller gave without changing it is one they provide (else the checks would
    # read it as a value only the system holds, stated by the caller)
    gave = tuple(c.key for c in scenario.intent.corrections
                 if c not in kept and c.key in st.uttered and c.key not in scenario.intent.provides)
    return scenario.with_(intent=scenario.intent.with_(corrections=kept,
                                                       provides=scenario.intent.provides + gave),
                          id=scenario.id)


def _round_records(i: int, plan: RoundPlan, text: str, inter: Interjected | None,
                   reply: str | None) -> tuple[list[Message], RoundPlan]:
    """The messages of a round (from index ``i``) and its plan as recorded."""
    if inter is None:
        msgs = [Message(index=i, role="assistant", text=text, stage=plan.stage)]
        if reply is not None:
            msgs.append(Message(index=i + 1, role="user", text=reply, stage=plan.stage))
        return msgs, RoundPlan.model_validate({**plan.model_dump(), "message_index": i})
    itr = Interruption(type=plan.type, cut_word_index=inter.cut_word_index,
                       cut_char_offset=len(inter.heard), heard_text=inter.heard,
                       overlap_ms=inter.overlap_ms, interjection=inter.interjection)
    msgs = [Message(index=i, role="assistant", text=text, heard_text=inter.heard, stage=plan.stage,
                    interruption=itr),
            Message(index=i + 1, role="user", text=inter.interjection, stage=plan.stage)]
    return msgs, RoundPlan.model_validate({**plan.model_dump(), "message_index": i,
                                           "cut_word_index": inter.cut_word_index,
                                           "detail": inter.detail})


def _partial(scenario: Scenario, messages: list[Message], plans: list[RoundPlan],
             gold: dict[int, str], agents: str) -> Conversation:
    """The conversation so far (no outcome yet), for checks between rounds."""
    return Conversation(id=conversation_id(scenario, agents), scenario=scenario,
                        messages=tuple(messages), gold_recoveries=dict(gold), plan=tuple(plans),
                        agents=agents)


# ---- runner stages --------------------------------------------------------------------------
def _simulate_offline(scenario: Scenario, ctx: StageContext) -> Conversation:
    return _run_sync(simulate(scenario, ctx.rng, RuleAgents(scenario)))


def _run_sync(coro: Awaitable[Conversation]) -> Conversation:
    """Drive a coroutine that never awaits I/O (the rule-based agents) without an event loop."""
    try:
        coro.send(None)  # type: ignore[attr-defined]
    except StopIteration as stop:
        return stop.value
    coro.close()  # type: ignore[attr-defined]
    raise RuntimeError("offline simulation tried to await I/O")


def _simulate_again(scenario: Scenario, ctx: StageContext) -> Conversation:
    """A re-simulation (attempt >= 1): its own RNG (the stage name is part of the item seed) and
    its own conversation id."""
    conv = _simulate_offline(scenario, ctx)
    return conv.with_(id=conversation_id(scenario, conv.agents, ctx.config["attempt"]))


async def _simulate_again_llm(scenario: Scenario, ctx: StageContext) -> Conversation:
    from bargein.generators.llm_agents import simulate_llm

    conv = await simulate_llm(scenario, ctx)
    return conv.with_(id=conversation_id(scenario, conv.agents, ctx.config["attempt"]))


def attempt_stage(stage: Stage, attempt: int) -> Stage:
    """``stage`` for re-simulation ``attempt`` (>= 1): a stage of its own name, cache and files
    (``simulate.attempt1.jsonl``), so every attempt resumes like the first."""
    if not attempt:
        return stage
    return dataclasses.replace(stage, name=f"{stage.name}.attempt{attempt}")


def simulate_stage(llm: str = "offline", concurrency: int = 64, attempt: int = 0) -> Stage:
    from bargein.llm import stage_agent_models, stage_concurrency
    from bargein.llm.base import is_offline

    again = {"attempt": attempt} if attempt else {}
    if is_offline(llm):
        return attempt_stage(Stage(
            name="simulate", fn=_simulate_again if attempt else _simulate_offline,
            output=Conversation, config={"llm": "offline", "phrases": P.fingerprint(), **again},
            version=SIMULATE_VERSION), attempt)
    from bargein.generators.llm_agents import SIMULATE_AGENTS, simulate_llm

    routed = stage_agent_models(llm, SIMULATE_AGENTS)     # an agent's own model: part of the key
    return attempt_stage(Stage(
        name="simulate", fn=_simulate_again_llm if attempt else simulate_llm, output=Conversation,
        config={"llm": llm, **({"agents": routed} if routed else {}), **again},
        version=SIMULATE_VERSION, prompts=PROMPTS, backends=(llm,), kind="io",
        concurrency=stage_concurrency(llm, concurrency)), attempt)


# ---- the whole conversation pipeline --------------------------------------------------------
@dataclasses.dataclass
class ConversationRun:
    """What :func:`generate_conversations` produced (every stage's result, the statistics)."""

    results: dict[str, StageResult]
    verified: list[VerifiedConversation]
    items: list[EvalItem]                     # the test pool (eval_items.jsonl)
    stats: dict
    exports: dict[str, int]
    train_items: list[EvalItem] = dataclasses.field(default_factory=list)   # SFT/DPO source

    @property
    def accepted(self) -> list[Conversation]:
        return [v.conversation for v in self.verified if v.accepted]


def generate_conversations(scenarios: list[Scenario], *, seed: int, workdir: str | os.PathLike,
                           llm: str = "offline", verify_rounds: int = 3, sft: bool = True,
                           dpo: bool = True, resources: dict[str, Any] | None = None,
                           progress: bool | None = None,
                           train_percent: int = 30, resamples: int = RESAMPLES) -> ConversationRun:
    """Simulate -> rubrics -> verify/modify -> eval items -> SFT/DPO exports -> statistics.

    Writes ``simulate.jsonl``, ``conversations.jsonl`` (with rubrics), ``verified.jsonl``
    (accepted and discarded, every verdict), ``eval_items.jsonl``, ``sft.jsonl``, ``dpo.jsonl``,
    ``stats.json`` and a ``<stage>.failures.jsonl`` per stage into ``workdir``.

    A scenario whose conversation is discarded by the verifier (or cannot be simulated) is
    simulated again, up to ``resamples`` times, each attempt with its own seed (the stage
    ``simulate.attempt<k>``) and conversation id, until one is accepted. ``verified.jsonl``
    keeps every attempt with its verdicts, so the discard rate in the statistics is the rate
    per simulated conversation; ``stats["resampled"]`` counts the scenarios an attempt rescued.

    Accepted conversations are split by goal (:func:`~bargein.generators.exports.split_pools`):
    ``train_percent`` of the goals feed ``sft.jsonl`` / ``dpo.jsonl``, the rest ``eval_items.jsonl``
    (the benchmark), so no training target comes from a test goal (``stats["split"]``).
    """
    from bargein.generators.eval_items import eval_items_stage
    from bargein.generators.exports import split_pools, split_record, write_exports
    from bargein.generators.rubric import rubric_stage
    from bargein.generators.stats import run_stats
    from bargein.verify.loop import verify_stage

    workdir = Path(workdir)
    kw = dict(workdir=workdir, seed=seed, resources=resources, progress=progress)
    results = {"simulate": run_stage(simulate_stage(llm), scenarios, **kw)}
    results["conversations"] = run_stage(rubric_stage(llm), results["simulate"].outputs, **kw)
    vstage = verify_stage(llm, max_rounds=verify_rounds)
    results["verify"] = run_stage(vstage, results["conversations"].outputs, write_outputs=False, **kw)
    verified = list(results["verify"].outputs)
    conversations = list(results["conversations"].outputs)
    verify_failures = list(results["verify"].failures)
    done = {v.conversation.scenario.id for v in verified if v.accepted}
    first = len(done)
    for attempt in range(1, resamples + 1):
        todo = [s for s in scenarios if s.id not in done]
        if not todo:
            break
        sim = run_stage(simulate_stage(llm, attempt=attempt), todo, **kw)
        conv = run_stage(attempt_stage(rubric_stage(llm), attempt), sim.outputs, **kw)
        ver = run_stage(attempt_stage(vstage, attempt), conv.outputs, write_outputs=False, **kw)
        results.update({f"simulate.attempt{attempt}": sim, f"conversations.attempt{attempt}": conv,
                        f"verify.attempt{attempt}": ver})
        verified += ver.outputs
        conversations += conv.outputs
        verify_failures += ver.failures
        done |= {v.conversation.scenario.id for v in ver.outputs if v.accepted}
    if resamples:
        # conversations.jsonl: every attempt with its rubrics, as verified.jsonl lists them
        write_jsonl(workdir / "conversations.jsonl", conversations)
    write_jsonl(workdir / "verified.jsonl", verified)
    write_jsonl(workdir / f"{vstage.name}.failures.jsonl", verify_failures)
    results["eval_items"] = run_stage(eval_items_stage(), verified, **kw)
    items = list(results["eval_items"].outputs)
    accepted = [v.conversation for v in verified if v.accepted]
    pools = split_pools(accepted, seed=seed, train_percent=train_percent)
    train_items = [i for i in items if pools.get(i.conversation_id) == "train"]
    items = [i for i in items if pools.get(i.conversation_id, "test") == "test"]
    # a training target never equals a test gold (two goals of a domain can share a script line)
    test_golds = {i.gold_recovery for i in items}
    train_items = [i for i in train_items if i.gold_recovery not in test_golds]
    write_jsonl(workdir / "eval_items.jsonl", items)
    exports = write_exports(train_items, accepted, workdir, seed=seed, sft=sft, dpo=dpo, llm=llm,
                            resources=resources, progress=progress)
    stats = run_stats(verified, items, {k: r.failures for k, r in results.items()}, agents=llm)
    stats["split"] = split_record(accepted, pools, train_percent)
    stats["resampled"] = len(done) - first
    from bargein.verify.report import quality_report

    def rows(name: str) -> list[dict] | None:
        path = workdir / name
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] \
            if name.split(".")[0] in exports and path.exists() else None

    stats["quality"] = quality_report(verified, items, rows("dpo.jsonl"), sft_rows=rows("sft.jsonl"),
                                      split=stats["split"])
    atomic_write_text(workdir / "stats.json", json.dumps(stats, indent=2, sort_keys=True) + "\n")
    return ConversationRun(results=results, verified=verified, items=items, stats=stats,
                           exports=exports, train_items=train_items)
