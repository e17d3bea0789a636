"""Round planner: walks the workflow graph and decides, per round, what both sides do.

One round is one assistant message and the user message after it. The planner decides the
assistant's content (a stage's talking point, a question for required info, or a recovery),
what the user does, and whether the user cuts in: the type (from the intent's profile, seeded),
where (``cut_fraction`` of the stage content, resolved to a word by :func:`place_cut`) and the
overlap::

    round 4  stage=verify_identity  assistant: ask date_of_birth
             user: interrupt(pushback, variant=sensitive) cut_fraction=0.6 overlap_ms=320
    round 5  assistant: recover(pushback) -> de-escalate, offer an alternative
             user: accept

A correction is planned only when the user stated a value earlier that the intent corrects.
The conversation ends at a terminal outcome (closing + farewell) or near the message cap.
"""

from __future__ import annotations

import random
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bargein.generators import phrases as P
from bargein.records import INTERRUPTION_TYPES, InterruptionType, Scenario, UserFact

UnitKind = Literal["open", "inform", "ask", "close", "farewell", "outcome"]
UserAction = Literal["answer", "confirm", "choose", "unknown", "ack", "volunteer", "accept",
                     "close", "interrupt", "none"]

MIN_MESSAGES, MAX_MESSAGES = 19, 40
EDGE_WORDS = 3                      # a cut keeps >= 3 content words heard and >= 3 words unheard
OVERLAP_MS = {"filler": (100, 350), "default": (150, 600)}
_CLOSING_TYPES = ("filler", "topic_switch", "normal")
_SYNONYMS = {"phone": ("mobile", "cell", "phone"), "email": ("email", "e-mail"),
             "dob": ("birth",), "birth": ("birth",), "zip": ("zip", "postal")}
_GENERIC = {"number", "name", "date", "code", "info", "details", "detail", "id", "type", "time"}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Unit(_Frozen):
    """A piece of stage content the assistant delivers in one message."""

    kind: UnitKind
    stage: str | None = None
    text: str = ""                  # a talking point (or the resumed text); "" = generate
    keys: tuple[str, ...] = ()      # the fact keys an ``ask`` requests


class Recovery(_Frozen):
    """What the assistant is recovering from (filled in after the interruption happened)."""

    type: InterruptionType
    message_index: int              # the interjection message
    planned_text: str
    heard_text: str
    remainder: str
    interjection: str
    content_start: int = 0          # where the stage content starts in planned_text
    detail: dict[str, str] = {}


class RoundPlan(_Frozen):
    round: int
    stage: str | None
    assistant_mode: Literal["normal", "recovery"] = "normal"
    assistant_action: str           # open | inform | ask | close | farewell | outcome | recover
    unit: Unit | None = None
    stage_lead: bool = False
    ack: dict[str, str] = {}        # acknowledge the previous user message: kind, key, value
    recovery: Recovery | None = None
    user_action: UserAction = "none"
    user_facts: dict[str, str] = {}  # key -> the words the user uses for it
    user_style: str = "neutral"
    user_profile: str = ""
    interrupt: bool = False
    type: InterruptionType | None = None
    detail: dict[str, str] = {}     # type-specific: variant, key, label, old, new, pair
    cut_fraction: float | None = None
    overlap_ms: int | None = None
    transition: str | None = None   # "kind:source->target" taken before this round
    rationale: str = ""
    assistant_goal: str = ""        # LLM planner's words (empty offline)
    user_goal: str = ""
    message_index: int | None = None    # filled after the round: the assistant message
    cut_word_index: int | None = None


# ---- helpers over the scenario --------------------------------------------------------------
def user_style(profile: str) -> str:
    p = profile.lower()
    if any(w in p for w in ("rushed", "impatien", "time-pressed", "short on patience", "hurry")):
        return "terse"
    if any(w in p for w in ("skeptic", "suspic", "privacy", "argument", "disput", "frustrat")):
        return "skeptical"
    if any(w in p for w in ("polite", "anxious", "first-timer", "friendly")):
        return "polite"
    return "neutral"


