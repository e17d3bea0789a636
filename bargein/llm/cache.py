"""The LLM response cache: answers in bargein's one content-addressed cache
(:class:`bargein.cache.ContentCache`), one atomic JSON file per answer.

The key hashes what the answer depends on: provider, model, the rendered messages, the sampling
parameters (the structured-output mode among them), the JSON schema and the sample index. The
base URL and the API key are not part of it (the same model behind another URL gives the same
cache entry) and are never stored.

    <cache_dir>/ab/ab12…ef.json   {"v": 1, "text": …, "usage": {…}, "finish_reason": …, …}

Answers are written behind (``ContentCache(write_behind=True)``): a call inside the event loop
only queues its answer, and the process's cache writer thread writes the file, so the loop
never waits on the file system (an answer is ~1 ms of file-system calls on a busy disk, as much
as the SDK's whole request path). This process reads a queued answer from memory;
:meth:`ResponseCache.flush` (and ``LLMClient.flush``/``aclose``, and interpreter exit) wait
until all are on disk.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from bargein.cache import ContentCache, cache_key as content_key
from bargein.llm.base import Completion, Usage

log = logging.getLogger("bargein.llm")
CACHE_VERSION = 1


def cache_key(*, provider: str, model: str, messages: list[dict[str, str]], params: dict[str, Any],
              json_schema: dict[str, Any] | None, sample: int) -> str:
    """The content key (:func:`bargein.cache.cache_key`) of what the answer depends on."""
    return content_key("llm-response", CACHE_VERSION, provider, model, messages, params, json_schema, sample)


def default_cache_dir(workdir: str | os.PathLike | None) -> Path:
    """``<workdir>/llm_cache``; without a workdir ``$BARGEIN_CACHE_DIR/llm_cache`` (or ~/.cache)."""
    if workdir is not None:
        return Path(workdir) / "llm_cache"
    root = os.environ.get("BARGEIN_CACHE_DIR") or Path.home() / ".cache" / "bargein"
    return Path(root) / "llm_cache"


class _Listing:
    """What one process knows of a cache folder: the ``ab/`` folders and the names in each,
    listed once on first use and kept up to date by this process's own writes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.folders: set[str] | None = None
        self.names: dict[str, set[str]] = {}


_LISTINGS: dict[str, _Listing] = {}
_LISTINGS_LOCK = threading.Lock()


def _listing(root: Path) -> _Listing:
    key = os.path.abspath(root)
    with _LISTINGS_LOCK:
        state = _LISTINGS.get(key)
        if state is None:
            state = _LISTINGS[key] = _Listing()
        return state


class ResponseCache:
    """Answers in a :class:`~bargein.cache.ContentCache` under ``root``. Each ``ab/`` folder is
    listed once per process, on first use, so a miss costs no file-system call; every instance
    over the same folder in this process shares that listing and sees this process's own
    answers at once, written or still queued (an entry another process writes after the listing
    is not seen: at worst one duplicate request)."""

    def __init__(self, root: str | os.PathLike):
        self.store = ContentCache(root, suffix=".json", write_behind=True)
        self.root = self.store.root
        self._state = _listing(self.root)

    def path(self, key: str) -> Path:
        return self.store.path(key)

    def _known(self, key: str) -> bool:
        st, shard = self._state, key[:2]
        with st.lock:
            names = st.names.get(shard)
            if names is None:
                if st.folders is None:
                    try:
                        st.folders = set(os.listdir(self.root))
                    except (FileNotFoundError, NotADirectoryError):
                        st.folders = set()
                # queued first: an entry leaves the queue only once it is on disk
                names = self.store.queued_names(shard)
                if shard in st.folders:
                    try:
                        names.update(os.listdir(self.root / shard))
                    except (FileNotFoundError, NotADirectoryError):
                        pass
                st.names[shard] = names
            return f"{key}.json" in names

    def get(self, key: str) -> Completion | None:
        if not self._known(key):
            return None
        data = self.store.get(key)
        if data is None:
            return None
        try:
            d = json.loads(data)
            return Completion(text=d["text"], usage=Usage(**d["usage"]), model=d["model"],
                              provider=d["provider"], finish_reason=d["finish_reason"], cached=True)
        except (ValueError, KeyError, TypeError) as e:
            log.warning("unreadable LLM cache entry %s (%s); asking again", self.path(key), e)
            return None

    def put(self, key: str, c: Completion) -> None:
        """Store an answer (queued; written atomically by the cache writer thread)."""
        data = json.dumps({
            "v": CACHE_VERSION, "text": c.text, "model": c.model, "provider": c.provider,
            "finish_reason": c.finish_reason,
            "usage": {"input_tokens": c.usage.input_tokens, "output_tokens": c.usage.output_tokens},
        }, sort_keys=True, ensure_ascii=False).encode("utf-8")
        st, shard = self._state, key[:2]
        with st.lock:
            self.store.put(key, data)
            if st.folders is not None:
                st.folders.add(shard)
            names = st.names.get(shard)
            if names is not None:
                names.add(f"{key}.json")

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued answer is on disk."""
        return self.store.flush(timeout)
