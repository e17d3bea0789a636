"""The provider protocol and the data it returns. Implementations live beside this file.

Contract used by every agent in bargein::

    from bargein.llm import get_llm
    llm = get_llm("openai:gpt-4o-mini", workdir=Path("work"))   # or "anthropic:…", "llamacpp:/path.gguf"
    obj = await llm.structured(messages, MySchema, agent="round_planner", sample=0)
    text = (await llm.complete(messages, agent="baseline")).text

``"offline"`` is not a provider: callers use their rule-based agent instead (``is_offline(spec)``).

A provider implements one verb, ``complete``, and declares capability flags. HTTP retries
(429, 5xx, timeouts, dropped connections, honouring Retry-After) are the SDK's own
(``max_retries``); what reaches bargein is final. A provider raises :class:`TransientError`
when the request could not be completed (retries exhausted, or a reply body that is not JSON —
:class:`MalformedResponse`, resent by the client), :class:`ProviderRequestError` for what the
server rejected (a bad request), and :class:`FormatRejected` when a server refuses the
structured-output format asked for (the client falls back to the next mode). Anything else —
a ``KeyError`` or ``TypeError`` in a provider — is a bug and propagates unchanged.

A provider with several structured-output modes lists them, best first, in ``structured_modes``
and takes ``mode=`` and ``probe=`` in ``complete``; :mod:`bargein.llm.modes` remembers, per
server, which one works.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# capability flags a provider may declare
JSON_SCHEMA = "json_schema"      # native structured output from a JSON Schema
JSON_MODE = "json_mode"          # "some JSON object" mode; the schema goes in the prompt
SEED = "seed"                    # honours a sampling seed

# structured-output modes (what a request carries); NATIVE ones need no schema in the prompt
MODE_SCHEMA = "json_schema"      # OpenAI response_format json_schema (strict where possible)
MODE_TOOL = "tool"               # Anthropic: a forced tool whose input_schema is the schema
MODE_JSON = "json_object"        # JSON mode; the schema goes in the prompt
MODE_PROMPT = "prompt"           # the schema in the prompt only
NATIVE_MODES = frozenset({MODE_SCHEMA, MODE_TOOL})


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    model: str
    provider: str
    finish_reason: str = "stop"          # normalised: "stop" | "length" | provider-specific
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@runtime_checkable
class Provider(Protocol):
    """One verb: ``complete``. ``json_schema`` asks for structured output where supported."""

    name: str
    model: str
    capabilities: frozenset[str]          # e.g. {"json_schema", "json_mode", "seed"}

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> Completion: ...


class TransientError(Exception):
    """A failure worth retrying. ``retry_after_s`` carries the server's Retry-After, if any."""

    def __init__(self, message: str, *, status: int | None = None, retry_after_s: float | None = None,
                 kind: str = "transient"):
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s
        self.kind = kind


class MalformedResponse(TransientError):
    """The server answered 200 with a body that is not JSON (a cut connection, a broken proxy)."""

    def __init__(self, message: str):
        super().__init__(message, kind="malformed")


class ProviderRequestError(Exception):
    """The provider rejected the request itself (4xx other than 408/409/429); not retried."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class FormatRejected(ProviderRequestError):
    """The server refused the structured-output ``mode`` of the request (e.g. llama.cpp's
    server answers ``json_schema`` with HTTP 500): the client tries the next mode."""

    def __init__(self, message: str, *, mode: str, status: int | None = None):
        super().__init__(message, status=status)
        self.mode = mode


def normalize_messages(messages: Iterable[Any]) -> list[dict[str, str]]:
    """Chat messages as plain ``{"role", "content"}`` dicts; accepts dicts and ``ChatMessage``."""
    out = []
    for n, m in enumerate(messages):
        if isinstance(m, dict):
            role, content = m.get("role"), m.get("content")
        else:
            role, content = getattr(m, "role", None), getattr(m, "content", None)
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            from bargein.errors import ConfigError

            raise ConfigError(f"message {n} must have role system|user|assistant and text content, "
                              f"got {type(m).__name__} role={role!r}")
        out.append({"role": role, "content": content})
    if not out:
        from bargein.errors import ConfigError

        raise ConfigError("an LLM call needs at least one message")
    return out


def is_offline(spec: str | None) -> bool:
    return spec is None or spec.strip().lower() in ("", "offline", "rule", "rules", "rule-based")
