"""Reading a release folder: rows of a config (pyarrow, streamed), ``datasets`` loading with
audio left as bytes, and audio cells decoded by soundfile — no torch anywhere.

    for row in iter_rows(release, "eval_items", columns=["item_id", "type"]): ...
    ds = load_config(release, "ihbench", "test")       # datasets.Dataset, Audio(decode=False)
    samples, sr = decode_audio(ds[0]["user_turn_0_audio"])
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from bargein.errors import AudioError, ReleaseError


def config_files(release: Path, config: str, split: str) -> list[Path]:
    files = sorted((Path(release) / config).glob(f"{split}-*.parquet"))
    if not files:
        have = sorted(p.name for p in Path(release).iterdir() if p.is_dir() and
                      any(p.glob("*.parquet"))) if Path(release).is_dir() else []
        raise ReleaseError(f"release {release} has no {config!r} config with a {split!r} split "
                           f"(configs present: {have}). Fix: rebuild the release with that "
                           "config's source, or pick another config.")
    return files


def splits(release: Path, config: str) -> list[str]:
    names = {re.sub(r"-\d{5}-of-\d{5}$", "", p.stem) for p in (Path(release) / config).glob("*.parquet")}
    return sorted(names, key=lambda s: (s != "train", s))


def iter_rows(release: Path, config: str, split: str = "test",
              columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Rows as dicts, one row group at a time (memory stays flat)."""
    for path in config_files(release, config, split):
        pf = pq.ParquetFile(path)
        for g in range(pf.num_row_groups):
            yield from pf.read_row_group(g, columns=columns).to_pylist()


def load_config(release: str | Path, config: str, split: str | None = None):
    """``datasets.load_dataset`` on a local release folder; audio columns stay as bytes."""
    import datasets
    from datasets import Audio

    release = Path(release)
    if not (release / "README.md").is_file():
        raise ReleaseError(f"{release} has no README.md (dataset card). Fix: pass a release folder.")
    ds = datasets.load_dataset(str(release), config, split=split, cache_dir=_cache_dir(release))

    def _raw(d):
        for name, feat in d.features.items():
            if isinstance(feat, Audio):
                d = d.cast_column(name, Audio(decode=False))
        return d

    if isinstance(ds, datasets.DatasetDict):
        return datasets.DatasetDict({k: _raw(v) for k, v in ds.items()})
    return _raw(ds)


def _cache_dir(release: Path) -> str | None:
    """A datasets cache keyed by the release's content (its manifest), not by its path: a
    release rebuilt in place (same path, new rows) never reads the old version's Arrow cache."""
    import hashlib

    import datasets

    manifest = release / "manifest.json"
    if not manifest.is_file():
        return None
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()[:16]
    return str(Path(datasets.config.HF_DATASETS_CACHE) / "bargein-releases" / digest)


def decode_audio(cell: dict | None) -> tuple[np.ndarray, int]:
    """(float32 samples (n,) or (n, channels), sample rate) from an ``Audio(decode=False)`` cell."""
    import soundfile as sf

    if not cell or not cell.get("bytes"):
        raise AudioError("empty audio cell (no bytes). Fix: this row has no audio for the column.")
    try:
        data, sr = sf.read(io.BytesIO(cell["bytes"]), dtype="float32")
    except Exception as e:  # noqa: BLE001 - soundfile raises several types
        raise AudioError(f"cannot decode audio {cell.get('path')!r}: {e}") from e
    return data, sr
