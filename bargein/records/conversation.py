"""Conversation records: messages with interruptions, rubrics, verification, eval items.

An interruption sits on the assistant message that was cut; the next user message is the
interjection::

    assistant  "Your claim needs three documents: a photo of | the damage, ..."
                                        heard_text ----------^ cut (word index 6)
    user                                        "Actually it was my work address"
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bargein.records.base import Record
from bargein.records.plan import RoundPlan
from bargein.records.scenario import InterruptionType, Scenario

Role = Literal["user", "assistant"]


class Interruption(Record):
    id_prefix = "int"
    type: InterruptionType
    cut_word_index: int = Field(ge=1)           # heard = first cut_word_index words
    cut_char_offset: int = Field(ge=1)          # len(heard_text) in the planned text
    heard_text: str
    overlap_ms: int = Field(ge=0)
    interjection: str                           # the user's words (the next user message)


class Message(Record):
    id_prefix = "msg"
    index: int = Field(ge=0)
    role: Role
    text: str                                   # planned / full text
    heard_text: str | None = None               # set on an interrupted assistant message
    stage: str | None = None                    # workflow stage the message belongs to
    interruption: Interruption | None = None

    @model_validator(mode="after")
    def _heard(self) -> "Message":
        if self.interruption is not None:
            if self.role != "assistant":
                raise ValueError("only assistant messages can be interrupted")
            if self.heard_text != self.interruption.heard_text:
                raise ValueError("heard_text must equal interruption.heard_text")
            if not self.text.startswith(self.interruption.heard_text):
                raise ValueError("heard_text must be a prefix of the planned text")
        return self

    @property
    def spoken_text(self) -> str:
        return self.heard_text if self.heard_text is not None else self.text


class Rubric(Record):
    """Criteria fixed before any model response exists."""

    id_prefix = "rub"
    message_index: int                          # index of the interjection (user) message
    type: InterruptionType
    tf_criterion: str
    rq_criteria: tuple[str, ...] = Field(min_length=2, max_length=4)


class Conversation(Record):
    id_prefix = "conv"
    scenario: Scenario
    messages: tuple[Message, ...]
    rubrics: tuple[Rubric, ...] = ()
    gold_recoveries: dict[int, str] = {}        # interjection index -> gold assistant reply
    plan: tuple[RoundPlan, ...] = ()            # round plans as the planner produced them
    agents: str = "offline"
    outcome: str | None = None                  # terminal outcome reached, if any

    @property
    def interruptions(self) -> list[tuple[Message, Message]]:
        """(interrupted assistant message, interjection user message) pairs."""
        out = []
        for i, m in enumerate(self.messages[:-1]):
            if m.interruption is not None:
                out.append((m, self.messages[i + 1]))
        return out


class Verdict(Record):
    id_prefix = "vrd"
    check: str                                  # e.g. "state_machine_leakage"
    message_index: int | None
    issue: str
    fixable: bool
    evidence: str = ""
    edit: str | None = None                     # minimal edit command for the modifier
    round: int = 0


class VerifiedConversation(Record):
    id_prefix = "vconv"
    conversation: Conversation
    verdicts: tuple[Verdict, ...] = ()          # every verdict of every round
    rounds: int = 0
    accepted: bool = True
    discard_reasons: tuple[str, ...] = ()


class ChatMessage(Record):
    """A chat message as HF chat templates and TRL read it."""

    id_prefix = "chat"
    role: Literal["system", "user", "assistant"]
    content: str


class EvalItem(Record):
    """One interruption point: the model sees history up to the cut and must recover."""

    id_prefix = "ev"
    conversation_id: str
    domain: str
    message_index: int                          # index of the interjection message
    system_prompt: str
    history: tuple[ChatMessage, ...]            # ends with the interjection; cut turn as spoken
    interjection: str
    type: InterruptionType
    depth: int                                  # user turn index of the interjection
    rubric: Rubric
    gold_recovery: str
    planned_text: str = ""                      # the full assistant message that was cut
    heard_text: str = ""
    baseline: str | None = None
    baseline_model: str | None = None
