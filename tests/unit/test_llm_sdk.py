"""The SDKs used as their users use them: typed methods over real HTTP to the loopback server,
the structured-mode fallback per server, the user's own client, provider bugs never retried,
token limits and re-asks that fit the model."""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest
from pydantic import BaseModel

from bargein import registry
from bargein.errors import ConfigError, GenerationFailed
from bargein.llm import get_llm
from bargein.llm.base import Completion, Usage
from bargein.records import ChatMessage
from bargein.runner import Stage, run_stage
from bargein.testing import LoopbackLLMServer
from bargein.testing.wire import structured_mode

KEY = "sk-test-SECRET123"
ANSWER = '{"text": "ok", "n": 1}'


class Echo(BaseModel):
    text: str
    n: int


@pytest.fixture(autouse=True)
def fresh_mode_memory():
    """What a server accepted is remembered by its address, and a loopback server's port is
    reused by later tests: each test starts from a process that has met no server yet."""
    from bargein.llm.modes import MODES

    MODES.reset()
    yield
    MODES.reset()


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def ask(llm, text="hello", **kw):
    return asyncio.run(llm.structured([{"role": "user", "content": text}], Echo, agent="test", **kw))


def modes(srv):
    return [(structured_mode(r.json), r.fault) for r in srv.requests]


# ---- the structured-mode chain, per server ------------------------------------------------

def test_a_server_that_answers_json_schema_with_500_falls_back_to_json_object_once(keys, tmp_path):
    """llama.cpp's OpenAI-compatible server answers a json_schema response format with HTTP 500:
    the first call finds that out in three requests, and the server is remembered."""
    with LoopbackLLMServer(reject_modes=("json_schema",), answers=[ANSWER] * 3) as srv:
        llm = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path)
        assert ask(llm, "one") == Echo(text="ok", n=1)
        assert modes(srv) == [("json_schema", "refused"), ("json_schema", "refused"), ("json_object", None)]
        fallback = srv.requests[2].json
        assert '"required":["text","n"]' in fallback["messages"][0]["content"]     # schema in the prompt
        srv.clear()
        assert ask(llm, "two") == ask(get_llm("openai:qwen", base_url=srv.openai_base_url,
                                              workdir=tmp_path / "other"), "three")
        assert modes(srv) == [("json_object", None), ("json_object", None)]      # remembered per server


def test_json_object_refused_too_ends_in_the_prompt(keys, tmp_path):
    with LoopbackLLMServer(reject_modes=("json_schema", "json_object"), reject_status=400,
                           answers=[ANSWER, ANSWER]) as srv:
        llm = get_llm("openai:strict-less", base_url=srv.openai_base_url, workdir=tmp_path)
        assert ask(llm) == Echo(text="ok", n=1)
        assert modes(srv) == [("json_schema", "refused"), ("json_object", "refused"), (None, None)]
        assert "response_format" not in srv.requests[2].json
    with LoopbackLLMServer(answers=[ANSWER]) as other:     # another server starts from the top
        get_llm("openai:strict-less", base_url=other.openai_base_url, workdir=tmp_path / "b")
        assert ask(get_llm("openai:strict-less", base_url=other.openai_base_url,
                           workdir=tmp_path / "b"), "x") == Echo(text="ok", n=1)
        assert modes(other) == [("json_schema", None)]


def test_anthropic_server_without_tools_falls_back_to_the_prompt(keys, tmp_path):
    with LoopbackLLMServer(reject_modes=("tool",), reject_status=400, answers=[ANSWER, ANSWER]) as srv:
        llm = get_llm("anthropic:claude-haiku-4-5", base_url=srv.anthropic_base_url, workdir=tmp_path)
        assert ask(llm) == Echo(text="ok", n=1)
        assert modes(srv) == [("tool", "refused"), (None, None)]
        assert '"required":["text","n"]' in srv.requests[1].json["system"]


