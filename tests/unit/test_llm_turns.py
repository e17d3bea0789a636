"""Assistant turns written by the model, tidied and checked where code can decide. The cases are
from an accepted 1.5B call of bench/llm_real.py read by hand: the call opened with "I understand.
Thank you for the information." before anybody had spoken, and a later turn said "I understand."
twice in a row (the acknowledgement, then the content starting with it)."""

from __future__ import annotations

import json

import asyncio
import random

from bargein.generators.llm_agents import (
    AssistantTurn, LLMAgents, check_assistant, doubled_sentence, tidy_turn,
)
from bargein.records import RoundPlan, Unit
from doubles.offline_calls import run, scenario_batch  # noqa: E402

OPENER = "Thanks for calling about a building permit. What's the address of the property?"


def _first_plan(workdir, pick):
    """(scenario, offline conversation, round plan) of the first plan ``pick`` accepts among
    twelve scenarios of seed 7, six offline runs each."""
    for scn in scenario_batch(12, 7, workdir):
        for seed in range(6):
            conv = run(scn, seed)
            plan = next((p for p in conv.plan if pick(p)), None)
            if plan is not None:
                return scn, conv, plan
    raise AssertionError("no offline round plan of that kind")


def test_the_opening_turn_acknowledges_nothing():
    turn = AssistantTurn(acknowledgement="I understand. Thank you for the information.", content=OPENER)
    out = tidy_turn(turn, opening=True)
    assert out.text == OPENER and out.content_start == 0
    # a greeting written as the acknowledgement is kept, as the start of the content
    greet = tidy_turn(AssistantTurn(acknowledgement="Hello! Thanks for that.", content=OPENER), opening=True)
    assert greet.text == "Hello! " + OPENER and greet.acknowledgement == ""


def test_an_acknowledgement_the_content_says_again_is_dropped():
    turn = AssistantTurn(acknowledgement="I understand.",
                         content="I understand. I'll upload everything to the permit portal.")
    assert tidy_turn(turn, opening=False).text == "I understand. I'll upload everything to the permit portal."
    kept = AssistantTurn(acknowledgement="Thanks, I have that.", content="Next, when did it arrive?")
    assert tidy_turn(kept, opening=False) == kept


def test_a_sentence_said_twice_in_a_row_is_refused():
    assert doubled_sentence("I understand. I understand. I'll upload it.") == "i understand"
    assert doubled_sentence("Yes. That's right. Yes.") == ""
    plan = RoundPlan(round=2, stage="review", assistant_action="inform",
                     unit=Unit(kind="inform", stage="review", text="I'll upload everything to the portal."))
    bad = AssistantTurn(content="I understand. I understand. I'll upload everything to the portal.")
    assert any("twice in a row" in e for e in check_assistant(plan, bad))
    good = AssistantTurn(content="I understand. I'll upload everything to the portal.")
    assert check_assistant(plan, good) == []


def test_the_llm_assistant_opening_is_tidied(tmp_path):
    """Through LLMAgents with a scripted model: the opener's acknowledgement never reaches the call."""
    from bargein.generators.planner import RulePlanner
    from bargein.generators.scenarios import generate_scenarios

    class Model:
        async def structured(self, messages, schema, **kw):
            assert schema is AssistantTurn
            return schema(acknowledgement="I understand. Thank you for the information.",
                          content=self.content)

    scn = generate_scenarios(2, 5, workdir=tmp_path, progress=False).outputs[0]
    rng = random.Random(1)
    planner = RulePlanner(scn)
    plan = planner.plan(planner.new_state(rng), rng, frozenset({"pushback", "correction", "topic_switch",
                                                                "impatient", "normal", "filler"}))
    model = Model()
    model.content = plan.unit.text if plan.unit is not None and plan.unit.text else "Thanks for calling, how can I help?"
    turn = asyncio.run(LLMAgents(scn, model, "test").assistant_turn(plan, [], rng, 0))
    assert "Thank you for the information" not in turn.text and turn.acknowledgement == ""


