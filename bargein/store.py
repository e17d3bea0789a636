"""Atomic files and JSONL record files. Nothing is ever written half."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from bargein.cache import note_written
from bargein.records.base import Record

R = TypeVar("R", bound=Record)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, artifact: bool = True) -> None:
    """Write ``data`` to a temp file beside ``path`` and rename it into place.

    Inside a runner stage item the file is noted as one of the item's artifacts (see
    :mod:`bargein.cache`), unless ``artifact=False`` (cache entries, shared files).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if artifact:
        note_written(path, data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_jsonl(path: str | os.PathLike, records: Iterable[Record | dict]) -> int:
    """Write records as JSON lines, atomically. Returns the number of lines."""
    lines = []
    for r in records:
        lines.append(r.model_dump_json() if isinstance(r, Record) else json.dumps(r, sort_keys=True))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def iter_jsonl(path: str | os.PathLike, record_type: type[R]) -> Iterator[R]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield record_type.model_validate_json(line)
                except ValueError as e:
                    from bargein.errors import BargeinError

                    raise BargeinError(
                        f"{path}:{n}: not a valid {record_type.__name__} record ({e.__class__.__name__}). "
                        f"Fix: regenerate the file with the stage that writes it."
                    ) from e


def read_jsonl(path: str | os.PathLike, record_type: type[R]) -> list[R]:
    return list(iter_jsonl(path, record_type))
