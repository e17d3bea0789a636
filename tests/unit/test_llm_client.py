"""LLMClient end to end: real openai/anthropic SDKs over HTTP against the loopback server."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from pydantic import BaseModel

from bargein.errors import BackendUnavailable, BudgetExceeded, ConfigError, GenerationFailed
from bargein.llm import get_llm, parse_spec
from bargein.records import ChatMessage
from bargein.testing import FAULT_KINDS, LoopbackLLMServer

KEY = "sk-test-SECRET123"
MODELS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}


class Echo(BaseModel):
    text: str
    n: int


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def llm_for(srv, provider, tmp_path, **kw):
    base = srv.openai_base_url if provider == "openai" else srv.anthropic_base_url
    kw.setdefault("workdir", tmp_path)
    return get_llm(MODELS[provider], base_url=base, **kw)


def ask(llm, text="hello", schema=Echo, **kw):
    return asyncio.run(llm.structured([{"role": "user", "content": text}], schema, agent="test", **kw))


def user_texts(req):
    return [m["content"] for m in req.json["messages"] if m["role"] == "user"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_structured_end_to_end(provider, keys, tmp_path):
    with LoopbackLLMServer(answers=['{"text": "hi", "n": 3}']) as srv:
        llm = llm_for(srv, provider, tmp_path)
        msgs = [ChatMessage(role="system", content="be terse"), {"role": "user", "content": "say hi"}]
        obj = asyncio.run(llm.structured(msgs, Echo, agent="greeter"))
        req = srv.requests[0]
    assert obj == Echo(text="hi", n=3)
    if provider == "openai":                  # chat.completions.create with a strict json_schema
        fmt = req.json["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        schema = fmt["json_schema"]["schema"]
        assert schema["additionalProperties"] is False and schema["required"] == ["text", "n"]
        assert req.json["messages"][0] == {"role": "system", "content": "be terse"}
    else:                                     # messages.create with a forced tool
        [tool] = req.json["tools"]
        assert req.json["tool_choice"] == {"type": "tool", "name": tool["name"]} and tool["name"] == "Echo"
        schema = tool["input_schema"]
        assert req.json["system"] == "be terse" and "output_config" not in req.json
    assert set(schema["properties"]) == {"text", "n"}
    summary = llm.ledger.summary()
    [entry] = summary["entries"]
    assert entry["agent"] == "greeter" and entry["calls"] == 1 and entry["input_tokens"] > 0
    assert isinstance(entry["cost_usd"], float) and entry["cost_usd"] > 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_complete_returns_text_usage_and_finish_reason(provider, keys, tmp_path):
    with LoopbackLLMServer(answers=["plain words here"]) as srv:
        llm = llm_for(srv, provider, tmp_path)
        c = asyncio.run(llm.complete([{"role": "user", "content": "x"}], agent="a", max_tokens=2))
    assert c.text == "plain wo" and c.finish_reason == "length" and c.truncated
    assert c.provider == provider and c.usage.output_tokens == 2 and not c.cached


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_fault_kind_is_recovered(kind, provider, keys, tmp_path):
    ok = '{"text": "ok", "n": 1}'           # twice: "truncated" cuts the first one it takes
    with LoopbackLLMServer(answers=[ok, ok], faults=[kind], hang_s=3.0,
                           retry_after_s=0.01) as srv:
        llm = llm_for(srv, provider, tmp_path, timeout_s=0.3)
        assert ask(llm) == Echo(text="ok", n=1)
        first, second = srv.requests
    assert first.fault == kind and second.fault is None
    if kind in ("rate_limit", "server_error", "timeout", "malformed_json"):
        assert second.body == first.body                  # retried as is (the SDK, or a bad body)
    elif kind == "truncated":                             # re-asked with the errors, not the cut answer
        assert "cut off at the token limit" in user_texts(second)[-1]
        assert "assistant" not in [m["role"] for m in second.json["messages"]]
    else:                                                 # re-asked with the errors after the answer
        assert "could not be used" in user_texts(second)[-1]
        assert second.json["messages"][1]["role"] == "assistant"


def test_retry_after_is_honoured(keys, tmp_path):
    with LoopbackLLMServer(faults=["rate_limit"], retry_after_s=0.4) as srv:
        llm = llm_for(srv, "openai", tmp_path)
        ask(llm)
        first, second = srv.requests
    assert second.t_start - first.t_end >= 0.4


def test_retries_exhausted_fail_with_evidence(keys, tmp_path):
    with LoopbackLLMServer(faults=[None] + ["server_error"] * 3) as srv:
        llm = llm_for(srv, "openai", tmp_path, max_retries=2)      # the SDK's retries
        ask(llm, "the server's structured mode is known from here on")
        srv.clear()
        with pytest.raises(GenerationFailed) as ei:
            ask(llm)
        assert srv.request_count == 3
    ev = ei.value.evidence
    assert "HTTP 500 after 3 attempts" in str(ei.value)
    [attempt] = ev["attempts"]
    assert all("HTTP 500" in e for e in attempt["details"]["errors"])


def test_reask_then_success(keys, tmp_path):
    answers = ["Sure, here it is!", '{"text": "x"}', '```json\n{"text": "fixed", "n": 2}\n```']
    with LoopbackLLMServer(answers=answers) as srv:
        llm = llm_for(srv, "openai", tmp_path)
        assert ask(llm, max_reasks=2) == Echo(text="fixed", n=2)
        reqs = srv.requests
    assert len(reqs) == 3
    last = reqs[2].json["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert "not valid JSON" in last[2]["content"] and "n: Field required" in last[4]["content"]


def test_reask_exhausted_raises_with_every_attempt(keys, tmp_path):
    with LoopbackLLMServer(answers=["nope", '{"text": 5, "n": 1}', '{"n": "many"}']) as srv:
        llm = llm_for(srv, "anthropic", tmp_path)
        with pytest.raises(GenerationFailed) as ei:
            ask(llm, max_reasks=2)
    ev = ei.value.evidence
    assert ev["schema"] == "Echo" and ev["agent"] == "test"
    assert [a["raw"] for a in ev["attempts"]] == ["nope", '{"text": 5, "n": 1}', '{"n": "many"}']
    assert any("text: Input should be a valid string" in e for e in ev["attempts"][1]["errors"])
    assert ev["usage"]["output_tokens"] == sum(a["usage"]["output_tokens"] for a in ev["attempts"]) > 0
    json.dumps(ev)                                    # evidence is JSON-ready for the failures file


def test_cache_hit_makes_no_request_and_survives_a_new_client(keys, tmp_path):
    with LoopbackLLMServer(answers=['{"text": "a", "n": 1}', '{"text": "b", "n": 2}']) as srv:
        llm = llm_for(srv, "openai", tmp_path)
        first = ask(llm)
        again = ask(llm)
        fresh = ask(llm_for(srv, "openai", tmp_path))          # a new client, same workdir
        assert srv.request_count == 1
        other_sample = ask(llm, sample=1)
        assert srv.request_count == 2
    assert first == again == fresh == Echo(text="a", n=1) and other_sample.n == 2
    assert llm.ledger.summary()["this_run"]["cached_calls"] == 2
    c = asyncio.run(llm.complete([{"role": "user", "content": "hello"}], agent="test",
                                 json_schema=Echo.model_json_schema()))
    assert c.cached                                         # same request as ask() -> the cached answer
    llm.flush()                                             # answers are written behind
    assert list((tmp_path / "llm_cache").rglob("*.json"))


def test_cache_key_ignores_base_url(keys, tmp_path):
    with LoopbackLLMServer(answers=['{"text": "a", "n": 1}']) as one, LoopbackLLMServer() as two:
        ask(llm_for(one, "openai", tmp_path))
        assert ask(llm_for(two, "openai", tmp_path)) == Echo(text="a", n=1)
        assert two.request_count == 0


def test_budget_is_reserved_before_sending_so_16_calls_in_flight_never_pass_the_cap(keys, tmp_path):
    """Issue 16 #4: every call sets its upper-bound cost aside before it is sent (prompt bytes +
    max_tokens at the price) and books its real cost after, so concurrent calls cannot overshoot."""
    dear = {"gpt-4o-mini": {"input": 1e6, "output": 1e6}}      # $1 per token
    long_answer = json.dumps({"text": "w" * 380, "n": 1})      # ~100 tokens, well under max_tokens
    cap = 2500.0
    with LoopbackLLMServer(responder=lambda req: long_answer, latency_s=0.05) as srv:
        llm = llm_for(srv, "openai", tmp_path, budget_usd=cap, prices=dear, concurrency=16)

        async def sixteen_at_a_time():
            return await asyncio.gather(*(llm.structured([{"role": "user", "content": f"q{i}"}], Echo,
                                                         agent="t", max_tokens=200, max_reasks=0)
                                          for i in range(64)), return_exceptions=True)

        results = asyncio.run(sixteen_at_a_time())
        reqs = srv.requests
    done = [r for r in results if isinstance(r, Echo)]
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert len(done) + len(refused) == 64 and refused and len(done) == len(reqs)
    spent = llm.ledger.spent_usd                     # the server's own token counts, priced
    server_cost = sum(wire_tokens(r) for r in reqs) * 1.0
    assert spent == pytest.approx(server_cost)
    assert spent <= cap                              # never over, with 16 calls wanting to run
    assert len(done) >= 10                           # and waiting, not refusing, while calls settle
    assert llm.budget_stopped and llm.ledger.reserved_usd == 0
    assert "could cost up to" in str(refused[0]) and "raise the budget" in str(refused[0])
    answered = next(i for i, r in enumerate(results) if isinstance(r, Echo))
    with LoopbackLLMServer() as srv:                 # a cached answer stays free after the stop
        assert ask(llm_for(srv, "openai", tmp_path, budget_usd=cap, prices=dear), f"q{answered}",
                   max_tokens=200, max_reasks=0) == done[0]
        assert srv.request_count == 0


def wire_tokens(req) -> int:
    """Prompt + answer tokens as the loopback server counts them (4 characters a token)."""
    from bargein.testing.wire import estimate_tokens, prompt_text
    return estimate_tokens(prompt_text(req.json)) + estimate_tokens(json.dumps({"text": "w" * 380, "n": 1}))


def test_unknown_model_is_unpriced_and_a_budget_needs_a_price(keys, tmp_path):
    with LoopbackLLMServer() as srv:
        llm = get_llm("openai:my-local-model", base_url=srv.openai_base_url, workdir=tmp_path)
        asyncio.run(llm.complete([{"role": "user", "content": "x"}], agent="a"))
        with pytest.raises(ConfigError, match="my-local-model.*prices="):
            get_llm("openai:my-local-model", base_url=srv.openai_base_url, workdir=tmp_path, budget_usd=1)
    llm.flush()
    saved = json.loads((tmp_path / "llm_ledger.json").read_text())
    assert saved["entries"][0]["cost_usd"] == "unpriced" and saved["total"]["unpriced_calls"] == 1
    assert "1 unpriced" in llm.ledger.spend_str()


def test_the_key_is_sent_but_never_written(keys, tmp_path):
    work = tmp_path / "work"
    with LoopbackLLMServer(answers=["bad", "bad", "bad", '{"text": "t", "n": 0}'],
                           faults=["rate_limit", "server_error"]) as srv:
        for provider in ("openai", "anthropic"):
            llm = llm_for(srv, provider, tmp_path, workdir=work)
            try:
                ask(llm, provider, max_reasks=1)
            except GenerationFailed as e:      # evidence as the runner's failures file keeps it
                work.mkdir(parents=True, exist_ok=True)
                (work / "failure.json").write_text(json.dumps(e.evidence) + str(e))
            llm.flush()
        sent = {r.headers.get("authorization") for r in srv.requests}
    assert sent == {f"Bearer {KEY}"}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "llm_ledger.json" for p in files) and len(files) >= 4
    for p in files:
        assert KEY.encode() not in p.read_bytes(), p
    assert KEY not in repr(llm) and KEY not in repr(llm.provider)


def test_rejected_key_names_the_variable_and_hides_the_key(keys, tmp_path):
    with LoopbackLLMServer(api_key="sk-the-right-one") as srv:
        for provider, var in (("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")):
            with pytest.raises(ConfigError) as ei:
                ask(llm_for(srv, provider, tmp_path))
            assert var in str(ei.value) and KEY not in str(ei.value)


def test_missing_key_and_local_placeholder(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get_llm("openai:gpt-4o-mini", workdir=tmp_path)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        get_llm("anthropic:claude-haiku-4-5", workdir=tmp_path)
    with LoopbackLLMServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)     # a local server from the env
        c = asyncio.run(get_llm("openai:local", workdir=tmp_path).complete(
            [{"role": "user", "content": "x"}], agent="a"))
        assert c.text == "loopback: x"
        assert srv.requests[0].headers["authorization"] == "Bearer sk-no-key-required"
        assert "max_tokens" in srv.requests[0].json                      # compatible-server field


def test_without_a_workdir_the_cache_lives_under_bargein_cache_dir(keys, tmp_path, monkeypatch):
    monkeypatch.setenv("BARGEIN_CACHE_DIR", str(tmp_path / "shared"))
    with LoopbackLLMServer(answers=['{"text": "a", "n": 1}']) as srv:
        llm = get_llm(MODELS["openai"], base_url=srv.openai_base_url)
        ask(llm)
        llm.flush()
    assert len(list((tmp_path / "shared" / "llm_cache").rglob("*.json"))) == 1
    assert (tmp_path / "shared" / "llm_ledger.json").is_file()


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "nonsense:model", "", "openai"])
def test_malformed_spec_lists_the_valid_forms(spec):
    with pytest.raises(ConfigError, match="openai:MODEL.*anthropic:MODEL.*llamacpp:"):
        get_llm(spec) if spec else parse_spec(spec)


def test_offline_and_bad_numbers_are_config_errors(keys, tmp_path):
    with pytest.raises(ConfigError, match="is_offline"):
        get_llm("offline")
    with pytest.raises(ConfigError, match="concurrency=0"):
        get_llm("openai:gpt-4o-mini", concurrency=0)
    with pytest.raises(ConfigError, match="structured='yaml'"):
        get_llm("openai:gpt-4o-mini", structured="yaml")


def test_llamacpp_needs_its_extra_or_a_real_file(tmp_path):
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailable, match=r"bargein\[llamacpp\]"):
            get_llm(f"llamacpp:{tmp_path / 'model.gguf'}")
    else:
        with pytest.raises(ConfigError, match="no GGUF file"):
            get_llm(f"llamacpp:{tmp_path / 'model.gguf'}")


@pytest.mark.parametrize("provider,mode", [("openai", "prompt"), ("openai", "json"), ("anthropic", "prompt")])
def test_non_native_structured_modes_put_the_schema_in_the_prompt(provider, mode, keys, tmp_path):
    with LoopbackLLMServer(answers=['{"text": "a", "n": 1}']) as srv:
        llm = llm_for(srv, provider, tmp_path, structured=mode)
        assert ask(llm) == Echo(text="a", n=1)
        body = srv.requests[0].json
    system = body["system"] if provider == "anthropic" else body["messages"][0]["content"]
    assert '"required":["text","n"]' in system
    assert "output_config" not in body
    if mode == "json":           # a local server also gets the schema (llama-cpp-python's grammar)
        assert body["response_format"]["type"] == "json_object"
        assert body["response_format"]["schema"]["required"] == ["text", "n"]
    else:
        assert body.get("response_format") is None


def test_settings_from_the_environment(monkeypatch):
    from bargein.llm import env_settings
    monkeypatch.setenv("BARGEIN_LLM_SETTINGS", "timeout_s=600, concurrency=1,openai.context_tokens=server,"
                                               "anthropic.max_tokens=64")
    assert env_settings("openai") == {"timeout_s": 600, "concurrency": 1, "context_tokens": "server"}
    assert env_settings("anthropic") == {"timeout_s": 600, "concurrency": 1, "max_tokens": 64}
    monkeypatch.setenv("BARGEIN_LLM_SETTINGS", "timeout_s")
    with pytest.raises(ConfigError, match="BARGEIN_LLM_SETTINGS.*KEY=VALUE"):
        env_settings("openai")
    monkeypatch.setenv("BARGEIN_LLM_SETTINGS", "colour=blue")
    with pytest.raises(ConfigError, match="colour not known"):
        get_llm("openai:gpt-4o-mini")


def test_concurrency_is_bounded(keys, tmp_path):
    with LoopbackLLMServer(latency_s=0.1) as srv:
        llm = llm_for(srv, "openai", tmp_path, concurrency=3)

        async def many():
            await asyncio.gather(*(llm.complete([{"role": "user", "content": f"{i}"}], agent="a")
                                   for i in range(9)))

        asyncio.run(many())
        reqs = srv.requests
    events = sorted([(r.t_start, 1) for r in reqs] + [(r.t_end, -1) for r in reqs])
    level = peak = 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    assert peak == 3


def test_requests_per_minute_limit(keys, tmp_path):
    with LoopbackLLMServer() as srv:
        llm = llm_for(srv, "openai", tmp_path, rpm=1200, concurrency=40)     # 20/s, burst 20

        async def many():
            await asyncio.gather(*(llm.complete([{"role": "user", "content": f"{i}"}], agent="a")
                                   for i in range(40)))

        t0 = time.perf_counter() - srv._t0                 # on the server's clock
        asyncio.run(many())
        arrivals = sorted(r.t_start - t0 for r in srv.requests)
    # a request arrives after it was sent, so k requests by time T means k sends by T:
    # never more than the burst of 20 plus 20 per second
    for k, t in enumerate(arrivals, start=1):
        assert k <= 20 + 20 * t + 1, (k, t)
    assert arrivals[-1] >= 0.95


def test_one_client_serves_successive_event_loops(keys, tmp_path, recwarn, caplog):
    import gc

    gc.collect()                                           # other tests' garbage is not ours
    recwarn.clear()
    with LoopbackLLMServer() as srv:
        llm = llm_for(srv, "openai", tmp_path)
        for i in range(3):                                 # the runner starts a loop per stage
            asyncio.run(llm.complete([{"role": "user", "content": f"loop {i}"}], agent="a"))
            gc.collect()
        assert srv.request_count == 3
    # each loop's connections were closed with it: no "Event loop is closed" from a late close
    assert not [str(w.message) for w in recwarn if issubclass(w.category, ResourceWarning)]
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelname == "ERROR"]
