"""Concurrency and rate limits for LLM calls: a semaphore and two async token buckets.

    requests ──► [RPM bucket: 1 token each] ──► [TPM bucket: est. tokens] ──► [semaphore] ──► HTTP

A bucket holds at most one second's worth of tokens (``rate_per_min / 60``, at least the cost of
one call), so a burst never exceeds one second of the budget and the long-run rate never exceeds
``rate_per_min``. asyncio primitives belong to one event loop; the runner starts a loop per stage,
so the loop-bound parts are created per running loop while the bucket levels are shared.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One ``factory()`` value per running event loop, dropped with the loop (values such as a
    waited-on Lock refer to their loop, so a WeakKeyDictionary would keep every loop alive)."""

    def __init__(self, factory: Callable[[], T]):
        self._factory = factory
        self._values: dict[int, tuple[weakref.ref, T]] = {}

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        entry = self._values.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1]
        for k in [k for k, (ref, _) in self._values.items() if ref() is None or ref().is_closed()]:
            del self._values[k]
        value = self._factory()
        self._values[id(loop)] = (weakref.ref(loop), value)
        return value


class TokenBucket:
    """``rate_per_min`` tokens per minute, at most ``capacity`` banked; FIFO waiters."""

    def __init__(self, rate_per_min: float, capacity: float | None = None):
        if rate_per_min <= 0:
            raise ValueError(f"rate_per_min must be > 0, got {rate_per_min}")
        self.rate_per_s = rate_per_min / 60.0
        self.capacity = max(1.0, capacity if capacity is not None else self.rate_per_s)
        self._tokens = self.capacity
        self._t = time.monotonic()
        self._locks: PerLoop[asyncio.Lock] = PerLoop(asyncio.Lock)

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self.capacity, self._tokens + (now - self._t) * self.rate_per_s)
        self._t = now

    @property
    def level(self) -> float:
        self._refill()
        return self._tokens

    async def acquire(self, amount: float = 1.0) -> float:
        """Take ``amount`` tokens (capped at the capacity), waiting as needed; returns the wait."""
        amount = min(amount, self.capacity)
        waited = 0.0
        async with self._locks.get():          # FIFO: one waiter computes its sleep at a time
            while True:
                self._refill()
                if self._tokens >= amount:
                    self._tokens -= amount
                    return waited
                delay = (amount - self._tokens) / self.rate_per_s
                waited += delay
                await asyncio.sleep(delay)

    def adjust(self, delta: float) -> None:
        """Charge ``delta`` more tokens (negative refunds) once the true usage is known."""
        self._refill()
        self._tokens = min(self.capacity, self._tokens - delta)


class Limits:
    """Per-provider limits: at most ``concurrency`` calls in flight, ``rpm`` and ``tpm`` rates."""

    def __init__(self, concurrency: int, rpm: float | None = None, tpm: float | None = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self.rpm = TokenBucket(rpm) if rpm else None
        self.tpm = TokenBucket(tpm) if tpm else None
        self._sems: PerLoop[asyncio.Semaphore] = PerLoop(lambda: asyncio.Semaphore(concurrency))

    def semaphore(self) -> asyncio.Semaphore:
        return self._sems.get()

    async def admit(self, est_tokens: int) -> None:
        """Wait until the rate limits allow one more request of ``est_tokens`` tokens."""
        if self.rpm is not None:
            await self.rpm.acquire(1)
        if self.tpm is not None:
            await self.tpm.acquire(est_tokens)

    def settle(self, est_tokens: int, actual_tokens: int) -> None:
        if self.tpm is not None:
            self.tpm.adjust(actual_tokens - min(est_tokens, self.tpm.capacity))
