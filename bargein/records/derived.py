"""Items derived from rendered audio: masked repair items and timing perturbation pairs."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from typing_extensions import TypedDict

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


class MaskMeasures(TypedDict, total=False):
    """Levels and durations measured on a masked item's output audio (a fixed set of keys).

    A validated mapping with extra keys refused (frozen inside the record), so the records and the
    release rows serialise exactly as before. ``mask_rms_dbfs``/``level_error_db`` are absent for a
    silence mask (nothing to level-match).
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    duration_s: float
    fade_ms: float
    level_error_db: float           # worst |mask core RMS - target| over the regions
    mask_rms_dbfs: float            # the mask's steady part (without fades)
    masked_s: float
    masked_share: float
    replaced_rms_dbfs: float        # the speech the mask replaced
    speech_active_rms_dbfs: float   # the active-speech level the mask was matched to


class PairMeasures(TypedDict, total=False):
    """The edit re-measured on a perturbation pair's audio (a fixed set of keys per type).

    ``in_spec`` is 1.0/0.0; the other keys depend on the type::

        late_response            delay_s, gap_s
        early_entry              advance_s, overlap_s
        hold_instead_of_shift    gap_s, removed_turn_s, listener_in_gap, residue_over_floor_db
        shift_instead_of_hold    hold_gap_s, inserted_turn_s
        excessive_backchannel    count, min_spacing_s
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    in_spec: float
    delay_s: float
    gap_s: float
    advance_s: float
    overlap_s: float
    removed_turn_s: float
    listener_in_gap: float
    residue_over_floor_db: float
    hold_gap_s: float
    inserted_turn_s: float
    count: float
    min_spacing_s: float


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
    measured: MaskMeasures = {}                 # levels and durations measured on the output


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
    measured: PairMeasures = {}                 # the edit re-measured on the output
