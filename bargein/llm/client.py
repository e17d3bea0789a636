"""``LLMClient``: one provider plus everything around a call — cache, budget, limits, the
structured-output mode, re-asks, the ledger.

    complete(messages) ──► structured mode for this server (probe once, fall back if refused)
                               ▼
                       cache hit? ──yes──► Completion(cached=True)          (no HTTP, no cost)
                               │ no
                               ▼
         budget: reserve the call's upper-bound cost ──does not fit, nothing in flight──► BudgetExceeded
                               ▼
         semaphore ─► RPM/TPM buckets ─► provider (SDK: its own retries, Retry-After) ─► Completion
                               ▼
         ledger (real cost) ─► release the reservation ─► cache

    structured(messages, Schema): complete ─► parse ─► valid? done : re-ask with the errors

HTTP retries (429, 5xx, timeouts, dropped connections) are the SDK's; this client resends only
a reply body that is not JSON (which the SDK does not retry), and re-asks answers that do not
validate. A provider's own bug (``KeyError``, ``TypeError`` …) is never retried. API keys never
leave the provider: messages and evidence are scrubbed.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from bargein.errors import BargeinError, GenerationFailed
from bargein.llm import structured as S
from bargein.llm.base import (
    JSON_MODE, JSON_SCHEMA, MODE_JSON, MODE_PROMPT, MODE_SCHEMA, NATIVE_MODES, SEED, Completion,
    FormatRejected, MalformedResponse, Provider, ProviderRequestError, TransientError, Usage,
    normalize_messages,
)
from bargein.llm.cache import ResponseCache, cache_key
from bargein.llm.ledger import CostLedger, PriceTable
from bargein.llm.limits import Limits
from bargein.llm.modes import MODES
from bargein.llm.schemas import schema_bytes

log = logging.getLogger("bargein.llm")
M = TypeVar("M", bound=BaseModel)

# what a request may cost beyond its text: per-message framing and, for Anthropic's forced tool,
# the tool-use system prompt (a few hundred tokens); generous, so the bound stays a bound
REQUEST_OVERHEAD_TOKENS = 600
MESSAGE_OVERHEAD_TOKENS = 8
# a failed answer longer than this is not sent back in a re-ask (its errors are)
REASK_QUOTE_TOKENS = 400
CONTEXT_MARGIN_TOKENS = 32
MIN_ANSWER_TOKENS = 64
RESEED = 7919            # re-ask k of sample s asks the server for seed s + k * RESEED
# a re-ask samples at least this hot: at a server's default temperature (llama.cpp: 0.2 and
# below) a new seed alone gives the same answer again, word for word
REASK_TEMPERATURE = 0.8


def reask_temperature(temperature: float | None) -> float:
    return max(temperature or 0.0, REASK_TEMPERATURE)


def estimate_tokens(text: str) -> int:
    """A rough token count for the TPM limiter before the true usage is known (4 chars/token)."""
    return (len(text) + 3) // 4


def prompt_tokens_bound(messages: list[dict[str, str]], json_schema: dict[str, Any] | None) -> int:
    """An upper bound on a request's prompt tokens: every BPE token is at least one byte."""
    return (sum(len(m["content"].encode("utf-8")) + MESSAGE_OVERHEAD_TOKENS for m in messages)
            + schema_bytes(json_schema) + REQUEST_OVERHEAD_TOKENS)


def _usage_dict(u: Usage) -> dict[str, int]:
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens}


