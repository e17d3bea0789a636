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

from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.verify.text import contains_phrase, content_words
from bargein.generators.plan_state import (  # noqa: F401  (re-exported: the planner's vocabulary)
    CLOSING_TYPES, READBACK_KINDS, EDGE_WORDS, ELIGIBLE_SHARE, EXPLANATION_WORDS, MAX_MESSAGES,
    MIN_CUT_WORDS, MIN_MESSAGES, OVERLAP_MS, UNIT_OVERHEAD, ConversationState, Recovery, RoundPlan,
    Unit, UnitKind, UserAction, answer_question, asked_keys, choose_option, question_kind, spoken,
    stage_units,
    user_style,
)
from bargein.records import INTERRUPTION_TYPES, Scenario
from bargein.spoken import DIGIT_WORDS


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
            while i > 0 and _LEANS_BACK.match(units[i].text or "") and i - 1 not in keep:
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
                if u.kind == "ask" and u.keys and not u.purpose and all(
                        st.stated.get(k) for k in u.keys):
                    continue                    # the caller gave all of it already (volunteered)
                if u.kind == "ask" and u.keys and not u.purpose and u.text and any(
                        st.stated.get(k) and k in st.uttered for k in u.keys):
                    # the caller volunteered part of it: ask only for the rest, in a question
                    # of its own (the talking point would ask again for what they gave)
                    u = u.model_copy(update={"text": "", "keys": tuple(
                        k for k in u.keys if not (st.stated.get(k) and k in st.uttered))})
                if u.kind == "close":
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
                        text = P.vary(text, rng)
                return u.model_copy(update={"text": text}), transition, lead
            transition = self._leave(st, rng)
            lead = st.stage is not None
        if st.phase == "closing":
            st.phase = "farewell"
            if st.terminal_kind in ("fail", "terminate"):
                return Unit(kind="outcome", keys=(st.terminal_kind,)), transition, False
            if not st.close_offered:
                st.close_offered = True
                return Unit(kind="close", keys=(st.terminal_kind or "next",)), transition, False
        st.phase = "done"
        return Unit(kind="farewell"), transition, False

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
        text = P.pick(rng, "assistant", "readback", value=st.stated[k])
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
                m = re.search(r"\b(?:would|could|can|do|does|did|is|are|shall|should|will|may|what|"
                              r"which|where|when|why|how|who)\b", q, re.I)
                q = P.sentence(q[m.start():]) if m else q     # the question itself, no preamble
                tail = " ".join(rec.heard_text[rec.content_start:].split()[:8])
                if P.n_words(tail) >= 5 and contains_phrase(q, tail):
                    q = ""                  # would say again what was just heard
            if q:
                return cut.model_copy(update={"text": q, "kind": "ask"}), None
            unit, transition, _ = self._next_unit(st, rng)
            price = _unheard_price(cut.text, len(rec.heard_text) - rec.content_start)
            if price and unit.text and unit.kind not in ("close", "farewell", "outcome") \
                    and price not in unit.text:
                # the short version still says what it costs: nobody pays an amount never heard
                unit = unit.model_copy(update={"text": P.join(price, unit.text)})
            return unit, transition
        again = st.fill_values(resume_text(cut.text, rec))   # started afresh, in other words
        if cut.purpose == "deescalate" and again == cut.text.strip():
            # "Honestly, fair question ..." is not said twice: the restart keeps the substance
            first = re.match(r"[^.?!]*[.?!]\s+", again)
            if first and again[first.end():].strip():
                again = again[first.end():]
        return cut.model_copy(update={"text": P.vary(again, rng, fresh=True)}), None

    def _user_action(self, st: ConversationState, unit: Unit, rng: random.Random):
        if unit.kind == "close":
            return "close", {}
        if unit.purpose == "alt_step":      # the accepted alternative carried out: code read out
            step = alternative_step(unit.text, side="assistant")
            return "choose", {"reply": _fill_step(step["user"], rng) if step else
                              P.compose(rng, "user", "qa_offer")}
        if unit.kind == "outcome":
            return "ack", {}
        if (st.pending is not None and st.pending.type == "pushback") or unit.purpose == "deescalate":
            return "accept", {}             # the alternative offered (again, after a side turn)
        if unit.purpose in ("readback", "recap"):
            return "confirm", {k: st.value_for(k) or "" for k in unit.keys}
        if unit.kind == "ask" and unit.keys:
            values = {k: st.value_for(k) or "" for k in unit.keys}
            if not any(values.values()):
                return "unknown", values
            facts = st.facts
            full = st.pending.planned_text if st.pending is not None and st.pending.type == "filler" \
                else unit.text                # the rest of a cut turn: the values were in its start
            if full and all(v and facts.get(k) and (
                    v in full or (                           # as said (a corrected value too)
                        (facts[k].value in full or (facts[k].spoken and facts[k].spoken in full))
                        and v in (facts[k].value, facts[k].spoken)))
                    for k, v in values.items()):
                return "confirm", values
            # what the turn itself says is confirmed, not told back: only the rest is answered
            # and a value the records read out first (a re-asked "is that the one?" after a side
            # turn) is the assistant's, not told back as news
            answer = {k: v for k, v in values.items() if v and not (full and st.in_text(k, full))
                      and k not in st.system_first}
            if not answer:
                return "confirm", values
            extra = [k for k in st.volunteerable() if st.correction(k) is not None and k not in answer
                     and not (unit.text and st.in_text(k, unit.text))]
            if extra and rng.random() < 0.4:        # "... and my email is X, in case you need it"
                answer[extra[0]] = st.say(extra[0])
            return "answer", answer
        # the rest of a cut sentence ("or a subscription ...?") is answered as the whole question
        asked = st.pending.planned_text if st.pending is not None and st.pending.type == "filler" \
            else unit.text
        answered = answer_question(asked, rng) if unit.kind == "ask" and unit.text else None
        if answered is not None:        # a question asking for no fact: answered, not acknowledged
            kind, reply = answered
            if kind == "reason":        # "what's prompting the change?": a hidden fact if any
                hidden = [k for k in st.volunteerable() if st.is_hidden(k)
                          and not (unit.text and st.in_text(k, unit.text))]
                if hidden:
                    return "volunteer", {hidden[0]: st.say(hidden[0])}
            if kind == "open" and unit.stage:   # "Where should the transcript go?": what the
                from bargein.verify.objects import system_keys      # stage still needs from them
                held = system_keys(self.scenario)
                need = [k for k in self.wf.stage(unit.stage).required_info
                        if k not in st.stated and k in st.facts and k not in held
                        and k not in st.system_first and st.value_for(k)][:2]
                if need:
                    return "answer", {k: st.value_for(k) or "" for k in need}
            if kind == "which" and reply:
                option = choose_option(unit.text, rng)
                if option:
                    return "choose", {"option": option}
            return "choose", {"reply": reply}
        task = _task_asked(unit.text or "") if unit.kind != "close" else ""
        if task:                        # "read it to me when you see it", "let me know once
            return "choose", {"reply": _fill_step(rng.choice(P.bank("user", f"task_done_{task}")), rng)}
                                        # you've signed": the caller does it and says so
        vol = [k for k in st.volunteerable(self._upcoming_keys(st))   # never what this turn says
               if not (unit.text and st.in_text(k, unit.text))]
        corr = [k for k in vol if st.correction(k) is not None]
        if corr and rng.random() < 0.5:
            return "volunteer", {corr[0]: st.say(corr[0])}
        if vol and rng.random() < 0.35:
            k = rng.choice(vol)
            return "volunteer", {k: st.say(k)}
        return "ack", {}

    def _upcoming_keys(self, st: ConversationState) -> set[str]:
        """Keys asked in the rest of this stage and in the next one."""
        keys = {k for u in st.units for k in u.keys}
        nxt = next((t.target for t in self.out.get(st.stage or "", []) if t.kind == "next"), None)
        if nxt in self._units:
            keys |= {k for u in self._units[nxt] for k in u.keys}
        return keys

    def _interruption(self, st: ConversationState, unit: Unit, rng: random.Random,
                      exclude: frozenset[str] = frozenset()):
        intent = self.scenario.intent
        tail = 5 if st.close_offered or unit.kind == "close" else 7   # recovery, close, farewell
        if unit.kind in ("farewell", "outcome") or st.n_messages + tail > MAX_MESSAGES:
            return None, {}
        if unit.text and P.n_words(unit.text) < MIN_CUT_WORDS:
            return None, {}
        if unit.kind != "close" and st.stage is not None and \
                (MAX_MESSAGES - st.n_messages - 1) // 2 <= self._needed(st) + 1:
            return None, {}                 # the rounds left are the goal's: a cut-in now (and its
                                            # recovery, a held-out pushback's second round) would
                                            # end the call at the cap with the request unfinished
        if not unit.text and unit.kind == "ask" and st.pending is not None:
            return None, {}                 # a bare question after a recovery: too short
        slip = self._slip_read_out(st, unit)
        if slip and "correction" not in exclude and "correction" in self._feasible(st, unit):
            c = st.correction(slip)         # the agent is about to say the right value of one the
            return "correction", {          # caller misstated: they catch their slip now, or the
                "key": slip, "label": P.label(slip),     # call ends with two values for it
                "old": c.first_value, "new": c.corrected_value}
        p = min(0.95, intent.interruption_rate / ELIGIBLE_SHARE)
        if unit.purpose == "alt_step":      # a code being read out: nobody cuts in on that; the
            if rng.random() < p:            # cut is owed to a later turn (the rate holds)
                st.owed += 1
            return None, {}
        resumes = st.pending is not None and st.pending.type in ("normal", "topic_switch",
                                                                  "correction", "filler")
        if st.chain >= 3 or (st.chain >= 2 and resumes):   # two cuts in a row already: a third,
            if rng.random() < p:            # on content said for the third time, reads as a loop; the cut
                st.owed += 1                # is owed to a later turn (the profile's rate holds)
            return None, {}
        feasible = [t for t in self._feasible(st, unit) if t not in exclude]
        if unit.text[:1].islower():         # the rest of a cut sentence: only a backchannel fits
            feasible = [t for t in feasible if t == "filler"]
        if "pushback" in feasible and not self._objectionable(st, unit):
            feasible.remove("pushback")     # nothing in the turn to object to
        probs = intent.interruption_probs
        for t in HELD_TYPES:                # a pushback or a skip the profile drew on a turn that
            if st.held.get(t) and t in feasible and unit.kind != "close":   # could not take
                st.held = {**st.held, t: 0}     # it comes at the first turn that can
                return t, self._detail(st, unit, t, rng)
        pay = st.owed > 0 and (st.chain == 0 or not resumes)
        if rng.random() >= p and not pay:
            return None, {}
        if unit.kind == "close":                # only a few types fit "anything else?": draw
            itype = _draw(rng, list(probs), probs)  # from the full profile, keep those that fit
            if itype not in feasible:
                return None, {}
        else:                                   # an infeasible type (no value to correct yet)
            if not sum(probs[t] for t in feasible):   # goes to the others, as in the paper
                if not pay:                     # no type fits this turn at all: the cut is owed
                    st.owed += 1                # to a later one (the profile's rate holds)
                return None, {}
            # a fresh cut is drawn from the whole profile; a cut owed from an earlier turn is
            # paid with a type that fits this one
            drawn = _draw(rng, feasible if pay else [t for t in probs if t not in exclude], probs)
            if drawn in HELD_TYPES and drawn not in feasible:
                # a caller disposed to object (or to hurry the agent) with nothing to object to
                # here (no fee, requirement or rule; nothing left to skip): the urge is kept for
                # the next turn that holds one, so the profile's share of the type is not all
                # handed to the types that always fit (a nod, a question)
                st.held = {**st.held, drawn: 1}
            if drawn not in feasible:       # the cut itself is owed to a later turn (the
                if not pay:                 # profile's rate holds), not handed to whichever
                    st.owed += 1            # type always fits (a nod on every resumed turn)
                return None, {}
            itype = drawn
        if pay:
            st.owed -= 1
        return itype, self._detail(st, unit, itype, rng)

    def _objectionable(self, st: ConversationState, unit: Unit) -> bool:
        """Whether the turn holds something a caller can object to: an identity detail asked
        for, a fee, requirement or rule stated away from its edges (what the user simulator
        needs to push back on it), or the dispute the caller keeps up."""
        if unit.purpose == "deescalate":
            return True
        if unit.kind == "ask" and any(sensitive_key(st, k) and not (unit.text and st.in_text(k, unit.text))
                                      for k in unit.keys):
            return True                 # (a value read out from the file is confirmed, not given)
        if not unit.text:
            return False
        n = P.n_words(unit.text)
        return any(EDGE_WORDS <= P.n_words(unit.text[:o.end]) <= n - EDGE_WORDS
                   for o in G.objects_in(unit.text, G.PUSHBACK_KINDS))

    @staticmethod
    def _slip_read_out(st: ConversationState, unit: Unit) -> str | None:
        """A value the caller misstated (a planned correction still to come) whose right form
        this turn says: "(816) 506-8377" said, "a reminder text at (816) 560-8377" about to be."""
        if not unit.text:
            return None
        for key in st.correctable():
            c = st.correction(key)
            f = st.facts.get(key)
            right = {c.corrected_value} | ({f.spoken} if f and f.value == c.corrected_value
                                           and f.spoken else set())
            if c.corrected_value != c.first_value and any(v and v in unit.text for v in right):
                return key
        return None

    def _feasible(self, st: ConversationState, unit: Unit) -> list[str]:
        closing = unit.kind == "close"
        out = []
        for t in INTERRUPTION_TYPES:
            if closing and t not in CLOSING_TYPES:
                continue
            if t == "correction" and not st.correctable():
                continue                    # nothing the user said can be corrected (yet)
            if t in ("normal", "topic_switch") and st.pending is not None \
                    and st.pending.type in ("normal", "topic_switch"):
                continue                    # "by the way ..." on the very sentence resumed after
                                            # another "by the way": a run of asides, not a call
            if t == "topic_switch" and (not st.free_pairs("topic_switch") or st.side_asked() >= MAX_SIDE
                                        or (st.pending is not None and st.pending.type == "topic_switch")):
                continue                    # a caller asks one or two things on the side, not a
                                            # run of them, and never one right on another's heels
            if t == "pushback" and unit.purpose == "deescalate" and (not st.dispute or st.persisted >= 1):
                continue                    # nothing specific left to keep objecting to (or the
                                            # caller already held out once: a third round reads
                                            # as a loop, not a conversation)
            if t == "impatient" and (unit.purpose in ("readback", "recap") or (
                    unit.kind == "ask" and unit.keys and unit.text
                    and all(st.in_text(k, unit.text) for k in unit.keys)) or (
                    unit.text and _CONFIRM_Q.search(unit.text)
                    and any(st.in_text(k, unit.text) for k in st.facts))):
                continue                    # a read-back: the value and "is that right?" are
                                            # all that is left, nothing to skip
            if t == "impatient" and self._rounds_left(st) <= 3:
                continue                    # the call is at its length cap: what follows the skip
                                            # is the wrap-up, which would skip the steps left
            if t == "impatient" and (st.impatient_n >= MAX_IMPATIENT or (
                    st.last_cut_type == "impatient" and st.round - st.last_cut_round < IMPATIENT_GAP)):
                continue                    # "skip that" on every other turn reads as a loop: a
                                            # hurried caller skips once, then lets the agent talk
            if t == "impatient" and st.round == 0:
                continue                    # the greeting and first question: nothing heard yet
            if t == "impatient" and st.asked_for_patience():
                continue                    # "please speak slowly", then "skip ahead, please"
            if t == "filler" and st.pending is not None and st.pending.type == "filler":
                continue                    # a nod on the rest of a sentence already nodded at
                                            # chops it into fragments ("with the new plan, |
                                            # the price | ...")
            if t == "filler" and st.round == 0:
                continue                    # "Right, right." to a greeting: nothing said yet to
                                            # acknowledge
            if t == "impatient" and unit.purpose == "deescalate":
                continue                    # the caller asked for this alternative: nothing to skip
            if t == "normal" and unit.purpose == "deescalate":
                continue                    # nor a detail of their own cutting into the answer
                                            # they asked for ("is there another way?" -- "we |
                                            # Sorry, my email is ...")
            if t == "impatient" and unit.text and _OPTIONS.search(unit.text):
                continue                    # the options of a choice the caller is about to
                                            # make ("a replacement, or a refund") are not skipped
            if t == "impatient" and unit.text and (_CALLER_TASK.search(unit.text)
                                                   or _DONE.search(unit.text)
                                                   or _unheard_price(unit.text, 0)):
                continue                    # a step the caller must do now (read a code out, try
                                            # the app again) cannot be skipped; a report of work
                                            # done has nothing left to hurry towards; a price the
                                            # caller will pay is not skipped past
            if t == "impatient" and (P.n_words(unit.text) < EXPLANATION_WORDS if unit.text
                                     else unit.kind == "ask" and st.pending is not None):
                continue                    # nothing long enough to skip
            out.append(t)
        return out

    def _detail(self, st: ConversationState, unit: Unit, itype: str, rng: random.Random) -> dict[str, str]:
        if itype == "correction":
            key = rng.choice(st.correctable())
            c = st.correction(key)
            return {"key": key, "label": P.label(key), "old": c.first_value, "new": c.corrected_value}
        if itype == "topic_switch":
            return st.take_pair("topic_switch", rng)
        if itype == "normal":
            options = [] if unit.kind == "close" or unit.purpose == "deescalate" else ["clarify"]
            if st.free_pairs("normal_constraint"):
                options += ["constraint"] * 2
            low = unit.text.lower()               # unsolicited: never what this turn asks for
            vol = [k for k in st.volunteerable(self._upcoming_keys(st))
                   if k not in unit.keys and P.label(k).lower() not in low
                   and (st.value_for(k) or "\0").lower() not in low]   # not what was just said
            if vol and unit.kind != "close":
                options += ["volunteer"] * 2
            if st.clarified and [o for o in options if o != "clarify"]:
                options = [o for o in options if o != "clarify"]   # "was that the 29th?" once a
                                                                    # call, not again and again
            variant = rng.choice(options or ["clarify"])
            if variant == "constraint":
                return {"variant": variant, **st.take_pair("normal_constraint", rng)}
            if variant == "volunteer":
                k = rng.choice(vol)
                hidden = st.is_hidden(k) or P.clause(st.value_for(k) or "") is not None
                return {"variant": "hidden" if hidden else variant, "key": k,
                        "label": P.label(k), "value": st.say(k)}
            return {"variant": "clarify"}
        if itype == "pushback" and unit.purpose == "deescalate":
            return {"variant": "persist", "anchor": st.dispute or "that",   # same concern again
                    "object_kind": st.dispute_kind}
        if itype == "pushback":
            variants = ["suspicion", "resistance", "dispute", "disagreement"]
            keys = [k for k in unit.keys if sensitive_key(st, k)
                    and not _CLAUSE_LABEL.search(P.label(k))
                    and not (unit.text and st.in_text(k, unit.text))] if unit.kind == "ask" else []
            # (a value the turn reads out from the file is confirmed, not given: no "is it safe
            # to give you my billing address?")
            # ("my year the account was opened" is no phrase anyone says: only a noun phrase)
            if keys:                        # identity details people hesitate to give by phone
                key = keys[0]
                return {"variant": rng.choice(variants + ["sensitive"] * 4), "key": key,
                        "label": P.label(key)}
            return {"variant": rng.choice(variants)}
        return {}

    # -- after the round ----------------------------------------------------------------------
    def apply(self, st: ConversationState, plan: RoundPlan, content: str,
              interruption: Recovery | None, rng: random.Random | None = None) -> None:
        """Update the state with what was actually said in the round."""
        rng = rng or random.Random(st.round)
        st.round += 1
        st.n_messages += 1 if plan.assistant_action == "farewell" else 2
        if plan.stage and plan.unit is not None and plan.unit.kind != "farewell":
            st.delivered.add(plan.stage)
        st.last_user = {}
        heard = interruption.heard_text if interruption is not None else content
        st.said += " " + heard
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
            if rest:                        # what the disputed question asked besides the
                st.units.appendleft(Unit(   # disputed detail is still asked ("your full name
                    kind="ask", stage=plan.unit.stage or st.stage, keys=rest))   # and ...")
            if step is not None:            # "a one-time code instead" -- "fine": the code is
                st.units.appendleft(Unit(
                    kind="ask", stage=plan.unit.stage or st.stage, text=step["assistant"],
                    purpose="alt_step"))
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


