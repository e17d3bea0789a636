"""The LLM agents of the simulate stage: round planner, assistant and user simulators.

Each agent renders its prompt (:mod:`bargein.generators.llm_messages`), asks
``llm.structured`` for a schema-checked object and checks it against the round plan with the
same checks the rule-based agents pass (:func:`ask_valid`): an answer that breaks the plan is
re-asked with the errors and a new sampling seed, then :class:`PlanBroken` carries every attempt.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bargein import lexicon
from bargein.errors import BackendUnavailable
from bargein.llm.client import reask_temperature
from bargein.generators import phrases as P
from bargein.generators import assistant_sim
from bargein.generators.assistant_sim import check_turn
from bargein.generators.llm_messages import (
    _INTERJECTION_EXAMPLES, assistant_messages, planner_messages, user_messages,
)
from bargein.generators.facts import find_placeholders
from bargein.generators.llm_values import said
from bargein.generators.planner import ConversationState, RoundPlan
from bargein.generators import grounded as G
from bargein.generators.user_sim import (
    Interjected, PlanBroken, RuleUser, UserPlan, anchors, check_interjection, check_reply,
    impatient_cuts, user_plan,
)
from bargein.verify.text import content_words, normalise, sentences
from bargein.records import Conversation, Scenario
from bargein.runner import StageContext

ASK_ATTEMPTS = 3        # one answer + two re-asks with the errors


class PlannerOut(BaseModel):
    """LLM round planner output: the round's content in words. The decisions themselves
    (interrupt or not, the type, the stage) are sampled in code and never asked back."""

    model_config = ConfigDict(extra="forbid")
    assistant_goal: str = Field(min_length=8, max_length=300)
    user_goal: str = Field(max_length=300)
    rationale: str = Field("", max_length=300)


class AssistantTurn(assistant_sim.AssistantTurn):
    """The assistant simulator's answer (LLM schema): spoken sentences, not a document."""

    acknowledgement: str = Field("", max_length=300)
    content: str = Field(min_length=1, max_length=900)


class UserReply(BaseModel):
    """What the caller says (LLM schema)."""

    model_config = ConfigDict(extra="forbid")
    utterance: str = Field(min_length=1, max_length=400)


class UserInterjection(BaseModel):
    """What the caller says when cutting in; the cut itself is computed, never asked for."""

    model_config = ConfigDict(extra="forbid")
    interjection: str = Field(min_length=1, max_length=300)


_SPOKEN_BACKCHANNELS = tuple(sorted({f[:1].upper() + f[1:] + "." for b in lexicon.BACKCHANNELS
                                     for f in (b, b.replace(" ", "-"), b.replace(" ", ", "))
                                     if lexicon.is_backchannel(f)}))


class FillerInterjection(BaseModel):
    """A filler cut-in: the schema itself allows only the lexicon's backchannels (the model
    picks one; constrained decoding cannot write anything else)."""

    model_config = ConfigDict(extra="forbid", title="UserInterjection")
    interjection: Literal[_SPOKEN_BACKCHANNELS]  # type: ignore[valid-type]


async def ask_valid(llm: Any, messages: list[dict[str, str]], schema: type[BaseModel], *,
                    agent: str, check: Callable[[Any], list[str]], sample: int = 0,
                    reask: list[dict[str, str]] | None = None) -> Any:
    """Ask for ``schema``; re-ask with the plan errors; raise :class:`PlanBroken` with evidence.
    ``reask``: the request a re-ask repeats with the errors (default ``messages``), e.g. one
    without the worked example the refused answers copied."""
    attempts: list[dict[str, Any]] = []
    msgs = list(messages)
    for n in range(ASK_ATTEMPTS):
        # a re-ask is a new draw: its errors in the prompt, a new seed, and sampled hotter
        # (a re-planned round's first ask too: at the default temperature a new seed gave the
        # 1.5B model's assistant the same turn word for word in all three plans of a round)
        obj = await llm.structured(msgs, schema, agent=agent, sample=sample * ASK_ATTEMPTS + n,
                                   **({} if n == 0 and sample == 0
                                      else {"temperature": reask_temperature(None)}))
        errs = check(obj)
        if not errs:
            return obj
        answer = obj.model_dump_json()
        attempts.append({"attempt": n, "answer": json.loads(answer), "errors": errs})
        # the direction again with the errors, without the refused answer as a turn: shown its
        # own answer, the 1.5B model wrote it again word for word (three times in a row, at
        # temperature 0.8 with new seeds)
        refused = "\n".join(f"- {e}" for e in dict.fromkeys(e for a in attempts for e in a["errors"]))
        base = reask or messages
        msgs = [*base[:-1], {"role": base[-1]["role"], "content": base[-1]["content"]
                                 + "\n\nYour answer breaks the plan:\n" + refused
                                 + "\nAnswer again with the whole JSON object, different and fixed."}]
    # the end of what the agent was sent (the last turns and the direction), so the failures file
    # shows what the answers were answering
    tail = [{"role": m["role"], "content": m["content"][-600:]} for m in messages[1:][-3:]]
    raise PlanBroken(f"{agent}: {len(attempts)} answers broke the plan; last: {attempts[-1]['errors']}",
                     evidence={"agent": agent, "attempts": attempts, "sent_last": tail})


