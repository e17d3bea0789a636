"""Hand-built conversations with interruptions for rendering (bench/render.py, bench/cache_validity.py
and the render tests); no generator needed."""

from __future__ import annotations

from bargein.records import (
    INTERRUPTION_TYPES, Conversation, Domain, Goal, Interruption, KnowledgeBase, Message, Scenario,
    Transition, UserIntent, VerifiedConversation, Workflow, WorkflowStage,
)


def scenario(seed: int = 1) -> Scenario:
    st = WorkflowStage(name="verify_identity", description="Ask for the policy number.")
    st2 = WorkflowStage(name="explain_claim", description="Explain the documents needed.")
    wf = Workflow(stages=(st, st2),
                  transitions=(Transition(source="verify_identity", target="explain_claim", kind="next"),
                               Transition(source="explain_claim", target="resolved", kind="terminate")),
                  start="verify_identity", terminals=("resolved",))
    dom = Domain(name="insurance", title="Insurance")
    goal = Goal(domain="insurance", name="file_claim", description="File a claim")
    kb = KnowledgeBase(domain="insurance", goal="file_claim", workflow=wf)
    intent = UserIntent(profile="cooperative but rushed",
                        interruption_probs={t: 1 / 6 for t in INTERRUPTION_TYPES})
    return Scenario(domain=dom, goal=goal, kb=kb, system_prompt="You are a claims agent.",
                    intent=intent, seed=seed)


def msg(i: int, role: str, text: str, cut_words: int | None = None, overlap_ms: int = 250,
        itype: str = "normal", interjection: str = "") -> Message:
    if cut_words is None:
        return Message(index=i, role=role, text=text)
    heard = " ".join(text.split()[:cut_words])
    intr = Interruption(type=itype, cut_word_index=cut_words, cut_char_offset=len(heard),
                        heard_text=heard, overlap_ms=overlap_ms, interjection=interjection)
    return Message(index=i, role=role, text=text, heard_text=heard, interruption=intr)


def conversation(seed: int = 1, variant: int = 0) -> Conversation:
    """Six to eight messages, two interruptions (one a short filler that ends before the stop)."""
    corr = "Actually, it was my work address, not my home."
    filler = "Mm-hm."
    msgs = [
        msg(0, "assistant", "Hello, thanks for calling Northwind Insurance. How can I help you today?"),
        msg(1, "user", "Hi, I need to file a claim for some water damage in my kitchen."),
        msg(2, "assistant", "I can help with that. Your claim needs three documents: a photo of the "
            "damage, the receipt, and your policy number.", cut_words=9 + variant, overlap_ms=300,
            itype="correction", interjection=corr),
        msg(3, "user", corr),
        msg(4, "assistant", "Thanks for the correction. I will update the address on the claim, and "
            "the repair estimate of 1,250 dollars stays the same for now.", cut_words=6,
            overlap_ms=450, itype="filler", interjection=filler),
        msg(5, "user", filler),
        msg(6, "assistant", "The adjuster will call you within two business days."),
        msg(7, "user", "Great, thank you."),
    ]
    return Conversation(scenario=scenario(seed), messages=tuple(msgs))


def verified(seed: int = 1, variant: int = 0) -> VerifiedConversation:
    return VerifiedConversation(conversation=conversation(seed, variant))
