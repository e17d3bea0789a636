"""The LLM path of scenario synthesis: goal writer, KB writer, system message writer, intent writer.

    goals stage (per domain)        scenarios stage (per sampled spec)
    Domain ──goal_writer──► Goals   Spec ──kb_writer──► KB ──validate──┐ re-ask with the
                                         ▲                            │ violations (bounded),
                                         └────────────────────────────┘ then fail with reasons
                                    KB ──system_message_writer──► system prompt
                                    KB ──intent_writer──► UserIntent ──► Scenario

Every call goes through ``bargein.llm.get_llm(spec).structured(...)`` (schema re-asks happen
there); content checks (workflow validity, placeholders, fact keys) re-ask here. Both stages are
``kind="io"``: items run concurrently under the provider's limits.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from bargein.errors import GenerationFailed
from bargein.llm.client import reask_temperature
from bargein.generators.catalogue_loader import Catalogue, load_catalogue
from bargein.generators.facts import FACT_KINDS, find_placeholders, placeholders_in
from bargein.generators.intents import profile_for
from bargein.generators.scenarios import resolve_domains, sample_specs, scenario_today
from bargein.generators.workflow import validate_kb
from bargein.prompts import render
from bargein.records import (
    INTERRUPTION_TYPES, Correction, Domain, Goal, KnowledgeBase, Scenario, ScenarioSpec,
    Transition, UserFact, UserIntent, Workflow, WorkflowStage,
)
from bargein.runner import Stage, StageContext, StageResult, run_stage
from bargein.seeding import stable_int

GOALS_STAGE = "goals"
SCENARIOS_STAGE = "scenarios"
PROMPTS = ("goal_writer", "goal_writer.system", "kb_writer", "kb_writer.system", "system_message_writer",
           "system_message_writer.system", "intent_writer", "intent_writer.system")
# the scenario stage's agents (the goals come to it as data)
SCENARIO_AGENTS = ("kb_writer", "system_message_writer", "intent_writer")
# answer budgets: a KB with talking points runs to several thousand tokens
MAX_TOKENS = {"goal_writer": 1500, "kb_writer": 8192, "system_message_writer": 4096,
              "intent_writer": 1500}


# ---- what the LLM returns ------------------------------------------------------------------

class GoalDraft(BaseModel):
    name: str = Field(min_length=3, max_length=60)
    description: str = Field(min_length=20, max_length=300)


class GoalList(BaseModel):
    goals: list[GoalDraft] = Field(min_length=1, max_length=12)


class StageDraft(BaseModel):
    name: str
    description: str
    required_info: list[str] = []
    produces: list[str] = []
    skip_conditions: list[str] = []
    failure_handling: list[str] = []
    termination_conditions: list[str] = []
    talking_points: list[str] = []


class TransitionDraft(BaseModel):
    source: str
    target: str
    kind: str = Field(pattern="^(next|skip|fail|terminate)$")
    condition: str = ""


class FactDraft(BaseModel):
    key: str
    value: str
    kind: str = "text"
    spoken: str = ""


class KBDraft(BaseModel):
    stages: list[StageDraft] = Field(min_length=1)
    transitions: list[TransitionDraft]
    start: str
    terminals: list[str]
    guidelines: list[str] = []
    user_facts: list[FactDraft] = []


class SystemMessageDraft(BaseModel):
    system_message: str = Field(min_length=200)


class ProbsDraft(BaseModel):
    normal: float = Field(ge=0)
    impatient: float = Field(ge=0)
    correction: float = Field(ge=0)
    topic_switch: float = Field(ge=0)
    filler: float = Field(ge=0)
    pushback: float = Field(ge=0)


class CorrectionDraft(BaseModel):
    key: str
    first_value: str
    corrected_value: str


class IntentDraft(BaseModel):
    profile: str
    interruption_probs: ProbsDraft
    interruption_rate: float = Field(ge=0, le=1)
    hidden_facts: list[FactDraft] = []
    provides: list[str] = []
    corrections: list[CorrectionDraft] = []


# ---- conversions and checks ----------------------------------------------------------------

def snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def kb_from_draft(draft: KBDraft, domain: str, goal: str) -> KnowledgeBase:
    stages = tuple(WorkflowStage(name=s.name, description=s.description,
                                 required_info=tuple(s.required_info), produces=tuple(s.produces),
                                 skip_conditions=tuple(s.skip_conditions),
                                 failure_handling=tuple(s.failure_handling),
                                 termination_conditions=tuple(s.termination_conditions),
                                 talking_points=tuple(s.talking_points)) for s in draft.stages)
    wf = Workflow(stages=stages, start=draft.start, terminals=tuple(draft.terminals),
                  transitions=tuple(Transition(source=t.source, target=t.target, kind=t.kind,
                                               condition=t.condition) for t in draft.transitions))
    facts = tuple(UserFact(key=f.key, value=f.value, kind=f.kind, spoken=f.spoken)
                  for f in draft.user_facts)
    return KnowledgeBase(domain=domain, goal=goal, workflow=wf, guidelines=tuple(draft.guidelines),
                         user_facts=facts)


def kb_problems(kb: KnowledgeBase, min_stages: int = 4) -> list[str]:
    """Workflow violations plus content rules: enough stages, text present, no placeholders."""
    problems = validate_kb(kb)
    if len(kb.workflow.stages) < min_stages:
        problems.append(f"only {len(kb.workflow.stages)} stages; at least {min_stages} needed")
    for s in kb.workflow.stages:
        for fld in ("skip_conditions", "failure_handling", "termination_conditions",
                    "talking_points"):
            if not getattr(s, fld):
                problems.append(f"stage {s.name!r} has no {fld}")
    keys = [f.key for f in kb.user_facts]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        problems.append(f"duplicate user_facts keys {dupes}")
    problems += [f"placeholder {p}" for p in placeholders_in(kb)]
    return problems


def intent_from_draft(draft: IntentDraft, kb: KnowledgeBase) -> tuple[UserIntent | None, list[str]]:
    """The intent and the problems that stop it (probabilities are renormalised if close)."""
    problems: list[str] = []
    raw = draft.interruption_probs.model_dump()
    total = sum(raw.values())
    if not 0.95 <= total <= 1.05:
        problems.append(f"interruption_probs sum to {total:.3f}, must sum to 1")
    keys = {f.key for f in kb.user_facts}
    bad = [k for k in draft.provides if k not in keys]
    bad += [c.key for c in draft.corrections if c.key not in keys]
    if bad:
        problems.append(f"unknown fact keys {sorted(set(bad))}; use keys from: {sorted(keys)}")
    for c in draft.corrections:
        if c.first_value.strip() == c.corrected_value.strip():
            problems.append(f"correction of {c.key!r} does not change the value")
    problems += [f"placeholder {p}" for p in placeholders_in(draft)]
    if problems:
        return None, problems
    probs = {t: round(raw[t] / total, 3) for t in INTERRUPTION_TYPES}
    top = max(probs, key=lambda t: probs[t])
    probs[top] = round(1.0 - sum(p for t, p in probs.items() if t != top), 3)
    intent = UserIntent(
        profile=draft.profile.strip(), interruption_probs=probs,
        interruption_rate=round(draft.interruption_rate, 2),
        hidden_facts=tuple(UserFact(key=h.key, value=h.value, kind=h.kind or "text",
                                    spoken=h.spoken) for h in draft.hidden_facts),
        provides=tuple(dict.fromkeys(draft.provides)),
        corrections=tuple(Correction(key=c.key, first_value=c.first_value,
                                     corrected_value=c.corrected_value) for c in draft.corrections))
    return intent, []


def kb_text(kb: KnowledgeBase) -> str:
    """The KB as indented JSON for prompts (ids dropped)."""
    data = kb.model_dump(mode="json", exclude={"id"})
    for s in data["workflow"]["stages"]:
        s.pop("id", None)
    for t in data["workflow"]["transitions"]:
        t.pop("id", None)
    data["workflow"].pop("id", None)
    for f in data["user_facts"]:
        f.pop("id", None)
    return json.dumps(data, indent=1, ensure_ascii=False)


async def ask_valid(llm: Any, messages: list[dict[str, str]], schema: type[BaseModel], *,
                    agent: str, check: Callable[[Any], tuple[Any, list[str]]],
                    max_reasks: int, sample: int = 0, show_answer: bool = True) -> Any:
    """``structured`` plus content checks: re-ask with the problems, then fail with evidence.

    ``show_answer=False``: the re-ask is the request again with the problems added, without the
    refused answer (a small model shown its own answer writes it again, word for word)."""
    attempts: list[dict[str, Any]] = []
    first = messages
    for n in range(max_reasks + 1):
        # a re-ask is a new draw (a new seed, sampled hotter), not the same answer again
        draft = await llm.structured(messages, schema, agent=agent, sample=sample * (max_reasks + 1) + n,
                                     max_tokens=MAX_TOKENS.get(agent),
                                     **({} if n == 0 else {"temperature": reask_temperature(None)}))
        value, problems = check(draft)
        if not problems:
            return value
        attempts.append({"answer": draft.model_dump(mode="json"), "problems": problems})
        if not show_answer:
            seen = sorted({p for a in attempts for p in a["problems"]})
            messages = first[:-1] + [{"role": "user", "content": first[-1]["content"]
                                      + "\n\nEarlier answers were refused:\n- " + "\n- ".join(seen)
                                      + "\nWrite different ones that avoid these problems."}]
            continue
        messages = messages + [
            {"role": "assistant", "content": draft.model_dump_json()},
            {"role": "user", "content": "That answer is not acceptable:\n- " + "\n- ".join(problems)
             + "\nReturn the complete corrected JSON object."}]
    raise GenerationFailed(
        f"{agent}: {len(attempts)} answers failed validation; last problems: "
        + "; ".join(attempts[-1]["problems"])[:600],
        evidence={"agent": agent, "attempts": attempts})


# ---- stage functions -----------------------------------------------------------------------

def _brand(cat: Catalogue, domain: str) -> str:
    return cat.domain(domain).brand


# the goal writer's worked example: another domain, goals of different kinds of need, shown as an
# earlier turn in the target format
GOAL_EXAMPLE_DOMAIN = Domain(
    name="utilities", title="Utilities",
    description="Electricity and water supply for homes: outages, meters, bills and moves.",
    guidelines=("Never promise an exact repair time.",))
GOAL_EXAMPLE = {"goals": [
    {"name": "report_power_outage",
     "description": "Log a street-wide power outage, give the caller the repair crew's estimate "
                    "and sign them up for outage alerts by text."},
    {"name": "dispute_water_bill",
     "description": "Check a water bill that doubled against the meter readings and issue a "
                    "corrected bill when a reading was wrong."},
    {"name": "move_service_address",
     "description": "Start electricity at the caller's new flat on their moving day and close "
                    "the account at the old address with a final reading."}]}
_PROCEDURE = re.compile(r"^(the )?(assistant|agent|caller|customer)\b|\bauthenticat|"
                        r"\bverif\w* (the |their |his |her )?(caller|customer|identity)", re.I)
SAME_GOAL = 0.5          # content-word overlap (Jaccard) at which two goals are one formula
COPIED_RULE = 0.8        # share of a goal's content words found in one domain rule: a copied rule


def goal_messages(domain: Domain, brand: str, n_goals: int,
                  existing: Sequence[str] = ()) -> list[dict[str, str]]:
    """The goal writer's chat: instructions, the worked example as an earlier turn, the domain."""
    example = render("goal_writer", domain=GOAL_EXAMPLE_DOMAIN, brand="Riverside Power & Water",
                     n_goals=len(GOAL_EXAMPLE["goals"]), existing_goals=[])
    return [{"role": "system", "content": render("goal_writer.system")},
            {"role": "user", "content": example},
            {"role": "assistant", "content": json.dumps(GOAL_EXAMPLE)},
            {"role": "user", "content": render("goal_writer", domain=domain, brand=brand,
                                               n_goals=n_goals, existing_goals=list(existing))}]


