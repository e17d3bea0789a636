"""FD-Bench and Talking-Turns metrics on hand-built timelines with known answers."""

from __future__ import annotations

import json

import pytest

from bargein.scorers.timing import UserTurn, fdbench_events, talking_turns_stats, user_turns_from_vad

# user turns (channel 0) and system segments (channel 1), seconds
USER = [(1, 3), (7, 9), (12, 15), (18, 20), (25, 26), (40, 42), (50, 52)]
SYSTEM = [
    (3.4, 6.0),       # u1 reply: FSED 400 ms
    (8.7, 11.0),      # u2 reply 300 ms before the user ends: ERT 300
    (13.0, 14.0),     # u3 early interrupt 2 s before its end: EIT 2000
    (16.0, 18.3),     # replies to u3 (FSED 1000); u4 interrupts at 18.0, stop 18.3: IRD 300
    (20.6, 23.5),     # reply after the interruption: SRI, FSED 600
    (24.0, 30.0),     # u5 interrupts at 25.0 but the system talks on: failed interrupt
    (31.0, 33.0),     # stops 7 s before the next user onset after 2 s: a noise interrupt
    (42.3, 48.5),     # u6 reply: FSED 300 (6.2 s long: not a noise interrupt)
]                     # u7 (50-52) gets no reply


def test_fdbench_metrics_on_a_known_timeline():
    m = fdbench_events([UserTurn(a, b) for a, b in USER], SYSTEM, 60.0).metrics()
    assert m["SRR"] == pytest.approx(4 / 5)          # u1, u2, u3, u6 of 5 inquiries
    assert m["EIR"] == pytest.approx(1 / 5)          # u3
    assert m["SIR"] == pytest.approx(1 / 2)          # u4 yes, u5 no
    assert m["SRIR"] == 1.0
    assert m["NIR"] == pytest.approx(1 / 6)          # 6 gaps between 7 user turns
    assert m["IRD_ms"] == pytest.approx(300)
    assert m["FSED_ms"] == pytest.approx(500)        # median of 400, 1000, 600, 300
    assert m["ERT_ms"] == pytest.approx(300)
    assert m["EIT_ms"] == pytest.approx(2000)


def test_schedule_kinds_override_detection():
    turns = [UserTurn(1, 3, "inquiry"), UserTurn(5, 6, "noise"), UserTurn(8, 9, "interruption")]
    ev = fdbench_events(turns, [(3.2, 5.5), (7.0, 8.4)], 12.0)
    assert ev.replied == [1.0] and ev.fsed_ms == [pytest.approx(200)]
    assert ev.interrupt_ok == [1.0] and ev.ird_ms == [pytest.approx(400)]
    assert len(ev.noise_stop) == 1                   # noise turns are not inquiries


def test_user_turns_from_vad_join():
    assert user_turns_from_vad([(0, 1), (1.2, 2), (5, 6)], join_s=0.5) == [UserTurn(0, 2), UserTurn(5, 6)]


def test_talking_turns_statistics():
    a = [(0.0, 2.0), (2.5, 4.0), (8.0, 9.0)]
    b = [(4.3, 7.0), (7.8, 8.2)]
    # silences: 2.0-2.5 A->A pause, 4.0-4.3 A->B gap, 7.0-7.8 B->B pause; 9-10 trailing
    # overlap: 8.0-8.2 (B's short segment inside A's speech start)
    s = talking_turns_stats([([a, b], 10.0)])
    assert s["ipus"] == 5
    assert s["pauses"] == 2 and s["pause_median_ms"] == pytest.approx(650)
    assert s["gaps"] == 1 and s["gap_median_ms"] == pytest.approx(300)
    assert s["overlaps"] == 1 and s["overlap_pct"] == pytest.approx(2.0)
    assert s["gap_pct"] == pytest.approx(3.0) and s["pause_pct"] == pytest.approx(13.0)
    assert s["labels"]["T"] == 1 and s["labels"]["I"] == 1   # A's 0.0 s onset precedes the 0.2 s start
    assert sum(s["labels"].values()) == int((10.0 - 0.2) / 0.04)
    assert s["interruptions_per_min"] == pytest.approx(6.0)


def test_timing_cli_with_schedule(tmp_path):
    from click.testing import CliRunner

    from bargein.audio.io import write_audio
    from bargein.cli import cli
    from doubles.synthetic_audio import burst_audio

    x = burst_audio([USER, SYSTEM], 60.0, 16000, seed=3)
    write_audio(tmp_path / "rec" / "session1.flac", x, 16000)
    sched = {"session1": [{"start_s": a, "end_s": b} for a, b in USER]}
    (tmp_path / "sched.json").write_text(json.dumps(sched))
    r = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "w"), "score", "timing", "--recordings",
                                 str(tmp_path / "rec"), "--schedule", str(tmp_path / "sched.json"),
                                 "--vad", "energy"])
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "w" / "scores" / "timing" / "summary.json").read_text())
    fd = summary["fdbench"]
    assert fd["SRR"]["value"] == pytest.approx(0.8) and fd["SIR"]["value"] == pytest.approx(0.5)
    assert fd["EIR"]["value"] == pytest.approx(0.2) and fd["NIR"]["value"] == pytest.approx(1 / 6)
    # VAD pads each system segment by 40 ms: onsets 40 ms earlier, stops 40 ms later
    assert fd["FSED_ms"]["value"] == pytest.approx(460, abs=15)
    assert fd["IRD_ms"]["value"] == pytest.approx(340, abs=15)
    row = json.loads((tmp_path / "w" / "scores" / "timing" / "recordings.jsonl").read_text())
    assert len(row["labels_40ms"]) == int((60.0 - 0.2) / 0.04) and set(row["labels_40ms"]) <= set("c-IbT")
    assert "SRR" in r.output and "Talking Turns" in r.output
