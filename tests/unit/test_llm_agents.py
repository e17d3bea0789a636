"""Value checks on LLM answers accept every spoken and written form of a value (issue: a model
that said "H H, one three eight nine, four zero zero five" for HH-1389-4005 was refused).

The spoken forms come from two instruments other than the matcher: hand-written lines, and the
written-to-spoken converters the TTS path uses (:mod:`bargein.generators.speech_forms`)."""

from __future__ import annotations

from datetime import date

import pytest

from bargein.generators import speech_forms as SF
from bargein.generators.llm_values import said

SAID = [
    ("H H, one three eight nine, four zero zero five", "HH-1389-4005"),
    ("It's double H, thirteen eighty-nine, forty oh five", "HH-1389-4005"),
    ("hh 1389 4005", "HH-1389-4005"),
    ("the third of June, twenty twenty-five", "June 3, 2025"),
    ("June third", "June 3"),
    ("on 6/3", "June 3"),
    ("forty-five dollars and fifty cents", "$45.50"),
    ("my zip is nine oh two one oh", "90210"),
    ("one thousand two hundred forty-nine", "1249"),
    ("m dot lopez eight four at gmail dot com", "m.lopez84@gmail.com"),
    ("It's Latoya Lee.", "Latoya Lee"),
    ("forty-five dollars", "$45.00"),
]
NOT_SAID = [
    ("I said 1389", "HH-1389-4005"),
    ("June fourth", "June 3"),
    ("June third, twenty twenty-four", "June 3, 2025"),
    ("forty-five dollars", "$54.00"),
    ("nine oh two one", "90210"),
    ("It's Latoya.", "Latoya Lee"),
]


@pytest.mark.parametrize("text,value", SAID)
def test_every_form_of_a_value_counts(text, value):
    assert said(text, value)


@pytest.mark.parametrize("text,value", NOT_SAID)
def test_another_value_does_not(text, value):
    assert not said(text, value)


def test_the_spoken_forms_the_tts_path_writes_are_recognised():
    cases = [(SF.code_spoken("4471 0932"), "4471 0932"),
             (SF.amount_spoken(1249.5), "$1,249.50"),
             (SF.date_spoken(date(2025, 6, 12)), "June 12, 2025"),
             (SF.email_spoken("m.lopez84@gmail.com"), "m.lopez84@gmail.com")]
    cases += [(SF.int_words(n), str(n)) for n in (7, 19, 40, 85, 101, 999, 2025, 13000)]
    missed = [(t, v) for t, v in cases if not said(t, v)]
    assert not missed


def test_planned_content_must_be_delivered():
    """The assistant turn is checked against its plan: a talking point's values (in any form)
    and most of its words; an ask is a question about what it asks for. The issue's case: an
    opener that said "I don't have your order number handy" instead of the planned line."""
    from bargein.generators.llm_agents import AssistantTurn, check_delivered
    from bargein.records import RoundPlan, Unit

    point = "There is a one-time $45.50 activation fee, and the router ships within 3 business days."
    plan = RoundPlan(round=1, stage="setup", assistant_action="inform",
                     unit=Unit(kind="inform", stage="setup", text=point))
    ok = AssistantTurn(content="There's a one-time activation fee of forty-five fifty, and the "
                               "router ships within three business days.")
    assert check_delivered(plan, ok) == []
    off = AssistantTurn(content="I'm sorry, but I don't have your order number handy right now.")
    errs = check_delivered(plan, off)
    assert any("$45.50" in e for e in errs) and any("does not deliver" in e for e in errs)

    ask = RoundPlan(round=2, stage="verify", assistant_action="ask",
                    unit=Unit(kind="ask", stage="verify", keys=("date_of_birth",)))
    assert check_delivered(ask, AssistantTurn(content="Could you tell me your date of birth?")) == []
    assert check_delivered(ask, AssistantTurn(content="Thanks, let me look into that for you now.")) != []


