"""The base of every record: deeply immutable, deterministic id, JSON round-trip, JSON Schema."""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Self, Union

from pydantic import BaseModel, ConfigDict, model_validator
from typing_extensions import TypeAliasType

from bargein.seeding import stable_hash


#: A JSON value inside a record: the type of the few payloads whose keys are truly open (a
#: scorer's own evidence and settings, a user's provenance additions). Arrays are tuples and
#: objects :class:`FrozenDict` once inside a record.
JSONValue = TypeAliasType(  # type: ignore[misc]
    "JSONValue",
    Union[str, bool, int, float, None, tuple["JSONValue", ...], dict[str, "JSONValue"]],
)


class FrozenDict(dict):
    """A dict that cannot change: what every mapping inside a record becomes.

    It is a real ``dict`` (JSON, pydantic and YAML read it as one), hashable when its values are.
    """

    __slots__ = ()

    def _immutable(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("records are immutable: build a changed copy with .with_(...)")

    __setitem__ = __delitem__ = __ior__ = _immutable          # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _immutable   # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(((repr(k), v) for k, v in self.items()), key=lambda kv: kv[0])))

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> "FrozenDict":
        return self

    def __deepcopy__(self, memo: dict) -> "FrozenDict":
        return FrozenDict(copy.deepcopy(dict(self), memo))


def freeze(value: Any) -> Any:
    """``value`` with every dict made a :class:`FrozenDict` and every list (or set) a tuple, deeply.
    Models are left as they are (they freeze themselves)."""
    if isinstance(value, BaseModel):
        return value
    if isinstance(value, dict):
        if isinstance(value, FrozenDict) and all(_is_frozen(v) for v in value.values()):
            return value
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    return value


def _is_frozen(value: Any) -> bool:
    if isinstance(value, (dict, list, set)) and not isinstance(value, FrozenDict):
        return False
    if isinstance(value, (tuple, FrozenDict)):
        vals = value.values() if isinstance(value, dict) else value
        return all(_is_frozen(v) for v in vals)
    return True


class Frozen(BaseModel):
    """A typed, deeply immutable value inside a record (no id of its own)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    @model_validator(mode="after")
    def _freeze(self) -> Self:
        for name in type(self).model_fields:
            v = getattr(self, name)
            if isinstance(v, (dict, list, set)) or (isinstance(v, tuple) and not _is_frozen(v)):
                object.__setattr__(self, name, freeze(v))
        return self


class Record(Frozen):
    """An immutable pydantic model with a deterministic ``id``.

    When ``id`` is not given it is ``<prefix>-<16 hex>``: a SHA-256 of the record's content
    (every field but ``id``). Records derived from another one usually pass an explicit id that
    extends the parent's (``conv-ab12_ev3``), so every item is traceable. Every dict and list
    inside is frozen too (:class:`FrozenDict`, tuples).
    """

    id_prefix: ClassVar[str] = "rec"
    id: str = ""

    @model_validator(mode="after")
    def _assign_id(self) -> Self:
        if not self.id:
            object.__setattr__(self, "id", self.content_id())
        return self

    def with_(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied.

        A content id (one the record got from its content) is computed again for the new
        content; an explicit id (``conv-ab12_ev3``) is kept unless ``id`` is among the changes.
        """
        data = self.model_dump()
        if "id" not in changes and self.id == self.content_id():
            data.pop("id")
        data.update(changes)
        return type(self).model_validate(data)

    def content_id(self) -> str:
        """The id this record would get from its content alone."""
        digest = stable_hash(type(self).__name__, self.model_dump(mode="json", exclude={"id"}))
        return f"{self.id_prefix}-{digest[:16]}"

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.model_validate_json(text)


def _yaml_reads_frozen_dicts() -> None:
    """``yaml.safe_dump`` represents only exact dicts; a FrozenDict is written as one."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - pyyaml is a dependency
        return
    for dumper in (yaml.SafeDumper, yaml.Dumper, getattr(yaml, "CSafeDumper", None), getattr(yaml, "CDumper", None)):
        if dumper is not None:
            dumper.add_representer(FrozenDict, yaml.representer.SafeRepresenter.represent_dict)


_yaml_reads_frozen_dicts()
