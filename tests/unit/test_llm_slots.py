"""Concurrency tuned to the server's slots (issue 17, §8): with ``concurrency="server"`` the
slots a llama.cpp server reports (``GET /props`` ``total_slots``) set the calls in flight and the
items a stage keeps going; a server that does not say leaves the provider's default."""

from __future__ import annotations

import pytest

from bargein import registry
from bargein.errors import ConfigError
from bargein.llm import DEFAULT_CONCURRENCY, get_llm, stage_concurrency
from bargein.llm.server import _slots, server_root, server_slots
from bargein.testing import LoopbackLLMServer


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _slots.cache_clear()
    yield
    registry.set_options("llm", "openai")
    _slots.cache_clear()


def test_slots_read_from_the_server(tmp_path):
    with LoopbackLLMServer(slots=3) as srv:
        assert server_root(srv.openai_base_url) + "/v1" == srv.openai_base_url.rstrip("/")
        assert server_slots(srv.openai_base_url) == 3
        llm = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path,
                      concurrency="server")
        assert llm.limits.concurrency == 3
        registry.set_options("llm", "openai", concurrency="server", base_url=srv.openai_base_url)
        assert stage_concurrency("openai:qwen", 64) == 6          # two items per slot
        assert [r.path for r in srv.requests] == ["/props"]        # asked once


def test_a_server_without_slots_gives_the_default(tmp_path):
    with LoopbackLLMServer() as srv:            # vLLM-like: no /props
        assert server_slots(srv.openai_base_url) is None
        llm = get_llm("openai:qwen", base_url=srv.openai_base_url, workdir=tmp_path,
                      concurrency="server")
        assert llm.limits.concurrency == DEFAULT_CONCURRENCY["openai"]
    with pytest.raises(ConfigError, match="'server'"):
        get_llm("openai:qwen", base_url="http://127.0.0.1:9/v1", workdir=tmp_path, concurrency=0)