def goal_problems(goals: Sequence[Goal], guidelines: Sequence[str] = ()) -> list[str]:
    """Variety and form of one domain's goals: no procedure formula ("The assistant asks the
    caller to authenticate ..."), no two openings alike, no two goals of mostly the same words,
    nothing copied from the worked example or the domain's rules."""
    from bargein.verify.text import content_words

    problems = []
    example_names = {g["name"] for g in GOAL_EXAMPLE["goals"]}
    example_words = [content_words(g["description"]) for g in GOAL_EXAMPLE["goals"]]
    words = [content_words(g.description) for g in goals]
    rules = [content_words(r) for r in guidelines]
    for k, g in enumerate(goals):
        if any(len(words[k] & r) >= COPIED_RULE * max(1, len(words[k])) for r in rules):
            problems.append(f"goal {g.name!r} copies a rule of the assistant; a goal is what a "
                            "caller phones about")
        n = len(g.description.split())
        if not 6 <= n <= 40:
            problems.append(f"goal {g.name!r}: description has {n} words; write one sentence of 10-30")
        if _PROCEDURE.search(g.description):
            problems.append(f"goal {g.name!r} describes the shared procedure (who asks whom to "
                            "identify or verify); open with this task's own verb and object")
        if g.name in example_names or any(
                len(words[k] & ex) >= 0.6 * max(1, len(words[k])) for ex in example_words):
            problems.append(f"goal {g.name!r} copies the worked example; write goals of this domain")
        for j in range(k):
            union = words[k] | words[j]
            if union and len(words[k] & words[j]) / len(union) >= SAME_GOAL:
                problems.append(f"goals {goals[j].name!r} and {g.name!r} are mostly the same words; "
                                "make them different needs")
            if g.description.lower().split()[:3] == goals[j].description.lower().split()[:3]:
                problems.append(f"goals {goals[j].name!r} and {g.name!r} open with the same words")
    return problems


