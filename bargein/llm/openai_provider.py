"""``openai:MODEL`` — OpenAI, or any OpenAI-compatible server (vLLM, Ollama, llama.cpp server,
LM Studio) by ``base_url``, through the official ``openai`` SDK: ``chat.completions.create``.

Structured output, best first (``structured="auto"``; a single mode pins it)::

    json_schema   response_format {"type": "json_schema", "json_schema": {..., "strict": true}}
                  (strict when the schema has a strict form, see bargein.llm.schemas)
    json_object   response_format {"type": "json_object"}; the schema goes in the prompt (and, for
                  a server other than OpenAI's, in response_format's ``schema`` too, which
                  llama-cpp-python's server turns into a grammar)
    prompt        the schema in the prompt only

A server that refuses a mode moves the chain down for that server (bargein.llm.modes).
Retries are the SDK's (``max_retries``, honouring Retry-After). The token limit goes in
``max_completion_tokens`` for models that require it (o-series, gpt-5) and in ``max_tokens``
otherwise, whatever the base URL; ``max_tokens_field`` overrides that choice.
"""

from __future__ import annotations

import os
import re
from typing import Any

from bargein.errors import ConfigError
from bargein.llm.base import (
    MODE_JSON, MODE_PROMPT, MODE_SCHEMA, SEED, Completion, MalformedResponse, ProviderRequestError,
    TransientError, Usage,
)
from bargein.llm.schemas import schema_name, strict_variant
from bargein.llm.sdkclients import LoopClients, http_client, send

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
LOCAL_PLACEHOLDER_KEY = "sk-no-key-required"
STRUCTURED = {"auto": (MODE_SCHEMA, MODE_JSON, MODE_PROMPT), "schema": (MODE_SCHEMA,),
              "json_schema": (MODE_SCHEMA,), "json": (MODE_JSON,), "json_object": (MODE_JSON,),
              "prompt": (MODE_PROMPT,)}
# models that take only max_completion_tokens (reasoning models)
_COMPLETION_TOKENS_MODELS = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")


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


def structured_modes(structured: str, table: dict[str, tuple[str, ...]], spec: str) -> tuple[str, ...]:
    if structured not in table:
        raise ConfigError(f"{spec}: structured={structured!r}; valid: {', '.join(table)}")
    return table[structured]


def token_limit_field(model: str, override: str | None = None) -> str:
    """Which request field carries the token limit for ``model``."""
    if override is not None:
        if override not in MAX_TOKENS_FIELDS:
            raise ConfigError(f"max_tokens_field={override!r}; valid: {', '.join(MAX_TOKENS_FIELDS)}")
        return override
    # the deployment name behind a proxy may hide the model: strip a "provider/" prefix
    return "max_completion_tokens" if _COMPLETION_TOKENS_MODELS.match(model.rsplit("/", 1)[-1]) \
        else "max_tokens"


class OpenAIProvider:
    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 4, structured: str = "auto", api_key_env: str | None = None,
                 client: Any = None, max_connections: int = 8, http: str = "auto",
                 max_tokens_field: str | None = None, context_tokens: int | str | None = None,
                 frequency_penalty: float | None = None, **_ignored: Any):
        import openai

        spec = f"openai:{model}"
        self.model = model
        self.key_env = api_key_env or KEY_ENV
        self.structured_modes = structured_modes(structured, STRUCTURED, spec)
        self.capabilities = frozenset({SEED})
        self.context_tokens = context_tokens
        # sampling settings every request carries (and the cache key with them)
        self.sampling = {} if frequency_penalty is None else {"frequency_penalty": frequency_penalty}
        self._field = token_limit_field(model, max_tokens_field)
        self._sdk = openai
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
                return openai.AsyncOpenAI(api_key=key, base_url=self.base_url, timeout=timeout_s,
                                          max_retries=max_retries,
                                          http_client=http_client(openai, max_connections, timeout_s, http))
        self.server_key = (self.name, self.base_url or "")
        self._strict: dict[int, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        self._clients = LoopClients(make, sdk=openai, user=client, what=spec)

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r})"

    def _strict_variant(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """:func:`strict_variant`, once per schema object (the client passes the same dict)."""
        hit = self._strict.get(id(schema))
        if hit is None or hit[0] is not schema:
            hit = self._strict[id(schema)] = (schema, strict_variant(schema))
        return hit[1]

    def request(self, messages: list[dict[str, str]], *, temperature: float | None, max_tokens: int,
                json_schema: dict[str, Any] | None, seed: int | None, mode: str | None) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create``."""
        kw: dict[str, Any] = {"model": self.model, "messages": messages, self._field: max_tokens}
        if temperature is not None:
            kw["temperature"] = temperature
        if seed is not None:
            kw["seed"] = seed
        kw.update(self.sampling)
        if json_schema is not None:
            mode = mode or self.structured_modes[0]
            if mode == MODE_SCHEMA:
                strict = self._strict_variant(json_schema)
                kw["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": schema_name(json_schema), "schema": strict if strict is not None else json_schema,
                    "strict": strict is not None}}
            elif mode == MODE_JSON:
                kw["response_format"] = {"type": "json_object"}
                if self.base_url and "api.openai.com" not in self.base_url:
                    # llama-cpp-python's server constrains decoding to a schema given here (a
                    # grammar); servers that do not know the field ignore it
                    kw["response_format"]["schema"] = json_schema
        return kw

    async def complete(self, messages: list[dict[str, str]], *, temperature: float | None,
                       max_tokens: int, json_schema: dict[str, Any] | None = None,
                       seed: int | None = None, mode: str | None = None,
                       probe: bool = False) -> Completion:
        kw = self.request(messages, temperature=temperature, max_tokens=max_tokens,
                          json_schema=json_schema, seed=seed, mode=mode)
        resp = await send(self._clients, lambda c: c.chat.completions.create(**kw),
                          provider=f"openai:{self.model}", key_env=self.key_env,
                          mode=mode if json_schema is not None else None, probe=probe)
        if not getattr(resp, "choices", None):
            raise MalformedResponse(f"openai:{self.model}: the reply has no choices")
        choice = resp.choices[0]
        usage = resp.usage
        message = choice.message
        text = message.content or ""
        if not text and getattr(message, "refusal", None):
            text = message.refusal
        return Completion(
            text=text,
            usage=Usage(int(usage.prompt_tokens or 0) if usage else 0,
                        int(usage.completion_tokens or 0) if usage else 0),
            model=resp.model or self.model, provider=self.name,
            finish_reason=choice.finish_reason or "stop", raw={"id": resp.id})

    async def context_window(self) -> int | None:
        """The model's context size as the server reports it (vLLM ``max_model_len``,
        llama.cpp ``meta.n_ctx_train``, LM Studio ``context_length``), or None."""
        try:
            info = await send(self._clients, lambda c: c.with_options(max_retries=0).models.retrieve(self.model),
                              provider=f"openai:{self.model}", key_env=self.key_env)
        except (TransientError, ProviderRequestError, ConfigError):
            return None                      # an optional hint: a server without the route is fine
        extra = info.model_dump() if hasattr(info, "model_dump") else {}
        for key in ("max_model_len", "context_length", "context_window", "n_ctx"):
            if isinstance(extra.get(key), int) and extra[key] > 0:
                return extra[key]
        meta = extra.get("meta") or {}
        for key in ("n_ctx", "n_ctx_train"):
            if isinstance(meta.get(key), int) and meta[key] > 0:
                return meta[key]
        return None

    async def aclose(self) -> None:
        await self._clients.aclose()


def create(model: str, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(model, **kwargs)
