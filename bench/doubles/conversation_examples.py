"""A hand-written scenario and conversation that pass every check, plus a small builder.

Used by the verifier's tests and as a worked example of what a clean conversation looks like::

    conv = example_conversation()                 # 21 messages, one interruption of each type
    conv = build_conversation(example_scenario(), [
        ("assistant", "Hello, how can I help you today?", {"cut": 3, "type": "filler"}),
        ("user", "mm-hm"),
        ...])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bargein.records.conversation import Conversation, Interruption, Message, Rubric
from bargein.records.scenario import (
    Correction, Domain, Goal, KnowledgeBase, Scenario, Transition, UserFact, UserIntent, Workflow,
    WorkflowStage,
)
from bargein.verify.text import prefix_at_word

RUBRIC_TEXT: dict[str, tuple[str, tuple[str, ...]]] = {
    "normal": ("Address the added detail, then resume the current stage.",
               ("Acknowledges the new detail.", "Resumes with a fresh start, not mid-sentence.")),
    "impatient": ("Skip the explanation and move the task forward.",
                  ("Does not re-explain the skipped content.", "Advances the workflow.")),
    "correction": ("Accept the corrected value and continue.",
                   ("Accepts the correction without pushback.", "Uses the corrected value.")),
    "topic_switch": ("Answer the new question, then steer back.",
                     ("Addresses the new request.", "Returns to the workflow without blending.")),
    "filler": ("Continue the cut sentence exactly where it stopped.",
               ("Does not restart the sentence.", "Does not acknowledge the backchannel.")),
    "pushback": ("De-escalate and offer an alternative.",
                 ("Acknowledges the concern with empathy.", "Offers a concrete alternative.")),
}


def example_scenario() -> Scenario:
    """A telecom repair call: four stages, concrete facts, one planned correction."""
    stages = (
        WorkflowStage(name="identity_verification",
                      description="Confirm the caller owns the account using name, account "
                                  "number and billing zip code.",
                      required_info=("full_name", "account_number", "billing_zip"),
                      failure_handling=("Offer a one-time passcode by text message after two "
                                        "failed attempts.",),
                      termination_conditions=("End the call if the caller cannot be verified "
                                              "after three attempts.",)),
        WorkflowStage(name="troubleshooting",
                      description="Find out when the outage began and the modem light colour; "
                                  "walk through one power cycle.",
                      skip_conditions=("Skip the power cycle when the caller already restarted "
                                       "the modem today.",)),
        WorkflowStage(name="schedule_technician",
                      description="Offer the earliest technician window and confirm it.",
                      failure_handling=("Offer the cancellation list when no window suits.",)),
        WorkflowStage(name="wrap_up", description="Summarise the booking and close politely."),
    )
    workflow = Workflow(
        stages=stages, start="identity_verification", terminals=("resolved", "unverified"),
        transitions=(
            Transition(source="identity_verification", target="troubleshooting", kind="next"),
            Transition(source="identity_verification", target="unverified", kind="terminate",
                       condition="three failed verification attempts"),
            Transition(source="troubleshooting", target="schedule_technician", kind="next"),
            Transition(source="troubleshooting", target="schedule_technician", kind="skip",
                       condition="the caller already restarted the modem today"),
            Transition(source="schedule_technician", target="wrap_up", kind="next"),
            Transition(source="wrap_up", target="resolved", kind="next"),
        ))
    kb = KnowledgeBase(
        domain="telecom", goal="repair_outage", workflow=workflow,
        guidelines=("Never book a technician visit before the modem lights are known.",
                    "Quote the annual equipment fee only when the customer asks about billing."),
        user_facts=(UserFact(key="full_name", value="Dana Whitfield", kind="name"),
                    UserFact(key="account_number", value="4471 0932 58", kind="account"),
                    UserFact(key="billing_zip", value="60614", kind="code")))
    intent = UserIntent(
        profile="cooperative but rushed",
        interruption_probs={"normal": 0.2, "impatient": 0.2, "correction": 0.1,
                            "topic_switch": 0.15, "filler": 0.15, "pushback": 0.2},
        hidden_facts=(UserFact(key="outage_day", value="Sunday", kind="date"),),
        corrections=(Correction(key="outage_day", first_value="Monday",
                                corrected_value="Sunday"),))
    return Scenario(
        domain=Domain(name="telecom", title="Telecommunications"),
        goal=Goal(domain="telecom", name="repair_outage",
                  description="Get a home internet outage repaired."),
        kb=kb, intent=intent, seed=7,
        system_prompt="You are Sam, a Northwind Mobile support agent. Verify the caller, "
                      "troubleshoot the outage, then book a technician if needed.")


Turn = tuple[str, str] | tuple[str, str, dict[str, Any]]


def build_conversation(scenario: Scenario, turns: Sequence[Turn], *,
                       rubrics: Sequence[Rubric] | None = None,
                       gold: dict[int, str] | None = None) -> Conversation:
    """Messages from ``(role, text[, opts])``; opts: ``cut`` (word index), ``type``, ``stage``,
    ``overlap_ms``. The heard prefix and the interjection follow from the texts. A rubric is
    made for every interruption unless ``rubrics`` is given."""
    msgs, made = [], []
    for i, turn in enumerate(turns):
        role, text = turn[0], turn[1]
        opts = turn[2] if len(turn) > 2 else {}
        itr = None
        heard = None
        if "cut" in opts:
            heard = prefix_at_word(text, opts["cut"])
            nxt = turns[i + 1][1] if i + 1 < len(turns) else ""
            itr = Interruption(type=opts["type"], cut_word_index=opts["cut"],
                               cut_char_offset=len(heard), heard_text=heard,
                               overlap_ms=opts.get("overlap_ms", 300), interjection=nxt)
            tf, rq = RUBRIC_TEXT[opts["type"]]
            made.append(Rubric(message_index=i + 1, type=opts["type"], tf_criterion=tf,
                               rq_criteria=rq))
        msgs.append(Message(index=i, role=role, text=text, heard_text=heard,
                            stage=opts.get("stage"), interruption=itr))
    return Conversation(scenario=scenario, messages=tuple(msgs),
                        rubrics=tuple(made if rubrics is None else rubrics),
                        gold_recoveries=dict(gold or {}))


EXAMPLE_TURNS: tuple[Turn, ...] = (
    ("assistant", "Thanks for calling Northwind Mobile, this is Sam. To get started, could you "
                  "tell me your full name and the account number on your bill?",
     {"stage": "identity_verification"}),
    ("user", "Sure, it's Dana Whitfield, and the account number is 4471 0932 58."),
    ("assistant", "Thank you, Dana. I found your account. For security, could you also confirm "
                  "the billing zip code on file for this line?",
     {"stage": "identity_verification", "cut": 6, "type": "filler"}),
    ("user", "mm-hm"),
    ("assistant", "account. For security, could you also confirm the billing zip code on file "
                  "for this line?", {"stage": "identity_verification"}),
    ("user", "It's 60614."),
    ("assistant", "Great, you're verified. Now let's look at the internet problem. When did the "
                  "outage start, and are the lights on your modem green, amber or off right now?",
     {"stage": "troubleshooting", "cut": 15, "type": "normal"}),
    ("user", "Oh, and it's the fiber line at my apartment, not the office."),
    ("assistant", "Got it, the fiber line at your apartment. When did the outage start, and what "
                  "color are the modem lights right now?", {"stage": "troubleshooting"}),
    ("user", "It started Monday around 7 pm, and the lights are amber."),
    ("assistant", "Amber lights usually mean the signal isn't reaching the modem. I'd like to "
                  "walk you through a restart first: unplug the power cord, wait thirty seconds, "
                  "and then plug it back in.",
     {"stage": "troubleshooting", "cut": 18, "type": "impatient"}),
    ("user", "I already did all that, can we just book someone?"),
    ("assistant", "Of course. The earliest technician visit is Thursday between 9 and 11 am, and "
                  "there is no charge since this is a line fault. Does that work for you?",
     {"stage": "schedule_technician", "cut": 13, "type": "correction"}),
    ("user", "Actually, sorry, it started Sunday night, not Monday."),
    ("assistant", "Thanks for correcting that, I've noted Sunday night. The earliest technician "
                  "visit is Thursday between 9 and 11 am. Does that work?",
     {"stage": "schedule_technician", "cut": 15, "type": "pushback"}),
    ("user", "Thursday? That's way too long to be without internet."),
    ("assistant", "I understand, and I'm sorry. I can add you to the cancellation list for an "
                  "earlier slot, and I'll keep the Thursday visit as a backup.",
     {"stage": "schedule_technician", "cut": 13, "type": "topic_switch"}),
    ("user", "Oh, while I have you, why did my last bill go up by twelve dollars?"),
    ("assistant", "That increase is the annual equipment fee on your account. Now, back to your "
                  "repair: shall I keep Thursday as a backup and add you to the cancellation list?",
     {"stage": "schedule_technician"}),
    ("user", "Yes, please do that."),
    ("assistant", "Done. You're booked for Thursday between 9 and 11 am and on the cancellation "
                  "list. Is there anything else?", {"stage": "wrap_up"}),
)


def example_conversation() -> Conversation:
    """21 messages with one interruption of each of the six types; passes every check."""
    return build_conversation(example_scenario(), EXAMPLE_TURNS, gold={
        3: "account. For security, could you also confirm the billing zip code on file for "
           "this line?"})