def test_a_caller_line_in_the_assistants_voice_is_refused():
    """Three 1.5B runs of bench/llm_real.py had the caller speak as the company: offering help
    (once in an accepted call) or refusing like a chat model. Callers' own lines pass, including
    ones that mention help."""
    from bargein.generators.llm_agents import assistant_voice, check_user_reply
    from bargein.generators.user_sim import UserPlan

    seen = ["Sure, I can help you with that. What's your workspace address?",
            "Sure, I'll be happy to help. Let me know what you need.",
            "I'm sorry, but I can't assist with that. I'm not sure what you're asking.",
            "I'm sorry, I can't confirm that the order is still in transit. I'll need to check "
            "with the customer's account to ensure the status is correct."]
    for line in seen:
        assert assistant_voice(line), line
        assert any("you are the customer" in e for e in check_user_reply(UserPlan(action="ack"), line))
    for line in ("Can you help me with a late parcel?", "Thanks, that helps a lot.",
                 "I need help with my booking, it's X J Y V G U.", "No, that's all I needed.",
                 "I called customer service twice already.", "Is this the customer service line?"):
        assert assistant_voice(line) == [], line


def test_the_callers_details_are_stated_as_theirs():
    """The direction tells the caller its own details as facts about it ("Your order number is
    X: say it."), not as an order the model reads as a request for *its* data ("Give your order
    number: X" drew "I'm sorry, but I can't assist with that. I don't have the information
    you're asking for." three times from the 1.5B model)."""
    from bargein.generators.llm_messages import user_messages
    from bargein.generators.user_sim import UserPlan

    up = UserPlan(action="answer", facts={"order_number": "H H, one three eight nine, four zero zero five"})
    heard = [{"role": "assistant", "text": "Do you have your order number handy?", "cut": False}]
    _, msgs = user_messages(up, heard)
    direction = msgs[-1]["content"]
    assert "Your order number is H H, one three eight nine, four zero zero five: say it." in direction
    assert "Give your" not in "\n".join(m["content"] for m in msgs)
    assert [m["role"] for m in msgs] == ["system", "user", "user"]


def test_an_acknowledgement_formula_is_not_said_again():
    """Seen in one 1.5B call: "Thanks, I have that." (the system prompt's example) opened four
    assistant turns, the first of them the greeting."""
    before = ["Thanks for calling Lumen Stream. What's the email address on your account?",
              "Thanks, I have that. Just checking I heard you right: samantha_green@aol.com?"]
    again = AssistantTurn(acknowledgement="Thanks, I have that.",
                          content="I've found the account for Samantha Green.")
    assert tidy_turn(again, opening=False, said_before=before).acknowledgement == ""
    new = AssistantTurn(acknowledgement="Great, that matches.", content="I've found the account.")
    assert tidy_turn(new, opening=False, said_before=before) == new


def test_the_direction_read_out_as_speech_is_refused():
    """Seen: "The caller mentioned that I'm cutting household subscriptions to save about $35 a
    month; take it into account." spoken as the start of an assistant turn."""
    plan = RoundPlan(round=6, stage="options", assistant_action="inform",
                     unit=Unit(kind="inform", stage="options",
                               text="Standard with Ads at 7.99 a month includes short ad breaks."))
    seen = AssistantTurn(content="The caller mentioned that I'm cutting household subscriptions to save "
                                 "about $35 a month; take it into account. Standard with Ads at 7.99 a "
                                 "month includes short ad breaks.")
    assert any("addressing them as 'you'" in e for e in check_assistant(plan, seen))
    ok = AssistantTurn(acknowledgement="Saving on subscriptions makes sense.",
                       content="Standard with Ads at 7.99 a month includes short ad breaks.")
    assert check_assistant(plan, ok) == []


