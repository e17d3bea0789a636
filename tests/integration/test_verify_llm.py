"""The LLM path of the verifier–modifier loop, end to end through the OpenAI SDK against the
loopback server (scripted verifier / modifier answers)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from bargein.llm import get_llm
from bargein.records.conversation import VerifiedConversation
from bargein.runner import run_stage
from bargein.testing.loopback import LoopbackLLMServer
from bargein.verify import EditCommand, amodify, averify_conversation, verify_stage
from doubles.conversation_examples import EXAMPLE_TURNS, build_conversation, example_scenario

pytestmark = pytest.mark.integration

SCN = example_scenario()
FIXED_11 = "I already did all that, can we just book someone?"
FIXED_19 = "Yes, please do that. Thanks!"


def conv_with(changes):
    return build_conversation(SCN, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)])


# fixable: a deterministic issue that only a rewrite can fix (reacting to the unheard "power
# cord" in one sentence) and an LLM naturalness issue (markdown in a spoken turn)
FIXABLE = conv_with({11: ("user", "I already unplugged the power cord, can we just book someone?"),
                     19: ("user", "Yes, please do that. **Thanks!**")})
# unfixable: the pushback interjection agrees with the assistant (a type the LLM check catches)
UNFIXABLE = conv_with({15: ("user", "Thursday? Great, that works perfectly.")})


def _agent(req: dict) -> tuple[str, str, int]:
    """(agent, its prompt, attempt number) of a chat request. The verifier's chat is its
    instructions (system), two worked examples (user, assistant turns), then the call."""
    msgs = req["messages"]
    users = [m["content"] for m in msgs if m["role"] == "user"]
    if msgs[0]["role"] == "system" and msgs[0]["content"].startswith("You are the quality verifier"):
        return "verifier", users[2], len(users) - 2
    if msgs[0]["role"] == "system" and msgs[0]["content"].startswith("You check one exchange"):
        return "reply_checker", users[-1], 1
    return "modifier", users[0], len(users)


RESPONDS = json.dumps({"asked": "what the assistant asked", "responds": True})


def verifier_answers(*answers: dict, replies=lambda prompt: RESPONDS):
    """A responder: the whole-call verifier's answers in order; the reply checker's by
    ``replies(prompt)`` (every reply responds, unless a test says otherwise)."""
    queue = [json.dumps(a) for a in answers]

    def respond(req: dict) -> str:
        agent, prompt, _ = _agent(req)
        if agent == "reply_checker":
            return replies(prompt)
        return queue.pop(0)
    return respond


def responder(req: dict) -> str:
    agent, prompt, attempt = _agent(req)
    if agent == "reply_checker":
        return RESPONDS
    if agent == "verifier":
        if "**Thanks!**" in prompt:
            return json.dumps({"issues": [{
                "check": "naturalness", "message_index": 19, "fixable": True,
                "issue": "markdown emphasis in a spoken turn",
                "instruction": "remove the asterisks"}]})
        if "Great, that works perfectly." in prompt:
            if attempt == 1:     # first answer names a message that does not exist: re-asked
                return json.dumps({"issues": [{"check": "type_fit", "message_index": 99,
                                               "issue": "x", "fixable": False}]})
            return json.dumps({"issues": [{
                "check": "type_fit", "message_index": 15, "fixable": False,
                "issue": "the pushback interjection agrees with the assistant"}]})
        return json.dumps({"issues": []})
    wanted = sorted(int(k) for k in re.findall(r"^- message (\d+):", prompt, re.M))
    texts = {11: FIXED_11, 19: FIXED_19}
    return json.dumps({"edits": [{"message_index": k, "text": texts[k]} for k in wanted]})


@pytest.fixture
def server():
    with LoopbackLLMServer(responder=responder) as srv:
        yield srv


def test_llm_loop_repairs_the_fixable_and_discards_the_unfixable(server, tmp_path):
    llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=server.openai_base_url)

    async def both():
        return await asyncio.gather(averify_conversation(FIXABLE, llm=llm),
                                    averify_conversation(UNFIXABLE, llm=llm))

    fixed, dropped = asyncio.run(both())

    assert fixed.accepted and fixed.rounds == 1
    msgs = fixed.conversation.messages
    assert msgs[11].text == FIXED_11 and msgs[10].interruption.interjection == FIXED_11
    assert msgs[19].text == FIXED_19
    assert {(v.round, v.check) for v in fixed.verdicts} == {
        (0, "undelivered_content"), (0, "llm_naturalness")}
    assert [m for i, m in enumerate(msgs) if i not in (10, 11, 19)] == \
        [m for i, m in enumerate(FIXABLE.messages) if i not in (10, 11, 19)]

    assert not dropped.accepted and dropped.rounds == 0
    # a pushback that agrees: the deterministic check finds it first (the LLM is then not asked)
    assert dropped.discard_reasons == (
        "interjection_grounded: a pushback that does not object to anything (message 15)",)
    assert dropped.conversation == UNFIXABLE
    assert [(v.round, v.check, v.fixable) for v in dropped.verdicts] == \
        [(0, "interjection_grounded", False)]

    # the modifier was asked once and saw neither the KB, the goal, nor the intent
    mod = [r for r in server.requests if _agent(r.json)[0] == "modifier"]
    assert len(mod) == 1
    sent = json.dumps(mod[0].json["messages"])
    kb = SCN.kb
    secrets = [SCN.intent.profile, SCN.goal.description, SCN.system_prompt, *kb.guidelines,
               *(s.name for s in kb.workflow.stages), *(s.description for s in kb.workflow.stages)]
    assert all(s not in sent for s in secrets)
    # the verifier did see them
    ver = next(r for r in server.requests if _agent(r.json)[0] == "verifier")
    assert SCN.intent.profile in json.dumps(ver.json["messages"])


def test_llm_stage_through_the_runner_caches(server, tmp_path):
    llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=server.openai_base_url)
    stage = verify_stage("openai:loopback-verifier", max_rounds=2)
    assert stage.kind == "io" and {"verifier", "verifier.system", "reply_checker",
                                   "modifier", "modifier.system"} <= set(stage.prompts)
    res = run_stage(stage, [FIXABLE, UNFIXABLE], workdir=tmp_path / "w", seed=3,
                    resources={"llm": llm})
    assert not res.failures, res.failures
    assert [o.accepted for o in res.outputs] == [True, False]
    assert isinstance(res.outputs[0], VerifiedConversation)
    n = server.request_count
    again = run_stage(stage, [FIXABLE, UNFIXABLE], workdir=tmp_path / "w", seed=3,
                      resources={"llm": llm})
    assert again.cached == 2 and server.request_count == n
    assert [o.model_dump_json() for o in again.outputs] == [o.model_dump_json() for o in res.outputs]


def test_verifier_that_never_answers_validly_fails_the_item_with_evidence(tmp_path):
    bad = json.dumps({"issues": [{"check": "other", "message_index": 500, "issue": "odd wording",
                                  "fixable": True, "instruction": "?"}]})
    with LoopbackLLMServer(responder=lambda req: bad) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=srv.openai_base_url)
        # a conversation the deterministic checks pass, so the LLM verifier is asked
        res = run_stage(verify_stage("openai:loopback-verifier"), [conv_with({})],
                        workdir=tmp_path / "w", seed=1, resources={"llm": llm})
    assert res.outputs == [] and len(res.failures) == 1
    f = res.failures[0]
    assert f.error_type == "GenerationFailed" and "verifier" in f.reason
    assert "outside 0..20" in json.dumps(f.evidence)


def test_llm_modifier_rejects_edits_outside_the_request_and_broken_cuts(tmp_path):
    """A rewrite of an unrequested message, or one that drops the heard prefix of a cut message,
    is re-asked; what is still wrong after the re-asks is skipped with the reason."""
    conv = conv_with({})
    heard = conv.messages[10].heard_text
    answers = [
        {"edits": [{"message_index": 3, "text": "Right."}]},                      # not requested
        {"edits": [{"message_index": 10, "text": "Let me explain the restart first."}]},  # no prefix
        {"edits": [{"message_index": 10, "text": heard + " now: unplug the power cord."}]},
    ]
    with LoopbackLLMServer(answers=[json.dumps(a) for a in answers]) as srv:
        llm = get_llm("openai:loopback-modifier", workdir=tmp_path, base_url=srv.openai_base_url)
        edit = EditCommand(op="rewrite", message=10, instruction="shorten the unheard part")
        res = asyncio.run(amodify(conv.messages, [edit], llm=llm))
        assert srv.request_count == 3
        last = srv.requests[-1].json["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "was not to be edited" in last[3]["content"]
    assert "word-boundary prefix" in last[5]["content"]
    new = res.messages[10]
    assert res.applied == [edit] and new.text == heard + " now: unplug the power cord."
    assert new.heard_text == heard and new.interruption.cut_char_offset == len(heard)
    assert res.messages[:10] == conv.messages[:10] and res.messages[11:] == conv.messages[11:]

    with LoopbackLLMServer(answers=[json.dumps(answers[0])] * 3) as srv:
        llm = get_llm("openai:loopback-modifier", workdir=tmp_path / "2", base_url=srv.openai_base_url)
        res = asyncio.run(amodify(conv.messages, [edit], llm=llm))
    assert res.applied == [] and res.messages == conv.messages
    assert "LLM modifier failed after 3 attempts" in res.skipped[0][1]


def test_cli_with_llm(server, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from bargein.cli import cli
    from bargein.store import read_jsonl, write_jsonl

    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    src = tmp_path / "convs.jsonl"
    write_jsonl(src, [FIXABLE, UNFIXABLE])
    out = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "w"), "verify", "--conversations",
                                   str(src), "--llm", "openai:loopback-verifier"])
    assert out.exit_code == 0, out.output
    assert "1 accepted (1 repaired), 1 discarded, 0 failed" in out.output
    assert "interjection_grounded" in out.output and "llm_naturalness" in out.output
    rows = read_jsonl(tmp_path / "w" / "verified.jsonl", VerifiedConversation)
    assert [r.accepted for r in rows] == [True, False]
    assert rows[0].conversation.messages[19].text == FIXED_19


def test_llm_modifier_refuses_an_edit_that_swaps_two_messages(tmp_path):
    """Edits are checked against the original message: swapping two messages' content (each
    text valid on its own) is refused and re-asked, and never applied."""
    conv = conv_with({})
    i, j = [m.index for m in conv.messages if m.role == "user" and m.interruption is None
            and len(m.text.split()) >= 4][:2]
    a, b = conv.messages[i].text, conv.messages[j].text
    swap = {"edits": [{"message_index": i, "text": b}, {"message_index": j, "text": a}]}
    with LoopbackLLMServer(answers=[json.dumps(swap)] * 3) as srv:
        llm = get_llm("openai:loopback-modifier", workdir=tmp_path, base_url=srv.openai_base_url)
        edits = [EditCommand(op="rewrite", message=k, instruction="make it sound natural")
                 for k in (i, j)]
        res = asyncio.run(amodify(conv.messages, edits, llm=llm))
        assert srv.request_count == 3
        reask = srv.requests[-1].json["messages"][-1]["content"]
    assert f"copies message {j}" in reask and f"copies message {i}" in reask
    assert res.applied == [] and res.messages == conv.messages
    assert all("copies message" in why for _, why in res.skipped)


UNASKED = "I'd like the aisle seat on the morning flight, please."


def test_a_corrupted_conversation_is_rejected_and_the_verifier_sees_what_it_needs(tmp_path):
    """A caller reply to a question never asked (message 5 answers the zip-code question with a
    seat). The deterministic checks pass it, so the verifier model is asked, in a chat: its
    instructions as the system message (with the coherence and consistency checks), two worked
    examples as earlier turns, the call last. A coherence issue is never fixable (the model's
    ``fixable: true`` is overruled): the conversation is discarded, the modifier never asked.
    An answer that copies the worked example's particulars is re-asked.""" 
    corrupted = conv_with({5: ("user", UNASKED)})
    copied = {"issues": [{"check": "coherence", "message_index": 5, "fixable": False,
                          "issue": "the caller asks for a window seat instead of the digits"}]}
    found = {"issues": [{"check": "coherence", "message_index": 5, "fixable": True,
                         "issue": "the caller answers a question nobody asked (a seat) instead "
                                  "of giving the billing zip code", "instruction": "give the zip",
                         "quote": "the aisle seat on the morning flight"}]}
    with LoopbackLLMServer(responder=verifier_answers(copied, found)) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=srv.openai_base_url)
        out = asyncio.run(averify_conversation(corrupted, llm=llm))
        reqs = [r.json for r in srv.requests]
    assert not out.accepted and out.rounds == 0
    assert out.discard_reasons == ("llm_coherence: the caller answers a question nobody asked (a "
                                   "seat) instead of giving the billing zip code (message 5)",)
    assert [(v.check, v.fixable, v.edit) for v in out.verdicts] == [("llm_coherence", False, None)]
    reqs = [r for r in reqs if _agent(r)[0] != "reply_checker"]
    assert len(reqs) == 2                          # the copied answer re-asked; no modifier call
    first = reqs[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "user", "assistant", "user"]
    system, call = first[0]["content"], first[-1]["content"]
    assert "[coherence]" in system and "[consistency]" in system
    assert f"[5] user: {UNASKED}" in call and "4471 0932 58" in call      # the call and the facts
    assert "[4] assistant:" in call and call.index("[4] assistant:") < call.index(f"[5] user:")
    assert "copies the worked example" in reqs[1]["messages"][-1]["content"]