def spoken(fact: UserFact, value: str | None = None) -> str:
    """How the user says a fact's value (its spoken form when it is the KB value)."""
    v = fact.value if value is None else value
    return fact.spoken if (v == fact.value and fact.spoken) else v


def asked_keys(text: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The required-info keys a question mentions, in the order it mentions them."""
    low = text.lower()
    found = []
    for k in keys:
        label = P.label(k)
        toks = [t for t in label.split() if t not in _GENERIC]
        alts = [label] + [s for t in toks for s in _SYNONYMS.get(t, (t,))]
        pos = [low.find(a) for a in alts if re.search(rf"\b{re.escape(a)}", low)]
        if pos:
            found.append((min(pos), k))
    return tuple(k for _, k in sorted(found))


def _produced(scenario: Scenario) -> set[str]:
    return {k for s in scenario.kb.workflow.stages for k in getattr(s, "produces", ())}


def stage_units(scenario: Scenario, stage_name: str) -> list[Unit]:
    """Talking points in order, then questions for required info no talking point asks."""
    st = scenario.kb.workflow.stage(stage_name)
    askable = tuple(k for k in st.required_info if k not in _produced(scenario))
    units, covered = [], set()
    for tp in tuple(getattr(st, "talking_points", ()) or ()):
        if "anything else" in tp.lower():
            units.append(Unit(kind="close", stage=stage_name, text=tp))
        elif "?" in tp:
            keys = tuple(k for k in asked_keys(tp, askable) if k not in covered)
            covered |= set(keys)
            units.append(Unit(kind="ask", stage=stage_name, text=tp, keys=keys))
        else:
            units.append(Unit(kind="inform", stage=stage_name, text=tp))
    for k in askable:
        if k not in covered:
            units.append(Unit(kind="ask", stage=stage_name, keys=(k,)))
    if not units:
        units.append(Unit(kind="inform", stage=stage_name, text=P.sentence(st.description)))
    return units


def choose_option(question: str, rng: random.Random) -> str | None:
    """One option of an 'A, B, or C?' question, as the user would name it."""
    clause = re.split(r"[.?!]\s+", question.strip())[-1].rstrip("?").strip()
    if " or " not in clause:
        return None
    head, _, last = clause.rpartition(" or ")
    parts = [p.strip() for p in head.split(",") if p.strip()] + [last.strip()]
    if len(parts) < 2:
        return None
    parts[0] = parts[0].split()[-1] if len(parts[0].split()) > 4 else parts[0]
    opts = [re.sub(r"^(?:more|a|an|the|some)\s+", "", p) for p in parts if 0 < len(p.split()) <= 5]
    return rng.choice(opts) if opts else None


# ---- state ----------------------------------------------------------------------------------
@dataclass
class ConversationState:
    """Everything the planner tracks between rounds (mutable; internal to one simulation)."""

    scenario: Scenario
    target_messages: int
    round: int = 0
    n_messages: int = 0
    stage: str | None = None
    units: deque = field(default_factory=deque)
    visits: dict[str, int] = field(default_factory=dict)
    phase: str = "workflow"          # workflow | closing | farewell | done
    outcome: str | None = None
    terminal_kind: str | None = None
    close_offered: bool = False
    stated: dict[str, str] = field(default_factory=dict)     # key -> words the user used
    corrected: set[str] = field(default_factory=set)
    unknown_in_stage: bool = False
    used_pairs: dict[str, set[int]] = field(default_factory=dict)
    last_user: dict[str, str] = field(default_factory=dict)  # ack info for the next message
    pending: Recovery | None = None                          # an interruption to recover from
    pending_unit: Unit | None = None                         # the unit that was cut
    fast: bool = False

    @property
    def facts(self) -> dict[str, UserFact]:
        out = {f.key: f for f in self.scenario.kb.user_facts}
        out.update({f.key: f for f in self.scenario.intent.hidden_facts})
        return out

    def correction(self, key: str):
        return next((c for c in self.scenario.intent.corrections if c.key == key), None)

    def value_for(self, key: str) -> str | None:
        """The words the user uses for ``key`` now (the first value of a planned correction)."""
        if key in self.stated:
            return self.stated[key]
        fact = self.facts.get(key)
        if fact is None:
            return None
        corr = self.correction(key)
        if corr is not None and key not in self.corrected:
            return corr.first_value
        return spoken(fact)

    def correctable(self) -> list[str]:
        return [c.key for c in self.scenario.intent.corrections
                if self.stated.get(c.key) == c.first_value and c.key not in self.corrected]

    def free_pairs(self, bank: str) -> list[int]:
        used = self.used_pairs.get(bank, set())
        return [i for i in range(len(P.bank("pairs", bank))) if i not in used]

    def volunteerable(self) -> list[str]:
        """Facts the user may offer unasked: ``provides`` keys and hidden facts not yet given."""
        intent = self.scenario.intent
        keys = list(intent.provides) + [f.key for f in intent.hidden_facts]
        facts = self.facts
        return [k for k in dict.fromkeys(keys) if k in facts and k not in self.stated]

    def fill_values(self, text: str) -> str:
        """Talking points say the values the user actually gave (after corrections)."""
        for key in sorted(self.corrected):
            c, fact = self.correction(key), self.facts.get(key)
            if c is None:
                continue
            olds = [c.first_value] + ([fact.spoken] if fact and fact.spoken and
                                      fact.value == c.first_value else [])
            for old in olds:
                text = text.replace(old, c.corrected_value)
        return text


# ---- the rule-based planner -----------------------------------------------------------------
class RulePlanner:
    """Deterministic given the RNG; walks the workflow with next/skip/fail/terminate."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.wf = scenario.kb.workflow
        self.out: dict[str, list] = {}
        for tr in self.wf.transitions:
            self.out.setdefault(tr.source, []).append(tr)
        self._units = {s: stage_units(scenario, s) for s in self.wf.stage_names}

    def new_state(self, rng: random.Random) -> ConversationState:
        target = int(round(rng.triangular(22, MAX_MESSAGES, 33)))
        st = ConversationState(scenario=self.scenario, target_messages=target)
        self._enter(st, self.wf.start)
        return st

    # -- workflow walk ------------------------------------------------------------------------
    def _enter(self, st: ConversationState, stage: str) -> None:
        st.stage = stage
        st.visits[stage] = st.visits.get(stage, 0) + 1
        st.units = deque(u for u in self._units[stage]
                         if not (u.kind == "ask" and not u.text and set(u.keys) <= set(st.stated)))
        st.unknown_in_stage = False

    def _end(self, st: ConversationState, outcome: str | None, kind: str) -> None:
        st.outcome = outcome or (self.wf.terminals[0] if self.wf.terminals else "resolved")
        st.terminal_kind, st.stage, st.units = kind, None, deque()

    def _leave(self, st: ConversationState, rng: random.Random) -> str:
        """Take a transition out of the current stage; returns 'kind:source->target'."""
        src = st.stage
        trs = self.out.get(src, [])
        by_kind = {k: [t for t in trs if t.kind == k] for k in ("next", "skip", "fail", "terminate")}
        if st.unknown_in_stage and by_kind["fail"]:
            choice = by_kind["fail"][0]
        elif by_kind["skip"] and rng.random() < (0.5 if st.fast else 0.15):
            choice = rng.choice(by_kind["skip"])
        else:
            choice = (by_kind["next"] or by_kind["skip"] or by_kind["terminate"]
                      or by_kind["fail"] or [None])[0]
        if choice is None:
            self._end(st, None, "next")
            return f"end:{src}"
        target = choice.target
        if target in self.wf.stage_names and st.visits.get(target, 0) < 2:
            self._enter(st, target)
        else:
            self._end(st, target if target in self.wf.terminals else None, choice.kind)
        return f"{choice.kind}:{src}->{target}"

    def _rounds_left(self, st: ConversationState) -> int:
        return (min(st.target_messages, MAX_MESSAGES) - st.n_messages - 1) // 2

    def _next_unit(self, st: ConversationState, rng: random.Random) -> tuple[Unit, str | None, bool]:
        transition, lead = None, False
        while st.phase == "workflow":
            left = self._rounds_left(st)
            if st.stage is not None and left <= 2:
                self._end(st, None, "cap")              # the cap is near: wrap up
            if st.stage is None:
                st.phase = "closing"
                break
            st.fast = left <= self._needed(st) + 2
            if st.fast:
                st.units = deque(u for u in st.units if u.kind in ("ask", "close"))
            if st.units:
                u = st.units.popleft()
                if u.kind == "close":
                    st.close_offered = True
                    self._end(st, None, "next")
                    st.phase = "farewell"
                return u.model_copy(update={"text": st.fill_values(u.text)}), transition, lead
            transition = self._leave(st, rng)
            lead = st.stage is not None
        if st.phase == "closing":
            st.phase = "farewell"
            if st.terminal_kind in ("fail", "terminate"):
                return Unit(kind="outcome", keys=(st.terminal_kind,)), transition, False
            if not st.close_offered:
                st.close_offered = True
                return Unit(kind="close"), transition, False
        st.phase = "done"
        return Unit(kind="farewell"), transition, False

    def _needed(self, st: ConversationState) -> int:
        """Rounds still needed on the happy path: remaining questions plus the closing."""
        n = sum(1 for u in st.units if u.kind == "ask")
        nexts = {t.source: t.target for t in self.wf.transitions if t.kind == "next"}
        seen, node = set(), st.stage
        while node in nexts and node not in seen:
            seen.add(node)
            node = nexts[node]
            if node in self._units:
                n += sum(1 for u in self._units[node]
                         if u.kind == "ask" and not set(u.keys) <= set(st.stated))
        return n + 2

    # -- one round ----------------------------------------------------------------------------
    def plan(self, st: ConversationState, rng: random.Random) -> RoundPlan:
        intent = self.scenario.intent
        base = dict(round=st.round, user_style=user_style(intent.profile),
                    user_profile=intent.profile, ack=dict(st.last_user))
        lead = False
        if st.pending is not None:
            unit, transition = self._recovery_unit(st, rng)
            action = "recover"
            base.update(assistant_mode="recovery", recovery=st.pending, ack={})
        else:
            unit, transition, lead = self._next_unit(st, rng)
            action = "open" if st.round == 0 else unit.kind
        if unit.kind == "farewell":
            return RoundPlan(**base, stage=None, assistant_action="farewell", unit=unit,
                             transition=transition, rationale="terminal outcome: say goodbye")
        user_action, facts = self._user_action(st, unit, rng)
        plan = dict(base, stage=unit.stage, assistant_action=action, unit=unit, stage_lead=lead,
                    user_action=user_action, user_facts=facts, transition=transition)
        itype, detail = self._interruption(st, unit, rng)
        if itype is not None:
            lo, hi = OVERLAP_MS.get(itype, OVERLAP_MS["default"])
            plan.update(interrupt=True, type=itype, detail=detail, user_action="interrupt",
                        user_facts={}, cut_fraction=round(rng.uniform(0.2, 0.8), 3),
                        overlap_ms=rng.randint(lo, hi))
        plan["rationale"] = _rationale(plan)
        return RoundPlan(**plan)

    def _recovery_unit(self, st: ConversationState, rng: random.Random) -> tuple[Unit, str | None]:
        rec, cut = st.pending, st.pending_unit
        assert rec is not None and cut is not None
        if rec.type == "filler":
            return cut.model_copy(update={"text": rec.remainder}), None
        if rec.type == "pushback":
            for k in cut.keys:
                st.stated.setdefault(k, "")              # settled by the alternative offered
            return Unit(kind="inform", stage=cut.stage), None
        if rec.type == "impatient":
            st.units = deque(u for u in st.units if u.kind in ("ask", "close"))
            if cut.kind == "ask" and cut.keys:
                return cut.model_copy(update={"text": ""}), None
            unit, transition, _ = self._next_unit(st, rng)
            return unit, transition
        return cut.model_copy(update={"text": resume_text(cut.text, rec)}), None

    def _user_action(self, st: ConversationState, unit: Unit, rng: random.Random):
        if unit.kind == "close":
            return "close", {}
        if unit.kind == "outcome":
            return "ack", {}
        if st.pending is not None and st.pending.type == "pushback":
            return "accept", {}
        if unit.kind == "ask" and unit.keys:
            values = {k: st.value_for(k) or "" for k in unit.keys}
            if not any(values.values()):
                return "unknown", values
            facts = st.facts
            if unit.text and all(v and facts.get(k) and (facts[k].value in unit.text or
                                 (facts[k].spoken and facts[k].spoken in unit.text))
                                 and v in (facts[k].value, facts[k].spoken)
                                 for k, v in values.items()):
                return "confirm", values
            return "answer", {k: v for k, v in values.items() if v}
        if unit.kind == "ask" and unit.text and choose_option(unit.text, random.Random(0)):
            return "choose", {"option": choose_option(unit.text, rng) or ""}
        vol = [k for k in st.volunteerable() if k in self._upcoming_keys(st)]
        if vol and rng.random() < 0.35:
            k = rng.choice(vol)
            return "volunteer", {k: st.value_for(k) or ""}
        return "ack", {}

    def _upcoming_keys(self, st: ConversationState) -> set[str]:
        keys = {k for u in st.units for k in u.keys}
        if st.stage:
            keys |= set(self.wf.stage(st.stage).required_info)
        return keys | set(self.scenario.intent.provides) | {f.key for f in self.scenario.intent.hidden_facts}

    def _interruption(self, st: ConversationState, unit: Unit, rng: random.Random):
        intent = self.scenario.intent
        if unit.kind in ("farewell", "outcome") or st.n_messages + 5 > MAX_MESSAGES:
            return None, {}
        if P.n_words(unit.text or "x" * 0) and P.n_words(unit.text) < 2 * EDGE_WORDS + 1:
            return None, {}
        if rng.random() >= intent.interruption_rate:
            return None, {}
        feasible = self._feasible(st, unit)
        total = sum(intent.interruption_probs[t] for t in feasible)
        if total <= 0:
            return None, {}
        r, acc, itype = rng.random() * total, 0.0, feasible[-1]
        for t in feasible:
            acc += intent.interruption_probs[t]
            if r < acc:
                itype = t
                break
        return itype, self._detail(st, unit, itype, rng)

    def _feasible(self, st: ConversationState, unit: Unit) -> list[str]:
        closing = unit.kind == "close"
        out = []
        for t in INTERRUPTION_TYPES:
            if closing and t not in _CLOSING_TYPES:
                continue
            if t == "correction" and not st.correctable():
                continue                    # nothing the user said can be corrected (yet)
            if t == "topic_switch" and not st.free_pairs("topic_switch"):
                continue
            out.append(t)
        return out

    def _detail(self, st: ConversationState, unit: Unit, itype: str, rng: random.Random) -> dict[str, str]:
        if itype == "correction":
            key = rng.choice(st.correctable())
            c = st.correction(key)
            return {"key": key, "label": P.label(key), "old": c.first_value, "new": c.corrected_value}
        if itype == "topic_switch":
            i = rng.choice(st.free_pairs("topic_switch"))
            st.used_pairs.setdefault("topic_switch", set()).add(i)
            return {"pair": str(i)}
        if itype == "normal":
            options = [] if unit.kind == "close" else ["clarify"]
            if st.free_pairs("normal_constraint"):
                options += ["constraint"] * 2
            vol = st.volunteerable()
            if vol and unit.kind != "close":
                options += ["volunteer"] * 2
            variant = rng.choice(options or ["clarify"])
            if variant == "constraint":
                i = rng.choice(st.free_pairs("normal_constraint"))
                st.used_pairs.setdefault("normal_constraint", set()).add(i)
                return {"variant": variant, "pair": str(i)}
            if variant == "volunteer":
                k = rng.choice(vol)
                return {"variant": variant, "key": k, "label": P.label(k),
                        "value": st.value_for(k) or ""}
            return {"variant": "clarify"}
        if itype == "pushback":
            variants = ["suspicion", "resistance", "dispute", "disagreement"]
            if unit.kind == "ask" and unit.keys:
                key = unit.keys[0]
                return {"variant": rng.choice(variants + ["sensitive"] * 2), "key": key,
                        "label": P.label(key)}
            return {"variant": rng.choice(variants)}
        return {}

    # -- after the round ----------------------------------------------------------------------
    def apply(self, st: ConversationState, plan: RoundPlan, content: str,
              interruption: Recovery | None) -> None:
        """Update the state with what was actually said in the round."""
        st.round += 1
        st.n_messages += 1 if plan.assistant_action == "farewell" else 2
        st.last_user = {}
        if plan.recovery is not None:
            st.pending, st.pending_unit = None, None
        if interruption is not None:
            d = interruption.detail
            if interruption.type == "correction":
                st.stated[d["key"]] = d["new"]
                st.corrected.add(d["key"])
            if interruption.type == "normal" and d.get("variant") == "volunteer":
                st.stated[d["key"]] = d["value"]
            st.pending = interruption
            st.pending_unit = plan.unit.model_copy(update={"text": content}) if plan.unit else None
            return
        if plan.user_action in ("answer", "confirm", "volunteer"):
            for k, v in plan.user_facts.items():
                st.stated[k] = v
            key = next(iter(plan.user_facts), "")
            st.last_user = {"kind": "fact" if len(plan.user_facts) == 1 else "plain",
                            "key": key, "value": plan.user_facts.get(key, "")}
        elif plan.user_action == "unknown":
            st.unknown_in_stage = True
            for k in plan.user_facts:
                st.stated.setdefault(k, "")
            st.last_user = {"kind": "unknown"}
        elif plan.user_action == "accept":
            st.last_user = {"kind": "accept"}
        elif plan.user_action in ("ack", "choose"):
            st.last_user = {"kind": "plain"}


def resume_text(text: str, rec: Recovery) -> str:
    """A fresh start: the cut content again from the start of the sentence that was cut."""
    local = max(0, len(rec.heard_text) - rec.content_start)
    start = 0
    for i in range(min(local, len(text)) - 1, 0, -1):
        if text[i] == " " and text[i - 1] in ".!?":
            start = i + 1
            break
    return text[start:].strip() or text


def _rationale(plan: dict) -> str:
    u = plan.get("unit")
    what = f"{plan['assistant_action']} {u.kind} {','.join(u.keys)}".strip() if u else plan["assistant_action"]
    s = f"stage {plan.get('stage') or '-'}: assistant {what}; user {plan['user_action']}"
    if plan.get("interrupt"):
        v = plan["detail"].get("variant")
        s += f" ({plan['type']}{', ' + v if v else ''})"
    return s


def place_cut(text: str, content_start: int, fraction: float, rng: random.Random,
              min_word: int = 0) -> int | None:
    """A word index ``k`` inside the content: >= 3 content words heard, >= 3 words unheard.

    Prefers cuts inside a sentence (the heard part does not end with punctuation), nearest to
    ``fraction`` of the content; ``min_word`` forces the heard part to include a given word.
    """
    spans = P.word_spans(text)
    first = next((i for i, (s, _) in enumerate(spans) if s >= content_start), len(spans))
    lo = max(first + EDGE_WORDS, min_word, EDGE_WORDS)
    hi = len(spans) - EDGE_WORDS
    if lo > hi:
        return None
    cands = list(range(lo, hi + 1))
    inner = [k for k in cands if text[spans[k - 1][1] - 1] not in ".!?,:;"]
    cands = inner or cands
    target = first + fraction * (len(spans) - first)
    cands.sort(key=lambda k: (abs(k - target), k))
    return cands[0] if rng.random() < 0.7 or len(cands) == 1 else cands[1]
