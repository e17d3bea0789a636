"""The one content-addressed cache.

Every cache in bargein (stage outputs, LLM answers, synthesised speech, VAD results) is a
:class:`ContentCache`: one file per key, sharded by the key's first two hex digits, written
atomically, so a process killed at any point leaves either the whole entry or none::

    <root>/ab/ab12…ef<suffix>

A stage output is only as good as the files it points to: :mod:`bargein.artifacts` notes and
checks those (re-exported here).

A cache written on a hot path inside an event loop (one LLM answer per call) is made with
``write_behind=True``: ``put`` hands the entry to one writer thread per process and returns; the
same atomic write happens there, off the loop (the file-system calls release the GIL). Until an
entry is on disk, ``get`` in this process returns it from memory; :func:`flush_writes` waits for
every queued entry (it also runs at interpreter exit). A process killed before its queue is
written loses those entries only: each costs one repeated computation, never a half file.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import threading
import time
from collections import deque
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


BATCH_S = 0.02


class _WriteBehind:
    """The process's cache writer: one daemon thread writing queued entries in order, in
    batches (it wakes at most once per ``BATCH_S``)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._queue: deque[tuple[Path, bytes]] = deque()
        self._pending: dict[Path, bytes] = {}
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._closing = False
        self.failed = 0

    def submit(self, path: Path, data: bytes) -> None:
        if self._closing:                          # the process is exiting: no thread may start
            self._write_now(path, data)            # now, so write here and now
            return
        with self._cv:
            if self._pid != os.getpid():           # a forked child: the parent's thread is not here
                self._queue.clear()
                self._pending.clear()
                self._thread, self._pid = None, os.getpid()
            self._pending[path] = data
            self._queue.append((path, data))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="bargein-cache-writer",
                                                daemon=True)
                self._thread.start()
            elif len(self._queue) == 1:
                self._cv.notify()

    def pending(self, path: Path) -> bytes | None:
        return self._pending.get(path)             # a dict read is atomic; no lock on the hot path

    def pending_names(self, folder: Path) -> set[str]:
        with self._cv:
            return {p.name for p in self._pending if p.parent == folder}

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue:
                    self._cv.wait()
            # let a batch gather: every wake-up of this thread takes the GIL from the event
            # loop (one per entry cost the loop as much as writing inline)
            time.sleep(BATCH_S)
            with self._cv:
                batch = list(self._queue)
                self._queue.clear()
            for path, data in batch:
                self._write_now(path, data)
            with self._cv:
                for path, data in batch:
                    if self._pending.get(path) is data:
                        del self._pending[path]
                self._cv.notify_all()

    def _write_now(self, path: Path, data: bytes) -> None:
        try:
            _write_atomic(path, data)
        except OSError as e:
            self.failed += 1
            log.error("could not write cache entry %s: %s (it will be computed again)", path, e)

    def close(self, timeout: float = 60.0) -> None:
        """At exit: wait for the queue, then write every later entry inline. Exit hooks that
        run after this one (``weakref.finalize`` hooks registered before this module was
        imported, e.g. the LLM ledger's) would otherwise queue work for a daemon thread the
        interpreter is about to stop: the entry lost, or a half-written ``.tmp`` left behind."""
        self._closing = True
        self.flush(timeout)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued entry is on disk (True) or ``timeout`` passed (False)."""
        if self._thread is None or self._pid != os.getpid():
            return True
        with self._cv:
            return self._cv.wait_for(lambda: not self._pending, timeout)


_WRITER = _WriteBehind()
atexit.register(_WRITER.close, 60.0)


def write_behind(path: Path, data: bytes) -> None:
    """Queue an atomic write of ``data`` to ``path`` on the process's writer thread (files other
    than cache entries that are rewritten on a hot path, e.g. the LLM cost ledger); the last
    write of a path wins and :func:`flush_writes` waits for it."""
    _WRITER.submit(Path(path), data)


def flush_writes(timeout: float | None = None) -> bool:
    """Wait until every entry queued by a ``write_behind`` cache in this process is written."""
    return _WRITER.flush(timeout)


def _write_atomic(path: Path, data: bytes) -> None:
    """Open, write, rename (the lean form of :func:`bargein.store.atomic_write_bytes`): the shard
    folder is made only when the open finds it missing, and the file mode comes from the umask.
    Anything unusual goes through ``atomic_write_bytes`` for its clear errors."""
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
        return
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


class ContentCache:
    """Bytes by content key under ``root`` (``root/ab/<key><suffix>``), written atomically.

    A missing or unreadable entry is a miss; writes never count as a stage item's artifacts.
    ``write_behind``: ``put`` returns at once and the process's writer thread writes the entry
    (see the module docstring); reads in this process see it from the moment ``put`` returns.
    """

    def __init__(self, root: str | os.PathLike, suffix: str = ".json", *, write_behind: bool = False):
        self.root = Path(root)
        self.suffix = suffix
        self.write_behind = write_behind

    def path(self, key: str) -> Path:
        if not _HEX_KEY.fullmatch(key):
            raise ValueError(f"cache key {key!r} is not a lowercase hex digest")
        return self.root / key[:2] / f"{key}{self.suffix}"

    def get(self, key: str) -> bytes | None:
        path = self.path(key)
        data = _WRITER.pending(path)
        if data is not None:
            return data
        try:
            return path.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def put(self, key: str, data: bytes) -> Path:
        """Write the entry atomically (temp file beside it, then rename); with ``write_behind``
        in the writer thread."""
        path = self.path(key)
        if self.write_behind:
            _WRITER.submit(path, data)
        else:
            _write_atomic(path, data)
        return path

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until this process's queued entries are written (see :func:`flush_writes`)."""
        return _WRITER.flush(timeout)

    def queued_names(self, shard: str) -> set[str]:
        """File names of entries in ``root/<shard>/`` that are queued, not yet on disk."""
        return _WRITER.pending_names(self.root / shard)

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
        path = self.path(key)
        if _WRITER.pending(path) is not None:
            _WRITER.flush()                 # the queued write would bring the entry back
        try:
            path.unlink()
        except FileNotFoundError:
            pass

    def __contains__(self, key: str) -> bool:
        path = self.path(key)
        return _WRITER.pending(path) is not None or path.is_file()
