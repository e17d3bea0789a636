"""What the SDK-backed providers share: one SDK client per event loop, and error mapping.

An SDK client (and the HTTP connections it keeps) belongs to the event loop it was first used
on; the runner starts one loop per stage, so each loop gets its own client. Clients bargein made
are closed when their loop's ``asyncio.run`` ends (a sentinel task closes them on cancellation).

The HTTP client is one of the SDK's own (:func:`http_client`: its aiohttp client where
installed, else its httpx default; proxies from the environment and TLS as the SDK sets them);
only its connection limits are raised when more calls may be in flight than the SDK keeps
connections alive for. No HTTP is written here.

A client the user passes (``get_llm(..., client=AsyncAzureOpenAI(...))``) is used as is on the
first loop that uses it; on any later loop a ``copy()`` of it with the SDK's default HTTP client
is used (same key, base URL, headers, Azure settings, timeout, retries). Pass a zero-argument
factory instead (``client=lambda: AsyncAzureOpenAI(...)``) to keep a custom ``http_client`` on
every loop. The user's own clients are never closed by bargein.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bargein.errors import ConfigError
from bargein.llm.base import FormatRejected, MalformedResponse, ProviderRequestError, TransientError

# statuses the SDKs retry themselves (408, 409, 429, 5xx); what reaches us after that is final
SDK_RETRIED = frozenset({408, 409, 429})
# statuses with which a server refuses a structured-output format it does not support:
# llama.cpp's server answers json_schema with 500; others with 400 / 422 / 404 / 501
FORMAT_STATUSES = frozenset({400, 404, 415, 422, 500, 501})


@dataclass
class _LoopClient:
    client: Any
    owned: bool
    sentinel: asyncio.Task | None = None
    closed: bool = False
    _stop: asyncio.Future | None = field(default=None, repr=False)


class LoopClients:
    """One SDK client per running event loop.

    ``make()`` builds bargein's own client; ``user`` is a client instance or a zero-argument
    factory from the user (see the module docstring).
    """

    def __init__(self, make: Callable[[], Any] | None, *, sdk: Any, user: Any = None,
                 what: str = "client"):
        if user is not None and not callable(user) and not hasattr(user, "copy"):
            raise ConfigError(f"{what}: client={user!r} is neither an SDK client nor a factory "
                              "returning one. Fix: pass e.g. AsyncOpenAI(...) or lambda: AsyncOpenAI(...)")
        self.make = make
        self.sdk = sdk
        self.user = user
        self._user_is_instance = user is not None and hasattr(user, "copy")
        self._user_loop: weakref.ref | None = None
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = \
            weakref.WeakKeyDictionary()

    def _new(self, loop: asyncio.AbstractEventLoop) -> _LoopClient:
        if self.user is None:
            state = _LoopClient(self.make(), owned=True)
        elif not self._user_is_instance:
            state = _LoopClient(self.user(), owned=True)
        elif self._user_loop is None or self._user_loop() is loop:
            self._user_loop = weakref.ref(loop)
            state = _LoopClient(self.user, owned=False)
        else:                   # the user's instance is bound to another loop: a copy for this one
            http = self.sdk.DefaultAsyncHttpxClient(timeout=self.user.timeout)
            state = _LoopClient(self.user.copy(http_client=http), owned=True)
        if state.owned:
            state._stop = loop.create_future()
            state.sentinel = loop.create_task(self._close_at_end(loop, state), name="bargein-llm-closer")
        return state

    async def _close_at_end(self, loop: asyncio.AbstractEventLoop, state: _LoopClient) -> None:
        try:
            await state._stop
        except asyncio.CancelledError:
            pass
        finally:
            state.closed = True
            if self._loops.get(loop) is state:
                del self._loops[loop]        # the state refers to the loop: drop it explicitly
            with contextlib.suppress(Exception):
                await state.client.close()

    def get(self) -> Any:
        """The SDK client of the running event loop."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None or state.closed:
            state = self._loops[loop] = self._new(loop)
        return state.client

    async def aclose(self) -> None:
        """Close this loop's client now if bargein made it (also done when ``asyncio.run`` ends)."""
        state = self._loops.get(asyncio.get_running_loop())
        if state is not None and state._stop is not None and not state._stop.done():
            state._stop.set_result(None)
            await state.sentinel


HTTP_CLIENTS = ("auto", "aiohttp", "httpx")
_SSL_CONTEXTS: dict[tuple[str, str, str], Any] = {}
_SSL_LOCK = threading.Lock()


