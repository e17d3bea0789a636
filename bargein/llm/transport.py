"""A lean HTTP/1.1 transport for plain-``http://`` origins (local OpenAI-compatible servers).

The SDKs send through ``httpx2``; its default transport (httpcore2 over anyio) spends most of
the client's CPU per request. For ``http://`` origins — vLLM, llama.cpp, Ollama, LM Studio, the
loopback test server — this transport speaks HTTP/1.1 keep-alive directly over asyncio streams,
about 2.5x cheaper per request. ``https://`` (the hosted APIs) and anything unusual go to the
standard transport unchanged; proxies from the environment still apply (httpx2 mounts).

    pool per origin:  [idle conn, idle conn, ...]   at most max_connections open
    request:  take idle (or connect) ─► write ─► read status, headers, body ─► back to idle
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx2

_NO_BODY = (204, 304)


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams for ``http://``; ``fallback`` for every other scheme."""

    def __init__(self, *, max_connections: int, fallback: httpx2.AsyncBaseTransport):
        self.max_connections = max_connections
        self.fallback = fallback
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._slots: dict[tuple[str, int], asyncio.Semaphore] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme != "http":
            return await self.fallback.handle_async_request(request)
        timeout = request.extensions.get("timeout", {})
        origin = (request.url.host, request.url.port or 80)
        slots = self._slots.setdefault(origin, asyncio.Semaphore(self.max_connections))
        # asyncio.timeout, not wait_for: wait_for wraps the coroutine in a new task, which costs
        # a trip round every ready task of the loop (3.11) even when nothing has to wait
        try:
            async with asyncio.timeout(timeout.get("pool")):
                await slots.acquire()
        except TimeoutError:
            raise httpx2.PoolTimeout("no free connection in time", request=request) from None
        try:
            data = self._encode(request, await request.aread())
            idle = self._idle.setdefault(origin, [])
            while idle:                       # a reused connection may have been closed by the
                conn = idle.pop()             # server: retry once on a fresh one if nothing came
                if conn.reader.at_eof():
                    conn.close()
                    continue
                try:
                    return await self._exchange(conn, data, request, timeout, idle)
                except (ConnectionError, asyncio.IncompleteReadError) as e:
                    if getattr(e, "partial", b""):      # part of an answer came: do not resend
                        raise
                    conn.close()
            conn = await self._connect(origin, request, timeout)
            return await self._exchange(conn, data, request, timeout, idle)
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            raise httpx2.ReadError(f"connection lost: {type(e).__name__}", request=request) from None
        finally:
            slots.release()

    @staticmethod
    def _encode(request: httpx2.Request, body: bytes) -> bytes:
        target = request.url.raw_path.decode("ascii")
        lines = [f"{request.method} {target} HTTP/1.1".encode("ascii")]
        for k, v in request.headers.raw:
            if k.lower() not in (b"content-length", b"transfer-encoding"):
                lines.append(k + b": " + v)
        if body or request.method in ("POST", "PUT", "PATCH"):
            lines.append(b"content-length: " + str(len(body)).encode("ascii"))
        return b"\r\n".join(lines) + b"\r\n\r\n" + body

    @staticmethod
    async def _connect(origin: tuple[str, int], request: httpx2.Request, timeout: dict) -> _Conn:
        try:
            async with asyncio.timeout(timeout.get("connect")):
                reader, writer = await asyncio.open_connection(*origin, limit=2**20)
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"connect to {origin[0]}:{origin[1]} timed out",
                                        request=request) from None
        except OSError as e:
            raise httpx2.ConnectError(f"cannot connect to {origin[0]}:{origin[1]}: {e}",
                                      request=request) from None
        return _Conn(reader, writer)

    async def _exchange(self, conn: _Conn, data: bytes, request: httpx2.Request, timeout: dict,
                        idle: list[_Conn]) -> httpx2.Response:
        try:
            conn.writer.write(data)
            try:
                async with asyncio.timeout(timeout.get("write")):
                    await conn.writer.drain()
            except TimeoutError:
                raise httpx2.WriteTimeout("write timed out", request=request) from None
            try:
                async with asyncio.timeout(timeout.get("read")):
                    status, reason, headers, body, keep = await self._read_response(conn.reader, request)
            except TimeoutError:
                raise httpx2.ReadTimeout("read timed out", request=request) from None
        except BaseException:
            conn.close()                      # unknown state (timeout, cancel, error): never reuse
            raise
        if keep and len(idle) < self.max_connections:
            idle.append(conn)
        else:
            conn.close()
        return httpx2.Response(status, headers=headers, content=body, request=request,
                               extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason})

    @staticmethod
    async def _read_response(reader: asyncio.StreamReader, request: httpx2.Request):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head[:-4].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise httpx2.RemoteProtocolError(f"bad status line {lines[0][:80]!r}", request=request)
        status, reason = int(parts[1]), parts[2] if len(parts) > 2 else b""
        headers: list[tuple[bytes, bytes]] = []
        length = None
        chunked = close = False
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k, v = k.strip(), v.strip()
            headers.append((k, v))
            lk = k.lower()
            if lk == b"content-length":
                length = int(v)
            elif lk == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
            elif lk == b"connection" and v.lower() == b"close":
                close = True
        close = close or parts[0] == b"HTTP/1.0"
        if request.method == "HEAD" or status in _NO_BODY or 100 <= status < 200:
            body = b""
        elif chunked:
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":   # trailers
                        pass
                    break
                chunks.append((await reader.readexactly(size + 2))[:-2])
            body = b"".join(chunks)
        elif length is not None:
            body = await reader.readexactly(length)
        else:
            body, close = await reader.read(), True
        return status, reason, headers, body, not close

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for c in conns:
                c.close()
        self._idle.clear()
        await self.fallback.aclose()
