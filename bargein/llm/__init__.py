"""LLM providers behind one protocol, and the client every LLM agent uses.

    from bargein.llm import get_llm, is_offline
    llm = get_llm("openai:gpt-4o-mini", workdir="work", budget_usd=5)
    plan = await llm.structured(messages, RoundPlan, agent="round_planner", sample=0)

Specs: ``openai:MODEL`` (any OpenAI-compatible server by ``base_url`` / ``OPENAI_BASE_URL``),
``anthropic:MODEL`` (``ANTHROPIC_BASE_URL``), ``llamacpp:/path/model.gguf``; other providers
register under kind ``"llm"`` in :mod:`bargein.registry` (entry point group ``bargein.llm``)
with a factory ``create(model, *, base_url, timeout_s, max_retries, structured, api_key_env,
client, context_tokens, max_connections, http, **more)`` (ignore what you do not use).

Keys come from the environment only (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` or
``api_key_env``). Without a key the provider's own endpoint is refused with a ConfigError naming
the variable; a custom ``base_url`` (a local server) is sent a placeholder key instead.

Your own SDK client (Azure, custom headers, a proxy)::

    from openai import AsyncAzureOpenAI
    llm = get_llm("openai:my-deployment", client=lambda: AsyncAzureOpenAI(
        azure_endpoint="https://….openai.azure.com", api_version="2024-10-21"))

``client`` is an ``AsyncOpenAI``/``AsyncAnthropic`` instance or a zero-argument factory of one
(a factory keeps a custom ``http_client`` on every event loop; see :mod:`bargein.llm.sdkclients`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bargein import registry
from bargein.errors import ConfigError
from bargein.llm import anthropic_provider, llamacpp_provider, openai_provider
from bargein.llm.base import Completion, Provider, Usage, is_offline
from bargein.llm.cache import ResponseCache, default_cache_dir
from bargein.llm.client import LLMClient
from bargein.llm.ledger import CostLedger, PriceTable, ledger_for
from bargein.llm.limits import Limits
from bargein.llm.sdkclients import HTTP_CLIENTS

__all__ = ["Completion", "CostLedger", "LLMClient", "PriceTable", "Provider", "Usage", "agent_models",
           "get_llm", "is_offline", "parse_spec", "set_agent_models",
           "stage_agent_models"]

registry.register("llm", "openai", openai_provider.create,
                  "OpenAI API, or any OpenAI-compatible server by base_url (vLLM, Ollama, llama.cpp, LM Studio)")
registry.register("llm", "anthropic", anthropic_provider.create, "Anthropic messages API")
registry.register("llm", "llamacpp", llamacpp_provider.create,
                  "in-process GGUF model (llama-cpp-python)" if importlib.util.find_spec("llama_cpp")
                  else "in-process GGUF model (not installed: pip install 'bargein[llamacpp]')")

SPEC_FORMS = ("openai:MODEL (e.g. openai:gpt-4o-mini; any OpenAI-compatible server via base_url), "
              "anthropic:MODEL (e.g. anthropic:claude-3-5-haiku-latest), "
              "llamacpp:/path/to/model.gguf, or 'offline' for the rule-based agents")
DEFAULT_CONCURRENCY = {"openai": 16, "anthropic": 8, "llamacpp": 1}
SETTING_DEFAULTS: dict[str, Any] = {"timeout_s": 120.0, "max_retries": 4, "structured": "auto",
                                    "max_tokens": 1024, "http": "auto"}


SETTINGS_ENV = "BARGEIN_LLM_SETTINGS"


def env_settings(provider: str) -> dict[str, Any]:
    """Provider settings from ``$BARGEIN_LLM_SETTINGS``, for runs started from the command line:
    ``"timeout_s=600,concurrency=1,context_tokens=server"`` (every provider) or
    ``"openai.timeout_s=600"`` (one). Numbers become numbers; a malformed entry is a ConfigError."""
    text = os.environ.get(SETTINGS_ENV, "").strip()
    out: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(f"${SETTINGS_ENV}: {item!r} is not KEY=VALUE. Fix: e.g. "
                              f"{SETTINGS_ENV}='timeout_s=600,concurrency=1,context_tokens=server'")
        who, dot, key = key.rpartition(".")
        if dot and who != provider:
            continue
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out


AGENTS_ENV = "BARGEIN_LLM_AGENTS"


_CONFIGURED_AGENTS: dict[str, str] = {}


def check_agent_models(routes: dict[str, str], where: str = "llm_agents") -> dict[str, str]:
    """``routes`` (agent -> provider:model) checked: a ConfigError names a bad entry."""
    out = {}
    for agent, spec in routes.items():
        if not isinstance(agent, str) or not agent.strip() or not isinstance(spec, str):
            raise ConfigError(f"{where}: {agent!r}: {spec!r} is not AGENT: PROVIDER:MODEL")
        if is_offline(spec):
            raise ConfigError(f"{where}: {agent}={spec!r}: per-agent models are LLM specs "
                              f"({SPEC_FORMS}); the offline agents go with llm: offline")
        parse_spec(spec)
        out[agent.strip()] = spec.strip()
    return out


def set_agent_models(routes: dict[str, str] | None) -> None:
    """Per-agent models from a build config's ``llm_agents`` key, for every client made from now
    on in this process (they override ``$BARGEIN_LLM_AGENTS`` agent by agent); None clears them."""
    global _CONFIGURED_AGENTS
    _CONFIGURED_AGENTS = check_agent_models(dict(routes or {}))


def agent_models() -> dict[str, str]:
    """Per-agent models: ``$BARGEIN_LLM_AGENTS``
    (``"verifier=openai:gpt-4o,judge_repair=anthropic:claude-3-5-haiku-latest"``), then a build
    config's ``llm_agents`` (:func:`set_agent_models`) over it; an agent not named uses the
    stage's ``--llm``. A malformed entry or spec is a ConfigError."""
    return {**_env_agent_models(), **_CONFIGURED_AGENTS}


