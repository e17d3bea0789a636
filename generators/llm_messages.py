"""The chat messages each LLM agent of the simulate stage is sent: a conversation, not one prompt.

    system     the agent's role, rules and one worked example (+ the operating instructions and
               KB for the assistant) — the same on every call of a conversation, so a server
               that keeps the prompt prefix (llama.cpp) re-reads only what is new
    turns      the call so far as real turns, from the agent's side: the assistant simulator
               speaks as "assistant" and hears the caller as "user"; the caller the other way
    direction  a last user message, marked as not part of the call: what this turn must do,
               computed in code (the content to deliver, the values to give, the heard words
               and the reaction of an interjection) — the model writes only the language

* :func:`assistant_messages` — the assistant simulator's branch (normal | interruption); it
  never learns whether or where it will be cut;
* :func:`user_messages` — the user simulator's branch (normal | interrupting), given the
  :class:`~bargein.generators.user_sim.UserPlan` (never the intent) and what the caller heard;
* :func:`planner_messages` — the round planner (a narrator: the transcript, then the sampled
  decisions).
"""

from __future__ import annotations

import json
import re
from typing import Any

from bargein.generators import phrases as P
from bargein.generators.assistant_sim import brand
from bargein.generators.plan_state import asked_keys
from bargein.generators.planner import MIN_CUT_WORDS, RoundPlan
from bargein.generators.system_message import CALLER_KEYS, CALLER_KINDS, held_keys
from bargein.generators.user_sim import UserPlan
from bargein.prompts import render
from bargein.records import Scenario

DIRECTION = "(Direction for your next turn; not part of the call.)"
CUT_MARK = " —"          # a message the other side cut off ends with a dash

_INTERJECTION_EXAMPLES = {
    "filler": "Mm-hm.",
    "impatient": "Sorry, can we skip that part? I just need it done.",
    "correction": "Wait, sorry, my zip code is 60614, not 60615.",
    "topic_switch": "Oh, before I forget, can I also change my mailing address?",
    "normal": "Just so you know, I'm travelling until Friday.",
    "pushback": "Hold on, why do you need that? Nobody asked me for it before.",
}


def history_view(messages) -> list[dict[str, str]]:
    """Messages as they were actually spoken; a cut one is marked with what went unsaid."""
    out = []
    for m in messages:
        item = {"index": m.index, "role": m.role, "text": m.spoken_text}
        if m.interruption is not None:
            item["cut_off"] = f"(interrupted; unsaid: {m.text[len(m.heard_text or ''):].strip()!r})"
        out.append(item)
    return out


def _turns(heard: list[dict[str, str]], me: str) -> list[dict[str, str]]:
    """The call as chat turns from ``me``'s side ("assistant" = the agent's own words)."""
    out: list[dict[str, str]] = []
    for m in heard:
        role = "assistant" if m["role"] == me else "user"
        text = m["text"].strip() + (CUT_MARK if m.get("cut") else "")
        if out and out[-1]["role"] == role:        # two messages of one side in a row
            out[-1] = {"role": role, "content": out[-1]["content"] + " " + text}
        else:
            out.append({"role": role, "content": text})
    return out


def spoken_view(messages) -> list[dict[str, Any]]:
    """Messages as heard, a cut one flagged (for :func:`_turns`)."""
    return [{"role": m.role, "text": m.spoken_text, "cut": m.interruption is not None} for m in messages]


# ---- assistant --------------------------------------------------------------------------------
_TO_YOU = {"is": "are", "was": "were", "has": "have", "their": "your", "they": "you", "them": "you",
           "theirs": "yours", "themselves": "yourself", "they're": "you're", "doesn't": "don't",
           "isn't": "aren't", "wasn't": "weren't", "hasn't": "haven't", "wants": "want",
           "needs": "need", "would": "would", "lives": "live", "works": "work", "prefers": "prefer"}


_PRONOUNS = frozenset({"their", "they", "them", "theirs", "themselves", "they're"})
_TO_ME = {"is": "am", "was": "was", "their": "my", "they": "I", "them": "me", "theirs": "mine",
          "themselves": "myself", "they're": "I'm", "isn't": "am not", "are": "am"}


