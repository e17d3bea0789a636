"""Release manifests, failures, and scores."""

from __future__ import annotations

from typing import Any

from bargein.records.base import Record


class FileEntry(Record):
    id_prefix = "file"
    path: str
    sha256: str
    bytes: int


class ReleaseManifest(Record):
    id_prefix = "rel"
    name: str
    version: str                                # SemVer
    configs: dict[str, int]                     # config name -> rows
    files: tuple[FileEntry, ...]
    provenance: dict[str, Any] = {}


class Failure(Record):
    """An item that a stage could not produce, with its evidence."""

    id_prefix = "fail"
    stage: str
    item_id: str
    reason: str
    error_type: str = ""
    evidence: Any = None


class ItemScore(Record):
    id_prefix = "score"
    item_id: str
    metric: str
    value: float
    epoch: int = 0
    group: dict[str, str] = {}                  # e.g. {"type": "filler"}
    detail: dict[str, Any] = {}


class Aggregate(Record):
    id_prefix = "agg"
    metric: str
    group: dict[str, str] = {}
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int


class ScoreReport(Record):
    id_prefix = "report"
    scorer: str
    release: str
    aggregates: tuple[Aggregate, ...]
    config: dict[str, Any] = {}
