"""Which structured-output mode a server accepts, found once per server and remembered.

    json_schema ──refused──► json_object ──refused──► prompt        (OpenAI-compatible servers)
    tool        ──refused──► prompt                                 (Anthropic-compatible servers)

Until a mode has worked on a server, the first request in it is a probe: sent without the SDK's
retries, one at a time per server, so a server that refuses the format (llama.cpp's server
answers ``json_schema`` with HTTP 500) costs one or two requests, not a retry storm per call. A
refusal moves to the next mode; the move is kept only once a lower mode has worked (a request
that every mode fails was not refused for its format, and is reported as the error it is).
Validation errors of an answer never change the mode: they are the re-ask loop's business.

State is per process, keyed by (provider, base URL).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass

from bargein.llm.limits import PerLoop

log = logging.getLogger("bargein.llm")


@dataclass
class _Server:
    modes: tuple[str, ...]
    index: int = 0
    confirmed: bool = False


class ModeMemory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[tuple[str, str], _Server] = {}
        self._probe_locks: dict[tuple[str, str], PerLoop[asyncio.Lock]] = {}

    def _server(self, key: tuple[str, str], modes: tuple[str, ...]) -> _Server:
        with self._lock:
            s = self._servers.get(key)
            if s is None or s.modes != modes:
                s = self._servers[key] = _Server(modes)
                self._probe_locks[key] = PerLoop(asyncio.Lock)
            return s

    def current(self, key: tuple[str, str], modes: tuple[str, ...]) -> tuple[str, bool]:
        """(the mode to use now, whether it has worked on this server); the last mode of the
        chain counts as confirmed (nothing is left to fall back to)."""
        s = self._server(key, modes)
        return s.modes[s.index], s.confirmed or s.index == len(s.modes) - 1

    def probe_lock(self, key: tuple[str, str]) -> asyncio.Lock:
        with self._lock:
            return self._probe_locks[key].get()

    def worked(self, key: tuple[str, str], modes: tuple[str, ...], mode: str) -> None:
        """``mode`` produced an answer on this server: use it from now on."""
        s = self._server(key, modes)
        with self._lock:
            i = s.modes.index(mode)
            if s.confirmed and i > s.index:
                return                     # a better mode was confirmed meanwhile
            if i > s.index:
                log.warning("%s: the server refused structured mode %r; using %r from now on",
                            key[1] or key[0], s.modes[s.index], mode)
            s.index, s.confirmed = i, True

    def reset(self) -> None:
        """Forget every server (tests)."""
        with self._lock:
            self._servers.clear()
            self._probe_locks.clear()


MODES = ModeMemory()