async def write_goals(domain: Domain, ctx: StageContext) -> list[Goal]:
    """Goal writer: ``n_goals`` goals for one domain, of different kinds of need."""
    cfg, llm = ctx.config, ctx.resources["llm"]
    cat = load_catalogue()
    msgs = goal_messages(domain, _brand(cat, domain.name), cfg["n_goals"])

    def check(draft: GoalList):
        goals, problems, seen = [], [], set()
        for g in draft.goals:
            name = snake(g.name)
            if not name or name in seen:
                problems.append(f"goal name {g.name!r} is empty or repeated")
                continue
            seen.add(name)
            goals.append(Goal(domain=domain.name, name=name, description=g.description.strip()))
        if len(goals) < cfg["n_goals"]:
            problems.append(f"{len(goals)} distinct goals, {cfg['n_goals']} requested")
        goals = goals[: cfg["n_goals"]]
        problems += goal_problems(goals, domain.guidelines)
        problems += [f"placeholder {p}" for p in placeholders_in(draft)]
        return goals, problems

    return await ask_valid(llm, msgs, GoalList, agent="goal_writer", check=check,
                           max_reasks=cfg["max_reasks"], show_answer=False)


# the intent writer's worked example (another domain), shown as an earlier turn
INTENT_EXAMPLE = {
    "profile": "A night-shift nurse who is short on time and doubts the outage estimate.",
    "interruption_probs": {"normal": 0.15, "impatient": 0.3, "correction": 0.05,
                           "topic_switch": 0.1, "filler": 0.1, "pushback": 0.3},
    "interruption_rate": 0.45,
    "hidden_facts": [{"key": "medical_fridge", "value": "keeps insulin in a fridge at home",
                      "kind": "text"}],
    "provides": ["service_address"],
    "corrections": [{"key": "account_number", "first_value": "RP-55120",
                     "corrected_value": "RP-55210"}]}