def test_the_cut_and_the_heard_words_are_computed_never_asked(tmp_path):
    """The interrupting caller is told where it cut in and what it heard; it writes only the
    interjection, and never sees the unheard rest of the assistant's message."""
    import asyncio
    import random

    from bargein.generators import phrases as P
    from bargein.generators.assistant_sim import RuleAssistant
    from bargein.generators.llm_agents import LLMAgents, UserInterjection
    from bargein.generators.planner import RulePlanner
    from bargein.generators.scenarios import generate_scenarios

    class Model:                          # answers one interjection, keeps what it was sent
        def __init__(self):
            self.sent = []

        async def structured(self, messages, schema, **kw):
            self.sent.append((messages, schema))
            heard = messages[-1]["content"].split("<heard>\n")[1].split("\n</heard>")[0]
            return schema(interjection="Sorry, " + " ".join(heard.split()[-2:]) + "?") \
                if schema is UserInterjection else schema(interjection="Mm-hm.")

    scn = generate_scenarios(3, 5, workdir=tmp_path, progress=False).outputs[0]
    rng = random.Random(3)
    planner = RulePlanner(scn)
    st = planner.new_state(rng)
    for _ in range(40):
        plan = planner.plan(st, rng, frozenset({"pushback", "correction", "topic_switch", "impatient"}))
        turn = RuleAssistant(scn).respond(plan, rng)
        if plan.interrupt:
            break
        planner.apply(st, plan, turn.content, None, rng)
    assert plan.interrupt
    model = Model()
    out = asyncio.run(LLMAgents(scn, model, "test").user_interject(
        plan, turn.text, turn.content_start, (), [], rng, 0))
    assert out.heard == P.prefix_words(turn.text, out.cut_word_index)
    unheard = turn.text[len(out.heard):].strip()
    (messages, _), = model.sent
    sent = "\n".join(m["content"] for m in messages)
    assert out.heard in sent and unheard not in sent
    assert "heard_prefix" not in sent and "cut_range" not in sent


def test_llm_stages_keep_twice_the_provider_slots_in_flight(monkeypatch):
    from bargein.generators.conversation import simulate_stage
    from bargein.generators.rubric import rubric_stage

    monkeypatch.delenv("BARGEIN_LLM_SETTINGS", raising=False)
    assert simulate_stage("llamacpp:/m.gguf").concurrency == 2        # one in-process context
    assert rubric_stage("openai:m").concurrency == 32                 # 16 requests by default
    monkeypatch.setenv("BARGEIN_LLM_SETTINGS", "openai.concurrency=4")
    assert simulate_stage("openai:m").concurrency == 8                 # a server with 4 slots


def test_a_reply_that_copies_the_instructions_is_refused():
    """Seen on the 1.5B model: the caller's interjection was "what you say" (the format's
    placeholder), and it passed every plan check."""
    from bargein.generators.llm_agents import check_user_interjection, check_user_reply
    from bargein.generators.user_sim import UserPlan

    up = UserPlan(action="interrupt", interrupt=True, type="impatient")
    msg = "Sure. Tell me about the project you have in mind and the dates you want to start work."
    errs = check_user_interjection(up, msg, 0, "Sure. Tell me about the project", "what you say", ())
    assert any("copies the instructions" in e for e in errs)
    assert any("copies the instructions" in e for e in check_user_reply(UserPlan(action="ack"), "..."))
    assert check_user_reply(UserPlan(action="ack"), "Okay, sounds good.") == []


def test_copies_tells_a_copied_line_from_an_answer():
    """Seen on the 1.5B model: the caller said the assistant's line back, and the planner wrote
    its prompt's example as the plan."""
    from bargein.generators.llm_agents import PLANNER_EXAMPLE, copies

    said = "After approval, you'll have inspections at key stages, like footings and final."
    assert copies("I understand. After approval, you'll have inspections at key stages, like "
                  "footings and final.", said)
    assert not copies("Okay, so how long do the inspections usually take?", said)
    assert copies("Confirm the order, explain the refund reaches the card in two business days.",
                  PLANNER_EXAMPLE)


def test_the_prefix_cache_counts_every_byte_a_state_holds():
    """llama-cpp-python's RAM cache counts only a state's KV bytes, not its logits copy; on the
    1.5B model a 2 GB cache grew past 20 GB and was killed for memory."""
    llama_cpp = pytest.importorskip("llama_cpp")
    import numpy as np

    from bargein.llm.llamacpp_provider import _bounded_cache

    class State:
        llama_state_size = 100
        scores = np.zeros(200, dtype=np.float32)          # 800 bytes of logits
        input_ids = np.zeros(10, dtype=np.intc)

    cache = _bounded_cache(llama_cpp, 2000)
    for i in range(5):
        cache[(i, i + 1)] = State()
    assert len(cache.cache_state) == 2 and cache.cache_size <= 2000


