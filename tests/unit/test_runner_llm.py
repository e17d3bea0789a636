"""The runner driving LLM calls: concurrent io stages, failures with evidence, budget stops."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from bargein.llm import get_llm
from bargein.prompts import render
from bargein.records import ChatMessage, Failure
from bargein.runner import Stage, StageContext, run_stage
from bargein.store import read_jsonl
from bargein.testing import LoopbackLLMServer
from bargein.testing.wire import first_user_text

KEY = "sk-test-SECRET123"


class Echo(BaseModel):
    text: str


def responder(req):
    """Echo the text the prompt asks for; items named 'broken' always get prose instead."""
    prompt = first_user_text(req)
    if "broken" in prompt:
        return "I would rather not answer in JSON."
    return json.dumps({"text": prompt.split("repeats: ", 1)[1].strip().upper()})


async def echo_stage(item: ChatMessage, ctx: StageContext) -> ChatMessage:
    llm = ctx.resources["llm"]
    prompt = render("_selftest", text=item.content)
    out = await llm.structured([{"role": "user", "content": prompt}], Echo, agent="selftest",
                               max_reasks=1)
    return ChatMessage(role="assistant", content=out.text)


STAGE = Stage("echo", echo_stage, ChatMessage, prompts=("_selftest",), backends=("openai:gpt-4o-mini",),
              kind="io", concurrency=8)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def items(n, broken=()):
    return [ChatMessage(role="user", content=("broken " if i in broken else "") + f"item {i}")
            for i in range(n)]


def peak_concurrency(reqs):
    events = sorted([(r.t_start, 1) for r in reqs] + [(r.t_end, -1) for r in reqs])
    level = peak = 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    return peak


def test_io_stage_runs_llm_calls_concurrently_and_records_failures(key, tmp_path):
    cache = tmp_path / "llm_cache"
    # 0.4 s per answer: all eight slots overlap even when a loaded machine starts the requests
    # slowly (at 0.05 s the peak was once 7 under a load of 5)
    with LoopbackLLMServer(responder=responder, latency_s=0.4) as srv:
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path / "w1",
                      cache_dir=cache)
        res = run_stage(STAGE, items(16, broken={3, 11}), workdir=tmp_path / "w1", seed=1,
                        resources={"llm": llm, "ledger": llm.ledger})
        assert peak_concurrency(srv.requests) == 8
        assert srv.request_count == 14 + 2 * 2          # two attempts for each broken item
        srv.clear()
        again = run_stage(STAGE, items(16, broken={3, 11}), workdir=tmp_path / "w2", seed=1,
                          resources={"llm": llm, "ledger": llm.ledger})
        # a fresh workdir recomputes every item (failures too), but every LLM answer, the
        # re-asks of the broken items included, comes from the LLM cache: no request at all
        assert srv.request_count == 0
    assert [o.content for o in res.outputs] == [f"ITEM {i}" for i in range(16) if i not in (3, 11)]
    failures = read_jsonl(tmp_path / "w1" / "echo.failures.jsonl", Failure)
    assert [f.item_id for f in failures] == [items(16, {3, 11})[i].id for i in (3, 11)]
    f = failures[0]
    assert f.stage == "echo" and f.error_type == "GenerationFailed"
    assert [a["raw"] for a in f.evidence["attempts"]] == ["I would rather not answer in JSON."] * 2
    assert f.evidence["schema"] == "Echo" and "not valid JSON" in f.evidence["attempts"][0]["errors"][0]
    for name in ("echo.jsonl", "echo.failures.jsonl"):       # the cached re-run is byte-identical
        assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "w2" / name).read_bytes()
    assert again.computed == 14 and len(again.failures) == 2
    llm.flush()                                        # every cache entry and the ledger on disk
    assert len(list(cache.rglob("*.json"))) == 14 + 2 * 2
    for p in tmp_path.rglob("*"):
        assert not p.is_file() or KEY.encode() not in p.read_bytes()


def test_budget_stops_the_stage_cleanly_and_a_rerun_finishes(key, tmp_path):
    dear = {"gpt-4o-mini": {"input": 1e5, "output": 1e5}}   # 10 cents per token
    work = tmp_path / "w"
    with LoopbackLLMServer(responder=responder, latency_s=0.02) as srv:
        stage = Stage("echo", echo_stage, ChatMessage, prompts=("_selftest",), kind="io", concurrency=2)
        # each call reserves ~$80 (its prompt bytes + overhead + max_tokens) and costs ~$5:
        # a few calls fit in $100 before the next one's reservation no longer does
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=work,
                      budget_usd=100.0, prices=dear, max_tokens=16)
        res = run_stage(stage, items(12), workdir=work, seed=1, resources={"llm": llm, "ledger": llm.ledger})
        assert res.budget_stopped and not res.failures
        done = len(res.outputs)
        assert 2 <= done < 12 and res.skipped == 12 - done
        assert "budget reached" in res.summary()
        assert srv.request_count == done and llm.budget_stopped
        assert llm.ledger.spent_usd <= 100.0 and llm.ledger.reserved_usd == 0
        richer = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=work,
                         budget_usd=1e6, prices=dear, max_tokens=16)
        srv.clear()
        rest = run_stage(stage, items(12), workdir=work, seed=1, resources={"llm": richer})
        assert srv.request_count == 12 - done
    assert rest.cached == done and len(rest.outputs) == 12 and not rest.budget_stopped
    assert [o.content for o in rest.outputs] == [f"ITEM {i}" for i in range(12)]
