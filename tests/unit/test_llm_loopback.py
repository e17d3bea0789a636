"""The loopback server speaks the wire protocols well enough for the real SDKs' typed parsers."""

from __future__ import annotations

import asyncio
import io
import json
import wave

import anthropic
import openai
import pytest

from bargein.testing import Fault, LoopbackLLMServer, LoopbackProcess, example_from_schema
from bargein.testing.wire import last_user_text, request_schema

KEY = "sk-test-SECRET123"


def _oai(srv, **kw):
    return openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=KEY, max_retries=0, **kw)


def _ant(srv, **kw):
    return anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key=KEY, max_retries=0, **kw)


def test_openai_sdk_typed_parse_with_json_schema():
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
              "required": ["name", "n"], "title": "Thing"}

    async def main(srv):
        async with _oai(srv) as c:
            return await c.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "make a thing"}], max_tokens=100,
                response_format={"type": "json_schema", "json_schema": {"name": "Thing", "schema": schema}})

    with LoopbackLLMServer() as srv:
        r = asyncio.run(main(srv))
        req = srv.requests[0]
    assert r.choices[0].finish_reason == "stop"
    assert json.loads(r.choices[0].message.content) == {"name": "xxxx", "n": 0}
    assert r.usage.prompt_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert req.api == "openai" and req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"       # auth is sent (kept in memory only)
    assert request_schema(req.json) == schema


def test_anthropic_sdk_typed_parse_and_queue():
    async def main(srv):
        async with _ant(srv) as c:
            a = await c.messages.create(model="claude-haiku-4-5", max_tokens=50, system="be brief",
                                        messages=[{"role": "user", "content": "hi"}])
            b = await c.messages.create(model="claude-haiku-4-5", max_tokens=50,
                                        messages=[{"role": "user", "content": "again"}])
            return a, b

    with LoopbackLLMServer(answers=["first answer", "second answer"]) as srv:
        a, b = asyncio.run(main(srv))
        reqs = srv.requests
    assert a.content[0].text == "first answer" and a.stop_reason == "end_turn"
    assert b.content[0].text == "second answer"
    assert a.usage.input_tokens > 0 and a.usage.output_tokens == 3
    assert reqs[0].api == "anthropic" and reqs[0].json["system"] == "be brief"


def test_responder_sees_the_request_and_max_tokens_truncates():
    def responder(req):
        return "echo: " + last_user_text(req) * 10

    async def main(srv):
        async with _oai(srv) as c:
            return await c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "abcd"}], max_tokens=3)

    with LoopbackLLMServer(responder=responder) as srv:
        r = asyncio.run(main(srv))
    assert r.choices[0].finish_reason == "length"
    assert r.choices[0].message.content == ("echo: " + "abcd" * 10)[:12]


@pytest.mark.parametrize("kind,exc", [("rate_limit", "RateLimitError"), ("server_error", "InternalServerError"),
                                      ("timeout", "APITimeoutError")])
def test_transport_faults_reach_both_sdks_as_their_errors(kind, exc):
    async def main(srv):
        errors = []
        for make, call in ((_oai, lambda c: c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], max_tokens=5)),
                           (_ant, lambda c: c.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]))):
            srv.fault(kind)
            async with make(srv, timeout=0.3) as client:
                with pytest.raises(Exception) as ei:
                    await call(client)
            errors.append(ei.value)
        return errors

    with LoopbackLLMServer(hang_s=3.0, retry_after_s=0.25) as srv:
        errors = asyncio.run(main(srv))
    assert [type(e).__name__ for e in errors] == [exc, exc]
    assert isinstance(errors[0], openai.APIError) and isinstance(errors[1], anthropic.APIError)
    if kind == "rate_limit":
        assert errors[0].response.headers["retry-after"] == "0.25"
        assert errors[1].response.headers["retry-after-ms"] == "250"


