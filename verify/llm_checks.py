"""LLM checks (LLM path only): coherence (a reply to a question never asked, messages out of
order), consistency (a value that contradicts the knowledge base, the caller's facts or the call
itself), naturalness and interruption-type fit, plus anything else the verifier model finds that
the deterministic checks missed.

The verifier sees the whole conversation, the knowledge base, the user intent and the type
definitions (as in IHBench, Appendix I.6). Its prompt is a conversation: the instructions as the
system message, two worked examples (a clean call and a broken one) as earlier turns, the call
to verify last. Each issue it reports is fixable (a rewrite instruction for the modifier) or
unfixable (the conversation is discarded); coherence and consistency issues are never fixable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from bargein.errors import GenerationFailed
from bargein.prompts import render
from bargein.records.conversation import Conversation, Verdict
from bargein.verify.edits import rewrite_edit
from bargein.verify.modifier import REASKS, LLMClient, message_view
from bargein.verify.text import content_words

VERIFIER_PROMPT = "verifier"
VERIFIER_SYSTEM = "verifier.system"
# every prompt the LLM verify stage renders (its cache key covers them)
PROMPTS = ("verifier", "verifier.system", "reply_checker", "reply_checker.system", "modifier",
           "modifier.system")
LLMCheck = Literal["coherence", "consistency", "naturalness", "type_fit", "state_machine_leakage",
                   "undelivered_content", "other"]
UNFIXABLE = ("coherence", "consistency")     # the rest of the call was built on the broken message
MAX_ISSUES = 8


class LLMIssue(BaseModel):
    check: LLMCheck
    message_index: int = Field(ge=0)
    issue: str = Field(min_length=3, max_length=300)
    fixable: bool
    instruction: str = Field(default="", max_length=300)   # for the modifier: what to change
    quote: str = Field(default="", max_length=200)       # the words of that message it is about
    conflicts_with: str = Field(default="", max_length=200)   # consistency: the value said before


class VerifierReport(BaseModel):
    """The LLM verifier's answer; an empty ``issues`` list means the conversation passes."""

    issues: list[LLMIssue] = Field(max_length=MAX_ISSUES)


# two worked examples in the target format, shown as earlier turns (a clean call, a broken one);
# the call to verify comes after them
_EXAMPLE_KB = {"stages": [{"name": "identify", "description": "ask for the card's last four digits"},
                          {"name": "replace", "description": "order the replacement card"}],
               "terminals": ["done"], "guidelines": ["Confirm the digits back."],
               "user_facts": {"card_last_four": "7731"}}
_EXAMPLE_INTENT = {"profile": "polite", "hidden_facts": {}, "corrections": []}
_EXAMPLE_CLEAN = ["Thanks for calling Northwind Bank, how can I help?",
                  "Hi, my debit card broke and I need a new one.",
                  "I can order that. What are the last four digits of the card?",
                  "Seven seven three one."]
_EXAMPLE_BROKEN = ["Thanks for calling Northwind Bank, how can I help?",
                   "Hi, my debit card broke and I need a new one.",
                   "I can order that. What are the last four digits of the card?",
                   "I'd like the window seat, please.",
                   "Thanks. Your card ending in four four one zero is ordered."]
_EXAMPLE_ISSUES = {"issues": [
    {"check": "coherence", "message_index": 3, "fixable": False, "instruction": "",
     "issue": "the caller answers a question nobody asked (a seat) instead of giving the digits",
     "quote": "I'd like the window seat", "conflicts_with": ""},
    {"check": "consistency", "message_index": 4, "fixable": False, "instruction": "",
     "issue": "the assistant names digits 4410; the caller's card ends in 7731 and was never given",
     "quote": "four four one zero", "conflicts_with": "card_last_four 7731"}]}


_EXAMPLE_WORDS = content_words("seat window 4410 7731 digits Northwind debit")


def _copies_example(text: str, conv: Conversation) -> bool:
    """Whether an issue names the worked example's particulars (a seat, card digits 4410) that
    this call never mentions: a model copying the example instead of reading the call."""
    said = content_words(" ".join(m.text for m in conv.messages))
    return bool((content_words(text) & _EXAMPLE_WORDS) - said)


def _example_turn(texts: list[str]) -> str:
    msgs = [{"index": i, "role": "assistant" if i % 2 == 0 else "user", "text": t}
            for i, t in enumerate(texts)]
    return render(VERIFIER_PROMPT, domain="Banking", goal="Replace a broken debit card",
                  knowledge_base=json.dumps(_EXAMPLE_KB, ensure_ascii=False, indent=1),
                  user_intent=json.dumps(_EXAMPLE_INTENT, ensure_ascii=False, indent=1),
                  messages=msgs, known_issues=[])