def test_a_fact_about_the_caller_is_said_to_them():
    """Hidden facts are statements without a subject ("is cutting household subscriptions ...").
    The caller's direction gives them in the caller's own mouth ('Tell them, in your own words:
    "I am cutting ..."'), never as a label and a value ("Give your budget pressure: is cutting
    ..." drew "What's the budget pressure?" from the caller); the assistant's note says them
    about "they". On the 1.5B model the old direction drew an assistant's line ("Is there
    anything else you'd like to know about this?"), the new one "I am cutting household
    subscriptions to save about $35 a month." (one probe each, seed 0)."""
    from bargein.generators.llm_messages import _ack, about_me, about_you, is_statement, user_messages
    from bargein.generators.user_sim import UserPlan

    v = "lost their job 2 weeks ago and is worried about money"
    assert is_statement(v) and not is_statement("Standard at 15.49 a month")
    assert about_you(v) == "you lost your job 2 weeks ago and are worried about money"
    assert about_you(v, "they") == "they lost their job 2 weeks ago and are worried about money"
    up = UserPlan(action="volunteer", facts={"budget_pressure": "is cutting household subscriptions"})
    _, msgs = user_messages(up, [{"role": "assistant", "text": "What's prompting the change?", "cut": False}])
    assert 'Tell them, in your own words: "I am cutting household subscriptions."' in msgs[-1]["content"]
    assert about_me("has two dogs and they need a quiet room") == "I have two dogs and I need a quiet room"
    assert about_me("wants someone to call them back") == "I want someone to call me back"
    assert "budget pressure" not in msgs[-1]["content"].split("<plan>")[0]
    # the assistant's take-up of a hidden fact is computed, never asked of the model
    # (test_a_circumstance_volunteered_in_a_reply_is_taken_up)
    assert _ack({"kind": "hidden", "value": "is cutting household subscriptions"}) == ""


def test_an_address_said_without_its_underscore_is_another_address():
    """Seen in a 1.5B call: the caller said "Samantha Green at AOL.com" for samantha_green@aol.com
    and the value check passed it (the underscore was dropped as punctuation)."""
    from bargein.generators.llm_values import said

    v = "samantha_green@aol.com"
    assert not said("Sure, it's Samantha Green at AOL.com.", v)
    assert said("Samantha underscore Green at AOL dot com.", v) and said(f"It's {v}.", v)


def test_an_impatient_cut_in_is_shown_a_bank_line_as_its_example():
    """The one fixed impatient example was written by the 1.5B model at most impatient cuts of a
    run; the direction now carries a line drawn from the offline bank for that cut."""
    import random

    from bargein.generators import phrases as P
    from bargein.generators.llm_messages import user_messages
    from bargein.generators.user_sim import UserPlan

    up = UserPlan(action="interrupt", interrupt=True, type="impatient")
    heard = [{"role": "assistant", "text": "Returns are accepted within thirty days and the item"}]
    drawn = {P.compose(random.Random(s), "user", "impatient_core") for s in range(6)}
    assert len(drawn) > 3
    line = sorted(drawn)[0]
    _, msgs = user_messages(up, heard, "Returns are accepted within thirty days and the item", {},
                            example=line)
    assert json.dumps({"interjection": line}) in msgs[-1]["content"]


def test_a_correction_recovery_says_the_corrected_value_back(tmp_path):
    """Seen on the 1.5B model: nine answers in three plans, none both delivering the planned
    content and saying the corrected email back. The value said back is computed: when the
    model's words leave it out, the acknowledgement is an offline bank line with the value."""
    import random

    from bargein.generators.llm_agents import LLMAgents
    from bargein.generators.llm_values import said

    scn, conv, plan = _first_plan(tmp_path, lambda p: (
        p.recovery is not None
        and p.recovery.type == "correction"
        and p.unit is not None
        and p.unit.text))

    class Model:
        async def structured(self, messages, schema, **kw):
            return schema(acknowledgement="Thanks for clarifying that.", content=plan.unit.text)

    messages = list(conv.messages[:plan.message_index])
    turn = asyncio.run(LLMAgents(scn, Model(), "test").assistant_turn(plan, messages, random.Random(0), 0))
    new = plan.recovery.detail["new"]
    assert said(turn.text, new) and plan.unit.text in turn.content


