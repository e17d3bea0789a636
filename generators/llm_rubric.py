"""The LLM rubric generator: one task-fulfillment criterion and 2-4 recovery-quality criteria
per interruption, written by a model from the conversation up to the interjection, the cut and
the recovery round's plan; checked (:func:`check_rubric`) and re-asked like every agent's answer.
The rule-based form and the slots both forms share are in :mod:`bargein.generators.rubric`.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bargein.generators.facts import find_placeholders
from bargein.generators.llm_agents import ask_valid, llm_for
from bargein.generators.llm_messages import history_view
from bargein.generators.rubric import _indices, interruption_context, recovery_plans, rule_rubric
from bargein.generators.user_sim import PlanBroken
from bargein.prompts import render
from bargein.records import INTERRUPTION_TYPES, Conversation, Rubric
from bargein.runner import StageContext


class RubricOut(BaseModel):
    """LLM rubric generator output (the content rules the checks apply are in the schema too)."""

    model_config = ConfigDict(extra="forbid")
    tf_criterion: str = Field(min_length=20, max_length=400)
    rq_criteria: list[Annotated[str, StringConstraints(min_length=15, max_length=300)]] = Field(
        min_length=2, max_length=4)


_LABELS = frozenset({*INTERRUPTION_TYPES, "normal", "interruption", "recovery", "filler",
                     "pass", "fail", "yes", "no"})
MIN_CRITERION_WORDS = 4


# what a recovery of each type must not do (the type definitions in the rubric prompt): a
# criterion asking for it, not negated, contradicts the type. Seen on the 1.5B model: three of
# four impatient rubrics of one call asked to "request clarification" or "continue with a fresh
# start" (the normal type's recovery) after the caller asked to skip ahead.
_AGAINST_TYPE = {
    "impatient": ("clarif", "repeat", "fresh start", "restart", "start over", "re-explain",
                  "explain again", "explains again", "re-deliver", "rephrase"),
    "filler": ("acknowledg", "apolog", "fresh start", "restart", "start over", "repeat",
               "clarif", "thank"),
}
_NEGATION = re.compile(r"\b(?:not|never|no|without|avoid\w*|instead of|rather than|nor|"
                       r"\w+n't)\b", re.I)


def against_type(kind: str | None, criterion: str, said: str = "") -> str:
    """The cue of a criterion that asks for what ``kind``'s recovery must not do ('' if none).
    A cue inside words of the call itself (``said``: "the signal to restart your new phone", a
    step the caller is walked through) is the call's content, not a way of recovering."""
    low, heard = criterion.lower(), " ".join(said.lower().split())
    for cue in _AGAINST_TYPE.get(kind or "", ()):
        at = low.find(cue)
        if at < 0 or _NEGATION.search(low[:at]):
            continue
        phrase = " ".join(re.findall(r"[\w'-]+", low[at:])[:3])
        if heard and len(phrase.split()) == 3 and phrase in heard:
            continue
        return cue
    return ""


# one worked example per interruption type, written with slots (<new>, <next step>) where this
# call's words go: nothing in it belongs to another call, and a slot left in an answer is refused
# with the value it stands for. Examples from another call (a parcel delivery, one per type) were
# copied word for word by the 1.5B model into unrelated calls ("Accepts 41 Elm Street without
# questioning the caller." for an email correction, "asks for the order number to start the
# return" for a flight cancellation), three answers of three, re-asks included. With one
# example (a correction) for every type it wrote the correction's checks for filler cut-ins.
EXAMPLES: dict[str, dict] = {
    "normal": {
        "tf_criterion": "After answering the caller, the response goes on to <next step>.",
        "rq_criteria": ["Answers what the caller added, <detail>, before going on.",
                        "Starts the cut sentence again from its beginning instead of mid-sentence.",
                        "Does not carry on as if the caller had said nothing."]},
    "impatient": {
        "tf_criterion": "Skipping the rest of the explanation, the response goes straight to <next step>.",
        "rq_criteria": ["Skips the rest of the explanation the caller cut off.",
                        "Does not say <heard sentence> again.",
                        "Moves straight on to <next step>."]},
    "correction": {
        "tf_criterion": "The response uses <new> as the <label> and goes on to <next step>.",
        "rq_criteria": ["Accepts the correction without questioning the caller.",
                        "Uses <new> and no longer says <old>.",
                        "Continues with <next step> after the correction."]},
    "topic_switch": {
        "tf_criterion": "After a short answer about <request>, the response comes back to <next step>.",
        "rq_criteria": ["Answers <request> in one or two sentences.",
                        "Comes back to <next step> in the same turn.",
                        "Keeps the two topics apart instead of blending them."]},
    "filler": {
        "tf_criterion": "The response finishes the cut sentence, going on from <tail> with <head>.",
        "rq_criteria": ["Continues exactly from <tail> with the rest of the sentence.",
                        "Does not repeat anything said before the cut.",
                        "Adds no acknowledgement such as 'Sure' or 'Thanks' before continuing."]},
    "pushback": {
        "tf_criterion": "The response answers the caller's objection about <concern> and still goes on to <next step>.",
        "rq_criteria": ["Acknowledges the caller's frustration about <concern>.",
                        "Responds calmly and with empathy instead of arguing.",
                        "Offers a concrete option for going forward."]},
}