_EXAMPLE_HIDDEN = {h["value"].lower() for h in INTENT_EXAMPLE["hidden_facts"]}


def intent_messages(dom: Domain, goal: Goal, brand: str, kb: KnowledgeBase, intent_index: int,
                    profile_hint: str) -> list[dict[str, str]]:
    """The intent writer's chat: instructions, the worked example as an earlier turn, the call."""
    ex_facts = [UserFact(key="full_name", value="Ines Okafor", kind="name"),
                UserFact(key="account_number", value="RP-55210", kind="code"),
                UserFact(key="service_address", value="14 Alder Row", kind="address")]
    example = render("intent_writer", domain=GOAL_EXAMPLE_DOMAIN, goal=Goal(
        domain="utilities", name="report_power_outage",
        description=GOAL_EXAMPLE["goals"][0]["description"]), brand="Riverside Power & Water",
        facts=ex_facts, intent_index=0, profile_hint="busy and sceptical")
    return [{"role": "system", "content": render("intent_writer.system")},
            {"role": "user", "content": example},
            {"role": "assistant", "content": json.dumps(INTENT_EXAMPLE)},
            {"role": "user", "content": render(
                "intent_writer", domain=dom, goal=goal, brand=brand, facts=kb.user_facts,
                intent_index=intent_index, profile_hint=profile_hint)}]


