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


def vad_regions(item: ChatMessage, ctx) -> ChatMessage:
    """Synthesise the text with the plugin's ``tone`` engine and find speech with a VAD by name."""
    import json

    from bargein import registry
    from bargein.audio.vad import get_vad

    speech = registry.get("tts", "tone").synthesize(item.content, "low")
    vad = get_vad(ctx.config["vad"])
    regions = [[round(s.start_s, 3), round(s.end_s, 3)] for s in vad.segments(speech.samples, speech.sample_rate)]
    return ChatMessage(role="assistant", content=json.dumps([vad.id, regions]), id=f"{item.id}_regions")


def write_file(item: ChatMessage, ctx) -> ChatMessage:
    """Write one file per item under ``config['out']`` (outside the work dir, like perturb)."""
    from pathlib import Path

    from bargein.store import atomic_write_text

    path = Path(ctx.config["out"]) / f"{item.id}.txt"
    atomic_write_text(path, f"{item.content.upper()} {ctx.rng.random():.12f}\n")
    return ChatMessage(role="assistant", content=str(path), id=f"{item.id}_written")


def fail_with_evidence(item: ChatMessage, ctx) -> ChatMessage:
    """Fails every item; the item's text says which evidence the exception carries."""
    from bargein.errors import GenerationFailed

    evidence = {"typed": {"agent": "a", "attempts": 2, "errors": ["no JSON"]},
                "mistyped": {"agent": "a", "attempts": "two"},
                "list": ["first problem", "second problem"],
                "number": 7,
                "object": {"agent": "a", "when": object()}}[item.content]
    raise GenerationFailed(f"{item.content} evidence", evidence=evidence)


async def frozen_count(item: ChatMessage, ctx) -> ChatMessage:
    """Reports how many objects the cyclic GC holds frozen while the stage runs."""
    import gc

    return ChatMessage(role="assistant", content=str(gc.get_freeze_count()), id=f"{item.id}_gc")
