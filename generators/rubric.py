"""Rubric generator: at each interruption, one task-fulfillment criterion (what the assistant
should do next) and 2-4 type-specific recovery-quality criteria (IHBench Appendix G.3).

Rubrics are fixed at generation time from the round plan (what comes next, the cut point, the
corrected value, the caller's concern), before any model response exists::

    message 7 (pushback, "Wait, the processing fee? Nobody mentioned that.")
      TF  the response keeps the payment step moving with a workable way forward ...
      RQ  - responds with empathy and de-escalates rather than arguing
          - engages with the caller's specific concern (the processing fee)
          - offers at least one concrete alternative
"""

from __future__ import annotations

import random
import re

from bargein.generators import phrases as P
from bargein.records import Conversation, Rubric
from bargein.records.plan import RoundPlan
from bargein.runner import Stage, StageContext
from bargein.verify.text import content_words

RUBRIC_VERSION = "3"

# (core criteria, optional criteria); slots come from the interruption's details
RQ: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "filler": (
        ("Continues exactly where the utterance was cut off (after \"{tail}\"), starting with "
         "\"{head}\".",
         "Does not repeat or restart any part that was already said before the cut.",
         "Does not acknowledge the backchannel (no \"great\", \"glad you agree\" or \"as I was "
         "saying\")."),
        ("Delivers the rest of the interrupted content without dropping information.",)),
    "impatient": (
        ("Skips the rest of the interrupted explanation instead of finishing it.",
         "Does not re-explain or repeat what the caller already heard{heard_quote}.",
         "Moves directly to the next concrete step."),
        ("Keeps the reply brief and to the point.",)),
    "correction": (
        ("Accepts the correction without questioning or arguing with the caller.",
         "Uses the corrected {label} ({new}) and no longer the earlier value ({old}).",
         "Continues the task after integrating the correction."),
        ("Does not make the caller repeat the corrected value.",)),
    "topic_switch": (
        ("Briefly addresses the unrelated request (\"{request}\").",
         "Steers the conversation back to the interrupted task.",
         "Keeps the two topics separate instead of blending them together."),
        ("Does not drop the interrupted task in favour of the new topic.",)),
    "normal": (
        ("Acknowledges or answers what the caller added{detail}.",
         "Resumes the interrupted point with a fresh start of the sentence rather than "
         "mid-sentence.",
         "Does not ignore the interjection and carry on as if nothing was said."),
        ("Takes the new information into account where it matters.",)),
    "pushback": (
        ("Responds with empathy and de-escalates rather than arguing.",
         "Engages with the caller's specific concern{concern}.",
         "Offers at least one concrete alternative way forward."),
        ("Neither caves by dropping the requirement nor stonewalls by repeating it.",)),
}


# a normal cut-in that checks a value back ("Sorry, was that Sunday, February 2?") adds nothing
# new: scored as added information, its rubric asked to "take the new information into account"
# (a hand read of seed 7373)
RQ_CLARIFY = (
    ("Answers the caller's check{detail} directly, confirming the value or putting it right.",
     "Resumes the interrupted point with a fresh start of the sentence rather than "
     "mid-sentence.",
     "Does not treat the check as new information or a change of plan."),
    ("Keeps the confirmation short.",))


_PLEASANTRY = frozenset("thanks thank listening got okay great right sure good appreciate appreciated "
                        "perfect lovely understood noted".split())


def _words(text: str, n: int, last: bool = False) -> str:
    w = text.split()
    return " ".join(w[-n:] if last else w[:n])


_ABBREV = re.compile(r"(?:\b(?:Dr|Mr|Mrs|Ms|St|No|Ave|Blvd|Apt|Inc|Ltd|Co|Jr|Sr|vs|etc|Mt|Ft)|"
                     r"(?<![\w.])[A-Z])\.$")


def _sentences(text: str) -> list[str]:
    """Whole sentences ending in . ? or ! (a full stop after "Dr", "Apt" or an initial does
    not end one), in order; an unfinished tail is left out."""
    out, start = [], 0
    for m in re.finditer(r"[.?!](?=\s|$)", text):
        if m.group(0) == "." and _ABBREV.search(text[start:m.end()]):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    return [x for x in out if x]


def _last_sentence(text: str) -> str:
    """The last complete sentence of ``text`` (one that ends before the cut), or ''."""
    done = _sentences(text)
    return done[-1].strip() if done and len(done[-1].split()) >= 4 else ""


