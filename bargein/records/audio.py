"""Rendered audio records. Channel 0 = user, channel 1 = assistant, everywhere.

::

    ch1 assistant |--"Your claim needs three documents: a photo"--X          stop_s
    ch0 user                                  |--"Actually it was my work address"--|
                                     cut_s ---^      overlap_ms = stop_s - cut_s
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bargein.records.base import Record
from bargein.records.conversation import Role

Channel = Literal[0, 1]


class WordTiming(Record):
    id_prefix = "w"
    word: str
    start_s: float
    end_s: float
    char_start: int | None = None               # offset of the word in the message text


class Voice(Record):
    id_prefix = "voice"
    engine: str                                 # "piper", "hibari", "espeak", "openai", ...
    name: str                                   # engine-specific voice name
    sex: Literal["female", "male", "unknown"] = "unknown"
    accent: str = "en-us"
    sample_rate: int = 22050


class Segment(Record):
    """One message rendered on one channel of the dialogue timeline."""

    id_prefix = "seg"
    message_index: int
    channel: Channel
    start_s: float
    end_s: float                                # end of audible speech (stop_s if cut)
    text: str                                   # planned text
    heard_text: str | None = None               # words that ended before the cut
    spoken_text: str | None = None              # words that started before the stop
    cut_s: float | None = None                  # where the other speaker cut in
    stop_s: float | None = None                 # where this speaker stopped
    words: tuple[WordTiming, ...] = ()          # absolute times on the timeline
    voice_id: str = ""
    clip_path: str | None = None                # mono clip of this message (relative path)
    kind: Literal["message", "backchannel"] = "message"
    cut_resolution: Literal["as_planned", "onset_moved", "text_updated"] | None = None


class Augmentation(Record):
    id_prefix = "aug"
    noise: Literal["none", "white", "pink", "babble"] = "none"
    snr_db: float | None = None
    telephony: bool = False                     # 8 kHz mu-law round trip
    seed: int = 0
    babble_voices: tuple[str, ...] = ()         # voices the babble was synthesized with


class RenderedDialogue(Record):
    id_prefix = "rd"
    conversation_id: str
    audio_path: str                             # stereo FLAC, relative to the work/release dir
    sample_rate: int = 16000
    duration_s: float
    segments: tuple[Segment, ...]
    # role -> voice id. A map rather than two fields: renderers look voices up by a message's
    # role (``voices[m.role]``); the keys are the closed Role set, checked on validation.
    voices: dict[Role, str] = {}
    augmentation: Augmentation = Field(default_factory=Augmentation)
    frame_labels_path: str | None = None        # .npz with VAP and Talking-Turns labels
    engines: tuple[str, ...] = ()               # engine ids and versions used
    clean_audio_path: str | None = None         # the un-augmented stereo FLAC, when augmented
