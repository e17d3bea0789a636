"""The scenarios stage: sample (domain, goal, intent) configurations and build full Scenarios.

    specs = sample_specs(50, seed=7)                  # balanced over the 10 domains
    res = generate_scenarios(50, 7, workdir="work")   # -> StageResult; work/scenarios.jsonl

Offline (the default) builds everything from the curated catalogue: workflow with talking
points filled from Faker-seeded user facts, the knowledge base, a templated system message and
a profile-based user intent, in milliseconds per scenario. ``llm="openai:MODEL"`` (or
``anthropic:…``) writes goals, KBs, system messages and intents with an LLM instead
(``bargein.generators.scenarios_llm``). Same config + seed => byte-identical JSONL.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
from collections.abc import Sequence
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from bargein.errors import ConfigError, GenerationFailed
from bargein.generators.catalogue_loader import (
    Catalogue, domain_files, load_catalogue, validate_catalogue,
)
from bargein.generators.catalogue_loader import (
    catalogue_dir as default_catalogue_dir,
)
from bargein.generators.facts import FactMaker, placeholders_in
from bargein.generators.intents import fact_values, fill_slots, make_intent
from bargein.generators.system_message import offline_system_message
from bargein.generators.workflow import validate_kb
from bargein.llm.base import is_offline
from bargein.records import KnowledgeBase, Scenario, ScenarioSpec, Workflow
from bargein.runner import Stage, StageContext, StageResult, run_stage
from bargein.seeding import stable_int

STAGE_NAME = "scenarios"
STAGE_VERSION = "1"
INTENTS_PER_GOAL = 10
FIRST_DAY = date(2025, 1, 6)          # a scenario's "today" is drawn from a fixed window,
DAY_SPAN = 330                        # never from the clock, so outputs are reproducible


# ---- sampling ------------------------------------------------------------------------------

def resolve_domains(domains: Sequence[str] | str | None, cat: Catalogue) -> list[str]:
    """Validate domain names (comma string or list); unknown ones list the valid names."""
    if domains is None or domains == "" or domains == ():
        return list(cat.domains)
    if isinstance(domains, str):
        domains = [d.strip() for d in domains.split(",") if d.strip()]
    unknown = [d for d in domains if d not in cat.domains]
    if unknown:
        raise ConfigError(f"unknown domain(s) {', '.join(map(repr, unknown))}; valid domains: "
                          f"{', '.join(cat.domains)}")
    return list(dict.fromkeys(domains))


def sample_specs(n: int, seed: int, *, domains: Sequence[str] | str | None = None,
                 catalogue: Catalogue | None = None,
                 goals: dict[str, list[str]] | None = None) -> list[ScenarioSpec]:
    """``n`` distinct configurations, round-robin over domains, then over each domain's goals.

    Every domain gets ``n // D`` or one more, every goal of a domain is used before any repeats,
    and intent indices are drawn without replacement (10 per goal, more when ``n`` needs it).
    ``goals`` overrides the catalogue's goal names per domain (the LLM path).
    """
    if n < 0:
        raise ConfigError(f"--n must be >= 0, got {n}")
    cat = catalogue or load_catalogue()
    names = resolve_domains(domains, cat)
    goals = goals or {d: list(cat.domain(d).goals) for d in names}
    n_goals = sum(len(goals[d]) for d in names)
    if n_goals == 0:
        raise ConfigError("no goals to sample from")
    per_goal = max(INTENTS_PER_GOAL, math.ceil(n / n_goals))
    dom_order = list(names)
    random.Random(stable_int("sample-domains", seed)).shuffle(dom_order)
    queues: dict[str, list[tuple[str, int]]] = {}
    for d in dom_order:
        rng = random.Random(stable_int("sample-configs", seed, d))
        gl = list(goals[d])
        rng.shuffle(gl)
        intents = {g: rng.sample(range(per_goal), per_goal) for g in gl}
        queues[d] = [(g, intents[g][r]) for r in range(per_goal) for g in gl]
    specs: list[ScenarioSpec] = []
    r = 0
    while len(specs) < n:
        for d in dom_order:
            if r < len(queues[d]) and len(specs) < n:
                g, i = queues[d][r]
                specs.append(ScenarioSpec(index=len(specs), domain=d, goal=g, intent_index=i))
        r += 1
    return specs


# ---- offline scenario ----------------------------------------------------------------------

def scenario_today(item_seed: int) -> date:
    return FIRST_DAY + timedelta(days=stable_int("today", item_seed) % DAY_SPAN)


def fill_workflow(wf: Workflow, values: dict[str, str], where: str) -> Workflow:
    """The workflow with every ``{slot}`` in its stage texts filled."""
    def f(t: str) -> str:
        return fill_slots(t, values, where)

    stages = tuple(s.with_(description=f(s.description),
                           skip_conditions=tuple(map(f, s.skip_conditions)),
                           failure_handling=tuple(map(f, s.failure_handling)),
                           termination_conditions=tuple(map(f, s.termination_conditions)),
                           talking_points=tuple(map(f, s.talking_points)), id="")
                   for s in wf.stages)
    return wf.with_(stages=stages, id="")


def build_offline_scenario(spec: ScenarioSpec, item_seed: int,
                           cat: Catalogue | None = None) -> Scenario:
    """One complete scenario from the catalogue, deterministic in (spec, item_seed)."""
    cat = cat or load_catalogue()
    dom = cat.domain(spec.domain)
    entry = cat.goal(spec.domain, spec.goal)
    today = scenario_today(item_seed)
    maker = FactMaker(seed=stable_int("facts", item_seed), today=today)
    facts = [maker.make(k, s) for k, s in entry.facts.items()]
    slots = {**maker.slots(), "brand": dom.brand}
    values = fact_values(facts, slots)
    where = f"{dom.source}: goal {entry.name!r}"
    kb = KnowledgeBase(domain=spec.domain, goal=entry.name,
                       workflow=fill_workflow(entry.workflow, values, where),
                       guidelines=(f"You represent {dom.brand}; use that name when greeting.",
                                   *dom.domain.guidelines),
                       user_facts=tuple(facts))
    problems = validate_kb(kb)
    if problems:
        raise GenerationFailed(f"{where}: invalid workflow", evidence={"violations": problems})
    intent = make_intent(cat, entry, spec.intent_index, facts, maker, slots)
    system = offline_system_message(dom.domain, entry.goal, kb, brand=dom.brand,
                                    today=slots["today"])
    scn = Scenario(domain=dom.domain, goal=entry.goal, kb=kb, system_prompt=system,
                   intent=intent, seed=item_seed, agents="offline")
    found = placeholders_in(scn)
    if found:
        raise GenerationFailed(f"scenario for {spec.domain}/{spec.goal} contains placeholders",
                               evidence={"placeholders": found[:20]})
    return scn


def offline_stage_fn(spec: ScenarioSpec, ctx: StageContext) -> Scenario:
    cat = load_catalogue(ctx.config.get("catalogue_dir") or None)
    return build_offline_scenario(spec, ctx.item_seed, cat)


@lru_cache(maxsize=8)
def catalogue_fingerprint(directory: str = "") -> str:
    """SHA-256 over every catalogue file, so editing the YAML invalidates cached scenarios."""
    d = Path(directory) if directory else default_catalogue_dir()
    h = hashlib.sha256()
    for p in [*domain_files(d), d / "_common.yaml", d / "_profiles.yaml"]:
        if not p.exists():
            continue
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def scenarios_stage(llm: str = "offline", *, catalogue_dir: str | os.PathLike | None = None,
                    **llm_options: Any) -> Stage:
    """The runner stage for ``llm`` ("offline" or "provider:model")."""
    cdir = str(catalogue_dir or "")
    if is_offline(llm):
        return Stage(name=STAGE_NAME, fn=offline_stage_fn, output=Scenario,
                     config={"llm": "offline", "catalogue_dir": cdir,
                             "catalogue": catalogue_fingerprint(cdir)},
                     version=STAGE_VERSION, kind="inline")
    from bargein.generators.scenarios_llm import llm_scenarios_stage

    return llm_scenarios_stage(llm, **llm_options)


def generate_scenarios(n: int, seed: int, *, llm: str = "offline",
                       workdir: str | os.PathLike = "work",
                       domains: Sequence[str] | str | None = None,
                       catalogue_dir: str | os.PathLike | None = None,
                       progress: bool | None = None, **llm_options: Any) -> StageResult:
    """Sample ``n`` configurations and build their scenarios into ``workdir/scenarios.jsonl``.

    Returns the runner's :class:`StageResult`: ``.outputs`` are the :class:`Scenario` records
    in sampling order, ``.failures`` the items that could not be built (with their reasons).
    """
    if not is_offline(llm):
        from bargein.generators.scenarios_llm import generate_llm_scenarios

        return generate_llm_scenarios(n, seed, llm=llm, workdir=workdir, domains=domains,
                                      progress=progress, **llm_options)
    cat = load_catalogue(catalogue_dir)
    problems = validate_catalogue(cat, require_all_domains=catalogue_dir is None)
    if problems:
        raise ConfigError("the domain catalogue has problems:\n  - " + "\n  - ".join(problems),
                          evidence={"problems": problems})
    specs = sample_specs(n, seed, domains=domains, catalogue=cat)
    stage = scenarios_stage("offline", catalogue_dir=catalogue_dir)
    return run_stage(stage, specs, workdir=workdir, seed=seed, progress=progress)
