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
