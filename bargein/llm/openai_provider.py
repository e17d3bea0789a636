"""``openai:MODEL`` — OpenAI, or any OpenAI-compatible server (vLLM, Ollama, llama.cpp server,
LM Studio) by ``base_url``, through the official ``openai`` SDK (``AsyncOpenAI``).

Structured output: ``response_format`` ``json_schema`` (capability ``json_schema``, default),
``json_object`` (``structured="json"``) or a prompt instruction only (``structured="prompt"``).
The SDK's own retries are off: :mod:`bargein.llm.client` owns the one retry policy.
"""

from __future__ import annotations

import os
import re
from typing import Any

from bargein.errors import ConfigError
from bargein.llm.base import JSON_MODE, JSON_SCHEMA, SEED, Completion, Usage
from bargein.llm.sdkpool import ClientPool, post_json

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
LOCAL_PLACEHOLDER_KEY = "sk-no-key-required"
STRUCTURED_MODES = {"auto": {JSON_SCHEMA, SEED}, "schema": {JSON_SCHEMA, SEED},
                    "json": {JSON_MODE, SEED}, "prompt": {SEED}}


def resolve_key(key_env: str, base_url: str | None, spec: str) -> str:
    """The API key from the environment only. Without one, a custom ``base_url`` (a local
    server) gets a placeholder key; the provider's own endpoint needs the real one."""
    key = os.environ.get(key_env, "").strip()
    if key:
        return key
    if base_url:
        return LOCAL_PLACEHOLDER_KEY
    raise ConfigError(f"{spec} needs an API key: set the environment variable {key_env} "
                      "(keys are read from the environment only, never from config files). "
                      "For a local OpenAI-compatible server, pass base_url or set the *_BASE_URL variable.")


def structured_caps(structured: str) -> frozenset[str]:
    if structured not in STRUCTURED_MODES:
        raise ConfigError(f"structured={structured!r}; valid: {', '.join(STRUCTURED_MODES)}")
    return frozenset(STRUCTURED_MODES[structured])


def schema_name(schema: dict[str, Any]) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "output"))[:64] or "output"


class OpenAIProvider:
    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, timeout_s: float = 120.0,
                 max_connections: int = 16, structured: str = "auto", api_key_env: str | None = None,
                 shard_size: int = 8):
        import openai

        self.model = model
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        self.key_env = api_key_env or KEY_ENV
        self.capabilities = structured_caps(structured)
        self._sdk = openai
        key = resolve_key(self.key_env, self.base_url, f"openai:{model}")
        self._secrets = (key,)
        # the official API takes max_completion_tokens; compatible servers take max_tokens
        self._max_tokens_field = "max_tokens" if self.base_url else "max_completion_tokens"

        def make(http_client: Any) -> Any:
            return openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0,
                                      http_client=http_client)

        self._pool = ClientPool(make, max_connections=max_connections, timeout_s=timeout_s,
                                shard_size=shard_size)

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r})"

    def body(self, messages: list[dict[str, str]], *, temperature: float | None, max_tokens: int,
             json_schema: dict[str, Any] | None, seed: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                self._max_tokens_field: max_tokens}
        if temperature is not None:
            body["temperature"] = temperature
        if seed is not None and SEED in self.capabilities:
            body["seed"] = seed
        if json_schema is not None:
            if JSON_SCHEMA in self.capabilities:
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": schema_name(json_schema), "schema": json_schema, "strict": False}}
            elif JSON_MODE in self.capabilities:
                body["response_format"] = {"type": "json_object"}
        return body

    async def complete(self, messages: list[dict[str, str]], *, temperature: float | None,
                       max_tokens: int, json_schema: dict[str, Any] | None = None,
                       seed: int | None = None) -> Completion:
        body = self.body(messages, temperature=temperature, max_tokens=max_tokens,
                         json_schema=json_schema, seed=seed)

        def parse(data: dict) -> Completion:
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return Completion(
                text=choice["message"].get("content") or "",
                usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
                model=data.get("model") or self.model, provider=self.name,
                finish_reason=choice.get("finish_reason") or "stop", raw={"id": data.get("id")})

        return await post_json(self._pool, "/chat/completions", body, parse, sdk=self._sdk,
                               provider=f"openai:{self.model}", key_env=self.key_env)

    async def aclose(self) -> None:
        await self._pool.aclose()


def create(model: str, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(model, **kwargs)