SIMULATE_AGENTS = ("round_planner", "assistant_simulator.normal", "assistant_simulator.interruption",
                   "user_simulator.normal", "user_simulator.interrupting")


class LLMAgents:
    """Every agent through ``llm.structured`` with its own conversation; answers checked against
    the plan. What can be computed is computed here and given to the model: the cut word index
    and the heard prefix of an interruption (the rule-based caller's cut for the planned type),
    the content a turn delivers, the values a reply gives. The model writes only the words."""

    def __init__(self, scenario: Scenario, llm: Any, spec: str):
        self.scenario, self.llm, self.name = scenario, llm, spec
        self.cutter = RuleUser()
        self._checked: dict[str, Any] = {}        # the verdicts of the call so far
        self._so_far: Conversation | None = None    # the call as of the last round kept

    async def refine_plan(self, plan: RoundPlan, st: ConversationState, messages, rng, sample) -> RoundPlan:
        why = unrealisable(plan, said_values_of(self.scenario))
        if why:      # known before any model call: the round is planned again without this type
            raise PlanBroken(f"the planned {plan.type} cut cannot happen in this turn: {why}",
                             evidence={"plan": plan.model_dump(mode="json"), "reason": why,
                                       "before_any_call": True})

        def check(out: PlannerOut) -> list[str]:
            text = out.assistant_goal + " " + out.user_goal
            errs = [f"placeholders: {find_placeholders(text)[:3]}"] if find_placeholders(text) else []
            if copies(text, PLANNER_EXAMPLE):
                errs.append("the plan copies the example; write the plan of this call's round")
            return errs

        out = await ask_valid(self.llm, planner_messages(self.scenario, plan, messages), PlannerOut,
                              agent="round_planner", check=check, sample=sample)
        return plan.model_copy(update={"assistant_goal": out.assistant_goal,
                                       "user_goal": out.user_goal,
                                       "rationale": out.rationale or plan.rationale})

    async def check_round(self, before: Conversation, after: Conversation) -> None:
        """The verifier's deterministic checks between rounds: a verdict the new round brings
        (an unfixable one, on one of its messages) that the call did not have before it breaks
        the round, which is then planned again, instead of the whole call being discarded at
        the end (seen on the 1.5B model: calls of 25 messages and 68 model calls discarded for
        one line). Checks that can only be judged on a whole call (the goal reached, the steps
        after a skip carried out) wait for the verifier."""
        errs = round_verdicts(before, after, self._checked)
        if errs:
            raise PlanBroken(f"the round breaks the verifier's checks: {errs[0]}",
                             evidence={"verdicts": errs})
        self._so_far = after

    async def assistant_turn(self, plan, messages, rng, sample) -> AssistantTurn:
        agent, msgs = assistant_messages(plan, self.scenario, messages)
        said_before = [m.text for m in messages if m.role == "assistant"]
        rec = plan.recovery
        settle = lambda t: t                     # noqa: E731
        if rec is not None and rec.type == "correction" and rec.detail.get("new"):
            # the corrected value said back is computed: when the model's words leave it out,
            # the acknowledgement is one of the offline bank's (seen on the 1.5B model: nine
            # answers, three plans, none both delivering the content and saying the new email)
            d = rec.detail
            fixed = P.pick(rng, "assistant", "recover_correction", label=d.get("label", "details"),
                           be=P.be_for(d.get("label", "details")),
                           old=d.get("old", ""), new=d["new"])

            def settle(t: AssistantTurn) -> AssistantTurn:
                return t if said(t.text, d["new"]) else t.model_copy(update={"acknowledgement": fixed})
        elif rec is not None and rec.type == "normal" and rec.detail.get("value") \
                and rec.detail.get("variant") in ("hidden", "volunteer"):
            # likewise the take-up of a circumstance the caller volunteered: the catalogue's own
            # response to it (or the offline bank's) when the model's turn names nothing of it
            # (seen on the 1.5B model: nine answers in three plans about the fee, none about
            # "I need to check any decision with my business partner Michelle Silva.")
            d, value = rec.detail, rec.detail["value"]
            own = assistant_sim.hidden_acks(self.scenario, d.get("key", ""))
            taken = rng.choice(list(own)) if own else P.pick(
                rng, "assistant", "recover_hidden_fact", fact=P.second_person(value))

            # (a word the planned content says anyway, "days" of "two business days" against "in
            # 14 days", names nothing of it; seen in a test of seed 7 after the wordings moved)
            fact = content_words(value) - content_words(rec.heard_text) \
                - content_words(plan.unit.text if plan.unit is not None else "")

            # the direction asks for no take-up at all: told to take the fact up itself, the 1.5B
            # model said the caller's words as its own ("I have a meeting in about fifteen
            # minutes."), then "Sorry, I didn't understand.", and the round was planned again
            def settle(t: AssistantTurn) -> AssistantTurn:
                return t if content_words(t.text) & fact else t.model_copy(update={"acknowledgement": taken})
        elif rec is not None and rec.type == "topic_switch" and rec.detail.get("pair"):
            # likewise the answer to the caller's side request: the planned pair's answer and a
            # steer back when the model's turn names nothing of the request (seen on the 1.5B
            # model in a call the verifier accepted: three side requests, "can I save a second
            # delivery address for my office?", "do you deliver to PO boxes?", each answered by
            # the cut turn said again word for word)
            d = rec.detail
            answer = P.join(P.answer(d, "topic_switch", rng), P.pick(rng, "assistant", "back_to_task"))
            asked = content_words(rec.interjection) - content_words(rec.heard_text) - _GENERIC_ASK

            again = content_words(plan.unit.text or "") if plan.unit is not None else frozenset()

            def settle(t: AssistantTurn) -> AssistantTurn:
                # (a word the cut turn says again, "this order", names nothing of the request)
                return t if not asked or (content_words(t.text) - again) & asked \
                    else t.model_copy(update={"acknowledgement": answer})
        elif rec is None and plan.ack.get("kind") == "hidden":
            # likewise the take-up of a circumstance the caller volunteered in a plain reply: the
            # offline agent's (the catalogue's response to it) when the model's words name none
            # of it; the direction asks for no acknowledgement. Seen on the 1.5B model: "I'm
            # moving to a new place in 14 days ..." answered by the next talking point alone, or
            # "I see. I understand that you need to take care of it by yourself.", six answers in
            # two plans, and the call failed
            rule = assistant_sim.RuleAssistant(self.scenario)
            rule.before = next((m.spoken_text for m in reversed(messages) if m.role == "assistant"), "")
            taken = rule._take_up(plan.ack.get("key", ""), plan.ack.get("value", ""), rng)
            # (a word the planned content says anyway, "days" of "two business days" against
            # "in 14 days", names nothing of it)
            fact = content_words(plan.ack.get("value", "")) - content_words(rule.before) \
                - content_words(plan.unit.text if plan.unit is not None else "")

            def settle(t: AssistantTurn) -> AssistantTurn:
                return t if fact and content_words(t.text) & fact else t.model_copy(update={"acknowledgement": taken})
        so_far = self._so_far
        if so_far is None or len(so_far.messages) != len(messages):
            from bargein.generators.conversation import _partial

            so_far = _partial(self.scenario, list(messages), [], {}, self.name)

        caller_said = [m.text for m in messages if m.role == "user"]

        def check(t: AssistantTurn) -> list[str]:
            # the plan first; then the verifier's checks on the turn as it will be said (a
            # re-ask of this one turn, not a new plan for the round, when it would be refused)
            t = settle(t)
            errs = check_assistant(plan, t) + callers_words(t.text, caller_said)
            if errs:
                return errs
            spoken = tidy_turn(t, opening=not messages, said_before=said_before)
            return turn_verdicts(so_far, plan, spoken.text)

        turn = await ask_valid(self.llm, msgs, AssistantTurn, agent=agent, check=check, sample=sample)
        return tidy_turn(settle(turn), opening=not messages, said_before=said_before)

    async def user_reply(self, plan, heard, rng, sample) -> str:
        up = user_plan(plan)
        # a plain reply's example is drawn from the offline caller's bank for this reply (a
        # line not said before in the call): told only to "react briefly", the 1.5B model said
        # its previous line again, then, refused, read the assistant's words back ("I've
        # already cancelled the booking and requested a refund of $635.32 ..."), and the call
        # failed on an acknowledgement
        drawn = None
        if up.action in PLAIN_REPLIES:
            own = {normalise(m["text"]) for m in heard if m["role"] == "user"}
            last = heard[-1]["text"] if heard and heard[-1]["role"] == "assistant" else ""
            for _ in range(6):
                line = self.cutter.reply(up, rng, last)
                if normalise(line) not in own:
                    drawn = line
                    break
        agent, msgs = user_messages(up, heard, example=drawn)

        def check(r: UserReply) -> list[str]:
            return check_user_reply(up, r.utterance) + repeats(r.utterance, heard)

        out = await ask_valid(self.llm, msgs, UserReply, agent=agent, check=check, sample=sample)
        return out.utterance.strip()

    async def user_interject(self, plan, message, content_start, context, heard, rng, sample) -> Interjected:
        up = user_plan(plan)
        # the cut, in code: where a caller of this type cuts in (raises PlanBroken if nowhere)
        cut = self.cutter.interject(up, message, content_start, context, rng)
        # an impatient caller's example is one of the hand-written lines of the offline bank,
        # drawn for this cut: the 1.5B model wrote the one fixed example ("Sorry, can we skip
        # that part? I just need it done.") at most impatient cuts of a run, then, refused, a
        # question about the explanation instead. A bank line copied is a varied impatient line.
        drawn = P.compose(rng, "user", "impatient_core") if up.type == "impatient" else None
        if up.type == "correction" and {"label", "old", "new"} <= set(cut.detail):
            # the same for a correction, with this call's values: the fixed example's "my zip
            # code is 60614, not 60615" was said instead of the caller's own email correction
            d = cut.detail
            drawn = P.pick(rng, "user", "correction", label=d["label"], old=d["old"], new=d["new"])
        if up.type == "pushback" and cut.interjection:
            # and for an objection, the offline line written for this very cut (the fee or
            # requirement just heard): the one fixed example, "Hold on, a restocking fee?", was
            # copied by the 1.5B model into a call that had no such fee
            drawn = cut.interjection
        agent, msgs = user_messages(up, heard, cut.heard, cut.detail, example=drawn)
        schema = FillerInterjection if up.type == "filler" else UserInterjection
        example = "" if drawn else _INTERJECTION_EXAMPLES.get(up.type or "normal", "")

        def check(o) -> list[str]:
            errs = check_user_interjection(up, message, content_start, cut.heard, o.interjection,
                                           context)
            if up.type == "filler":
                return errs
            if example and copies(o.interjection, example):
                errs.append("the interjection copies the example; react in the caller's own words "
                            "to what you heard")
            return errs + repeats(o.interjection, [*heard, {"role": "assistant", "text": cut.heard}])

        out = await ask_valid(self.llm, msgs, schema, agent=agent, sample=sample, check=check)
        detail = dict(cut.detail)
        if plan.type in ("pushback", "normal"):
            said = [a for a in anchors(cut.heard[content_start:]) if _said(out.interjection, a)]
            if said:                           # what the caller picked up on, for the recovery
                detail["anchor"] = said[-1]
        return Interjected(heard=cut.heard, cut_word_index=cut.cut_word_index,
                           interjection=out.interjection.strip(), overlap_ms=cut.overlap_ms,
                           detail=detail)