class LLMClient:
    """Async LLM calls with caching, limits, a budget cap, structured modes and re-asks."""

    def __init__(self, provider: Provider, *, spec: str, ledger: CostLedger, limits: Limits,
                 prices: PriceTable, budget_usd: float | None = None,
                 cache: ResponseCache | None = None, max_retries: int = 4,
                 default_max_tokens: int = 1024, context_tokens: int | str | None = None):
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
        self.default_max_tokens = default_max_tokens
        self._context_setting = context_tokens
        self._context: int | None = (context_tokens if isinstance(context_tokens, int)
                                     else getattr(provider, "context_tokens", None))
        self._context_asked = context_tokens != "server"
        self._secrets = tuple(s for s in getattr(provider, "_secrets", ()) if s and len(s) >= 4)
        self._schemas: dict[type, dict[str, Any]] = {}
        self._modal = hasattr(provider, "structured_modes")
        self.requests_sent = 0                  # requests handed to the provider (SDK retries aside)
        # structured asks, first answers that failed the schema, and schema re-asks (this client)
        self.structured_counts = {"asks": 0, "invalid_first": 0, "reasks": 0}
        self._routes: dict[str, Any] = {}       # agent -> factory of its own client, then the client
        weakref.finalize(self, ledger.flush, False)     # no waiting in a finalizer; atexit waits

    def __repr__(self) -> str:
        return f"LLMClient({self.spec!r}, cache={self.cache.root if self.cache else None})"

    @property
    def model_id(self) -> str:
        return getattr(self.provider, "model_id", self.provider.model)

    @property
    def budget_stopped(self) -> bool:
        """Whether a call was refused this run because the budget could not cover it."""
        return self.ledger.budget_stopped

    # ---- per-agent models ------------------------------------------------------------------
    def route(self, agent: str, factory: Any) -> None:
        """``agent``'s calls go to the client ``factory()`` makes (on first use)."""
        self._routes[agent] = factory

    def for_agent(self, agent: str) -> "LLMClient":
        """The client that answers ``agent``: its own model if one is routed, else this one."""
        target = self._routes.get(agent)
        if target is None:
            return self
        if not isinstance(target, LLMClient):
            target = self._routes[agent] = target()
        return target

    @property
    def agent_specs(self) -> dict[str, str]:
        """Agent -> model spec for every agent routed away from :attr:`spec`."""
        return {a: (t.spec if isinstance(t, LLMClient) else "?") for a, t in self._routes.items()}

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

    # ---- structured modes -----------------------------------------------------------------
    @property
    def structured_modes(self) -> tuple[str, ...]:
        if self._modal:
            return tuple(self.provider.structured_modes)
        caps = self.provider.capabilities
        return (MODE_SCHEMA,) if JSON_SCHEMA in caps else (MODE_JSON,) if JSON_MODE in caps else (MODE_PROMPT,)

    @property
    def _server(self) -> tuple[str, str]:
        return getattr(self.provider, "server_key", (self.provider.name, ""))

    async def context_tokens(self) -> int | None:
        """The model's context window: the ``context_tokens`` setting, the provider's own
        (a GGUF's n_ctx), or with ``context_tokens="server"`` what the server reports."""
        if not self._context_asked:
            self._context_asked = True
            ask = getattr(self.provider, "context_window", None)
            if ask is not None:
                self._context = await ask()
                log.info("%s: context window %s tokens (from the server)", self.spec, self._context)
        return self._context

    # ---- one call -------------------------------------------------------------------------
    async def complete(self, messages: Iterable[Any], *, agent: str, sample: int = 0,
                       temperature: float | None = None, max_tokens: int | None = None,
                       json_schema: dict[str, Any] | None = None, schema_name: str = "output",
                       reask: int = 0) -> Completion:
        """One answer. ``sample`` tells repeated samples apart (cache key and provider seed);
        ``reask`` is the re-ask number (a new seed, so a re-ask is a new draw). With
        ``json_schema`` the answer is asked for in this server's best structured mode."""
        if agent in self._routes:
            return await self.for_agent(agent).complete(
                messages, agent=agent, sample=sample, temperature=temperature, max_tokens=max_tokens,
                json_schema=json_schema, schema_name=schema_name, reask=reask)
        msgs = normalize_messages(messages)
        max_tokens = max_tokens or self.default_max_tokens
        if json_schema is None:
            return await self._once(msgs, agent=agent, sample=sample, temperature=temperature,
                                    max_tokens=max_tokens, json_schema=None, mode=None,
                                    schema_name=schema_name, reask=reask, probe=False)
        modes, server = self.structured_modes, self._server
        while True:
            mode, confirmed = MODES.current(server, modes)
            if confirmed:
                return await self._once(msgs, agent=agent, sample=sample, temperature=temperature,
                                        max_tokens=max_tokens, json_schema=json_schema, mode=mode,
                                        schema_name=schema_name, reask=reask, probe=False)
            async with MODES.probe_lock(server):      # one probe at a time per server
                mode, confirmed = MODES.current(server, modes)
                if confirmed:
                    continue
                return await self._probe(msgs, modes, mode, agent=agent, sample=sample,
                                         temperature=temperature, max_tokens=max_tokens,
                                         json_schema=json_schema, schema_name=schema_name, reask=reask)

    async def _probe(self, msgs, modes, start, **kw) -> Completion:
        """Find the best mode from ``start`` down that this server accepts, and remember it.

        Each mode is tried without retries (twice if it fails with a 5xx, which may pass); the
        first that answers is kept. A mode that fails with a status servers use to refuse a format
        (400, 404, 422, 500 …) moves on to the next. When the plainest mode fails as well, the server is failing, not refusing a format:
        the request goes the usual way (SDK retries) in ``start``, and nothing is remembered but
        success. A rate limit or timeout during the probe likewise ends it (after Retry-After); the
        request then goes the usual way in the mode that timed out, not in one the server refused.
        """
        refused: list[str] = []
        tries = [m for m in modes[modes.index(start):] for _ in range(2)]
        n = 0
        while n < len(tries):
            mode = tries[n]
            try:
                comp = await self._once(msgs, mode=mode, probe=True, **kw)
            except FormatRejected as e:
                refused.append(self.scrub(str(e)))
                log.info("%s", refused[-1])
                # a 5xx may be passing: the same mode gets a second try; a 4xx is an answer
                n += 1 if (e.status or 0) >= 500 and n % 2 == 0 else 2 - n % 2
                continue
            except (TransientError, ProviderRequestError) as e:
                refused.append(self.scrub(str(e)))
                wait = getattr(e, "retry_after_s", None)
                if wait:
                    await asyncio.sleep(wait)
                if getattr(e, "kind", None) == "timeout" and mode != start:
                    start = mode               # the modes above were refused; this one timed out
                break
            if not comp.cached:                    # a cached answer proves nothing about the server
                MODES.worked(self._server, modes, mode)
            return comp
        try:
            comp = await self._once(msgs, mode=start, probe=False, **kw)
        except GenerationFailed as e:
            if isinstance(e.evidence, dict):
                e.evidence.setdefault("probes", refused)
            raise
        if not comp.cached:
            MODES.worked(self._server, modes, start)
        return comp

    def _request_messages(self, msgs, json_schema, mode, schema_name):
        if json_schema is None or mode in NATIVE_MODES:
            return msgs
        return S.with_instruction(msgs, S.instruction(schema_name, json_schema))

    async def _fit(self, msgs: list[dict[str, str]], max_tokens: int, agent: str) -> int:
        """``max_tokens`` cut to what the context window leaves after the prompt."""
        ctx = await self.context_tokens()
        if ctx is None:
            return max_tokens
        prompt = estimate_tokens("".join(m["content"] for m in msgs)) + MESSAGE_OVERHEAD_TOKENS * len(msgs)
        room = ctx - prompt - CONTEXT_MARGIN_TOKENS
        if room < min(MIN_ANSWER_TOKENS, max_tokens):
            raise GenerationFailed(
                f"{self.spec} ({agent}): the prompt (~{prompt} tokens) leaves no room for an answer in "
                f"the model's context window of {ctx} tokens. Fix: a model or server with a larger "
                "context (context_tokens), or a shorter input.",
                evidence={"agent": agent, "provider": self.provider.name, "model": self.model_id,
                          "prompt_tokens_estimate": prompt, "context_tokens": ctx})
        return min(max_tokens, room)

    async def _once(self, msgs, *, agent, sample, temperature, max_tokens, json_schema, mode,
                    schema_name, reask, probe) -> Completion:
        req = self._request_messages(msgs, json_schema, mode, schema_name)
        max_tokens = await self._fit(req, max_tokens, agent)
        seed = sample + reask * RESEED if SEED in self.provider.capabilities else None
        params = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                  "mode": mode if json_schema is not None else None,
                  **getattr(self.provider, "sampling", {})}
        key = cache_key(provider=self.provider.name, model=self.model_id, messages=req,
                        params=params, json_schema=json_schema if mode in NATIVE_MODES else None,
                        sample=sample)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.ledger.record(self.provider.name, self.model_id, agent, hit.usage,
                                   cost_usd=0.0, cached=True)
                return hit
        send_schema = json_schema if mode in NATIVE_MODES or mode == MODE_JSON else None
        bound = None
        if self.budget_usd is not None and self.price is not None:
            bound = self.price.cost(prompt_tokens_bound(req, send_schema), max_tokens)
            await self.ledger.reserve(bound, self.budget_usd, f" of {agent}")
        try:
            comp = await self._send(req, agent=agent, temperature=temperature, max_tokens=max_tokens,
                                    json_schema=send_schema, seed=seed, mode=mode, probe=probe)
            cost = None if self.price is None else self.price.cost(comp.usage.input_tokens,
                                                                   comp.usage.output_tokens)
            self.ledger.record(self.provider.name, self.model_id, agent, comp.usage, cost_usd=cost,
                               cached=False)
        finally:
            if bound is not None:
                self.ledger.release(bound)
        if self.cache is not None:
            self.cache.put(key, comp)
        return comp

    async def _send(self, req, *, agent, temperature, max_tokens, json_schema, seed, mode,
                    probe) -> Completion:
        """The provider's answer; a body that is not JSON is resent (up to ``max_retries``).
        Errors become :class:`GenerationFailed` with evidence, except during a probe."""
        est = estimate_tokens("".join(m["content"] for m in req)) + max_tokens
        errors: list[str] = []
        extra = {"mode": mode, "probe": probe} if self._modal else {}
        evidence = {"agent": agent, "provider": self.provider.name, "model": self.model_id}
        try:
            for _ in range(self.max_retries + 1):
                try:
                    async with self.limits.semaphore():
                        await self.limits.admit(est)
                        self.requests_sent += 1
                        comp = await self.provider.complete(
                            req, temperature=temperature, max_tokens=max_tokens,
                            json_schema=json_schema, seed=seed, **extra)
                except MalformedResponse as exc:
                    errors.append(self.scrub(str(exc)))
                    log.info("%s (%s): %s; sending again", self.spec, agent, errors[-1])
                    continue
                self.limits.settle(est, comp.usage.input_tokens + comp.usage.output_tokens)
                return comp
            raise GenerationFailed(
                f"{self.spec} ({agent}): gave up after {len(errors)} unreadable replies: {errors[-1]}",
                evidence={**evidence, "attempts": len(errors), "errors": errors})
        except (FormatRejected, BargeinError) as exc:
            if isinstance(exc, BargeinError):
                exc.args = tuple(self.scrub(a) for a in exc.args)
            raise
        except TransientError as exc:
            if probe:                                  # the probe decides what it means
                raise
            errors.append(self.scrub(str(exc)))
            raise GenerationFailed(f"{self.spec} ({agent}): {errors[-1]}",
                                   evidence={**evidence, "attempts": len(errors), "errors": errors}) from None
        except ProviderRequestError as exc:
            if probe:
                raise
            raise GenerationFailed(self.scrub(f"{self.spec} ({agent}): request rejected: {exc}"),
                                   evidence={**evidence, "errors": errors + [self.scrub(str(exc))]}) from None

    # ---- structured -----------------------------------------------------------------------
    async def structured(self, messages: Iterable[Any], schema: type[M], *, agent: str,
                         sample: int = 0, max_reasks: int = 2, temperature: float | None = None,
                         max_tokens: int | None = None) -> M:
        """A validated ``schema`` instance. A JSON or validation failure is re-asked with the
        errors (and the failed answer when it is short) at most ``max_reasks`` times, each with
        a new sampling seed; then :class:`GenerationFailed` with every attempt's raw text,
        errors and usage as evidence."""
        if agent in self._routes:
            return await self.for_agent(agent).structured(
                messages, schema, agent=agent, sample=sample, max_reasks=max_reasks,
                temperature=temperature, max_tokens=max_tokens)
        js = self._schemas.get(schema)
        if js is None:
            js = self._schemas[schema] = S.schema_of(schema)
        msgs = original = normalize_messages(messages)
        attempts: list[dict[str, Any]] = []
        total = Usage()

        def evidence() -> dict[str, Any]:
            return {"agent": agent, "schema": schema.__name__, "provider": self.provider.name,
                    "model": self.model_id, "sample": sample, "attempts": attempts,
                    "usage": _usage_dict(total)}

        for k in range(max_reasks + 1):
            try:
                comp = await self.complete(msgs, agent=agent, sample=sample,
                                           temperature=temperature if k == 0 else reask_temperature(temperature),
                                           max_tokens=max_tokens, json_schema=js,
                                           schema_name=schema.__name__, reask=k)
            except GenerationFailed as e:
                attempts.append({"error": str(e), "details": e.evidence})
                raise GenerationFailed(str(e), evidence=evidence()) from None
            total = total + comp.usage
            self.structured_counts["asks" if k == 0 else "reasks"] += 1
            try:
                return S.parse(comp, schema, max_tokens or self.default_max_tokens)
            except S.StructuredError as e:
                if k == 0:
                    self.structured_counts["invalid_first"] += 1
                # no "cached" flag here: a re-run from the cache must fail with the same evidence
                attempts.append({"raw": comp.text, "errors": e.errors, "finish_reason": comp.finish_reason,
                                 "usage": _usage_dict(comp.usage)})
                turns = S.reask_messages(comp, e.errors, quote_tokens=REASK_QUOTE_TOKENS)
                msgs = await self._reask_history(original, msgs, turns, max_tokens)
        raise GenerationFailed(
            f"{agent}: no valid {schema.__name__} from {self.spec} after {len(attempts)} attempts; "
            f"last errors: {'; '.join(attempts[-1]['errors'])[:300]}", evidence=evidence())

    async def _reask_history(self, original, history, turns, max_tokens) -> list[dict[str, str]]:
        """The next attempt's messages: every earlier attempt and its errors, unless that leaves
        less than half the context window for the answer; then the request and the latest
        attempt's turns only."""
        full = history + turns
        ctx = await self.context_tokens()
        if ctx is None:
            return full
        need = estimate_tokens("".join(m["content"] for m in full)) + (max_tokens or self.default_max_tokens) // 2
        return full if need <= ctx else original + turns

    # ---- lifecycle ------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the ledger and every pending cache entry now."""
        if self.cache is not None:
            self.cache.flush()
        self.ledger.save(wait=True)

    async def aclose(self) -> None:
        """Close this event loop's connections and write the ledger."""
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()
        if self.cache is not None:
            await asyncio.to_thread(self.cache.flush)
        self.ledger.save(wait=True)