def test_validation_errors_are_re_asked_and_never_change_the_mode(keys, tmp_path):
    with LoopbackLLMServer(answers=['{"text": 1}', '{"n": "x"}', ANSWER]) as srv:
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path)
        assert ask(llm) == Echo(text="ok", n=1)
        assert modes(srv) == [("json_schema", None)] * 3
        seeds = [r.json["seed"] for r in srv.requests]
    assert len(set(seeds)) == 3                      # each re-ask is a new draw


def test_a_passing_500_on_the_first_call_does_not_demote_the_server(keys, tmp_path):
    with LoopbackLLMServer(faults=["server_error"], answers=[ANSWER, ANSWER]) as srv:
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path)
        assert ask(llm) == Echo(text="ok", n=1)
        ask(llm, "again")
        assert modes(srv) == [("json_schema", "server_error"), ("json_schema", None), ("json_schema", None)]


def test_a_failing_server_is_not_mistaken_for_a_refusal(keys, tmp_path):
    """Every mode fails alike: the request goes the usual way (SDK retries) and the error is
    reported as the server's, with the probes in the evidence; nothing is remembered."""
    with LoopbackLLMServer(fault_rate=1.0, fault_kinds=("server_error",)) as srv:
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path,
                      max_retries=1)
        with pytest.raises(GenerationFailed, match="HTTP 500 after 2 attempts") as ei:
            ask(llm)
        assert [m for m, _ in modes(srv)] == ["json_schema", "json_schema", "json_object", "json_object",
                                              None, "json_schema", "json_schema"]
    assert len(ei.value.evidence["attempts"][0]["details"]["probes"]) == 5


def test_pinned_mode_is_never_probed(keys, tmp_path):
    with LoopbackLLMServer(answers=[ANSWER]) as srv:
        ask(get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path,
                    structured="json"))
        assert modes(srv) == [("json_object", None)]


# ---- the user's own client ----------------------------------------------------------------

def test_a_user_client_instance_with_headers_is_used_on_every_event_loop(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackLLMServer(answers=[ANSWER] * 3) as srv:
        mine = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-users-own-key",
                                  default_headers={"x-team": "voice"}, max_retries=0)
        llm = get_llm("openai:gpt-4o-mini", client=mine, workdir=tmp_path)
        for i in range(3):                           # the runner starts one event loop per stage
            assert ask(llm, f"loop {i}") == Echo(text="ok", n=1)
        heads = [r.headers for r in srv.requests]
    assert [h["x-team"] for h in heads] == ["voice"] * 3
    assert {h["authorization"] for h in heads} == {"Bearer sk-users-own-key"}
    assert "sk-users-own-key" not in json.dumps(llm.ledger.summary()) and "sk-users-own-key" not in repr(llm)


def test_a_user_client_factory_keeps_a_custom_http_client_azure_style(tmp_path):
    with LoopbackLLMServer(answers=[ANSWER] * 2) as srv:
        def azure():
            return openai.AsyncAzureOpenAI(
                azure_endpoint=srv.url, api_version="2024-10-21", api_key="azure-key",
                http_client=openai.DefaultAsyncHttpxClient(headers={"x-gateway": "on"}))

        llm = get_llm("openai:my-deployment", client=azure, workdir=tmp_path)
        ask(llm, "a")
        ask(llm, "b")
        reqs = srv.requests
    assert all(r.path == "/openai/deployments/my-deployment/chat/completions" for r in reqs)
    assert all(r.headers["api-key"] == "azure-key" and r.headers["x-gateway"] == "on" for r in reqs)


def test_a_user_anthropic_client(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with LoopbackLLMServer(answers=[ANSWER]) as srv:
        mine = anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key="ant-own",
                                        default_headers={"anthropic-beta": "x"})
        assert ask(get_llm("anthropic:claude-haiku-4-5", client=mine, workdir=tmp_path)) == Echo(text="ok", n=1)
        [req] = srv.requests
    assert "ant-own" in (req.headers.get("x-api-key"), req.headers.get("authorization", "").removeprefix("Bearer "))
    assert req.headers["anthropic-beta"] == "x"
    assert req.json["tool_choice"]["type"] == "tool"


# ---- provider bugs are bugs ---------------------------------------------------------------

