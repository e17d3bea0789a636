"""The LLM path end to end: every conversation agent through the OpenAI SDK against the loopback
server (a scripted model answering from each prompt), then rubrics, the verifier-modifier loop,
eval items and exports. Covers a re-ask, a conversation that fails with evidence, a fixable
issue repaired by the modifier and an unfixable one discarded."""

from __future__ import annotations

import json
import re

import pytest

from bargein.generators.assistant_sim import brand
from bargein.generators.conversation import generate_conversations
from bargein.generators.planner import stage_units
from bargein.generators.scenarios import generate_scenarios
from doubles.scripted_llm import Call, ScriptedLLM
from bargein.llm import get_llm
from bargein.records import Scenario
from bargein.testing.loopback import LoopbackLLMServer

pytestmark = pytest.mark.integration
SPEC = "openai:scripted-agents"
FIXED = "Okay, that works for me."


def _entries(prompt: str) -> list[tuple[int, str, str, bool]]:
    """(index, role, text, is_interjection) of the conversation listed in a verifier prompt."""
    out, cut = [], False
    for line in prompt.splitlines():
        m = re.match(r"^\[(\d+)\] (user|assistant): (.*)$", line)
        if m:
            out.append((int(m.group(1)), m.group(2), m.group(3), cut and m.group(2) == "user"))
            cut = False
        elif line.strip().startswith("(cut by"):
            cut = True
    return out


_VALUE = re.compile(r"\d|@|\b[A-Z](?:[ ,]+[A-Z]\b){2,}|\b(?:(?:zero|one|two|three|four|five|six|seven|"
                    r"eight|nine)[ ,]+){2,}", re.I)


class Script:
    """Overrides: A's first interjection it can tell is A's breaks the plan once (re-asked); C's
    assistant turns always do (the conversation fails); the verifier finds a fixable issue in A and an unfixable one in B."""

    def __init__(self, a: Scenario, b: Scenario, c: Scenario):
        self.a, self.b, self.c = brand(a), brand(b), brand(c)
        self.broke_a = False

    def __call__(self, call: Call) -> str | None:
        p = call.prompt
        if call.schema == "AssistantTurn" and self.c in p:     # C's system prompt
            return json.dumps({"acknowledgement": "", "content": "Your order [order_id] is ready."})
        if call.schema == "UserInterjection":
            p = json.dumps(call.request["messages"])       # the call's turns name the brand
            if self.a in p and not self.broke_a:
                self.broke_a = True
                return json.dumps({"interjection": " "})
        if call.schema == "VerifierReport":
            entries = _entries(p)
            if self.a in p:
                # a plain caller line (no code or number read out: "make it natural" may not
                # lose a value, and the modifier refuses a rewrite that does)
                j = next(i for i, role, text, inter in entries if role == "user" and not inter
                         and i > 0 and not _VALUE.search(text))
                if dict((i, t) for i, _, t, _ in entries)[j] != FIXED:
                    return json.dumps({"issues": [{
                        "check": "naturalness", "message_index": j, "fixable": True,
                        "issue": "sounds scripted", "instruction": "make it a short natural reply"}]})
            if self.b in p:
                j = next(i for i, role, _, inter in entries if inter)
                return json.dumps({"issues": [{
                    "check": "type_fit", "message_index": j, "fixable": False,
                    "issue": "the interjection does not fit its type"}]})
        if call.schema == "ModifierOutput":
            wanted = [int(k) for k in re.findall(r"^- message (\d+):", p, re.M)]
            return json.dumps({"edits": [{"message_index": k, "text": FIXED} for k in wanted]})
        return None


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    res = generate_scenarios(40, 13, workdir=tmp_path_factory.mktemp("scn"), progress=False)
    picked, brands = [], set()
    for s in res.outputs:       # four scenarios whose opening line names their brand, so a
        first = stage_units(s, s.kb.workflow.start)[0].text     # prompt tells them apart
        if brand(s) not in brands and brand(s) in first:
            brands.add(brand(s))
            picked.append(s)
    assert len(picked) >= 4
    return picked[:4]