# words of a side request that name no topic ("Oh, quick one, can I ... while I'm here?")
_GENERIC_ASK = frozenset({"quick", "one", "question", "different", "totally", "while", "here",
                          "also", "actually", "can", "could", "change", "ask", "wait", "oh",
                          "sorry", "another", "thing", "unrelated", "something", "else"})

#: caller replies whose words the offline bank has a line for (an example drawn per reply)
PLAIN_REPLIES = ("ack", "accept", "close", "confirm")


# judged on a whole call only: "not carried out (yet)" on a call that has not ended
WHOLE_CALL_CHECKS = frozenset({"task_abandoned_on_skip", "resolved_goal_reached", "rubric_counts",
                               "promise_kept", "slip_corrected"})


def round_verdicts(before: Conversation, after: Conversation,
                   memo: dict[str, Any] | None = None) -> list[str]:
    """The unfixable verdicts of the verifier's deterministic checks that ``after`` (the call
    with one more round) has on the new round's messages and ``before`` does not have, each as
    "check: issue (evidence)". On round-by-round prefixes of the offline generator's accepted
    calls only ``task_abandoned_on_skip`` fired (1 of 341 rounds), a whole-call check left out
    here. ``memo``: the keys of ``before``'s verdicts, kept from the previous round."""
    from bargein.verify.checks import run_checks

    def keys(verdicts) -> set:
        return {(v.check, v.message_index, v.issue) for v in verdicts}

    memo = {} if memo is None else memo
    first = len(before.messages)
    had = memo["keys"] if memo.get("messages") == before.messages else keys(run_checks(before))
    found = run_checks(after)
    out = [f"{v.check}: {v.issue}" + (f" ({v.evidence[:200]})" if v.evidence else "")
           for v in found if not v.fixable and v.check not in WHOLE_CALL_CHECKS
           and v.message_index is not None and v.message_index >= first
           and (v.check, v.message_index, v.issue) not in had]
    if not out:                 # the round stays: its verdicts are the next round's "before"
        memo.update(messages=after.messages, keys=keys(found))
    return out