async def write_scenario(spec: ScenarioSpec, ctx: StageContext) -> Scenario:
    """KB writer -> validate (re-ask) -> system message writer -> intent writer."""
    cfg, llm = ctx.config, ctx.resources["llm"]
    cat = load_catalogue()
    dom = cat.domain(spec.domain).domain
    brand = _brand(cat, spec.domain)
    goal = Goal(domain=spec.domain, name=spec.goal,
                description=cfg["goals"][spec.domain][spec.goal])
    # "today" and the KB depend only on (domain, goal): intents of one goal share its KB
    today = scenario_today(stable_int("kb-today", spec.domain, spec.goal))
    today = today.strftime("%A, %B %-d, %Y")
    kinds = sorted(FACT_KINDS) + ["text"]
    kb_msgs = [{"role": "system", "content": render("kb_writer.system", min_stages=cfg["min_stages"],
                                                    fact_kinds=kinds)},
               {"role": "user", "content": render(
                   "kb_writer", domain=dom, goal=goal, brand=brand, today=today,
                   min_stages=cfg["min_stages"])}]

    def check_kb(draft: KBDraft):
        kb = kb_from_draft(draft, spec.domain, spec.goal)
        return kb, kb_problems(kb, cfg["min_stages"])

    kb = await ask_valid(llm, kb_msgs, KBDraft, agent="kb_writer", check=check_kb,
                         max_reasks=cfg["max_kb_reasks"])
    sm_msgs = [{"role": "system", "content": render("system_message_writer.system")},
               {"role": "user", "content": render(
                   "system_message_writer", domain=dom, goal=goal, brand=brand, today=today,
                   kb_text=kb_text(kb))}]

    def check_sm(draft: SystemMessageDraft):
        found = find_placeholders(draft.system_message)
        return draft.system_message.strip() + "\n", [f"placeholder {p!r}" for p in found]

    system = await ask_valid(llm, sm_msgs, SystemMessageDraft, agent="system_message_writer",
                             check=check_sm, max_reasks=cfg["max_reasks"])
    prof = profile_for(cat, spec.domain, spec.goal, spec.intent_index)
    in_msgs = intent_messages(dom, goal, brand, kb, spec.intent_index, prof["profile"])

    def check_intent(draft: IntentDraft):
        intent, problems = intent_from_draft(draft, kb)
        copied = [h.value for h in draft.hidden_facts
                  if h.value.strip().lower() in _EXAMPLE_HIDDEN]
        if copied:
            return None, problems + [f"hidden fact {v!r} copies the worked example; write this "
                                     "caller's own situation" for v in copied]
        return intent, problems

    intent = await ask_valid(llm, in_msgs, IntentDraft, agent="intent_writer",
                             check=check_intent,
                             max_reasks=cfg["max_reasks"], sample=spec.intent_index)
    return Scenario(domain=dom, goal=goal, kb=kb, system_prompt=system, intent=intent,
                    seed=ctx.item_seed, agents=cfg["llm"])


