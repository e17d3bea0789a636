"""The one content-addressed cache.

Every cache in bargein (stage outputs, LLM answers, synthesised speech, VAD results) is a
:class:`ContentCache`: one file per key, sharded by the key's first two hex digits, written
atomically, so a process killed at any point leaves either the whole entry or none::

    <root>/ab/ab12…ef<suffix>

A stage output is only as good as the files it points to: :mod:`bargein.artifacts` notes and
checks those (re-exported here).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path

from bargein.artifacts import (  # noqa: F401 - re-exported: one import for cache users
    ArtifactRef, Written, check_artifacts, note_written, recording,
)
from bargein.seeding import stable_hash
from bargein.store import atomic_write_bytes

log = logging.getLogger("bargein.cache")
_HEX_KEY = re.compile(r"[0-9a-f]{3,}")
_tag: tuple[int, str] = (0, "")


def _tmp_tag() -> str:
    """A temp-file tag unique to this process and thread (pid + random, recomputed after a fork:
    two hosts sharing a cache folder may have the same pid)."""
    global _tag
    pid = os.getpid()
    if _tag[0] != pid:
        _tag = (pid, f"{pid}.{os.urandom(4).hex()}")
    return f"{_tag[1]}.{threading.get_ident()}"


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
        if not _HEX_KEY.fullmatch(key):
            raise ValueError(f"cache key {key!r} is not a lowercase hex digest")
        return self.root / key[:2] / f"{key}{self.suffix}"

    def get(self, key: str) -> bytes | None:
        try:
            return self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def put(self, key: str, data: bytes) -> Path:
        """Write the entry atomically (temp file beside it, then rename).

        Entries are written on hot paths (one per LLM answer, inside the event loop), so this is
        the lean form of :func:`bargein.store.atomic_write_bytes`: open, write, rename; the shard
        folder is made only when the open finds it missing, and the file mode comes from the
        umask. Anything unusual goes through ``atomic_write_bytes`` for its clear errors.
        """
        path = self.path(key)
        tmp = path.with_name(f".{path.name}.{_tmp_tag()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        try:
            try:
                fd = os.open(tmp, flags, 0o666)
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(tmp, flags, 0o666)
        except OSError:
            atomic_write_bytes(path, data, artifact=False)
            return path
        try:
            with open(fd, "wb", closefd=True) as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
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