def turn_verdicts(so_far: Conversation, plan: RoundPlan, text: str) -> list[str]:
    """:func:`round_verdicts` of the call with only the assistant's next turn added (before the
    caller answers or cuts in), as re-ask errors for that turn. Seen on the 1.5B model: the
    recovery after "I'm travelling with my 5-year-old and want to sit together." went on with
    the booking without a word about it (hidden_fact_addressed), the same turn in all three
    plans of the round, and the call failed."""
    from bargein.records import Message

    i = len(so_far.messages)
    msg = Message(index=i, role="assistant", text=text, stage=plan.stage)
    gold = {plan.recovery.message_index: text} if plan.recovery is not None else {}
    after = so_far.with_(messages=(*so_far.messages, msg), id=so_far.id,
                         gold_recoveries={**so_far.gold_recoveries, **gold},
                         plan=(*so_far.plan, RoundPlan.model_validate({**plan.model_dump(),
                                                                      "message_index": i})))
    return [f"{e}; say this turn so that it is not so" for e in round_verdicts(so_far, after)]


def said_values_of(scenario: Scenario) -> tuple[str, ...]:
    from bargein.generators.conversation import said_values

    return said_values(scenario)


def unrealisable(plan: RoundPlan, values: tuple[str, ...] = ()) -> str:
    """Why the planned cut-in cannot be made in the planned content ('' when it may be): the
    cutter needs a fee, requirement or policy to push back on (or, for a clarifying question,
    a fee, policy or value), and explanation left to skip for an impatient caller. The model
    smooths the planned talking point and adds no facts, so what the point lacks the spoken turn
    lacks too. Seen on the 1.5B model: pushback, then impatient planned on an opener that only
    asks for an order number; each drew a planner and an assistant call (minutes on 2 cores)
    before the cutter found nothing to react to."""
    unit = plan.unit
    if not plan.interrupt or unit is None:
        return ""
    variant = plan.detail.get("variant", "")
    text = unit.text
    if plan.type == "pushback" and variant not in ("sensitive", "persist") \
            and not G.objects_in(text, G.PUSHBACK_KINDS):
        return f"no {'/'.join(G.PUSHBACK_KINDS)} in the planned content {text!r} to push back on"
    if plan.type == "normal" and variant == "clarify" and not G.objects_in(text, G.CLARIFY_KINDS):
        return f"no {'/'.join(G.CLARIFY_KINDS)} in the planned content {text!r} to ask about"
    if plan.type == "impatient" and not impatient_cuts(text, 0, values):
        return f"no explanation in the planned content {text!r} to skip"
    return ""