def test_a_volunteered_circumstance_is_taken_up(tmp_path):
    """Seen on the 1.5B model: nine answers in three plans went on about the fee after "I need to
    check any decision with my business partner Michelle Silva." When the model's turn names
    nothing of the circumstance, the take-up is the catalogue's (or the offline bank's)."""
    import random

    from bargein.generators.llm_agents import LLMAgents
    scn, conv, plan = _first_plan(tmp_path, lambda p: (
        p.recovery is not None
        and p.recovery.type == "normal"
        and p.recovery.detail.get("variant") == "hidden"
        and p.unit is not None
        and p.unit.text))

    class Model:
        async def structured(self, messages, schema, **kw):
            return schema(acknowledgement="", content=plan.unit.text)

    turn = asyncio.run(LLMAgents(scn, Model(), "test").assistant_turn(
        plan, list(conv.messages[:plan.message_index]), random.Random(0), 0))
    assert turn.acknowledgement and plan.unit.text in turn.content
    # the verifier's check (the instrument) finds the circumstance taken up
    from bargein.generators.conversation import _partial
    from bargein.generators.llm_agents import turn_verdicts

    i = plan.message_index
    so_far = _partial(scn, list(conv.messages[:i]), [p for p in conv.plan if p.message_index < i],
                      {k: g for k, g in conv.gold_recoveries.items() if k < i}, "test")
    assert not [e for e in turn_verdicts(so_far, plan, turn.text) if e.startswith("hidden_fact")]


def test_a_plain_reply_is_shown_a_bank_line_not_said_before_and_no_planner_goal(tmp_path):
    """From a failed 1.5B call (bench/llm_real.py, round 9 of a flight cancellation): told to
    "React briefly and naturally to what you just heard. (Acknowledge the email and proceed with
    the refund request.)", the caller said its previous line again, then read the assistant's
    words back, in three plans. The direction of a plain reply now carries a line of the offline
    caller's bank drawn for it (never one the caller said before) and none of the planner
    model's words for the caller's goal; the re-ask after a repeated line is a new draw."""
    from bargein.generators.scenarios import generate_scenarios
    from bargein.generators.user_sim import UserReply

    scn = generate_scenarios(2, 5, workdir=tmp_path, progress=False).outputs[0]
    earlier = "I understand. Thank you for the refund. I'll go ahead with the refund request."
    plan = RoundPlan(round=9, stage=scn.kb.workflow.start, assistant_action="inform", user_action="ack",
                     user_goal="Acknowledge the email and proceed with the refund request.")
    heard = [{"role": "assistant", "text": "Your refund is on its way.", "cut": False},
             {"role": "user", "text": earlier, "cut": False},
             {"role": "assistant", "text": "The confirmation goes to maria.cox@icloud.com.", "cut": False}]

    class Model:
        def __init__(self):
            self.sent = []

        async def structured(self, messages, schema, **kw):
            self.sent.append(messages)
            line = messages[-1]["content"].split('for example: "')[1].split('" (say it')[0]
            return schema(utterance=earlier if len(self.sent) == 1 else line)

    model = Model()
    said = asyncio.run(LLMAgents(scn, model, "test").user_reply(plan, heard, random.Random(4), 0))
    first, again = (m[-1]["content"] for m in model.sent)
    assert len(model.sent) == 2 and "earlier line" in again
    assert "refund request" not in first and "Acknowledge the email" not in first
    assert said and said != earlier and said in first
    # another seed, another line of the bank
    class Once:
        async def structured(self, messages, schema, **kw):
            return schema(utterance=messages[-1]["content"].split('for example: "')[1].split('" (say it')[0])

    lines = {asyncio.run(LLMAgents(scn, Once(), "test").user_reply(plan, heard, random.Random(s), 0))
             for s in range(8)}
    assert len(lines) > 3 and earlier not in lines


