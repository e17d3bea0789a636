"""The offline domain catalogue: YAML data files in ``bargein.generators.catalogue``.

One file per domain (``domain_telecom.yaml``, …) plus ``_common.yaml`` (cities, streets,
email domains) and ``_profiles.yaml`` (user behaviour profiles); other YAML files in the folder
(phrase banks) belong to other agents. A domain file holds::

    name, title, brand, description, guidelines
    terminals: [resolved, escalated, caller_ended]     # default outcomes of every goal
    facts: {full_name: name, account_number: {kind: code, format: "#### ####"}}
    every_stage: {termination_conditions: [...], transitions: ["terminate -> caller_ended: ..."]}
    stages: {authenticate: {...}}            # shared stages, used as `- use: authenticate`
    hidden_facts: [{key, value, facts}]
    goals: [{name, description, facts, terminals?, correctable?, hidden_facts?, stages: [...]}]

A stage's transitions are strings ``"KIND -> TARGET: condition"`` (TARGET ``NEXT`` is the
following stage); a stage without a ``next`` transition goes ``next`` to the following stage
(the last one to the first terminal). Stage texts may hold ``{fact_key}`` slots (and
``{fact_key_last4}``, ``{first_name}``, ``{last_name}``, ``{today}``, ``{brand}``), filled per
scenario from the user facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from bargein.errors import ConfigError
from bargein.generators.facts import FactSpec, find_placeholders
from bargein.generators.workflow import validate_workflow
from bargein.records import Domain, Goal, Transition, Workflow, WorkflowStage

DOMAIN_NAMES: tuple[str, ...] = (
    "saas", "financial_services", "healthcare", "telecom", "ecommerce", "travel", "education",
    "government", "subscription_media", "professional_services",
)
SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_TRANSITION = re.compile(r"^\s*(next|skip|fail|terminate)\s*->\s*([A-Za-z_][\w]*)\s*(?::\s*(.*))?$",
                         re.S)
BUILTIN_SLOTS = frozenset({"first_name", "last_name", "today", "brand"})
_STAGE_KEYS = {"name", "use", "description", "required_info", "produces", "skip_conditions",
               "failure_handling", "termination_conditions", "talking_points", "transitions"}


@dataclass(frozen=True)
class HiddenSpec:
    """A hidden fact: ``value`` is a template over goal facts and its own ``facts``."""

    key: str
    value: str
    facts: dict[str, FactSpec] = field(default_factory=dict)
    ack: tuple[str, ...] = ()           # how an agent takes it up, in its own words (no echo)
    when: str = ""                      # a pattern the goal (name, description, talking points)
                                        # must match: a wedding to reach needs a flight still to pick
    until: str = ""                     # a pattern of the agent's words after which the fact no
                                        # longer fits the call (the flight is already held)


@dataclass(frozen=True)
class GoalEntry:
    domain: str
    goal: Goal
    workflow: Workflow                          # stage texts still hold {slots}
    facts: dict[str, FactSpec]                  # the KB's user facts, in declaration order
    hidden: tuple[HiddenSpec, ...]
    correctable: tuple[str, ...]
    source: str

    @property
    def name(self) -> str:
        return self.goal.name


@dataclass(frozen=True)
class DomainEntry:
    domain: Domain
    brand: str
    goals: dict[str, GoalEntry]
    source: str


@dataclass(frozen=True)
class Catalogue:
    domains: dict[str, DomainEntry]
    common: dict[str, Any]
    profiles: tuple[dict[str, Any], ...]

    def domain(self, name: str) -> DomainEntry:
        if name not in self.domains:
            raise ConfigError(f"unknown domain {name!r}; valid domains: {', '.join(self.domains)}")
        return self.domains[name]

    def goal(self, domain: str, goal: str) -> GoalEntry:
        d = self.domain(domain)
        if goal not in d.goals:
            raise ConfigError(f"domain {domain!r} has no goal {goal!r}; its goals: "
                              f"{', '.join(d.goals)}")
        return d.goals[goal]


def catalogue_dir() -> Path:
    return Path(str(resources.files("bargein.generators.catalogue")))


def domain_files(directory: Path | None = None) -> list[Path]:
    """The domain files of a catalogue folder (``domain_*.yaml``), sorted."""
    return sorted((directory or catalogue_dir()).glob("domain_*.yaml"))


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e}). Fix the file.") from e


def _need(obj: dict, key: str, where: str, typ: type | tuple = str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ConfigError(f"{where}: missing key {key!r}")
    if not isinstance(obj[key], typ):
        raise ConfigError(f"{where}.{key}: expected {getattr(typ, '__name__', typ)}, "
                          f"got {type(obj[key]).__name__}")
    return obj[key]


def _strs(obj: dict, key: str, where: str) -> tuple[str, ...]:
    val = obj.get(key, [])
    if isinstance(val, str):
        val = [val]
    if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
        raise ConfigError(f"{where}.{key}: expected a list of strings")
    return tuple(x.strip() for x in val)


def load_common(directory: Path | None = None) -> dict[str, Any]:
    d = directory or catalogue_dir()
    common = _read_yaml(d / "_common.yaml") if (d / "_common.yaml").exists() else \
        _read_yaml(catalogue_dir() / "_common.yaml")
    for key in ("cities", "street_names", "street_suffixes", "email_domains"):
        _need(common, key, "_common.yaml", list)
    common["street_suffixes"] = [tuple(x) for x in common["street_suffixes"]]
    return common


def _parse_facts(raw: Any, where: str) -> dict[str, FactSpec]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping of fact key -> kind")
    return {k: FactSpec.parse(v, f"{where}.{k}") for k, v in raw.items()}


def _parse_hidden(raw: Any, where: str) -> list[HiddenSpec]:
    out = []
    for i, h in enumerate(raw or []):
        w = f"{where}[{i}]"
        out.append(HiddenSpec(key=_need(h, "key", w), value=_need(h, "value", w),
                              facts=_parse_facts(h.get("facts"), f"{w}.facts"),
                              ack=_strs(h, "ack", w) if "ack" in h else (),
                              when=str(h.get("when") or ""), until=str(h.get("until") or "")))
    return out


def _merge_stage(raw: dict, library: dict, every: dict, where: str) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a stage is a mapping")
    if "use" in raw:
        base = library.get(raw["use"])
        if base is None:
            raise ConfigError(f"{where}: uses unknown shared stage {raw['use']!r}; shared stages: "
                              f"{', '.join(library) or '(none)'}")
        merged = {"name": raw["use"], **base, **{k: v for k, v in raw.items() if k != "use"}}
    else:
        merged = dict(raw)
    unknown = set(merged) - _STAGE_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown stage keys {sorted(unknown)}; valid: "
                          f"{sorted(_STAGE_KEYS - {'use'})}")
    for key in ("termination_conditions", "transitions"):
        extra = [x for x in _strs(every, key, "every_stage")
                 if x not in _strs(merged, key, where)]
        if extra:
            merged[key] = list(_strs(merged, key, where)) + extra
    return merged


def _parse_goal(raw: dict, d: dict, where: str, source: str) -> GoalEntry:
    domain = d["name"]
    name = _need(raw, "name", where)
    w = f"{where}({name})"
    terminals = _strs(raw, "terminals", w) or _strs(d, "terminals", source)
    library = d.get("stages") or {}
    stages_raw = [_merge_stage(s, library, d.get("every_stage") or {}, f"{w}.stages[{i}]")
                  for i, s in enumerate(_need(raw, "stages", w, list))]
    stages, transitions = [], []
    for i, s in enumerate(stages_raw):
        sw = f"{w}.stages[{i}]"
        sname = _need(s, "name", sw)
        stages.append(WorkflowStage(
            name=sname, description=_need(s, "description", f"{sw}({sname})").strip(),
            required_info=_strs(s, "required_info", sw), produces=_strs(s, "produces", sw),
            skip_conditions=_strs(s, "skip_conditions", sw),
            failure_handling=_strs(s, "failure_handling", sw),
            termination_conditions=_strs(s, "termination_conditions", sw),
            talking_points=tuple(" ".join(t.split()) for t in _strs(s, "talking_points", sw))))
        own = []
        for t in _strs(s, "transitions", sw):
            m = _TRANSITION.match(t)
            if not m:
                raise ConfigError(f"{sw}({sname}).transitions: {t!r} is not "
                                  f"'KIND -> TARGET: condition' (KIND: next|skip|fail|terminate)")
            target = m.group(2)
            if target == "NEXT":        # shared stages: "the stage after this one"
                nxt = stages_raw[i + 1].get("name") if i + 1 < len(stages_raw) else None
                target = nxt or (terminals[0] if terminals else "resolved")
            own.append(Transition(source=sname, kind=m.group(1), target=target,
                                  condition=" ".join((m.group(3) or "").split())))
        if not any(t.kind == "next" for t in own):
            nxt = stages_raw[i + 1].get("name") if i + 1 < len(stages_raw) else None
            target = nxt or (terminals[0] if terminals else "resolved")
            own.insert(0, Transition(source=sname, kind="next", target=target,
                                     condition="the stage is complete"))
        transitions.extend(own)
    if not stages:
        raise ConfigError(f"{w}: no stages")
    workflow = Workflow(stages=tuple(stages), transitions=tuple(transitions),
                        start=stages[0].name, terminals=terminals)
    domain_facts = _parse_facts(d.get("facts"), f"{source}: facts")
    goal_facts = _parse_facts(raw.get("facts"), f"{w}.facts")
    hidden = _parse_hidden(d.get("hidden_facts"), f"{source}: hidden_facts") + \
        _parse_hidden(raw.get("hidden_facts"), f"{w}.hidden_facts")
    used = set(goal_facts)
    for st in stages:
        used |= set(st.required_info)
        for text in _stage_texts(st):
            used |= set(SLOT.findall(text))
    for h in hidden:
        used |= set(SLOT.findall(h.value)) - set(h.facts)
    used |= {k[: -len("_last4")] for k in used if k.endswith("_last4")}
    facts = {k: v for k, v in domain_facts.items() if k in used}
    facts.update(goal_facts)
    correctable = _strs(raw, "correctable", w) or tuple(
        k for k, v in facts.items()
        if v.kind in ("email", "work_email", "phone", "address", "date", "time", "code", "choice"))
    goal = Goal(domain=domain, name=name,
                description=" ".join(_need(raw, "description", w).split()))
    return GoalEntry(domain=domain, goal=goal, workflow=workflow, facts=facts,
                     hidden=tuple(hidden), correctable=correctable, source=source)


def _stage_texts(st: WorkflowStage) -> list[str]:
    return [st.description, *st.skip_conditions, *st.failure_handling,
            *st.termination_conditions, *st.talking_points]


def load_domain_file(path: Path) -> DomainEntry:
    d = _read_yaml(path)
    source = path.name
    if not isinstance(d, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    for key in ("name", "title", "brand", "description"):
        _need(d, key, source)
    domain = Domain(name=d["name"], title=d["title"],
                    description=" ".join(d["description"].split()),
                    guidelines=tuple(" ".join(g.split()) for g in _strs(d, "guidelines", source)))
    goals = {}
    for i, g in enumerate(_need(d, "goals", source, list)):
        entry = _parse_goal(g, d, f"{source}: goals[{i}]", source)
        if entry.name in goals:
            raise ConfigError(f"{source}: goal {entry.name!r} declared twice")
        goals[entry.name] = entry
    return DomainEntry(domain=domain, brand=d["brand"], goals=goals, source=source)


def load_catalogue(directory: str | Path | None = None) -> Catalogue:
    """Parse every domain file (structural errors raise ConfigError naming file and key)."""
    return _load(str(directory) if directory else "")


@lru_cache(maxsize=4)
def _load(directory: str) -> Catalogue:
    d = Path(directory) if directory else catalogue_dir()
    if not d.is_dir():
        raise ConfigError(f"catalogue folder {str(d)!r} does not exist")
    domains: dict[str, DomainEntry] = {}
    for path in domain_files(d):
        entry = load_domain_file(path)
        if entry.domain.name in domains:
            raise ConfigError(f"{path.name}: domain {entry.domain.name!r} already defined in "
                              f"{domains[entry.domain.name].source}")
        domains[entry.domain.name] = entry
    order = {n: i for i, n in enumerate(DOMAIN_NAMES)}
    domains = dict(sorted(domains.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))
    profiles_path = d / "_profiles.yaml"
    if not profiles_path.exists():
        profiles_path = catalogue_dir() / "_profiles.yaml"
    profiles = tuple(_need(_read_yaml(profiles_path), "profiles", "_profiles.yaml", list))
    return Catalogue(domains=domains, common=load_common(d), profiles=profiles)


def validate_catalogue(cat: Catalogue, *, min_goals: int = 5, min_stages: int = 4,
                       require_all_domains: bool = True) -> list[str]:
    """Every content problem: broken workflows, unknown slots, thin stages, placeholders."""
    problems: list[str] = []
    if require_all_domains:
        missing = [n for n in DOMAIN_NAMES if n not in cat.domains]
        if missing:
            problems.append(f"catalogue lacks domains {missing}")
    for d in cat.domains.values():
        if len(d.goals) < min_goals:
            problems.append(f"{d.source}: {len(d.goals)} goals, need at least {min_goals}")
        if not d.domain.guidelines:
            problems.append(f"{d.source}: no guidelines")
        for gname, g in d.goals.items():
            where = f"{d.source}: goal {gname!r}"
            wf = g.workflow
            if len(wf.stages) < min_stages:
                problems.append(f"{where}: {len(wf.stages)} stages, need at least {min_stages}")
            problems += [f"{where}: {p}" for p in validate_workflow(wf, g.facts)]
            slots = set(g.facts) | {f"{k}_last4" for k in g.facts} | BUILTIN_SLOTS
            for st in wf.stages:
                sw = f"{where} stage {st.name!r}"
                for field_name in ("skip_conditions", "failure_handling",
                                   "termination_conditions"):
                    if not getattr(st, field_name):
                        problems.append(f"{sw}: empty {field_name}")
                if len(st.talking_points) < 2:
                    problems.append(f"{sw}: needs at least 2 talking_points")
                for tp in st.talking_points:
                    n = len(SLOT.sub("x", tp).split())
                    if not 15 <= n <= 55:
                        problems.append(f"{sw}: talking point has {n} words (15-55): {tp[:50]!r}")
                for text in _stage_texts(st):
                    bad = set(SLOT.findall(text)) - slots
                    if bad:
                        problems.append(f"{sw}: unknown slots {sorted(bad)} in {text[:60]!r}; "
                                        f"declare them under facts")
                    rest = find_placeholders(SLOT.sub("Ab", text))
                    if rest:
                        problems.append(f"{sw}: placeholder-like text {rest} in {text[:60]!r}")
            for h in g.hidden:
                bad = set(SLOT.findall(h.value)) - slots - set(h.facts)
                if bad:
                    problems.append(f"{where} hidden fact {h.key!r}: unknown slots {sorted(bad)}")
            for key in g.correctable:
                if key not in g.facts:
                    problems.append(f"{where}: correctable {key!r} is not one of its facts")
            if len(g.hidden) < 2:
                problems.append(f"{where}: needs at least 2 hidden facts (goal or domain)")
    if len(cat.profiles) < 10:
        problems.append(f"_profiles.yaml: {len(cat.profiles)} profiles, need at least 10")
    return problems


def check_catalogue(cat: Catalogue | None = None) -> Catalogue:
    cat = cat or load_catalogue()
    problems = validate_catalogue(cat)
    if problems:
        raise ConfigError("the domain catalogue has problems:\n  - " + "\n  - ".join(problems),
                          evidence={"problems": problems})
    return cat


def hidden_acks(scenario, key: str) -> tuple[str, ...]:
    """The catalogue's responses to the hidden fact ``key`` of this scenario's goal (empty when
    the goal is not in the packaged catalogue or the fact has none)."""
    try:
        dom = load_catalogue().domains.get(scenario.domain.name)
    except ConfigError:
        return ()
    goal = dom.goals.get(scenario.goal.name) if dom is not None else None
    spec = next((h for h in goal.hidden if h.key == key), None) if goal is not None else None
    return spec.ack if spec is not None else ()
