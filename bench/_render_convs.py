"""A hand-built scenario and message builder for ``bench/render.py`` (no generator needed).
(The benchmark's own copy: benchmarks import only the package and their own helpers; the tests keep theirs under ``tests/doubles/``.)
"""

from __future__ import annotations

from bargein.records import (
    INTERRUPTION_TYPES, Domain, Goal, Interruption, KnowledgeBase, Message, Scenario,
    Transition, UserIntent, Workflow, WorkflowStage,
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

