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

from bargein.generators import phrases as P
from bargein.verify.text import contains_phrase
from bargein.generators.plan_state import (  # noqa: F401  (re-exported: the planner's vocabulary)
    CLOSING_TYPES, READBACK_KINDS, EDGE_WORDS, ELIGIBLE_SHARE, EXPLANATION_WORDS, MAX_MESSAGES,
    MIN_CUT_WORDS, MIN_MESSAGES, OVERLAP_MS, UNIT_OVERHEAD, ConversationState, Recovery, RoundPlan,
    Unit, UnitKind, UserAction, answer_question, asked_keys, choose_option, question_kind, spoken,
    ACTED, stage_units,
    user_style,
)
from bargein.generators.catalogue_loader import hidden_acks
from bargein.generators.planner_caller import CallerRounds
from bargein.generators.planner_cut import place_cut, resume_text, unheard_question  # noqa: F401
from bargein.generators.planner_text import (  # noqa: F401  (re-exported as above)
    _ACTS, _AMOUNT, _CALLER_TASK, _DONE, _IF_DECLINED, _UNSURE, _drop_declined, leans_back,
    _essential, _offer_taken, _offered_words, _question, _readable, _trimmed, _unheard_price, alternative_step,
    request_topic, short_version,
    drop_unfounded, sensitive_key,
)
from bargein.records import Scenario

# details a check takes that say who to look up, not prove it is them: still asked after a code
_LOOKUP_KINDS = frozenset({"name", "email", "work_email", "phone", "address"})
_PAST = {"send": "sent", "email": "emailed", "text": "texted", "message": "messaged"}
# "I'll send you how to book one", "I'll email you the range once we're done"
_WILL_SEND = re.compile(r"\bI(?:'ll| will) (?:also )?(send|email|text|message) ((?:you )?[^.;?!]+?)"
                        r"(?=,? (?:once|after|afterwards|later|when|as soon as|by|right after|so|"
                        r"before|at the end)\b|[.;?!]|$)", re.I)
# "we can do it after this", "I can pass you to our complaints team at the end of this call"
_LATER = re.compile(r"\b(?:after (?:this|that|we finish|we've finished|we're done)|once we(?:'re| are) "
                    r"done|once we've (?:finished|wrapped up)|at the end of (?:this|the) call|when we "
                    r"wrap up|right after (?:this|we finish|that)|as soon as we(?:'re| are) done|"
                    r"before we hang up|once this is (?:done|sorted)|when we(?:'re| are) (?:done|finished)|"
                    r"once we(?:'re| are) finished|at the end\b(?! of (?:the|this) (?:month|year|"
                    r"week|term|period|day))|afterwards)\b", re.I)


def promises_in(answer: str) -> list[tuple[str, str]]:
    """What an answer to a side remark promises for later: ("send", what) for each thing it
    will send, ("after", sentence) for a request it puts off until the main one is done."""
    out: list[tuple[str, str]] = []
    for sent in re.split(r"(?<=[.?!;])\s+", answer):
        sends = [(m.group(1).lower(), m.group(2).strip()) for m in _WILL_SEND.finditer(sent)
                 if re.match(r"(?:you )?(?:a|an|the|that|this|those|how|what|where|when|its|their|our|your|everything in|"
                             r"today's|[A-Z]?\w+'s)\b",
                             m.group(2).strip(), re.I)    # a thing to send, not a way of
                 and not re.search(r"\b(?:any|anything|updates)\b", m.group(2), re.I)
                 and len(re.sub(r"^you\s+", "", m.group(2).strip()).split()) >= 2]
        #                                                   sending ("I'll send updates by text")
        out += sends
        if not sends and _LATER.search(sent) and not re.search(r"\bif\b", sent, re.I):
            out.append(("after", sent.strip()))
    return out