def _said(text: str, phrase: str) -> bool:
    from bargein.verify.text import contains_phrase

    core = re.sub(r"^(?:the|a|an|my|your|this|that|our)\s+", "", phrase)
    return contains_phrase(text, phrase) or contains_phrase(text, core)


# ---- checks on what the model wrote (the rule-based agents' checks, values in any spoken form,
# and the planned content delivered) -----------------------------------------------------------
_VALUE_ERRORS = ("the corrected value", "the correction must give the corrected value",
                 "the plan says the user gives")
_VALUE_TOKEN = re.compile(r"\$?\d[\d,.:/-]*\d|\$?\d")


def _values_in(text: str) -> list[str]:
    """The numbers, amounts, codes and dates a talking point states ('$45.50', 'June 3')."""
    from bargein.generators.llm_values import _MONTHS

    out = [m.group(0).rstrip(".,") for m in _VALUE_TOKEN.finditer(text)]
    words = text.split()
    for i, w in enumerate(words):
        if w.lower().strip(".,") in _MONTHS and len(w) > 3 and i + 1 < len(words) \
                and words[i + 1].strip(".,").rstrip("stndrh").isdigit():
            out.append(f"{w} {words[i + 1].strip('.,')}")
    return out


def check_delivered(plan: RoundPlan, turn: AssistantTurn) -> list[str]:
    """Whether the turn delivers what the plan says it does: a talking point's values and most
    of its words; an ``ask`` a question about what it asks for."""
    unit, rec = plan.unit, plan.recovery
    if unit is None or (rec is not None and rec.type == "filler"):
        return []
    errs = []
    if unit.text:
        missing = [v for v in _values_in(unit.text) if not said(turn.content, v)]
        if missing:
            errs.append(f"the content must state {missing} from the planned content "
                        f"\"{unit.text}\" (any spoken form)")
        if "?" in unit.text and "?" not in turn.content:
            # seen on the 1.5B model, given "Could you read me the confirmation code ...?":
            # "Sure thing, let me read that back for you." (it answered the question itself)
            errs.append(f"the content must ask the caller the question of the planned content "
                        f"\"{unit.text}\"; you are the company's assistant asking it")
        want = content_words(unit.text)
        got = content_words(turn.content)
        if want and len(want & got) < DELIVERED_SHARE * len(want):
            errs.append(f"the content does not deliver the planned content \"{unit.text}\" "
                        f"(it shares {len(want & got)} of its {len(want)} content words)")
    elif unit.kind == "ask" and unit.keys:
        if "?" not in turn.content:
            errs.append("the content must ask the caller a question")
        labels = content_words(" ".join(P.label(k) for k in unit.keys))
        if labels and not (labels & content_words(turn.content)):
            errs.append(f"the question must ask for the caller's "
                        f"{' and '.join(P.label(k) for k in unit.keys)}")
    return errs


DELIVERED_SHARE = 0.5


_META = ("breaks the plan", "your answer", "direction for your", "planned content", "json",
         "take it into account", "acknowledge first", "speaking to them")
# the direction read out as speech talks about "the caller" (seen: "The caller mentioned that I'm
# cutting household subscriptions ...; take it into account." as the start of a turn)
_ABOUT_CALLER = re.compile(r"\bthe (?:caller|customer)(?:'s)? (?:mentioned|said|told|gave|is|has|wants)\b", re.I)