_SLOT = re.compile(r"<\s*([A-Za-z_][A-Za-z_ ]{0,30}?)\s*>")


def slot_values(conv: Conversation, idx: int) -> dict[str, str]:
    """What each slot of the examples stands for in this call (computed, never asked of the
    model): the interruption's details and the recovery round's planned next step."""
    d = interruption_context(conv, idx)
    nxt = recovery_plans(conv).get(idx)
    step = ((nxt.assistant_goal or nxt.rationale) if nxt is not None else "") or "the next step of the call"
    unwrap = lambda v: v.strip().removeprefix("(").removesuffix(")").strip()      # noqa: E731
    return {"next step": step.strip().rstrip("."), "new": d.get("new", ""), "old": d.get("old", ""),
            "label": d.get("label", ""), "request": d.get("request", ""),
            "concern": unwrap(d.get("concern", "")), "detail": unwrap(d.get("detail", "")),
            "heard sentence": unwrap(d["heard_quote"]) if d.get("heard_quote", "").startswith(" (") else "", "tail": d.get("tail", ""),
            "head": d.get("head", "")}


def example_for(kind: str, values: dict[str, str]) -> dict:
    """The worked example of ``kind`` with the lines whose slot this call has no value for left
    out (a correction without an old value has no 'no longer says <old>')."""
    ex = EXAMPLES.get(kind, EXAMPLES["normal"])
    keep = lambda c: all(values.get(s.strip().lower()) for s in _SLOT.findall(c))   # noqa: E731
    rq = [c for c in ex["rq_criteria"] if keep(c)]
    tf = ex["tf_criterion"] if keep(ex["tf_criterion"]) else "The response goes on to <next step>."
    return {"tf_criterion": tf, "rq_criteria": rq}


def slots_left(out: RubricOut, values: dict[str, str] | None = None) -> list[str]:
    """Re-ask errors for the example's slots left in the answer (a slot echoed is the example's
    words, not this call's), each naming the value the slot stands for in this call."""
    errs = []
    for c in [out.tf_criterion, *out.rq_criteria]:
        for m in _SLOT.finditer(c):
            v = (values or {}).get(m.group(1).strip().lower(), "")
            errs.append(f"{m.group(0)!r} in {c!r} is a slot of the example: write this call's words "
                        + (f"in its place ({v!r})" if v else "in its place"))
    return list(dict.fromkeys(errs))


def check_rubric(out: RubricOut, kind: str | None = None, said: str = "",
                 values: dict[str, str] | None = None) -> list[str]:
    """Content rules: 2-4 distinct full-sentence criteria, none a type label, no placeholders
    and no slot of the example left, none asking for what the interruption type's recovery
    must not do."""
    errs = slots_left(out, values)
    wrong = [c for c in [out.tf_criterion, *out.rq_criteria] if against_type(kind, c, said)]
    if wrong:
        errs.append(f"after a {kind} interruption the response must not "
                    f"{against_type(kind, wrong[0], said)!r}: {wrong[0]!r} asks for it; write the "
                    f"criteria a good {kind} recovery meets")
    rq = [c.strip() for c in out.rq_criteria if c.strip()]
    if len(out.tf_criterion.split()) < MIN_CRITERION_WORDS:
        errs.append("tf_criterion must be a full sentence naming the next goal")
    if not 2 <= len(rq) <= 4 or len({c.lower() for c in rq}) != len(rq):
        errs.append(f"rq_criteria must be 2-4 distinct pass/fail checks, got {len(rq)}")
    labels = [c for c in rq if len(c.split()) < MIN_CRITERION_WORDS
              or c.lower().strip(" .").replace(" ", "_") in _LABELS]
    if labels:
        errs.append(f"rq_criteria {labels} are labels, not pass/fail checks: write each as a "
                    "sentence saying what the response must do")
    found = find_placeholders(" ".join([out.tf_criterion, *rq]))
    if found:
        errs.append(f"placeholders: {found[:3]}")
    return errs


