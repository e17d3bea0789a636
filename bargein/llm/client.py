"""``LLMClient``: one provider plus everything around a call — cache, limits, retries, ledger,
budget, structured output with re-asks.

    complete(messages) ──► cache hit? ──yes──► Completion(cached=True)          (no HTTP, no cost)
                               │ no
                               ▼
                  budget reached? ──yes──► BudgetExceeded (calls in flight finish)
                               │ no
                               ▼
       ┌─► semaphore ─► RPM/TPM buckets ─► provider.complete ─► ledger, cache ─► Completion
       └── TransientError (429/5xx/timeout/connection/malformed): wait Retry-After or
           jittered backoff; after max_retries ─► GenerationFailed(evidence)

Jitter only changes *when* a request is sent, never what is sent or what is kept, so outputs
stay deterministic. API keys never leave the provider: messages and evidence are scrubbed.
"""

from __future__ import annotations

import logging
import random
import weakref
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from bargein.errors import BargeinError, GenerationFailed
from bargein.llm import structured as S
from bargein.llm.base import (
    JSON_SCHEMA, SEED, Completion, Provider, ProviderRequestError, TransientError, Usage,
    normalize_messages,
)
from bargein.llm.cache import ResponseCache, cache_key
from bargein.llm.ledger import CostLedger, PriceTable
from bargein.llm.limits import Limits

log = logging.getLogger("bargein.llm")
M = TypeVar("M", bound=BaseModel)


def estimate_tokens(text: str) -> int:
    """A rough token count for the TPM limiter before the true usage is known (4 chars/token)."""
    return (len(text) + 3) // 4


def _usage_dict(u: Usage) -> dict[str, int]:
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens}


