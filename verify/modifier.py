"""The modifier: minimal targeted edits, rule-based (exact) or by an LLM (free-text rewrites).

It receives the messages and the edit commands and nothing else: no KB, goal, intent or
scenario (as in IHBench, the modifier must not be able to leak what the user cannot know).
The LLM form sees message text, heard text and interruption types — not the workflow stage
labels on the messages.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from bargein.prompts import render
from bargein.records.conversation import Message
from bargein.verify.edits import EditCommand, ModifyResult, apply_edits, set_edit

MODIFIER_PROMPT = "modifier"
REASKS = 2


class LLMClient(Protocol):
    """What the verifier needs of an LLM client; ``bargein.llm.get_llm(spec)`` returns one.
    ``structured`` returns a validated ``schema`` instance (schema errors re-asked inside)."""

    async def structured(self, messages: list[dict[str, str]], schema: type[BaseModel], *,
                         agent: str, sample: int = 0) -> BaseModel: ...


class RewrittenMessage(BaseModel):
    message_index: int
    text: str = Field(min_length=1)


class ModifierOutput(BaseModel):
    """The LLM modifier's answer: the new full text of each message it was asked to rewrite."""

    edits: list[RewrittenMessage]


def order_edits(edits: Sequence[EditCommand]) -> list[EditCommand]:
    """Deduplicated; per message, span edits from the end backwards (offsets stay valid), then
    field edits, then rewrites."""
    seen, unique = set(), []
    for e in edits:
        key = e.to_str()
        if key not in seen:
            seen.add(key)
            unique.append(e)
    rank = {"replace": 0, "delete": 0, "set": 1, "rewrite": 2}
    return sorted(unique, key=lambda e: (e.message, rank[e.op], -(e.start or 0)))


def modify(messages: Sequence[Message], edits: Sequence[EditCommand]) -> ModifyResult:
    """Rule-based modifier: apply the exact edits; ``rewrite`` edits are skipped with a reason."""
    return apply_edits(tuple(messages), order_edits(edits))


def message_view(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """What the LLM agents see of each message (no workflow stage labels)."""
    out = []
    for m in messages:
        v: dict[str, Any] = {"index": m.index, "role": m.role, "text": m.text}
        if m.interruption is not None:
            v["heard_text"] = m.heard_text
            v["unheard_remainder"] = m.text[len(m.heard_text or ""):].strip()
            v["interrupted_by"] = m.interruption.type
        out.append(v)
    return out


MAX_GROWTH_WORDS = 12        # a rewrite may add at most this many words beyond twice the original
COPY_SIMILARITY = 0.8


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower().split(), b.lower().split(), autojunk=False).ratio()


_DIGIT = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
# what a message says that the rest of the call relies on: an email, an amount or number, a code
# spelled out letter by letter ("C Z Z E L D") or digit by digit ("four one five zero")
_VALUES = re.compile(rf"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\$?\d[\d,.:/-]*\d|\$?\d|"
                     rf"\b[A-Z](?:[ ,]+[A-Z0-9]\b){{2,}}|\b{_DIGIT}(?:[ ,]+{_DIGIT}\b){{2,}}", re.I)


def _dropped_values(original: str, text: str) -> list[str]:
    """Values of ``original`` the rewrite ``text`` no longer says."""
    new = " ".join(text.lower().split())
    return [v for v in dict.fromkeys(m.group(0).strip(" ,") for m in _VALUES.finditer(original))
            if " ".join(v.lower().split()) not in new]


