"""Round plans: what each round of a generated conversation was planned to do.

A :class:`RoundPlan` is one round (the assistant's action, the user's, an interruption if any);
a :class:`Unit` is a piece of stage content; a :class:`Recovery` is what the assistant recovers
from. :attr:`Conversation.plan <bargein.records.Conversation.plan>` keeps them, one per round.
"""

from __future__ import annotations

from typing import Literal

from bargein.records.base import Frozen
from bargein.records.scenario import InterruptionType

UnitKind = Literal["open", "inform", "ask", "close", "farewell", "outcome"]
UserAction = Literal["answer", "confirm", "choose", "unknown", "ack", "volunteer", "accept",
                     "close", "interrupt", "none"]


class Unit(Frozen):
    """A piece of stage content the assistant delivers in one message."""

    kind: UnitKind
    stage: str | None = None
    text: str = ""                  # a talking point (or the resumed text); "" = generate
    keys: tuple[str, ...] = ()      # the fact keys an ``ask`` requests
    purpose: str = ""               # "readback" | "recap" for the confirmations the planner adds


class Recovery(Frozen):
    """What the assistant is recovering from (filled in after the interruption happened)."""

    type: InterruptionType
    message_index: int              # the interjection message
    planned_text: str
    heard_text: str
    remainder: str
    interjection: str
    content_start: int = 0          # where the stage content starts in planned_text
    detail: dict[str, str] = {}


class RoundPlan(Frozen):
    round: int
    stage: str | None
    assistant_mode: Literal["normal", "recovery"] = "normal"
    assistant_action: str           # open | inform | ask | close | farewell | outcome | recover
    unit: Unit | None = None
    stage_lead: bool = False
    ack: dict[str, str] = {}        # acknowledge the previous user message: kind, key, value
    recovery: Recovery | None = None
    user_action: UserAction = "none"
    user_facts: dict[str, str] = {}  # key -> the words the user uses for it
    user_style: str = "neutral"
    user_profile: str = ""
    interrupt: bool = False
    type: InterruptionType | None = None
    detail: dict[str, str] = {}     # type-specific: variant, key, label, old, new, pair
    cut_fraction: float | None = None
    overlap_ms: int | None = None
    transition: str | None = None   # "kind:source->target" taken before this round
    rationale: str = ""
    assistant_goal: str = ""        # LLM planner's words (empty offline)
    user_goal: str = ""
    message_index: int | None = None    # filled after the round: the assistant message
    cut_word_index: int | None = None


class Turn(Frozen):
    """One chat turn of context (role and words), as chat templates read it."""

    role: Literal["system", "user", "assistant"]
    content: str