# ---- wiring --------------------------------------------------------------------------------

def _config(llm: str, agents: Sequence[str] = SCENARIO_AGENTS, **extra: Any) -> dict[str, Any]:
    from bargein.llm import stage_agent_models

    routed = stage_agent_models(llm, agents)       # an agent's own model is part of the key
    return {"llm": llm, "n_goals": 5, "min_stages": 4, "max_reasks": 1, "max_kb_reasks": 2,
            **({"agents": routed} if routed else {}), **extra}


def llm_scenarios_stage(llm: str, goals: dict[str, dict[str, str]] | None = None,
                        concurrency: int = 8, **config: Any) -> Stage:
    return Stage(name=SCENARIOS_STAGE, fn=write_scenario, output=Scenario,
                 config=_config(llm, goals=goals or {}, **config), version="1", prompts=PROMPTS,
                 backends=(llm,), kind="io", concurrency=concurrency)


def generate_llm_scenarios(n: int, seed: int, *, llm: str, workdir: str | os.PathLike,
                           domains: Sequence[str] | str | None = None,
                           progress: bool | None = None, n_goals: int = 5,
                           max_kb_reasks: int = 2, max_reasks: int = 1,
                           client: Any = None, **llm_options: Any) -> StageResult:
    """Goals per domain, then ``n`` sampled scenarios, all written by ``llm``.

    ``llm_options`` go to :func:`bargein.llm.get_llm` (``base_url``, ``budget_usd``, …);
    ``client`` replaces it with a ready :class:`~bargein.llm.LLMClient`. Domains whose goal
    writer failed are left out of sampling (their failures are in ``goals.failures.jsonl``).
    """
    from bargein.llm import get_llm

    cat = load_catalogue()
    names = resolve_domains(domains, cat)
    client = client or get_llm(llm, workdir=workdir, **llm_options)
    resources = {"llm": client, "ledger": client.ledger}
    conc = int(llm_options.get("concurrency") or 8)
    cfg = {"n_goals": n_goals, "max_reasks": max_reasks, "max_kb_reasks": max_kb_reasks}
    gstage = Stage(name=GOALS_STAGE, fn=write_goals, output=Goal, config=_config(llm, ("goal_writer",), **cfg),
                   version="2", prompts=("goal_writer", "goal_writer.system"), backends=(llm,), kind="io",
                   concurrency=conc)
    gres = run_stage(gstage, [cat.domain(d).domain for d in names], workdir=workdir, seed=seed,
                     resources=resources, progress=progress)
    goals: dict[str, dict[str, str]] = {}
    for g in gres.outputs:
        goals.setdefault(g.domain, {})[g.name] = g.description
    if not goals:
        client.flush()
        return StageResult(stage=SCENARIOS_STAGE, outputs=[], failures=gres.failures,
                           budget_stopped=gres.budget_stopped)
    specs = sample_specs(n, seed, domains=[d for d in names if d in goals], catalogue=cat,
                         goals={d: list(v) for d, v in goals.items()})
    stage = llm_scenarios_stage(llm, goals=goals, concurrency=gstage.concurrency, **cfg)
    res = run_stage(stage, specs, workdir=workdir, seed=seed, resources=resources,
                    progress=progress)
    client.flush()
    res.failures = gres.failures + res.failures
    return res
