"""Reference protocols reproduce the public definitions on hand-built timelines and audio.

The cases and their hand-derived values live in ``bargein.scorers.conformance`` (one source
for these tests and ``bench/protocol_conformance.py``); each names its reference file and lines.
"""

from __future__ import annotations

from random import Random

import numpy as np
import pytest

from bargein.errors import ConfigError
from bargein.scorers.conformance import CASES, check, matches


@pytest.mark.parametrize("case", CASES["fdbench"], ids=lambda c: c.name)
def test_fdbench_v1_case(case):
    """FD-Bench v1 (pengyizhou/FD-Bench benchmark/benchmarking.py): per-round rules L670-807,
    noise interrupts L809-817, pooled rates x100 L983-1002, ``int(samples / 16)`` ms L1003-1009,
    median aggregation ``time_average`` L62-97. Expected values derived by hand in the case."""
    assert check(case) == [], (case.name, case.run())


@pytest.mark.parametrize("case", CASES["fdb"], ids=lambda c: c.name)
def test_full_duplex_bench_case(case):
    """Full-Duplex-Bench (DanielLin94144/Full-Duplex-Bench v1_v1.5/evaluation/):
    eval_smooth_turn_taking.py L59-92 (TOR, latency with negatives at 0), eval_pause_handling.py
    L43-60, eval_backchannel.py L37-153 (frequency, 0.2 s histogram, scipy jensenshannon),
    get_timing.py L60-118 (v1.5 stop/response latency)."""
    assert check(case) == [], (case.name, case.run())


@pytest.mark.parametrize("case", [c for c in CASES["turnnat"] if c.name.startswith("ref-")], ids=lambda c: c.name)
def test_turnnat_ref_perturbation_case(case):
    """TurnNat reference generator (TedZhangHao/turn-taking-naturalness
    turnnat/scripts/build_perturbations.py): turn VAD L386-461 with L223-235 (0.1 s seconds to
    80 ms frames) and L343-383 (merge <= 3 frames); candidate rules L1894-1904 (substantive),
    L2009-2070 (proper transition / hold), L2099-2152 (active-alone for late response),
    L2221-2263 (shift then return); early entry L3082-3245 with L1843-1852; excessive
    backchannel L3492-3625 with L2304-2320 and L774-784; 60 ms splices L1733-1774, L2999-3039;
    crops L2524-2550, L2770-2900; loudness L2342-2367. Expected values derived by hand in
    bargein.scorers.conformance_perturb."""
    assert check(case) == [], (case.name, case.run())


@pytest.mark.parametrize("case", [c for c in CASES["turnnat"] if not c.name.startswith("ref-")],
                         ids=lambda c: c.name)
def test_turnnat_ref_case(case):
    """TurnNat reference scoring (turn-taking-naturalness dualturn/scripts/
    score_vap_nll_naturalness.py L100-700 with the settings of turnnat/scripts/
    score_fvad_checkpoint.py L243-258) and early entry (turnnat/scripts/build_perturbations.py
    L3082-3312: both channels lose the same stretch of silence)."""
    assert check(case) == [], (case.name, case.run())


def test_a_wrong_value_is_caught():
    """The comparison can fail: a case with one altered expectation is reported."""
    from dataclasses import replace

    case = CASES["fdbench"][0]
    bad = replace(case, expected={**case.expected, "SRR": 75.0})
    assert check(bad) == ["SRR"]
    assert not matches([1, 2], [1, 2, 3]) and not matches({"a": 1.0}, {"a": 1.1})


def test_protocol_registry_records_and_rejects():
    """Every named protocol records its reference and settings; a wrong name fails clearly."""
    from bargein.scorers.protocols import PROTOCOLS, get_protocol

    assert {"turnnat-ref", "turnnat-bargein", "fdbench-v1", "fdbench-bargein", "fdb-v1", "fdb-v1.5"} <= set(PROTOCOLS)
    rec = get_protocol("fdbench-v1").record()
    assert rec["protocol"] == "fdbench-v1" and "benchmarking.py" in rec["reference"]
    assert "1500" in rec["settings"]["vad"]
    with pytest.raises(ConfigError, match="fdbench-v1"):
        get_protocol("fdbench-v2", "fdbench")
    with pytest.raises(ConfigError):
        get_protocol("turnnat-ref", "fdbench")