def _key(v) -> tuple:
    return (v.check, v.message_index, v.issue, v.evidence)


def gate_errors(conv: Conversation, rubric: Rubric, without: set[tuple] | None = None) -> list[str]:
    """The verifier's deterministic checks on ``rubric``: the unfixable verdicts the
    conversation gets with it that it does not get without it (``without``: those keys, when
    computed already), as re-ask errors. Seen on the 1.5B model: a whole simulated call
    (25 messages, 68 model calls) discarded for a criterion quoting 'limited to fifteen titles'
    (not a whole phrase of the call) and one starting in lower case; a re-ask fixes such a
    criterion for one more call."""
    from bargein.verify.checks import run_checks

    if without is None:
        without = {_key(v) for v in run_checks(conv.with_(rubrics=()))}
    errs = []
    for v in run_checks(conv.with_(rubrics=(rubric,))):
        if not v.fixable and _key(v) not in without:
            # said as a refusal of the answer: given the bare verdict ("starts with a lower-case
            # letter (in ...)") the 1.5B model wrote it as its next tf_criterion
            errs.append(f"the verifier refuses a criterion of this answer: {v.issue}"
                        + (f" (in {v.evidence})" if v.evidence else "") + "; rewrite that criterion")
    return list(dict.fromkeys(errs))


def _slot_lines(example: dict, values: dict[str, str]) -> str:
    """The slots the example uses, each with what it stands for in this call."""
    used = dict.fromkeys(m.strip().lower() for c in [example["tf_criterion"], *example["rq_criteria"]]
                         for m in _SLOT.findall(c))
    return "\n".join(f"<{k}> = {json.dumps(values.get(k, ''))}" for k in used)


# what a good recovery of each type does, shown for the one type of the request only: given the
# list of all six as "type: what to do" lines, the 1.5B model wrote "normal: address the detail
# or question, then resume with a fresh start" as a criterion of an impatient cut-in (4 of the 6
# rubrics of a bench/llm_real.py run that fell back to rules)
GUIDANCE = {
    "normal": "addresses the added detail or question, then resumes the cut sentence from its start",
    "impatient": "skips the interrupted content, does not explain it again, and moves the task on",
    "correction": "accepts the corrected value without pushback, uses it, and continues",
    "topic_switch": "answers the unrelated request briefly, then steers back to the task without "
                    "blending the two",
    "filler": "continues exactly from the cut word, with no repetition and no acknowledgement",
    "pushback": "de-escalates with empathy, engages the specific concern, and offers an alternative",
}
_TYPE_LABEL = re.compile(r"^\s*(?:" + "|".join(sorted({*INTERRUPTION_TYPES, "topic switch"}, key=len,
                                                       reverse=True))
                         + r")\s*(?:interruption)?\s*[:\-\u2013\u2014]\s*", re.I)


def _label_of(text: str) -> str:
    m = _TYPE_LABEL.match(text)
    return m.group(0).strip(" :-\u2013\u2014").lower().replace(" interruption", "").replace(" ", "_") \
        if m else ""


def tidy_criterion(text: str, kind: str | None) -> str:
    """A criterion without a leading label of its own type ("impatient: skips ..." -> "Skips
    ..."), capitalised: what code can fix is not re-asked. Another type's label stays (and is
    refused by :func:`wrong_type_labels`)."""
    t = text.strip()
    if kind and _label_of(t) == kind:
        t = _TYPE_LABEL.sub("", t, count=1).strip()
    return t[:1].upper() + t[1:]


def tidy_rubric(o: "RubricOut", kind: str | None) -> "RubricOut":
    return o.model_copy(update={"tf_criterion": tidy_criterion(o.tf_criterion, kind),
                                "rq_criteria": [tidy_criterion(c, kind) for c in o.rq_criteria]})


def wrong_type_labels(o: "RubricOut", kind: str | None) -> list[str]:
    """A criterion labelled with another interruption type than the rubric's, as an error."""
    return [f"{c[:60]!r} is written for the {lab} type, not for this {kind} cut-in: write "
            f"what a good recovery of this {kind} cut-in does" for c in [o.tf_criterion, *o.rq_criteria]
            for lab in [_label_of(c)] if lab and lab != kind]


