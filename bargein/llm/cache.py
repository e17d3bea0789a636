"""A content-addressed response cache: one atomic JSON file per LLM answer.

The key hashes what the answer depends on: provider, model, the rendered messages, the sampling
parameters, the JSON schema and the sample index. The base URL and the API key are not part of
it (the same model behind another URL gives the same cache entry) and are never stored.

    <cache_dir>/ab/ab12…ef.json   {"v": 1, "text": …, "usage": {…}, "finish_reason": …, …}
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from bargein.llm.base import Completion, Usage
from bargein.seeding import stable_hash

log = logging.getLogger("bargein.llm")
CACHE_VERSION = 1


def cache_key(*, provider: str, model: str, messages: list[dict[str, str]], params: dict[str, Any],
              json_schema: dict[str, Any] | None, sample: int) -> str:
    return stable_hash("llm-response", CACHE_VERSION, provider, model, messages, params,
                       json_schema, sample)


def default_cache_dir(workdir: str | os.PathLike | None) -> Path:
    """``<workdir>/llm_cache``; without a workdir ``$BARGEIN_CACHE_DIR/llm_cache`` (or ~/.cache)."""
    if workdir is not None:
        return Path(workdir) / "llm_cache"
    root = os.environ.get("BARGEIN_CACHE_DIR") or Path.home() / ".cache" / "bargein"
    return Path(root) / "llm_cache"


class ResponseCache:
    """Files under ``root``. Each ``ab/`` folder is listed once, on first use, so a miss costs no
    file-system call (an entry another process writes after that listing is not seen by this
    instance: at worst one duplicate request)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._listed: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _known(self, key: str) -> bool:
        with self._lock:
            names = self._listed.get(key[:2])
            if names is None:
                try:
                    names = set(os.listdir(self.root / key[:2]))
                except (FileNotFoundError, NotADirectoryError):
                    names = set()
                self._listed[key[:2]] = names
            return f"{key}.json" in names

    def get(self, key: str) -> Completion | None:
        if not self._known(key):
            return None
        p = self.path(key)
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
            return Completion(text=d["text"], usage=Usage(**d["usage"]), model=d["model"],
                              provider=d["provider"], finish_reason=d["finish_reason"], cached=True)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as e:
            log.warning("unreadable LLM cache entry %s (%s); asking again", p, e)
            return None

    def put(self, key: str, c: Completion) -> None:
        """Write atomically: a temp file named by process and thread, renamed into place."""
        data = json.dumps({
            "v": CACHE_VERSION, "text": c.text, "model": c.model, "provider": c.provider,
            "finish_reason": c.finish_reason,
            "usage": {"input_tokens": c.usage.input_tokens, "output_tokens": c.usage.output_tokens},
        }, sort_keys=True, ensure_ascii=False).encode("utf-8")
        name = f"{key}.json"
        folder = self.root / key[:2]
        with self._lock:
            known = self._listed.get(key[:2])
        if known is None or not known and not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, folder / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        with self._lock:
            self._listed.setdefault(key[:2], set()).add(name)