def _run(scenarios, workdir, resamples=0):
    """``resamples=0``: one attempt per scenario, so the counts below are those of the script
    (re-simulation has its own test)."""
    a, b, c, _ = scenarios
    model = ScriptedLLM(scenarios, override=Script(a, b, c))
    with LoopbackLLMServer(responder=model) as srv:
        llm = get_llm(SPEC, workdir=workdir, base_url=srv.openai_base_url, concurrency=16)
        run = generate_conversations(scenarios, seed=3, workdir=workdir, llm=SPEC,
                                     resources={"llm": llm}, progress=False, resamples=resamples)
        return run, srv.requests


def test_a_discarded_or_failed_scenario_is_simulated_again(scenarios, tmp_path):
    """B (always discarded by the scripted verifier) and C (its assistant turns always break the
    plan) get a second attempt of their own: its own stage, seed and conversation id, listed in
    verified.jsonl beside the first; A and D, accepted at once, are not simulated again."""
    a, b, c, d = scenarios
    run, _ = _run(scenarios, tmp_path / "w", resamples=1)
    again = run.results["simulate.attempt1"]
    assert [conv.scenario.id for conv in again.outputs] == [b.id]
    assert [f.item_id for f in again.failures] == [c.id]
    assert again.failures[0].error_type == "GenerationFailed"
    tries_b = [v for v in run.verified if v.conversation.scenario.id == b.id]
    assert len(tries_b) == 2 and not any(v.accepted for v in tries_b)
    assert tries_b[0].conversation.id != tries_b[1].conversation.id
    assert tries_b[1].conversation.id == again.outputs[0].id
    assert [v.conversation.scenario.id for v in run.verified if v.accepted] == [a.id, d.id]
    written = [json.loads(x)["id"] for x in (tmp_path / "w" / "verified.jsonl").read_text().splitlines()]
    assert written == [v.id for v in run.verified] and len(written) == 4
    s = run.stats
    assert s["simulated"] == 4 and s["conversations"] == 2 and s["resampled"] == 0
    assert s["discards"]["simulate: GenerationFailed"] == 1
    assert s["discards"]["simulate.attempt1: GenerationFailed"] == 1


