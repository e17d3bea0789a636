"""The one content-addressed cache, and the artifacts a cached record points to.

Every cache in bargein (stage outputs, LLM answers, synthesised speech, VAD results) is a
:class:`ContentCache`: one file per key, sharded by the key's first two hex digits, written
atomically, so a process killed at any point leaves either the whole entry or none::

    <root>/ab/ab12…ef<suffix>

A stage output is only as good as the files it points to. While a stage item runs, every file it
writes through :func:`bargein.store.atomic_write_bytes` (audio, labels, sidecars) is noted by
:func:`recording`; the runner stores those :class:`ArtifactRef` (path, bytes, sha256) beside the
record, and serves the record again only while :func:`check_artifacts` finds every file intact.

    with recording() as written:
        out = stage.fn(item, ctx)        # writes clean.flac, labels.npz, ...
    refs = written.refs(base=workdir)    # [ArtifactRef(path="artifacts/render/…/clean.flac", …)]
    check_artifacts(refs, base=workdir)  # [] while intact, else one problem per file
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bargein.seeding import file_sha256, stable_hash

log = logging.getLogger("bargein.cache")


def cache_key(*parts: object) -> str:
    """The hex SHA-256 key of ``parts`` (canonical JSON; see :func:`bargein.seeding.stable_hash`)."""
    return stable_hash(*parts)


class ContentCache:
    """Bytes by content key under ``root`` (``root/ab/<key><suffix>``), written atomically.

    A missing or unreadable entry is a miss; writes never count as a stage item's artifacts.
    """

    def __init__(self, root: str | os.PathLike, suffix: str = ".json"):
        self.root = Path(root)
        self.suffix = suffix

    def path(self, key: str) -> Path:
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key {key!r} is not a lowercase hex digest")
        return self.root / key[:2] / f"{key}{self.suffix}"

    def get(self, key: str) -> bytes | None:
        try:
            return self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def put(self, key: str, data: bytes) -> Path:
        from bargein.store import atomic_write_bytes

        path = self.path(key)
        atomic_write_bytes(path, data, artifact=False)
        return path

    def get_text(self, key: str) -> str | None:
        data = self.get(key)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("cache entry %s is not UTF-8; treating it as a miss", self.path(key))
            return None

    def put_text(self, key: str, text: str) -> Path:
        return self.put(key, text.encode("utf-8"))

    def discard(self, key: str) -> None:
        try:
            self.path(key).unlink()
        except FileNotFoundError:
            pass

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()


# ---- artifacts ------------------------------------------------------------------------------
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