def alternative_step(text: str, side: str = "alternative") -> dict[str, str] | None:
    """The step that carries out the identity alternative ``text`` offers (``side``
    "alternative": an offer's wording; "assistant": the step's own question), from the pairs
    bank ``alternative_steps``; None when ``text`` offers none of them."""
    low = text.lower()
    for step in P.bank("pairs", "alternative_steps"):
        probe = step[side].lower()
        if side == "alternative":
            probe = re.sub(r",? instead$", "", probe)
        if probe and probe in low:
            return step
    return None


_TASK_CODE = re.compile(r"\bread (?:it|them|the code|that|the digits) (?:out |back )?(?:to me )?(?:when|once|as soon as)\b|"
                        r"\b(?:read|tell) me the code\b|\bread me the (?:six|four)-digit code\b", re.I)
_TASK_SIGN = re.compile(r"\b(?:let me know|tell me) (?:once|when) you've (?:signed|e-signed)\b", re.I)
_TASK_DONE = re.compile(r"\b(?:let me know|tell me) (?:once|when) (?:you've|you have|it's) "
                        r"(?:entered|added|saved|approved|clicked|opened|done|submitted|uploaded|sent|"
                        r"finished|restarted|signed in)\b", re.I)


def _task_asked(text: str) -> str:
    """What the turn's last sentence asks the caller to do now and report back ("read it to
    me when you see it": ``code``; "let me know once you've signed": ``sign``; "tell me once
    you've entered it": ``done``), or '' (a question is answered as a question)."""
    sents = [x.strip() for x in re.findall(r"[^.?!]+[.?!]*", text) if x.strip()]
    last = sents[-1] if sents else ""
    if not last or last.endswith("?"):
        return ""
    if _TASK_CODE.search(last):
        return "code"
    if _TASK_SIGN.search(last):
        return "sign"
    return "done" if _TASK_DONE.search(last) else ""


