"""Reading conversations to verify: every line on its own, a bad one a failure with evidence.

A file from an older bargein (a field renamed or gone, a field added since) or a hand-edited
line must not stop the batch: each line becomes a :class:`Conversation` or a :class:`Failure`
naming the line, the conversation id if there is one, the missing and unknown fields, and the
fix::

    conversations.jsonl:7: conversation conv-3f.. is not a valid Conversation: missing fields
    ['messages.3.role']; unknown fields ['gold'] (an older or hand-edited file?). Fix: regenerate
    it with 'bargein generate conversations'.

Lines holding a :class:`VerifiedConversation` (``verified.jsonl``) are read as its conversation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from bargein.errors import InputError
from bargein.records.conversation import Conversation
from bargein.records.release import Failure

FIX = "Fix: regenerate it with 'bargein generate conversations' (or repair the named fields)."


def _loc(err: dict) -> str:
    return ".".join(str(p) for p in err.get("loc", ()))


def read_conversations(path: str | os.PathLike, *,
                       stage: str = "verify") -> tuple[list[Conversation], list[Failure]]:
    """(conversations, failures) of a JSONL file, line by line."""
    path = Path(path)
    convs: list[Conversation] = []
    fails: list[Failure] = []
    try:
        f = open(path, "rb")
    except OSError as e:
        raise InputError(f"--conversations {str(path)!r} cannot be read ({e.strerror or e}). "
                         "Fix: pass the conversations.jsonl a stage wrote.") from None
    with f:
        for n, raw in enumerate(f, 1):
            where = f"{path.name}:{n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:        # one bad line, not the whole batch
                fails.append(Failure(stage=stage, item_id=f"line {n}", error_type="InvalidInput",
                                     reason=f"{where}: not UTF-8 text (byte 0x{raw[e.start:e.start + 1].hex()} "
                                            f"at column {e.start + 1}). Fix: save the file as UTF-8.",
                                     evidence={"line": n}))
                continue
            if n == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                fails.append(Failure(stage=stage, item_id=f"line {n}", error_type="InvalidInput",
                                     reason=f"{where}: not JSON ({e.msg} at column {e.colno}). {FIX}",
                                     evidence={"line": n, "text": line[:200]}))
                continue
            except RecursionError:
                fails.append(Failure(stage=stage, item_id=f"line {n}", error_type="InvalidInput",
                                     reason=f"{where}: not a conversation (JSON nested too deeply). "
                                            f"{FIX}", evidence={"line": n}))
                continue
            if isinstance(obj, dict) and isinstance(obj.get("conversation"), dict):
                obj = obj["conversation"]                  # a VerifiedConversation line
            if not isinstance(obj, dict):
                fails.append(Failure(stage=stage, item_id=f"line {n}", error_type="InvalidInput",
                                     reason=f"{where}: a {type(obj).__name__}, not a conversation "
                                            f"object. {FIX}", evidence={"line": n}))
                continue
            cid = str(obj.get("id") or f"line {n}")
            try:
                convs.append(Conversation.model_validate(obj))
            except ValidationError as e:
                errs = e.errors()
                missing = [_loc(x) for x in errs if x["type"] == "missing"]
                unknown = [_loc(x) for x in errs if x["type"] == "extra_forbidden"]
                other = [f"{_loc(x)}: {x['msg']}" for x in errs
                         if x["type"] not in ("missing", "extra_forbidden")]
                parts = []
                if missing:
                    parts.append(f"missing fields {missing[:8]}")
                if unknown:
                    parts.append(f"unknown fields {unknown[:8]}")
                if other:
                    parts.append(f"invalid {other[:4]}")
                hint = " (an older or hand-edited file?)" if missing or unknown else ""
                fails.append(Failure(
                    stage=stage, item_id=cid, error_type="InvalidInput",
                    reason=f"{where}: conversation {cid} is not a valid Conversation: "
                           f"{'; '.join(parts)}{hint}. {FIX}",
                    evidence={"line": n, "missing": missing, "unknown": unknown, "invalid": other}))
    return convs, fails
