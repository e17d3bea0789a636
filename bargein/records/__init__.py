"""Typed, immutable records that flow through bargein (see DESIGN.md)."""

from bargein.records.audio import Augmentation, RenderedDialogue, Segment, Voice, WordTiming
from bargein.records.base import Frozen, FrozenDict, JSONValue, Record
from bargein.records.conversation import (
    ChatMessage, Conversation, EvalItem, Interruption, Message, Role, Rubric, Verdict,
    VerifiedConversation,
)
from bargein.records.derived import (
    PERTURBATION_TYPES, Edit, MaskedItem, MaskMeasures, MaskSpan, PairMeasures, PerturbationPair,
)
from bargein.records.plan import (
    Acknowledgement, InterruptionDetail, Recovery, RoundPlan, Turn, Unit,
)
from bargein.records.release import (
    Aggregate, Attempt, Failure, FailureEvidence, FileEntry, ItemScore, Provenance, ReleaseManifest,
    Round, ScoreReport, StageDescription, TokenUsage,
)
from bargein.records.scenario import (
    INTERRUPTION_TYPES, Correction, Domain, Goal, InterruptionType, KnowledgeBase, Scenario,
    ScenarioSpec, Transition, UserFact, UserIntent, Workflow, WorkflowStage,
)

ALL_RECORDS: tuple[type[Record], ...] = (
    Domain, WorkflowStage, Transition, Workflow, Goal, UserFact, KnowledgeBase, Correction,
    UserIntent, ScenarioSpec, Scenario, Interruption, Message, Rubric, Conversation, Verdict,
    VerifiedConversation, ChatMessage, EvalItem, WordTiming, Voice, Segment, Augmentation,
    RenderedDialogue, MaskSpan, MaskedItem, Edit, PerturbationPair, FileEntry, ReleaseManifest,
    Failure, ItemScore, Aggregate, ScoreReport,
)

__all__ = [c.__name__ for c in ALL_RECORDS] + [
    "Record", "Frozen", "FrozenDict", "RoundPlan", "Unit", "Recovery", "Turn", "InterruptionDetail",
    "Acknowledgement", "MaskMeasures", "PairMeasures", "Role", "Provenance", "StageDescription",
    "FailureEvidence", "Attempt", "Round", "TokenUsage",
    "JSONValue", "ALL_RECORDS", "INTERRUPTION_TYPES", "PERTURBATION_TYPES", "InterruptionType",
]
