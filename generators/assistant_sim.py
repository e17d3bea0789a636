"""Assistant simulator: two fully separate branches, rule-based and LLM forms of each.

* **normal** drives the state machine: it initiates when the history is empty, acknowledges the
  caller's last answer, and delivers the planned unit (a talking point or a question);
* **interruption** produces the gold recovery for the type the caller cut in with::

    filler       "...a photo of" | "the damage and the receipt."   -> continue from the cut word
    impatient    skip the rest, go straight to the next question, no re-explaining
    correction   accept, integrate the corrected value, continue
    topic_switch address it briefly, steer back, do not blend
    normal       address the detail, resume with a fresh start of the cut sentence
    pushback     de-escalate, engage with what was said, offer an alternative

A turn is ``acknowledgement`` + ``content``; the content is the stage material, so a cut can be
placed inside it (never inside the acknowledgement of the previous turn).
"""

from __future__ import annotations

import random
import re

from pydantic import BaseModel, ConfigDict

from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.generators.facts import find_placeholders
from bargein.generators.catalogue_loader import hidden_acks  # noqa: F401  (llm_agents reads it here)
from bargein.generators.planner import EDGE_WORDS, RoundPlan
from bargein.generators.workflow import unfit_alternatives
from bargein.records import Scenario
from bargein.verify.text import contains_phrase, content_words, normalise
from bargein.verify.tone import dedupe_markers, is_distressing

_GREETING = re.compile(r"\b(thanks? (you )?for (calling|contacting|reaching|ringing)|you've reached|hello|"
                       r"hi there|welcome|"
                       r"good (morning|afternoon|evening))\b", re.I)
_LOWERABLE = frozenset("the your it this that we so before one if now right let there our for to "
                       "and once just you it's that's there's we'll we're let's a an my since "
                       "most please".split())
_NO_READBACK = frozenset({"code", "phone", "account", "card", "pin"})
_THANKED = re.compile(r"\b(?:thank|thanks|appreciate|helpful|useful|good to know|makes sense)\b", re.I)
# a caller's turn that only takes in what was said ("Got it.", "Okay, noted.", "Sounds good.")
_ACK_ONLY = re.compile(r"\W*(?:(?:ok(?:ay)?|alright|right|sure|yes|yeah|yep|mm-hm|uh-huh|great|"
                       r"perfect|fine|good|got it|noted|understood|sounds good|that's fine|"
                       r"makes sense|i see|fair enough|definitely|of course)[,.!]?\s*){1,3}$", re.I)
_ALL_TAKEN = re.compile(r"\b(all I need|everything I needed)\b", re.I)
_DONE_OPEN = re.compile(r"\W*(?:(?:all )?(?:done|set)|everything(?:'s| is) (?:set|done|in place)|"
                        r"you're all set|that's everything)\b", re.I)   # "Done." / "Everything's set."


_CREDIT = re.compile(r"\b(?:credit(?:ed)?|refund(?:ed)?|waive[ds]?|revers(?:e|ed)|"
                     r"take (?:it|that) off)\b", re.I)
_MONEY = re.compile(r"\$\d[\d,]*(?:\.\d\d)?")


def credited_later(scenario: Scenario, phrase: str) -> bool:
    """Whether the call's own plan credits, refunds or waives the amount ``phrase`` names (the
    disputed bill line a caller pushes back on): a talking point that says both."""
    amounts = _MONEY.findall(phrase)
    if not amounts:
        return False
    return any(_CREDIT.search(tp) and any(a in tp for a in amounts)
               for st in scenario.kb.workflow.stages for tp in st.talking_points)


class AssistantTurn(BaseModel):
    """What the assistant says: an acknowledgement, then the stage content (LLM schema too)."""

    model_config = ConfigDict(extra="forbid")
    acknowledgement: str = ""
    content: str

    @property
    def text(self) -> str:
        return P.join(self.acknowledgement, self.content)

    @property
    def content_start(self) -> int:
        return len(self.acknowledgement.strip()) + 1 if self.acknowledgement.strip() else 0


def brand(scenario: Scenario) -> str:
    m = re.search(r"voice assistant for (.+?), in the ", scenario.system_prompt)
    return m.group(1) if m else scenario.domain.title


