"""``llamacpp:/path/model.gguf`` — a GGUF model in-process through llama-cpp-python.

Optional: ``pip install 'bargein[llamacpp]'``. Structured output is grammar-constrained
(``response_format={"type": "json_object", "schema": ...}``). One call at a time (a llama
context is not thread-safe); calls run in a worker thread so the event loop stays free.

Prefix reuse (``prefix_cache=True``, the default): a call whose prompt starts like an earlier
one evaluates only the new tokens. llama.cpp keeps the last prompt's state; a RAM cache of
states (``LlamaRAMCache``, ``cache_bytes``) keeps one per prefix, so the assistant's, the
caller's and the planner's conversations, interleaved, each find their own. Agents send their
stable part first (system message and KB, then the call as turns) so the prefix is long.
``prefix_cache=False`` re-reads every prompt from its first token (for measuring the gain).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from bargein.errors import ConfigError, missing_extra
from bargein.llm.base import MODE_PROMPT, MODE_SCHEMA, SEED, Completion, ProviderRequestError, Usage

DEFAULT_N_CTX = 4096
DEFAULT_CACHE_BYTES = 2 << 30


def _bounded_cache(llama_cpp: Any, capacity_bytes: int) -> Any:
    """A RAM cache of prompt states that counts all the memory a state holds.

    llama-cpp-python's ``LlamaRAMCache`` counts only the KV bytes of a state, but each state also
    keeps a copy of the logits buffer (batch x vocabulary floats: ~300 MB for Qwen2.5's 152k
    vocabulary), so a 2 GB cache grew past 20 GB here and the process was killed for memory."""

    class BoundedRAMCache(llama_cpp.LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(int(st.llama_state_size) + int(getattr(st.scores, "nbytes", 0))
                       + int(getattr(st.input_ids, "nbytes", 0)) for st in self.cache_state.values())

    return BoundedRAMCache(capacity_bytes=capacity_bytes)


class LlamaCppProvider:
    name = "llamacpp"

    def __init__(self, model: str, *, context_tokens: int | str | None = None, n_threads: int | None = None,
                 structured: str = "auto", frequency_penalty: float | None = None,
                 prefix_cache: bool | None = None, cache_bytes: int | None = None, **_ignored: Any):
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise missing_extra("llama_cpp", "llamacpp", "the llamacpp LLM provider") from None
        path = Path(model).expanduser()
        if not path.is_file():
            raise ConfigError(f"llamacpp:{model}: no GGUF file at {str(path)!r}. "
                              "Fix: give the path of a .gguf model, e.g. llamacpp:/models/qwen.gguf")
        self.model = str(path)
        self.model_id = path.name          # what the cache and the ledger key on
        if structured not in ("auto", "schema", "json_schema", "prompt"):
            raise ConfigError(f"llamacpp: structured={structured!r}; valid: auto, schema, prompt")
        self.n_ctx = context_tokens if isinstance(context_tokens, int) else DEFAULT_N_CTX
        self.context_tokens = self.n_ctx          # the client sizes max_tokens to it
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self.capabilities = frozenset({SEED})
        # a JSON-schema grammar constrains decoding; "prompt" leaves the model free
        self.structured_modes = (MODE_PROMPT,) if structured == "prompt" else (MODE_SCHEMA,)
        self.server_key = (self.name, self.model)
        self.sampling = {} if frequency_penalty is None else {"frequency_penalty": frequency_penalty}
        self.prefix_cache = True if prefix_cache is None else bool(prefix_cache)
        self.cache_bytes = cache_bytes or DEFAULT_CACHE_BYTES
        self._llm: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaCppProvider(model={self.model!r})"

    def _load(self) -> Any:
        if self._llm is None:
            import llama_cpp

            self._llm = llama_cpp.Llama(model_path=self.model, n_ctx=self.n_ctx,
                                        n_threads=self.n_threads, verbose=False)
            if self.prefix_cache:
                self._llm.set_cache(_bounded_cache(llama_cpp, self.cache_bytes))
        return self._llm

    def _complete_sync(self, messages: list[dict[str, str]], kwargs: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            try:
                llm = self._load()
                if not self.prefix_cache:
                    llm.reset()            # forget the last prompt: evaluate this one in full
                return llm.create_chat_completion(messages=messages, **kwargs)
            except ValueError as e:        # e.g. the prompt exceeds n_ctx
                raise ProviderRequestError(f"llamacpp: {e}") from None

    async def complete(self, messages: list[dict[str, str]], *, temperature: float | None,
                       max_tokens: int, json_schema: dict[str, Any] | None = None,
                       seed: int | None = None, mode: str | None = None, probe: bool = False) -> Completion:
        kwargs: dict[str, Any] = {"max_tokens": max_tokens, **self.sampling}
        if temperature is not None:
            kwargs["temperature"] = temperature
        if seed is not None:
            kwargs["seed"] = seed
        if json_schema is not None and (mode or self.structured_modes[0]) == MODE_SCHEMA:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        data = await asyncio.to_thread(self._complete_sync, messages, kwargs)
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        return Completion(text=choice["message"].get("content") or "",
                          usage=Usage(int(usage.get("prompt_tokens") or 0),
                                      int(usage.get("completion_tokens") or 0)),
                          model=self.model_id, provider=self.name,
                          finish_reason=choice.get("finish_reason") or "stop")

    async def aclose(self) -> None:
        return None


def create(model: str, **kwargs: Any) -> LlamaCppProvider:
    return LlamaCppProvider(model, **kwargs)