class RulePlanner(CallerRounds):
    """Deterministic given the RNG; walks the workflow with next/skip/fail/terminate."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.wf = scenario.kb.workflow
        self.out: dict[str, list] = {}
        for tr in self.wf.transitions:
            self.out.setdefault(tr.source, []).append(tr)
        self._units = {s: stage_units(scenario, s) for s in self.wf.stage_names}

    def new_state(self, rng: random.Random) -> ConversationState:
        target = int(round(rng.triangular(30, MAX_MESSAGES, MAX_MESSAGES)))
        st = ConversationState(scenario=self.scenario, target_messages=target)
        self._enter(st, self.wf.start, rng)
        return st

    # -- workflow walk ------------------------------------------------------------------------
    def _enter(self, st: ConversationState, stage: str, rng: random.Random) -> None:
        """Enter a stage; keep as many of its explanations as the length budget allows.

        Questions for required info and the closing are always kept. The remaining rounds are
        shared over the optional units of this and the following stages, a unit costing about
        ``1 / (1 - rate)`` rounds once interruptions and recoveries are counted.
        """
        st.stage = stage
        st.visits[stage] = st.visits.get(stage, 0) + 1
        known = set(st.stated) | st.read_back
        units = [u for u in self._units[stage]
                 if not (u.kind == "ask" and not u.text and set(u.keys) <= known)]
        optional = [i for i, u in enumerate(units) if not _essential(u)]
        later = self._later_units(stage)
        n_opt_later = sum(1 for u in later if not _essential(u))
        cost = 1 / (1 - UNIT_OVERHEAD * self.scenario.intent.interruption_rate)
        rounds = self._rounds_left(st) - 1.5
        budget = rounds / cost - sum(1 for u in units + later if _essential(u))
        share = budget * len(optional) / max(1, len(optional) + n_opt_later)
        k = max(0, min(len(optional), int(share + rng.random())))
        keep = set(sorted(rng.sample(optional, k)))
        if optional and not any(_essential(u) and u.kind != "close" for u in units) and not keep:
            keep = {optional[0]}            # the stage's own work is done, however short the call
        for i in sorted(keep, reverse=True):   # "If that doesn't suit, ..." needs the offer before it
            while i > 0 and leans_back(units[i].text or "") and i - 1 not in keep:
                keep.add(i - 1)
                i -= 1
        st.units = deque(u for i, u in enumerate(units) if _essential(u) or i in keep)
        st.unknown_in_stage = False

    def _later_units(self, stage: str) -> list[Unit]:
        out, seen, node = [], {stage}, stage
        nexts = {t.source: t.target for t in self.wf.transitions if t.kind == "next"}
        while node in nexts and nexts[node] in self._units and nexts[node] not in seen:
            node = nexts[node]
            seen.add(node)
            out += self._units[node]
        return out

    def _end(self, st: ConversationState, outcome: str | None, kind: str) -> None:
        st.outcome = None if kind == "cap" else (
            outcome or (self.wf.terminals[0] if self.wf.terminals else "resolved"))
        if st.outcome == "resolved" and not (self._last_stage(st.stage) and st.stage in st.delivered):
            # ended early (a termination before the goal's last stage): not resolved
            st.outcome = next((t for t in self.wf.terminals if t != "resolved"), None)
        st.terminal_kind, st.stage, st.units = kind, None, deque()

    def _leave(self, st: ConversationState, rng: random.Random) -> str:
        """Take a transition out of the current stage; returns 'kind:source->target'."""
        src = st.stage
        trs = self.out.get(src, [])
        by_kind = {k: [t for t in trs if t.kind == k] for k in ("next", "skip", "fail", "terminate")}
        if st.unknown_in_stage and by_kind["fail"]:
            choice = by_kind["fail"][0]
        elif [t for t in by_kind["skip"] if t.target not in self.wf.terminals] and st.fast \
                and rng.random() < 0.5:         # a skip to the end would close the request with
            choice = rng.choice([t for t in by_kind["skip"]      # its last steps never done
                                 if t.target not in self.wf.terminals])
        else:
            choice = (by_kind["next"] or by_kind["skip"] or by_kind["terminate"]
                      or by_kind["fail"] or [None])[0]
        if choice is None:
            self._end(st, None, "next")
            return f"end:{src}"
        target = choice.target
        if target in self.wf.stage_names and st.visits.get(target, 0) < 2:
            self._enter(st, target, rng)
        else:
            self._end(st, target if target in self.wf.terminals else None, choice.kind)
        return f"{choice.kind}:{src}->{target}"

    def _rounds_left(self, st: ConversationState) -> int:
        return (min(st.target_messages, MAX_MESSAGES) - st.n_messages - 1) // 2

    def _next_unit(self, st: ConversationState, rng: random.Random) -> tuple[Unit, str | None, bool]:
        transition, lead = None, False
        while st.phase == "workflow":
            left = self._rounds_left(st)
            # the target length only decides how much explanation is kept (fast mode below);
            # the call ends unfinished only at the hard cap, so a call that ran long on
            # interruptions still reaches its goal
            hard_left = (MAX_MESSAGES - st.n_messages - 1) // 2
            if st.stage is not None and hard_left <= 2:      # the cap is near: wrap up
                rest = list(st.units) + self._later_units(st.stage)
                open_q = any(u.kind == "ask" and set(u.keys) - set(st.stated) for u in rest)
                done = (self._last_stage(st.stage) and not open_q and st.stage in st.delivered
                        and not any(u.kind == "ask" for u in st.units))
                self._end(st, None, "next" if done else "cap")
            if st.stage is None:
                st.phase = "closing"
                break
            st.fast = left <= self._needed(st) + 2
            if st.fast:
                st.units = _trimmed(st, lambda u: u.kind == "close" or _essential(u) or (
                    u.kind == "ask" and bool(u.keys or u.purpose)))
            if not st.units and not st.recapped and self._last_stage(st.stage) and \
                    left > self._needed(st) + 3:
                recap = self._recap(st, rng)
                if recap is not None:
                    st.units.append(recap)
            if st.units:
                u = st.units.popleft()
                proof = self._proof_keys(st, u)
                if proof:               # the caller passed the check another way (a code read
                    rest = tuple(k for k in u.keys if k not in proof)     # out): no second proof
                    if not rest:        # of identity after it (a hand read of seed 5151: a code,
                        continue        # then "your date of birth?", then another code offered)
                    u = u.model_copy(update={"text": "", "keys": rest})
                if u.kind == "ask" and u.keys and not u.purpose and all(
                        st.stated.get(k) for k in u.keys):
                    # the caller gave all of it already (volunteered); what the turn reads out
                    # from the record is still said ("I have booking DAWBTD for Gregory Mason."),
                    # or the code first appears later as if the caller had given it
                    told = " ".join(s for s in re.split(r"(?<=[.?!])\s+", u.text or "")
                                    if not s.rstrip().endswith("?") and any(
                                        st.in_text(k, s) and not st.stated.get(k) for k in st.facts))
                    if not told:
                        continue
                    u = u.model_copy(update={"kind": "inform", "text": told, "keys": ()})
                if u.kind == "ask" and u.keys and not u.purpose and any(
                        st.stated.get(k) and k in st.uttered for k in u.keys):
                    # the caller volunteered part of it: ask only for the rest, in a question
                    # of its own (the talking point would ask again for what they gave)
                    u = u.model_copy(update={"text": "", "keys": tuple(
                        k for k in u.keys if not (st.stated.get(k) and k in st.uttered))})
                if u.kind == "close":
                    follow = self._follow_up(st, rng)
                    if follow is not None:          # what a side answer promised, first
                        st.units.appendleft(u)
                        return follow, transition, lead
                    st.delivered.add(st.stage)
                    st.close_offered = True
                    self._end(st, None, "next")
                    st.phase = "farewell"
                text = st.fill_values(u.text)
                if text and not st.agreed and u.kind != "ask" and _ACTS.match(text):
                    # the agent is about to make the change after quoting what it costs: the
                    # caller says yes first (a skipped explanation never skips the decision)
                    st.units.appendleft(u)
                    st.agreed = True
                    topic = next((e["topic"] for e in P.bank("assistant", "goal_topic")
                                  if e.get("goal") == self.scenario.goal.name), "")
                    q = P.pick(rng, "assistant", "consent_topic", topic=topic) if topic \
                        else P.pick(rng, "assistant", "consent")
                    return Unit(kind="ask", stage=st.stage, text=q), transition, lead
                if text and st.declined and not u.purpose:
                    text = _drop_declined(text, st.declined)
                    if not text:
                        continue            # all of it offers what the caller turned down
                if text:
                    text = drop_unfounded(text, st)
                    if not text:
                        continue
                    if not u.purpose:                          # the agent's own words
                        text = P.vary(text, rng, rate=1.0)
                return u.model_copy(update={"text": text}), transition, lead
            transition = self._leave(st, rng)
            lead = st.stage is not None
        if st.phase == "closing":
            follow = self._follow_up(st, rng) if st.terminal_kind not in ("fail", "terminate") \
                else None
            if follow is not None:
                return follow, transition, False
            st.phase = "farewell"
            if st.terminal_kind in ("fail", "terminate"):
                return Unit(kind="outcome", keys=(st.terminal_kind,)), transition, False
            if not st.close_offered:
                st.close_offered = True
                return Unit(kind="close", keys=(st.terminal_kind or "next",)), transition, False
        if st.terminal_kind not in ("fail", "terminate"):
            # a promise made after the close was offered ("a written confirmation will go out
            # once we're done", to a request at the close): kept before the goodbye
            follow = self._follow_up(st, rng)
            if follow is not None:
                return follow, transition, False
        st.phase = "done"
        return Unit(kind="farewell"), transition, False

    def _follow_up(self, st: ConversationState, rng: random.Random) -> Unit | None:
        """Before the call closes, what the answers to side remarks promised: what was to be
        sent is said to be sent ("As promised, I've sent you the steps for the network check."),
        and a request put off until "after this" is offered again, for the caller to take up or
        leave (seen in hand reads: "I can book one after this", then the call closed)."""
        new = [p for p in st.promises[st.followed:] if p not in st.promises[:st.followed]]
        st.followed = len(st.promises)
        if not new:
            return None
        by_verb: dict[str, list[str]] = {}
        for verb, obj in dict.fromkeys(p for p in new if p[0] in _PAST):
            by_verb.setdefault(verb, []).append(re.sub(r"^you\s+", "", obj.rstrip(".")))
        # one sentence per verb ("I've sent you the unlock form and the current offer."), never
        # "I've sent you the X. I've sent you the Y."
        sent = [f"I've {_PAST[verb]} {'you ' if any(o for verb2, o in new if verb2 == verb and o.startswith('you ')) else ''}"
                f"{' and '.join(objs[:2])}" for verb, objs in by_verb.items()][:2]
        text = P.join(P.pick(rng, "assistant", "promise_kept_lead"), ", and ".join(sent) + ".") \
            if sent else ""
        if any(kind == "after" for kind, _ in new):
            # the put-off requests by name ("getting a paper copy of your bill"), never two of
            # them as one "other question" (a hand read); a sentence when no name was found
            names = list(dict.fromkeys(o for k, o in new if k == "after" and o[-1:] not in ".?!"))
            ask = P.pick(rng, "assistant", "promise_after_named",
                         request=" and ".join(names[:2])) if names and len(names) == len(
                [1 for k, _ in new if k == "after"]) else P.pick(rng, "assistant", "promise_after")
            return Unit(kind="ask", stage=st.stage, purpose="follow_up", text=P.join(text, ask))
        return Unit(kind="inform", stage=st.stage, purpose="follow_up", text=text)

    @staticmethod
    def _proof_keys(st: ConversationState, u: Unit) -> frozenset[str]:
        """The details ``u`` asks for that only prove who the caller is (a date of birth, card
        digits, a member number), once an accepted alternative passed this check stage."""
        if not st.alt_verified or u.stage != st.alt_verified or u.kind != "ask" or u.purpose:
            return frozenset()
        facts = st.facts
        # (a value the turn reads out from the record is no proof asked of the caller: "I have
        # booking DAWBTD for Gregory Mason" stays, or the code first appears as the caller's)
        return frozenset(k for k in u.keys if k in st.checked_keys() and not st.stated.get(k)
                         and k in facts and facts[k].kind not in _LOOKUP_KINDS
                         and not (u.text and st.in_text(k, u.text)))

    def _last_stage(self, stage: str | None) -> bool:
        return any(t.kind == "next" and t.target in self.wf.terminals for t in self.out.get(stage or "", []))

    def _recap(self, st: ConversationState, rng: random.Random) -> Unit | None:
        """A recap of up to three non-sensitive values the user gave (once, before closing)."""
        st.recapped = True
        facts = st.facts
        keys = [k for k, v in st.stated.items() if v and k in facts and facts[k].kind in READBACK_KINDS
                and not st.is_hidden(k) and _readable(v)]
        if len(keys) < 2:
            return None
        keys = rng.sample(keys, min(3, len(keys)))
        items = [f"your {P.label(k)} is {st.stated[k]}" for k in keys]
        joined = ", ".join(items[:-1]) + f", and {items[-1]}"
        text = P.pick(rng, "assistant", "recap", items=joined)
        return Unit(kind="ask", stage=st.stage, text=text, keys=tuple(keys), purpose="recap")

    def _readback(self, st: ConversationState, plan: RoundPlan, rng: random.Random) -> None:
        """After an answer, read a value back when the length budget allows (voice guideline)."""
        facts = st.facts
        keys = [k for k, v in plan.user_facts.items() if v and k in facts
                and facts[k].kind in READBACK_KINDS and _readable(st.stated.get(k, ""))]
        if not keys or self._rounds_left(st) <= self._needed(st) + 4 or rng.random() < 0.25:
            return
        k = keys[0]
        text = P.pick(rng, "assistant", "readback", value=st.stated[k], label=P.label(k))
        st.units.appendleft(Unit(kind="ask", stage=st.stage, text=text, keys=(k,), purpose="readback"))

    def _needed(self, st: ConversationState) -> int:
        """Rounds the rest of the happy path needs in fast mode (questions only), with the
        expected interruptions, plus the closing."""
        def essential(u: Unit) -> bool:
            # what fast mode keeps (a question for required info, a price, a path choice, the
            # report of the work done): every one of them still costs a round
            if u.kind == "close" and not u.keys:
                return False            # the closing is counted below
            return _essential(u) and not (u.kind == "ask" and bool(u.keys) and not u.text
                                          and set(u.keys) <= set(st.stated))
        n = sum(1 for u in st.units if essential(u))
        if st.stage not in st.delivered and st.units and not n:
            n = 1                           # fast mode keeps a stage's first statement
        nexts = {t.source: t.target for t in self.wf.transitions if t.kind == "next"}
        seen, node = set(), st.stage
        while node in nexts and node not in seen:
            seen.add(node)
            node = nexts[node]
            if node in self._units:         # every stage on the way says at least one thing
                n += max(1, sum(1 for u in self._units[node] if essential(u)))
        return int(n * (1 + self.scenario.intent.interruption_rate) + 0.5) + 2

    # -- one round ----------------------------------------------------------------------------
    def plan(self, st: ConversationState, rng: random.Random,
             exclude: frozenset[str] = frozenset()) -> RoundPlan:
        """The next round. ``exclude``: interruption types a failed attempt of this round used."""
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
        st.current = unit.text or ""        # what this turn says counts for "until" conditions
        user_action, facts = self._user_action(st, unit, rng)
        plan = dict(base, stage=unit.stage, assistant_action=action, unit=unit, stage_lead=lead,
                    user_action=user_action, user_facts=facts, transition=transition)
        if user_action == "volunteer" and any(st.is_hidden(k) for k in facts):
            plan["detail"] = {"hidden": "1"}
            answered = answer_question(unit.text, random.Random(0)) if unit.text else None
            if answered and answered[0] == "reason":
                plan["detail"]["variant"] = "reason"     # the hidden fact is the reason asked for
        itype, detail = self._interruption(st, unit, rng, exclude)
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
            named = [k for k in cut.keys if P.label(k).lower() in st.dispute.lower()]
            for k in named or cut.keys:                  # settled by the alternative offered;
                st.stated.setdefault(k, "")              # the rest is still asked for
            return Unit(kind="inform", stage=cut.stage, purpose="deescalate"), None
        if rec.type == "impatient":
            st.units = _trimmed(st, lambda u: u.kind in ("ask", "close") or bool(
                u.text and (_CALLER_TASK.search(u.text) or _DONE.search(u.text))))
            # a payment link is not skipped, nor the report that the step was done ("I've
            # filed the claim"): skipping ahead skips explanation, never the work
            if cut.kind == "ask" and cut.keys and set(cut.keys) <= st.read_back:   # read back:
                for k in cut.keys:                                    # impatience says "yes"
                    st.stated.setdefault(k, st.value_for(k) or "")
                unit, transition, _ = self._next_unit(st, rng)
                return unit, transition
            if cut.kind == "ask" and cut.keys and not cut.purpose:
                q = _question(cut.text)        # re-ask only the question, never what was heard
                heard_local = rec.heard_text[rec.content_start:]
                fresh = q and cut.text.find(q) >= len(heard_local)
                return cut.model_copy(update={"text": q if fresh else ""}), None
            # a question still unheard (an offer, a yes-no check) is asked, never skipped past;
            # one heard but not answered yet (the caller cut in after it) is asked again, briefly
            q = unheard_question(cut.text, len(rec.heard_text) - rec.content_start)
            if not q and cut.kind == "ask" and not cut.keys and not cut.purpose:
                q = _question(cut.text)
                m = re.search(r"\b(?:would|could|can|do|does|did|is|am|are|shall|should|will|may|what|"
                              r"which|where|when|why|how|who)\b", q, re.I)
                q = P.sentence(q[m.start():]) if m else q     # the question itself, no preamble
                tail = " ".join(rec.heard_text[rec.content_start:].split()[:8])
                if P.n_words(tail) >= 5 and contains_phrase(q, tail):
                    q = ""                  # would say again what was just heard
            if q:
                return cut.model_copy(update={"text": q, "kind": "ask"}), None
            unit, transition, _ = self._next_unit(st, rng)
            if unit.text and not unit.purpose:      # the short version the caller asked for
                unit = unit.model_copy(update={"text": short_version(unit.text)})
            price = _unheard_price(cut.text, len(rec.heard_text) - rec.content_start)
            at = cut.text.find(price) if price else -1
            if 0 <= at < len(rec.heard_text) - rec.content_start:
                # the cut fell inside the sentence: its amount clause alone, never its heard
                # start again ("After the insurer paid most of it, | $328.38 is left ...")
                amount = _AMOUNT.search(price)
                comma = price.rfind(", ", 0, amount.start()) if amount else -1
                price = P.sentence(price[comma + 2:]) if comma >= 0 else ""
            if price and unit.text and unit.kind not in ("close", "farewell", "outcome") \
                    and price not in unit.text:
                # the short version still says what it costs: nobody pays an amount never heard
                unit = unit.model_copy(update={"text": P.join(price, unit.text)})
            return unit, transition
        if rec.type == "correction" and cut.purpose in ("readback", "recap") and \
                rec.detail.get("key") in cut.keys and len(cut.keys) == 1:
            # the read-back the caller corrected: the recovery says the new value already ("your
            # admin email is now X"), so reading it back again would say it twice
            unit, transition, _ = self._next_unit(st, rng)
            return unit, transition
        again = st.fill_values(resume_text(cut.text, rec))   # started afresh, in other words
        if cut.purpose == "deescalate" and again == cut.text.strip():
            # "Honestly, fair question ..." is not said twice: the restart keeps the substance
            first = re.match(r"[^.?!]*[.?!]\s+", again)
            if first and again[first.end():].strip():
                again = again[first.end():]
        return cut.model_copy(update={"text": P.vary(again, rng, fresh=True)}), None

    # -- after the round ----------------------------------------------------------------------
    def apply(self, st: ConversationState, plan: RoundPlan, content: str,
              interruption: Recovery | None, rng: random.Random | None = None,
              text: str = "") -> None:
        """Update the state with what was actually said in the round (``content``: the turn's
        content; ``text``: the whole message, its acknowledgement and answers too)."""
        rng = rng or random.Random(st.round)
        st.round += 1
        st.n_messages += 1 if plan.assistant_action == "farewell" else 2
        if plan.stage and plan.unit is not None and plan.unit.kind != "farewell":
            st.delivered.add(plan.stage)
        st.last_user = {}
        heard = interruption.heard_text if interruption is not None else content
        st.said += " " + heard
        if plan.stage and ACTED.search(heard):     # the step's work was reported done with them
            st.acted |= set(self.wf.stage(plan.stage).required_info)
        rec = plan.recovery
        # a take-up of a circumstance the caller volunteered promises too ("I'll send everything
        # in writing so you can share it"): kept like a side answer's (an LLM-path call was
        # discarded for it)
        whole = interruption.heard_text if interruption is not None else (text or content)
        for f in self.scenario.intent.hidden_facts:
            for ack in hidden_acks(self.scenario, f.key):
                if ack in whole:
                    st.promises += promises_in(ack)
        if rec is not None and rec.type in ("topic_switch", "normal") and rec.detail.get("pair"):
            kind = "topic_switch" if rec.type == "topic_switch" else "normal_constraint"
            said = P.answers(P.pair(rec.detail, kind))
            whole = interruption.heard_text if interruption is not None else (text or content)
            if any(a in whole for a in said):   # (the pair's own wording says what is promised;
                topic = request_topic(P.pair(rec.detail, kind).get("user", ""))   # the others say
                st.promises += [("after", topic) if k == "after" and topic else (k, o)   # the same)
                                for k, o in promises_in(said[0])]
        if plan.unit is not None and plan.unit.kind != "ask" and _unheard_price(heard, 0):
            st.agreed = False               # a price the caller has not said yes to yet
        if plan.unit is not None and plan.unit.kind == "ask" and plan.unit.text and \
                plan.user_action == "choose" and _offer_taken(plan):
            st.agreed = True
        if plan.unit is not None and plan.unit.text and plan.user_action == "choose" and \
                not _offer_taken(plan):
            st.declined |= _offered_words(plan.unit.text)
        for k in st.facts:
            if st.in_text(k, content):
                st.read_back.add(k)
                if k not in st.uttered:     # the records said it first: the caller cannot
                    st.system_first.add(k)  # later state or correct it as their own
        if plan.recovery is not None:
            st.pending, st.pending_unit = None, None
        st.chain = st.chain + 1 if interruption is not None else 0
        if interruption is not None:
            st.last_cut_round, st.last_cut_type = st.round, interruption.type
            st.impatient_n += interruption.type == "impatient"
            d = interruption.detail
            if interruption.type == "pushback":
                st.persisted = st.persisted + 1 if d.get("variant") == "persist" else 0
            if interruption.type == "pushback" and d.get("variant") != "persist":
                anchor = d.get("anchor") or (f"my {d['label']}" if d.get("label") else "")
                st.dispute = "" if anchor == "that" else anchor
                st.dispute_kind = d.get("object_kind") or ("requirement" if d.get("label") else "policy")
                st.disputed_ask = plan.unit.keys if plan.unit is not None and plan.unit.kind == "ask" \
                    else ()
            if interruption.type == "normal" and d.get("variant") == "clarify":
                st.clarified += 1
            if interruption.type == "correction":
                st.stated[d["key"]] = d["new"]
                st.corrected.add(d["key"])
            if interruption.type == "normal" and d.get("variant") in ("volunteer", "hidden"):
                st.stated[d["key"]] = d["value"]
                st.uttered.add(d["key"])
            st.pending = interruption
            st.pending_unit = plan.unit.model_copy(update={"text": content}) if plan.unit else None
            return
        reply = plan.user_facts.get("reply", "") if plan.user_action == "choose" else ""
        if "?" in content and plan.user_action in ("confirm", "choose", "ack") and not re.search(
                r"\b(?:no|not|don't|rather|instead|neither)\b", reply, re.I):
            # "Is that right?" -- "yes, that's mine": a value the caller accepted as read out is
            # never "sorry, my mistake, it's ..." a turn later
            st.confirmed.update(k for k in st.facts if st.in_text(k, content))
        if plan.user_action == "confirm" and "?" in content:
            while st.units and _IF_DECLINED.match(st.units[0].text or ""):
                st.units.popleft()  # "Would that suit you?" -- "yes": "If that doesn't suit" is moot
        if plan.user_action in ("answer", "confirm", "volunteer"):
            for k, v in plan.user_facts.items():
                st.stated[k] = v
                if plan.user_action != "confirm":
                    st.uttered.add(k)
            if plan.user_action == "answer" and plan.unit and st.stage == plan.unit.stage:
                self._readback(st, plan, rng)
            key = next(iter(plan.user_facts), "")
            one = len(plan.user_facts) == 1 and plan.user_action != "confirm"   # a confirmation
            # adds nothing to note down; several facts: their words, for the tone
            st.last_user = {"kind": "fact" if one else "plain", "key": key,
                            "value": plan.user_facts.get(key, "") if one
                            else " ".join(plan.user_facts.values())}
            hidden = [k for k in plan.user_facts if st.is_hidden(k)]
            if plan.user_action == "volunteer" and hidden:
                st.last_user = {"kind": "hidden", "key": hidden[0],
                                "value": plan.user_facts[hidden[0]]}
        elif plan.user_action == "unknown":
            st.unknown_in_stage = True
            for k in plan.user_facts:
                st.stated.setdefault(k, "")
            st.last_user = {"kind": "unknown"}
        elif plan.user_action == "accept":
            st.last_user = {"kind": "accept"}
            deescalated = plan.unit is not None and plan.unit.purpose == "deescalate"
            step = alternative_step(content) if deescalated else None
            rest = tuple(k for k in st.disputed_ask if k not in st.stated) if deescalated else ()
            facts = st.facts
            # who to look up comes before the code that proves it is them: "a code to the email
            # on file" went out before any name was given (a hand read of seed 6262)
            stage = plan.unit.stage or st.stage
            names = [k for k in (self.wf.stage(stage).required_info if stage else ())
                     if k in facts and facts[k].kind == "name" and k in st.checked_keys()
                     and k not in st.system_first]     # (a name the records read out is known)
            if step is not None and names and not any(st.stated.get(k) for k in names):
                rest = tuple(dict.fromkeys(rest + (names[0],)))   # nobody named yet: who first
            # (only a name: a caller wary of giving their phone is not asked it to get a code)
            lookup_first = any(k in facts and facts[k].kind == "name" and k not in st.system_first
                               for k in rest)
            if rest and not lookup_first:   # what the disputed question asked besides the
                st.units.appendleft(Unit(   # disputed detail is still asked ("your full name
                    kind="ask", stage=plan.unit.stage or st.stage, keys=rest))   # and ...")
            if step is not None:            # "a one-time code instead" -- "fine": the code is
                st.units.appendleft(Unit(
                    kind="ask", stage=plan.unit.stage or st.stage, text=step["assistant"],
                    purpose="alt_step"))
                if set(st.disputed_ask) & st.checked_keys():
                    st.alt_verified = plan.unit.stage or st.stage or ""
            if rest and lookup_first:
                st.units.appendleft(Unit(kind="ask", stage=plan.unit.stage or st.stage, keys=rest))
        elif plan.user_action in ("ack", "choose"):
            st.last_user = {"kind": "plain"}
            if plan.user_action == "choose" and _UNSURE.search(plan.user_facts.get("reply", "")):
                # "I'm not completely sure": nothing was settled, so no "Brilliant, that's
                # sorted" (an unknown with the caller's words: an answer they are unsure of)
                st.last_user = {"kind": "unknown", "value": plan.user_facts["reply"]}
            reply = plan.user_facts.get("reply", "") or plan.user_facts.get("option", "")
            if plan.user_action == "choose" and reply and not re.search(
                    r"\b(?:no|not|don't|rather|instead|neither)\b", reply, re.I):
                while st.units and _IF_DECLINED.match(st.units[0].text or ""):
                    st.units.popleft()      # the offer was taken: "If that doesn't suit, ..." is moot


def _rationale(plan: dict) -> str:
    u = plan.get("unit")
    what = f"{plan['assistant_action']} {u.kind} {','.join(u.keys)}".strip() if u else plan["assistant_action"]
    s = f"stage {plan.get('stage') or '-'}: assistant {what}; user {plan['user_action']}"
    if plan.get("interrupt"):
        v = plan["detail"].get("variant")
        s += f" ({plan['type']}{', ' + v if v else ''})"
    return s