class BuggyProvider:
    """A third-party provider with a bug: it reads a key its answer does not have."""

    name = "buggy"
    capabilities = frozenset()

    def __init__(self, model, **_):
        self.model = model
        self.calls = 0

    async def complete(self, messages, *, temperature, max_tokens, json_schema=None, seed=None):
        self.calls += 1
        return {"no": "text"}["text"]


@pytest.fixture
def buggy():
    registry.register("llm", "buggy", BuggyProvider, "a provider with a KeyError")
    yield
    registry.unregister("llm", "buggy")


def test_a_providers_own_key_error_is_raised_once_not_retried(buggy, tmp_path):
    llm = get_llm("buggy:m", workdir=tmp_path, max_retries=4)
    with pytest.raises(KeyError, match="text"):
        ask(llm)
    assert llm.provider.calls == 1


def test_a_providers_bug_fails_the_item_with_its_type_in_the_runner(buggy, tmp_path):
    llm = get_llm("buggy:m", workdir=tmp_path)

    async def fn(item, ctx):
        await ctx.resources["llm"].complete([{"role": "user", "content": item.content}], agent="a")

    res = run_stage(Stage("bug", fn, ChatMessage, kind="io"), [ChatMessage(role="user", content="x")],
                    workdir=tmp_path, seed=0, resources={"llm": llm}, progress=False)
    [failure] = res.failures
    assert failure.error_type == "KeyError" and llm.provider.calls == 1


# ---- token limits --------------------------------------------------------------------------

@pytest.mark.parametrize("model,field", [("gpt-4o-mini", "max_tokens"), ("o3-mini", "max_completion_tokens"),
                                         ("gpt-5-nano", "max_completion_tokens"), ("qwen2.5:7b", "max_tokens")])
def test_the_token_limit_field_follows_the_model_not_the_base_url(model, field, keys, tmp_path):
    with LoopbackLLMServer() as srv:
        asyncio.run(get_llm(f"openai:{model}", base_url=srv.openai_base_url, workdir=tmp_path).complete(
            [{"role": "user", "content": "x"}], agent="a", max_tokens=33))
        asyncio.run(get_llm(f"openai:{model}", base_url=srv.openai_base_url, workdir=tmp_path,
                            max_tokens_field="max_completion_tokens").complete(
            [{"role": "user", "content": "y"}], agent="a", max_tokens=33))
        first, pinned = (r.json for r in srv.requests)
    other = "max_tokens" if field == "max_completion_tokens" else "max_completion_tokens"
    assert first[field] == 33 and other not in first
    assert pinned["max_completion_tokens"] == 33 and "max_tokens" not in pinned


def test_max_tokens_fit_the_context_window_the_server_reports(keys, tmp_path):
    """A vLLM-like server with a 1,024-token window refuses prompt + max_tokens beyond it; with
    context_tokens="server" the client reads the window once and sizes max_tokens to it."""
    with LoopbackLLMServer(context_tokens=1024, answers=[ANSWER] * 2) as srv:
        blind = get_llm("openai:small", base_url=srv.openai_base_url, workdir=tmp_path / "a",
                        max_tokens=4096)
        with pytest.raises(GenerationFailed, match="maximum context length is 1024"):
            ask(blind, max_reasks=0)
        srv.clear()
        sized = get_llm("openai:small", base_url=srv.openai_base_url, workdir=tmp_path / "b",
                        max_tokens=4096, context_tokens="server")
        assert ask(sized, "x" * 2000) == Echo(text="ok", n=1)
        models, chat = srv.requests
        assert models.path == "/v1/models/small" and models.api == "models"
        assert 0 < chat.json["max_tokens"] <= 1024 - 500
        with pytest.raises(GenerationFailed, match="leaves no room for an answer.*1024 tokens"):
            ask(sized, "y" * 5000)
        assert srv.request_count == 2                 # refused without sending


