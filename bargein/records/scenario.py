"""Scenario records: domain, goal, knowledge base with its workflow, user intent.

Workflow transitions are validated as a networkx DiGraph in ``bargein.generators.workflow``;
the record only holds the data.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from bargein.records.base import Record

InterruptionType = Literal["normal", "impatient", "correction", "topic_switch", "filler", "pushback"]
INTERRUPTION_TYPES: tuple[str, ...] = (
    "normal",
    "impatient",
    "correction",
    "topic_switch",
    "filler",
    "pushback",
)
TransitionKind = Literal["next", "skip", "fail", "terminate"]


class Domain(Record):
    id_prefix = "dom"
    name: str                      # e.g. "telecom"
    title: str                     # e.g. "Telecommunications"
    description: str = ""
    guidelines: tuple[str, ...] = ()


class WorkflowStage(Record):
    """One stage of a workflow: what the assistant does and what it needs."""

    id_prefix = "stg"
    name: str                                   # snake_case, unique in the workflow
    description: str
    required_info: tuple[str, ...] = ()         # user-fact keys this stage needs
    skip_conditions: tuple[str, ...] = ()
    failure_handling: tuple[str, ...] = ()
    termination_conditions: tuple[str, ...] = ()
    # what the assistant explains or asks here (filled from user facts; 20-45 words each)
    talking_points: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()              # info keys this stage establishes for later ones


class Transition(Record):
    id_prefix = "trn"
    source: str
    target: str                                 # a stage name or a terminal outcome name
    kind: TransitionKind
    condition: str = ""


class Workflow(Record):
    """Ordered stages plus labelled transitions to other stages or to terminal outcomes."""

    id_prefix = "wf"
    stages: tuple[WorkflowStage, ...]
    transitions: tuple[Transition, ...]
    start: str
    terminals: tuple[str, ...]                  # terminal outcome names, e.g. "resolved", "escalated"

    def stage(self, name: str) -> WorkflowStage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"workflow has no stage {name!r}; stages: {[s.name for s in self.stages]}")

    @property
    def stage_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)


class Goal(Record):
    id_prefix = "goal"
    domain: str
    name: str
    description: str


class UserFact(Record):
    """A concrete fictional fact the user knows (never a placeholder)."""

    id_prefix = "fact"
    key: str                                    # e.g. "account_number"
    value: str                                  # e.g. "4471 0932"
    kind: str = "text"                          # name, account, address, date, amount, plan, ...
    spoken: str = ""                            # how the user says it aloud, if different


class KnowledgeBase(Record):
    id_prefix = "kb"
    domain: str
    goal: str
    workflow: Workflow
    guidelines: tuple[str, ...] = ()
    user_facts: tuple[UserFact, ...] = ()

    def fact(self, key: str) -> UserFact | None:
        return next((f for f in self.user_facts if f.key == key), None)


class Correction(Record):
    """A fact the user gives once and later corrects."""

    id_prefix = "corr"
    key: str
    first_value: str
    corrected_value: str


class UserIntent(Record):
    id_prefix = "intent"
    profile: str                                # "cooperative but rushed"
    interruption_probs: dict[InterruptionType, float]
    interruption_rate: float = Field(0.45, ge=0, le=1)   # share of assistant turns interrupted
    hidden_facts: tuple[UserFact, ...] = ()     # surface only when asked / as the plan says
    provides: tuple[str, ...] = ()              # fact keys the user volunteers
    corrections: tuple[Correction, ...] = ()

    @field_validator("interruption_probs")
    @classmethod
    def _probs(cls, v: dict[str, float]) -> dict[str, float]:
        missing = set(INTERRUPTION_TYPES) - set(v)
        if missing:
            raise ValueError(f"interruption_probs lacks types {sorted(missing)}")
        total = sum(v.values())
        if any(p < 0 for p in v.values()) or abs(total - 1.0) > 1e-6:
            raise ValueError(f"interruption_probs must be >= 0 and sum to 1 (sum is {total:.6f})")
        return {k: v[k] for k in INTERRUPTION_TYPES}


class ScenarioSpec(Record):
    """One sampled (domain, goal, intent) configuration: the input of the scenarios stage."""

    id_prefix = "spec"
    index: int                                  # position in the sampled batch
    domain: str
    goal: str
    intent_index: int = Field(0, ge=0)


class Scenario(Record):
    """A (domain, goal, intent) configuration with everything a conversation needs."""

    id_prefix = "scn"
    domain: Domain
    goal: Goal
    kb: KnowledgeBase
    system_prompt: str
    intent: UserIntent
    seed: int
    agents: str = "offline"                     # "offline" or "provider:model" that wrote it

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        if self.kb.domain != self.domain.name or self.goal.domain != self.domain.name:
            raise ValueError("scenario domain, goal.domain and kb.domain disagree")
        return self
