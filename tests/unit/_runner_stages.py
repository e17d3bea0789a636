"""Module-level stage functions for the runner tests (worker processes import them by name)."""

from __future__ import annotations

import os
import time

from bargein.records import ChatMessage


def shout(item: ChatMessage, ctx) -> ChatMessage:
    """Uppercase plus a per-item random number: output depends on seed and item only."""
    if "boom" in item.content:
        raise ValueError(f"cannot shout {item.content!r}")
    delay = float(os.environ.get("BARGEIN_TEST_DELAY", "0"))
    if delay:
        time.sleep(delay)
    return ChatMessage(role="assistant", content=f"{item.content.upper()} {ctx.rng.random():.12f}",
                       id=f"{item.id}_shout")


def split_words(item: ChatMessage, ctx) -> list[ChatMessage]:
    return [ChatMessage(role="assistant", content=w, id=f"{item.id}_w{i}")
            for i, w in enumerate(item.content.split())]