def verifier_messages(conv: Conversation, known: Sequence[Verdict] = ()) -> list[dict[str, str]]:
    """The verifier's chat: instructions, the two worked examples, then this call."""
    prompt = render(
        VERIFIER_PROMPT, domain=conv.scenario.domain.title, goal=conv.scenario.goal.description,
        knowledge_base=json.dumps(_kb_view(conv), ensure_ascii=False, indent=1),
        user_intent=json.dumps(_intent_view(conv), ensure_ascii=False, indent=1),
        messages=message_view(conv.messages),
        known_issues=[f"message {v.message_index}: {v.check}: {v.issue}" for v in known])
    return [{"role": "system", "content": render(VERIFIER_SYSTEM)},
            {"role": "user", "content": _example_turn(_EXAMPLE_CLEAN)},
            {"role": "assistant", "content": json.dumps({"issues": []})},
            {"role": "user", "content": _example_turn(_EXAMPLE_BROKEN)},
            {"role": "assistant", "content": json.dumps(_EXAMPLE_ISSUES, ensure_ascii=False)},
            {"role": "user", "content": prompt}]


def _kb_view(conv: Conversation) -> dict:
    kb = conv.scenario.kb
    return {
        "stages": [{"name": s.name, "description": s.description,
                    "skip_conditions": list(s.skip_conditions),
                    "failure_handling": list(s.failure_handling),
                    "termination_conditions": list(s.termination_conditions)}
                   for s in kb.workflow.stages],
        "terminals": list(kb.workflow.terminals),
        "guidelines": list(kb.guidelines) + list(conv.scenario.domain.guidelines),
        "user_facts": {f.key: f.value for f in kb.user_facts},
    }


def _intent_view(conv: Conversation) -> dict:
    it = conv.scenario.intent
    return {"profile": it.profile,
            "hidden_facts": {f.key: f.value for f in it.hidden_facts},
            "corrections": [c.model_dump(exclude={"id"}) for c in it.corrections]}


def _validate(conv: Conversation, report: VerifierReport) -> list[str]:
    n = len(conv.messages)
    errors = []
    for k, iss in enumerate(report.issues):
        if not 0 <= iss.message_index < n:
            errors.append(f"issues[{k}].message_index {iss.message_index} is outside 0..{n - 1}")
        if iss.fixable and iss.check not in UNFIXABLE and not iss.instruction.strip():
            errors.append(f"issues[{k}] is fixable but has no instruction for the modifier")
        if _copies_example(iss.issue, conv):
            errors.append(f"issues[{k}] copies the worked example; report only issues of this call")
    return errors


def _in(words: str, text: str) -> bool:
    """Whether most content words of ``words`` occur in ``text`` (a quote, loosely)."""
    got = content_words(words)
    return bool(got) and len(got & content_words(text)) >= 0.6 * len(got)


def unfounded(conv: Conversation, iss: LLMIssue) -> str:
    """Why an unfixable issue is not grounded in the call ('' when it is): its quote is not in
    the message it names, or a consistency issue's other value is found neither in the knowledge
    base nor elsewhere in the call. A small model's invented issue is dropped, not obeyed."""
    if iss.check not in UNFIXABLE:
        return ""
    msg = conv.messages[iss.message_index]
    if not _in(iss.quote, msg.text):
        return f"its quote {iss.quote!r} is not in message {iss.message_index}"
    if iss.check == "consistency":
        elsewhere = " ".join([m.text for m in conv.messages if m.index != iss.message_index]
                             + [json.dumps(_kb_view(conv), ensure_ascii=False)])
        other = content_words(iss.conflicts_with) - content_words(iss.quote)
        if not other or not _in(" ".join(other), elsewhere):
            return (f"the value it contradicts ({iss.conflicts_with!r}) is not in the knowledge "
                    "base or the rest of the call")
    return ""


def to_verdicts(conv: Conversation, report: VerifierReport) -> list[Verdict]:
    """The report's issues as verdicts; unfounded coherence or consistency issues left out."""
    out = []
    for iss in report.issues:
        if unfounded(conv, iss):
            continue
        msg = conv.messages[iss.message_index]
        fixable = iss.fixable and iss.check not in UNFIXABLE
        edit = rewrite_edit(msg, iss.instruction.strip()).to_str() if fixable else None
        out.append(Verdict(check=f"llm_{iss.check}", message_index=iss.message_index,
                           issue=iss.issue, fixable=fixable, edit=edit,
                           evidence=msg.text[:300]))
    return out


# ---- one exchange at a time: does the caller's reply respond to what it answers? -----------
# (a small model misses a reply to a question never asked in a whole transcript, and can judge
# one exchange; a "no" is asked a second time with another seed and counts only if repeated)