def test_fdbench_on_speech_audio_uses_1500ms_silence_and_16k_samples():
    """FD-Bench's VAD call (FD-Bench examples/moshi/moshi/client_audiofile.py L21-30: silero
    threshold 0.5, min silence 1500 ms, defaults otherwise): two spoken user turns 1.0 s apart
    on the user channel form one round (a gap < 1.5 s does not end a span), 2.0 s apart two."""
    from bargein.audio.tts import get_engine
    from bargein.audio.io import resample
    from bargein.scorers.fdbench import conversation_marks, vad_spans

    tts = get_engine("espeak")
    sp = tts.synthesize("Could you check my order status please", "en-us")
    y = resample(sp.samples, sp.sample_rate, 16000)
    for gap_s, rounds in ((1.0, 1), (2.0, 2)):
        x = np.zeros(int(16000 * (2 * len(y) / 16000 + gap_s + 2.0)), dtype=np.float32)
        x[8000:8000 + len(y)] = y
        k = 8000 + len(y) + int(gap_s * 16000)
        x[k:k + len(y)] = y
        spans = vad_spans(x, 16000)
        assert len(spans) == rounds, (gap_s, spans)
        assert all(isinstance(a, int) and isinstance(b, int) for a, b in spans)
        assert conversation_marks(spans, []).rounds == rounds
        assert abs(spans[0][0] - 8000) < 0.12 * 16000        # onset within silero's 32 ms windows + pad


def test_turnnat_ref_scoring_activity_on_speech():
    """The reference scoring VAD (silero 0.5/100/50/30 ms -> 50 Hz, cleaned at 150 ms) marks the
    spoken stretch of each channel and nothing in the silent one."""
    from doubles.synthetic_audio import speech_dialogue
    from bargein.scorers.turnnat_ref import scoring_activity, units

    x, segs = speech_dialogue(Random(3), duration_s=25)
    v = scoring_activity(x, 16000)
    assert v.shape[1] == 2 and len(v) == len(x) // 320
    truth = np.zeros_like(v)
    for seg in segs:
        truth[int(seg.start_s * 50):int(seg.end_s * 50), seg.channel] = 1
    for c in range(2):
        assert (v[:, c] == truth[:, c]).mean() > 0.9, c       # frame agreement with the timeline
        assert v[truth[:, c] == 1, c].mean() > 0.8
    assert len(units(v, len(x) / 16000)) >= 4


def test_fdb_backchannel_and_turn_on_recording_words():
    """A Full-Duplex-Bench item built from a recording's words: a lone 'yeah' is no turn
    (eval_smooth_turn_taking.py L64-69), a sentence is; its latency counts from the user's end."""
    from bargein.scorers.fdb import turn_item

    assert turn_item([("yeah", 3.2, 3.5)], 3.0) == {"tor": 0, "latency_s": None}
    item = turn_item([("sure", 3.4, 3.7), ("let", 3.8, 3.9), ("me", 3.9, 4.0), ("check", 4.0, 4.6)], 3.0)
    assert item["tor"] == 1 and item["latency_s"] == pytest.approx(0.4)


def test_score_commands_on_external_recordings(tmp_path):
    """``bargein score timing --protocol fdbench-v1``, ``score fdb`` and ``score turnnat
    --recordings --protocol turnnat-ref`` on a folder of stereo files: every output records its
    protocol; an unreadable file is a failure with its reason and the rest is scored."""
    import json

    from click.testing import CliRunner

    from bargein.audio.io import write_audio
    from bargein.cli import cli
    from bargein.perturb.sources import load_sources
    from bargein.scorers.predictors import BuiltinPredictor
    from bargein.scorers.turnnat_ref import scoring_activity
    from doubles.synthetic_audio import speech_dialogue

    rec = tmp_path / "rec"
    rec.mkdir()
    x, _ = speech_dialogue(Random(5), duration_s=30)
    write_audio(rec / "a.flac", x, 16000)
    (rec / "broken.wav").write_bytes(b"not audio")
    w = str(tmp_path / "w")
    run = CliRunner().invoke
    r = run(cli, ["--workdir", w, "score", "timing", "--recordings", str(rec), "--protocol", "fdbench-v1"])
    assert r.exit_code == 0, r.output
    summ = json.loads((tmp_path / "w" / "scores" / "timing" / "summary.json").read_text())
    assert summ["protocol"]["protocol"] == "fdbench-v1" and summ["recordings"] == 1 and summ["failures"] == 1
    assert set(summ["fdbench"]) >= {"SRR", "SIR", "EIR", "NIR", "SRIR", "FSED_ms", "IRD_ms"}
    assert "SRR=" in r.output
    r = run(cli, ["--workdir", w, "score", "fdb", "--recordings", str(rec), "--protocol", "fdb-v1.5"])
    assert r.exit_code == 0, r.output
    summ = json.loads((tmp_path / "w" / "scores" / "fdb" / "summary.json").read_text())
    assert summ["protocol"]["protocol"] == "fdb-v1.5" and summ["timing"]["response_n"] >= 1
    r = run(cli, ["--workdir", w, "score", "fdb", "--recordings", str(rec)])      # no words, no --asr
    # every recording failed: the reasons are kept, and the command says so with exit 1 (issue 16 #6)
    assert r.exit_code == 1 and "no recording could be scored" in r.output
    assert "no system word timings" in (tmp_path / "w" / "scores" / "fdb" / "failures.jsonl").read_text()
    pred = BuiltinPredictor.train([scoring_activity(x, 16000).astype(bool)])
    pred.save(tmp_path / "m.npz")
    r = run(cli, ["--workdir", w, "score", "turnnat", "--recordings", str(rec), "--protocol", "turnnat-ref",
                  "--predictor", f"builtin:{tmp_path / 'm.npz'}"])
    assert r.exit_code == 0, r.output
    summ = json.loads((tmp_path / "w" / "scores" / "turnnat" / "summary.json").read_text())
    assert summ["protocol"]["protocol"] == "turnnat-ref" and summ["recordings"] == 1
    row = json.loads((tmp_path / "w" / "scores" / "turnnat" / "recordings.jsonl").read_text().splitlines()[0])
    assert row["units"] > 0 and row["naturalness"] == pytest.approx(-row["nll"])
    assert len(load_sources(rec, tmp_path / "w")) == 2