def _env_agent_models() -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in os.environ.get(AGENTS_ENV, "").split(","))):
        agent, sep, spec = (x.strip() for x in item.partition("="))
        if not sep or not agent or not spec:
            raise ConfigError(f"${AGENTS_ENV}: {item!r} is not AGENT=PROVIDER:MODEL. Fix: e.g. "
                              f"{AGENTS_ENV}='verifier=openai:gpt-4o,baseline=openai:gpt-4o-mini'")
        if is_offline(spec):
            raise ConfigError(f"${AGENTS_ENV}: {agent}={spec!r}: per-agent models are LLM specs "
                              f"({SPEC_FORMS}); the offline agents go with --llm offline")
        parse_spec(spec)
        out[agent] = spec
    return out


def stage_agent_models(spec: str, agents: Iterable[str]) -> dict[str, str]:
    """The per-agent models (:func:`agent_models`) of a stage's ``agents`` that are not the
    stage's own ``spec``: part of the stage's cache key, so changing one agent's model recomputes
    the stages that agent works in and no other. Empty offline (the rule-based agents take no
    models), so keys of stages without routes stay as they were."""
    if is_offline(spec):
        return {}
    routes = agent_models()
    return {a: routes[a] for a in sorted(set(agents)) if a in routes and routes[a] != spec}


def stage_concurrency(spec: str, wanted: int) -> int:
    """How many items an LLM stage keeps in flight: at most twice the calls the provider serves
    at once (its ``concurrency`` setting: a local server's slots, 1 for an in-process model), so
    every slot stays busy while a conversation does its own work between calls, and a server that
    keeps prompt prefixes is not made to juggle more conversations than it can hold."""
    if is_offline(spec):
        return wanted
    name, _ = parse_spec(spec)
    settings = {**env_settings(name), **registry.options("llm", name)}
    slots = resolve_concurrency(name, settings.get("concurrency"), settings.get("base_url"))
    return max(1, min(wanted, 2 * slots))


def resolve_concurrency(name: str, configured: Any, base_url: str | None = None) -> int:
    """Calls in flight for provider ``name``: the ``concurrency`` setting, or with
    ``concurrency="server"`` the slots an OpenAI-compatible server reports (llama.cpp's
    ``--parallel``, read from ``/props``), else the provider's default."""
    if isinstance(configured, int) and configured >= 1:
        return configured
    if configured == "server" and name == "openai":
        from bargein.llm.server import server_slots

        slots = server_slots(base_url)
        if slots:
            return slots
    return DEFAULT_CONCURRENCY.get(name, 8)