def _fill_step(template: str, rng: random.Random) -> str:
    """The caller's answer to an alternative's step, its values drawn from ``rng``."""
    months = ("January February March April May June July August September October November "
              "December").split()
    values = {
        "code6": ", ".join(" ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(3))
                           for _ in range(2)),
        "digits4": " ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(4)),
        "digits5": " ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(5)),
        "digits13": " ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(13)),
        "amount": f"{rng.randrange(25, 180)} dollars",
        "month": rng.choice(months),
        "pet": rng.choice(("Biscuit", "Max", "Luna", "Pepper", "Rocky", "Daisy", "Oscar",
                           "Willow", "Buster", "Mittens")),
        "street": rng.choice(("Maple Avenue", "Hollis Street", "Cedar Lane", "Orchard Road",
                              "Beacon Street", "Linden Drive", "Fairview Road")),
    }
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


_ATTR = re.compile(r"\b(?:as )?you(?:'ve| have)? (?:said|mentioned|told (?:me|us)|described|believe|"
                   r"noted|indicated|explained|reported)\b", re.I)


_READBACK = re.compile(r"\bread(?:ing)? (?:that|it|this|those|them|everything) back\b|\bread back\b|"
                       r"\bjust to (?:double-)?check\b|\bI have .{1,80}?\b(?:written down|down here|noted)\b",
                       re.I)