async def llm_rubric(conv: Conversation, idx: int, llm: Any, rng: random.Random,
                     without: set[tuple] | None = None) -> Rubric:
    """One rubric, checked by :func:`check_rubric` and by the verifier's own checks
    (:func:`gate_errors`; ``without``: the verdict keys of the conversation without rubrics)."""
    cut = conv.messages[idx - 1]
    kind = cut.interruption.type
    values = slot_values(conv, idx)
    example = example_for(kind, values)
    system = render("rubric_generator", system_prompt=conv.scenario.system_prompt)
    fields = dict(history=history_view(conv.messages[: idx + 1]), type=kind,
                  guidance=GUIDANCE.get(kind, GUIDANCE["normal"]),
                  heard=json.dumps(cut.interruption.heard_text),
                  unsaid=json.dumps(cut.text[len(cut.interruption.heard_text):]),
                  interjection=json.dumps(conv.messages[idx].text),
                  next_step=json.dumps(values["next step"]),
                  details=json.dumps(interruption_context(conv, idx)),
                  slots=_slot_lines(example, values))
    prompt = render("rubric_interruption", **fields,
                    example=json.dumps(example, ensure_ascii=False))
    # a re-ask shows this call's values without the example: shown it again with the errors,
    # the 1.5B model wrote it again slots and all (three answers of three, a correction)
    bare = render("rubric_interruption", **fields, example="")
    said = " ".join(m.text for m in conv.messages[: idx + 1])

    def as_rubric(o: RubricOut) -> Rubric:
        o = tidy_rubric(o, kind)
        return Rubric(message_index=idx, type=kind, tf_criterion=o.tf_criterion.strip(),
                      rq_criteria=tuple(c.strip() for c in o.rq_criteria if c.strip()))

    def check(o: RubricOut) -> list[str]:
        o = tidy_rubric(o, kind)
        errs = wrong_type_labels(o, kind) + check_rubric(o, kind, said, values)
        return errs or gate_errors(conv, as_rubric(o), without)

    out = await ask_valid(llm, [{"role": "system", "content": system},
                                {"role": "user", "content": prompt}], RubricOut,
                          agent="rubric_generator", check=check,
                          reask=[{"role": "system", "content": system}, {"role": "user", "content": bare}])
    return as_rubric(out)


#: what ``Conversation.agents`` gains for a rubric written by rules after the writer's answers
#: were all refused (the release rows and statistics carry it)
RULE_FALLBACK = "rule rubric at message {idx} (the rubric writer's answers were refused: {why})"


async def _rubric_or_rule(conv: Conversation, idx: int, llm: Any, seed: int, without: set[tuple],
                          fallback: str) -> tuple[Rubric, str]:
    """The model's rubric; when all its answers are refused and ``fallback`` is "rule", the
    rule-based rubric of :mod:`bargein.generators.rubric` if the verifier's checks accept it,
    with the note saying so (else the writer's failure stands)."""
    try:
        return await llm_rubric(conv, idx, llm, random.Random(seed), without), ""
    except PlanBroken as e:
        if fallback != "rule":
            raise
        rule = rule_rubric(conv, idx, random.Random(seed))
        errs = check_rubric(RubricOut(tf_criterion=rule.tf_criterion, rq_criteria=list(rule.rq_criteria)),
                            rule.type) or gate_errors(conv, rule, without)
        if errs:
            raise PlanBroken(f"{e}; the rule rubric is refused too: {errs[0]}",
                             evidence={**e.evidence, "rule_rubric": rule.model_dump(mode="json"),
                                       "rule_errors": errs}) from e
        why = str(e.evidence.get("attempts", [{}])[-1].get("errors", [str(e)])[0])[:120]
        return rule, RULE_FALLBACK.format(idx=idx, why=why)


async def rubrics_llm(conv: Conversation, ctx: StageContext) -> Conversation:
    """Every interruption's rubric by the model. ``fallback="rule"`` (the stage's config): a
    rubric the writer failed is the rule-based one, recorded in ``Conversation.agents``."""
    from bargein.verify.checks import run_checks

    llm = llm_for(ctx, ctx.config["llm"])
    fallback = ctx.config.get("fallback", "rule")
    without = {_key(v) for v in run_checks(conv.with_(rubrics=()))}
    got = await asyncio.gather(*(_rubric_or_rule(conv, i, llm, ctx.item_seed + i, without, fallback)
                                 for i in _indices(conv)))
    notes = [n for _, n in got if n]
    agents = "; ".join([conv.agents, *notes])
    return conv.with_(rubrics=tuple(r for r, _ in got), **({"agents": agents} if notes else {}))