def _not_minimal(messages: Sequence[Message], original: Message, text: str) -> str:
    """Why a rewrite is not a minimal edit of ``original`` ('' when it is): it copies another
    message (two messages' content swapped or duplicated), it grows far beyond the original, or
    it drops a value the original says (the code the caller read out, made "Okay, that works")."""
    own = _similarity(text, original.text)
    for m in messages:
        if m.index != original.index and m.text.strip():
            other = _similarity(text, m.text)
            if other >= COPY_SIMILARITY and other > own:
                return (f"the rewrite copies message {m.index} instead of editing this message; "
                        "change only what the instruction asks, in this message's own words")
    n, limit = len(text.split()), 2 * len(original.text.split()) + MAX_GROWTH_WORDS
    if n > limit:
        return (f"the rewrite has {n} words where the original has {len(original.text.split())}; "
                f"a minimal edit stays under {limit}")
    dropped = _dropped_values(original.text, text)
    if dropped:
        return (f"the rewrite drops {', '.join(repr(v) for v in dropped)}, which the original "
                "says and the rest of the call relies on; keep every value as it is")
    return ""


def _check_rewrites(messages: Sequence[Message], wanted: dict[int, EditCommand],
                    out: ModifierOutput) -> tuple[list[EditCommand], list[str]]:
    """Turn the LLM answer into exact ``set text`` edits; the errors to re-ask with."""
    by_index = {m.index: m for m in messages}
    edits, errors = [], []
    for r in out.edits:
        if r.message_index not in wanted:
            errors.append(f"message {r.message_index} was not to be edited "
                          f"(only {sorted(wanted)})")
            continue
        problem = _not_minimal(messages, by_index[r.message_index], r.text.strip())
        if problem:
            errors.append(f"message {r.message_index}: {problem}")
            continue
        edit = set_edit(by_index[r.message_index], "text", r.text.strip())
        res = apply_edits(tuple(messages), [edit])
        if res.skipped:
            errors.append(f"message {r.message_index}: {res.skipped[0][1]}")
        else:
            edits.append(edit)
    missing = sorted(set(wanted) - {r.message_index for r in out.edits})
    if missing:
        errors.append(f"no rewrite given for messages {missing}")
    return edits, errors


async def amodify(messages: Sequence[Message], edits: Sequence[EditCommand], *,
                  llm: LLMClient) -> ModifyResult:
    """Exact edits by rule, then the ``rewrite`` edits by the LLM (re-asked on a bad answer)."""
    ordered = order_edits(edits)
    exact = [e for e in ordered if e.op != "rewrite"]
    result = apply_edits(tuple(messages), exact)
    rewrites = [e for e in ordered if e.op == "rewrite"]
    if not rewrites:
        return result
    wanted: dict[int, EditCommand] = {}
    for e in rewrites:   # several instructions for one message become one request
        prev = wanted.get(e.message)
        wanted[e.message] = e if prev is None else prev.model_copy(
            update={"instruction": f"{prev.instruction}; {e.instruction}"})
    current = result.messages
    prompt = render(MODIFIER_PROMPT, messages=message_view(current),
                    edits=[{"message": e.message, "instruction": e.instruction}
                           for e in wanted.values()])
    chat = [{"role": "system", "content": render(MODIFIER_PROMPT + ".system")},
            {"role": "user", "content": prompt}]
    errors: list[str] = []
    for n in range(REASKS + 1):
        # schema errors are re-asked by the client; here: answers that cannot be applied (a
        # re-ask is a new draw: a new seed, sampled hotter)
        out = await llm.structured(chat, ModifierOutput, agent="modifier", sample=n,
                                   **({} if n == 0 else {"temperature": 0.8}))
        set_edits, errors = _check_rewrites(current, wanted, out)
        if not errors:
            final = apply_edits(current, set_edits)
            final.applied = result.applied + [wanted[e.message] for e in set_edits]
            final.skipped = result.skipped
            return final
        chat = chat + [
            {"role": "assistant", "content": json.dumps(out.model_dump(), ensure_ascii=False)},
            {"role": "user", "content": "Your answer cannot be applied: " + "; ".join(errors)
             + ". Answer again with the JSON object only."}]
    result.skipped += [(e, f"LLM modifier failed after {REASKS + 1} attempts: "
                        + "; ".join(errors)) for e in wanted.values()]
    return result
