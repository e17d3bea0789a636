"""The five perturbations, each re-measured by VAD on its output audio; inputs; bad input."""

from __future__ import annotations

import json
from pathlib import Path
from random import Random

import numpy as np
import pytest
import soundfile as sf

from bargein.audio.io import active_rms, read_audio, write_audio
from bargein.audio.vad import get_vad, segments_to_tuples
from bargein.perturb.sources import load_sources
from bargein.perturb.stage import run_perturb
from doubles.synthetic_audio import burst_audio, random_timeline
from bargein.records.derived import PERTURBATION_TYPES, PerturbationPair
from bargein.store import read_jsonl

TOL = 0.035          # energy VAD: 10 ms frames, exact noise-burst edges


def _timeline(seed: int, duration_s: float = 90.0):
    segs: list[list[tuple[float, float]]] = [[], []]
    for ch, start, length, _kind in random_timeline(Random(seed), duration_s):
        segs[ch].append((round(start, 3), round(start + length, 3)))
    return [sorted(s) for s in segs]


def _write_dialogues(folder: Path, seeds=(1, 2, 3)) -> None:
    for s in seeds:
        segs = _timeline(s)
        write_audio(folder / f"dlg{s}.flac", burst_audio(segs, 92.0, 16000, seed=s, floor=1e-4), 16000)


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    root = tmp_path_factory.mktemp("perturb")
    _write_dialogues(root / "in")
    d = load_sources(root / "in", root / "work")
    summary = run_perturb(d, types=list(PERTURBATION_TYPES), per_type=2, out_dir=root / "out",
                          workdir=root / "work", seed=7, vad="energy")
    return root, summary, read_jsonl(root / "out" / "pairs.jsonl", PerturbationPair)


def _vad(path: Path):
    """The test's own instrument: the energy detector without padding or gap merging."""
    x, sr = read_audio(path)
    vad = get_vad("energy", pad_ms=0.0, merge_gap_ms=0.0)
    return [segments_to_tuples(s) for s in vad.channel_segments(x, sr)], x, sr


def _near(values, t, within=0.3):
    v = min(values, key=lambda v: abs(v - t))
    assert abs(v - t) <= within, (values, t)
    return v


def test_every_type_is_produced(perturbed):
    _, summary, pairs = perturbed
    assert summary["per_type"] == {t: 2 for t in PERTURBATION_TYPES}, summary
    assert {p.type for p in pairs} == set(PERTURBATION_TYPES)