# the assistant saying it did not follow a caller who spoke plainly (every simulated caller line
# is checked as clear). Seen on the 1.5B model: "Sorry, I misunderstood your question." before
# the next question, after a side request it had just answered (in an accepted call), and
# "Sorry, I didn't understand." after "I have a meeting in about fifteen minutes."
_CONFUSED = re.compile(r"\b(?:i (?:didn't|did not|couldn't|could not|don't|do not) (?:quite )?"
                       r"(?:understand|catch|follow|hear)\b|i misunderstood|i'm not sure (?:what|i) "
                       r"(?:you|understand)|(?:could|can) you (?:please )?(?:repeat|rephrase|say that again))",
                       re.I)


# the closing question asked before the call's end (seen on the 1.5B model in an accepted call:
# "Is there anything else I can help with on order HH-6085-7028?" as the third message, before
# the damaged item was even named)
_CLOSING = re.compile(r"\b(?:anything else (?:i|we) can (?:help|do|assist)|(?:is there )?anything else "
                      r"(?:you need|for you|today)|will that be all|is that all for today)\b", re.I)


def check_assistant(plan: RoundPlan, turn: AssistantTurn) -> list[str]:
    errs = [e for e in check_turn(plan, turn) if not e.startswith(_VALUE_ERRORS)]
    unit = plan.unit
    closing = _CLOSING.search(turn.text)
    if closing and plan.assistant_action not in ("close", "farewell", "outcome") \
            and not (unit is not None and (unit.kind in ("close", "farewell", "outcome")
                                           or _CLOSING.search(unit.text or ""))):
        errs.append(f"{closing.group(0)!r} closes the call, which is not over: deliver only the "
                    "content of this turn")
    lost = _CONFUSED.search(turn.text.replace("\u2019", "'"))
    if lost:
        errs.append(f"{lost.group(0)!r}: the caller was clear; respond to what they said, "
                    "without saying you did not understand")
    if any(w in turn.text.lower() for w in _META) or _ABOUT_CALLER.search(turn.text):
        # seen: a re-ask's errors, and a direction's note, read out as speech
        errs.append("the turn repeats the instructions or errors; say only what the assistant "
                    "says to the caller, addressing them as 'you'")
    twice = doubled_sentence(turn.content)
    if twice:
        errs.append(f"the content says {twice!r} twice in a row; say each sentence once")
    rec = plan.recovery
    if rec is not None and rec.type == "correction" and not said(turn.text, rec.detail.get("new", "")):
        errs.append(f"the corrected value {rec.detail.get('new')!r} is not used")
    return errs + check_delivered(plan, turn)


def callers_words(text: str, caller_said: list[str], min_words: int = 4) -> list[str]:
    """A sentence of the caller's (``min_words`` words or more) said word for word in an
    assistant turn, as a re-ask error ([] when none). Seen on the 1.5B model in a call the
    verifier accepted: "Great, thank you for confirming the email. Sure, it's H H, one three
    eight nine, four zero zero five. I've found order ..." (the caller's answer read out as
    the assistant's own words)."""
    mine = f" {normalise(text)} "
    for line in caller_said:
        for a, b in sentences(line):
            said_ = normalise(line[a:b])
            if len(said_.split()) >= min_words and f" {said_} " in mine:
                return [f"the turn says the caller's words {line[a:b].strip()!r} as the assistant's "
                        "own; say only what the assistant says (a value may be read back)"]
    return []


def tidy_turn(turn: AssistantTurn, *, opening: bool, said_before: list[str] = ()) -> AssistantTurn:
    """The acknowledgement where code can decide it: none on the opening turn (nobody has said
    anything to acknowledge), none that opened an earlier assistant turn, and none when the
    content opens by saying it again. Seen on the 1.5B model in an accepted call: "I
    understand. Thank you for the information. Thanks for calling about a building permit." as
    the first words of the call, and "I understand. I understand. I'll upload everything ..."
    later in it."""
    ack = turn.acknowledgement.strip()
    if not ack:
        return turn
    if opening:          # of the acknowledgement only a greeting stays, as the content's start
        greet = [ack[s:e] for s, e in sentences(ack) if _GREETING.search(ack[s:e])]
        return turn.model_copy(update={"acknowledgement": "", "content": P.join(*greet, turn.content)})
    first = normalise(ack[slice(*sentences(ack)[0])]) if sentences(ack) else ""
    if any(f"{normalise(t)} ".startswith(f"{normalise(ack)} ") for t in said_before):
        # the same acknowledgement formula again (seen: "Thanks, I have that." opening four
        # assistant turns of one call, the system prompt's example)
        return turn.model_copy(update={"acknowledgement": ""})
    if first and f"{normalise(turn.content)} ".startswith(f"{first} "):
        return turn.model_copy(update={"acknowledgement": ""})
    return turn


_GREETING = re.compile(r"\b(?:hello|hi|hey|good (?:morning|afternoon|evening)|welcome|"
                       r"thanks? (?:you )?for calling)\b", re.I)


def doubled_sentence(text: str) -> str:
    """A sentence said twice in a row ('' when none): "I understand. I understand." """
    said_ = [normalise(text[s:e]) for s, e in sentences(text)]
    return next((a for a, b in zip(said_, said_[1:]) if a and a == b), "")


PLANNER_EXAMPLE = ("Confirm the order and explain that the refund reaches the card within two "
                   "business days.")
