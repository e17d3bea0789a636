"""``anthropic:MODEL`` — Anthropic's messages API through the official ``anthropic`` SDK.

System messages go to ``system``; consecutive messages of one role are merged (the API wants
alternating turns). Structured output uses ``output_config.format`` with the SDK's
``transform_schema`` (capability ``json_schema``), or a prompt instruction (``structured="prompt"``).
"""

from __future__ import annotations

import os
from typing import Any

from bargein.errors import ConfigError
from bargein.llm.base import JSON_SCHEMA, Completion, Usage
from bargein.llm.openai_provider import resolve_key
from bargein.llm.sdkpool import ClientPool, post_json

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


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


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, model: str, *, base_url: str | None = None, timeout_s: float = 120.0,
                 max_connections: int = 8, structured: str = "auto", api_key_env: str | None = None,
                 shard_size: int = 8):
        import anthropic

        if structured not in ("auto", "schema", "prompt"):
            raise ConfigError(f"anthropic: structured={structured!r}; valid: auto, schema, prompt")
        self.model = model
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        self.key_env = api_key_env or KEY_ENV
        self.capabilities = frozenset() if structured == "prompt" else frozenset({JSON_SCHEMA})
        self._sdk = anthropic
        key = resolve_key(self.key_env, self.base_url, f"anthropic:{model}")
        self._secrets = (key,)
        self._schemas: dict[str, dict[str, Any]] = {}

        def make(http_client: Any) -> Any:
            return anthropic.AsyncAnthropic(api_key=key, base_url=self.base_url, max_retries=0,
                                            http_client=http_client, open_telemetry=False)

        self._pool = ClientPool(make, max_connections=max_connections, timeout_s=timeout_s,
                                shard_size=shard_size)

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    def _api_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        import json

        key = json.dumps(schema, sort_keys=True)
        if key not in self._schemas:
            try:
                self._schemas[key] = self._sdk.transform_schema(schema)
            except (ValueError, TypeError):
                self._schemas[key] = schema
        return self._schemas[key]

    def body(self, messages: list[dict[str, str]], *, temperature: float | None, max_tokens: int,
             json_schema: dict[str, Any] | None, seed: int | None) -> dict[str, Any]:
        system, turns = split_system(messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": turns}
        if system:
            body["system"] = system
        if temperature is not None:
            body["temperature"] = temperature
        if json_schema is not None and JSON_SCHEMA in self.capabilities:
            body["output_config"] = {"format": {"type": "json_schema",
                                                "schema": self._api_schema(json_schema)}}
        return body

    async def complete(self, messages: list[dict[str, str]], *, temperature: float | None,
                       max_tokens: int, json_schema: dict[str, Any] | None = None,
                       seed: int | None = None) -> Completion:
        body = self.body(messages, temperature=temperature, max_tokens=max_tokens,
                         json_schema=json_schema, seed=seed)

        def parse(data: dict) -> Completion:
            text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
            usage = data.get("usage") or {}
            stop = data.get("stop_reason") or "end_turn"
            return Completion(
                text=text, usage=Usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)),
                model=data.get("model") or self.model, provider=self.name,
                finish_reason=_FINISH.get(stop, stop), raw={"id": data.get("id")})

        return await post_json(self._pool, "/v1/messages", body, parse, sdk=self._sdk,
                               provider=f"anthropic:{self.model}", key_env=self.key_env)

    async def aclose(self) -> None:
        await self._pool.aclose()


def create(model: str, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider(model, **kwargs)
