"""Streaming Parquet writer: one per (config, split), row group by row group, so memory stays flat.

    w = ConfigWriter(release_dir, "conversations", "test", features_for("conversations"))
    for row in rows:           # dicts whose keys are exactly the features' columns
        w.write(row)
    files = w.close()          # ["conversations/test-00000-of-00001.parquet"]

Bytes are deterministic: fixed row-group size and writer options, no timestamps (Parquet's
``created_by`` is the pyarrow version string, recorded in the release provenance). Shards roll
over at ``max_shard_bytes`` and get their ``-of-NNNNN`` names when the writer closes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features

from bargein.errors import AudioError, ReleaseError

DEFAULT_MAX_SHARD_BYTES = 512 * 1024 * 1024
# explicit options: a new pyarrow default must not change release bytes silently
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd", "compression_level": 3, "use_dictionary": True,
    "write_statistics": True, "version": "2.6", "data_page_size": 1 << 20,
    "write_page_index": False, "store_schema": True,
}


def audio_value(source: str | os.PathLike | bytes | None, name: str | None = None) -> dict | None:
    """An ``Audio`` cell: the file's bytes as they are (no re-encoding) and its file name."""
    if source is None:
        return None
    if isinstance(source, (bytes, bytearray)):
        return {"bytes": bytes(source), "path": name}
    p = Path(source)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise AudioError(f"cannot read audio file {p}: {e}. Fix: re-run the stage that wrote it "
                         "(render / mask / perturb) or pass the right audio root.") from e
    return {"bytes": data, "path": name or p.name}


class ConfigWriter:
    """Writes rows of one (config, split) to ``<config>/<split>-NNNNN-of-MMMMM.parquet``."""

    def __init__(self, release_dir: str | os.PathLike, config: str, split: str,
                 features: Features, *, row_group_size: int,
                 max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES):
        self.release_dir = Path(release_dir)
        self.config, self.split, self.features = config, split, features
        self.schema = features.arrow_schema
        self.columns = list(features)
        self.row_group_size = int(row_group_size)
        self.max_shard_bytes = int(max_shard_bytes)
        self.rows = 0
        self._buffer: list[dict] = []
        self._writer: pq.ParquetWriter | None = None
        self._tmp_paths: list[Path] = []
        self._shard_rows = 0
        (self.release_dir / config).mkdir(parents=True, exist_ok=True)

    def write(self, row: dict[str, Any]) -> None:
        if set(row) != set(self.columns):
            missing = sorted(set(self.columns) - set(row))
            extra = sorted(set(row) - set(self.columns))
            raise ReleaseError(f"config {self.config!r}: row {row.get(self.columns[0])!r} has "
                               f"missing columns {missing} / unknown columns {extra}")
        self._buffer.append(row)
        self.rows += 1
        if len(self._buffer) >= self.row_group_size:
            self._flush()

    def _open(self) -> pq.ParquetWriter:
        path = self.release_dir / self.config / f".{self.split}-{len(self._tmp_paths):05d}.parquet.tmp"
        self._tmp_paths.append(path)
        self._shard_rows = 0
        return pq.ParquetWriter(str(path), self.schema, **PARQUET_OPTIONS)

    def _flush(self) -> None:
        if not self._buffer:
            return
        try:
            table = pa.Table.from_pylist(self._buffer, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ReleaseError(f"config {self.config!r}: rows do not match the features: {e}") from e
        if self._writer is None:
            self._writer = self._open()
        self._writer.write_table(table, row_group_size=self.row_group_size)
        self._shard_rows += len(self._buffer)
        self._buffer.clear()
        if os.path.getsize(self._tmp_paths[-1]) >= self.max_shard_bytes:
            self._writer.close()
            self._writer = None

    def close(self) -> list[str]:
        """Finish every shard and give them their final names; returns release-relative paths."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.rows == 0:
            for p in self._tmp_paths:
                p.unlink(missing_ok=True)
            return []
        n = len(self._tmp_paths)
        out = []
        for i, tmp in enumerate(self._tmp_paths):
            final = tmp.parent / f"{self.split}-{i:05d}-of-{n:05d}.parquet"
            os.replace(tmp, final)
            out.append(final.relative_to(self.release_dir).as_posix())
        return out

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for p in self._tmp_paths:
            p.unlink(missing_ok=True)

    def __enter__(self) -> "ConfigWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
