"""Release manifests, failures, and scores."""

from __future__ import annotations

import json
from typing import Any, Union

from pydantic import ConfigDict, field_validator
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


class TokenUsage(TypedDict):
    """Tokens a call used, as the provider counted them."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    input_tokens: int
    output_tokens: int


class Attempt(TypedDict, total=False):
    """One try that gave no usable answer. The LLM client writes ``raw``/``errors``/
    ``finish_reason``/``usage`` (a reply that failed its schema) or ``error``/``details`` (a call
    that ended in an error); agents that check answers themselves write ``attempt``, ``answer``
    and ``errors`` or ``problems`` (and the user simulator ``heard``/``interjection``). Further
    keys are kept as JSON."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    attempt: int                    # the try's number
    raw: str                        # the model's reply text
    answer: JSONValue               # a parsed answer that failed the agent's checks
    errors: tuple[str, ...]         # what was wrong with it
    problems: tuple[str, ...]
    finish_reason: str
    usage: TokenUsage
    error: str                      # the error that ended the call
    details: "FailureEvidence"      # that error's own evidence
    heard: str
    interjection: str


class Round(TypedDict, total=False):
    """A conversation round whose plan broke (``rounds`` of a failed conversation)."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    round: int
    replan: int
    reason: str
    evidence: "FailureEvidence"


class FailureEvidence(TypedDict, total=False):
    """Why an item failed, as the stage that failed it says.

    The keys bargein's own producers write are typed here: the runner's ``traceback`` (an
    exception without evidence), the LLM client's (``agent`` … ``context_tokens``), a
    conversation's broken ``rounds``. A stage's own keys (``violations``, ``placeholders``,
    ``item`` …: stages are plugins, so the set is open) are kept as further JSON values. Inside
    a :class:`Failure` every mapping is frozen and every list a tuple; keys are in sorted order,
    as the runner has always written them, so failures files and content ids are unchanged.
    """

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    traceback: tuple[str, ...]      # the last frames, when the exception carried no evidence
    agent: str
    schema: str                     # the structured output's schema name
    provider: str
    model: str
    sample: int
    attempts: Union[int, tuple[Attempt, ...]]   # a count (transport errors) or each try
    errors: tuple[str, ...]
    usage: TokenUsage
    probes: tuple[str, ...]         # structured-output modes the server refused, and why
    prompt_tokens_estimate: int
    context_tokens: int
    scenario: str
    rounds: tuple[Round, ...]


def _sorted_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_json(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_sorted_json(v) for v in value]
    return value


class Failure(Record):
    """An item that a stage could not produce, with its evidence: a :class:`FailureEvidence`
    (a JSON array when a stage gives a list), or text when the stage's evidence was not JSON
    (its ``repr``)."""

    id_prefix = "fail"
    stage: str
    item_id: str
    reason: str
    error_type: str = ""
    evidence: Union[FailureEvidence, tuple[JSONValue, ...], str, None] = None

    @field_validator("evidence", mode="after")
    @classmethod
    def _json_in_key_order(cls, v: Any) -> Any:
        """Evidence is JSON (extra keys included), its keys sorted at every level."""
        if not isinstance(v, dict):
            return v
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"failure evidence must be JSON ({e})") from None
        return _sorted_json(v)


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
