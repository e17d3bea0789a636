"""The offline repair classifier: real heuristics, deterministic, no network.

Per sentence of a response::

    "Sorry, I didn't catch the account number. Could you repeat it?"
      hearing cue ("didn't catch") + slot term ("account number")      -> explicit_repair (R = 1)
    "Sorry, could you say that again?"
      hearing/repeat cue, no slot term                                 -> generic_refusal (R = 0.5)
    "I don't know."  refusal cue                                       -> generic_refusal (R = 0.5)
    "Thanks, your account number 4471 0932 is verified."
      a value the user never said (digits not in the context)          -> answer (R = 0)

A question that names the slot ("What was your account number?") is a slot-aware repair. A
response that gives a new value is an answer whatever else it says (a guess is not a repair).
Slot terms come from the slot key and its kind ("move_date": move, date, day, when), or for QA
from the question's content words and its wh-word. Limits: an invented *name* or *street* is
not recognised as a value offline (the LLM judge does that).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from bargein.masking.spans import canonical_pieces, contains_value
from bargein.records import MaskedItem

Category = Literal["explicit_repair", "generic_refusal", "answer"]
R_VALUE: dict[str, float] = {"explicit_repair": 1.0, "generic_refusal": 0.5, "answer": 0.0}


class RepairVerdict(BaseModel):
    """What the LLM judge answers (prompt ``judge_repair``)."""

    category: Category
    correct: bool = False
    reason: str = ""


class RepairJudgment(BaseModel):
    """One judgment of one response; ``status`` "judge_failed" makes it unscorable."""

    category: Category
    correct: bool = False           # answerable items: the response is right
    reason: str = ""
    status: str = "ok"
    evidence: dict = {}


_HEARING = [re.compile(p) for p in (
    r"\b(did ?n[o']?t|could ?n[o']?t|can ?n?[o']?t|cannot|was ?n[o']?t able to|were ?n[o']?t able to|"
    r"unable to|failed to) (quite |fully |clearly |properly )?(catch|hear|make out|understand|get|"
    r"pick up)\b",
    r"\b(missed|lost|garbled|muffled|inaudible|unclear|unintelligible|drowned out|cut (out|off)|"
    r"breaking up|broke up|static|noise|noisy)\b",
    r"\b(repeat|say (that|it|this) again|say again|come again|pardon|one more time|once more|"
    r"speak up|didn'?t come through|did not come through)\b",
    r"^\s*(sorry|excuse me)[,.!]?\s*(what|which|when|where|who|how)\b",
    r"^\s*(sorry|pardon|what)\s*\?",
)]
_REFUSAL = [re.compile(p) for p in (
    r"\b(i (do ?n[o']?t|don't|do not) know|not sure|can ?n?[o']?t (answer|tell|determine|say|help with that)|"
    r"cannot (answer|tell|determine|say)|unable to (answer|determine|tell)|no way (to|of) (know|tell)|"
    r"not (enough|sufficient) information|impossible to (say|know|tell)|i have no information)\b",
)]
_ASK = re.compile(r"\b(what|which|when|where|who|how|could you|can you|would you|will you|please|"
                  r"tell me|give me|confirm|provide|share|let me know)\b")
_STOP = frozenset("""a an the of to in on at for with from by and or but is are was were be been
do does did have has had i you he she it we they my your our their me him her them this that these
those what which who whom whose when where why how there here please could would can will should
may might must about into over than then so if as not no yes just also very really any some""".split())
_SLOT_TERMS = (
    (("date", "birth", "deadline", "day", "dob"), ("date", "day", "when", "birthday", "birth")),
    (("address", "street", "city", "zip", "postcode"), ("address", "street", "where", "live", "zip", "city")),
    (("amount", "budget", "income", "price", "cost", "payment", "fee", "balance", "salary", "total"),
     ("amount", "much", "dollars", "budget", "price", "cost", "figure", "sum")),
    (("name",), ("name", "spell", "called")),
    (("email",), ("email", "e-mail", "address")),
    (("phone", "mobile"), ("phone", "number", "digits")),
    (("number", "id", "code", "account", "case", "policy", "order", "reference", "pin"),
     ("number", "digits", "code", "id", "reference")),
    (("time", "appointment"), ("time", "when")),
    (("size", "count", "household", "people", "persons"), ("many", "number", "size")),
)
_WH = ("what", "which", "when", "where", "who", "how")


def slot_terms(item: MaskedItem) -> set[str]:
    """Words whose presence in a repair sentence shows it knows what is missing."""
    terms: set[str] = set()
    if item.slot:
        parts = [p for p in re.split(r"[_\W]+", item.slot.lower()) if p]
        terms.update(p for p in parts if p not in _STOP)
        for keys, extra in _SLOT_TERMS:
            if any(k in parts for k in keys):
                terms.update(extra)
    if item.question:
        words = re.findall(r"[a-z0-9']+", item.question.lower())
        terms.update(w for w in words if w not in _STOP and len(w) > 2)
        terms.update(w for w in words[:3] if w in _WH)
    return terms


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if s.strip()]


def _numbers(text: str) -> set[str]:
    return {p.text for p in canonical_pieces(text.split()) if p.text.isdigit() and len(p.text) >= 2}


def new_values(response: str, item: MaskedItem) -> set[str]:
    """Numbers (2+ digits) in the response that neither the context nor the question said."""
    known: set[str] = set()
    for m in item.context:
        known |= _numbers(m.content)
    known |= _numbers(item.question or "")
    if item.masked_transcript:
        known |= _numbers(item.masked_transcript.replace("[inaudible]", " "))
    elif item.condition == "answerable":
        known |= _numbers(item.transcript)
    return _numbers(response) - known


def classify_repair(response: str, item: MaskedItem) -> RepairJudgment:
    """The response's repair category with the reason (see the module docstring)."""
    text = (response or "").strip()
    if not text:
        return RepairJudgment(category="answer", reason="empty response: no repair")
    terms = slot_terms(item)
    values = new_values(text, item)
    if item.condition == "unanswerable" and item.answer and contains_value(text, item.answer):
        values.add(item.answer)
    slot_hit = generic_hit = None
    for s in _sentences(text):
        low = s.lower()
        words = set(re.findall(r"[a-z0-9'-]+", low))
        hearing = any(p.search(low) for p in _HEARING)
        refusal = any(p.search(low) for p in _REFUSAL)
        mentions = sorted(words & terms)
        asks = s.rstrip().endswith("?") and bool(_ASK.search(low))
        if (hearing or asks) and mentions and slot_hit is None:
            slot_hit = (s, mentions)
        elif (hearing or refusal) and generic_hit is None:
            generic_hit = s
    if values:
        return RepairJudgment(category="answer", reason=f"gives a value the user never said: "
                              f"{', '.join(sorted(values))}")
    if slot_hit is not None:
        return RepairJudgment(category="explicit_repair", reason=f"asks for the missing "
                              f"{'/'.join(slot_hit[1])}: {slot_hit[0]!r}")
    if generic_hit is not None:
        return RepairJudgment(category="generic_refusal", reason=f"repair without naming what is "
                              f"missing: {generic_hit!r}")
    return RepairJudgment(category="answer", reason="answers without noticing the gap")


def answer_correct(response: str, item: MaskedItem, judgment: RepairJudgment | None = None) -> bool:
    """C for one response to an answerable item.

    The reference answer (the slot value, for a conversation) appears in the response
    (normalised match: case, punctuation, number words), and the response does not ask for it
    again. A content-free carry-on ("Okay.") shows nothing: it is
    not counted correct (a smoke check cannot tell that it understood).
    """
    if not item.answer or not contains_value(response or "", item.answer):
        return False
    j = judgment or classify_repair(response, item)
    return j.category == "answer" or (j.category != "explicit_repair" and "?" not in (response or ""))
