"""Write files off the event loop: one daemon thread, atomic renames, in submission order.

Cache entries and ledger snapshots are small, but creating a file can take milliseconds on a
busy disk, and the event loop must not wait for that. ``submit`` returns at once; until the
file is on disk, ``pending(path)`` returns its bytes, so readers in this process never miss it.
``flush()`` waits for everything submitted (it runs at interpreter exit too). A write lost to a
crash only costs one repeated request.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from pathlib import Path

log = logging.getLogger("bargein.llm")


class BackgroundWriter:
    def __init__(self) -> None:
        self._q: queue.SimpleQueue[tuple[Path, bytes]] = queue.SimpleQueue()
        self._pending: dict[Path, bytes] = {}
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, path: Path, data: bytes) -> None:
        with self._cv:
            self._pending[path] = data
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="bargein-llm-writer", daemon=True)
                self._thread.start()
        self._q.put((path, data))

    def pending(self, path: Path) -> bytes | None:
        with self._cv:
            return self._pending.get(path)

    def pending_names(self, folder: Path) -> set[str]:
        """Names of files not yet written in ``folder``."""
        with self._cv:
            return {p.name for p in self._pending if p.parent == folder}

    def _run(self) -> None:
        tmp_suffix = f".{os.getpid()}.tmp"
        while True:
            path, data = self._q.get()
            tmp = path.with_name(f".{path.name}{tmp_suffix}")
            try:
                try:
                    f = open(tmp, "wb")
                except FileNotFoundError:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    f = open(tmp, "wb")
                with f:
                    f.write(data)
                os.replace(tmp, path)
            except OSError as e:
                log.error("could not write %s: %s", path, e)
            with self._cv:
                if self._pending.get(path) is data:
                    del self._pending[path]
                self._cv.notify_all()

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait until every submitted file is written."""
        with self._cv:
            self._cv.wait_for(lambda: not self._pending, timeout)


WRITER = BackgroundWriter()
atexit.register(WRITER.flush)