def test_each_edit_remeasured_on_the_output(perturbed):
    root, _, pairs = perturbed
    out = root / "out"
    for p in pairs:
        nat, xn, sr = _vad(out / p.natural_path)
        pert, xp, _ = _vad(out / p.perturbed_path)
        side = json.loads((out / "sidecars" / f"{p.id}.json").read_text())
        assert side["type"] == p.type and len(side["edits"]) == len(p.edits)
        assert 10.0 <= side["fade_ms"] <= 12.0
        assert 20.0 <= p.crop_end_s - p.crop_start_s <= 25.0
        e = p.edits[0]
        if p.type == "late_response":
            on_b = [x for x, _ in nat[p.edits[1].channel]]
            t0 = _near(on_b, p.edits[1].at_s)
            t1 = _near([x for x, _ in pert[p.edits[1].channel]], p.edits[1].at_s + p.edits[1].duration_s)
            assert 1.2 - TOL <= t1 - t0 <= 2.0 + TOL
            a_ch = p.edits[0].channel
            assert _near([y for _, y in pert[a_ch]], e.at_s) == pytest.approx(
                _near([y for _, y in nat[a_ch]], e.at_s), abs=0.015)
        elif p.type == "early_entry":
            # TurnNat build_perturbations.py L3082-3312: the same silence is cut from both
            # channels, so B's response and everything after it move earlier together
            ea, eb = p.edits
            a, b = ea.channel, eb.channel
            adv = eb.duration_s
            assert ea.duration_s == pytest.approx(adv) and a != b
            t0 = _near([x for x, _ in nat[b]], eb.at_s + adv + 0.05)
            t1 = _near([x for x, _ in pert[b]], eb.at_s + 0.05)
            assert 1.2 - TOL <= t0 - t1 <= 2.5 + TOL
            assert t0 - t1 == pytest.approx(adv, abs=TOL)
            assert any(s < t1 < t for s, t in pert[a]), "the response must start inside the other's speech"
            cut_end = max(ea.at_s, eb.at_s) + adv
            dur = len(xn) / sr
            for ch in (a, b):
                later = [x for x, _ in nat[ch] if cut_end + 0.1 < x < dur - adv - 0.3]
                for x in later:
                    assert _near([y for y, _ in pert[ch]], x - adv, within=TOL) == pytest.approx(x - adv, abs=TOL)
        elif p.type == "hold_instead_of_shift":
            b = e.channel
            a = 1 - b
            off = _near([y for _, y in pert[a]], e.at_s, within=0.9)
            nxt = min(x for x, _ in pert[a] if x > off)
            assert 0.5 - TOL <= nxt - off <= 1.5 + TOL
            assert not any(s < nxt and t > off for s, t in pert[b])
            assert 1.2 - TOL <= e.duration_s <= 8.0 + TOL
        elif p.type == "shift_instead_of_hold":
            b = e.channel
            ins = [(s, t) for s, t in pert[b] if e.at_s - 0.1 <= s <= e.at_s + 0.3]
            assert len(ins) == 1 and 1.0 - TOL <= ins[0][1] - ins[0][0] <= 4.0 + TOL
            assert not any(s < ins[0][1] and t > ins[0][0] for s, t in pert[1 - b])
            assert pert[1 - b][-1][1] == pytest.approx(nat[1 - b][-1][1] + e.duration_s, abs=0.015)
        else:
            b = e.channel
            new = [(s, t) for s, t in pert[b] if not any(s < y and t > x for x, y in nat[b])]
            assert 2 <= len(new) <= 3 and len(new) == len(p.edits)
            assert all(n1[0] - n0[1] >= 0.8 - TOL for n0, n1 in zip(new, new[1:]))
        assert p.measured["in_spec"] == 1.0
        for x in (xn, xp):                         # -20 dBFS speech level, peak <= -1 dBFS
            assert np.max(np.abs(x)) <= 10 ** (-1 / 20) + 1e-3
        for c in range(2):
            assert 20 * np.log10(active_rms(xn[:, c], sr)) == pytest.approx(-20.0, abs=0.6)


def test_same_seed_same_bytes(perturbed, tmp_path):
    root, _, pairs = perturbed
    d = load_sources(root / "in", tmp_path / "work")
    run_perturb(d, types=list(PERTURBATION_TYPES), per_type=2, out_dir=tmp_path / "out",
                workdir=tmp_path / "work", seed=7, vad="energy")
    assert (tmp_path / "out" / "pairs.jsonl").read_bytes() == (root / "out" / "pairs.jsonl").read_bytes()
    for p in pairs[:4]:
        assert (tmp_path / "out" / p.perturbed_path).read_bytes() == (root / "out" / p.perturbed_path).read_bytes()
        assert (tmp_path / "out" / "sidecars" / f"{p.id}.json").read_text() == \
            (root / "out" / "sidecars" / f"{p.id}.json").read_text()