COPY_SHARE = 0.6


def repeats(utterance: str, heard: list[dict]) -> list[str]:
    """Why a caller line is not the caller's own words ([] when it is): it repeats what the
    assistant said (any turn of the call), or an earlier caller line word for word. Seen on the
    1.5B model: "Sorry, can we skip that part?" three times in one call, the caller reading back
    "I'll upload everything to the permit portal under your" as its reply.

    Words the caller said before are theirs: a caller who stands by the option they chose ("I
    understand, I'll cancel the whole booking for everyone." after choosing it, when told what a
    partial cancellation would mean) is not parroting the question that offered it, nor saying
    an earlier line again (seen: a whole 1.5B conversation discarded on that line, nine times)."""
    errs = []
    own = [m["text"] for m in heard if m["role"] == "user"]
    mine = content_words(" ".join(own))
    if any(m["role"] == "assistant" and parrots(utterance, m["text"], own=mine) for m in heard):
        errs.append("the caller repeats the assistant's words; answer in the caller's own words")
    if len(content_words(utterance)) >= 3 and any(said_again(utterance, t) for t in own):
        errs.append("the caller says an earlier line of theirs again; say something new")
    return errs


SAID_AGAIN = 0.8        # word-sequence similarity of a line said again (difflib ratio)


def said_again(line: str, earlier: str) -> bool:
    """Whether ``line`` is ``earlier`` again, near word for word (not the same choice restated)."""
    a, b = re.findall(r"[a-z0-9']+", line.lower()), re.findall(r"[a-z0-9']+", earlier.lower())
    return bool(a) and difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= SAID_AGAIN


def copies(text: str, source: str) -> bool:
    """Whether ``text`` is mostly ``source``'s words (a model copying instead of writing)."""
    got, src = content_words(text), content_words(source)
    return bool(got) and len(got) >= 3 and len(got & src) >= COPY_SHARE * len(got)


def parrots(reply: str, heard: str, own: frozenset[str] = frozenset()) -> bool:
    """Whether a caller's reply parrots an assistant turn: a verbatim run of 8 of its words, or
    6+ content words mostly its (not counting words the caller said before, ``own``). A short
    answer that picks one option of a question ("Cancel the whole booking for everyone,
    please.") uses the question's words and is an answer, not a copy."""
    if not copies(reply, heard):
        return False
    r = re.findall(r"[a-z0-9']+", reply.lower())
    h = " " + " ".join(re.findall(r"[a-z0-9']+", heard.lower())) + " "
    if any(" " + " ".join(r[i:i + 8]) + " " in h for i in range(len(r) - 7)):
        return True                                       # read back word for word
    got = content_words(reply)
    return len(got) >= 6 and len((got & content_words(heard)) - own) >= COPY_SHARE * len(got)


_ECHOES = ("what you say", "your words", "your own words", "...", "utterance", "interjection")


def _echo(text: str) -> list[str]:
    """The words of the instructions or the format copied instead of speech ('what you say')."""
    t = text.strip().lower().strip(".!? ")
    if not t or t in _ECHOES or any(e in t for e in ("what you say", "interjection", "utterance")):
        return [f"{text.strip()!r} copies the instructions; write what the caller actually says"]
    return []


# the company's side in the caller's mouth: offering help, or a model's refusal. Seen on the 1.5B
# model in three bench/llm_real.py runs: "Sure, I can help you with that. What's your workspace
# address?", "Sure, I'll be happy to help. Let me know what you need." (in an accepted call), and
# "I'm sorry, but I can't assist with that." three times for a caller asked for its order number
_ASSISTANT_VOICE = re.compile(
    r"\b(?:how (?:can|may|could) i (?:help|assist)|i (?:can|could|will|'ll) (?:help|assist) you"
    r"|i can help with that|(?:i'd|i would|i'll|i will|i'm|i am) (?:be )?(?:happy|glad) to (?:help|assist)"
    r"|let me know (?:what|how) (?:you need|i can)|is there anything (?:else )?i can"
    r"|(?:can't|cannot|can not|unable to) (?:assist|help) (?:you )?with (?:that|this)"
    r"|as an ai\b|i'm an ai|language model"
    # the customer spoken of in the third person, by the customer (seen: "I'll need to check with
    # the customer's account to ensure the status is correct.")
    r"|(?:the|this) (?:customer|caller)(?:'s)?\b(?! service))", re.I)


def assistant_voice(text: str) -> list[str]:
    """A caller line spoken in the company's voice or a model's refusal ([] when not)."""
    m = _ASSISTANT_VOICE.search(text.replace("\u2019", "'"))
    if not m:
        return []
    return [f"{m.group(0)!r} is the company's assistant speaking (or a refusal); you are the "
            "customer who phoned: say what the customer says, in the customer's own words"]


def instruction_echo(text: str) -> list[str]:
    """The verifier's ``prompt_wording`` rule on one caller line, as a re-ask error for that
    line (not a whole round planned again when the round's checks find it). Seen on the 1.5B
    model in an accepted call: "Please provide me with the exact words I heard." twice."""
    from bargein.verify.wording import instruction_words

    found = instruction_words(text)
    return [f"{found[0]!r} is the wording of your instructions, not what a caller says; say only "
            "what the caller says on the phone"] if found else []


