"""Release manifests, failures, and scores."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict
from typing_extensions import TypedDict

from bargein.records.base import JSONValue, Record


class FileEntry(Record):
    id_prefix = "file"
    path: str
    sha256: str
    bytes: int


class StageDescription(TypedDict):
    """One stage of the build's DAG as the provenance records it (``bargein.pipeline.Plan.describe``)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    stage: str
    inputs: tuple[str, ...]         # record type names read
    outputs: tuple[str, ...]        # record type names written
    after: tuple[str, ...]          # the stages it runs after
    backend: dict[str, JSONValue]   # its serialisable backend config


class Provenance(TypedDict, total=False):
    """How a release was made. The keys bargein writes are typed here; a user's own additions
    (``bargein release build --provenance FILE``: models, voices, ...) are kept as further JSON
    keys, so the set is open beyond these."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    bargein_version: str
    git_commit: str                 # sha, "+dirty" when the checkout had changes
    pyarrow_version: str
    datasets_version: str
    prompts: dict[str, str]         # prompt name -> sha256 of its template
    prompt_sha256: dict[str, str]   # prompt name -> short sha256 (bargein build)
    seed: int
    llm: str                        # "offline" or the LLM spec
    agents: str                     # who generated the conversations, in words
    llm_agents: dict[str, str]      # agent -> model, when routed per agent
    voices: dict[str, str]          # role -> voice id
    config: dict[str, JSONValue]    # the build config as recorded (BuildConfig.provenance())
    stage_failures: dict[str, int]  # runner stage -> failed items
    stages: tuple[StageDescription, ...]
    stats: dict[str, JSONValue]     # the release's quality report (card and stats.json)
    perturbation_protocol: str      # which TurnNat protocol made the timing pairs
    profile: str                    # the column profile, when not bargein's own


class ReleaseManifest(Record):
    id_prefix = "rel"
    name: str
    version: str                                # SemVer
    configs: dict[str, int]                     # config name -> rows
    files: tuple[FileEntry, ...]
    provenance: Provenance = {}


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
    # the scorer's per-item evidence (judgments per epoch, NLLs, ...): a JSON map whose keys each
    # scorer defines (scorers are plugins, so the set is open); values are JSON, frozen
    detail: dict[str, JSONValue] = {}


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
    # the scorer's settings and run figures (judge, epochs, protocol, ...): keys per scorer, open
    # for the same reason as ItemScore.detail; values are JSON, frozen
    config: dict[str, JSONValue] = {}