def about_me(statement: str) -> str:
    """A fact about the caller in the caller's own mouth: "I am cutting household
    subscriptions", "I lost my job and am worried"."""
    you = about_you(statement).split()[1:]
    back = {"are": "am", "were": "was", "your": "my", "you": "me", "yours": "mine",
            "yourself": "myself", "you're": "I'm", "aren't": "am not", "weren't": "wasn't"}
    words = [back.get(w.lower(), w) for w in you]
    # "you" as a subject (after a conjunction) is "I", as an object "me"
    words = ["I" if w == "me" and (k == 0 or words[k - 1].lower() in ("and", "but", "so", "because"))
             else w for k, w in enumerate(words)]
    return "I " + " ".join(words)


def about_you(statement: str, subject: str = "you") -> str:
    """A fact about the caller, written in the third person without a subject ("is cutting
    household subscriptions", "lost their job and is worried"), said to them: "you are cutting
    household subscriptions", "you lost your job and are worried"; with ``subject="they"`` about
    them: "they lost their job and are worried"."""
    words = statement.strip().rstrip(".").split()
    out = [w if w.lower() not in _TO_YOU or (subject != "you" and w.lower() in _PRONOUNS)
           else _TO_YOU[w.lower()] for w in words]
    return f"{subject} " + " ".join(out)


def is_statement(value: str) -> bool:
    """Whether a fact's value is a statement about the caller (a hidden fact: "is travelling
    with their 5-year-old"), not a value to say ("Standard at 15.49 a month")."""
    first = value.strip().split(" ", 1)[0].lower()
    return first in _TO_YOU or first in ("lost", "recently", "just", "already", "cannot", "can't",
                                         "will", "had", "does", "did", "uses", "travels", "owns")


def _ack(info: dict[str, str]) -> str:
    kind = info.get("kind")
    if kind == "fact":
        return f"the caller gave their {P.label(info.get('key', 'details'))}; thank them briefly"
    if kind == "hidden":
        # the take-up is computed (LLMAgents.assistant_turn): told to respond to it in a sentence
        # of its own, the 1.5B model said the next talking point alone, six answers in a row
        return ""
    if kind == "unknown":
        return "the caller does not have that at hand; say that is fine"
    if kind == "accept":
        return "the caller agreed"
    return ""


def _unit_direction(plan: RoundPlan) -> dict[str, str]:
    unit = plan.unit
    say = unit.text if unit is not None else ""
    ask = " and ".join(P.label(k) for k in unit.keys) if unit is not None and unit.kind == "ask" else ""
    kind = unit.kind if unit is not None else ""
    action = {"close": "Wrap up the request and ask whether the caller needs anything else.",
              "farewell": "Say a short, friendly goodbye.",
              "outcome": ("Tell the caller their request is being passed to a specialist and "
                          "what happens next." if unit is not None and "fail" in unit.keys
                          else "Tell the caller how their request ends and what happens next."),
              }.get(kind, "Continue with the next step of the task.")
    return {"say": say, "ask": "" if say else ask, "action": action}


def _recovery_how(plan: RoundPlan) -> str:
    rec = plan.recovery
    assert rec is not None
    d = rec.detail
    if rec.type == "filler":
        return (f"Say exactly the unsaid rest, \"{rec.remainder}\", as the content, with an empty "
                "acknowledgement.")
    if rec.type == "impatient":
        return ("They want to skip ahead: do not finish or repeat what you were explaining. Say a "
                "very short acknowledgement (like \"Sure, let's move on.\") and go straight on.")
    if rec.type == "correction":
        return (f"Accept the correction of their {P.label(d.get('label', 'details'))}: it is "
                f"{d.get('new', '')} (not {d.get('old', '')}); use the corrected value.")
    if rec.type == "topic_switch":
        return "Answer their unrelated request in one sentence, then steer back to the task."
    if rec.type == "pushback":
        return (f"Acknowledge their concern{' about ' + d['anchor'] if d.get('anchor') else ''} with "
                "empathy, explain briefly and offer a concrete option.")
    if d.get("value") and d.get("variant") in ("hidden", "volunteer"):
        # seen on the 1.5B model: "I'm travelling with my 5-year-old and want to sit together."
        # answered by the booking's next question, without a word about the child
        v = d["value"]
        told = about_you(v, "they") if is_statement(v) else f"their {P.label(d.get('label', 'details'))} is {v}"
        return (f"They just told you that {told}. Your reply to that is written for you: leave "
                "the acknowledgement empty and restart your cut sentence from its beginning.")
    return "Answer what they added or asked, then restart your cut sentence from its beginning."