def test_llm_path_end_to_end(scenarios, tmp_path):
    a, b, c, d = scenarios
    run, requests = _run(scenarios, tmp_path / "w")
    # the agents' structured calls; the free-text ones are the DPO export's on-policy answers
    policy = [r for r in requests if "response_format" not in r.json]
    requests = [r for r in requests if "response_format" in r.json]
    sim = run.results["simulate"]
    assert [conv.scenario.id for conv in sim.outputs] == [a.id, b.id, d.id]
    assert all(conv.agents == SPEC for conv in sim.outputs)

    # C: every assistant turn broke the plan -> re-asked, re-planned, then failed with evidence
    (fail,) = sim.failures
    assert fail.item_id == c.id and fail.error_type == "GenerationFailed"
    rounds = fail.evidence["rounds"]
    # a cut found impossible in code before any model call spends none of the 3 tries
    spent = [r for r in rounds if not r["evidence"].get("before_any_call")]
    assert len(spent) == 3 and [r["replan"] for r in spent] == [0, 1, 2]
    # (a plan whose cut-in has nothing to react to is re-planned before any model call)
    asked = [r for r in rounds if "attempts" in r["evidence"]]
    assert asked and all("cannot happen in this turn" in r["reason"] for r in rounds
                         if r not in asked)
    attempts = asked[0]["evidence"]["attempts"]
    assert len(attempts) == 3 and any("does not deliver the planned content" in e for e in attempts[0]["errors"])

    # A: the first bad interjection was re-asked with the errors, then answered validly
    reasks = [r for r in requests if "breaks the plan" in json.dumps(r.json["messages"])]
    assert reasks and all(r.json["response_format"]["json_schema"]["name"] in
                          ("UserInterjection", "PlannerOut", "AssistantTurn", "UserReply")
                          for r in reasks)

    # prompts are conversations: the caller's instructions in the system role, the call as real
    # turns (the assistant's words as the other side), then a direction for this turn; the turn
    # answered is the last heard one
    replies = [r for r in requests if r.json["response_format"]["json_schema"]["name"] == "UserReply"]
    assert replies
    for r in replies:
        msgs = r.json["messages"]
        assert msgs[0]["role"] == "system" and "CUSTOMER" in msgs[0]["content"]
        di = next(i for i, m in enumerate(msgs) if m["content"].startswith("(Direction"))
        assert di >= 2 and msgs[di - 1]["role"] == "user", msgs   # the assistant's words, heard
    said = {m.text for v in run.verified for m in v.conversation.messages if m.role == "assistant"}
    answered = {next(m for m in reversed(r.json["messages"][:-1]) if not m["content"].startswith(
        "(Direction"))["content"] for r in replies if r.json["messages"][-1]["content"].startswith("(Direction")}
    assert answered & said
    # the system message is the same on every call of one agent in a conversation (prefix reuse)
    systems = {}
    for r in requests:
        name = r.json["response_format"]["json_schema"]["name"]
        if name in ("UserReply", "AssistantTurn"):
            first = r.json["messages"][0]["content"]
            who = [x for x in first.splitlines() if x.startswith(("You are the voice assistant of",
                                                                "Your manner:"))]
            systems.setdefault((name, *who), set()).add(first)
    assert systems and all(len(v) == 1 for v in systems.values()), [(k, [x[:3000] for x in v]) for k, v in systems.items() if len(v) > 1][:1]

    # verifier-modifier: A repaired in one round, B discarded with the unfixable reason
    by_scn = {v.conversation.scenario.id: v for v in run.verified}
    va, vb, vd = by_scn[a.id], by_scn[b.id], by_scn[d.id]
    assert va.accepted and va.rounds == 1
    fixed = [v for v in va.verdicts if v.check == "llm_naturalness"]
    assert len(fixed) == 1 and va.conversation.messages[fixed[0].message_index].text == FIXED
    # B is discarded: by the scripted verifier's unfixable verdict, unless a deterministic check
    # already found an unfixable defect of its own (they run first; then the verdict is theirs)
    assert not vb.accepted and vb.discard_reasons
    llm_reasons = [r for r in vb.discard_reasons if r.startswith(("llm_type_fit", "interjection_grounded"))]
    own = [v for v in vb.verdicts if not v.check.startswith("llm_") and not v.fixable]
    assert llm_reasons or own, vb.discard_reasons
    assert vd.accepted

    # eval items and exports only from accepted conversations, with rubrics from the LLM
    convs = {v.conversation.id for v in (va, vd)}
    items = run.items + run.train_items          # test pool + training pool (split by goal)
    cut = {v.conversation.id for v in (va, vd) if v.conversation.interruptions}
    assert items and {i.conversation_id for i in items} == cut and cut <= convs
    assert all(2 <= len(i.rubric.rq_criteria) <= 4 for i in items)
    assert run.exports == {"sft": len(run.train_items), "dpo": len(run.train_items)}
    assert bool(policy) == bool(run.train_items)      # DPO rejects asked of the model itself
    s = run.stats
    assert s["conversations"] == 2 and s["simulated"] == 3
    assert s["discards"]["simulate: GenerationFailed"] == 1 and sum(s["discards"].values()) == 2
    assert set(s["discards"]) & ({"verify: llm_type_fit", "verify: interjection_grounded"}
                                 | {f"verify: {v.check}" for v in own})

    # the user simulator saw the plan, never the raw intent
    user_reqs = [r for r in requests if r.json["response_format"]["json_schema"]["name"]
                 in ("UserReply", "UserInterjection")]
    assert user_reqs
    for r in user_reqs:
        text = json.dumps(r.json["messages"])
        assert "interruption_probs" not in text and "interruption_rate" not in text
    # the assistant never learned whether it would be cut
    for r in requests:
        if r.json["response_format"]["json_schema"]["name"] == "AssistantTurn":
            direction = next(m["content"] for m in r.json["messages"]
                             if m["content"].startswith("(Direction"))
            plan = json.loads(re.search(r"<plan>\n(.*?)\n</plan>", direction,
                                        re.S).group(1))
            assert not {"interrupt", "cut_fraction", "overlap_ms"} & set(plan)


def test_llm_path_is_deterministic(scenarios, tmp_path):
    run1, _ = _run(scenarios, tmp_path / "one")
    run2, _ = _run(scenarios, tmp_path / "two")
    for name in ("conversations.jsonl", "verified.jsonl", "eval_items.jsonl", "dpo.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert run1.stats == run2.stats
