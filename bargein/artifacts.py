"""The artifacts a cached record points to: noted while a stage item writes them, checked before
the record is served again.

While a stage item runs, every file it writes through :func:`bargein.store.atomic_write_bytes`
(audio, labels, sidecars) is noted by :func:`recording`; the runner stores those
:class:`ArtifactRef` (path, bytes, sha256) beside the record, and serves the record again only
while :func:`check_artifacts` finds every file intact.

    with recording() as written:
        out = stage.fn(item, ctx)        # writes clean.flac, labels.npz, ...
    refs = written.refs(base=workdir)    # [ArtifactRef(path="artifacts/render/…/clean.flac", …)]
    check_artifacts(refs, base=workdir)  # [] while intact, else one problem per file
"""

from __future__ import annotations

import contextvars
import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bargein.seeding import file_sha256

@dataclass(frozen=True)
class ArtifactRef:
    """A file a stage item wrote: its path (relative to the work dir when inside it), size, hash."""

    path: str
    bytes: int
    sha256: str

    def to_json(self) -> dict:
        return {"path": self.path, "bytes": self.bytes, "sha256": self.sha256}

    @classmethod
    def from_json(cls, d: dict) -> "ArtifactRef":
        return cls(path=str(d["path"]), bytes=int(d["bytes"]), sha256=str(d["sha256"]))


class Written:
    """Files written while :func:`recording` is active: absolute path -> (bytes, sha256)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[int, str]] = {}

    def add(self, path: str | os.PathLike, data: bytes | None = None) -> None:
        p = os.path.abspath(path)
        if data is None:
            self.files[p] = (os.path.getsize(p), file_sha256(p))
        else:
            self.files[p] = (len(data), hashlib.sha256(data).hexdigest())

    def refs(self, base: str | os.PathLike) -> list[ArtifactRef]:
        base = os.path.abspath(base)
        out = []
        for p, (n, h) in self.files.items():
            rel = os.path.relpath(p, base)
            path = Path(rel).as_posix() if not rel.startswith("..") else Path(p).as_posix()
            out.append(ArtifactRef(path=path, bytes=n, sha256=h))
        return sorted(out, key=lambda r: r.path)


_CURRENT: contextvars.ContextVar[Written | None] = contextvars.ContextVar("bargein_written", default=None)


@contextmanager
def recording() -> Iterator[Written]:
    """Note every artifact written in this context (this thread or asyncio task)."""
    written = Written()
    token = _CURRENT.set(written)
    try:
        yield written
    finally:
        _CURRENT.reset(token)


def note_written(path: str | os.PathLike, data: bytes | None = None) -> None:
    """Called by the atomic writers (and by stage code writing files another way)."""
    written = _CURRENT.get()
    if written is not None:
        written.add(path, data)


def check_artifacts(refs: Sequence[ArtifactRef], base: str | os.PathLike) -> list[str]:
    """One line per artifact that is missing, has another size or another sha256 ([] if intact)."""
    problems = []
    for r in refs:
        p = Path(r.path) if os.path.isabs(r.path) else Path(base) / r.path
        try:
            size = p.stat().st_size
        except OSError:
            problems.append(f"{r.path}: missing")
            continue
        if size != r.bytes:
            problems.append(f"{r.path}: {size} bytes, recorded {r.bytes}")
        elif file_sha256(p) != r.sha256:
            problems.append(f"{r.path}: sha256 differs from the recorded one")
    return problems
