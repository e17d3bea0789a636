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
from bargein.generators.rubric import _indices, interruption_context, recovery_plans
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


# one worked example per interruption type, from another call (a parcel delivery), shown at the
# end of the request. With one example (a correction) for every type the 1.5B model wrote the
# correction's checks for filler cut-ins ("Uses the new plan ... without mentioning it.",
# "Accepts the explanation without questioning the caller.").
EXAMPLES: dict[str, tuple[str, str, dict]] = {
    "normal": ("Your parcel ships on Friday by ground", "Can it go to my office instead?", {
        "tf_criterion": "The response says whether the Friday shipment can go to the office and then gives the rest of the shipping details.",
        "rq_criteria": ["Answers the question about the office address before going on.",
                        "Says the cut sentence again from its beginning, 'Your parcel ships on Friday'.",
                        "Keeps the Friday ship date unchanged."]}),
    "impatient": ("Returns are accepted within 30 days, and the item has to be", "Yeah, yeah, can we just start the return?", {
        "tf_criterion": "The response asks for the order number to start the return.",
        "rq_criteria": ["Skips the rest of the returns-policy explanation.",
                        "Does not say 'accepted within 30 days' again.",
                        "Moves straight on to the order number."]}),
    "correction": ("So the parcel goes to 14 Elm Street", "Sorry, it's 41 Elm Street, not 14.", {
        "tf_criterion": "The response confirms delivery to 41 Elm Street and asks whether the caller wants a text when it is out for delivery.",
        "rq_criteria": ["Accepts 41 Elm Street without questioning the caller.",
                        "Uses 41 Elm Street and no longer says 14 Elm Street.",
                        "Continues with the text-alert question after the correction."]}),
    "topic_switch": ("The next delivery slot is Tuesday between", "Oh, and can I change my phone number too?", {
        "tf_criterion": "The response books the Tuesday delivery slot after answering about the phone number.",
        "rq_criteria": ["Says in one sentence how the phone number can be changed.",
                        "Comes back to the Tuesday delivery slot in the same turn.",
                        "Does not mix the phone number into the delivery booking."]}),
    "filler": ("Your refund of forty dollars goes back to", "Mm-hm.", {
        "tf_criterion": "The response finishes saying where the forty-dollar refund goes and when it arrives.",
        "rq_criteria": ["Continues exactly from 'goes back to' with the rest of the sentence.",
                        "Does not repeat 'Your refund of forty dollars'.",
                        "Adds no acknowledgement such as 'Sure' or 'Thanks' before continuing."]}),
    "pushback": ("There's a fifteen-dollar redelivery fee", "Hold on, fifteen dollars? Nobody told me about that.", {
        "tf_criterion": "The response explains the fifteen-dollar redelivery fee and offers a way forward.",
        "rq_criteria": ["Acknowledges the caller's frustration about the fifteen-dollar fee.",
                        "Explains briefly why the fee applies.",
                        "Offers a concrete option, such as collecting the parcel from the depot."]}),
}


# the particulars of each example (its call's things and values): a criterion naming one that
# this call never mentions copies the example
_PARTICULARS = {"normal": "parcel friday ground office shipment", "impatient": "returns 30 days policy",
                "correction": "elm 41 14 text-alert", "topic_switch": "tuesday phone slot",
                "filler": "refund forty forty-dollar", "pushback": "fifteen fifteen-dollar redelivery depot"}


def copies_example(out: RubricOut, kind: str | None, said: str = "") -> list[str]:
    """Criteria naming the worked example's particulars (its parcel, Friday, Elm Street) that
    this call (``said``: its text) never mentions: the example's words, not this call's."""
    from bargein.verify.text import content_words

    particular = content_words(_PARTICULARS.get(kind or "", "")) - content_words(said)
    return [c for c in [out.tf_criterion, *out.rq_criteria] if content_words(c) & particular]


def check_rubric(out: RubricOut, kind: str | None = None, said: str = "") -> list[str]:
    """Content rules: 2-4 distinct full-sentence criteria, none a type label, no placeholders,
    none asking for what the interruption type's recovery must not do."""
    errs = []
    copied = copies_example(out, kind, said)
    if copied:
        errs.append(f"{copied[0]!r} copies the example from another call; write the checks for "
                    "this call's words and values")
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
            errs.append(f"{v.issue}" + (f" (in {v.evidence})" if v.evidence else ""))
    return list(dict.fromkeys(errs))


def _example(kind: str) -> dict[str, str]:
    heard, said, answer = EXAMPLES.get(kind, EXAMPLES["normal"])
    return {"example_heard": json.dumps(heard), "example_interjection": json.dumps(said),
            "example": json.dumps(answer, ensure_ascii=False)}


async def llm_rubric(conv: Conversation, idx: int, llm: Any, rng: random.Random,
                     without: set[tuple] | None = None) -> Rubric:
    """One rubric, checked by :func:`check_rubric` and by the verifier's own checks
    (:func:`gate_errors`; ``without``: the verdict keys of the conversation without rubrics)."""
    cut = conv.messages[idx - 1]
    nxt = recovery_plans(conv).get(idx)
    system = render("rubric_generator", system_prompt=conv.scenario.system_prompt)
    prompt = render("rubric_interruption",
                    history=history_view(conv.messages[: idx + 1]), type=cut.interruption.type,
                    heard=json.dumps(cut.interruption.heard_text),
                    unsaid=json.dumps(cut.text[len(cut.interruption.heard_text):]),
                    interjection=json.dumps(conv.messages[idx].text),
                    next_step=json.dumps((nxt.assistant_goal or nxt.rationale) if nxt is not None else ""),
                    details=json.dumps(interruption_context(conv, idx)),
                    **_example(cut.interruption.type))
    said = " ".join(m.text for m in conv.messages[: idx + 1])

    def as_rubric(o: RubricOut) -> Rubric:
        return Rubric(message_index=idx, type=cut.interruption.type, tf_criterion=o.tf_criterion.strip(),
                      rq_criteria=tuple(c.strip() for c in o.rq_criteria if c.strip()))

    def check(o: RubricOut) -> list[str]:
        errs = check_rubric(o, cut.interruption.type, said)
        return errs or gate_errors(conv, as_rubric(o), without)

    out = await ask_valid(llm, [{"role": "system", "content": system},
                                {"role": "user", "content": prompt}], RubricOut,
                          agent="rubric_generator", check=check)
    return as_rubric(out)


async def rubrics_llm(conv: Conversation, ctx: StageContext) -> Conversation:
    from bargein.verify.checks import run_checks

    llm = llm_for(ctx, ctx.config["llm"])
    without = {_key(v) for v in run_checks(conv.with_(rubrics=()))}
    rubrics = await asyncio.gather(*(llm_rubric(conv, i, llm, random.Random(ctx.item_seed + i), without)
                                     for i in _indices(conv)))
    return conv.with_(rubrics=tuple(rubrics))
