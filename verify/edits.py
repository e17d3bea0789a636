"""Edit commands and their exact, rule-based application to messages.

A fixable verdict carries one :class:`EditCommand` (as JSON in ``Verdict.edit``). The rule-based
modifier applies ``replace`` / ``delete`` / ``set`` exactly; ``rewrite`` (a free-text instruction)
needs the LLM modifier. Applying an edit sees the messages only — never the KB, goal or intent::

    {"op": "replace", "message": 11, "old": "the troubleshooting step", "start": 34, "new": "this part"}
    {"op": "delete", "message": 9, "old": "You never book ... right?", "start": 31}
    {"op": "set", "message": 3, "field": "text", "value": "mm-hm"}
    {"op": "set", "message": 10, "field": "cut_word_index", "value": 6}
    {"op": "rewrite", "message": 11, "instruction": "react only to the heard part ..."}

On an interrupted assistant message the text is heard part + unheard remainder; an edit must stay
on one side of the cut, so the heard prefix and the cut indices stay consistent::

    text       "Your claim needs three documents: a photo of the damage"
    heard      "Your claim needs three"|" documents: a photo of the damage"  remainder
                edits here change heard ^ edits here change the remainder only
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bargein.records.conversation import Message
from bargein.verify.text import prefix_at_word, word_ends, words

SetField = Literal["text", "heard_text", "cut_word_index", "interjection"]


class EditError(ValueError):
    """An edit command cannot be applied to the messages as they are."""


class EditCommand(BaseModel):
    """One minimal edit on message ``message`` (its ``Message.index``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Literal["replace", "delete", "set", "rewrite"]
    message: int
    old: str | None = None          # replace / delete: the exact span
    start: int | None = None        # replace / delete: char offset of ``old`` in the text
    new: str = ""                   # replace: the replacement
    field: SetField | None = None   # set: which field
    value: str | int | None = None  # set: the new value (None clears heard_text)
    instruction: str = ""           # rewrite: what to change, for the LLM modifier

    def to_str(self) -> str:
        return json.dumps(self.model_dump(exclude_defaults=True), sort_keys=True,
                          ensure_ascii=False)

    @classmethod
    def parse(cls, text: str) -> "EditCommand":
        return cls.model_validate_json(text)

    def describe(self) -> str:
        k = self.message
        if self.op == "replace":
            return f"message {k}: replace {self.old!r} with {self.new!r}"
        if self.op == "delete":
            return f"message {k}: delete {self.old!r}"
        if self.op == "set":
            return f"message {k}: set {self.field} to {self.value!r}"
        return f"message {k}: rewrite - {self.instruction}"


def replace_edit(msg: Message, start: int, end: int, new: str) -> EditCommand:
    return EditCommand(op="replace", message=msg.index, old=msg.text[start:end], start=start, new=new)


def delete_edit(msg: Message, start: int, end: int) -> EditCommand:
    """Delete ``text[start:end]`` plus the whitespace after it (before it, at the very end)."""
    text = msg.text
    while end < len(text) and text[end].isspace():
        end += 1
    if end == len(text):
        while start > 0 and text[start - 1].isspace():
            start -= 1
    return EditCommand(op="delete", message=msg.index, old=text[start:end], start=start)


def set_edit(msg: Message, field: SetField, value: str | int | None) -> EditCommand:
    return EditCommand(op="set", message=msg.index, field=field, value=value)


def rewrite_edit(msg: Message, instruction: str) -> EditCommand:
    return EditCommand(op="rewrite", message=msg.index, instruction=instruction)


@dataclass
class ModifyResult:
    messages: tuple[Message, ...]
    applied: list[EditCommand] = field(default_factory=list)
    skipped: list[tuple[EditCommand, str]] = field(default_factory=list)   # (edit, why)


# ---- application --------------------------------------------------------------------------
def _splice(text: str, edit: EditCommand, offset: int = 0) -> str:
    """Apply replace/delete to ``text`` (``offset``: where ``text`` starts in the message)."""
    old = edit.old or ""
    if not old:
        raise EditError(f"{edit.describe()}: empty span")
    if edit.start is not None:
        s = edit.start - offset
        if text[s: s + len(old)] != old:
            raise EditError(f"{edit.describe()}: span not found at offset {edit.start}")
    else:
        if text.count(old) != 1:
            raise EditError(f"{edit.describe()}: span occurs {text.count(old)} times, need 1 "
                            "(give its start offset)")
        s = text.index(old)
    new = edit.new if edit.op == "replace" else ""
    out = text[:s] + new + text[s + len(old):]
    if edit.op == "delete":
        j = s
        if 0 < j < len(out) and out[j - 1] == " " and (out[j] == " " or out[j] in ".,;:!?"):
            out = out[: j - 1] + out[j:]
        if s == 0 and offset == 0:
            out = out.lstrip()
            out = out[:1].upper() + out[1:]
    return out


def _cut(text: str, heard: str) -> dict:
    """Cut fields for ``heard`` cut from ``text`` (must be a word-boundary prefix, strictly inside)."""
    n = len(words(heard))
    if not text.startswith(heard) or n == 0 or n >= len(words(text)) or \
            word_ends(text)[n - 1] != len(heard):
        raise EditError(f"heard text {heard!r} is not a word-boundary prefix strictly inside "
                        f"{text!r}")
    return {"cut_word_index": n, "cut_char_offset": len(heard), "heard_text": heard}


def _with_text(msg: Message, text: str, heard: str | None) -> Message:
    if not text.strip():
        raise EditError(f"message {msg.index}: the edit would leave it empty")
    itr = msg.interruption
    if itr is None:
        return msg.with_(text=text, heard_text=heard)
    return msg.with_(text=text, heard_text=heard, interruption=itr.with_(**_cut(text, heard or "")))


def _apply_one(msgs: list[Message], pos: int, edit: EditCommand) -> None:
    msg = msgs[pos]
    if edit.op in ("replace", "delete"):
        if msg.interruption is None:
            msgs[pos] = _with_text(msg, _splice(msg.text, edit), msg.heard_text)
            return
        heard = msg.heard_text or ""
        rest = msg.text[len(heard):]
        start = edit.start if edit.start is not None else msg.text.find(edit.old or "")
        if start < 0:
            raise EditError(f"{edit.describe()}: span not found")
        if start + len(edit.old or "") <= len(heard):
            heard = _splice(heard, edit)
        elif start >= len(heard):
            rest = _splice(rest, edit.model_copy(update={"start": start}), offset=len(heard))
        else:
            raise EditError(f"{edit.describe()}: the span crosses the cut after {heard!r}")
        msgs[pos] = _with_text(msg, heard + rest, heard)
        return
    if edit.op == "rewrite":
        raise EditError(f"{edit.describe()}: a free-text rewrite needs the LLM modifier")
    value = edit.value
    if edit.field == "text":
        if not isinstance(value, str):
            raise EditError(f"{edit.describe()}: text must be a string")
        msgs[pos] = _with_text(msg, value, msg.heard_text)
    elif edit.field == "heard_text":
        if value is None:
            if msg.interruption is not None:
                raise EditError(f"{edit.describe()}: an interrupted message needs heard text")
            msgs[pos] = msg.with_(heard_text=None)
        else:
            msgs[pos] = _with_text(msg, msg.text, str(value))
    elif edit.field == "cut_word_index":
        if msg.interruption is None or not isinstance(value, int):
            raise EditError(f"{edit.describe()}: needs an interrupted message and an integer")
        try:
            heard = prefix_at_word(msg.text, value)
        except ValueError as e:
            raise EditError(f"{edit.describe()}: {e}") from e
        msgs[pos] = _with_text(msg, msg.text, heard)
    elif edit.field == "interjection":
        if msg.interruption is None or not isinstance(value, str) or not value.strip():
            raise EditError(f"{edit.describe()}: needs an interrupted message and a text")
        msgs[pos] = msg.with_(interruption=msg.interruption.with_(interjection=value))
        if pos + 1 < len(msgs) and msgs[pos + 1].role == "user":
            msgs[pos + 1] = msgs[pos + 1].with_(text=value)
    else:
        raise EditError(f"{edit.describe()}: unknown field")


def _sync_interjection(msgs: list[Message], pos: int) -> None:
    """After editing user message ``pos``: keep the interruption before it in step."""
    prev = msgs[pos - 1] if pos > 0 else None
    if prev is not None and prev.interruption is not None and msgs[pos].role == "user" \
            and prev.interruption.interjection != msgs[pos].text:
        msgs[pos - 1] = prev.with_(interruption=prev.interruption.with_(interjection=msgs[pos].text))


def apply_edits(messages: tuple[Message, ...] | list[Message],
                edits: list[EditCommand] | tuple[EditCommand, ...]) -> ModifyResult:
    """The rule-based modifier: apply each edit exactly, in order; skip (with a reason) the
    ones that no longer apply. Touched interjections stay in sync with their interruption."""
    msgs = list(messages)
    result = ModifyResult(messages=tuple(msgs))
    for edit in edits:
        pos = next((i for i, m in enumerate(msgs) if m.index == edit.message), None)
        if pos is None:
            result.skipped.append((edit, f"no message with index {edit.message}"))
            continue
        before = list(msgs)
        try:
            _apply_one(msgs, pos, edit)
            if edit.field != "interjection":
                _sync_interjection(msgs, pos)
        except (EditError, ValueError) as e:
            msgs[:] = before
            result.skipped.append((edit, str(e)))
            continue
        result.applied.append(edit)
    result.messages = tuple(msgs)
    return result
