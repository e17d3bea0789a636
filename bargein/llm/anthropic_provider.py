"""``anthropic:MODEL`` — Anthropic's messages API through the official ``anthropic`` SDK:
``messages.create``.

System messages go to ``system``; consecutive messages of one role are merged (the API wants
alternating turns). Structured output, best first (``structured="auto"``)::

    tool     a forced tool (tool_choice {"type": "tool"}) whose input_schema is the output
             schema; the answer is the tool call's input
    prompt   the schema in the prompt only (for Anthropic-compatible servers without tools)

Retries are the SDK's (``max_retries``, honouring Retry-After).
"""

from __future__ import annotations

import functools
import inspect

import json
import os
from typing import Any

from bargein.llm.base import MODE_PROMPT, MODE_TOOL, Completion, MalformedResponse, Usage
from bargein.llm.openai_provider import resolve_key, structured_modes
from bargein.llm.schemas import schema_name
from bargein.llm.sdkclients import LoopClients, http_client, send

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
STRUCTURED = {"auto": (MODE_TOOL, MODE_PROMPT), "schema": (MODE_TOOL,), "tool": (MODE_TOOL,),
              "prompt": (MODE_PROMPT,)}
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop", "max_tokens": "length"}


def split_system(messages: list[dict[str, str]]) -> tuple[str, list[dict[str, str]]]:
    """(system text, alternating user/assistant turns)."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns: list[dict[str, str]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if turns and turns[-1]["role"] == m["role"]:
            turns[-1] = {"role": m["role"], "content": turns[-1]["content"] + "\n\n" + m["content"]}
        else:
            turns.append({"role": m["role"], "content": m["content"]})
    return system, turns


def answer_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """The tool whose input is the answer."""
    name = schema_name(schema)
    return {"name": name, "input_schema": schema,
            "description": f"Give your answer by calling this tool: its input is the {name} object "
                           "the instructions ask for."}


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, model: str, *, base_url: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 4, structured: str = "auto", api_key_env: str | None = None,
                 client: Any = None, max_connections: int = 8, http: str = "auto",
                 context_tokens: int | str | None = None, **_ignored: Any):
        import anthropic

        spec = f"anthropic:{model}"
        self.model = model
        self.key_env = api_key_env or KEY_ENV
        self.structured_modes = structured_modes(structured, STRUCTURED, spec)
        self.capabilities = frozenset()
        self.context_tokens = context_tokens
        self._sdk = anthropic
        if client is not None:
            inst = client if hasattr(client, "copy") else None
            self.base_url = str(inst.base_url) if inst is not None else base_url or "client-factory"
            self._secrets: tuple[str, ...] = tuple(
                s for s in (getattr(inst, "api_key", None),) if isinstance(s, str))
            make = None
        else:
            self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
            key = resolve_key(self.key_env, self.base_url, spec)
            self._secrets = (key,)

            def make() -> Any:
                return anthropic.AsyncAnthropic(api_key=key, base_url=self.base_url, timeout=timeout_s,
                                                max_retries=max_retries,
                                                http_client=http_client(anthropic, max_connections, timeout_s, http))
        self.server_key = (self.name, self.base_url or "")
        self._clients = LoopClients(make, sdk=anthropic, user=client, what=spec)

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    def request(self, messages: list[dict[str, str]], *, temperature: float | None, max_tokens: int,
                json_schema: dict[str, Any] | None, seed: int | None, mode: str | None) -> dict[str, Any]:
        """The keyword arguments of ``messages.create``."""
        system, turns = split_system(messages)
        kw: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": turns}
        if system:
            kw["system"] = system
        if temperature is not None and "temperature" in _create_params():
            kw["temperature"] = temperature         # newer SDKs dropped sampling parameters
        if json_schema is not None and (mode or self.structured_modes[0]) == MODE_TOOL:
            tool = answer_tool(json_schema)
            kw["tools"] = [tool]
            kw["tool_choice"] = {"type": "tool", "name": tool["name"]}
        return kw

    async def complete(self, messages: list[dict[str, str]], *, temperature: float | None,
                       max_tokens: int, json_schema: dict[str, Any] | None = None,
                       seed: int | None = None, mode: str | None = None,
                       probe: bool = False) -> Completion:
        kw = self.request(messages, temperature=temperature, max_tokens=max_tokens,
                          json_schema=json_schema, seed=seed, mode=mode)
        resp = await send(self._clients, lambda c: c.messages.create(**kw),
                          provider=f"anthropic:{self.model}", key_env=self.key_env,
                          mode=mode if json_schema is not None else None, probe=probe)
        content = getattr(resp, "content", None)
        if content is None:
            raise MalformedResponse(f"anthropic:{self.model}: the reply has no content")
        calls = [b for b in content if b.type == "tool_use"]
        if calls:                                  # the forced tool's input is the answer
            text = json.dumps(calls[0].input, ensure_ascii=False)
        else:
            text = "".join(b.text for b in content if b.type == "text")
        stop = resp.stop_reason or "end_turn"
        usage = resp.usage
        return Completion(
            text=text, usage=Usage(int(usage.input_tokens or 0), int(usage.output_tokens or 0)),
            model=resp.model or self.model, provider=self.name,
            finish_reason=_FINISH.get(stop, stop), raw={"id": resp.id})

    async def aclose(self) -> None:
        await self._clients.aclose()


def create(model: str, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider(model, **kwargs)


@functools.lru_cache(maxsize=1)
def _create_params() -> frozenset[str]:
    """The keyword arguments the installed SDK's typed ``messages.create`` accepts."""
    from anthropic.resources.messages import AsyncMessages

    return frozenset(inspect.signature(AsyncMessages.create).parameters)