def shared_ssl_context(sdk: Any) -> Any:
    """The TLS context the SDK's HTTP library builds by default (``create_ssl_context()``: the
    system's CA store, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), made once per process.

    Building one reads the whole CA bundle (~0.1 s of CPU) and the SDK's HTTP clients build a new
    one per client; bargein makes a client per event loop (one per stage run), so it hands them
    this one instead. Contexts are safe to share between clients, loops and threads. A change of
    the two environment variables gives a new context.
    """
    lib = importlib.import_module(type(sdk.DEFAULT_CONNECTION_LIMITS).__module__.split(".")[0])
    key = (lib.__name__, os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
    with _SSL_LOCK:
        ctx = _SSL_CONTEXTS.get(key)
        if ctx is None:
            ctx = _SSL_CONTEXTS[key] = lib.create_ssl_context()
    return ctx


def http_client(sdk: Any, max_connections: int, timeout_s: float, kind: str = "auto") -> Any:
    """One of the SDK's own HTTP clients, keeping up to ``max_connections`` connections alive.

    ``aiohttp``: the SDK's ``DefaultAioHttpClient`` (the transport the SDKs recommend for many
    concurrent requests: about a quarter less CPU per request than the default); ``httpx``: the
    SDK's default ``DefaultAsyncHttpxClient``; ``auto``: aiohttp where the SDK and the
    ``aiohttp`` package provide it, else httpx. Both honour proxies from the environment. TLS
    verification is the library's default, with one context per process
    (:func:`shared_ssl_context`).
    """
    if kind not in HTTP_CLIENTS:
        raise ConfigError(f"http={kind!r}; valid: {', '.join(HTTP_CLIENTS)}")
    default = sdk.DEFAULT_CONNECTION_LIMITS
    kwargs: dict[str, Any] = {"timeout": timeout_s, "verify": shared_ssl_context(sdk)}
    if max_connections > (default.max_keepalive_connections or 0):
        # the limits object of the SDK's own HTTP library, as the SDK builds its default
        kwargs["limits"] = type(default)(max_connections=max(max_connections, default.max_connections or 0),
                                         max_keepalive_connections=max_connections)
    if kind != "httpx":
        aio = getattr(sdk, "DefaultAioHttpClient", None)
        try:
            if aio is None:
                raise RuntimeError(f"{sdk.__name__} {sdk.__version__} has no DefaultAioHttpClient")
            return aio(**kwargs)
        except (RuntimeError, ImportError) as e:          # the SDK's aiohttp extra is missing
            if kind == "aiohttp":
                raise ConfigError(f"http='aiohttp' needs the SDK's aiohttp support ({e}). Fix: "
                                  f"pip install '{sdk.__name__}[aiohttp]', or http='httpx'") from None
    return sdk.DefaultAsyncHttpxClient(**kwargs)


def map_sdk_error(exc: BaseException, sdk: Any, *, provider: str, key_env: str, max_retries: int,
                  mode: str | None = None, probe: bool = False) -> BaseException:
    """Translate an SDK exception, raised after the SDK's own retries, into bargein's classes.

    ``probe``: the request tried ``mode`` on a server not yet known to accept it; a status in
    :data:`FORMAT_STATUSES` is then reported as :class:`FormatRejected`.
    Exceptions that are not the SDK's (a provider's own ``KeyError`` …) are returned unchanged.
    """
    attempts = max_retries + 1
    if isinstance(exc, sdk.APITimeoutError):
        return TransientError(f"{provider}: request timed out ({attempts} attempts)", kind="timeout")
    if isinstance(exc, sdk.APIConnectionError):
        return TransientError(f"{provider}: connection error ({type(exc.__cause__ or exc).__name__}; "
                              f"{attempts} attempts)", kind="connection")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        detail = str(getattr(exc, "message", "") or exc)[:300]
        if status in (401, 403):
            return ConfigError(f"{provider}: the server refused the credentials (HTTP {status}). "
                               f"Fix: set a valid key in the environment variable {key_env}.")
        if probe and mode is not None and status in FORMAT_STATUSES:
            return FormatRejected(f"{provider}: structured mode {mode!r} failed on this server "
                                  f"(HTTP {status}: {detail})", mode=mode, status=status)
        if status in SDK_RETRIED or status >= 500:
            return TransientError(f"{provider}: HTTP {status} after {attempts} attempts: {detail}",
                                  status=status, kind="rate_limit" if status == 429 else "server",
                                  retry_after_s=retry_after_s(exc))
        return ProviderRequestError(f"{provider}: HTTP {status}: {detail}", status=status)
    return exc


def retry_after_s(exc: Any) -> float | None:
    """The wait a refused request asks for (``retry-after-ms`` or ``retry-after`` seconds)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        with contextlib.suppress(TypeError, ValueError):
            return min(60.0, max(0.0, float(headers.get(name)) * scale))
    return None


async def send(clients: LoopClients, call: Callable[[Any], Awaitable[Any]], *, provider: str,
               key_env: str, mode: str | None = None, probe: bool = False) -> Any:
    """``await call(client)`` on this loop's SDK client, errors mapped to bargein's classes.

    The SDK retries (its ``max_retries``, honouring Retry-After). A ``probe`` (a request in a
    structured ``mode`` not yet known to work on this server) goes once, without retries: a
    status in :data:`FORMAT_STATUSES` is then reported as :class:`FormatRejected`, anything
    else as the error it is (with the server's Retry-After), for the caller to decide.
    """
    sdk = clients.sdk
    client = clients.get()
    max_retries = 0 if probe else getattr(client, "max_retries", 0)
    if probe:
        client = client.with_options(max_retries=0)
    try:
        return await call(client)
    except json.JSONDecodeError as e:                  # raised by the SDK reading the body
        raise MalformedResponse(f"{provider}: the reply body is not valid JSON ({e})") from None
    except Exception as e:  # noqa: BLE001 - SDK errors are mapped, anything else re-raised as is
        if isinstance(e, sdk.APIResponseValidationError):
            raise MalformedResponse(f"{provider}: the reply does not have the API's shape ({e})") from None
        mapped = map_sdk_error(e, sdk, provider=provider, key_env=key_env, max_retries=max_retries,
                               mode=mode, probe=probe)
        if mapped is e:
            raise
        raise mapped from None
