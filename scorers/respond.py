"""Model responses for every eval item of a release and every epoch (input of the scorer).

    n = generate_responses("org/bargein-ihbench@v1.0.0", llm="openai:gpt-4o-mini", epochs=3,
                           out=Path("responses.jsonl"))

The model sees the item's system prompt and the history up to the interruption (the cut turn as
actually heard, ending with the interjection) and writes the next assistant turn. Providers:
anything ``bargein.llm.get_llm`` takes. Two offline responders need no key: ``offline`` (a
rule-based responder: a plausible recovery per type, with typical flaws 25% of the time, seeded
per item and epoch) and ``oracle`` (the gold recovery; an upper bound for sanity checks).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

from bargein.errors import ConfigError
from bargein.llm.base import is_offline
from bargein.records import EvalItem
from bargein.seeding import item_rng
from bargein.store import atomic_write_text


def _offline(items: list[EvalItem], epochs: int, seed: int, oracle: bool) -> list[dict]:
    from bargein.scorers.ihbench_rules import respond

    model = "oracle" if oracle else "offline-rules@1"
    return [{"item_id": i.id, "epoch": e, "model": model,
             "response": i.gold_recovery if oracle else respond(i, item_rng(seed, f"respond{e}", i.id))}
            for i in items for e in range(epochs)]


async def _llm(items: list[EvalItem], epochs: int, spec: str, workdir: Path, concurrency: int,
               temperature: float) -> list[dict]:
    from bargein.llm import get_llm

    llm = get_llm(spec, workdir=workdir)
    params = inspect.signature(llm.complete).parameters
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(item: EvalItem, epoch: int) -> dict:
        messages = [{"role": "system", "content": item.system_prompt}] + [
            {"role": m.role, "content": m.content} for m in item.history]
        kw = {"agent": "respond"}
        if "sample" in params:
            kw["sample"] = epoch
        if "temperature" in params:
            kw["temperature"] = temperature
        async with sem:
            c = await llm.complete(messages, **kw)
        return {"item_id": item.id, "epoch": epoch, "model": spec, "response": c.text.strip()}

    return list(await asyncio.gather(*(one(i, e) for i in items for e in range(epochs))))


def generate_responses(release: str | Path, *, llm: str, epochs: int = 3, out: Path,
                       seed: int = 1234, workdir: Path = Path("work"), concurrency: int = 8,
                       temperature: float = 0.7, endpoint: str | None = None) -> int:
    """Write ``{item_id, epoch, model, response}`` lines to ``out``; returns the line count."""
    from bargein.releases.hub import pull_release
    from bargein.scorers.ihbench import load_eval_items

    if epochs < 1:
        raise ConfigError(f"--epochs {epochs}: must be >= 1")
    items = load_eval_items(pull_release(str(release), endpoint=endpoint))
    if llm.strip().lower() == "oracle" or is_offline(llm):
        rows = _offline(items, epochs, seed, oracle=llm.strip().lower() == "oracle")
    else:
        rows = asyncio.run(_llm(items, epochs, llm, workdir, concurrency, temperature))
    atomic_write_text(out, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                                   for r in rows))
    return len(rows)