def _unnamed(text: str, st: ConversationState) -> str:
    """The talking point without the caller's first name as a form of address ("Thanks,
    Katherine.") while the caller has not said their name yet: the agent cannot know it."""
    for k, f in st.facts.items():
        if f.kind != "name" or k in st.uttered or k in st.read_back or not f.value.split():
            continue
        first = re.escape(f.value.split()[0])
        text = re.sub(rf",\s+{first}(?=[.,!?])", "", text)
        text = re.sub(rf"^{first},\s+(\w)", lambda m: m.group(1).upper(), text)
    return text


def drop_unfounded(text: str, st: ConversationState) -> str:
    """The talking point without sentences that attribute to the caller a value they never
    said ("You said it's a grey spinner case" before they described it)."""
    facts = st.facts
    text = _unnamed(text, st)
    out = []
    dropped = readback = False
    for sent in re.split(r"(?<=[.?!])\s+", text):
        if dropped and sent.rstrip().endswith("?") and P.n_words(sent) <= 5:
            dropped = False
            continue                        # "Is that right?" about the attribution just dropped
        dropped = False
        if readback or _READBACK.search(sent):
            # a read-back ("Let me read that back. The account number is X") repeats what the
            # caller said: of a value they never said, it is dropped with its lead-in
            said = [k for k, f in facts.items() if f.value in sent or (f.spoken and f.spoken in sent)]
            if not said and not readback and not sent.rstrip().endswith("?"):
                readback = True             # the values follow in the next sentence
                out.append(sent)
                continue
            readback = False
            if any(k not in st.uttered for k in said):
                if out and _READBACK.search(out[-1]):
                    out.pop()
                dropped = True
                continue
            out.append(sent)
            continue
        if _ATTR.search(sent):
            said = [k for k, f in facts.items() if f.value in sent or (f.spoken and f.spoken in sent)]
            rest = sent
            for k in said:
                rest = rest.replace(facts[k].value, " ").replace(facts[k].spoken or "\0", " ")
            extra = content_words(_ATTR.sub(" ", rest))   # words beyond the values themselves
            if not said or any(k not in st.uttered for k in said) or len(extra) > 1:
                dropped = True
                continue
        out.append(sent)
    return " ".join(out).strip()