def test_bad_inputs_fail_per_item_and_the_rest_runs(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    segs = _timeline(5)
    good = burst_audio(segs, 92.0, 44100, seed=5)               # another rate: resampled
    sf.write(src / "good44k.flac", good, 44100)
    sf.write(src / "mono.flac", good[:, 0], 44100)
    sf.write(src / "short.flac", good[: 44100 * 12], 44100)
    silent = good.copy()
    silent[:, 1] = 0.0
    sf.write(src / "silent_channel.flac", silent, 44100)
    bad = good[: 44100 * 30].copy()
    bad[1000, 0] = np.nan
    sf.write(src / "nan.wav", bad, 44100, subtype="FLOAT")
    d = load_sources(src, tmp_path / "work")
    s = run_perturb(d, types=["late_response"], per_type=1, out_dir=tmp_path / "out",
                    workdir=tmp_path / "work", seed=1, vad="energy")
    assert s["per_type"]["late_response"] == 1
    reasons = {f["item_id"]: f["reason"] for f in map(json.loads, (tmp_path / "out" / "skipped.jsonl").open())}
    assert "mono" in reasons["src-mono"]
    assert "shorter than a 20-25 s crop" in reasons["src-short"]
    assert "channel 1 has no speech" in reasons["src-silent_channel"]
    assert "NaN" in reasons["src-nan"]
    pair = read_jsonl(tmp_path / "out" / "pairs.jsonl", PerturbationPair)[0]
    assert pair.source_id == "src-good44k" and sf.info(tmp_path / "out" / pair.natural_path).samplerate == 16000


def test_hf_dataset_and_parquet_inputs(tmp_path):
    import datasets

    segs = _timeline(9)
    audio = burst_audio(segs, 92.0, 16000, seed=9)
    write_audio(tmp_path / "a.flac", audio, 16000)
    ds = datasets.Dataset.from_dict(       # encoding through Audio needs torchcodec: cast instead
        {"id": ["dlg-a"], "audio": [{"bytes": (tmp_path / "a.flac").read_bytes(), "path": "a.flac"}]})
    ds = ds.cast_column("audio", datasets.Audio())          # a normal (decoding) Audio column
    ds.save_to_disk(str(tmp_path / "hf"))
    ds.to_parquet(str(tmp_path / "d.parquet"))
    for path in (tmp_path / "hf", tmp_path / "d.parquet"):
        d = load_sources(path, tmp_path / "work")
        assert [x.conversation_id for x in d] == ["dlg-a"]
        x, sr = read_audio(d[0].audio_path)
        assert x.shape == audio.shape and sr == 16000
    s = run_perturb(d, types=["early_entry"], per_type=1, out_dir=tmp_path / "out",
                    workdir=tmp_path / "work", seed=3, vad="energy")
    assert s["per_type"]["early_entry"] == 1


def test_real_speech_with_silero_and_transcript_backchannels(tmp_path):
    from doubles.synthetic_audio import speech_dialogue
    from bargein.records.audio import RenderedDialogue
    from bargein.store import write_jsonl

    x, segs = speech_dialogue(Random(11), duration_s=80)
    write_audio(tmp_path / "d.flac", x, 16000)
    write_jsonl(tmp_path / "rendered.jsonl", [RenderedDialogue(
        conversation_id="c", audio_path="d.flac", duration_s=len(x) / 16000, segments=tuple(segs))])
    d = load_sources(tmp_path / "rendered.jsonl", tmp_path / "work")
    s = run_perturb(d, types=["late_response", "excessive_backchannel"], per_type=1,
                    out_dir=tmp_path / "out", workdir=tmp_path / "work", seed=2, vad="silero")
    assert s["per_type"] == {"late_response": 1, "excessive_backchannel": 1}, \
        (tmp_path / "out" / "skipped.jsonl").read_text()[:2000]
    pairs = read_jsonl(tmp_path / "out" / "pairs.jsonl", PerturbationPair)
    bc = next(p for p in pairs if p.type == "excessive_backchannel")
    texts = [e.note for e in bc.edits]
    assert len(set(texts)) == len(texts) and all(t.startswith("backchannel ") for t in texts)


def test_cli(tmp_path):
    from click.testing import CliRunner

    from bargein.cli import cli

    _write_dialogues(tmp_path / "in", seeds=(4,))
    r = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "w"), "perturb", "--input", str(tmp_path / "in"),
                                 "--types", "late_response,hold_instead_of_shift", "--per-type", "1",
                                 "--vad", "energy"])
    assert r.exit_code == 0, r.output
    assert "late_response" in r.output and (tmp_path / "w" / "perturb" / "pairs.jsonl").exists()
    r = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "w"), "perturb", "--input",
                                 str(tmp_path / "in"), "--types", "bogus"])
    assert r.exit_code != 0 and "valid" in str(r.exception)