def caller_details_withheld(scenario: Scenario) -> str:
    """The system prompt with every detail the caller gives (their name, address, email, the
    values they provide) written as ``[the caller's <label>]``: the key points of later steps
    named them, and the 1.5B model said them before the caller had ("the government opener
    stated the caller's address"). What a turn may say is in its direction, computed from what
    was said; the system message stays the same for the whole call (prefix reuse)."""
    text = scenario.system_prompt
    held = set(held_keys(scenario.kb))
    own = set(scenario.intent.provides) | {c.key for c in scenario.intent.corrections}
    for st in scenario.kb.workflow.stages:           # and what a question asks the caller for
        questions = " ".join(q for tp in st.talking_points for q in re.findall(r"[^.?!]*\?", tp))
        own |= set(asked_keys(questions, tuple(st.required_info)))
    facts = [f for f in scenario.kb.user_facts if f.key not in held and (
        f.key in own or f.key in CALLER_KEYS or f.kind in CALLER_KINDS)]
    forms = sorted({(v, f.key) for f in facts for v in (f.value, f.spoken) if v and len(v) >= 3},
                   key=lambda x: -len(x[0]))
    for value, key in forms:
        text = re.sub(rf"(?<![\w@.]){re.escape(value)}(?![\w@])", f"[the caller's {P.label(key)}]", text)
    return text


def assistant_system(scenario: Scenario) -> str:
    return render("assistant_simulator.system", system_prompt=caller_details_withheld(scenario),
                  brand=brand(scenario))


def assistant_messages(plan: RoundPlan, scenario: Scenario, messages) -> tuple[str, list[dict[str, str]]]:
    """(agent name, chat messages) for the branch the plan calls for."""
    branch = "interruption" if plan.assistant_mode == "recovery" else "normal"
    name = f"assistant_simulator.{branch}"
    # the assistant never learns whether or where it will be cut (no cross-contamination), nor
    # the planner model's summary of the round: what the turn delivers is computed (the
    # direction). Seen on the 1.5B model, given "Find the order by order number or email and
    # confirm the customer's name on it." for the opening round: "I've found order HH-1389-4005
    # ..." as the call's first words, before the caller had said anything
    view = plan.model_dump(mode="json", exclude={
        "user_style", "user_profile", "user_facts", "user_goal", "user_action", "message_index",
        "cut_word_index", "interrupt", "type", "detail", "cut_fraction", "overlap_ms", "rationale",
        "assistant_goal"})
    min_words = 1 if plan.assistant_action == "farewell" else MIN_CUT_WORDS
    unit = _unit_direction(plan)
    common = dict(plan=json.dumps(view, separators=(",", ":")), min_words=min_words, **unit)
    turns = _turns(spoken_view(messages), "assistant")
    if branch == "interruption":
        rec = plan.recovery
        assert rec is not None
        # the cut message and the interjection are in the direction, not repeated as turns
        turns = _turns(spoken_view(messages[:rec.message_index - 1]), "assistant")
        direction = render(name, type=rec.type, heard=rec.heard_text, unsaid=rec.remainder,
                           interjection=rec.interjection, how=_recovery_how(plan), **common)
    else:
        direction = render(name, opening=plan.assistant_action == "open", brand=brand(scenario),
                           acknowledge=_ack(plan.ack) if messages else "", **common)
    return name, [{"role": "system", "content": assistant_system(scenario)}, *turns,
                  {"role": "user", "content": direction}]


# ---- user -------------------------------------------------------------------------------------
def user_system(up: UserPlan) -> str:
    return render("user_simulator.system", persona=up.persona)