_CLAUSE_LABEL = re.compile(r"\b(?:was|is|were|are|has|have|had|did|does|opened|made|started|"
                           r"joined|moved|born)\b", re.I)
# (not a name: a caller who rang to be helped gives it; "why do you need my full name?" and "I
# can use the security questions instead" is no call anyone has)
# (nor a reference code: "why do you need my order number?" is no objection a caller makes)
_SENSITIVE_KINDS = {"date_of_birth", "account", "pin", "phone", "email", "address",
                    "card", "ssn", "work_email"}
_SENSITIVE_WORDS = ("birth", "ssn", "social", "card", "account", "pin", "password", "phone",
                    "email", "address", "member", "policy_number", "passport", "licen")


# a key naming someone else ("family_member", "joint_owner"): their name is no identity detail
# of the caller's ("I'm not comfortable giving out my family member")
_OTHER_PERSON = frozenset("family joint parent child partner recipient dependent other spouse".split())


def sensitive_key(st: ConversationState, key: str) -> bool:
    """An identity or account detail a careful caller may not want to give on a call."""
    f = st.facts.get(key)
    if not f or key.split("_")[0] in _OTHER_PERSON:
        return False
    return f.kind in _SENSITIVE_KINDS or any(w in key for w in _SENSITIVE_WORDS)


def _unheard_price(text: str, heard_chars: int) -> str:
    """The first sentence the caller did not hear in full that states an amount they will pay
    ("The fare difference is $195.24 per passenger, including taxes."), or ''."""
    for m in re.finditer(r"\S(?:.*?)(?:[.?!](?=\s|$)|$)", text):
        sent = m.group(0).strip()
        amount = _AMOUNT.search(m.group(0))
        if sent and amount and m.start() + amount.start() >= heard_chars and not sent.endswith("?") \
                and re.search(r"\b(?:fee|cost|costs|charge|difference|price|total|pay|due|is)\b", sent, re.I):
            return sent
    return ""


