"""Structured output: a pydantic schema in, a validated object out (or the reasons it failed).

    answer text ──► strip fences / find the JSON object ──► json.loads ──► schema.model_validate
                       │ fails                                    │ fails
                       └──────────── errors ──► re-ask message ◄──┘
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bargein.llm.base import Completion

M = TypeVar("M", bound=BaseModel)


class StructuredError(Exception):
    """An answer that is not a valid instance; ``errors`` are short human-readable lines."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


def instruction(name: str, json_schema: dict[str, Any]) -> str:
    """The prompt text that asks for ``json_schema`` when the server cannot be given it natively."""
    return ("Answer with exactly one JSON object and nothing else (no prose, no code fences). "
            f"It must validate against this JSON Schema for {name}:\n"
            + json.dumps(json_schema, sort_keys=True, separators=(",", ":")))


def with_instruction(messages: list[dict[str, str]], text: str) -> list[dict[str, str]]:
    """Append ``text`` to the system message (or add one) — for providers without native schemas."""
    if messages and messages[0]["role"] == "system":
        return [{"role": "system", "content": messages[0]["content"].rstrip() + "\n\n" + text},
                *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _json_text(text: str) -> Any:
    s = text.strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[1] if "\n" in s else ""
        s = s.rsplit("```", 1)[0]
    try:
        return json.loads(s)
    except ValueError:
        pass
    start = s.find("{")
    if start >= 0:
        try:
            obj, _ = json.JSONDecoder().raw_decode(s[start:])
            return obj
        except ValueError:
            pass
    return json.loads(s)      # raises with the parser's message


_UNITS = re.compile(r"[^.!?\n\"]+")
REPEAT_MIN_CHARS = 16
REPEAT_MIN_TIMES = 4


def repetition(text: str) -> tuple[str, int] | None:
    """The sentence an answer repeats most, and how often, when a model has fallen into a loop
    (some sentence of at least 16 characters four times or more); else None. Linear in the text."""
    units = Counter(" ".join(u.split()).lower() for u in _UNITS.findall(text))
    best = max(((u, n) for u, n in units.items() if len(u) >= REPEAT_MIN_CHARS), key=lambda x: x[1],
               default=None)
    return best if best is not None and best[1] >= REPEAT_MIN_TIMES else None


def parse(completion: Completion, schema: type[M], max_tokens: int | None = None) -> M:
    """The validated object in ``completion``, or :class:`StructuredError` saying what is wrong."""
    try:
        data = _json_text(completion.text)
    except ValueError as e:
        errors = [f"not valid JSON: {e}"]
        if completion.truncated:
            errors.insert(0, f"the answer was cut off at the token limit (max_tokens={max_tokens}); "
                             "answer more briefly")
        loop = repetition(completion.text)
        if loop is not None:
            errors.insert(0, f"the answer repeats \"{loop[0][:80]}\" {loop[1]} times: write each "
                             "point once, then close the JSON object")
        raise StructuredError(errors) from None
    try:
        return schema.model_validate(data)
    except ValidationError as e:
        errors = []
        for err in e.errors(include_url=False)[:20]:
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            errors.append(f"{loc}: {err['msg']}")
        raise StructuredError(errors) from None


def reask(errors: list[str], *, omitted: str | None = None) -> str:
    head = ("Your previous answer could not be used" if omitted is None
            else f"Your previous answer ({omitted}, not repeated here) could not be used")
    return (head + ":\n" + "\n".join(f"- {e}" for e in errors)
            + "\nReply again with only the corrected JSON object.")


def reask_messages(failed: Completion, errors: list[str], *, quote_tokens: int) -> list[dict[str, str]]:
    """The turns that re-ask after ``failed``: its text as the assistant's turn when it is short
    and complete, then the errors. A long or cut-off answer is not sent back (it would fill the
    context window and invite the model to repeat it): the errors say what was wrong with it."""
    text = failed.text
    if not failed.truncated and (len(text) + 3) // 4 <= quote_tokens and text.strip():
        return [{"role": "assistant", "content": text}, {"role": "user", "content": reask(errors)}]
    what = f"{len(text):,} characters" + (", cut off at the token limit" if failed.truncated else "")
    return [{"role": "user", "content": reask(errors, omitted=what)}]
