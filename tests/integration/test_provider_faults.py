"""Provider faults at 25% and 60% of requests (429s, 500s, bodies that are not JSON, answers
that are not JSON, of the wrong shape or cut off) through the official SDK over real HTTP:
nothing is lost (every scenario is an output or a failure with its evidence), nothing is
duplicated, and every scenario that succeeds is byte-identical to the one a fault-free run
produced — faults change how often we ask, never what we keep."""

from __future__ import annotations

import pytest
from test_scenarios_llm import DOMAINS, responder

from bargein.generators.scenarios import generate_scenarios
from bargein.testing.loopback import LoopbackLLMServer

pytestmark = pytest.mark.integration

N, SEED = 8, 5
KINDS = ["rate_limit", "server_error", "malformed_json", "invalid_json", "schema_invalid",
         "truncated"]


def _run(tmp_path, name: str, domains=DOMAINS, **server):
    with LoopbackLLMServer(responder=responder, retry_after_s=0.01, seed=16, **server) as srv:
        res = generate_scenarios(N, SEED, llm="openai:loop-model", workdir=tmp_path / name,
                                 domains=",".join(domains), base_url=srv.openai_base_url,
                                 progress=False)
        return res, srv.request_count


@pytest.mark.parametrize("rate", [0.25, 0.60])
def test_faults_lose_and_duplicate_nothing(tmp_path, rate):
    import json

    res, requests = _run(tmp_path, f"faults-{rate}", fault_rate=rate, fault_kinds=KINDS)
    # the fault-free reference over the domains whose goal writer succeeded (a domain whose
    # goals failed is left out of sampling, which changes the sampled specs)
    goals = (tmp_path / f"faults-{rate}" / "goals.jsonl").read_text().splitlines()
    domains = [d for d in DOMAINS if d in {json.loads(g)["domain"] for g in goals}]
    ref_res, ref_requests = _run(tmp_path, "clean", domains=domains)
    ref = {s.id: s.model_dump_json() for s in ref_res.outputs}
    out_ids = [s.id for s in res.outputs]
    per_spec = [f.item_id for f in res.failures if f.stage == "scenarios"]
    per_domain = [f for f in res.failures if f.stage == "goals"]
    assert len(res.failures) == len(per_spec) + len(per_domain)
    assert len(out_ids) == len(set(out_ids)), "a scenario came out twice"
    assert len(per_spec) == len(set(per_spec)), "a scenario failed twice"
    # a domain whose goal writer failed is left out of sampling: still N specs, each accounted
    assert len(out_ids) + len(per_spec) == N, "a scenario was lost"
    assert len(ref) + len(ref_res.failures) == N
    for s in res.outputs:               # what we keep does not depend on the faults
        assert s.id in ref and s.model_dump_json() == ref[s.id]
    for f in res.failures:                      # a failure carries its evidence
        assert f.reason and f.error_type
    # the faults were real: more requests than the clean run needed
    assert requests > ref_requests
    # the outputs on disk hold each surviving scenario exactly once
    lines = (tmp_path / f"faults-{rate}" / "scenarios.jsonl").read_text().splitlines()
    assert len(lines) == len(out_ids)
