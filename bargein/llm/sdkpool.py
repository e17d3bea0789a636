"""What the SDK-backed providers share: per-loop client pools, error mapping, Retry-After.

SDK clients (and their httpx2 connection pools) belong to the event loop they were used on,
and the runner starts one loop per stage, so each loop gets its own clients. They are closed
when the loop's ``asyncio.run`` finishes (a sentinel task closes them on cancellation).

The pool is sharded: httpcore2's bookkeeping is linear in the pool size, so many small pools
(``shard_size`` connections each, the least busy one chosen per call) cost less CPU per request
than one large pool at high concurrency. Plain-``http://`` origins (local servers) go through
:class:`~bargein.llm.transport.LeanTransport` unless ``lean=False`` or a proxy is configured in
the environment (then httpx2's own proxy handling applies, unchanged).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from bargein.errors import ConfigError
from bargein.llm.base import ProviderRequestError, TransientError
from bargein.llm.transport import LeanTransport

RETRYABLE_STATUS = (408, 409, 425, 429)


@dataclass
class _LoopClients:
    clients: list[Any]
    busy: list[int]
    sentinel: asyncio.Task | None = None
    closed: bool = False
    _stop: asyncio.Future | None = field(default=None, repr=False)


def _proxies_configured() -> bool:
    import urllib.request

    return bool(urllib.request.getproxies())


@lru_cache(maxsize=1)
def _ssl_context() -> Any:
    """One TLS context per process: loading the CA bundle costs ~50 ms per client otherwise."""
    import httpx2

    return httpx2.create_ssl_context()


class ClientPool:
    """``make(http_client)`` → one SDK client per shard, per running event loop."""

    def __init__(self, make: Callable[[Any], Any], *, max_connections: int, timeout_s: float,
                 shard_size: int = 8, lean: bool = True):
        self.make = make
        self.lean = lean
        self.max_connections = max(1, max_connections)
        self.timeout_s = timeout_s
        self.shard_size = max(1, shard_size)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = \
            weakref.WeakKeyDictionary()

    def _new(self, loop: asyncio.AbstractEventLoop) -> _LoopClients:
        import httpx2

        shards = math.ceil(self.max_connections / self.shard_size)
        per = math.ceil(self.max_connections / shards)
        timeout = httpx2.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s))
        limits = httpx2.Limits(max_connections=per, max_keepalive_connections=per)
        # an explicit transport turns httpx2's proxy-from-environment off: with a proxy
        # configured, keep the standard client untouched
        lean = self.lean and not _proxies_configured()
        clients = []
        for _ in range(shards):
            if lean:
                standard = httpx2.AsyncHTTPTransport(verify=_ssl_context(), limits=limits)
                http = httpx2.AsyncClient(timeout=timeout, transport=LeanTransport(
                    max_connections=per, fallback=standard))
            else:
                http = httpx2.AsyncClient(timeout=timeout, verify=_ssl_context(), limits=limits)
            clients.append(self.make(http))
        state = _LoopClients(clients=clients, busy=[0] * shards)
        state._stop = loop.create_future()
        state.sentinel = loop.create_task(self._close_at_end(loop, state), name="bargein-llm-pool-closer")
        return state

    async def _close_at_end(self, loop: asyncio.AbstractEventLoop, state: _LoopClients) -> None:
        try:
            await state._stop
        except asyncio.CancelledError:
            pass
        finally:
            state.closed = True
            if self._loops.get(loop) is state:
                del self._loops[loop]        # the state refers to the loop: drop it explicitly
            for c in state.clients:
                with contextlib.suppress(Exception):
                    await c.close()

    def _state(self) -> _LoopClients:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None or state.closed:
            state = self._loops[loop] = self._new(loop)
        return state

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """The least busy SDK client of this loop, for one request."""
        state = self._state()
        i = min(range(len(state.busy)), key=state.busy.__getitem__)
        state.busy[i] += 1
        try:
            yield state.clients[i]
        finally:
            state.busy[i] -= 1

    async def aclose(self) -> None:
        """Close this loop's clients now (they are also closed when ``asyncio.run`` ends)."""
        state = self._loops.get(asyncio.get_running_loop())
        if state is not None and state._stop is not None and not state._stop.done():
            state._stop.set_result(None)
            await state.sentinel


def retry_after_s(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000.0)
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError, IndexError):
        when = email.utils.parsedate_to_datetime(ra)
        return max(0.0, when.timestamp() - time.time())
    return None


def map_sdk_error(exc: BaseException, sdk: Any, *, provider: str, key_env: str) -> Exception:
    """Translate an exception of the openai/anthropic SDK into bargein's retry classes."""
    if isinstance(exc, sdk.APITimeoutError):
        return TransientError(f"{provider}: request timed out", kind="timeout")
    if isinstance(exc, sdk.APIConnectionError):
        return TransientError(f"{provider}: connection error ({type(exc.__cause__ or exc).__name__})",
                              kind="connection")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        detail = str(getattr(exc, "message", "") or exc)[:300]
        if status in (401, 403):
            return ConfigError(f"{provider}: the server refused the credentials (HTTP {status}). "
                               f"Fix: set a valid key in the environment variable {key_env}.")
        if status in RETRYABLE_STATUS or status >= 500:
            return TransientError(f"{provider}: HTTP {status}: {detail}", status=status,
                                  retry_after_s=retry_after_s(exc.response.headers),
                                  kind="rate_limit" if status == 429 else "server")
        return ProviderRequestError(f"{provider}: HTTP {status}: {detail}", status=status)
    if isinstance(exc, (ValueError, KeyError, TypeError, IndexError)):
        return TransientError(f"{provider}: malformed response body ({type(exc).__name__}: "
                              f"{str(exc)[:120]})", kind="malformed")
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


async def post_json(pool: "ClientPool", path: str, body: dict[str, Any], parse: Callable[[dict], Any],
                    *, sdk: Any, provider: str, key_env: str | None) -> Any:
    """POST ``body`` through the SDK client and ``parse`` the JSON reply.

    Every failure, a malformed reply included, is mapped to bargein's retry classes.
    """
    import httpx2

    try:
        with pool.client() as client:
            resp = await client.post(path, body=body, cast_to=httpx2.Response)
            data = resp.json()
        return parse(data)
    except Exception as exc:  # noqa: BLE001 - mapped to bargein's retry classes
        raise map_sdk_error(exc, sdk, provider=provider, key_env=key_env) from None