def test_unfounded_coherence_and_consistency_issues_are_dropped(tmp_path):
    """A small model's invented issue is not obeyed: a coherence issue whose quote is not in the
    message it names, and a consistency issue whose other value is nowhere in the knowledge base
    or the call, are left out (the clean call passes); a grounded one is kept."""
    clean = conv_with({})
    invented = {"issues": [
        {"check": "coherence", "message_index": 15, "fixable": False, "issue": "off-topic reply",
         "quote": "the outage day is Tuesday"},
        {"check": "consistency", "message_index": 20, "fixable": False,
         "issue": "the visit day contradicts what was agreed", "quote": "Thursday between 9 and 11",
         "conflicts_with": "Wednesday afternoon"}]}
    with LoopbackLLMServer(responder=verifier_answers(invented)) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=srv.openai_base_url)
        out = asyncio.run(averify_conversation(clean, llm=llm))
    assert out.accepted and out.verdicts == ()
    friday = conv_with({20: ("assistant", "Done. You're booked for Friday between 2 and 4 pm and on "
                                          "the cancellation list. Is there anything else?",
                             {"stage": "wrap_up"})})
    grounded = {"issues": [{"check": "consistency", "message_index": 20, "fixable": False,
                            "issue": "the booking day contradicts the agreed Thursday visit",
                            "quote": "Friday between 2 and 4 pm",
                            "conflicts_with": "Thursday between 9 and 11 am"}]}
    with LoopbackLLMServer(responder=verifier_answers(grounded)) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path / "2", base_url=srv.openai_base_url)
        out = asyncio.run(averify_conversation(friday, llm=llm))
    assert not out.accepted and out.discard_reasons[0].startswith("llm_consistency:")


