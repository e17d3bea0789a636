"""The provider protocol and the data it returns. Implementations live beside this file.

Contract used by every agent in bargein::

    from bargein.llm import get_llm
    llm = get_llm("openai:gpt-4o-mini", workdir=Path("work"))   # or "anthropic:…", "llamacpp:/path.gguf"
    obj = await llm.structured(messages, MySchema, agent="round_planner", sample=0)
    text = (await llm.complete(messages, agent="baseline")).text

``"offline"`` is not a provider: callers use their rule-based agent instead (``is_offline(spec)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    model: str
    provider: str
    finish_reason: str = "stop"
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict)


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


def is_offline(spec: str | None) -> bool:
    return spec is None or spec.strip().lower() in ("", "offline", "rule", "rules", "rule-based")
