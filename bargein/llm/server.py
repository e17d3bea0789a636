"""What a local model server says about itself: how many requests it serves at once.

llama.cpp's server (``llama-server --parallel N``) answers ``GET /props`` with ``total_slots``;
a stage then keeps that many calls in flight (``concurrency="server"``). Servers without the
route (vLLM, Ollama, llama-cpp-python's server) give None and the provider's default applies.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from functools import lru_cache


def server_root(base_url: str | None) -> str | None:
    """``http://host:port/v1`` -> ``http://host:port`` (where llama.cpp serves ``/props``)."""
    url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").strip().rstrip("/")
    if not url:
        return None
    return url[: -len("/v1")] if url.endswith("/v1") else url


@lru_cache(maxsize=32)
def _slots(root: str, timeout_s: float) -> int | None:
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=timeout_s) as r:   # noqa: S310
            data = json.loads(r.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    n = data.get("total_slots") if isinstance(data, dict) else None
    return n if isinstance(n, int) and n >= 1 else None


def server_slots(base_url: str | None = None, timeout_s: float = 5.0) -> int | None:
    """The server's parallel slots (llama.cpp ``/props`` ``total_slots``), or None when the
    server does not say (asked once per server and process)."""
    root = server_root(base_url)
    return _slots(root, timeout_s) if root else None