_ACTIONS = {
    "answer": "Answer the question you were just asked.",
    "confirm": "Confirm briefly that what you heard is right.",
    "choose": "Say which option you prefer.",
    "volunteer": "Reply to what you heard, and mention the detail below.",
    "accept": "Accept what was offered.",
    "close": "Say you need nothing else and thank them.",
}


def _reply_what(up: UserPlan) -> str:
    if up.action == "unknown":
        key = next(iter(up.facts), "details")
        return f"Say you do not have your {P.label(key)} at hand right now."
    if up.action == "choose" and up.facts.get("option"):
        return f"Say you prefer: {up.facts['option']}."
    # the planner model's words for the caller's goal are left out: what the reply does is
    # decided in code (the action). Seen on the 1.5B model, told to acknowledge a confirmation
    # email "(Acknowledge the confirmation and provide the email address.)": the caller read the
    # company's email back, and "(Choose to keep the booking or not.)" drew "Okay, I'll keep
    # it." from a caller phoning to cancel
    return _ACTIONS.get(up.action, "React briefly and naturally to what you just heard.")


def _interject_what(up: UserPlan, detail: dict[str, str]) -> str:
    t, d = up.type, detail
    anchor = d.get("anchor", "")
    if t == "filler":
        return 'Say only a short backchannel such as "mm-hm", "yeah" or "right".'
    if t == "impatient":
        return ("You are in a hurry: ask them to skip the explanation and get on with it. Do not "
                "ask them to read, repeat or explain anything.")
    if t == "correction":
        return (f"Correct your {P.label(d.get('label', 'details'))}: it is {d.get('new', '')}, "
                f"not {d.get('old', '')}. Say the corrected value.")
    if t == "topic_switch":
        if d.get("pair"):        # the request itself is planned (the offline pair's line)
            return ("Abruptly raise this unrelated request of yours, briefly, in your own words: "
                    f"\"{P.pair(d, 'topic_switch')['user']}\"")
        return "Abruptly raise an unrelated request of your own (something else you need), briefly."
    if t == "pushback":
        if d.get("variant") == "sensitive":
            return f"Object to giving your {P.label(d.get('label', 'details'))} on the phone."
        return f"Push back on \"{anchor or 'what you just heard'}\": question or dispute it."
    # normal: an unsolicited detail, or a quick clarification of what was heard
    if d.get("value") and d.get("variant") in ("hidden", "volunteer"):
        v = d["value"]
        return (f"Cut in to mention that {about_you(v)}." if is_statement(v)
                else f"Cut in to add this detail: {v}.")
    if anchor:
        return f"Ask a quick question about \"{anchor}\"."
    if d.get("variant") == "constraint" and d.get("pair"):
        # seen on the 1.5B model, told only to "add a constraint or preference of your own":
        # "I'm sorry, but I can't assist with that request at this time." three times
        return ("Cut in to tell them this, briefly, in your own words: "
                f"\"{P.pair(d, 'normal_constraint')['user']}\"")
    return "Cut in to add a constraint or preference of your own that matters for this request."


