"""Round plans: what each round of a generated conversation was planned to do.

A :class:`RoundPlan` is one round (the assistant's action, the user's, an interruption if any);
a :class:`Unit` is a piece of stage content; a :class:`Recovery` is what the assistant recovers
from. :attr:`Conversation.plan <bargein.records.Conversation.plan>` keeps them, one per round.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from typing_extensions import TypedDict

from bargein.records.base import Frozen
from bargein.records.scenario import InterruptionType

UnitKind = Literal["open", "inform", "ask", "close", "farewell", "outcome"]
UserAction = Literal["answer", "confirm", "choose", "unknown", "ack", "volunteer", "accept",
                     "close", "interrupt", "none"]


class InterruptionDetail(TypedDict, total=False):
    """The type-specific facts of a planned interruption: a fixed set of keys, each optional.

    Kept a mapping (validated, extra keys refused, frozen inside the record) so it reads and
    serialises exactly as before: generators read it with ``d.get("variant")`` and put it into
    prompts with ``json.dumps``. Which keys a type sets::

        correction     key, label, old, new
        topic_switch   pair
        normal         variant (clarify | constraint | volunteer | hidden), pair | key+label+value
        pushback       variant (suspicion | resistance | dispute | disagreement | sensitive | persist),
                       key+label (sensitive), anchor, object_kind
        any volunteer round: hidden ("1")
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    variant: str        # the sub-kind (see above)
    key: str            # the fact key concerned (correction, sensitive, volunteer)
    label: str          # its spoken label ("account number")
    old: str            # correction: the value first given
    new: str            # correction: the corrected value
    value: str          # volunteer: the words the caller volunteers
    pair: str           # index into the topic_switch / normal_constraint pair bank
    anchor: str         # the heard words the interjection refers to
    object_kind: str    # what a pushback/clarification is about (requirement, fee, policy, ...)
    hidden: str         # "1": the user volunteers a fact the assistant did not ask for


class Acknowledgement(TypedDict, total=False):
    """What the assistant acknowledges of the previous user message (a fixed set of keys)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    kind: Literal["fact", "plain", "hidden", "unknown", "accept"]
    key: str            # the fact key the user gave (kind fact / hidden)
    value: str          # the words the user gave it with


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
    detail: InterruptionDetail = {}


class RoundPlan(Frozen):
    round: int
    stage: str | None
    assistant_mode: Literal["normal", "recovery"] = "normal"
    assistant_action: str           # open | inform | ask | close | farewell | outcome | recover
    unit: Unit | None = None
    stage_lead: bool = False
    ack: Acknowledgement = {}       # acknowledge the previous user message
    recovery: Recovery | None = None
    user_action: UserAction = "none"
    # fact key -> the words the user uses for it. A map: the keys are the scenario's fact keys,
    # an open set that every catalogue domain defines for itself.
    user_facts: dict[str, str] = {}
    user_style: str = "neutral"
    user_profile: str = ""
    interrupt: bool = False
    type: InterruptionType | None = None
    detail: InterruptionDetail = {}     # type-specific facts of the interruption
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
