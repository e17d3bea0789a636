"""JSON Schemas as the providers' structured-output features want them.

OpenAI's strict structured outputs accept a subset of JSON Schema: every object closed
(``additionalProperties: false``) with every property required, no ``default``, and a limited
set of keywords. :func:`strict_variant` gives that form of a pydantic schema when one exists
(length limits move into the description; the answer is still validated against the original
schema, so nothing is lost), or ``None`` when the schema needs more than strict mode can say
(free-form objects, open maps, ``not``/``if`` …): such a schema is sent with ``strict: false``.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

# keywords strict mode accepts (OpenAI structured outputs, "supported schemas")
_STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "definitions", "description", "title", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
})
_MOVED_TO_DESCRIPTION = {"minLength": "at least {} characters", "maxLength": "at most {} characters"}
_DROPPED = frozenset({"default", "examples"})


class _NotStrict(Exception):
    pass


def _strict(node: Any, where: str) -> Any:
    if not isinstance(node, dict):
        raise _NotStrict(where)
    out: dict[str, Any] = {}
    notes = []
    for k, v in node.items():
        if k in _DROPPED:
            continue
        if k in _MOVED_TO_DESCRIPTION:
            notes.append(_MOVED_TO_DESCRIPTION[k].format(v))
            continue
        if k not in _STRICT_KEYWORDS:
            raise _NotStrict(f"{where}: {k}")
        if k in ("properties", "$defs", "definitions"):
            out[k] = {name: _strict(sub, f"{where}.{name}") for name, sub in v.items()}
        elif k == "items":
            out[k] = _strict(v, f"{where}[]")
        elif k == "anyOf":
            out[k] = [_strict(sub, f"{where}|") for sub in v]
        elif k == "additionalProperties":
            if v is not False:
                raise _NotStrict(f"{where}: open object")
            out[k] = False
        else:
            out[k] = v
    if notes:
        out["description"] = "; ".join(([out["description"]] if out.get("description") else []) + notes)
    if out.get("type") == "object" or "properties" in out:
        if not out.get("properties"):
            raise _NotStrict(f"{where}: object without properties")
        out["additionalProperties"] = False
        out["required"] = list(out["properties"])
    if "$ref" in out and len(out) > 1:          # strict mode wants a bare $ref
        out = {"$ref": out["$ref"]}
    return out


def strict_variant(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict-mode form of ``schema``, or None when strict mode cannot express it."""
    try:
        return _strict(copy.deepcopy(schema), "(root)")
    except _NotStrict:
        return None


def schema_name(schema: dict[str, Any]) -> str:
    """A name the APIs accept (``^[a-zA-Z0-9_-]{1,64}$``) from the schema's title."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "output"))[:64] or "output"


def schema_bytes(schema: dict[str, Any] | None) -> int:
    return 0 if schema is None else len(json.dumps(schema, separators=(",", ":")).encode("utf-8"))
