"""The caller's side of a planned round: what the user does, and whether and how they cut in.

:class:`CallerRounds` is the half of :class:`bargein.generators.planner.RulePlanner` that decides,
for the assistant unit of a round, the caller's action (answer, confirm, volunteer, choose, ...)
and the interruption: which types are feasible on this turn, the type drawn from the intent's
profile (a cut owed or held from an earlier turn paid here), and its detail (the value a
correction fixes, the side question, the detail a pushback objects to).
"""

from __future__ import annotations

import random
import re

from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.generators.plan_state import (
    CLOSING_TYPES, EDGE_WORDS, ELIGIBLE_SHARE, EXPLANATION_WORDS, MAX_MESSAGES, MIN_CUT_WORDS,
    ConversationState, Unit, answer_question, choose_option,
)
from bargein.generators.planner_cut import impatient_cuts
from bargein.generators.planner_text import (
    _CALLER_TASK, _CONFIRM_Q, _DONE, _OPTIONS, _fill_step, _task_asked, _unheard_price,
    alternative_step, sensitive_key,
)
from bargein.records import INTERRUPTION_TYPES, Scenario


_CLAUSE_LABEL = re.compile(r"\b(?:was|is|were|are|has|have|had|did|does|opened|made|started|"
                           r"joined|moved|born)\b", re.I)
_SUMMARY = re.compile(r"\b(?:here's where things stand|here's a quick summary|to recap|to sum up|"
                      r"in summary)\b", re.I)
MAX_SIDE = 2                        # side questions (topic switches) in one call
HELD_TYPES = ("pushback", "impatient")   # kept for a later turn when drawn where they cannot be
MAX_IMPATIENT = 3                   # "skip ahead" cut-ins in one call
IMPATIENT_GAP = 5                   # rounds after an impatient cut before the next one (unless
                                    # another kind of cut came between)


def _draw(rng: random.Random, types: list[str], probs: dict[str, float]) -> str:
    total = sum(probs[t] for t in types)
    r, acc = rng.random() * total, 0.0
    for t in types:
        acc += probs[t]
        if r < acc:
            return t
    return types[-1]


class CallerRounds:
    """The caller's action and cut-in of a round (a base of ``RulePlanner``, which holds the
    workflow walk, the length budget and the state updates these read)."""

    scenario: Scenario
    out: dict[str, list]
    _units: dict[str, list[Unit]]

    def _user_action(self, st: ConversationState, unit: Unit, rng: random.Random):
        if unit.kind == "close":
            return "close", {}
        if unit.purpose == "alt_step":      # the accepted alternative carried out: code read out
            step = alternative_step(unit.text, side="assistant")
            return "choose", {"reply": _fill_step(step["user"], rng) if step else
                              P.compose(rng, "user", "qa_offer")}
        if unit.kind == "outcome":
            return "ack", {}
        if unit.purpose == "follow_up" and unit.kind == "ask":   # a side request put off till
            return "choose", {"reply": P.pick(rng, "user", "promise_later")}   # now: another day
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
        if unit.kind != "close" and _task_asked(asked or "") == "report":
            return "choose", {"reply": rng.choice(P.bank("user", "task_done_report"))}
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
        task = _task_asked(asked or "") if unit.kind != "close" else ""   # (the whole cut turn)
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
        if unit.purpose == "follow_up":     # the promises taken up at the end: heard whole
            return None, {}
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
            # "the line ending in 3326" of a caller who said "(720) 344-3362": its last digits
            # are the right value read out too
            tail, said = re.sub(r"\D", "", c.corrected_value)[-4:], re.sub(r"\D", "", c.first_value)[-4:]
            if len(tail) == 4 and tail != said and re.search(rf"(?<!\d){tail}(?!\d)", unit.text):
                return key
            # the slip itself read back for the caller to confirm ("Just checking I heard you
            # right: stephen.velez@gmail.com?"): a caller who means another value says so now,
            # not "Yep, that matches" (a hand read of seed 3131: three planned corrections never
            # made, the wrong value confirmed instead)
            if key in getattr(unit, "keys", ()) and c.first_value in unit.text \
                    and c.corrected_value != c.first_value:
                return key
        return None

    def _feasible(self, st: ConversationState, unit: Unit) -> list[str]:
        closing = unit.kind == "close"
        out = []
        for t in INTERRUPTION_TYPES:
            if closing and t not in CLOSING_TYPES:
                continue
            if t == "correction" and not st.correctable_in(unit):
                continue                    # nothing the user said can be corrected (yet)
            if t in ("normal", "topic_switch") and st.pending is not None \
                    and st.pending.type in ("normal", "topic_switch"):
                continue                    # "by the way ..." on the very sentence resumed after
                                            # another "by the way": a run of asides, not a call
            if t == "topic_switch" and st.round == 0:
                continue                    # on the greeting no topic is under way to switch from:
                                            # "Hi, I need to remove a channel. Actually, while I
                                            # think of it, can I turn off autoplay" (a hand read)
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
            if t == "impatient" and unit.kind == "outcome":
                continue                    # "What do you need to finish this?" to "your request
                                            # has been submitted": nothing is left to hurry (a
                                            # hand read)
            if t == "impatient" and unit.purpose == "deescalate":
                continue                    # the caller asked for this alternative: nothing to skip
            if t == "normal" and unit.purpose == "deescalate":
                continue                    # nor a detail of their own cutting into the answer
                                            # they asked for ("is there another way?" -- "we |
                                            # Sorry, my email is ...")
            if t == "impatient" and unit.text and _SUMMARY.search(unit.text):
                continue                    # the summary of what was done is what the caller
                                            # hurries towards, not past ("Here's where things
                                            # stand: ... | let's get to what matters", seed 6161)
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
            if t == "impatient" and unit.text and not impatient_cuts(unit.text, 0):
                continue                    # no place the caller could cut it (a question heard
                                            # first, too little said): the urge is held for a
                                            # turn that has one, not lost at the cutter
            out.append(t)
        return out

    def _detail(self, st: ConversationState, unit: Unit, itype: str, rng: random.Random) -> dict[str, str]:
        if itype == "correction":
            key = rng.choice(st.correctable_in(unit))
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