def parse_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` → ``("openai", "gpt-4o-mini")``; ConfigError listing valid forms."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigError(f"LLM spec {spec!r} is not valid. Valid forms: {SPEC_FORMS}")
    name, model = (p.strip() for p in spec.split(":", 1))
    name = name.lower()
    if not model or name not in registry.names("llm"):
        raise ConfigError(f"LLM spec {spec!r} is not valid (providers: {', '.join(registry.names('llm'))}). "
                          f"Valid forms: {SPEC_FORMS}")
    return name, model


def _check(key: str, value: Any, ok: bool, want: str) -> None:
    if not ok:
        raise ConfigError(f"get_llm: {key}={value!r} is not valid; it must be {want}")


def get_llm(
    spec: str,
    *,
    workdir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    budget_usd: float | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout_s: float | None = None,
    max_retries: int | None = None,
    structured: str | None = None,
    prices: dict[str, Any] | None = None,
    api_key_env: str | None = None,
    cache: bool = True,
    max_tokens: int | None = None,
    context_tokens: int | str | None = None,
    client: Any = None,
    max_tokens_field: str | None = None,
    http: str | None = None,
    frequency_penalty: float | None = None,
    agents: dict[str, str] | None = None,
    prefix_cache: bool | None = None,
    n_threads: int | None = None,
) -> LLMClient:
    """An :class:`LLMClient` for ``spec``.

    The cache lives in ``cache_dir``, else ``<workdir>/llm_cache``, else
    ``$BARGEIN_CACHE_DIR/llm_cache``; the ledger in ``<workdir>/llm_ledger.json`` (else beside the
    cache). ``budget_usd`` caps this run's priced spend: each call reserves its upper-bound cost
    before it is sent, so calls in flight together never pass the cap.
    ``prices`` adds ``{model: {"input": USD_PER_1M, "output": USD_PER_1M}}`` to the price table.

    Provider settings: ``timeout_s`` per request; ``max_retries`` the SDK's retries (429, 5xx,
    timeouts; Retry-After honoured); ``concurrency`` calls in flight (and ``rpm``/``tpm``; or
    ``"server"``: the slots a llama.cpp server reports, :func:`resolve_concurrency`);
    ``structured``: ``auto`` (the best mode the server accepts: ``json_schema`` → ``json_object``
    → ``prompt`` for OpenAI-compatible servers, forced ``tool`` → ``prompt`` for Anthropic) or
    one mode pinned (``schema``, ``json``, ``prompt``); ``max_tokens`` the default answer limit,
    cut to the context window when it is known: ``context_tokens`` (an int, or ``"server"`` to
    ask an OpenAI-compatible server once; a GGUF's own for ``llamacpp``); ``max_tokens_field``
    (``max_tokens`` | ``max_completion_tokens``; by default chosen from the model name);
    ``client`` the user's own SDK client or a factory of one; ``http`` which of the SDK's HTTP
    clients bargein builds (``auto``: the SDK's aiohttp client where installed, else its httpx
    default; see :func:`bargein.llm.sdkclients.http_client`); ``frequency_penalty`` (-2…2) a
    guard against repetition loops, for OpenAI-compatible servers and ``llamacpp`` (Anthropic's
    API has none); ``prefix_cache`` (``llamacpp``; default on) keeps evaluated prompt prefixes
    so a conversation's next call reads only its new tokens (a llama.cpp server does this
    itself: ``cache_prompt``, on by default in llama.cpp's server, ``--cache true`` for
    llama-cpp-python's); ``n_threads`` (``llamacpp``) the CPU threads the in-process model uses
    (default: the machine's cores, at most 4; on a shared machine set 1, e.g.
    ``BARGEIN_LLM_SETTINGS=llamacpp.n_threads=1``).

    A setting not given here comes from the provider's registry options, which a config or a
    program sets once for every stage and worker process
    (``registry.set_options("llm", "openai", context_tokens=8192, timeout_s=300)``), else from
    ``$BARGEIN_LLM_SETTINGS`` (:func:`env_settings`), else from :data:`SETTING_DEFAULTS`.

    ``agents`` maps agent names (``goal_writer``, ``round_planner``, ``verifier``, ``modifier``,
    ``judge_repair``, ``baseline`` …) to another model spec: that agent's calls go to it (a client
    made on first use with the same workdir, cache, ledger and budget; its provider settings its
    own). By default the map comes from ``$BARGEIN_LLM_AGENTS`` (:func:`agent_models`). The ledger
    records every call under its agent, provider and model.
    """
    if is_offline(spec):
        raise ConfigError(f"{spec!r} is not an LLM provider: check is_offline(spec) and use the "
                          f"rule-based agent. LLM specs: {SPEC_FORMS}")
    name, model = parse_spec(spec)
    given = {"base_url": base_url, "concurrency": concurrency, "rpm": rpm, "tpm": tpm,
             "timeout_s": timeout_s, "max_retries": max_retries, "structured": structured,
             "api_key_env": api_key_env, "max_tokens": max_tokens, "context_tokens": context_tokens,
             "max_tokens_field": max_tokens_field, "http": http, "budget_usd": budget_usd,
             "frequency_penalty": frequency_penalty, "prefix_cache": prefix_cache,
             "n_threads": n_threads}
    configured = {**env_settings(name), **registry.options("llm", name)}
    unknown = sorted(set(configured) - set(given))
    if unknown:
        raise ConfigError(f"LLM settings for {name}: {', '.join(unknown)} not known; valid: "
                          f"{', '.join(sorted(given))}")
    s_ = {k: v if v is not None else configured.get(k, SETTING_DEFAULTS.get(k)) for k, v in given.items()}
    base_url, concurrency, rpm, tpm = s_["base_url"], s_["concurrency"], s_["rpm"], s_["tpm"]
    timeout_s, max_retries, structured = s_["timeout_s"], s_["max_retries"], s_["structured"]
    api_key_env, max_tokens, context_tokens = s_["api_key_env"], s_["max_tokens"], s_["context_tokens"]
    max_tokens_field, http, budget_usd = s_["max_tokens_field"], s_["http"], s_["budget_usd"]
    frequency_penalty, prefix_cache, n_threads = s_["frequency_penalty"], s_["prefix_cache"], s_["n_threads"]
    _check("budget_usd", budget_usd, budget_usd is None or budget_usd >= 0, "a number >= 0 (USD)")
    _check("concurrency", concurrency, concurrency is None or concurrency == "server"
           or (isinstance(concurrency, int) and concurrency >= 1), "an integer >= 1 or 'server'")
    _check("rpm", rpm, rpm is None or rpm > 0, "> 0 requests per minute")
    _check("tpm", tpm, tpm is None or tpm > 0, "> 0 tokens per minute")
    _check("timeout_s", timeout_s, timeout_s > 0, "> 0 seconds")
    _check("max_retries", max_retries, isinstance(max_retries, int) and max_retries >= 0, "an integer >= 0")
    _check("max_tokens", max_tokens, isinstance(max_tokens, int) and max_tokens >= 1, "an integer >= 1")
    _check("context_tokens", context_tokens, context_tokens is None or context_tokens == "server"
           or (isinstance(context_tokens, int) and context_tokens >= 256), "an integer >= 256 or 'server'")
    _check("http", http, http in HTTP_CLIENTS, f"one of {', '.join(HTTP_CLIENTS)}")
    _check("frequency_penalty", frequency_penalty, frequency_penalty is None
           or (isinstance(frequency_penalty, (int, float)) and -2 <= frequency_penalty <= 2), "a number in -2..2")
    _check("n_threads", n_threads, n_threads is None or (isinstance(n_threads, int)
           and not isinstance(n_threads, bool) and n_threads >= 1), "an integer >= 1")
    concurrency = resolve_concurrency(name, concurrency, base_url)
    options: dict[str, Any] = {"base_url": base_url, "timeout_s": timeout_s, "max_retries": max_retries,
                               "structured": structured, "api_key_env": api_key_env,
                               "context_tokens": context_tokens, "max_connections": concurrency,
                               "http": http}
    if client is not None:
        options["client"] = client
    if max_tokens_field is not None:
        options["max_tokens_field"] = max_tokens_field
    if frequency_penalty is not None:
        options["frequency_penalty"] = float(frequency_penalty)
    if n_threads is not None:
        options["n_threads"] = n_threads
    if prefix_cache is not None:
        options["prefix_cache"] = prefix_cache in (True, 1, "1", "true", "True", "yes")
    provider = registry.create("llm", name, model=model, **options)
    model_id = getattr(provider, "model_id", provider.model)
    table = PriceTable.load().with_overrides(prices, name)
    if budget_usd is not None and table.lookup(name, model_id) is None:
        raise ConfigError(
            f"budget_usd={budget_usd} cannot be enforced: {name}:{model_id} has no price in "
            f"bargein/pricing/prices.yaml (version {table.version}, {table.date}). Fix: pass "
            f"prices={{'{model_id}': {{'input': USD_PER_1M, 'output': USD_PER_1M}}}} or drop the budget.")
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir(workdir)
    ledger_path = Path(workdir) / "llm_ledger.json" if workdir is not None else root.parent / "llm_ledger.json"
    client_ = LLMClient(provider, spec=f"{name}:{model}", ledger=ledger_for(ledger_path), prices=table,
                        budget_usd=budget_usd, limits=Limits(concurrency, rpm, tpm),
                        cache=ResponseCache(root) if cache else None,
                        max_retries=max_retries, default_max_tokens=max_tokens,
                        context_tokens=context_tokens)
    routes = agent_models() if agents is None else dict(agents)
    for agent, other in routes.items():
        if other != spec and other != client_.spec:
            client_.route(agent, lambda other=other: get_llm(other, workdir=workdir, cache_dir=cache_dir,
                                                             budget_usd=budget_usd, cache=cache, agents={}))
    return client_