def _question(text: str) -> str:
    """The last question sentence of a talking point ('' when it has none worth keeping)."""
    qs = [q.strip() for q in re.findall(r"[^.?!]*\?", text)]
    return qs[-1] if qs and P.n_words(qs[-1]) >= 4 else ""


def unheard_question(text: str, heard_chars: int) -> str:
    """The last question of ``text`` that starts after the first ``heard_chars`` characters;
    '' when every question was heard or there is none."""
    sents = [(m.start(), m.end()) for m in re.finditer(r"[^.?!]+[.?!]+", text)]
    qs = [text[a:b].strip() for a, b in sents if text[a:b].rstrip().endswith("?") and a >= heard_chars]
    return qs[-1] if qs else ""


# a question asking the caller to confirm what the turn reads out ("So that's Portugal and Spain,
# leaving Friday. Is that right, ...?")
# the turn asks the caller to do something now: skipping it would skip the step's own work
_CALLER_TASK = re.compile(r"\bif you (?:haven't|have not|don't|do not) [^.?!]{0,60}, (?:file|call|send|contact|"
                          r"reply|bring|submit|ask)\b|"    # what the caller must do if ... ("If you
                          # haven't heard back by then, file the formal appeal anyway")
                          r"\bread (?:it|them|the code|that) (?:out|back|to me)\b|\bread me (?:the|your|that) "
                          r"(?:code|digits|number)\b|\bwhen it (?:arrives|comes "
                          r"through)\b|\b(?:try|open|restart|unplug|plug|reboot|sign in|log in|tap|"
                          r"press|hold down|go to|check|lock|turn off|turn on|switch off) (?:the|your|it|that|again|in|out|back)\b|"
                          r"\blet me know (?:when|if|once)\b|\btell me (?:when|once|what you see)\b|"
                          # an approval, a signature or a reply the caller owes before anything
                          # happens ("Once you approve it there, ...", "sign the form we emailed")
                          r"\b(?:once|when|after|as soon as) you(?:'ve)? (?:approve|sign|confirm|reply|"
                          r"accept|click|upload|return|send)\b|\b(?:please|you'll need to|you need to|"
                          r"you'll have to) (?:approve|sign|confirm|reply|accept|click|upload|return|"
                          r"send|complete|fill)\b|\bapproval request\b|\bfor you to (?:approve|sign)\b|"
                          r"\byou can sign\b|\bsigned (?:authori[sz]ation|form|consent|release)\b|"
                          r"\byour signature\b|\b(?:please )?(?:don't|do not) (?:cancel|close|switch off|"
                          r"reset|delete|throw)\b|"
                          # a check only the caller can make ("can you confirm you're signed in?")
                          r"\bcan you (?:confirm|check|see) (?:you|that you|whether)\b|"
                          # a payment the caller makes through a link: no change goes through
                          # without it ("For the fare difference, I'll text you a secure link")
                          r"\b(?:secure|payment) link\b", re.I)
# the turn reports the request done ("You're booked ...", "I've issued a refund ...")
_DONE = re.compile(r"^(?:[^.?!]*[,.]\s+)?(?:you're (?:all set|booked|renewed|confirmed|upgraded|enrolled|"
                   r"now)|I've (?:booked|issued|processed|submitted|filed|cancelled|scheduled|renewed|"
                   r"set up|applied|placed)|(?:that's|it's|everything is|all) (?:done|sorted|complete)|"
                   r"your [\w' -]{1,40}? (?:is|are|has been|have been) (?:confirmed|set for|set up|booked|"
                   r"submitted|filed|in place|cancelled|scheduled|done))\b", re.I)
_AMOUNT = re.compile(r"[$\u20ac\u00a3]\s?\d|\b\d[\d,.]*\s(?:dollars?|euros?|pounds?|miles|points|"
                     r"credits)\b", re.I)
_CONFIRM_Q = re.compile(r"\b(?:is|was) (?:that|this|all of that|everything) (?:right|correct|accurate)\b|"
                        r"\bdid I get that right\b|\bhave I got that right\b|"
                        r"\bis (?:that|this) the one\b", re.I)


# the agent makes the change now ("I'm applying the upgrade now", "The change is going through")
_ACTS = re.compile(r"^(?:[^.?!]*[,.]\s+)?(?:I'm (?:now )?(?:applying|setting|switching|upgrading|"
                   r"downgrading|changing|making|putting through|processing) |I'll (?:now )?(?:apply|"
                   r"switch|upgrade|downgrade|process) (?:the|your|it|that)\b|The change is going through\b)",
                   re.I)
# a turn that lays out the options of a choice ("We can send a replacement, ..., or refund")
_UNSURE = re.compile(r"\b(?:not (?:completely |entirely |totally |really |quite )?sure|"
                     r"(?:have|need) to check|don't (?:remember|recall|know)|can't (?:say|remember)|"
                     r"no idea|not certain)\b", re.I)
_OPTIONS = re.compile(r"\b(?:two|three|both|a couple of) options\b|\beither\b[^.?!]{3,90}\bor\b|"
                      r"\b(?:we|you|I) (?:can|could) [^.?!]{3,90}, or \w+", re.I)
MAX_SIDE = 2                        # side questions (topic switches) in one call
HELD_TYPES = ("pushback", "impatient")   # kept for a later turn when drawn where they cannot be
MAX_IMPATIENT = 3                   # "skip ahead" cut-ins in one call
IMPATIENT_GAP = 3                   # rounds after an impatient cut before the next one (unless
                                    # another kind of cut came between)


