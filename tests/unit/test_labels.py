"""VAP 256-state targets and Talking-Turns 40 ms labels on hand-made activity."""

from __future__ import annotations

import numpy as np
import pytest

from bargein.audio.labels import (
    activity_from_segments, dialogue_frame_labels, load_frame_labels, save_frame_labels,
    segments_from_activity, talking_turns_labels, tt_label_names, vap_bits, vap_bits_from_index,
    vap_index, vap_targets,
)
from bargein.records.audio import RenderedDialogue, Segment


def _act(n: int, spans0=(), spans1=()) -> np.ndarray:
    a = np.zeros((n, 2), dtype=bool)
    for lo, hi in spans0:
        a[lo:hi, 0] = True
    for lo, hi in spans1:
        a[lo:hi, 1] = True
    return a


def test_activity_uses_frame_centres():
    # 50 Hz: 20 ms frames with centres at 10, 30, 50, 70, 90 ms; segments are half-open
    a = activity_from_segments([[(0.0, 0.05)], [(0.011, 0.031)]], 0.1)
    assert a.shape == (5, 2)
    assert a[:, 0].tolist() == [True, True, False, False, False]
    assert a[:, 1].tolist() == [False, True, False, False, False]
    assert segments_from_activity(_act(10, [(2, 5)], [(0, 10)]), 50) == [[(0.04, 0.1)], [(0.0, 0.2)]]


def test_index_order_is_speaker0_bin0_least_significant():
    bits = np.zeros((2, 4), dtype=bool)
    assert vap_index(bits) == 0
    bits[0, 0] = True
    assert vap_index(bits) == 1
    bits[:] = False
    bits[1, 3] = True
    assert vap_index(bits) == 128
    bits[:] = False
    bits[0, :] = True
    assert vap_index(bits) == 15
    all_idx = np.arange(256)
    assert (vap_index(vap_bits_from_index(all_idx)) == all_idx).all()


def test_bin_edges_and_the_50_percent_rule():
    n = 300
    t = 0
    # bins after frame t: frames 1-10 (0-200 ms), 11-30, 31-60, 61-100
    a = _act(n, spans0=[(1, 6)])                  # 5 of 10 frames of bin 0: >= 50 % -> active
    bits, valid = vap_bits(a)
    assert bits[t, 0].tolist() == [True, False, False, False] and valid[t]
    a = _act(n, spans0=[(1, 5)])                  # 4 of 10: inactive
    assert not vap_bits(a)[0][t, 0, 0]
    a = _act(n, spans1=[(11, 21)])                # 10 of 20 frames of bin 1 -> active
    assert vap_bits(a)[0][t, 1].tolist() == [False, True, False, False]
    a = _act(n, spans1=[(11, 20)])                # 9 of 20 -> inactive
    assert not vap_bits(a)[0][t, 1].any()
    a = _act(n, spans0=[(31, 46)], spans1=[(61, 81)])   # 15/30 and 20/40 -> both active
    b = vap_bits(a)[0][t]
    assert b[0].tolist() == [False, False, True, False]
    assert b[1].tolist() == [False, False, False, True]
    assert vap_targets(a)[t] == (1 << 2) + (1 << 7)
    # frame 0 itself is not part of its own future
    assert vap_targets(_act(n, spans0=[(0, 1)]))[0] == 0


def test_targets_end_with_minus_one_and_track_turns():
    a = _act(400, spans0=[(0, 150)], spans1=[(160, 400)])
    y = vap_targets(a)
    assert (y[-100:] == -1).all() and (y[:-100] >= 0).all()
    assert y[0] == 15                              # speaker 0 in all four bins
    assert y[200] == 240                           # speaker 1 in all four bins
    assert y.dtype == np.int16


def test_talking_turns_labels_on_a_timeline():
    segs = [[(0.3, 2.0), (3.0, 4.0)],              # speaker 0
            [(1.0, 1.3, "backchannel"), (2.2, 3.3)]]  # speaker 1: a backchannel, then a turn
    lab = talking_turns_labels(segs, 5.0)
    k = lambda t: int((t - 0.2) / 0.04 + 1e-9)     # noqa: E731 - chunk index of a time
    assert len(lab) == int((5.0 - 0.2) / 0.04)
    assert lab[0] == "NA"
    assert lab[k(0.3)] == "T"                      # first talker takes the floor
    assert lab[k(0.5)] == "C"
    assert lab[k(1.0)] == "BC"
    assert lab[k(2.1)] == "NA"
    assert lab[k(2.2)] == "T"                      # speaker 1 starts after speaker 0 stopped
    assert lab[k(3.0)] == "I"                      # speaker 0 starts while 1 still talks
    assert lab[k(4.5)] == "NA"
    assert set(lab) == {"NA", "T", "C", "BC", "I"}


def test_save_frame_labels_is_byte_deterministic(tmp_path):
    segs = [[(0.3, 2.0)], [(2.2, 4.0)]]
    p1, p2 = tmp_path / "a.npz", tmp_path / "b.npz"
    save_frame_labels(p1, segs, 5.0)
    save_frame_labels(p2, segs, 5.0)
    assert p1.read_bytes() == p2.read_bytes()
    z = load_frame_labels(p1)
    assert z["activity"].shape == (250, 2) and z["vap"].shape == (250,)
    assert str(z["source"]) == "timeline"
    assert tt_label_names(z["tt"])[int((0.3 - 0.2) / 0.04)] == "T"


def test_labels_from_a_rendered_dialogue():
    segs = (Segment(message_index=0, channel=1, start_s=0.2, end_s=2.0, text="Hello there"),
            Segment(message_index=1, channel=0, start_s=2.3, end_s=3.5, text="Hi"),
            Segment(message_index=2, channel=1, start_s=2.6, end_s=2.9, text="mhm", kind="backchannel"))
    rd = RenderedDialogue(conversation_id="c", audio_path="x.flac", duration_s=6.0, segments=segs)
    z = dialogue_frame_labels(rd)
    assert z["activity"][:, 1].sum() == pytest.approx((1.8 + 0.3) * 50, abs=1)
    names = tt_label_names(z["tt"])
    assert names[int((2.6 - 0.2) / 0.04)] == "BC"