def user_messages(up: UserPlan, heard_history: list[dict], heard: str | None = None,
                  detail: dict[str, str] | None = None,
                  example: str | None = None) -> tuple[str, list[dict[str, str]]]:
    """(agent name, chat messages) for the user simulator's branch. ``heard_history``: the call
    as the caller heard it (``role``, ``text``, ``cut``), ending with the assistant turn being
    answered; for an interjection ``heard`` is the part of that turn heard before the cut
    (computed in code) and ``detail`` what the caller reacts to."""
    view = json.dumps(up.model_dump(mode="json"), separators=(",", ":"))
    if up.interrupt:
        # the planner model's words for the caller's goal are left out of a cut-in: what the
        # caller says is computed (seen: "Interrupts to request the confirmation code and last
        # name." as the goal of a caller who was to add a constraint, who then refused)
        view = json.dumps(up.model_dump(mode="json", exclude={"goal"}), separators=(",", ":"))
        assert heard is not None
        name = "user_simulator.interrupting"
        turns = _turns([*heard_history, {"role": "assistant", "text": heard, "cut": True}], "user")
        direction = render(name, heard=heard, last_words=" ".join(heard.split()[-4:]), plan=view,
                           what=_interject_what(up, detail or dict(up.detail)),
                           example=json.dumps({"interjection": example if example is not None
                                               else _INTERJECTION_EXAMPLES.get(up.type or "normal", "")}))
    else:
        name = "user_simulator.normal"
        turns = _turns(heard_history, "user")
        # the caller's own details, stated as theirs: "Give your order number: X" read to the
        # 1.5B model as a request for *its* order number ("I'm sorry, but I can't assist with
        # that. I don't have the information you're asking for.", three times)
        facts = [(f'Tell them, in your own words: "{about_me(v)}."' if is_statement(v)
                  else f"Your {P.label(k)} is {v}: say it.") for k, v in up.facts.items()
                 if v and up.action in ("answer", "volunteer")]
        if len(facts) > 1:
            # seen on the 1.5B model, asked "the parcel number ..., or the property address?"
            # with both to give: one of them per answer, three answers in a row
            facts.append(f"Say all {len(facts)} of these in this one reply.")
        view = json.dumps(up.model_dump(mode="json", exclude={"goal"}), separators=(",", ":"))
        direction = render(name, what=_reply_what(up), facts=facts, style=up.style, plan=view,
                           example=example or "")
    return name, [{"role": "system", "content": user_system(up)}, *turns,
                  {"role": "user", "content": direction}]


# ---- planner ----------------------------------------------------------------------------------
def planner_messages(scenario: Scenario, plan: RoundPlan, messages) -> list[dict[str, str]]:
    sc = scenario
    stage = sc.kb.workflow.stage(plan.stage) if plan.stage in sc.kb.workflow.stage_names else None
    system = render("round_planner", domain=sc.domain.title, goal=sc.goal.description,
                    profile=sc.intent.profile)
    transcript = "\n".join(
        f"[{m['index']}] {m['role']}: {m['text']}" + (f" {m['cut_off']}" if "cut_off" in m else "")
        for m in history_view(messages)) or "(the call has not started)"
    decisions = json.dumps({
        "stage": stage.model_dump(exclude={"id"}) if stage else {},
        "assistant_action": plan.assistant_action, "content": plan.unit.text if plan.unit else "",
        "asks_for": list(plan.unit.keys) if plan.unit else [], "user_action": plan.user_action,
        "user_facts": plan.user_facts, "interrupt": plan.interrupt, "type": plan.type,
        "detail": plan.detail, "recovering_from": plan.recovery.type if plan.recovery else None},
        separators=(",", ":"))
    return [{"role": "system", "content": system},
            # the worked example as turns of its own (a small model copied it when it was inline)
            {"role": "user", "content": "The call so far:\n" + _EXAMPLE_CALL},
            {"role": "user", "content": f"Sampled decisions for the next round:\n<plan>\n{_EXAMPLE_DECISIONS}\n</plan>"},
            {"role": "assistant", "content": _EXAMPLE_PLAN},
            {"role": "user", "content": "The call so far:\n" + transcript},
            {"role": "user", "content": f"Sampled decisions for the next round:\n<plan>\n{decisions}\n</plan>"}]


_EXAMPLE_CALL = ("[0] assistant: Thanks for calling Northwind Outfitters. Could I have your order number?\n"
                 "[1] user: Sure, it's N W four four one seven.")
_EXAMPLE_DECISIONS = json.dumps({
    "stage": {"name": "refund", "description": "Explain the refund timeline"},
    "assistant_action": "inform", "content": "Refunds reach your card within two business days.",
    "asks_for": [], "user_action": "ack", "user_facts": {}, "interrupt": False, "type": None,
    "detail": {}, "recovering_from": None}, separators=(",", ":"))
_EXAMPLE_PLAN = json.dumps({
    "assistant_goal": "Confirm the order and explain that the refund reaches the card within two business days.",
    "user_goal": "Acknowledge the timeline briefly.",
    "rationale": "The refund stage starts once the order is found."})