def test_a_long_failed_answer_is_not_sent_back_its_errors_are(keys, tmp_path):
    rambling = '{"text": "' + "The caller must provide their name. " * 80 + '"'    # cut off, no n
    with LoopbackLLMServer(answers=[rambling, ANSWER]) as srv:
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path)
        assert ask(llm) == Echo(text="ok", n=1)
        reask = srv.requests[1].json["messages"]
    assert [m["role"] for m in reask] == ["user", "user"]
    assert "The caller must provide" not in json.dumps(reask)             # the answer is not sent back
    errors = reask[1]["content"]
    assert "not valid JSON" in errors and f"{len(rambling):,} characters" in errors
    assert 'repeats "the caller must provide their name" 80 times: write each point once' in errors


def test_a_short_failed_answer_is_shown_with_its_errors(keys, tmp_path):
    with LoopbackLLMServer(answers=['{"text": "ok"}', ANSWER]) as srv:
        llm = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path)
        ask(llm)
        reask = srv.requests[1].json["messages"]
    assert reask[1] == {"role": "assistant", "content": '{"text": "ok"}'}
    assert "n: Field required" in reask[2]["content"]


def test_completion_record_is_what_the_sdk_returned(keys, tmp_path):
    with LoopbackLLMServer(answers=["plain"]) as srv:
        c = asyncio.run(get_llm("anthropic:claude-haiku-4-5", base_url=srv.anthropic_base_url,
                                workdir=tmp_path).complete([{"role": "user", "content": "x"}], agent="a"))
    assert isinstance(c, Completion) and c.text == "plain" and c.usage == Usage(1, 2)
    assert c.raw["id"].startswith("msg_loopback_")


@pytest.mark.parametrize("http", ["auto", "httpx", "aiohttp"])
def test_either_of_the_sdks_http_clients_carries_the_calls(http, keys, tmp_path):
    pytest.importorskip("aiohttp") if http == "aiohttp" else None
    with LoopbackLLMServer(answers=[ANSWER, ANSWER]) as srv:
        for provider, base in (("openai:gpt-4o-mini", srv.openai_base_url),
                               ("anthropic:claude-haiku-4-5", srv.anthropic_base_url)):
            assert ask(get_llm(provider, base_url=base, workdir=tmp_path, http=http)) == Echo(text="ok", n=1)
        assert srv.request_count == 2


def test_an_unknown_http_client_is_a_config_error(keys):
    from bargein.errors import ConfigError

    with pytest.raises(ConfigError, match="http='curl'.*auto, aiohttp, httpx"):
        get_llm("openai:gpt-4o-mini", http="curl")


def test_strict_schemas_close_every_object_and_keep_length_limits_as_words(keys):
    """OpenAI strict mode: every object closed with all properties required, no ``default``; a
    schema strict mode cannot express (an open map) is sent non-strict instead."""
    from pydantic import Field

    from bargein.llm.schemas import strict_variant

    class Stage(BaseModel):
        name: str = Field(min_length=2, max_length=40, description="short")
        optional: int | None = None

    class Plan(BaseModel):
        stages: list[Stage] = Field(min_length=1, max_length=6)
        tone: str = "calm"

    class Loose(BaseModel):
        extra: dict[str, int]

    strict = strict_variant(Plan.model_json_schema())
    stage = strict["$defs"]["Stage"]
    assert strict["required"] == ["stages", "tone"] and strict["additionalProperties"] is False
    assert stage["required"] == ["name", "optional"] and stage["additionalProperties"] is False
    assert "default" not in json.dumps(strict) and "minLength" not in json.dumps(strict)
    assert set(stage["properties"]["name"]["description"].split("; ")) == {
        "short", "at least 2 characters", "at most 40 characters"}
    assert strict["properties"]["stages"]["minItems"] == 1 and strict["properties"]["stages"]["maxItems"] == 6
    assert strict_variant(Loose.model_json_schema()) is None
    with LoopbackLLMServer() as srv:                 # sent with strict: false, the schema unchanged
        asyncio.run(get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, cache=False).complete(
            [{"role": "user", "content": "x"}], agent="a", json_schema=Loose.model_json_schema()))
        fmt = srv.requests[0].json["response_format"]["json_schema"]
    assert fmt["strict"] is False and fmt["schema"] == Loose.model_json_schema()