def test_a_side_request_the_recovery_leaves_out_is_answered(tmp_path):
    """Seen on the 1.5B model in a call the verifier accepted (bench/llm_real.py): three side
    requests ("can I save a second delivery address for my office?", "do you deliver to PO
    boxes?") each answered by the cut turn said again word for word. When the model's turn
    names nothing of the request, the acknowledgement is the planned pair's answer and a steer
    back; a turn that does take the request up is kept as it is."""
    import random

    from bargein.generators import phrases as P
    from bargein.verify.text import content_words

    scn, conv, plan = _first_plan(tmp_path, lambda p: (
        p.recovery is not None
        and p.recovery.type == "topic_switch"
        and p.recovery.detail.get("pair")
        and p.unit is not None
        and p.unit.text))
    messages = list(conv.messages[:plan.message_index])
    said = P.answers(P.pair(plan.recovery.detail, "topic_switch"))

    class Model:
        def __init__(self, ack):
            self.ack = ack

        async def structured(self, messages, schema, **kw):
            return schema(acknowledgement=self.ack, content=plan.unit.text)

    turn = asyncio.run(LLMAgents(scn, Model(""), "test").assistant_turn(plan, messages, random.Random(0), 0))
    assert any(turn.text.startswith(a) for a in said) and plan.unit.text in turn.content
    asked = content_words(plan.recovery.interjection) - content_words(plan.recovery.heard_text)
    assert content_words(turn.text) & asked
    # the model's own answer naming the request stays
    own = f"Yes, we can help with the {' and '.join(sorted(asked))} too."
    kept = asyncio.run(LLMAgents(scn, Model(own), "test").assistant_turn(plan, messages, random.Random(0), 0))
    assert kept.acknowledgement == own and not any(a in kept.text for a in said)


def test_the_callers_sentence_in_the_assistants_turn_is_refused():
    """From a verifier-accepted 1.5B call (bench/llm_real.py): the assistant's turn after the
    caller gave the order number opened with the caller's own answer. A value read back in the
    assistant's own sentence is not the caller's words."""
    from bargein.generators.llm_agents import callers_words

    caller = ["Sure, it's H H, one three eight nine, four zero zero five."]
    bad = ("Great, thank you for confirming the email. Sure, it's H H, one three eight nine, four "
           "zero zero five. I've found order HH-1389-4005.")
    assert callers_words(bad, caller) and "Sure, it's H H" in callers_words(bad, caller)[0]
    ok = "Thanks. Just checking I heard you right: H H, one three eight nine, four zero zero five?"
    assert callers_words(ok, caller) == []
    assert callers_words("Yes, that's correct. I've found it.", ["Yes, that's correct."]) == []


def test_an_assistant_saying_it_did_not_follow_a_clear_caller_is_refused():
    """Seen on the 1.5B model: "Sorry, I misunderstood your question. Can you please provide me
    with the project name ..." (an accepted call, after a side request it had just answered),
    and "Sorry, I didn't understand." after "I have a meeting in about fifteen minutes." The
    other side: the offline assistant's own resume leads ("Let me say that again.") pass."""
    import random as _random

    from bargein.generators import phrases as P

    plan = RoundPlan(round=3, stage="find_order", assistant_action="ask",
                     unit=Unit(kind="inform", stage="find_order",
                               text="Do you have your order number nearby?"))
    for seen in ("Sorry, I didn't understand. Do you have your order number nearby?",
                 "Sorry, I misunderstood your question. Do you have your order number nearby?",
                 "Could you please repeat that? Do you have your order number nearby?"):
        errs = check_assistant(plan, AssistantTurn(content=seen))
        assert any("the caller was clear" in e for e in errs), seen
    ok = AssistantTurn(acknowledgement="A meeting soon, understood; I'll be quick.",
                       content="Do you have your order number nearby?")
    assert check_assistant(plan, ok) == []
    rng = _random.Random(3)
    leads = {P.pick(rng, "assistant", "resume_lead_full") for _ in range(200)}
    assert len(leads) > 5
    for lead in leads:
        turn = AssistantTurn(content=f"{lead} Do you have your order number nearby?")
        assert not any("the caller was clear" in e for e in check_assistant(plan, turn)), lead