def test_a_reply_to_another_question_is_rejected_by_the_reply_checker(tmp_path):
    """Two replies swapped (each answers the other's question; roles and order intact): the
    whole-call verifier finds nothing, the reply checker is asked about each exchange on its
    own (the assistant's words, then the caller's), and a "no" given twice rejects the call."""
    swapped = conv_with({5: EXAMPLE_TURNS[9], 9: EXAMPLE_TURNS[5]})
    asked: list[str] = []

    def replies(prompt: str) -> str:
        asked.append(prompt)
        off = ("lights are amber" in prompt and "zip code" in prompt) or (
            "60614" in prompt and "modem lights" in prompt)
        return json.dumps({"asked": "another question", "responds": not off})

    with LoopbackLLMServer(responder=verifier_answers({"issues": []}, replies=replies)) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=srv.openai_base_url)
        out = asyncio.run(averify_conversation(swapped, llm=llm))
    assert not out.accepted
    assert [(v.check, v.message_index, v.fixable) for v in out.verdicts] == [
        ("llm_coherence", 5, False), ("llm_coherence", 9, False)]
    # four exchanges; each "no" asked twice
    assert len(asked) == 6 and asked[0].startswith('Assistant: "Thanks for calling Northwind')
    assert any(p.rstrip().endswith('Caller: "It started Monday around 7 pm, and the lights are amber."')
               for p in asked)


