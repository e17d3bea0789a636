"""A loopback LLM server: OpenAI and Anthropic wire protocols on 127.0.0.1, for tests and benches.

    with LoopbackLLMServer(answers=['{"text": "hi"}'], latency_s=0.2) as srv:
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test")
        ...
        srv.requests[0].headers["authorization"]     # what the SDK sent (kept in memory only)

Endpoints: ``POST /v1/chat/completions`` (OpenAI, ``response_format`` honoured by the default
answer), ``POST /v1/messages`` (Anthropic: a forced tool is answered with a ``tool_use`` block,
``output_config.format`` honoured too), ``POST /v1/audio/speech`` (bytes from
``speech_fn(text, voice, response_format)``) and ``GET /v1/models/MODEL`` (with
``context_tokens``: the model's ``max_model_len``, as vLLM reports it); with ``slots=N`` also
``GET /props`` (``total_slots``, as llama.cpp's server reports its ``--parallel`` slots).

Servers differ in what they accept, and the loopback can play them:
``reject_modes=("json_schema",)`` answers every request in that structured-output mode with
``reject_status`` (500 by default: what llama.cpp's OpenAI-compatible server does with a
``json_schema`` response format); ``context_tokens=N`` refuses with 400 a request whose prompt
plus ``max_tokens`` exceeds N tokens (as vLLM does).

What a chat request gets, in order: a fault (scripted ``faults`` first, then ``fault_rate``),
else the next queued answer, else ``responder(request_json)``, else a default (an instance of
the requested JSON Schema, or an echo of the last user message). Queue entries and responder
results may be a :class:`Fault` instead of text.

Fault kinds::

    rate_limit      429 with Retry-After (and retry-after-ms)
    server_error    500
    timeout         the server holds the request for ``hang_s`` and then drops it
    malformed_json  200 with a body that is not valid JSON
    invalid_json    a normal response whose content is not JSON
    schema_invalid  a normal response whose content is JSON of the wrong shape
    truncated       the answer cut in half, finish_reason "length" / stop_reason "max_tokens"

With ``api_key`` set, a request without that key gets a 401 (whose message echoes the key it
was sent, as some real servers partly do). Rate faults are seeded by (seed, request body, how often that body was seen), so the same
requests get the same faults whatever the arrival order.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bargein.testing import wire

FAULT_KINDS = ("rate_limit", "server_error", "timeout", "malformed_json", "invalid_json",
               "schema_invalid", "truncated")
TRANSPORT_FAULTS = ("rate_limit", "server_error", "timeout", "malformed_json")
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error"}


@dataclass(frozen=True)
class Fault:
    """An injected fault; see the module docstring for the kinds."""

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; valid: {', '.join(FAULT_KINDS)}")


@dataclass
class ReceivedRequest:
    """One request as the server saw it (headers included; never written anywhere)."""

    n: int
    method: str
    path: str
    api: str                      # "openai" | "anthropic" | "speech" | "other"
    headers: dict[str, str]
    body: bytes
    json: Any
    t_start: float
    fault: str | None = None
    t_end: float | None = None


Answer = str | Fault
Responder = Callable[[dict[str, Any]], Answer]
SpeechFn = Callable[[str, str, str], bytes]


@dataclass
class _Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


class LoopbackLLMServer:
    """An OpenAI/Anthropic-compatible server in a background thread; a context manager."""

    def __init__(
        self,
        *,
        answers: Iterable[Answer] = (),
        responder: Responder | None = None,
        latency_s: float = 0.0,
        faults: Iterable[str | Fault | None] = (),
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = FAULT_KINDS,
        seed: int = 0,
        retry_after_s: float = 0.05,
        hang_s: float = 30.0,
        speech_fn: SpeechFn = wire.tone_speech,
        host: str = "127.0.0.1",
        api_key: str | None = None,
        reject_modes: Iterable[str] = (),
        reject_status: int = 500,
        context_tokens: int | None = None,
        slots: int | None = None,
    ):
        self.responder = responder
        self.latency_s = latency_s
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(Fault(k).kind for k in fault_kinds)
        self.seed = seed
        self.retry_after_s = retry_after_s
        self.hang_s = hang_s
        self.speech_fn = speech_fn
        self.host = host
        self.api_key = api_key
        self.reject_modes = frozenset(reject_modes)
        self.reject_status = reject_status
        self.context_tokens = context_tokens
        self.slots = slots
        self.port = 0
        self._lock = threading.Lock()
        self._answers: deque[Answer] = deque()
        self._faults: deque[str | None] = deque()
        self._seen: dict[str, int] = {}
        self._requests: list[ReceivedRequest] = []
        self._tasks: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._t0 = time.perf_counter()
        self.answer(*answers)
        self.fault(*faults)

    # ---- scripting ------------------------------------------------------------------------
    def answer(self, *answers: Answer) -> None:
        """Queue answers (text or :class:`Fault`), used one per chat request."""
        with self._lock:
            self._answers.extend(answers)

    def fault(self, *kinds: str | Fault | None) -> None:
        """Script faults for the next requests, in order (``None`` = no fault for that one)."""
        with self._lock:
            for k in kinds:
                self._faults.append(None if k is None else Fault(k).kind if isinstance(k, str) else k.kind)

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def clear(self) -> None:
        """Forget recorded requests (the answer and fault queues are kept)."""
        with self._lock:
            self._requests.clear()

    # ---- addresses ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    # ---- lifecycle ------------------------------------------------------------------------
    def start(self) -> LoopbackLLMServer:
        if self._thread is not None:
            return self
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        error: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._server = self._loop.run_until_complete(
                    asyncio.start_server(self._handle, self.host, 0, backlog=1024))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as e:  # noqa: BLE001 - reported to start()
                error.append(e)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="loopback-llm", daemon=True)
        self._thread.start()
        ready.wait(10)
        if error:
            self._thread = None
            raise RuntimeError(f"loopback server could not start on {self.host}: {error[0]}")
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._thread = None

    def __enter__(self) -> LoopbackLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- HTTP -----------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    break
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = await self._read_body(reader, headers)
                reply = await self._respond(method, target.split("?")[0], headers, body)
                if reply is None:            # "timeout": hold, then drop the connection
                    break
                status = f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Error')}\r\n"
                hdrs = {"content-type": reply.content_type, "content-length": str(len(reply.body)),
                        **reply.headers}
                writer.write((status + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
                              + "\r\n").encode("latin-1") + reply.body)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    @staticmethod
    async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                data = await reader.readexactly(size + 2)
                if size == 0:
                    return b"".join(chunks)
                chunks.append(data[:-2])
        n = int(headers.get("content-length", "0") or 0)
        return await reader.readexactly(n) if n else b""

    def _record(self, method: str, path: str, api: str, headers: dict[str, str], body: bytes,
                payload: Any) -> ReceivedRequest:
        with self._lock:
            rec = ReceivedRequest(n=len(self._requests), method=method, path=path, api=api,
                                  headers=dict(headers), body=body, json=payload,
                                  t_start=time.perf_counter() - self._t0)
            self._requests.append(rec)
        return rec

    def _next_fault(self, body: bytes) -> str | None:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
            if self.fault_rate <= 0 or not self.fault_kinds:
                return None
            digest = hashlib.sha256(body).hexdigest()
            occurrence = self._seen.get(digest, 0)
            self._seen[digest] = occurrence + 1
        h = hashlib.sha256(f"{self.seed}:{digest}:{occurrence}".encode()).digest()
        if int.from_bytes(h[:8], "big") / 2**64 >= self.fault_rate:
            return None
        return self.fault_kinds[int.from_bytes(h[8:16], "big") % len(self.fault_kinds)]

    def _next_answer(self, req: dict[str, Any], *, queue: bool = True) -> Answer:
        if queue:
            with self._lock:
                if self._answers:
                    return self._answers.popleft()
        if self.responder is not None:
            return self.responder(req)
        schema = wire.request_schema(req)
        if schema is not None:
            return json.dumps(wire.example_from_schema(schema))
        if wire.structured_mode(req) == "json_object":        # JSON mode: some JSON object
            return json.dumps({"loopback": wire.last_user_text(req)[:200]})
        return f"loopback: {wire.last_user_text(req)[:200]}"

    async def _respond(self, method: str, path: str, headers: dict[str, str],
                       body: bytes) -> _Reply | None:
        if path.startswith("/_loopback/"):
            return self._control(method, path)
        api = ("openai" if path.endswith("/chat/completions") else
               "anthropic" if path.endswith("/messages") else
               "speech" if path.endswith("/audio/speech") else
               "models" if "/models" in path and method == "GET" else
               "props" if path.rstrip("/").endswith("/props") and method == "GET" else "other")
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            payload = None
        rec = self._record(method, path, api, headers, body, payload)
        try:
            reply = await self._reply(rec, payload)
        except Exception as e:  # noqa: BLE001 - a broken responder is the test's bug: say so
            err_api = "anthropic" if api == "anthropic" else "openai"
            reply = self._json(500, wire.error_body(err_api, 500, f"loopback responder failed: {e!r}"))
        finally:
            rec.t_end = time.perf_counter() - self._t0
        return reply

    def stats(self) -> dict[str, Any]:
        """Request counts by API and by injected fault."""
        reqs = self.requests
        faults: dict[str, int] = {}
        apis: dict[str, int] = {}
        for r in reqs:
            apis[r.api] = apis.get(r.api, 0) + 1
            if r.fault:
                faults[r.fault] = faults.get(r.fault, 0) + 1
        return {"requests": len(reqs), "apis": apis, "faults": faults}

    def _control(self, method: str, path: str) -> _Reply:
        """``GET /_loopback/stats``, ``POST /_loopback/clear`` (not recorded as requests)."""
        if path == "/_loopback/stats":
            return self._json(200, self.stats())
        if path == "/_loopback/clear" and method == "POST":
            self.clear()
            return self._json(200, {"cleared": True})
        return self._json(404, wire.error_body("openai", 404, f"no control route {path}"))

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> _Reply:
        return _Reply(status, json.dumps(obj).encode(), headers or {})

    async def _reply(self, rec: ReceivedRequest, req: Any) -> _Reply | None:
        err_api = "anthropic" if rec.api == "anthropic" else "openai"
        if rec.api == "models":
            return self._models(rec.path)
        if rec.api == "props":         # llama.cpp's server: its parallel slots and context
            if self.slots is None:
                return self._json(404, wire.error_body(err_api, 404, f"no route GET {rec.path}"))
            return self._json(200, {"total_slots": self.slots, "default_generation_settings": {
                "n_ctx": self.context_tokens or 4096}})
        if rec.method != "POST" or rec.api == "other":
            return self._json(404, wire.error_body(err_api, 404, f"no route {rec.method} {rec.path}"))
        if self.api_key is not None:
            presented = rec.headers.get("x-api-key") or rec.headers.get("authorization", "").removeprefix("Bearer ")
            if presented != self.api_key:      # echoes the key, as some real servers do (partly)
                return self._json(401, wire.error_body(err_api, 401, f"invalid API key {presented!r}"))
        if not isinstance(req, dict):
            return self._json(400, wire.error_body(err_api, 400, "request body is not a JSON object"))
        refusal = self._refusal(req, err_api) if rec.api != "speech" else None
        if refusal is not None:
            rec.fault = "refused"
            return refusal
        fault = self._next_fault(rec.body)
        if rec.api == "speech" and fault not in TRANSPORT_FAULTS:
            fault = None                          # content faults are about chat answers
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        answer: Answer | None = None
        if fault is None and rec.api != "speech":
            answer = self._next_answer(req)
            if isinstance(answer, Fault):
                fault, answer = answer.kind, None
        rec.fault = fault
        if fault == "timeout":
            await asyncio.sleep(self.hang_s)
            return None
        if fault == "rate_limit":
            ra = self.retry_after_s
            return self._json(429, wire.error_body(err_api, 429, "loopback: rate limited"),
                              {"retry-after": f"{ra:g}", "retry-after-ms": f"{ra * 1000:g}"})
        if fault == "server_error":
            return self._json(500, wire.error_body(err_api, 500, "loopback: internal error"))
        if fault == "malformed_json":
            return _Reply(200, b'{"id": "loopback-malformed", "choices": [{"message": {"content": "')
        if rec.api == "speech":
            return self._speech(req)
        finish = "stop"
        if fault == "invalid_json":
            text = 'Sure! Here is the JSON you asked for: {"answer": '
        elif fault == "schema_invalid":
            text = json.dumps({"loopback_fault": "schema_invalid"})
        else:
            if answer is None:
                answer = self._next_answer(req, queue=fault in (None, "truncated"))
                if isinstance(answer, Fault):        # a fault answering a fault: plain text
                    answer = f"loopback fault {answer.kind}"
            text = answer if isinstance(answer, str) else json.dumps(answer)
            if fault == "truncated":
                text, finish = text[: max(0, len(text) // 2)], "length"
        limit = wire.request_max_tokens(req)
        if limit is not None and wire.estimate_tokens(text) > limit:
            text, finish = text[: limit * 4], "length"
        make = wire.anthropic_message if rec.api == "anthropic" else wire.openai_completion
        return self._json(200, make(req, text, finish, rec.n))

    def _refusal(self, req: dict[str, Any], err_api: str) -> _Reply | None:
        """What a server with limits answers before generating: a refused structured mode, a
        request larger than the context window."""
        mode = wire.structured_mode(req)
        if mode is not None and mode in self.reject_modes:
            return self._json(self.reject_status, wire.error_body(
                err_api, self.reject_status, f"loopback: structured mode {mode!r} is not supported"))
        if self.context_tokens is not None:
            need = wire.estimate_tokens(wire.prompt_text(req)) + (wire.request_max_tokens(req) or 0)
            if need > self.context_tokens:
                return self._json(400, wire.error_body(
                    err_api, 400, f"This model's maximum context length is {self.context_tokens} tokens. "
                                  f"However, you requested {need} tokens."))
        return None

    def _models(self, path: str) -> _Reply:
        """``GET /v1/models/ID``: the model as vLLM describes it (``max_model_len``)."""
        model = path.rsplit("/models", 1)[1].strip("/") or "loopback"
        info: dict[str, Any] = {"id": model, "object": "model", "created": wire.FIXED_CREATED,
                                "owned_by": "loopback"}
        if self.context_tokens is not None:
            info["max_model_len"] = self.context_tokens
        if path.rstrip("/").endswith("/models"):
            return self._json(200, {"object": "list", "data": [info]})
        return self._json(200, info)

    def _speech(self, req: dict[str, Any]) -> _Reply:
        fmt = req.get("response_format") or "mp3"
        try:
            audio = self.speech_fn(str(req.get("input", "")), str(req.get("voice", "alloy")), fmt)
        except ValueError as e:
            return self._json(400, wire.error_body("openai", 400, str(e)))
        ctype = {"wav": "audio/wav", "pcm": "audio/pcm", "flac": "audio/flac",
                 "mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac"}.get(fmt, "application/octet-stream")
        return _Reply(200, audio, content_type=ctype)

