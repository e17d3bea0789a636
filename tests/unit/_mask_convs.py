"""Hand-built conversations whose user turns speak slot values (for the masking tests)."""

from __future__ import annotations

from bargein.records import (
    INTERRUPTION_TYPES, Conversation, Domain, Goal, KnowledgeBase, Message, Scenario, Transition,
    UserFact, UserIntent, VerifiedConversation, Workflow, WorkflowStage,
)

FACTS = (
    UserFact(key="account_number", value="4471 0932", kind="code",
             spoken="four four seven one, zero nine three two"),
    UserFact(key="move_date", value="June 12, 2025", kind="date", spoken="June twelfth, twenty twenty-five"),
    UserFact(key="monthly_budget", value="$85", kind="amount", spoken="eighty-five dollars"),
    UserFact(key="home_address", value="2210 Maple Street, Denver", kind="address",
             spoken="twenty-two ten Maple Street, Denver"),
)


def scenario(seed: int = 1) -> Scenario:
    stages = (
        WorkflowStage(name="verify_account", description="Ask for the account number.",
                      required_info=("account_number",)),
        WorkflowStage(name="schedule_move", description="Ask for the move date and new address.",
                      required_info=("move_date", "home_address")),
        WorkflowStage(name="pick_plan", description="Ask for the budget.", required_info=("monthly_budget",)),
    )
    wf = Workflow(stages=stages, transitions=(
        Transition(source="verify_account", target="schedule_move", kind="next"),
        Transition(source="schedule_move", target="pick_plan", kind="next"),
        Transition(source="pick_plan", target="resolved", kind="terminate")),
        start="verify_account", terminals=("resolved",))
    dom = Domain(name="telecom", title="Telecommunications")
    goal = Goal(domain="telecom", name="move_service", description="Move internet service")
    kb = KnowledgeBase(domain="telecom", goal="move_service", workflow=wf, user_facts=FACTS)
    intent = UserIntent(profile="cooperative", interruption_probs={t: 1 / 6 for t in INTERRUPTION_TYPES})
    return Scenario(domain=dom, goal=goal, kb=kb, system_prompt="You are a telecom support agent.",
                    intent=intent, seed=seed)


def conversation(seed: int = 1) -> Conversation:
    texts = [
        ("assistant", "Thanks for calling. Can I have your account number, please?"),
        ("user", "Sure, just a moment while I find the letter. Okay, so my account number is four four "
                 "seven one, zero nine three two, and that is the one printed on my last bill."),
        ("assistant", "Thank you. When are you moving, and where to?"),
        ("user", "Well, we are moving on June twelfth, twenty twenty-five, and the new place is at "
                 "twenty-two ten Maple Street, Denver, which is just across town from here."),
        ("assistant", "Got it. What monthly budget do you have in mind for the new plan?"),
        ("user", "I would like to keep it under eighty-five dollars a month if I can, because the old "
                 "plan was a bit too much for us."),
        ("assistant", "I can do that. Let me find the right plan for you."),
    ]
    msgs = tuple(Message(index=i, role=r, text=t) for i, (r, t) in enumerate(texts))
    return Conversation(scenario=scenario(seed), messages=msgs)


def verified(seed: int = 1) -> VerifiedConversation:
    return VerifiedConversation(conversation=conversation(seed))