def _offer_taken(plan: RoundPlan) -> bool:
    """The caller said yes to an offer or a go-ahead question of this round's unit."""
    qs = re.findall(r"[^.?!]*\?", plan.unit.text if plan.unit else "")
    reply = plan.user_facts.get("reply", "") or plan.user_facts.get("option", "")
    return bool(qs) and question_kind(qs[-1].strip()) in ("offer", "either", "keep") and not re.search(
        r"\b(?:no|not|don't|rather|instead|neither)\b", reply, re.I)


# words of an offer that name no option of its own ("do you want to keep the account on a
# monthly plan instead?" offers "monthly")
_OFFER_FRAME = frozenset("""want keep account instead like would prefer plan option rather stay
switch change move go ahead now today still just also your the a an on to of do you with for
is are it this that there than more less can could we i me my""".split())


def _offered_words(text: str) -> set[str]:
    """The distinctive words of the offer in the last question of ``text`` (an "instead" offer
    the caller answered); empty when that question is no offer."""
    qs = re.findall(r"[^.?!]*\?", text)
    if not qs or question_kind(qs[-1].strip()) not in ("keep", "offer"):
        return set()
    return {w for w in re.findall(r"[a-z]+", qs[-1].lower()) if w not in _OFFER_FRAME
            and w not in P.STOPWORDS and len(w) > 3}


def _drop_declined(text: str, declined: set[str]) -> str:
    """``text`` without the sentences that offer again what the caller turned down ("You can
    either close it, or switch to monthly billing" after "no" to a monthly plan)."""
    sents = re.findall(r"[^.?!]+[.?!]*\s*", text)
    keep = [x for x in sents if not (set(re.findall(r"[a-z]+", x.lower())) & declined)]
    return "".join(keep).strip() if len(keep) < len(sents) else text


def _readable(value: str) -> bool:
    """A value a read-back can say after "it's" / "your X is": a name, a date, an amount,
    not a clause about the caller ("is renting and has renter's insurance")."""
    return bool(value) and P.clause(value) is None and not re.match(
        r"(?:is|are|was|has|have|had|lost|needs?|wants?|got|since|until|because|I|we|my|our|"
        r"did|do|does|didn't|don't|doesn't|not|never|can|cannot|can't|will|won't|would|could|"
        r"should|must)\b",
        value, re.I)


def _trimmed(st: ConversationState, keep) -> deque:
    """The stage's queued units that ``keep`` accepts; a stage not delivered yet keeps its
    first statement when nothing else of its own is left (skipping ahead skips explanation,
    never the step itself: "That wraps up your request" with the step never done)."""
    units = list(st.units)
    out = [u for u in units if keep(u)]
    if st.stage not in st.delivered and units and not any(u.kind != "close" for u in out):
        first = next((u for u in units if u.kind != "close"), None)
        if first is not None:
            out.insert(0, first)
    return deque(out)


def _essential(u: Unit) -> bool:
    """Questions for required info, the closing and what the caller will pay ("Business is 24
    dollars per seat per month") are never trimmed for length."""
    if u.kind == "close" or (u.kind == "ask" and bool(u.keys)) or bool(
            u.text and (_unheard_price(u.text, 0) or _DONE.search(u.text) or _ACTS.match(u.text))):
        return True                 # a price, or the report of the work done ("I've issued ...")
    # a choice that decides the path ("close it, or switch to monthly?", "shall I apply it?"):
    # skipping it would act without the caller's say
    qs = re.findall(r"[^.?!]*\?", u.text or "")
    return u.kind == "ask" and bool(qs) and question_kind(qs[-1].strip()) in ("either", "offer", "keep")


def _draw(rng: random.Random, types: list[str], probs: dict[str, float]) -> str:
    total = sum(probs[t] for t in types)
    r, acc = rng.random() * total, 0.0
    for t in types:
        acc += probs[t]
        if r < acc:
            return t
    return types[-1]


def _sentence_end_before(text: str, pos: int) -> int:
    """Index of the last ". ", "? " or "! " before ``pos`` that ends a sentence ("Dr. Taylor"
    does not), or -1."""
    i = pos
    while True:
        i = max(text.rfind(". ", 0, i), text.rfind("? ", 0, i), text.rfind("! ", 0, i))
        if i < 0 or text[i] != "." or not _ABBREV_END.search(text[:i + 1]):
            return i


def resume_text(text: str, rec: Recovery) -> str:
    """A fresh start: the cut content again from the start of the sentence that was cut."""
    local = max(0, len(rec.heard_text) - rec.content_start)
    start = 0
    for i in range(min(local, len(text)) - 1, 0, -1):
        if text[i] == " " and text[i - 1] in ".!?" and not _ABBREV_END.search(text[:i]):
            start = i + 1
            break
    q = text[start:]
    if start and q.rstrip().endswith("?") and (P.n_words(q) < 6 or (
            P.n_words(q) < 9 and re.match(r"\W*(?:does|is|did|have|are|was|do|can you confirm)\b"
                                          r"[^?]*\b(?:that|this|it|everything|all)\b", q, re.I))):
        # "Did I get that right?" alone after a recovery: say what it asks about again
        prev = _sentence_end_before(text, start - 1)   # not a colon: "what I wrote down: 12 Elm
        start = prev + 2 if prev >= 0 else 0           # St" starts with its lead-in
    if "?" not in text[start:] and "?" in text[:start]:
        # the question was heard but the cut fell after it (in a reason): ask it again
        q = text.rfind("?", 0, start)
        prev = max(text.rfind(". ", 0, q), text.rfind("? ", 0, q), text.rfind("! ", 0, q))
        start = prev + 2 if prev >= 0 else 0
    if start and (re.match(r"(?:It|It's|That|That's|This|They|They'll|They're|Keep it|Keep them)\b",
                           text[start:]) or _ANAPHOR_LEAD.match(text[start:])):
        # "Keep it until ..." needs the sentence that says what "it" is ("Dr. Payne" is no end)
        prev = 0
        for i in range(start - 2, 0, -1):
            if text[i] == " " and text[i - 1] in ".!?" and not _ABBREV_END.search(text[:i]):
                prev = i + 1
                break
        start = prev
    out = text[start:].strip() or text
    while True:                             # the greeting is not said twice ("Thank you for
        m = _GREETING_SENT.match(out)       # calling ..." again after a side question)
        if not m or not out[m.end():].strip():
            break
        out = out[m.end():].strip()
    if re.match(r"(?:Alternatively|Instead|Otherwise|Also),\s+\S", out) and start:
        out = out.split(",", 1)[1].strip()  # its contrast was in the sentence before
        out = out[:1].upper() + out[1:]
    return out