def test_a_cut_with_nothing_to_react_to_is_refused_before_any_model_call(tmp_path):
    """unrealisable() predicts from the planned talking point whether the cutter can place the
    planned pushback / impatient / clarifying cut. The instrument is the rule-based cutter run on
    the offline assistant's actual turns: the prediction never refuses a cut the cutter made,
    and it catches most of the rounds where the cutter found nothing (each such round cost a
    planner and an assistant call on the 1.5B model before)."""
    import random
    from collections import Counter

    from bargein.errors import GenerationFailed
    from bargein.generators.conversation import RuleAgents, _run_sync, said_values, simulate
    from bargein.generators.llm_agents import unrealisable
    from bargein.generators.scenarios import generate_scenarios

    tab: Counter = Counter()

    class Watch(RuleAgents):
        async def refine_plan(self, plan, st, messages, rng, sample):
            self.why = unrealisable(plan, said_values(self.scenario))
            return plan

        async def user_interject(self, plan, message, cs, ctx, heard, rng, sample):
            try:
                got = await super().user_interject(plan, message, cs, ctx, heard, rng, sample)
            except GenerationFailed:
                tab["failed", bool(self.why)] += 1
                raise
            tab["made", bool(self.why)] += 1
            return got

    for scn in generate_scenarios(8, 7, workdir=tmp_path, progress=False).outputs:
        for seed in range(2):
            agents = Watch(scn)
            agents.scenario = scn
            _run_sync(simulate(scn, random.Random(seed), agents))
    assert tab["made", True] == 0                     # no cut the cutter made was refused
    assert tab["failed", True] >= 0.5 * (tab["failed", True] + tab["failed", False]) > 0


def test_a_round_the_verifier_would_reject_is_planned_again(tmp_path):
    """check_round runs the verifier's deterministic checks between rounds: a turn that says a
    clause twice (doubled_phrase, unfixable: the whole call would be discarded at the end) breaks
    its round, the round is planned again, and the call that comes out passes that check. The
    offline agents' accepted calls pass the same per-round check on every round (no false
    alarm on a call the verifier accepts)."""
    import random

    from bargein.generators.conversation import RuleAgents, _run_sync, simulate
    from bargein.generators.llm_agents import round_verdicts
    from bargein.generators.scenarios import generate_scenarios
    from bargein.verify.checks import run_checks

    class Checked(RuleAgents):
        def __init__(self, scn, plant: bool):
            super().__init__(scn)
            self.memo, self.refused, self.plant = {}, [], plant

        async def assistant_turn(self, plan, messages, rng, sample):
            from bargein.verify.text import sentences

            turn = await super().assistant_turn(plan, messages, rng, sample)
            long = [turn.content[a:b] for a, b in sentences(turn.content)
                    if len(turn.content[a:b].split()) >= 5]
            if self.plant and len(messages) >= 2 and not self.refused and long:
                # one sentence said twice in a row: "... the card we charge? ... the card we charge?"
                doubled = turn.content.replace(long[0], f"{long[0]} {long[0]}", 1)
                return turn.model_copy(update={"content": doubled})
            return turn

        async def check_round(self, before, after):
            errs = round_verdicts(before, after, self.memo)
            if errs:
                self.refused.append(errs)
                from bargein.generators.user_sim import PlanBroken
                raise PlanBroken(errs[0])

    scns = generate_scenarios(4, 7, workdir=tmp_path, progress=False).outputs
    clean = 0
    for scn in scns:
        agents = Checked(scn, plant=False)
        conv = _run_sync(simulate(scn, random.Random(0), agents))
        if not [v for v in run_checks(conv) if not v.fixable and v.check != "rubric_counts"]:
            clean += 1
            assert agents.refused == []
    assert clean >= 2
    agents = Checked(scns[0], plant=True)
    conv = _run_sync(simulate(scns[0], random.Random(0), agents))
    assert agents.refused and "doubled_phrase" in agents.refused[0][0]
    assert not [v for v in run_checks(conv) if v.check == "doubled_phrase"]