def test_rerun_after_deleting_the_audio_rebuilds_the_pairs(tmp_path):
    """Issue 11: with out/audio deleted, a re-run reported success with pairs whose FLAC files
    did not exist (the runner served cached records without checking their files)."""
    import shutil

    _write_dialogues(tmp_path / "in", seeds=(4,))
    d = load_sources(tmp_path / "in", tmp_path / "work")
    kw = dict(types=["late_response", "early_entry"], per_type=1, out_dir=tmp_path / "out",
              workdir=tmp_path / "work", seed=3, vad="energy")
    run_perturb(d, **kw)
    pairs = read_jsonl(tmp_path / "out" / "pairs.jsonl", PerturbationPair)
    before = {p: (tmp_path / "out" / p).read_bytes() for pr in pairs for p in (pr.natural_path, pr.perturbed_path)}
    assert len(pairs) == 2 and len(before) == 4
    shutil.rmtree(tmp_path / "out" / "audio")
    run_perturb(d, **kw)
    assert read_jsonl(tmp_path / "out" / "pairs.jsonl", PerturbationPair) == pairs
    assert {p: (tmp_path / "out" / p).read_bytes() for p in before} == before


def test_backchannels_synthesised_in_the_listeners_voice_when_the_dialogue_has_none(tmp_path):
    """Issue 14 §4: a dialogue without backchannels gets real ones (lexicon phrases, <= 1 s of
    sound) spoken in the listener's own voice; every inserted one is new sound on the listener's
    channel, measured by the energy detector (not the detector that placed it)."""
    from bargein import lexicon
    from bargein.records.audio import RenderedDialogue
    from bargein.store import write_jsonl
    from doubles.synthetic_audio import speech_dialogue

    x, segs = speech_dialogue(Random(21), duration_s=70, bc_rate=0.0)
    assert not any(s.kind == "backchannel" for s in segs)
    write_audio(tmp_path / "d.flac", x, 16000)
    write_jsonl(tmp_path / "rendered.jsonl", [RenderedDialogue(
        conversation_id="c", audio_path="d.flac", duration_s=len(x) / 16000, segments=tuple(segs),
        voices={"user": "espeak:en-us", "assistant": "espeak:en-gb+f3"})])
    d = load_sources(tmp_path / "rendered.jsonl", tmp_path / "work")
    s = run_perturb(d, types=["excessive_backchannel"], per_type=1, out_dir=tmp_path / "out",
                    workdir=tmp_path / "work", seed=4, vad="silero")
    assert s["per_type"] == {"excessive_backchannel": 1}, (tmp_path / "out" / "skipped.jsonl").read_text()[:2000]
    (p,) = read_jsonl(tmp_path / "out" / "pairs.jsonl", PerturbationPair)
    assert 2 <= len(p.edits) <= 3
    nat, _, _ = _vad(tmp_path / "out" / p.natural_path)
    pert, _, _ = _vad(tmp_path / "out" / p.perturbed_path)
    b = p.edits[0].channel
    for e in p.edits:
        text = e.note.removeprefix("backchannel ").removesuffix(" (synthesised)")
        assert e.note.endswith("(synthesised)") and e.source_start_s is None
        assert lexicon.is_backchannel(text) and not lexicon.starts_with_opener(text)
        assert 0.1 <= e.duration_s <= 1.0
        new = [(a, z) for a, z in pert[b] if a < e.at_s + e.duration_s and z > e.at_s]
        assert new and not any(a < e.at_s + e.duration_s and z > e.at_s for a, z in nat[b])