def test_content_faults_and_malformed_body():
    async def main(srv):
        async with _oai(srv) as c:
            out = []
            for _ in range(3):
                r = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                    max_tokens=100)
                out.append((r.choices[0].message.content, r.choices[0].finish_reason))
            with pytest.raises(ValueError):          # the SDK cannot decode a malformed body
                await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            return out

    with LoopbackLLMServer(answers=['{"text": "a complete answer"}'],
                           faults=["invalid_json", "schema_invalid", "truncated", "malformed_json"]) as srv:
        out = asyncio.run(main(srv))
        faults = [r.fault for r in srv.requests]
    (bad, fr1), (wrong, fr2), (cut, fr3) = out
    with pytest.raises(ValueError):
        json.loads(bad)
    assert json.loads(wrong) == {"loopback_fault": "schema_invalid"} and fr2 == "stop"
    answer = '{"text": "a complete answer"}'
    assert cut == answer[: len(answer) // 2] and fr3 == "length"      # the queued answer, cut in half
    assert faults == ["invalid_json", "schema_invalid", "truncated", "malformed_json"]


def test_rate_faults_are_seeded_by_request_content_not_arrival_order():
    bodies = [{"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(60)]

    def run(order):
        import urllib.request

        with LoopbackLLMServer(fault_rate=0.3, fault_kinds=["server_error", "invalid_json"], seed=3) as srv:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            for i in order:
                req = urllib.request.Request(srv.openai_base_url + "/chat/completions",
                                             data=json.dumps(bodies[i]).encode(), method="POST",
                                             headers={"content-type": "application/json"})
                try:
                    opener.open(req, timeout=5).read()
                except urllib.error.HTTPError:
                    pass
            return {r.json["messages"][0]["content"]: r.fault for r in srv.requests}

    forward, backward = run(range(60)), run(reversed(range(60)))
    assert forward == backward
    n = sum(1 for f in forward.values() if f)
    assert 8 <= n <= 30 and set(forward.values()) == {None, "server_error", "invalid_json"}


def test_queue_may_hold_faults_and_responder_may_return_them():
    def responder(req):
        return Fault("server_error") if "fail" in last_user_text(req) else "fine"

    async def main(srv):
        async with _oai(srv) as c:
            with pytest.raises(openai.RateLimitError):
                await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
            with pytest.raises(openai.InternalServerError):
                await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "fail"}])
            r = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "ok"}])
            return r.choices[0].message.content

    with LoopbackLLMServer(answers=[Fault("rate_limit")], responder=responder) as srv:
        assert asyncio.run(main(srv)) == "fine"
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("gremlins")


def test_speech_endpoint_returns_tone_wav_proportional_to_words():
    async def main(srv):
        async with _oai(srv) as c:
            short = await c.audio.speech.create(model="tts-1", voice="alloy", input="one two",
                                                response_format="wav")
            long = await c.audio.speech.create(model="tts-1", voice="alloy", input="one two three four",
                                               response_format="wav")
            return short.content, long.content

    with LoopbackLLMServer() as srv:
        short, long = asyncio.run(main(srv))
        assert srv.requests[0].api == "speech"
    with wave.open(io.BytesIO(short)) as w:
        assert w.getframerate() == 24000 and w.getnchannels() == 1
        n_short = w.getnframes()
    with wave.open(io.BytesIO(long)) as w:
        assert w.getnframes() == 2 * n_short


def test_custom_speech_fn_and_auth_check():
    seen = []

    def speech(text, voice, fmt):
        seen.append((text, voice, fmt))
        return b"RIFFfake"

    async def main(srv):
        async with _oai(srv) as c:
            r = await c.audio.speech.create(model="tts-1", voice="nova", input="hello", response_format="pcm")
        async with openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-wrong", max_retries=0) as bad:
            with pytest.raises(openai.AuthenticationError):
                await bad.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        return r.content

    with LoopbackLLMServer(speech_fn=speech, api_key=KEY) as srv:
        assert asyncio.run(main(srv)) == b"RIFFfake"
    assert seen == [("hello", "nova", "pcm")]


def test_example_from_schema_handles_refs_enums_and_optionals():
    from pydantic import BaseModel
    from typing import Literal

    class Inner(BaseModel):
        kind: Literal["a", "b"]
        score: float

    class Outer(BaseModel):
        items: list[Inner]
        inner: Inner
        note: str | None = None

    obj = example_from_schema(Outer.model_json_schema())
    assert Outer.model_validate(obj).inner.kind == "a"


def test_loopback_process_counts_requests_over_http():
    async def main(srv):
        async with _oai(srv) as c:
            r = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            return r.choices[0].message.content

    with LoopbackProcess(answers=["from a child process"]) as srv:
        assert asyncio.run(main(srv)) == "from a child process"
        assert srv.stats()["apis"] == {"openai": 1}
        srv.clear()
        assert srv.request_count == 0
