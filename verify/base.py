"""The registry of deterministic checks and the verdict constructor they share."""

from __future__ import annotations

from collections.abc import Callable

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.edits import EditCommand

CheckFn = Callable[[Conversation], list[Verdict]]
CHECKS: dict[str, CheckFn] = {}


def check(name: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check under a stable name (the name every verdict and report uses)."""
    def deco(fn: CheckFn) -> CheckFn:
        CHECKS[name] = fn
        fn.check_name = name  # type: ignore[attr-defined]
        return fn
    return deco


def _verdict(check: str, index: int | None, issue: str, *, edit: EditCommand | None = None,
             evidence: str = "", fixable: bool | None = None) -> Verdict:
    return Verdict(check=check, message_index=index, issue=issue,
                   fixable=edit is not None if fixable is None else fixable,
                   evidence=evidence, edit=edit.to_str() if edit is not None else None)


def replies_to(conv: Conversation, pos: int) -> list[tuple[str, str]]:
    """(where, text) of the answers to the user message at ``pos``: the next assistant turn as
    spoken, and the gold recovery written for it."""
    msgs, out = conv.messages, []
    if pos + 1 < len(msgs) and msgs[pos + 1].role == "assistant":
        out.append(("next turn", msgs[pos + 1].spoken_text))
    if msgs[pos].index in conv.gold_recoveries:
        out.append(("gold recovery", conv.gold_recoveries[msgs[pos].index]))
    return out