def test_removed_turn_leaves_nothing_in_the_closed_gap(perturbed):
    """Issue 14 §4: after hold_instead_of_shift the listener's channel is at its noise floor
    across the whole closed gap (5 ms frames, energy), and the sidecar says so."""
    from bargein.audio.vad import frame_db

    root, _, pairs = perturbed
    for p in (q for q in pairs if q.type == "hold_instead_of_shift"):
        pert, x, sr = _vad(root / "out" / p.perturbed_path)
        b = p.edits[0].channel
        off = _near([y for _, y in pert[1 - b]], p.edits[0].at_s, within=0.9)
        nxt = min(a for a, _ in pert[1 - b] if a > off)
        db = frame_db(x[:, b], sr)
        floor = float(np.percentile(db, 10))
        assert db[int(off / 0.005): int(nxt / 0.005)].max() <= floor + 10.0
        assert p.measured["residue_over_floor_db"] <= 10.0


def test_turnnat_ref_protocol_needs_two_speakers_and_a_turnnat_protocol(tmp_path):
    """``perturb --protocol turnnat-ref`` runs the reference turn VAD (silero, and the
    reference's 80 ms RMS VAD for a channel where silero finds nothing). Noise bursts are found
    by the RMS fallback, so the dialogue is scanned (TurnNat build_perturbations.py L562-584);
    a dialogue whose second channel is digital silence has no second speaker for either
    detector and fails its scan with the reason, nothing written half; a protocol of another
    family is refused. (Pairs on speech: test_perturb_ref.py.)"""
    _write_dialogues(tmp_path / "in", seeds=(1,))
    d = load_sources(tmp_path / "in", tmp_path / "work")
    s = run_perturb(d, types=["early_entry"], per_type=1, out_dir=tmp_path / "out",
                    workdir=tmp_path / "work", seed=7, vad="energy", protocol="turnnat-ref")
    assert s["protocol"] == "turnnat-ref" and s["scanned"] == 1, s
    x = burst_audio(_timeline(2), 92.0, 16000, seed=2, floor=1e-4)
    x[:, 1] = 0.0
    write_audio(tmp_path / "in1" / "mono.flac", x, 16000)
    d1 = load_sources(tmp_path / "in1", tmp_path / "work1")
    s1 = run_perturb(d1, types=["early_entry"], per_type=1, out_dir=tmp_path / "out1",
                     workdir=tmp_path / "work1", seed=7, vad="energy", protocol="turnnat-ref")
    assert s1["scanned"] == 0 and s1["pairs"] == 0, s1
    reasons = [json.loads(line)["reason"] for line in (tmp_path / "out1" / "skipped.jsonl").open()]
    assert reasons and all("reference turn VAD" in r for r in reasons), reasons
    with pytest.raises(Exception, match="turnnat-ref"):
        run_perturb(d, types=["early_entry"], per_type=1, out_dir=tmp_path / "o2", workdir=tmp_path / "work",
                    seed=7, vad="energy", protocol="fdbench-v1")


def test_release_card_records_the_perturbation_protocol(tmp_path):
    """The protocol that made the timing pairs is in the release card's provenance."""
    from bargein.releases.build import ReleaseSources, build_release

    from doubles.synthetic_audio import speech_dialogue

    x, _ = speech_dialogue(Random(100), duration_s=90)          # the reference VAD needs speech
    write_audio(tmp_path / "in" / "d0.flac", x, 16000)
    d = load_sources(tmp_path / "in", tmp_path / "work")
    s = run_perturb(d, types=["late_response"], per_type=1, out_dir=tmp_path / "pairs", workdir=tmp_path / "work",
                    seed=2, vad="energy", protocol="turnnat-ref")
    assert s["pairs"] == 1, s
    build_release(tmp_path / "rel", name="t", version="1.0.0", provenance={"seed": 2},
                  sources=ReleaseSources(timing=tmp_path / "pairs" / "pairs.jsonl", audio_roots=(tmp_path,)))
    assert "turnnat-ref" in (tmp_path / "rel" / "README.md").read_text()
