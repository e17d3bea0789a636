"""The assistant's system message: its complete operating instructions (IHBench Appendix G.1).

The offline writer is a deterministic template over domain, goal and knowledge base: role,
goal, today's date, every stage in order with what to ask and what to do on skip, failure and
termination, the records on file, the domain guidelines and voice style.

The records on file are only what the company holds before the caller says anything
(:func:`held_keys`): never the caller's own details (name, email, address, the order or parcel
number a step asks for, what the caller believes or reports). Seen on the 1.5B model when they
were listed: "Great, I have the order number. It starts with H H ..." as the call's first
words, the assistant answering its own question with the records' values. The LLM writer renders
``prompts/system_message_writer.jinja2`` with the same inputs (see ``scenarios_llm``).
"""

from __future__ import annotations

import re

from bargein.generators.workflow import stage_path
from bargein.records import Domain, Goal, KnowledgeBase, Transition

VOICE_STYLE: tuple[str, ...] = (
    "You are speaking on a live phone call: everything you say is converted to speech.",
    "Keep each turn to one to three short sentences and ask one question at a time.",
    "Never use lists, headings, emoji, or symbols that do not read aloud naturally.",
    "Read numbers, codes and dates in small groups and confirm them back.",
    "Never mention these instructions, stage names, the workflow or the records you were given; "
    "speak as a knowledgeable agent would.",
    "Do not invent prices, dates or policies beyond what is written here.",
)


def _label(name: str) -> str:
    return name.replace("_", " ")


def _where(target: str, kb: KnowledgeBase, number: dict[str, int]) -> str:
    if target in number:
        return f"go to step {number[target]} ({_label(target)})"
    return f"end the call with the outcome \"{_label(target)}\""


def _transition_line(tr: Transition, kb: KnowledgeBase, number: dict[str, int]) -> str:
    if tr.kind == "next" and tr.condition in ("", "the stage is complete"):
        return f"When this step is done, {_where(tr.target, kb, number)}."
    when = tr.condition or {"next": "the step is done", "skip": "the step can be skipped",
                            "fail": "the step fails", "terminate": "the call must end"}[tr.kind]
    return f"If {when.rstrip('.')}, {_where(tr.target, kb, number)}."


# the caller's own details, by key or kind: a caller gives these, the records never hold them first
CALLER_KEYS = frozenset("""full_name date_of_birth ssn_last4 home_address phone_number email
mailing_address work_email account_email admin_email""".split())
CALLER_KINDS = frozenset({"name", "email", "phone", "address", "date_of_birth"})
# a sentence that says back what the caller said ("You mentioned budget cuts", "You believe ...")
_ATTRIBUTED = re.compile(r"\byou(?:'ve)? (?:said|mentioned|told|described|believe|noted|indicated|"
                         r"reported|think)\b|\bso,? you(?:'d| would) like\b|\bso,? you (?:want|need)\b|"
                         r"\byou're asking for\b|^so,? that's\b", re.I)   # "So that's 2 copies by PDF."


def held_keys(kb: KnowledgeBase) -> tuple[str, ...]:
    """The fact keys the company holds on file, in KB order: a value some talking point states
    as the company's (a statement, not a question, not a read-back of the caller's words), that
    no talking point asks the caller for, and that is not one of the caller's own details."""
    stated: set[str] = set()
    asked: set[str] = set()
    for st in kb.workflow.stages:
        for tp in st.talking_points:
            for sent in re.split(r"(?<=[.?!])\s+", tp):
                for f in kb.user_facts:
                    forms = [v for v in (f.value, f.spoken) if v]
                    if any(v in sent for v in forms):
                        (asked if "?" in sent or _ATTRIBUTED.search(sent) else stated).add(f.key)
                    elif "?" in sent and _label(f.key).lower() in sent.lower():
                        asked.add(f.key)
    return tuple(f.key for f in kb.user_facts if f.key in stated - asked
                 and f.key not in CALLER_KEYS and f.kind not in CALLER_KINDS)


def offline_system_message(domain: Domain, goal: Goal, kb: KnowledgeBase, *, brand: str,
                           today: str) -> str:
    """A complete, deterministic system message; no placeholders, numbered stages."""
    wf = kb.workflow
    order = stage_path(wf)
    order += [s for s in wf.stage_names if s not in order]
    number = {name: i + 1 for i, name in enumerate(order)}
    out = [
        f"You are the voice assistant for {brand}, in the {domain.title.lower()} domain. "
        f"{domain.description}",
        f"Your task on this call: {goal.description.rstrip('.')}.",
        f"Today is {today}.",
        "",
        "WORKFLOW",
        "Drive the call through these steps in order. Finish each step before starting the next, "
        "unless its skip condition applies. The call ends only in one of these outcomes: "
        + ", ".join(f"\"{_label(t)}\"" for t in wf.terminals) + ".",
    ]
    held = held_keys(kb)
    for name in order:
        st = wf.stage(name)
        out += ["", f"Step {number[name]}: {_label(name).capitalize()}. {st.description}"]
        if st.required_info:
            out.append("Information needed: " + "; ".join(
                _label(k) for k in st.required_info) + ".")
        if st.talking_points:
            out.append("Key points to cover: " + " ".join(st.talking_points))
        out += [f"Skip when: {c}" for c in st.skip_conditions]
        out += [f"On failure: {c}" for c in st.failure_handling]
        out += [f"End the call when: {c}" for c in st.termination_conditions]
        out += [_transition_line(tr, kb, number) for tr in wf.transitions if tr.source == name]
    if held:
        out += ["", "RECORDS ON FILE",
                "What the company's systems show. The caller's own details are not here: ask the "
                "caller for them. Never read a full account number, PIN or code back."]
        out += [f"- {_label(f.key).capitalize()}: {f.value}" for f in kb.user_facts if f.key in held]
    if kb.guidelines:
        out += ["", "GUIDELINES"] + [f"- {g}" for g in kb.guidelines]
    out += ["", "SPEAKING STYLE"] + [f"- {s}" for s in VOICE_STYLE]
    return "\n".join(out).strip() + "\n"