class ReplyCheck(BaseModel):
    asked: str = Field(max_length=160)       # what the assistant asked or said, in a few words
    responds: bool


REPLY_PROMPT = "reply_checker"
_REPLY_EXAMPLES = [
    ("Could I have the last four digits of the card, please?", "Sure, seven seven three one.",
     {"asked": "the card's last four digits", "responds": True}),
    ("Which day suits you for the engineer's visit, Tuesday or Wednesday?",
     "My account number is R P five five two one zero.",
     {"asked": "which day suits for the visit", "responds": False}),
]


def reply_messages(assistant: str, caller: str) -> list[dict[str, str]]:
    """The reply checker's chat: instructions, two worked exchanges, then this one."""
    chat = [{"role": "system", "content": render(REPLY_PROMPT + ".system")}]
    for a, c, answer in _REPLY_EXAMPLES:
        chat += [{"role": "user", "content": render(REPLY_PROMPT, assistant=a, caller=c)},
                 {"role": "assistant", "content": json.dumps(answer)}]
    return chat + [{"role": "user", "content": render(REPLY_PROMPT, assistant=assistant, caller=caller)}]


def exchanges(conv: Conversation) -> list[tuple[int, str, str]]:
    """(index of the reply, the assistant's words, the caller's reply) for every caller turn that
    answers a whole assistant turn (interjections are judged by their type instead)."""
    msgs = conv.messages
    return [(m.index, msgs[k - 1].text, m.text) for k, m in enumerate(msgs)
            if k and m.role == "user" and msgs[k - 1].role == "assistant"
            and msgs[k - 1].interruption is None and m.text.strip()]


async def reply_checks(conv: Conversation, llm: LLMClient,
                       skip: Sequence[int] = ()) -> list[Verdict]:
    """A coherence verdict for each caller reply that twice did not respond to what it answers."""
    out = []
    for index, said, reply in exchanges(conv):
        if index in skip:
            continue
        chat = reply_messages(said, reply)
        first = await llm.structured(chat, ReplyCheck, agent="verifier", sample=0)
        if first.responds:
            continue
        again = await llm.structured(chat, ReplyCheck, agent="verifier", sample=1, temperature=0.7)
        if again.responds:
            continue
        out.append(Verdict(check="llm_coherence", message_index=index, fixable=False,
                           issue=f"the caller's reply does not respond to the assistant's "
                                 f"message before it ({first.asked.strip()[:100]})",
                           evidence=reply[:300]))
    return out


async def llm_checks(conv: Conversation, llm: LLMClient, *,
                     known: Sequence[Verdict] = ()) -> list[Verdict]:
    """Ask the verifier model about the whole call (re-asked on an answer that names no message
    or lacks instructions), then the reply checker about each exchange it did not flag.

    ``known``: issues the deterministic checks already found this round (not to be repeated).
    """
    found = await _whole_call(conv, llm, known)
    # an issue on a message the deterministic checks flagged this round waits for the next
    # round, after the modifier's edit of that message (all checks run again then): seen on the
    # 1.5B model, the known fixable cut_inside_value restated as an unfixable coherence issue
    # ("the assistant cuts inside the value of the monthly fee (780 dollars a month)"), and a
    # conversation discarded for an issue the modifier was about to fix
    edited = {v.message_index for v in known if v.fixable and v.edit}
    found = [v for v in found if v.message_index not in edited]
    flagged = [v.message_index for v in found] + [v.message_index for v in known]
    return found + await reply_checks(conv, llm, skip=[i for i in flagged if i is not None])


async def _whole_call(conv: Conversation, llm: LLMClient, known: Sequence[Verdict]) -> list[Verdict]:
    chat = verifier_messages(conv, known)
    answers, errors = [], []
    for n in range(REASKS + 1):
        # schema errors are re-asked by the client; here: answers that name no real message or
        # copy the example (a re-ask is a new draw: a new seed, sampled hotter)
        report = await llm.structured(chat, VerifierReport, agent="verifier", sample=n,
                                      **({} if n == 0 else {"temperature": 0.7}))
        answers.append(report.model_dump())
        errors = _validate(conv, report)
        if not errors:
            return to_verdicts(conv, report)
        # the request again with the problems, without the refused answer (the 1.5B model shown
        # its answer that copied the worked example wrote it again, three times)
        chat = chat[:-1] + [{"role": "user", "content": chat[-1]["content"]
                             + "\n\nAn earlier answer was refused: " + "; ".join(errors)
                             + ". Report only issues of this call, or none."}]
    raise GenerationFailed(
        f"verifier: no valid answer for conversation {conv.id} after {REASKS + 1} attempts "
        f"({'; '.join(errors)})", evidence={"answers": answers, "errors": errors})