def test_provider_settings_from_the_registry_reach_every_client(keys, tmp_path):
    """Settings a config sets once (registry options, passed on to worker processes) apply to
    every get_llm of that provider; an explicit argument wins; an unknown key is refused."""
    from bargein.errors import ConfigError

    registry.set_options("llm", "openai", structured="json", max_tokens=77, timeout_s=9.0)
    try:
        with LoopbackLLMServer(answers=[ANSWER, ANSWER]) as srv:
            configured = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path)
            assert ask(configured) == Echo(text="ok", n=1)
            explicit = get_llm("openai:gpt-4o-mini", base_url=srv.openai_base_url, workdir=tmp_path,
                               structured="schema", max_tokens=55)
            ask(explicit, "other")
            first, second = (r.json for r in srv.requests)
        assert first["response_format"]["type"] == "json_object" and first["max_tokens"] == 77
        assert second["response_format"]["type"] == "json_schema" and second["max_tokens"] == 55
        async def sdk_timeout(llm):
            return llm.provider._clients.get().timeout

        assert asyncio.run(sdk_timeout(configured)) == 9.0 and configured.default_max_tokens == 77
        registry.set_options("llm", "openai", context_size=4096)
        with pytest.raises(ConfigError, match="context_size not known; valid: .*context_tokens"):
            get_llm("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1")
    finally:
        registry.set_options("llm", "openai")


def test_a_frequency_penalty_is_sent_and_keys_the_cache(keys, tmp_path):
    with LoopbackLLMServer(answers=[ANSWER, ANSWER]) as srv:
        plain = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path)
        guarded = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path, frequency_penalty=0.4)
        ask(plain)
        ask(guarded)                                   # same prompt, other sampling: not a cache hit
        first, second = (r.json for r in srv.requests)
    assert "frequency_penalty" not in first and second["frequency_penalty"] == 0.4


def test_sixteen_concurrent_first_calls_probe_the_server_once(keys, tmp_path):
    """Calls in flight together to a new server wait for one probe, not each their own."""
    with LoopbackLLMServer(reject_modes=("json_schema",), latency_s=0.05,
                           responder=lambda req: ANSWER) as srv:
        llm = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path, concurrency=16)

        async def sixteen():
            return await asyncio.gather(*(llm.structured([{"role": "user", "content": f"q{i}"}], Echo,
                                                         agent="t") for i in range(16)))

        assert asyncio.run(sixteen()) == [Echo(text="ok", n=1)] * 16
        refused = [r for r in srv.requests if r.fault == "refused"]
    assert len(refused) == 2 and srv.request_count == 18


def test_re_asks_keep_to_the_context_window(keys, tmp_path):
    """With a small window, a second re-ask carries the request and the latest attempt only."""
    short_bad = ['{"text": "' + "a" * 480 + '"}', '{"text": "' + "b" * 480 + '"}']    # no n: invalid
    with LoopbackLLMServer(context_tokens=1200, answers=[*short_bad, ANSWER]) as srv:
        llm = get_llm("openai:small", base_url=srv.openai_base_url, workdir=tmp_path, max_tokens=256,
                      context_tokens=1200)
        assert asyncio.run(llm.structured([{"role": "user", "content": "q " * 1600}], Echo, agent="t",
                                          max_reasks=2)) == Echo(text="ok", n=1)
        second, third = (json.dumps(r.json["messages"]) for r in srv.requests[1:])
    assert "a" * 480 in second                                         # room: the attempt is shown
    assert "b" * 480 in third and "a" * 480 not in third               # no room: the latest only
    assert srv.request_count == 3 and all(r.fault is None for r in srv.requests)


def test_a_probe_that_times_out_is_not_sent_back_to_a_refused_mode(keys, tmp_path):
    """llama-cpp-python's server refuses json_schema at once and can take minutes on json_object:
    a timeout there is not a refusal, and the request is then sent (with the SDK's retries) in
    json_object, not in the json_schema the server has just refused."""
    with LoopbackLLMServer(reject_modes=("json_schema",), latency_s=1.5,
                           responder=lambda req: ANSWER) as srv:
        llm = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path, timeout_s=0.5,
                      max_retries=0)
        with pytest.raises(GenerationFailed, match="timed out"):
            ask(llm)
        sent = [m for m, _ in modes(srv)]
    assert sent[:2] == ["json_schema", "json_schema"] and set(sent[2:]) == {"json_object"}, sent