def test_a_cut_found_impossible_in_code_spends_none_of_the_agents_tries(tmp_path):
    """A planned cut that unrealisable() refuses before any model call (PlanBroken with
    ``before_any_call``) is planned again without counting as one of the round's REPLANS + 1
    tries: seen on the 1.5B model, two impossible cuts (no fee to push back on, nothing to
    clarify) left the model one plan, and the call failed. Here every planned cut is refused in
    code and every assistant turn breaks its plan: the model is still asked REPLANS + 1 times
    in the first round, and the failure's evidence holds the refused cuts as well."""
    import random

    from bargein.errors import GenerationFailed
    from bargein.generators.conversation import REPLANS, RuleAgents, _run_sync, simulate
    from bargein.generators.scenarios import generate_scenarios
    from bargein.generators.user_sim import PlanBroken

    class NoCuts(RuleAgents):
        turns = 0

        async def refine_plan(self, plan, st, messages, rng, sample):
            if plan.type is not None:
                raise PlanBroken("the planned cut cannot happen in this turn",
                                 evidence={"before_any_call": True})
            return plan

        async def assistant_turn(self, plan, messages, rng, sample):
            self.turns += 1
            raise PlanBroken("the turn breaks its plan", evidence={})

    # several scenarios and seeds: the first round plans a cut for some of them (the premise of
    # the test, not a property of whichever scenario comes first)
    scns = generate_scenarios(6, 7, workdir=tmp_path, progress=False).outputs
    refused_cuts = 0
    for seed, scn in [(seed, scn) for scn in scns[:4] for seed in range(3)]:
        agents = NoCuts(scn)
        with pytest.raises(GenerationFailed) as e:
            _run_sync(simulate(scn, random.Random(seed), agents))
        assert agents.turns == REPLANS + 1
        rounds = e.value.evidence["rounds"]
        assert len(rounds) == agents.turns + sum(r["evidence"].get("before_any_call", False)
                                                 for r in rounds)
        refused_cuts += len(rounds) - agents.turns
    assert refused_cuts > 0                # the seeds do plan cuts in the first round


def test_a_volunteered_detail_left_out_of_the_cut_in_is_refused(tmp_path):
    """Seen on the 1.5B model: a caller planned to volunteer their name ("Lawrence Barrett")
    cut in with "I'm sorry, I didn't catch that. Could you please repeat?"; the assistant's
    take-up of the name then presented a value the caller never gave, and the call failed.
    The instrument for the other side is the offline caller's own volunteered and hidden-fact
    cut-ins on 8 scenarios: none is refused."""
    import random

    from bargein.generators.conversation import RuleAgents, _run_sync, simulate
    from bargein.generators.llm_agents import check_user_interjection
    from bargein.generators.scenarios import generate_scenarios
    from bargein.generators.user_sim import user_plan

    seen: list = []

    class Watch(RuleAgents):
        async def user_interject(self, plan, message, cs, ctx, heard, rng, sample):
            got = await super().user_interject(plan, message, cs, ctx, heard, rng, sample)
            up = user_plan(plan)
            if up.type == "normal" and up.detail.get("variant") in ("hidden", "volunteer") \
                    and up.detail.get("value"):
                seen.append((up, message, cs, got.heard, got.interjection, ctx))
            return got

    def refused(up, message, cs, heard, line, ctx):
        return [e for e in check_user_interjection(up, message, cs, heard, line, ctx)
                if e.startswith("the interjection must tell")]

    for scn in generate_scenarios(8, 7, workdir=tmp_path, progress=False).outputs:
        for seed in range(2):
            _run_sync(simulate(scn, random.Random(seed), Watch(scn)))
    assert len(seen) >= 5
    assert [x[4] for x in seen if refused(*x)] == []
    up, message, cs, heard, _, ctx = seen[0]
    (err,) = refused(up, message, cs, heard, "I'm sorry, I didn't catch that. Could you please "
                     "repeat?", ctx)
    assert repr(up.detail["value"]) in err


def test_an_impatient_cut_in_that_asks_to_hear_more_is_refused():
    """Seen on the 1.5B model, told to ask the assistant to skip reading the itinerary back:
    "I'm sorry, could you please just read the itinerary back for me?". The instrument for the
    other side is the offline bank of hand-written impatient lines (287 distinct compositions):
    none of them is taken for a request to hear more."""
    import random

    from bargein.generators import phrases as P
    from bargein.generators.llm_agents import asks_for_more

    seen = ["I'm sorry, could you please just read the itinerary back for me? I need to understand "
            "the details.", "Please read the itinerary back for me.", "Can you explain the fee again?",
            "I'm sorry, I didn't hear what you just said."]
    assert all(asks_for_more(s) for s in seen)
    rng = random.Random(1)
    lines = {P.compose(rng, "user", "impatient_core") for _ in range(400)}
    assert len(lines) > 200 and [x for x in lines if asks_for_more(x)] == []


