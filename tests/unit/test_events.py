"""Event detection: mutual silences, VAP shift/hold regions, backchannels."""

from __future__ import annotations

import pytest

from bargein.audio.events import (
    backchannels_from_records, backchannels_from_vad, detect_events, detect_events_audio,
    is_backchannel_text, mutual_silences, shift_hold_regions,
)
from bargein.audio.vad import get_vad
from doubles.synthetic_audio import burst_audio
from bargein.records.audio import Segment, WordTiming

# A: 0.5-3.0, hold pause, 3.6-6.0 | B: 6.4-9.0 (shift) | A: 9.1-9.6 (too short a context)
# then B again 11.0-13.0 (A's 0.5 s turn before the silence -> not a clean 1 s context)
TIMELINE = [[(0.5, 3.0), (3.6, 6.0), (9.1, 9.6)], [(6.4, 9.0), (11.0, 13.0)]]


def test_mutual_silences_include_edges():
    sil = mutual_silences(TIMELINE, 14.0)
    assert sil[0] == (0.0, 0.5) and sil[-1] == (13.0, 14.0)
    assert (3.0, 3.6) in sil and (6.0, 6.4) in sil and (9.0, 9.1) in sil
    assert mutual_silences(TIMELINE, 14.0, min_s=0.7) == [(9.6, 11.0), (13.0, 14.0)]


def test_shift_and_hold_by_the_vap_criterion():
    shifts, holds = shift_hold_regions(TIMELINE, 14.0)
    assert [(h.start_s, h.end_s, h.speaker_before) for h in holds] == [(3.0, 3.6, 0)]
    assert [(s.start_s, s.end_s, s.speaker_before, s.speaker_after) for s in shifts] == \
        [(6.0, 6.4, 0, 1), (9.0, 9.1, 1, 0)]
    # 9.6-11.0: in the second before 9.6 both speak (B until 9.0, A from 9.1) -> not clean
    assert all(r.start_s != 9.6 for r in shifts + holds)


def test_overlap_is_not_a_region():
    shifts, holds = shift_hold_regions([[(0.0, 3.0)], [(2.5, 6.0)]], 8.0)
    assert shifts == [] and holds == []


def test_vad_backchannels_are_short_and_inside_the_other_turn():
    segs = [[(0.5, 6.0), (6.2, 9.0)], [(2.0, 2.4), (6.05, 6.3), (9.5, 11.0), (12.0, 12.3)]]
    bcs = backchannels_from_vad(segs)
    assert [(b.channel, b.start_s) for b in bcs] == [(1, 2.0), (1, 6.05)]


def test_transcript_backchannels_use_word_times():
    assert is_backchannel_text("Mm-hmm.") and is_backchannel_text("oh really?")
    assert is_backchannel_text("I see") and not is_backchannel_text("yeah I think so")
    w = (WordTiming(word="uh-huh", start_s=2.10, end_s=2.45),)
    segs = [Segment(message_index=0, channel=0, start_s=0.0, end_s=5.0, text="A long turn here"),
            Segment(message_index=1, channel=1, start_s=2.05, end_s=2.5, text="Uh-huh.", words=w),
            Segment(message_index=2, channel=1, start_s=6.0, end_s=6.3, text="hmm", kind="backchannel")]
    bcs = backchannels_from_records(segs)
    assert [(b.start_s, b.end_s, b.source, b.text) for b in bcs] == [
        (pytest.approx(2.08), pytest.approx(2.47), "words", "uh huh"),       # lexicon spelling
        (6.0, 6.3, "kind", "hmm")]
    ev = detect_events([[(0.0, 5.0)], [(2.05, 2.5), (6.0, 6.3)]], 8.0, segs)
    assert len(ev.backchannels) == 2 and ev.backchannels[0].source == "words"


def test_interruption_openings_and_long_turns_are_never_backchannels():
    """Issue 14: the "Wait," of a cut interruption is not a backchannel even when marked short,
    nor is a backchannel-kind segment longer than 1 s; with a transcript the duration heuristic
    is not used at all."""
    segs = [Segment(message_index=0, channel=0, start_s=0.0, end_s=8.0, text="A long turn here"),
            Segment(message_index=1, channel=1, start_s=2.0, end_s=2.4, text="Wait,", kind="backchannel"),
            Segment(message_index=2, channel=1, start_s=3.0, end_s=3.5, text="Hold on"),
            Segment(message_index=3, channel=1, start_s=5.0, end_s=6.4, text="yeah", kind="backchannel"),
            Segment(message_index=4, channel=1, start_s=7.0, end_s=7.3, text="right")]
    assert [b.text for b in backchannels_from_records(segs)] == ["right"]
    ev = detect_events([[(0.0, 8.0)], [(2.0, 2.4), (3.0, 3.5), (5.0, 6.4), (7.0, 7.3)]], 9.0, segs)
    assert [b.start_s for b in ev.backchannels] == [7.0]


def test_detect_events_on_audio():
    x = burst_audio(TIMELINE, 14.0, 16000, seed=1)
    ev = detect_events_audio(x, 16000, get_vad("energy"))
    assert len(ev.segments[0]) == 3 and len(ev.segments[1]) == 2
    assert [h.speaker_before for h in ev.holds] == [0]
    assert abs(ev.holds[0].start_s - 3.04) < 0.03 and abs(ev.holds[0].end_s - 3.56) < 0.03
    assert [(s.speaker_before, s.speaker_after) for s in ev.shifts][:1] == [(0, 1)]