class LLMClient:
    """Async LLM calls with caching, limits, retries, cost accounting and a budget cap."""

    def __init__(self, provider: Provider, *, spec: str, ledger: CostLedger, limits: Limits,
                 prices: PriceTable, budget_usd: float | None = None,
                 cache: ResponseCache | None = None, max_retries: int = 4,
                 backoff_s: tuple[float, float] = (0.5, 30.0), max_wait_s: float = 300.0,
                 default_max_tokens: int = 1024):
        self.provider = provider
        self.spec = spec
        self.ledger = ledger
        self.prices = prices
        self.price = prices.lookup(provider.name, getattr(provider, "model_id", provider.model))
        self.budget_usd = budget_usd
        ledger.price_tables.add((prices.version, prices.date))
        if budget_usd is not None:
            ledger.budget_usd = budget_usd
        self.limits = limits
        self.cache = cache
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.default_max_tokens = default_max_tokens
        self._jitter = random.Random()          # timing only; never touches outputs or global RNG
        self._secrets = tuple(s for s in getattr(provider, "_secrets", ()) if s and len(s) >= 4)
        self._schemas: dict[type, dict[str, Any]] = {}
        self.requests_sent = 0                  # HTTP attempts made by this client
        weakref.finalize(self, ledger.flush, False)     # no waiting in a finalizer; atexit waits

    def __repr__(self) -> str:
        return f"LLMClient({self.spec!r}, cache={self.cache.root if self.cache else None})"

    @property
    def model_id(self) -> str:
        return getattr(self.provider, "model_id", self.provider.model)

    # ---- secrets --------------------------------------------------------------------------
    def scrub(self, obj: Any) -> Any:
        """``obj`` with every API key replaced by ``***`` (strings, dicts and lists)."""
        if isinstance(obj, str):
            for s in self._secrets:
                obj = obj.replace(s, "***")
            return obj
        if isinstance(obj, dict):
            return {k: self.scrub(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.scrub(v) for v in obj]
        return obj

    # ---- one call -------------------------------------------------------------------------
    async def complete(self, messages: Iterable[Any], *, agent: str, sample: int = 0,
                       temperature: float | None = None, max_tokens: int | None = None,
                       json_schema: dict[str, Any] | None = None) -> Completion:
        """One answer. ``sample`` tells repeated samples apart (cache key and provider seed)."""
        msgs = normalize_messages(messages)
        max_tokens = max_tokens or self.default_max_tokens
        seed = sample if SEED in self.provider.capabilities else None
        params = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                  "capabilities": sorted(self.provider.capabilities)}
        key = cache_key(provider=self.provider.name, model=self.model_id, messages=msgs,
                        params=params, json_schema=json_schema, sample=sample)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.ledger.record(self.provider.name, self.model_id, agent, hit.usage,
                                   cost_usd=0.0, cached=True)
                return hit
        self.ledger.check_budget(self.budget_usd)
        comp = await self._call(msgs, agent=agent, temperature=temperature, max_tokens=max_tokens,
                                json_schema=json_schema, seed=seed)
        cost = None if self.price is None else self.price.cost(comp.usage.input_tokens,
                                                               comp.usage.output_tokens)
        self.ledger.record(self.provider.name, self.model_id, agent, comp.usage, cost_usd=cost,
                           cached=False)
        if self.cache is not None:
            self.cache.put(key, comp)
        return comp

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        ra = getattr(exc, "retry_after_s", None)
        if ra is not None:
            return min(ra, self.max_wait_s) * (1.0 + 0.1 * self._jitter.random())
        first, cap = self.backoff_s
        return min(cap, first * 2 ** (state.attempt_number - 1)) * (0.5 + 0.5 * self._jitter.random())

    async def _call(self, msgs: list[dict[str, str]], *, agent: str, temperature: float | None,
                    max_tokens: int, json_schema: dict[str, Any] | None, seed: int | None) -> Completion:
        est = estimate_tokens("".join(m["content"] for m in msgs)) + max_tokens
        errors: list[str] = []

        def note(state: RetryCallState) -> None:
            exc = state.outcome.exception()
            errors.append(self.scrub(str(exc)))
            log.info("%s (%s): %s; retry %d/%d", self.spec, agent, self.scrub(str(exc)),
                     state.attempt_number, self.max_retries)

        retrying = AsyncRetrying(stop=stop_after_attempt(self.max_retries + 1), wait=self._wait,
                                 retry=retry_if_exception_type(TransientError), reraise=True,
                                 before_sleep=note)
        try:
            async for attempt in retrying:
                with attempt:
                    async with self.limits.semaphore():
                        await self.limits.admit(est)
                        self.requests_sent += 1
                        comp = await self.provider.complete(
                            msgs, temperature=temperature, max_tokens=max_tokens,
                            json_schema=json_schema, seed=seed)
                    self.limits.settle(est, comp.usage.input_tokens + comp.usage.output_tokens)
                    return comp
        except TransientError as exc:
            errors.append(self.scrub(str(exc)))
            raise GenerationFailed(
                f"{self.spec} ({agent}): gave up after {len(errors)} attempts: {errors[-1]}",
                evidence={"agent": agent, "provider": self.provider.name, "model": self.model_id,
                          "attempts": len(errors), "errors": errors}) from None
        except ProviderRequestError as exc:
            raise GenerationFailed(self.scrub(f"{self.spec} ({agent}): request rejected: {exc}"),
                                   evidence={"agent": agent, "provider": self.provider.name,
                                             "model": self.model_id, "errors": errors + [self.scrub(str(exc))]}) from None
        except BargeinError as exc:
            exc.args = tuple(self.scrub(a) for a in exc.args)
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    # ---- structured -----------------------------------------------------------------------
    async def structured(self, messages: Iterable[Any], schema: type[M], *, agent: str,
                         sample: int = 0, max_reasks: int = 2, temperature: float | None = None,
                         max_tokens: int | None = None) -> M:
        """A validated ``schema`` instance. A JSON or validation failure is re-asked with the
        errors appended (at most ``max_reasks`` times); then :class:`GenerationFailed` with every
        attempt's raw text, errors and usage as evidence."""
        js = self._schemas.get(schema)
        if js is None:
            js = self._schemas[schema] = S.schema_of(schema)
        msgs = normalize_messages(messages)
        if JSON_SCHEMA not in self.provider.capabilities:
            msgs = S.with_instruction(msgs, S.instruction(schema, js))
        attempts: list[dict[str, Any]] = []
        total = Usage()

        def evidence() -> dict[str, Any]:
            return {"agent": agent, "schema": schema.__name__, "provider": self.provider.name,
                    "model": self.model_id, "sample": sample, "attempts": attempts,
                    "usage": _usage_dict(total)}

        for _ in range(max_reasks + 1):
            try:
                comp = await self.complete(msgs, agent=agent, sample=sample, temperature=temperature,
                                           max_tokens=max_tokens, json_schema=js)
            except GenerationFailed as e:
                attempts.append({"error": str(e), "details": e.evidence})
                raise GenerationFailed(str(e), evidence=evidence()) from None
            total = total + comp.usage
            try:
                return S.parse(comp, schema, max_tokens or self.default_max_tokens)
            except S.StructuredError as e:
                # no "cached" flag here: a re-run from the cache must fail with the same evidence
                attempts.append({"raw": comp.text, "errors": e.errors, "finish_reason": comp.finish_reason,
                                 "usage": _usage_dict(comp.usage)})
                msgs = msgs + [{"role": "assistant", "content": comp.text},
                               {"role": "user", "content": S.reask(e.errors)}]
        raise GenerationFailed(
            f"{agent}: no valid {schema.__name__} from {self.spec} after {len(attempts)} attempts; "
            f"last errors: {'; '.join(attempts[-1]['errors'])[:300]}", evidence=evidence())

    # ---- lifecycle ------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the ledger and every pending cache entry now."""
        self.ledger.save(wait=True)

    async def aclose(self) -> None:
        """Close this event loop's connections and write the ledger."""
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()
        self.ledger.save(wait=True)
