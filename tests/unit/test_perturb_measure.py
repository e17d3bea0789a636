"""The edit re-measurement (`bargein.perturb.measure`) on hand-built segments."""

from bargein.perturb.measure import measure

# listener B on channel 1; the natural crop has one B turn, the perturbed one adds backchannels
NAT = [[(0.0, 4.0), (6.0, 12.0)], [(4.2, 5.8)]]
CAND = {"a": 0, "b": 1, "w0": 6.0, "w1": 12.0}


def test_a_backchannel_heard_in_two_pieces_is_one_backchannel():
    """'mm | hm' or the closure inside 'exact|ly' splits one inserted clip into two energy spans
    0.16 s apart; counted as two, the spacing would read 0.16 s and the pair out of spec. The
    pieces are one event (joined below 0.25 s), so count 3 and spacing 1.16 s as placed."""
    pert = [NAT[0], NAT[1] + [(6.54, 7.23), (8.38, 8.74), (8.90, 9.07), (10.23, 10.49)]]
    m = measure("excessive_backchannel", NAT, pert, CAND, {"count": 3.0})
    assert m["count"] == 3.0
    assert abs(m["min_spacing_s"] - 1.15) < 1e-6
    assert m["in_spec"] == 1.0


def test_backchannels_too_close_stay_out_of_spec():
    """Two clips 0.4 s apart are two events (0.4 s > the 0.25 s join), and too close for the spec."""
    pert = [NAT[0], NAT[1] + [(6.5, 6.9), (7.3, 7.6)]]
    m = measure("excessive_backchannel", NAT, pert, CAND, {"count": 2.0})
    assert m["count"] == 2.0
    assert abs(m["min_spacing_s"] - 0.4) < 1e-6
    assert m["in_spec"] == 0.0
