"""Items derived from rendered audio: masked repair items and timing perturbation pairs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bargein.records.audio import WordTiming
from bargein.records.base import Record
from bargein.records.plan import Turn

MaskCondition = Literal["answerable", "unanswerable"]
MaskSignal = Literal["white_noise", "silence", "music"]
PerturbationType = Literal[
    "late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold",
    "excessive_backchannel",
]
PERTURBATION_TYPES: tuple[str, ...] = (
    "late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold",
    "excessive_backchannel",
)


class MaskSpan(Record):
    id_prefix = "span"
    word_start: int                             # index of first masked word
    word_end: int                               # exclusive
    start_s: float                              # masked region incl. window expansion
    end_s: float
    text: str


class MaskedItem(Record):
    id_prefix = "mask"
    source_id: str                              # rendered dialogue / QA example id
    source_kind: Literal["conversation", "qa"] = "conversation"
    message_index: int | None = None
    audio_path: str                             # mono masked utterance (relative path)
    original_audio_path: str | None = None
    sample_rate: int = 16000
    transcript: str
    words: tuple[WordTiming, ...]
    spans: tuple[MaskSpan, ...]
    condition: MaskCondition
    signal: MaskSignal
    window_ms: int = 0
    level: str = "rms_matched"                  # or "snr:<dB>"
    question: str | None = None
    answer: str | None = None                   # the value the span hid (unanswerable) / answer
    slot: str | None = None                     # e.g. "account_number"
    expected_behaviour: str = ""                # "answer" or "slot-aware repair asking for ..."
    context: tuple[Turn, ...] = ()              # chat history before the masked turn
    masked_transcript: str | None = None        # transcript with masked words as "[inaudible]"
    measured: dict[str, float] = {}             # levels and durations measured on the output


class Edit(Record):
    id_prefix = "edit"
    op: Literal["shift", "insert", "remove", "insert_silence", "remove_silence"]
    channel: int
    at_s: float                                 # position in the perturbed clip
    duration_s: float
    source_start_s: float | None = None         # where inserted/moved audio came from
    note: str = ""


class PerturbationPair(Record):
    id_prefix = "pert"
    source_id: str
    type: PerturbationType
    natural_path: str
    perturbed_path: str
    sample_rate: int = 16000
    crop_start_s: float
    crop_end_s: float
    edits: tuple[Edit, ...] = Field(min_length=1)
    measured: dict[str, float] = {}             # re-measured edit size etc.