def _yours(phrase: str) -> str:
    """The caller's words as the assistant says them back ("my bill" -> "your bill")."""
    return re.sub(r"\bmy\b", "your", phrase)


def lower_first(text: str) -> str:
    first = text.split(" ", 1)[0].lower().strip(",.")
    return text[:1].lower() + text[1:] if first in _LOWERABLE else text


def goal_topic(scenario: Scenario) -> str:
    """What the call is about as an agent names it ("the renewal"), or ''."""
    return next((e["topic"] for e in P.bank("assistant", "goal_topic")
                 if e.get("goal") == scenario.goal.name), "")


def _resume(rng: random.Random, content: str, topic: str = "") -> tuple[str, str]:
    """A resume lead and the content fitted to it ('So, as I was saying, your ...'); with the
    call's ``topic`` it may name it ("Okay, the renewal.")."""
    if topic and rng.random() < 0.3:
        return P.pick(rng, "assistant", "resume_topic", topic=topic), content[:1].upper() + content[1:]
    content = content[:1].upper() + content[1:]
    if rng.random() < 0.4:
        return "", content              # the sentence started afresh says it already: no "So,
                                        # as I was saying," before every resumption
    leads = P.bank("assistant", "resume_lead") + P.bank("assistant", "resume_lead_full")
    low = lower_first(content)
    options = [lead for lead in leads if lead.endswith(",") == (low != content)] or list(leads)
    first = content.split(" ", 1)[0].lower().strip(",.")
    # "Right, so," + "so that's 2 copies" says "so, so": not a lead ending in the content's word
    options = [lead for lead in options
               if lead.rstrip(",.").split()[-1].lower() != first] or options
    lead = rng.choice(options)
    return lead, (low if lead.endswith(",") else content)


_ROLE = re.compile(r"\bthe (?:caller|customer|member|patient|applicant|student|client|owner|"
                   r"account holder|traveller|traveler|subscriber|head of household)('s)?", re.I)


def stage_reason(scenario: Scenario, stage: str | None, asked: str = "") -> str:
    """Why the assistant asks, from the stage's own description ("Find the order by order
    number and confirm ..." -> "That's so I can find the order by order number."); '' when the
    description does not read as a verb and a noun phrase."""
    if not stage:
        return ""
    desc = scenario.kb.workflow.stage(stage).description.strip().rstrip(".")
    first = re.split(r",| and (?=[a-z]+ (?:the|a|an|your|any)\b)|;", desc)[0].strip()
    m = re.match(r"^([A-Z][a-z]+) (the|a|an|your|any) (.+)$", first)
    if not m or len(first.split()) > 12 or not m.group(1).lower().isalpha():
        return ""
    clause = f"{m.group(1).lower()} {m.group(2)} {m.group(3)}"
    heads = {w for w in re.findall(r"[a-z]+", asked.lower()) if len(w) > 3}
    if asked and not heads & set(re.findall(r"[a-z]+", clause.lower())):
        return ""                           # the reason must be about what is asked
    clause = _ROLE.sub(lambda x: "your" if x.group(1) else "you", clause)
    # "verify you with case number and date of birth": the method in the description's
    # shorthand (bare nouns) is no spoken English, and may name a detail not asked now
    clause = re.sub(r" (?:with|by|using) (?!(?:the|a|an|your|their|its)\b)[^,;]+$", "", clause)
    return f"That's so I can {clause}."