def test_an_llm_issue_on_a_message_the_modifier_is_about_to_edit_waits_for_the_next_round(tmp_path):
    """Seen on the 1.5B verifier (bench/llm_real.py): the deterministic checks' fixable issue
    (a cut inside a value) restated as an unfixable coherence issue on the same message, and the
    conversation discarded for what the modifier was about to fix. An LLM issue on a message
    with a pending edit is left to the next round, where every check runs on the edited call;
    an unfixable issue on another message still discards it (the same round)."""
    conv = conv_with({11: ("user", "I already unplugged the power cord, can we just book someone?")})
    restated = {"issues": [{"check": "coherence", "message_index": 11, "fixable": False,
                            "issue": "the caller reacts to words that were never heard",
                            "quote": "unplugged the power cord"}]}
    edit = {"edits": [{"message_index": 11, "text": FIXED_11}]}
    with LoopbackLLMServer(responder=verifier_answers(restated, edit, {"issues": []})) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path, base_url=srv.openai_base_url)
        out = asyncio.run(averify_conversation(conv, llm=llm))
    assert out.accepted and out.rounds == 1
    assert out.conversation.messages[11].text == FIXED_11
    assert "llm_coherence" not in {v.check for v in out.verdicts}
    # elsewhere, the same unfixable issue discards the call
    other = {"issues": [{**restated["issues"][0], "message_index": 3,
                         "quote": EXAMPLE_TURNS[3][1].split(",")[0]}]}
    with LoopbackLLMServer(responder=verifier_answers(other)) as srv:
        llm = get_llm("openai:loopback-verifier", workdir=tmp_path / "b", base_url=srv.openai_base_url)
        dropped = asyncio.run(averify_conversation(conv, llm=llm))
    assert not dropped.accepted and any(r.startswith("llm_coherence") for r in dropped.discard_reasons)
