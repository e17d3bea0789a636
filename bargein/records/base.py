"""The base of every record: immutable, deterministic id, JSON round-trip, JSON Schema."""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, model_validator

from bargein.seeding import stable_hash


class Record(BaseModel):
    """An immutable pydantic model with a deterministic ``id``.

    When ``id`` is not given it is ``<prefix>-<16 hex>``: a SHA-256 of the record's content
    (every field but ``id``). Records derived from another one usually pass an explicit id that
    extends the parent's (``conv-ab12_ev3``), so every item is traceable.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    id_prefix: ClassVar[str] = "rec"
    id: str = ""

    @model_validator(mode="after")
    def _assign_id(self) -> Self:
        if not self.id:
            digest = stable_hash(type(self).__name__, self.model_dump(mode="json", exclude={"id"}))
            object.__setattr__(self, "id", f"{self.id_prefix}-{digest[:16]}")
        return self

    def with_(self, **changes: Any) -> Self:
        """A validated copy with ``changes`` applied (the id is kept unless given)."""
        data = self.model_dump()
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