# ---- rule-based -----------------------------------------------------------------------------
class RuleAssistant:
    """The offline assistant: phrase banks + the plan + the scenario's facts."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.kinds = {f.key: f.kind for f in scenario.kb.user_facts}
        self.before = ""                # the assistant's previous turn as heard (set per turn)
        self.caller_said: tuple[str, ...] = ()   # the caller's messages so far, as heard

    def respond(self, plan: RoundPlan, rng: random.Random) -> AssistantTurn:
        turn = self.recover(plan, rng) if plan.assistant_mode == "recovery" else self.normal(plan, rng)
        if plan.recovery is not None and plan.recovery.type == "filler":
            return turn                     # the rest of a cut sentence: kept exactly
        ack, content = P.tidy(turn.acknowledgement), P.tidy(turn.content)
        if ack and not ack.rstrip().endswith((".", "!", "?")):
            content = turn.content          # "So, as I was saying, the ..." continues a sentence
        if _THANKS.match(content):          # "Thanks." + "Thank you, Christine." thanks once
            ack = " ".join(p for p in re.split(r"(?<=[.!?])\s+", ack) if not _THANKS_ALONE.match(p))
            ack = re.sub(r",\s*(?:thank you|thanks)(?: so much)?\.$", ".", ack, flags=re.I)
            ack = re.sub(r"^(?:thanks|thank you)(?: so much)?,\s*", "", ack, flags=re.I)
            ack = ack[:1].upper() + ack[1:]     # "Okay, Leslie Heath, thank you." / "Thanks, I've
            # noted Leslie Heath." before "Thank you, Leslie.": thanked once too
        pieces = dedupe_markers([*re.split(r"(?<=[.!?])\s+", ack), content])  # no "Okay. Okay,"
        if ack and len(pieces) >= 2:
            ack, content = " ".join(pieces[:-1]), pieces[-1]
        return AssistantTurn(acknowledgement=ack, content=content)

    # -- normal branch (no interruption awareness) --------------------------------------------
    def normal(self, plan: RoundPlan, rng: random.Random) -> AssistantTurn:
        unit = plan.unit
        assert unit is not None
        ack: list[str] = []
        if plan.assistant_action == "open":
            if not _GREETING.search(unit.text):
                ack.append(P.pick(rng, "assistant", "opening", domain=brand(self.scenario)))
        else:
            info = plan.ack
            if unit.purpose == "readback" and info.get("kind") == "fact":
                info = {**info, "kind": "plain"}   # the value is read back next: no echo first
            said = self._ack(info, rng, upcoming=unit.text or "")
            if _ALL_TAKEN.search(said) and (unit.purpose == "readback" or not info.get("value")):
                # "that's all I need there" neither before a read-back of it nor after a turn
                # that gave nothing ("Then what?")
                said = P.pick(rng, "assistant", "ack_plain")
            ack.append(said)
            if plan.stage_lead and rng.random() < 0.2 and not _DONE_OPEN.match(unit.text or "") \
                    and not re.search(r"\b(?:all I need|everything I needed|sorted|settled|noted)\b",
                                      said, re.I) \
                    and info.get("kind") != "unknown":   # nothing settled: no "that's done"
                ack.append(P.pick(rng, "assistant", "lead_on"))  # not "Moving on. Done. You're ..."
        return AssistantTurn(acknowledgement=P.join(*ack), content=self.content(plan, rng))

    def _ack(self, info: dict[str, str], rng: random.Random, upcoming: str = "") -> str:
        """The acknowledgement of the caller's last message; ``upcoming``: what the turn says
        next (a talking point that greets the caller by name already gets no "Thanks, Leslie")."""
        kind = info.get("kind")
        if kind in ("fact", "plain") and is_distressing(info.get("value", "")):
            return P.pick(rng, "assistant", "ack_sad")
        if kind == "fact":
            key, value = info.get("key", ""), info.get("value", "")
            sensitive = (self.kinds.get(key) in _NO_READBACK
                         or any(w in key for w in _NO_READBACK))
            if is_distressing(value):
                return P.pick(rng, "assistant", "ack_sad")
            if self.kinds.get(key) == "name" and len(value.split()) >= 2 and value[:1].isupper() \
                    and value.split()[0] not in upcoming and rng.random() < 0.6:
                return P.pick(rng, "assistant", "ack_name", first=value.split()[0])
            if value and not sensitive and P.n_words(value) <= 6 and not P.clause(value) and \
                    value not in upcoming and not \
                    re.match(r"(?:for|at|in|on|to|from|with|by|about|since|until|because)\b", value, re.I):
                # ("Thank you, I have for an online order this morning.")
                return P.pick(rng, "assistant", "ack_fact", value=value)
            return P.pick(rng, "assistant", "ack_plain")
        if kind == "hidden":
            return self._take_up(info.get("key", ""), info.get("value", ""), rng)
        if kind == "unknown":       # a detail not at hand, or an answer the caller is not
            return P.pick(rng, "assistant",   # sure of: nothing is settled
                          "ack_unsure" if info.get("value") else "ack_unknown")
        if kind == "accept":
            return P.pick(rng, "assistant", "ack_accept")
        if kind == "plain" and rng.random() < 0.6:
            last = self.caller_said[-1] if self.caller_said else ""
            if _THANKED.search(last) and "?" not in last and P.n_words(last) <= 10:
                return ""       # "Great, I appreciate that." is not met with "Got it, that's
                                # helpful." (thanks for a thank-you; a hand read)
            if _ACK_ONLY.match(last):
                return ""       # "Got it." is not met with "Understood.", nor "Noted." with
                                # "Wonderful." (an acknowledgement of an acknowledgement; a
                                # hand read of seed 2929)
            return P.compose(rng, "assistant", "turn_ack")
        return ""

    def _take_up(self, key: str, value: str, rng: random.Random) -> str:
        """The agent's answer to a circumstance the caller volunteered: the catalogue's own
        responses to that circumstance (what it changes for this call), never the caller's
        words told back; the generic banks only for a fact the catalogue has no response for."""
        own = hidden_acks(self.scenario, key)
        if own:
            # one that names something of the circumstance the caller's last heard turn did not
            # (so it is taken up, not answered with words that were already in the air)
            fact = next((f.value for f in self.scenario.intent.hidden_facts if f.key == key), value)
            said = content_words(fact) - content_words(self.before)
            return rng.choice([a for a in own if content_words(a) & said] or list(own))
        return P.pick(rng, "assistant", "recover_hidden_fact_sad" if is_distressing(value)
                      else "recover_hidden_fact", fact=P.second_person(value))

    @staticmethod
    def _question(keys: tuple[str, ...], rng: random.Random,
                  kinds: dict[str, str] | None = None) -> str:
        """The question for ``keys``: a value with a question of its own (``ask_for.<key>``:
        "What's changed with your family's income?") is asked with it, never by its key read out
        as a noun ("What is the income change?"); one detail of a kind people are asked for in
        their own words (``ask_kind.<kind>``: "When were you born?", "What's the best number to
        reach you on?") often that way; the rest by their labels."""
        banks = P.bank_keys("assistant")
        own_q = [k for k in keys if f"ask_for.{k}" in banks]
        rest = [k for k in keys if k not in own_q]
        qs = []
        kind = (kinds or {}).get(rest[0], "") if len(rest) == 1 else ""
        if kind and f"ask_kind.{kind}" in banks and rng.random() < 0.6:
            lab = P.label(rest[0])
            what = f"{'your' if _own_attribute(lab) else 'the'} {lab}"
            qs.append(P.pick(rng, "assistant", f"ask_kind.{kind}", what=what))
            rest = []
        if rest or not keys:
            labs = [P.label(k) for k in rest]   # "the check number, check amount and payee"
            labels = (", ".join(labs[:-1]) + " and " + labs[-1] if len(labs) > 2
                      else " and ".join(labs)) or "details"
            own = bool(rest) and all(_own_attribute(P.label(k)) for k in rest)
            bank = P.bank("assistant", "ask" if own else "ask_the")
            if len(rest) > 1:                   # "the check number and payee. What is it?"
                bank = tuple(t for t in bank if not re.search(r"\bWhat is it\?", t)) or bank
            qs.append(P.fill(rng.choice(bank), where="assistant.ask", label=labels))
        qs += [rng.choice(P.bank("assistant", f"ask_for.{k}")) for k in own_q]
        qs = [q for q in qs if q]
        low = [q if re.match(r"I\b", q) else q[:1].lower() + q[1:] for q in qs[1:]]
        return " ".join([qs[0]] + [f"And {q}" for q in low])

    def content(self, plan: RoundPlan, rng: random.Random, lead: bool = True) -> str:
        unit = plan.unit
        assert unit is not None
        if unit.text:
            return unit.text
        if unit.kind == "ask":
            q = self._question(unit.keys, rng, self.kinds)
            if not lead:
                return q
            r = rng.random()
            if r < 0.5:                         # a plain question, as agents mostly ask
                return q
            if r < 0.58:                        # ("I need one detail from you" before asking
                return P.join(P.pick(rng, "assistant", "ask_lead"), q)   # it: now and then)
            asked = " and ".join(P.label(k) for k in unit.keys) or "details"
            why = stage_reason(self.scenario, unit.stage, asked) if rng.random() < 0.6 else ""
            return P.join(q, why or P.pick(rng, "assistant", "ask_reason"))
        if unit.kind == "close":
            if "cap" in unit.keys:
                return P.pick(rng, "assistant", "closing_cap")
            return P.compose(rng, "assistant", "wrap")
        if unit.kind == "outcome":
            bank = "outcome_escalated" if "fail" in unit.keys else "outcome_terminated"
            return P.pick(rng, "assistant", bank)
        if unit.kind == "farewell":
            return self.farewell(rng)
        return P.sentence(self.scenario.kb.workflow.stage(unit.stage).description) if unit.stage else ""

    def first_name(self) -> str:
        """The caller's first name once they have said their name on this call, else ''."""
        said = " ".join(self.caller_said)
        for f in self.scenario.kb.user_facts:
            if f.kind == "name" and f.value.split() and f.value in said:
                return f.value.split()[0]
        return ""

    def farewell(self, rng: random.Random) -> str:
        """Goodbye in answer to how the call ended: "You're welcome" to thanks, "glad that's
        sorted" only after a call that closed its request (not after a hand-over to a
        specialist), the caller's first name when they gave it."""
        last = self.caller_said[-1] if self.caller_said else ""
        unfinished = any(x.split(".")[0] in self.before for b in ("outcome_escalated", "outcome_terminated",
                                                                  "closing_cap")
                         for x in P.bank("assistant", b))
        if re.search(r"\b(?:thanks|thank you|cheers|appreciate)\b", last, re.I):
            first = P.pick(rng, "assistant", "bye_thanked")
        elif not unfinished and rng.random() < 0.35:
            first = P.pick(rng, "assistant", "bye_done")
        elif rng.random() < 0.6:
            first = P.pick(rng, "assistant", "bye_plain", brand=brand(self.scenario))
        else:
            first = ""
        name = self.first_name()
        own = f"bye.{self.scenario.domain.name}"
        if name and rng.random() < 0.45:
            core = P.pick(rng, "assistant", "bye_name", first=name)
        elif own in P.bank_keys("assistant") and rng.random() < 0.3:
            core = P.pick(rng, "assistant", own)
        else:
            core = P.pick(rng, "assistant", "bye")
        return P.join(first, core)

    # -- interruption-handling branch ---------------------------------------------------------
    def recover(self, plan: RoundPlan, rng: random.Random) -> AssistantTurn:
        rec = plan.recovery
        assert rec is not None and plan.unit is not None
        d, t = rec.detail, rec.type
        if t == "filler":
            return AssistantTurn(acknowledgement="", content=rec.remainder)
        if t == "impatient":
            ack = P.pick(rng, "assistant", "skip_ack_short") if rng.random() < 0.4 \
                else P.compose(rng, "assistant", "skip_ack")
            return AssistantTurn(acknowledgement=ack, content=self.content(plan, rng, lead=False))
        if t == "pushback":
            kind = d.get("object_kind") or ("requirement" if d.get("label") else "policy")
            phrase = d.get("anchor") or (f"my {d['label']}" if d.get("label") else "this step")
            if kind == "fee" and credited_later(self.scenario, phrase):
                kind = "disputed"           # the call credits it: no "I can't remove it myself"
            return AssistantTurn(acknowledgement="", content=G.recover_pushback(
                rng, kind, phrase, said=rec.planned_text if d.get("variant") == "persist" else "",
                domain=self.scenario.domain.name,
                asked="?" in (self.caller_said[-1] if self.caller_said else "?"),
                heard=rec.heard_text,
                unfit=unfit_alternatives(self.scenario.goal.description)))
        if t == "normal":
            variant = d.get("variant")
            if variant == "hidden" or (variant == "volunteer" and P.clause(d.get("value", ""))):
                address = self._take_up(d.get("key", ""), d.get("value", ""), rng)
            elif variant == "volunteer" and is_distressing(d.get("value", "")):
                address = P.join(P.pick(rng, "assistant", "ack_sad"),
                                 f"I've noted that for the {d['label']}.")
            elif variant == "volunteer":
                address = P.pick(rng, "assistant", "recover_volunteer", value=d["value"], label=d["label"])
            elif variant == "constraint":
                address = P.answer(d, "normal_constraint", rng)
            elif d.get("object_kind"):
                address = G.recover_clarify(rng, d["anchor"])
            else:
                address = P.pick(rng, "assistant", "recover_clarify", anchor=d.get("anchor", "that"))
        elif t == "correction":
            if d["new"] in self.content(plan, random.Random(0)):   # the turn says the new value
                address = P.pick(rng, "assistant", "recover_correction_short")   # itself: once
            else:
                address = P.pick(rng, "assistant", "recover_correction", label=d["label"],
                                 be=P.be_for(d["label"]),
                                 old=d["old"], new=d["new"])
        else:  # topic_switch: address it, steer back (the steer-back is the resume lead)
            address = P.answer(d, "topic_switch", rng)
            topic = goal_topic(self.scenario) if plan.unit.kind != "close" else ""
            back = P.pick(rng, "assistant", "back_to_topic", topic=topic) if topic and \
                rng.random() < 0.6 else P.pick(rng, "assistant", "back_to_task")
            return AssistantTurn(acknowledgement=P.join(address, back), content=self.content(plan, rng))
        lead, content = _resume(rng, self.content(plan, rng),
                                goal_topic(self.scenario) if plan.unit.kind != "close" else "")
        return AssistantTurn(acknowledgement=P.join(address, lead), content=content)


# ---- plan checks (both forms) ---------------------------------------------------------------
def check_turn(plan: RoundPlan, turn: AssistantTurn) -> list[str]:
    """Ways an assistant turn breaks its plan (empty = fine)."""
    errs = []
    if not turn.content.strip():
        errs.append("content is empty")
    found = find_placeholders(turn.text)
    if found:
        errs.append(f"placeholders in the turn: {found[:3]}")
    if plan.interrupt and P.n_words(turn.content) < 2 * EDGE_WORDS + 1:
        errs.append(f"the plan interrupts this turn but its content has {P.n_words(turn.content)} "
                    f"words; it needs at least {2 * EDGE_WORDS + 1} so the cut falls inside it")
    rec = plan.recovery
    if rec is None:
        return errs
    if rec.type == "filler" and (turn.acknowledgement.strip()
                                 or normalise(turn.content) != normalise(rec.remainder)):
        errs.append(f"after a filler the turn must be exactly the unsaid remainder "
                    f"{rec.remainder!r}, with no acknowledgement or repetition")
    if rec.type == "correction" and not contains_phrase(turn.text, rec.detail.get("new", "")):
        errs.append(f"the corrected value {rec.detail.get('new')!r} is not used")
    heard_tail = " ".join(rec.heard_text[rec.content_start:].split()[:8])
    if rec.type == "impatient" and P.n_words(heard_tail) >= 5 and contains_phrase(turn.text, heard_tail):
        errs.append("after an impatient cut-in the turn re-delivers what the caller already heard")
    return errs


# heads of labels a caller has as their own ("your full name", "your date of birth"); any other
# value ("the year the account was opened", "the income change") is asked with "the"
_OWN_HEADS = frozenset("name address email number phone birth pin password passcode id ID "
                       "username postcode zip code digits".split())


def _own_attribute(label: str) -> bool:
    words = label.split()
    return 0 < len(words) <= 4 and words[-1] in _OWN_HEADS and not any(
        w in ("was", "is", "were", "did", "does", "has", "had") for w in words)


_THANKS = re.compile(r"^\W*(?:thanks|thank you)\b", re.I)
_THANKS_ALONE = re.compile(r"^\W*(?:(?:okay|alright|all right|great|perfect|lovely|right|good|got it|"
                           r"brilliant|fine|wonderful|sure|and|yes|noted|understood),?\s+){0,2}"
                           r"(?:thanks|thank you)"
                           r"(?: so much| very much| for that)?(?:,\s+[A-Z][a-z'-]+)?[.!]$", re.I)

