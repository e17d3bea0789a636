"""Eval items: one per interruption point of an accepted conversation.

The model sees the system prompt and the history up to the interjection, with the cut assistant
turn as actually spoken (its heard text); the gold recovery is the simulator's next turn::

    history  [..., assistant "Your claim needs three documents: a photo of",   <- heard text
                   user "Mm-hm."]                                              <- interjection
    gold     "the damage, the repair quote and the police report."
    depth    number of user turns before the interjection (0-based user turn index)
"""

from __future__ import annotations

from bargein.errors import GenerationFailed
from bargein.records import ChatMessage, Conversation, EvalItem, VerifiedConversation
from bargein.runner import Stage, StageContext

EVAL_VERSION = "1"


def history_messages(conv: Conversation, upto: int) -> tuple[ChatMessage, ...]:
    """Messages ``0..upto`` as chat messages, each as it was spoken."""
    return tuple(ChatMessage(role=m.role, content=m.spoken_text) for m in conv.messages[: upto + 1])


def gold_for(conv: Conversation, idx: int) -> str:
    """The gold recovery after interjection ``idx``: the next assistant turn as planned (the
    verifier's edits included); ``gold_recoveries`` when the conversation ends there."""
    nxt = conv.messages[idx + 1] if idx + 1 < len(conv.messages) else None
    if nxt is not None and nxt.role == "assistant":
        return nxt.text
    if idx in conv.gold_recoveries:
        return conv.gold_recoveries[idx]
    raise GenerationFailed(f"conversation {conv.id}: no gold recovery after message {idx}",
                           evidence={"conversation": conv.id, "message_index": idx})


def eval_items(vconv: VerifiedConversation) -> list[EvalItem]:
    """Every interruption point of an accepted conversation (none for a discarded one)."""
    if not vconv.accepted:
        return []
    conv = vconv.conversation
    rubrics = {r.message_index: r for r in conv.rubrics}
    out = []
    for cut, inter in conv.interruptions:
        idx = inter.index
        if idx not in rubrics:
            raise GenerationFailed(f"conversation {conv.id}: interjection {idx} has no rubric; "
                                   "fix: run the rubric stage before eval items",
                                   evidence={"conversation": conv.id, "message_index": idx})
        depth = sum(1 for m in conv.messages[:idx] if m.role == "user")
        out.append(EvalItem(
            id=f"{conv.id}_ev{idx}", conversation_id=conv.id, domain=conv.scenario.domain.name,
            message_index=idx, system_prompt=conv.scenario.system_prompt,
            history=history_messages(conv, idx), interjection=inter.text,
            type=cut.interruption.type, depth=depth, rubric=rubrics[idx],
            gold_recovery=gold_for(conv, idx), planned_text=cut.text,
            heard_text=cut.interruption.heard_text))
    return out


def _eval_items(vconv: VerifiedConversation, ctx: StageContext) -> list[EvalItem]:
    return eval_items(vconv)


def eval_items_stage() -> Stage:
    return Stage(name="eval_items", fn=_eval_items, output=EvalItem, version=EVAL_VERSION)