def test_fdb_v1_on_a_rendered_dialogue_uses_its_word_timings(tmp_path):
    """``fdb-v1`` on a rendered.jsonl: the system words come from the timeline, every user turn
    is an item (eval_smooth_turn_taking.py L59-80 per item), the backchannel JSD is computed
    against the given ground truth (eval_backchannel.py L136-153)."""
    from bargein.audio.io import write_audio
    from bargein.perturb.sources import load_sources
    from bargein.records.audio import RenderedDialogue
    from bargein.scorers.external import score_fdb
    from bargein.store import write_jsonl
    from doubles.synthetic_audio import speech_dialogue

    x, segs = speech_dialogue(Random(8), duration_s=40)
    write_audio(tmp_path / "d.flac", x, 16000)
    write_jsonl(tmp_path / "rendered.jsonl", [RenderedDialogue(
        conversation_id="c", audio_path="d.flac", duration_s=len(x) / 16000, segments=tuple(segs))])
    d = load_sources(tmp_path / "rendered.jsonl", tmp_path / "w")
    rows, summary, failures = score_fdb(d, "fdb-v1", gt={"c": [1.0] * 10})
    assert not failures and summary["recordings"] == 1
    items = rows[0]["items"]
    assert len(items) >= 3 and all(it["tor"] in (0, 1) for it in items)
    assert 0.0 <= summary["turn_taking"]["tor"] <= 1.0
    took = [it for it in items if it["tor"] == 1]
    assert took and all(it["latency_s"] is not None for it in took)
    bc = rows[0]["backchannel"]
    assert bc["jsd"] is not None and 0.0 <= bc["jsd"] <= 1.0 and bc["frequency_hz"] >= 0.0


def test_fdbench_v1_issue_case_rendered_as_speech():
    """The issue-15 FD-Bench conversation voiced (espeak) and scored end to end with FD-Bench's
    VAD (silero 0.5, min silence 1500 ms; client_audiofile.py L21-30) and rules (benchmarking.py
    L597-1040). The reply after the barge-in starts 1.7 s after the system stopped (a 1.3 s gap
    would merge under the 1.5 s minimum silence), so by hand: SRR 2/4, EIR 2/4, SIR 1/1, SRIR
    1/1, NIR 2/3, FSED median(0.5, 2.6, 0.9 s) = 900 ms, EIT median(1.0, 1.3 s) = 1150 ms,
    IRD 18.2 - 16.0 = 2200 ms; times within the VAD's 32 ms windows and 30 ms pads."""
    from bargein.audio.io import resample
    from bargein.audio.tts import get_engine
    from bargein.scorers.fdbench import aggregate, score_recording

    tts = get_engine("espeak")
    text = ("Could you check the status of my order please, it was placed last Tuesday and it "
            "has not arrived yet. I would also like to change the delivery address to my office.")
    x = np.zeros((16000 * 30, 2), dtype=np.float32)
    user = [(1.0, 4.0), (8.5, 12.0), (16.0, 19.0), (22.6, 26.0)]
    system = [(4.5, 5.5), (11.0, 13.0), (14.6, 18.2), (19.9, 21.4), (24.7, 27.0)]
    for ch, spans, voice in ((0, user, "en-us"), (1, system, "en-gb+f3")):
        sp = tts.synthesize(text, voice)
        y = resample(sp.samples, sp.sample_rate, 16000)
        for a, b in spans:
            n = int((b - a) * 16000)
            z = np.tile(y, n // len(y) + 1)[:n]
            x[int(a * 16000):int(a * 16000) + n, ch] = 0.5 * z
    marks, spans = score_recording(x, 16000)
    assert len(spans[0]) == 4 and len(spans[1]) == 5
    got = aggregate([marks])
    assert {k: got[k] for k in ("SRR", "EIR", "SIR", "SRIR", "NIR")} == {
        "SRR": 50.0, "EIR": 50.0, "SIR": 100.0, "SRIR": 100.0, "NIR": 66.67}
    for k, want in (("FSED_ms", 900), ("EIT_ms", 1150), ("IRD_ms", 2200)):
        assert abs(got[k] - want) <= 100, (k, got[k])