def test_the_closing_question_before_the_end_is_refused():
    """Seen on the 1.5B model in an accepted call: "Is there anything else I can help with on
    order HH-6085-7028?" as the third message. At a closing step, or where the planned content
    asks it, it stays."""
    plan = RoundPlan(round=1, stage="find_order", assistant_action="inform",
                     unit=Unit(kind="inform", stage="find_order", text="The email matches the order."))
    early = AssistantTurn(content="The email matches the order. Is there anything else I can help "
                                  "with on order HH-6085-7028?")
    assert any("closes the call" in e for e in check_assistant(plan, early))
    assert check_assistant(plan, AssistantTurn(content="The email matches the order, thanks.")) == []
    text = "Your refund is on its way. Is there anything else I can help with today?"
    close = RoundPlan(round=9, stage="wrap_up", assistant_action="close",
                      unit=Unit(kind="close", stage="wrap_up", text=text))
    assert check_assistant(close, AssistantTurn(content=text)) == []
    planned = RoundPlan(round=9, stage="confirm_plan", assistant_action="inform",
                        unit=Unit(kind="inform", stage="confirm_plan", text=text))
    assert check_assistant(planned, AssistantTurn(content=text)) == []


def test_a_circumstance_volunteered_in_a_reply_is_taken_up(tmp_path):
    """Seen on the 1.5B model: "I'm moving to a new place in 14 days and will not be at this
    address much longer." (a plain reply) answered by the next talking point alone, six answers
    in two plans, and the call failed. The take-up is the offline agent's when the model's turn
    names nothing of it; the verifier's check (the instrument) finds it taken up."""
    import random

    from bargein.generators.conversation import _partial
    from bargein.generators.llm_agents import LLMAgents, turn_verdicts
    scn, conv, plan = _first_plan(tmp_path, lambda p: (
        p.recovery is None and p.ack.get("kind") == "hidden" and p.unit is not None and p.unit.text))

    class Model:
        def __init__(self):
            self.sent = []

        async def structured(self, messages, schema, **kw):
            self.sent.append(messages)
            return schema(acknowledgement="Thanks, I have that.", content=plan.unit.text)

    model = Model()
    i = plan.message_index
    turn = asyncio.run(LLMAgents(scn, model, "test").assistant_turn(
        plan, list(conv.messages[:i]), random.Random(0), 0))
    assert len(model.sent) == 1 and "Acknowledge first" not in model.sent[0][-1]["content"]
    assert turn.acknowledgement not in ("", "Thanks, I have that.") and plan.unit.text in turn.content
    so_far = _partial(scn, list(conv.messages[:i]), [p for p in conv.plan if p.message_index < i],
                      {k: g for k, g in conv.gold_recoveries.items() if k < i}, "test")
    assert not [e for e in turn_verdicts(so_far, plan, turn.text) if e.startswith("hidden_fact")]
    # without the take-up, the same turn is what the check refuses
    bare = turn_verdicts(so_far, plan, plan.unit.text)
    assert [e for e in bare if e.startswith("hidden_fact")]


def test_the_assistant_model_is_not_told_the_callers_details_before_they_say_them(tmp_path):
    """The key points of later steps named the caller's details ("I have parcel 33-115-0785 at
    9550 Delmar Ln, owned by Heather Murray"), and the 1.5B model said them before the caller
    had: its system message writes them as "[the caller's ...]" and keeps the company's records;
    it is the same text for every call of the conversation (the prefix a server reuses)."""
    from bargein.generators.llm_messages import assistant_messages, assistant_system
    from bargein.generators.system_message import CALLER_KINDS, held_keys

    checked = 0
    for scn in scenario_batch(12, 7, tmp_path):
        system = assistant_system(scn)
        held = set(held_keys(scn.kb))
        for f in scn.kb.user_facts:
            if f.kind in CALLER_KINDS and f.key not in held and len(f.value) >= 3:
                assert f.value not in system, (f.key, f.value)
                checked += 1
        for k in held:
            assert scn.kb.fact(k).value in system, k
        conv = run(scn, 0)
        firsts = {assistant_messages(p, scn, conv.messages[:p.message_index])[1][0]["content"]
                  for p in conv.plan[:6]}
        assert firsts == {system}
    assert checked >= 12
