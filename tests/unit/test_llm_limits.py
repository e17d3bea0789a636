"""Token buckets and structured-output parsing, without a server."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from bargein.llm.base import Completion, Usage, normalize_messages
from bargein.llm.limits import Limits, TokenBucket
from bargein.llm.structured import StructuredError, parse, with_instruction
from bargein.errors import ConfigError


def test_bucket_bursts_one_second_then_holds_the_rate():
    bucket = TokenBucket(rate_per_min=600)            # 10/s, burst 10

    async def take(n):
        t = time.perf_counter()
        for _ in range(n):
            await bucket.acquire()
        return time.perf_counter() - t

    took = asyncio.run(take(15))
    assert 0.45 <= took < 1.5


def test_tokens_per_minute_bucket_waits_for_big_requests_and_settles():
    lim = Limits(concurrency=2, tpm=60_000)            # 1000 tokens/s, 1000 banked

    async def run():
        t = time.perf_counter()
        await lim.admit(800)
        await lim.admit(800)                           # needs 600 more tokens: ~0.6 s
        return time.perf_counter() - t

    took = asyncio.run(run())
    assert 0.5 <= took < 1.5
    before = lim.tpm.level
    lim.settle(est_tokens=800, actual_tokens=100)       # the call used less: refund
    assert lim.tpm.level > before + 600


def test_bucket_rejects_nonsense():
    with pytest.raises(ValueError):
        TokenBucket(0)
    with pytest.raises(ValueError):
        Limits(concurrency=0)


class Pair(BaseModel):
    a: int
    b: str


def _c(text, finish="stop"):
    return Completion(text=text, usage=Usage(1, 1), model="m", provider="p", finish_reason=finish)


def test_parse_accepts_fences_and_surrounding_prose():
    assert parse(_c('```json\n{"a": 1, "b": "x"}\n```'), Pair) == Pair(a=1, b="x")
    assert parse(_c('Here you go: {"a": 2, "b": "y"} hope it helps'), Pair) == Pair(a=2, b="y")


def test_parse_errors_are_readable_and_mention_truncation():
    with pytest.raises(StructuredError) as ei:
        parse(_c('{"a": "one"}'), Pair)
    assert ei.value.errors == ["a: Input should be a valid integer, unable to parse string as an integer",
                               "b: Field required"]
    with pytest.raises(StructuredError) as ei:
        parse(_c('{"a": 1, "b": "tru', finish="length"), Pair, max_tokens=7)
    assert "cut off" in ei.value.errors[0] and "max_tokens=7" in ei.value.errors[0]


def test_instruction_joins_the_system_message():
    msgs = with_instruction([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], "I")
    assert msgs == [{"role": "system", "content": "S\n\nI"}, {"role": "user", "content": "U"}]
    assert with_instruction([{"role": "user", "content": "U"}], "I")[0] == {"role": "system", "content": "I"}


def test_messages_must_be_chat_messages():
    with pytest.raises(ConfigError, match="message 0"):
        normalize_messages([{"role": "robot", "content": "x"}])
    with pytest.raises(ConfigError, match="at least one"):
        normalize_messages([])
