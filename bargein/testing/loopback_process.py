"""The loopback server in a child process, so its CPU time does not compete with the client
under test (benchmarks). Requests are counted over HTTP (``/_loopback/stats``)."""

from __future__ import annotations

import json
from typing import Any

from bargein.testing.loopback import LoopbackLLMServer


def _serve_in_child(kwargs: dict[str, Any], conn: Any) -> None:
    srv = LoopbackLLMServer(**kwargs).start()
    conn.send(srv.port)
    try:
        conn.recv()                 # blocks until the parent says stop (or dies)
    except EOFError:
        pass
    srv.stop()


class LoopbackProcess:
    """A :class:`LoopbackLLMServer` in a child process (spawned), so that its CPU time does not
    compete with the client under test. Same constructor arguments; ``responder`` and
    ``speech_fn`` must be picklable (module-level functions). Requests are counted through
    ``GET /_loopback/stats``; they are not shipped back.
    """

    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs
        self.host = kwargs.get("host", "127.0.0.1")
        self.port = 0
        self._proc: Any = None
        self._conn: Any = None

    url = LoopbackLLMServer.url
    openai_base_url = LoopbackLLMServer.openai_base_url
    anthropic_base_url = LoopbackLLMServer.anthropic_base_url

    def start(self) -> LoopbackProcess:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve_in_child, args=(self.kwargs, child), daemon=True,
                                 name="loopback-llm")
        self._proc.start()
        if not self._conn.poll(60):
            self.stop()
            raise RuntimeError("loopback server process did not start within 60 s")
        self.port = self._conn.recv()
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        try:
            self._conn.send("stop")
        except (BrokenPipeError, OSError):
            pass
        self._proc.join(15)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._proc = None

    def __enter__(self) -> LoopbackProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _control(self, method: str, route: str) -> dict[str, Any]:
        import urllib.request

        req = urllib.request.Request(f"{self.url}/_loopback/{route}", method=method,
                                     data=b"" if method == "POST" else None)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # never via a proxy
        with opener.open(req, timeout=10) as r:
            return json.loads(r.read())

    def stats(self) -> dict[str, Any]:
        return self._control("GET", "stats")

    @property
    def request_count(self) -> int:
        return self.stats()["requests"]

    def clear(self) -> None:
        self._control("POST", "clear")