_IF_DECLINED = re.compile(r"(?:If (?:that|this|it|none of those) (?:doesn't|does not|won't|isn't|don't) "
                          r"(?:suit|work|fit)|If not\b)", re.I)
# a talking point that only makes sense after the one before it ("If that doesn't suit, ...")
_LEANS_BACK = re.compile(r"(?:If (?:that|not|this|so|none|neither)|Otherwise|Or|Alternatively|Instead|"
                         r"Also|That|This|Those|These|It|They|Then|Had you|After that|Before that|"
                         r"With that|By then|From then on|Once that's done|"
                         r"If you(?:'d| had) (?!like|prefer|rather)\w+ed)\b")
# a sentence whose first clause points back ("When those match, ...", "Once that's done, ...",
# "If they don't arrive, ..."): its antecedent is in the sentence before, so a resumption starts there
_ANAPHOR_LEAD = re.compile(r"(?:[A-Za-z']+,?\s+){0,3}?(?:those|these|they|them|it|it's|its|that's|"
                           r"this|both|either|each)\b(?![- ](?:way|time|point|means|one of))", re.I)
_GREETING_SENT = re.compile(r"(?:hi|hello|good (?:morning|afternoon|evening)|thanks?(?: you)? for "
                            r"(?:calling|ringing|reaching out|contacting)|you've reached|welcome)\b"
                            r"[^.!?]*[.!?](?:\s+|$)", re.I)
_ABBREV_END = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|St|No|Ave|Blvd|Apt|Inc|Ltd|Co|Jr|Sr|vs|etc|[A-Z])\.$")


def _rationale(plan: dict) -> str:
    u = plan.get("unit")
    what = f"{plan['assistant_action']} {u.kind} {','.join(u.keys)}".strip() if u else plan["assistant_action"]
    s = f"stage {plan.get('stage') or '-'}: assistant {what}; user {plan['user_action']}"
    if plan.get("interrupt"):
        v = plan["detail"].get("variant")
        s += f" ({plan['type']}{', ' + v if v else ''})"
    return s


_JOINERS = frozenset("and but so because which then or if when while since though although".split())


def place_cut(text: str, content_start: int, fraction: float, rng: random.Random,
              min_word: int = 0, protected: set[int] | frozenset[int] = frozenset(),
              at_boundary: bool = False, max_word: int | None = None) -> int | None:
    """A word index ``k`` inside the content: >= 3 content words heard, >= 3 words unheard.

    Prefers cuts inside a sentence (the heard part does not end with punctuation), nearest to
    ``fraction`` of the content; ``min_word`` forces the heard part to include a given word;
    ``protected``: cuts that would split a name, a date or a value (unless nothing else fits).
    """
    spans = P.word_spans(text)
    first = next((i for i, (s, _) in enumerate(spans) if s >= content_start), len(spans))
    lo = max(first + EDGE_WORDS, min_word, EDGE_WORDS)
    hi = len(spans) - EDGE_WORDS
    if max_word is not None:            # ``max_word``: the heard part must end by that word
        hi = min(hi, max_word)
    if lo > hi:
        return None
    cands = [k for k in range(lo, hi + 1) if k not in protected] or list(range(lo, hi + 1))
    if at_boundary:
        # a question heard whole is answered, never nodded at: "Could I get the student ID
        # number? It's on the card | Yep." leaves it unanswered (the nod comes before it)
        cands = [k for k in cands if "?" not in text[content_start:spans[k - 1][1]]]
        # a backchannel lands where a listener nods: after a clause or a sentence ("..., |" or
        # "| and ..."), never between a determiner and its noun or a verb and its particle
        edge = [k for k in cands if (text[spans[k - 1][1] - 1] in ".!,:;"
                or text[spans[k][0]:spans[k][1]].lower().strip(",.") in _JOINERS)
                and text[spans[k - 1][1] - 1] != "?"   # a question heard whole is answered,
                and len(spans) - k >= 6]    # not nodded at; the rest is more than a stock "Shall I do that?"
        if not edge:                    # a clause edge with a short rest, else no cut inside
            edge = [k for k in cands if text[spans[k - 1][1] - 1] in ".!,:;"]   # a noun phrase
        if not edge:                    # no clause edge: no nod in the middle of a clause
            return None
        cands = edge
    else:
        inner = [k for k in cands if text[spans[k - 1][1] - 1] not in ".!?,:;"]
        cands = inner or cands
    target = first + fraction * (len(spans) - first)
    cands.sort(key=lambda k: (abs(k - target), k))
    return cands[0] if rng.random() < 0.7 or len(cands) == 1 else cands[1]
