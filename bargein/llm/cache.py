"""A content-addressed response cache: one atomic JSON file per LLM answer.

The key hashes what the answer depends on: provider, model, the rendered messages, the sampling
parameters, the JSON schema and the sample index. The base URL and the API key are not part of
it (the same model behind another URL gives the same cache entry) and are never stored.

    <cache_dir>/ab/ab12…ef.json   {"v": 1, "text": …, "usage": {…}, "finish_reason": …, …}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from bargein.llm.base import Completion, Usage
from bargein.llm.bgwrite import WRITER

log = logging.getLogger("bargein.llm")
CACHE_VERSION = 1


def cache_key(*, provider: str, model: str, messages: list[dict[str, str]], params: dict[str, Any],
              json_schema: dict[str, Any] | None, sample: int) -> str:
    """SHA-256 of the canonical JSON of what the answer depends on (plain JSON data only, so
    ``json.dumps`` gives the same bytes as :func:`bargein.seeding.canonical_json`, faster)."""
    blob = json.dumps(["llm-response", CACHE_VERSION, provider, model, messages, params,
                       json_schema, sample], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def default_cache_dir(workdir: str | os.PathLike | None) -> Path:
    """``<workdir>/llm_cache``; without a workdir ``$BARGEIN_CACHE_DIR/llm_cache`` (or ~/.cache)."""
    if workdir is not None:
        return Path(workdir) / "llm_cache"
    root = os.environ.get("BARGEIN_CACHE_DIR") or Path.home() / ".cache" / "bargein"
    return Path(root) / "llm_cache"


class ResponseCache:
    """Files under ``root``. Each ``ab/`` folder is listed once, on first use, so a miss costs no
    file-system call (an entry another process writes after that listing is not seen by this
    instance: at worst one duplicate request). Writes go through the background writer."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._listed: dict[str, set[str]] = {}
        self._folders: set[str] | None = None        # which ab/ folders exist (listed once)
        self._lock = threading.Lock()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _known(self, key: str) -> bool:
        with self._lock:
            names = self._listed.get(key[:2])
            if names is None:
                folder = self.root / key[:2]
                if self._folders is None:
                    try:
                        self._folders = set(os.listdir(self.root))
                    except (FileNotFoundError, NotADirectoryError):
                        self._folders = set()
                names = set()
                if key[:2] in self._folders:
                    try:
                        names = set(os.listdir(folder))
                    except (FileNotFoundError, NotADirectoryError):
                        pass
                self._listed[key[:2]] = names | WRITER.pending_names(folder)
            return f"{key}.json" in self._listed[key[:2]]

    def get(self, key: str) -> Completion | None:
        p = self.path(key)
        data = WRITER.pending(p)
        if data is None and not self._known(key):
            return None
        try:
            d = json.loads(data if data is not None else p.read_bytes())
            return Completion(text=d["text"], usage=Usage(**d["usage"]), model=d["model"],
                              provider=d["provider"], finish_reason=d["finish_reason"], cached=True)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as e:
            log.warning("unreadable LLM cache entry %s (%s); asking again", p, e)
            return None

    def put(self, key: str, c: Completion) -> None:
        """Store an answer; the file is written atomically by the background writer."""
        data = json.dumps({
            "v": CACHE_VERSION, "text": c.text, "model": c.model, "provider": c.provider,
            "finish_reason": c.finish_reason,
            "usage": {"input_tokens": c.usage.input_tokens, "output_tokens": c.usage.output_tokens},
        }, sort_keys=True, ensure_ascii=False).encode("utf-8")
        WRITER.submit(self.path(key), data)
        with self._lock:
            names = self._listed.get(key[:2])
            if names is not None:
                names.add(f"{key}.json")