def test_an_agent_routed_to_its_own_model_is_answered_by_that_server(keys, tmp_path, monkeypatch):
    """Per-agent models: the verifier on one server and model, everything else on another; the
    ledger records each call under its agent's provider and model."""
    with LoopbackLLMServer(responder=lambda req: ANSWER) as sims, \
            LoopbackLLMServer(responder=lambda req: ANSWER) as strong:
        monkeypatch.setenv("OPENAI_BASE_URL", sims.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", strong.anthropic_base_url)
        monkeypatch.setenv("BARGEIN_LLM_AGENTS", "verifier=anthropic:claude-haiku-4-5")
        llm = get_llm("openai:qwen", workdir=tmp_path)

        async def both():
            return (await llm.structured([{"role": "user", "content": "a"}], Echo, agent="round_planner"),
                    await llm.structured([{"role": "user", "content": "b"}], Echo, agent="verifier"))

        assert asyncio.run(both()) == (Echo(text="ok", n=1), Echo(text="ok", n=1))
        assert sims.request_count == 1 and strong.request_count == 1
        assert strong.requests[0].json["model"] == "claude-haiku-4-5"
        assert llm.agent_specs == {"verifier": "anthropic:claude-haiku-4-5"}
    llm.ledger.flush()
    ledger = json.loads((tmp_path / "llm_ledger.json").read_text())
    text = json.dumps(ledger)
    assert "claude-haiku-4-5" in text and "qwen" in text and "verifier" in text
    monkeypatch.setenv("BARGEIN_LLM_AGENTS", "verifier")
    with pytest.raises(ConfigError, match="AGENT=PROVIDER:MODEL"):
        get_llm("openai:qwen", workdir=tmp_path)


def test_per_agent_models_from_the_build_config_key(keys, tmp_path, monkeypatch):
    """``llm_agents`` in a build config routes agents for every client the build makes (over
    $BARGEIN_LLM_AGENTS, agent by agent), is checked with the config, and is recorded."""
    from bargein.config import BuildConfig, parse_config
    from bargein.llm import agent_models, set_agent_models

    monkeypatch.setenv("BARGEIN_LLM_AGENTS", "verifier=openai:from-env,baseline=openai:env-base")
    with LoopbackLLMServer(responder=lambda req: ANSWER) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        set_agent_models({"verifier": "openai:from-config"})
        try:
            assert agent_models() == {"verifier": "openai:from-config", "baseline": "openai:env-base"}
            llm = get_llm("openai:sim", workdir=tmp_path)
            asyncio.run(llm.structured([{"role": "user", "content": "v"}], Echo, agent="verifier"))
            assert [r.json["model"] for r in srv.requests] == ["from-config"]
            assert llm.agent_specs["verifier"] == "openai:from-config"
        finally:
            set_agent_models(None)
    assert agent_models()["verifier"] == "openai:from-env"
    with pytest.raises(ConfigError, match="llm_agents"):
        parse_config({"llm": "openai:sim", "llm_agents": {"verifier": "offline"}})
    assert BuildConfig(llm="openai:sim", llm_agents={"verifier": "openai:x"}).provenance()[
        "llm_agents"] == {"verifier": "openai:x"}


def test_anthropic_temperature_is_sent_only_where_the_sdk_takes_it(keys, tmp_path):
    """anthropic 2.x dropped sampling parameters from ``messages.create``: passing one is a
    TypeError before any request. The provider sends what the installed SDK accepts."""
    import inspect

    from anthropic.resources.messages import AsyncMessages

    takes = "temperature" in inspect.signature(AsyncMessages.create).parameters
    with LoopbackLLMServer(answers=[ANSWER]) as srv:
        llm = get_llm("anthropic:claude-haiku-4-5", base_url=srv.anthropic_base_url, workdir=tmp_path)
        assert ask(llm, temperature=0.7) == Echo(text="ok", n=1)
        [req] = srv.requests
    assert ("temperature" in req.json) == takes