def _assistant_phrase(phrase: str) -> str:
    return re.sub(r"\bmy\b", "your", phrase)


def _third(text: str) -> str:
    """What the caller said, for a criterion about them ("I'm moving" stays a quote)."""
    return text.rstrip(".")


def _rest_quote(rest: str, most: int = 25) -> str:
    """The unheard rest of a cut sentence as a rubric quotes it: up to the end of that sentence
    when it is short enough, else up to a comma before ``most`` words and an ellipsis; never a
    sentence's first word alone after a whole one ("... if you rebook later. Knowing...", a hand
    read of seed 2929) nor "...." after a full stop."""
    rest = rest.strip()
    end = re.search(r"[.?!](?=\s|$)", rest)
    first = rest[:end.end()] if end else rest
    if end and len(first.split()) < 4:       # "later." alone says too little: the next too
        nxt = re.search(r"[.?!](?=\s|$)", rest[end.end():])
        first = rest[:end.end() + nxt.end()] if nxt else rest
    words = first.split()
    if len(words) <= most:
        return first if first[-1:] in ".?!" else first + "..."
    head = " ".join(words[:most])
    comma = head.rfind(",")
    if comma >= len(head) // 2:
        head = head[:comma]
    return head + "..."


def _first_sentence(text: str) -> str:
    """The first sentence that says something (not "All done." or "Okay.")."""
    found = _sentences(text)            # "... at 2:45 PM with Dr. Danielle Rogers." is one
    for x in found:
        if len(x.split()) >= 4:
            return x.strip()
    return (found[0] if found else text).strip()


def recovery_plans(conv: Conversation) -> dict[int, RoundPlan]:
    """interjection message index -> the plan of the round that recovers from it."""
    return {p.recovery.message_index: p for p in conv.plan if p.recovery is not None}


def interruption_context(conv: Conversation, idx: int) -> dict[str, str]:
    """Slots for the rubric of the interjection at ``idx`` (from messages and the plan)."""
    cut, inter = conv.messages[idx - 1], conv.messages[idx]
    itr = cut.interruption
    assert itr is not None
    heard = itr.heard_text
    rest = cut.text[len(heard):].strip()
    plan = next((p for p in conv.plan if p.message_index == cut.index), None)
    d = dict(plan.detail) if plan is not None else {}
    rp = recovery_plans(conv).get(idx)      # quote stage content heard, never the acknowledgement
    cs = rp.recovery.content_start if rp and rp.recovery else 0
    whole = _last_sentence(heard)
    if whole and heard.rfind(whole) + len(whole) <= cs:
        whole = ""
    if whole and len(content_words(whole) - _PLEASANTRY) < 3:
        whole = ""                      # "Got it, and thanks for listening." is no content to
                                        # forbid repeating (a hand read of seed 6161, #41)
    asked = whole.rstrip().endswith("?")
    if asked:                           # a question the caller cut in on is still unanswered:
        whole = ""                       # asking it again is right, so it is not quoted as a repeat
    concern = _assistant_phrase(d.get("anchor") or (f"my {d['label']}" if d.get("label") else ""))
    detail = d.get("value") or (concern if d.get("object_kind") else "") or inter.text.strip()
    slots = {"tail": _words(heard, 4, last=True), "head": _words(rest, 4),
             "label": d.get("label", "the value"), "old": d.get("old", ""), "new": d.get("new", ""),
             "request": inter.text.strip(),
             "concern": f" ({concern})" if concern and concern != "that" else "",
             "detail": f" ({_third(detail)})" if detail else "",
             # a TF that asks the heard question again and an RQ that forbids every repeat
             # cannot both be met (a hand read): the RQ says the question may be asked again
             "heard_quote": f" (\"{whole}\")" if whole else
             (", apart from asking its unanswered question again" if asked else "")}
    return slots


