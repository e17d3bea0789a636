"""Small atomic file writes (ledger snapshots) that never stall the event loop.

A write is done in place (temp file + rename, ~0.1 ms on a normal disk: cheaper than handing it
to a thread). If writes turn slow (a busy or network disk: average above ``SLOW_S``), later
ones go to one daemon thread instead, in submission order; until such a file is on disk,
``pending(path)`` returns its bytes, so readers in this process never miss it. ``flush()``
waits for everything submitted (it runs at interpreter exit too). A write lost to a crash only
costs one repeated request.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from pathlib import Path

log = logging.getLogger("bargein.llm")
SLOW_S = 0.004


class BackgroundWriter:
    def __init__(self) -> None:
        self._q: queue.SimpleQueue[tuple[Path, bytes]] = queue.SimpleQueue()
        self._pending: dict[Path, bytes] = {}
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self.threaded = False
        self._avg_s = 0.0

    def submit(self, path: Path, data: bytes) -> None:
        if not self.threaded:
            t = time.perf_counter()
            self._write(path, data, f".{os.getpid()}.{threading.get_ident()}.tmp")
            self._avg_s = 0.8 * self._avg_s + 0.2 * (time.perf_counter() - t)
            if self._avg_s > SLOW_S:
                log.info("file writes average %.1f ms: writing LLM cache files in a thread from now on",
                         self._avg_s * 1000)
                self.threaded = True
            return
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

    @staticmethod
    def _write(path: Path, data: bytes, tmp_suffix: str) -> None:
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

    def _run(self) -> None:
        tmp_suffix = f".{os.getpid()}.writer.tmp"
        while True:
            path, data = self._q.get()
            self._write(path, data, tmp_suffix)
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