def check_user_reply(up: UserPlan, utterance: str) -> list[str]:
    errs = _echo(utterance) + instruction_echo(utterance) + assistant_voice(utterance) + [
        e for e in check_reply(up, utterance) if not e.startswith(_VALUE_ERRORS)]
    if up.action == "answer":
        missing = [v for v in up.facts.values() if v and not said(utterance, v)]
        if missing:
            given = [v for v in up.facts.values() if v and v not in missing]
            errs.append(f"the reply must give {missing} (in any spoken form)"
                        + (f", and {given} as well: all of them in one reply" if given else ""))
    return errs


# a request for more of what an impatient caller wants skipped. Seen on the 1.5B model, told to
# ask the assistant to skip reading the itinerary back: "I'm sorry, could you please just read
# the itinerary back for me? I need to understand the details."
_ASKS_MORE = re.compile(
    r"(?:\b(?:can|could|would|will) you (?:please )?(?:just )?|\bplease (?:just )?|^(?:just )?)"
    r"(?:read|explain|repeat|say (?:that|it) again|go (?:over|through)|walk me through|"
    r"run (?:me )?through|tell me (?:more|again|about|the details)|give me (?:the|more) details)\b",
    re.I)


# ... or saying it was not heard, which asks for it again (seen on the 1.5B model as an
# impatient cut-in: "I'm sorry, I didn't hear what you just said.")
_MISSED = re.compile(r"\b(?:didn't|did not|couldn't|could not|can't|cannot) (?:quite )?"
                     r"(?:catch|hear|follow)\b", re.I)


def asks_for_more(text: str) -> str:
    """The words of ``text`` asking to hear more, read back or repeated ('' when none)."""
    for s, e in sentences(text):
        sent = re.sub(r"^(?:(?:i'm |i am )?sorry|okay|ok|well|um|uh|so|actually)[,.]?\s+", "",
                      text[s:e].strip().replace("\u2019", "'"), flags=re.I)
        m = _ASKS_MORE.search(sent) or _MISSED.search(sent)
        if m:
            return sent[m.start():].strip()
    return ""


def check_user_interjection(up: UserPlan, message: str, content_start: int, heard: str,
                            interjection: str, context: tuple[str, ...]) -> list[str]:
    more = asks_for_more(interjection) if up.type == "impatient" else ""
    errs = ([f"{more!r} asks to hear more; an impatient caller wants the assistant to skip "
             "this and move on: say that, in your own words"] if more else [])
    missed = _MISSED.search(interjection.replace("\u2019", "'"))
    if not more and missed and up.type != "filler":
        # the caller heard the words it reacts to (seen on the 1.5B model, told to ask about "a
        # two-hour pickup window": "Hold on, a two-hour pickup window? I didn't hear that!")
        errs.append(f"{missed.group(0)!r}: you did hear what the assistant said; react to it "
                    "as the direction says, without saying you did not hear it")
    errs += _echo(interjection) + instruction_echo(interjection) + assistant_voice(interjection) + [
        e for e in check_interjection(up, message, content_start, heard, interjection, context)
        if not e.startswith(_VALUE_ERRORS)]
    if up.type == "correction" and not said(interjection, up.detail.get("new", "")):
        errs.append(f"the correction must give the corrected value {up.detail.get('new')!r}")
    d = up.detail
    if up.type == "normal" and d.get("value") and d.get("variant") in ("hidden", "volunteer"):
        # the detail the caller volunteers is said (in any form, or for a statement its own
        # words): seen on the 1.5B model, a caller planned to volunteer "Lawrence Barrett" said
        # "I'm sorry, I didn't catch that. Could you please repeat?", and the assistant's take-up
        # of the name then presented a value the caller never gave
        fact = content_words(d["value"]) - content_words(heard)
        if not said(interjection, d["value"]) and not (fact and content_words(interjection) & fact):
            errs.append(f"the interjection must tell the {d.get('label') or 'detail'} "
                        f"{d['value']!r}: that is what the caller cuts in to say")
    return errs


def llm_for(ctx: StageContext, spec: str) -> Any:
    """The stage's LLM client: ``ctx.resources['llm']`` or ``get_llm(spec)``."""
    llm = ctx.resources.get("llm")
    if llm is None:
        try:
            from bargein.llm import get_llm
        except ImportError as e:
            raise BackendUnavailable(f"--llm {spec}: bargein.llm.get_llm is not available ({e}). "
                                     "Fix: use --llm offline") from e
        llm = ctx.resources["llm"] = get_llm(spec, workdir=ctx.workdir)
    return llm


async def simulate_llm(scenario: Scenario, ctx: StageContext) -> Conversation:
    from bargein.generators.conversation import simulate

    spec = ctx.config["llm"]
    return await simulate(scenario, ctx.rng, LLMAgents(scenario, llm_for(ctx, spec), spec))