def task_criterion(conv: Conversation, idx: int, rng: random.Random) -> str:
    """What the assistant should do next (from the recovery round's plan)."""
    cut = conv.messages[idx - 1]
    itype = cut.interruption.type
    nxt = recovery_plans(conv).get(idx)
    unit = nxt.unit if nxt is not None else None
    stage = P.label((unit.stage if unit else None) or cut.stage or "current")
    keys = [P.label(k) for k in (unit.keys if unit else ())]
    if itype == "filler":
        return (f"The response finishes the interrupted utterance, so the caller hears the rest of "
                f"it: \"{_rest_quote(cut.text[len(cut.interruption.heard_text):])}\".")
    if itype == "pushback":
        return (f"The response keeps the {stage} step on track by giving the caller a workable "
                f"way forward despite their objection.")
    lead = {"impatient": "Skipping ahead, the response", "correction": "With the corrected "
            "value in place, the response", "topic_switch": "After briefly handling the side "
            "request, the response", "normal": "After handling the caller's point, the response"}[itype]
    if unit is not None and unit.kind == "close":
        return f"{lead} wraps up the request and asks whether the caller needs anything else."
    if unit is not None and unit.kind == "outcome":
        return f"{lead} tells the caller how the request ends and what happens next."
    kind = unit.kind if unit is not None else None
    text = (unit.text if unit is not None else "") or ""
    given = _given_keys(conv, idx)
    keys = [P.label(k) for k in (unit.keys if unit is not None else ()) if k not in given]
    questions = re.findall(r"[^.?!]*\?", text)
    if kind == "ask" and questions:
        q = questions[-1].strip()
        if len(q.split()) < 6 and unit is not None and unit.purpose in ("readback", "recap"):
            return (f"{lead} reads back what the caller gave and asks them to confirm it is "
                    "right.")
        if len(q.split()) < 6:                 # "Is that right?" alone says nothing: quote more
            sents = re.findall(r"[^.?!]*[.?!]", text)
            i = next((j for j, x in enumerate(sents) if x.strip() == q), len(sents) - 1)
            q = " ".join(x.strip() for x in sents[max(0, i - 1):i + 1]) or q
        return f"{lead} asks the caller: \"{q}\""
    if keys and kind == "ask" and not text:
        return f"{lead} asks the caller for their {' and '.join(keys)} to continue the {stage} step."
    if kind == "ask" and not text:
        return f"{lead} moves on to the next step of the {stage} stage without asking again."
    text = text or cut.text[cut.interruption.cut_char_offset:]
    return f"{lead} continues the {stage} step by covering: \"{_first_sentence(text)}\"."


def _given_keys(conv: Conversation, idx: int) -> set[str]:
    """Fact keys whose value was said (by anyone) before message ``idx``."""
    said = " ".join(m.spoken_text for m in conv.messages[: idx + 1]).lower()
    return {f.key for f in conv.scenario.kb.user_facts
            if any(v and v.lower() in said for v in (f.value, f.spoken))}


def rule_rubric(conv: Conversation, idx: int, rng: random.Random) -> Rubric:
    itype = conv.messages[idx - 1].interruption.type
    plan = next((p for p in conv.plan if p.message_index == idx - 1), None)
    clarify = itype == "normal" and plan is not None and plan.detail.get("variant") == "clarify"
    core, extra = RQ_CLARIFY if clarify else RQ[itype]
    slots = interruption_context(conv, idx)
    criteria = [P.fill(c, where=f"rubric.{itype}", **slots) for c in core]
    if rng.random() < 0.4:
        criteria.append(P.fill(rng.choice(extra), where=f"rubric.{itype}", **slots))
    return Rubric(message_index=idx, type=itype, tf_criterion=task_criterion(conv, idx, rng),
                  rq_criteria=tuple(criteria))


# ---- runner stages --------------------------------------------------------------------------
def _indices(conv: Conversation) -> list[int]:
    return [u.index for _, u in conv.interruptions]


def _rubrics_offline(conv: Conversation, ctx: StageContext) -> Conversation:
    rng = ctx.rng
    return conv.with_(rubrics=tuple(rule_rubric(conv, i, rng) for i in _indices(conv)))


def rubric_stage(llm: str = "offline", concurrency: int = 64) -> Stage:
    """Conversation -> Conversation with one rubric per interjection (output: conversations.jsonl)."""
    from bargein.llm import stage_agent_models, stage_concurrency
    from bargein.llm.base import is_offline

    if is_offline(llm):
        return Stage(name="conversations", fn=_rubrics_offline, output=Conversation,
                     config={"llm": "offline"}, version=RUBRIC_VERSION)
    from bargein.generators.llm_rubric import rubrics_llm

    routed = stage_agent_models(llm, ("rubric_generator",))
    return Stage(name="conversations", fn=rubrics_llm, output=Conversation,
                 config={"llm": llm, **({"agents": routed} if routed else {})},
                 version=RUBRIC_VERSION, prompts=("rubric_generator", "rubric_interruption"), backends=(llm,),
                 kind="io", concurrency=stage_concurrency(llm, concurrency))