def test_an_assistant_turn_the_verifier_would_reject_is_re_asked_not_re_planned(tmp_path):
    """turn_verdicts: the verifier's checks on the call with only the assistant's next turn
    added. The recovery after a caller volunteered a hidden fact that goes on without a word
    about it (seen on the 1.5B model, three plans in a row) is refused with the verdict; the
    offline assistant's own recovery there passes."""
    import random

    from bargein.generators.conversation import RuleAgents, _partial, _run_sync, simulate
    from bargein.generators.llm_agents import turn_verdicts
    from bargein.generators.scenarios import generate_scenarios

    found = None
    for scn in generate_scenarios(12, 7, workdir=tmp_path, progress=False).outputs:
        for seed in range(6):
            conv = _run_sync(simulate(scn, random.Random(seed), RuleAgents(scn)))
            for p in conv.plan:
                rec = p.recovery
                if rec is not None and rec.type == "normal" and rec.detail.get("variant") == "hidden":
                    found = conv, p
                    break
            if found:
                break
        if found:
            break
    assert found is not None
    conv, plan = found
    i = plan.message_index
    so_far = _partial(conv.scenario, list(conv.messages[:i]),
                      [p for p in conv.plan if p.message_index < i],
                      {k: g for k, g in conv.gold_recoveries.items() if k < i}, conv.agents)
    assert turn_verdicts(so_far, plan, conv.messages[i].text) == []
    ignoring = "Okay. " + (plan.unit.text if plan.unit is not None and plan.unit.text
                           else "Let's go on with the next step of your request.")
    errs = turn_verdicts(so_far, plan, ignoring)
    assert errs and errs[0].startswith("hidden_fact_addressed")


def test_a_cut_in_saying_it_did_not_hear_or_quoting_the_instructions_is_refused(tmp_path):
    """Seen on the 1.5B model in an accepted call (bench/llm_real.py, a1acd21): "Hold on, a
    two-hour pickup window? I didn't hear that! Please provide me with the exact words I
    heard." - a caller who did hear, and the wording of its instructions. The instrument for the
    other side is the offline caller's own cut-ins of every type on 8 scenarios: none is refused
    for either."""
    import random

    from bargein.generators.conversation import RuleAgents, _run_sync, simulate
    from bargein.generators.llm_agents import check_user_interjection, check_user_reply
    from bargein.generators.scenarios import generate_scenarios
    from bargein.generators.user_sim import user_plan

    seen: list = []

    class Watch(RuleAgents):
        async def user_interject(self, plan, message, cs, ctx, heard, rng, sample):
            got = await super().user_interject(plan, message, cs, ctx, heard, rng, sample)
            seen.append((user_plan(plan), message, cs, got.heard, got.interjection, ctx))
            return got

    def refused(up, message, cs, heard, line, ctx):
        return [e for e in check_user_interjection(up, message, cs, heard, line, ctx)
                if "you did hear" in e or "wording of your instructions" in e]

    for scn in generate_scenarios(8, 7, workdir=tmp_path, progress=False).outputs:
        for seed in range(2):
            _run_sync(simulate(scn, random.Random(seed), Watch(scn)))
    kinds = {x[0].type for x in seen}
    assert len(seen) >= 10 and {"normal", "pushback", "topic_switch"} <= kinds
    assert [x[4] for x in seen if refused(*x)] == []
    up, message, cs, heard, _, ctx = next(x for x in seen if x[0].type in ("normal", "pushback"))
    errs = refused(up, message, cs, heard, "Hold on, a two-hour pickup window? I didn't hear "
                   "that! Please provide me with the exact words I heard.", ctx)
    assert len(errs) == 2 and "didn't hear" in errs[0] and "exact words I heard" in errs[1]
    filler = next((x for x in seen if x[0].type == "filler"), None)
    if filler is not None:         # a backchannel is never judged on hearing
        assert refused(*filler[:4], "Mm-hm.", filler[5]) == []
    conv = _run_sync(simulate(scn, random.Random(0), RuleAgents(scn)))
    reply = user_plan(next(p for p in conv.plan if not p.interrupt))
    assert any("wording of your instructions" in e
               for e in check_user_reply(reply, "Please provide me with the exact words I heard."))
