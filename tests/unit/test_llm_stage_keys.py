"""Per-agent models are part of the stage cache keys: changing the model of one agent recomputes
the stages that agent works in, and only those (issue 17, §7). A build config's ``llm_agents``
reaches every stage key and LLM client of that build."""

from __future__ import annotations

import json

import pytest

from bargein.generators.conversation import simulate_stage
from bargein.generators.rubric import rubric_stage
from bargein.generators.scenarios import generate_scenarios
from bargein.generators.scenarios_llm import llm_scenarios_stage
from bargein.llm import set_agent_models
from bargein.runner import Stage, run_stage
from bargein.testing import LoopbackLLMServer
from bargein.verify.loop import verify_stage

SPEC = "openai:sim"


def fingerprints() -> dict[str, str]:
    return {"simulate": simulate_stage(SPEC).fingerprint(), "rubric": rubric_stage(SPEC).fingerprint(),
            "verify": verify_stage(SPEC).fingerprint(),
            "scenarios": llm_scenarios_stage(SPEC).fingerprint()}


@pytest.fixture
def routes(monkeypatch):
    monkeypatch.delenv("BARGEIN_LLM_AGENTS", raising=False)
    yield set_agent_models
    set_agent_models(None)


@pytest.mark.parametrize("agent,stage", [("verifier", "verify"), ("modifier", "verify"),
                                         ("round_planner", "simulate"),
                                         ("user_simulator.interrupting", "simulate"),
                                         ("rubric_generator", "rubric"), ("kb_writer", "scenarios")])
def test_one_agents_model_changes_only_its_stages_key(routes, agent, stage):
    base = fingerprints()
    routes({agent: "openai:stronger"})
    first = fingerprints()
    routes({agent: "openai:other"})
    second = fingerprints()
    changed = {k for k in base if first[k] != base[k]}
    assert changed == {stage}
    assert second[stage] != first[stage] and {k for k in base if second[k] != base[k]} == {stage}
    routes({agent: SPEC})          # routed to the stage's own model: the same key as no route
    assert fingerprints() == base


def test_offline_stages_ignore_routes(routes):
    before = (simulate_stage().fingerprint(), verify_stage().fingerprint())
    routes({"verifier": "openai:stronger", "round_planner": "openai:x"})
    assert (simulate_stage().fingerprint(), verify_stage().fingerprint()) == before


def test_a_changed_verifier_model_recomputes_the_cached_verify_stage(routes, tmp_path, monkeypatch):
    """The real stage over the runner's cache: the same route is served from cache, another
    verifier model is computed again and its requests go to that model."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # seed 4: the offline conversation of seed 3 re-asks two values the caller gave (a generator
    # defect reasks_given_value discards before any model is asked); this test is about keys
    conv_run = generate_scenarios(1, 4, workdir=tmp_path / "scn", progress=False)
    sim = run_stage(simulate_stage(), conv_run.outputs, workdir=tmp_path / "sim", seed=4, progress=False)
    convs = run_stage(rubric_stage(), sim.outputs, workdir=tmp_path / "sim", seed=4, progress=False).outputs
    assert convs
    def clean(req):          # the whole-call verifier finds nothing; every reply responds
        if "ReplyCheck" in json.dumps(req.get("response_format") or req.get("messages")):
            return json.dumps({"asked": "x", "responds": True})
        return json.dumps({"issues": []})

    with LoopbackLLMServer(responder=clean) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)

        def verify(route: str):
            routes({"verifier": route})
            stage: Stage = verify_stage(SPEC)
            return run_stage(stage, convs, workdir=tmp_path / "v", seed=4, progress=False)

        a = verify("openai:judge-a")
        assert a.computed == len(convs) and not a.failures
        assert {r.json["model"] for r in srv.requests} == {"judge-a"}
        srv.clear()
        again = verify("openai:judge-a")
        assert again.cached == len(convs) and again.computed == 0 and not srv.requests
        b = verify("openai:judge-b")
        assert b.computed == len(convs) and b.cached == 0
        assert {r.json["model"] for r in srv.requests} == {"judge-b"}
