"""Stable hashing and per-item seeds.

Python's ``hash()`` is salted per process, so every seed in bargein comes from SHA-256 of a
canonical JSON encoding instead: the same (seed, stage, item id) gives the same RNG in any
process, on any machine.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace; pydantic models are dumped in JSON mode."""
    return json.dumps(_plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(_plain(v) for v in obj)
    if isinstance(obj, bytes):
        return hashlib.sha256(obj).hexdigest()
    return obj


def stable_hash(*parts: Any) -> str:
    """Hex SHA-256 of the canonical JSON of ``parts``."""
    return hashlib.sha256(canonical_json(list(parts)).encode("utf-8")).hexdigest()


def stable_int(*parts: Any, bits: int = 63) -> int:
    return int(stable_hash(*parts)[:16], 16) & ((1 << bits) - 1)


def item_seed(seed: int, stage: str, item_id: str) -> int:
    return stable_int("item-seed", seed, stage, item_id)


def item_rng(seed: int, stage: str, item_id: str) -> random.Random:
    return random.Random(item_seed(seed, stage, item_id))


def item_np_rng(seed: int, stage: str, item_id: str) -> np.random.Generator:
    return np.random.default_rng(item_seed(seed, stage, item_id))


def file_sha256(path: Any, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()
