"""The verifier–modifier loop, its runner stage and run statistics.

    round 0: checks ──► unfixable? ──► discard (reasons)        every verdict of every
                 │        clean? ────► accept                    round is kept, with its
                 └─ fixable ──► modifier (minimal edits)         Verdict.round
    round 1: checks on the edited conversation ... up to max_rounds modifier rounds
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from bargein.errors import BackendUnavailable
from bargein.llm.base import is_offline
from bargein.records.conversation import Conversation, Verdict, VerifiedConversation
from bargein.runner import Stage, StageContext
from bargein.seeding import stable_hash
from bargein.verify.checks import run_checks
from bargein.verify.edits import EditCommand
from bargein.verify.llm_checks import llm_checks
from bargein.verify.modifier import LLMClient, amodify, modify

STAGE_NAME = "verify"
STAGE_VERSION = "1"
_CODE = ("base", "checks", "quality", "objects", "leakage", "text", "edits", "modifier", "llm_checks",
         "loop")


@lru_cache(maxsize=1)
def code_hash() -> str:
    """Hash of the verifier's source: editing a check invalidates cached verify outputs."""
    root = Path(__file__).parent
    return stable_hash([(root / f"{m}.py").read_text(encoding="utf-8") for m in _CODE])[:16]


def _reason(v: Verdict) -> str:
    where = f" (message {v.message_index})" if v.message_index is not None else ""
    return f"{v.check}: {v.issue}{where}"


def _finish(conv: Conversation, verdicts: list[Verdict], rounds: int,
            reasons: Iterable[str] = ()) -> VerifiedConversation:
    reasons = tuple(dict.fromkeys(reasons))
    return VerifiedConversation(conversation=conv, verdicts=tuple(verdicts), rounds=rounds,
                                accepted=not reasons, discard_reasons=reasons)


async def averify_conversation(conv: Conversation, *, llm: LLMClient | None = None,
                               max_rounds: int = 3) -> VerifiedConversation:
    """Check, repair fixable issues with minimal edits, re-check; discard what cannot be fixed.

    Without ``llm`` only the deterministic checks and the rule-based modifier run.
    """
    if max_rounds < 0:
        raise ValueError(f"max_rounds must be >= 0, got {max_rounds}")
    verdicts: list[Verdict] = []
    current = conv
    for rnd in range(max_rounds + 1):
        found = run_checks(current)
        if llm is not None and all(v.fixable for v in found):
            found += await llm_checks(current, llm, known=found)
        found = [v.with_(round=rnd, id="") for v in found]
        verdicts += found
        if not found:
            return _finish(current, verdicts, rnd)
        unfixable = [v for v in found if not v.fixable]
        if unfixable:
            return _finish(current, verdicts, rnd, map(_reason, unfixable))
        if rnd == max_rounds:
            return _finish(current, verdicts, rnd, [
                f"{v.check}: still failing after {max_rounds} modifier rounds: {v.issue}"
                for v in found])
        edits = [EditCommand.parse(v.edit) for v in found if v.edit]
        if llm is None:
            needs_llm = [v for v in found if v.edit and EditCommand.parse(v.edit).op == "rewrite"]
            if needs_llm:
                return _finish(current, verdicts, rnd, [
                    f"{v.check}: needs a free-text rewrite, which the offline modifier cannot do: "
                    f"{v.issue}" for v in needs_llm])
            result = modify(current.messages, edits)
        else:
            result = await amodify(current.messages, edits, llm=llm)
        if not result.applied or result.messages == current.messages:
            return _finish(current, verdicts, rnd, [
                f"modifier: no edit could be applied ({'; '.join(why for _, why in result.skipped)})"])
        current = current.with_(messages=result.messages, id=current.id)   # the same conversation, edited
    raise AssertionError("unreachable")  # pragma: no cover


def _drive(coro: Any) -> Any:
    """Run a coroutine that never awaits real I/O (the offline loop) without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("offline verification tried to await I/O")


def verify_conversation(conv: Conversation, *, llm: LLMClient | None = None,
                        max_rounds: int = 3) -> VerifiedConversation:
    """Synchronous :func:`averify_conversation` (with ``llm``: not from inside an event loop)."""
    if llm is None:
        return _drive(averify_conversation(conv, max_rounds=max_rounds))
    return asyncio.run(averify_conversation(conv, llm=llm, max_rounds=max_rounds))


# ---- runner stage -------------------------------------------------------------------------
def _verify_offline(conv: Conversation, ctx: StageContext) -> VerifiedConversation:
    return verify_conversation(conv, max_rounds=ctx.config["max_rounds"])


def _llm_for(ctx: StageContext) -> LLMClient:
    llm = ctx.resources.get("llm")
    if llm is None:
        try:
            from bargein.llm import get_llm
        except ImportError as e:
            raise BackendUnavailable(f"verify --llm {ctx.config['llm']}: bargein.llm.get_llm is "
                                     f"not available ({e}). Fix: use --llm offline") from e
        llm = ctx.resources["llm"] = get_llm(ctx.config["llm"], workdir=ctx.workdir)
    return llm


async def _verify_llm(conv: Conversation, ctx: StageContext) -> VerifiedConversation:
    return await averify_conversation(conv, llm=_llm_for(ctx), max_rounds=ctx.config["max_rounds"])


def verify_stage(llm_spec: str = "offline", max_rounds: int = 3) -> Stage:
    """Conversation -> VerifiedConversation. ``ctx.resources["llm"]`` overrides the client the
    stage would build from ``llm_spec``."""
    if is_offline(llm_spec):
        return Stage(name=STAGE_NAME, fn=_verify_offline, output=VerifiedConversation,
                     config={"llm": "offline", "max_rounds": max_rounds, "code": code_hash()},
                     version=STAGE_VERSION)
    from bargein.llm import stage_agent_models

    routed = stage_agent_models(llm_spec, ("verifier", "modifier"))   # their own models: in the key
    return Stage(name=STAGE_NAME, fn=_verify_llm, output=VerifiedConversation,
                 config={"llm": llm_spec, "max_rounds": max_rounds, "code": code_hash(),
                         **({"agents": routed} if routed else {})},
                 version=STAGE_VERSION,
                 prompts=("verifier", "modifier"), backends=(llm_spec,), kind="io")


# ---- statistics ---------------------------------------------------------------------------
def reason_check(reason: str) -> str:
    """The check name a discard reason starts with."""
    return reason.split(":", 1)[0]


def summarize(verified: Iterable[VerifiedConversation]) -> dict[str, Any]:
    """Counts for a run: accepted/discarded, repaired, verdicts by check, discards by check."""
    verified = list(verified)
    by_check: Counter[str] = Counter()
    fixable: Counter[str] = Counter()
    discards: Counter[str] = Counter()
    for vc in verified:
        for v in vc.verdicts:
            by_check[v.check] += 1
            fixable[v.check] += v.fixable
        for c in {reason_check(r) for r in vc.discard_reasons}:
            discards[c] += 1
    accepted = [vc for vc in verified if vc.accepted]
    return {
        "conversations": len(verified),
        "accepted": len(accepted),
        "discarded": len(verified) - len(accepted),
        "repaired": sum(1 for vc in accepted if vc.rounds > 0),
        "verdicts_by_check": {k: {"total": by_check[k], "fixable": fixable[k],
                                  "unfixable": by_check[k] - fixable[k]} for k in sorted(by_check)},
        "discards_by_check": dict(sorted(discards.items())),
    }
