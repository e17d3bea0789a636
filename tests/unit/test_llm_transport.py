"""The lean HTTP/1.1 transport against a raw TCP server that sends exactly the bytes we script."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading

import httpx2
import openai
import pytest

from bargein.llm.transport import LeanTransport


class RawServer:
    """Answers each request with the next scripted (bytes, close_after) on 127.0.0.1;
    a ``None`` entry holds the request without answering."""

    def __init__(self, script):
        self.script = list(script)
        self.connections = 0
        self.requests: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn):
        buf = b""
        with conn:
            while self.script:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, rest = buf.partition(b"\r\n\r\n")
                n = int(next((ln.split(b":")[1] for ln in head.split(b"\r\n")
                              if ln.lower().startswith(b"content-length")), b"0"))
                while len(rest) < n:
                    rest += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + rest[:n])
                buf = rest[n:]
                step = self.script.pop(0)
                if step is None:
                    conn.recv(1)                  # hold until the client gives up
                    return
                reply, close = step
                conn.sendall(reply)
                if close:
                    return

    def close(self):
        self.sock.close()


def ok(body: bytes, *headers: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + b"".join(h + b"\r\n" for h in headers) + \
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body


def client(port, **kw):
    fallback = httpx2.AsyncHTTPTransport()
    return httpx2.AsyncClient(transport=LeanTransport(max_connections=4, fallback=fallback),
                              base_url=f"http://127.0.0.1:{port}", **kw)


def run(coro):
    return asyncio.run(coro)


def test_keep_alive_reuses_one_connection_and_sends_the_body():
    srv = RawServer([(ok(b'{"n": 1}'), False), (ok(b'{"n": 2}'), False)])

    async def go():
        async with client(srv.port) as c:
            a = await c.post("/v1/x", json={"q": "first"})
            b = await c.post("/v1/x", json={"q": "second"})
            return a.json(), b.json()

    assert run(go()) == ({"n": 1}, {"n": 2})
    assert srv.connections == 1
    assert srv.requests[1].startswith(b"POST /v1/x HTTP/1.1\r\n")
    assert srv.requests[1].endswith(b'{"q":"second"}') and b"content-length: 14" in srv.requests[1].lower()
    srv.close()


def test_chunked_gzip_and_read_until_close_bodies():
    chunked = (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n")
    zipped = gzip.compress(b'{"zipped": true}')
    until_close = b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nto the end"
    srv = RawServer([(chunked, False), (ok(zipped, b"content-encoding: gzip"), False), (until_close, True)])

    async def go():
        async with client(srv.port) as c:
            return [(await c.get(p)) for p in ("/a", "/b", "/c")]

    a, b, c = run(go())
    assert a.text == "hello world" and b.json() == {"zipped": True} and c.text == "to the end"
    srv.close()


def test_a_connection_the_server_closed_is_replaced_transparently():
    srv = RawServer([(ok(b"one"), True), (ok(b"two"), False)])     # closes after the first answer

    async def go():
        async with client(srv.port) as c:
            first = (await c.get("/1")).text
            await asyncio.sleep(0.05)
            return first, (await c.get("/2")).text

    assert run(go()) == ("one", "two")
    assert srv.connections == 2
    srv.close()


def test_timeouts_and_refused_connections_become_httpx_errors():
    srv = RawServer([None])                                   # accepts, never answers

    async def go():
        async with client(srv.port, timeout=0.2) as c:
            with pytest.raises(httpx2.ReadTimeout):
                await c.get("/slow")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]                         # bound, not listening
        async with client(dead) as c:
            with pytest.raises(httpx2.ConnectError):
                await c.get("/")

    run(go())
    srv.close()


def test_openai_sdk_on_the_lean_transport_maps_errors():
    err = json.dumps({"error": {"message": "slow down", "type": "rate_limit_exceeded"}}).encode()
    srv = RawServer([(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\ncontent-length: "
                      + str(len(err)).encode() + b"\r\n\r\n" + err, False)])

    async def go():
        oc = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="k", max_retries=0,
                                http_client=client(srv.port))
        with pytest.raises(openai.RateLimitError) as ei:
            await oc.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        return ei.value

    e = run(go())
    assert e.response.headers["retry-after"] == "2" and "slow down" in str(e)
    srv.close()
