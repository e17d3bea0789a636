"""``perturb --protocol turnnat-ref`` on spoken dialogues, checked with the test's own instrument.

The reference (``TedZhangHao/turn-taking-naturalness`` ``turnnat/scripts/build_perturbations.py``,
``BP``) edits the whole dialogue and then crops it; these tests re-measure the written clips with
an energy detector (not the silero turn VAD that placed the edits). The rule-level cases with
hand-derived values are in ``bargein.scorers.conformance_perturb`` (run by test_protocols.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from random import Random

import numpy as np
import pytest

from bargein.audio.io import read_audio, write_audio
from bargein.audio.vad import get_vad, segments_to_tuples
from bargein.perturb.sources import load_sources
from bargein.perturb.stage import run_perturb
from bargein.records.audio import RenderedDialogue
from bargein.records.derived import PERTURBATION_TYPES, PerturbationPair
from bargein.store import read_jsonl, write_jsonl
from doubles.synthetic_audio import speech_dialogue

TOL = 0.04


@pytest.fixture(scope="module")
def ref_pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("perturb_ref")
    recs = []
    for i in range(2):
        x, segs = speech_dialogue(Random(100 + i), duration_s=90)
        write_audio(root / f"d{i}.flac", x, 16000)
        recs.append(RenderedDialogue(conversation_id=f"d{i}", audio_path=f"d{i}.flac", duration_s=len(x) / 16000,
                                     segments=tuple(segs),
                                     voices={"user": "espeak:en-us", "assistant": "espeak:en-gb+f3"}))
    write_jsonl(root / "rendered.jsonl", recs)
    s = run_perturb(load_sources(root / "rendered.jsonl", root / "w"), types=list(PERTURBATION_TYPES),
                    per_type=1, out_dir=root / "out", workdir=root / "w", seed=5, vad="silero",
                    protocol="turnnat-ref")
    return root / "out", s, read_jsonl(root / "out" / "pairs.jsonl", PerturbationPair)


def _energy(path: Path):
    x, sr = read_audio(path)
    vad = get_vad("energy", pad_ms=0.0, merge_gap_ms=0.0)
    return [segments_to_tuples(c) for c in vad.channel_segments(x, sr)], x, sr


def _side(out: Path, p) -> dict:
    return json.loads((out / "sidecars" / f"{p.id}.json").read_text())


def test_pairs_are_made_and_record_the_protocol(ref_pairs):
    """Late response, early entry, shift-instead-of-hold and excessive backchannel pairs come out
    of two 90 s dialogues; every sidecar names ``turnnat-ref`` and its 60 ms splice length."""
    out, s, pairs = ref_pairs
    assert s["protocol"] == "turnnat-ref"
    got = {p.type for p in pairs}
    assert {"late_response", "early_entry", "excessive_backchannel"} <= got, s
    for p in pairs:
        side = _side(out, p)
        assert side["protocol"] == "turnnat-ref" and side["fade_ms"] == 60.0


def test_whole_file_loudness_each_clip_separately(ref_pairs):
    """BP L2342-2367 (normalize_stereo_audio), L2370-2410 and L2413-2463: each written clip is
    normalised on its own: whole-file stereo RMS -20 dBFS, or the peak at -1 dBFS when that
    gain would clip; the recorded gains differ between natural and perturbed."""
    out, _, pairs = ref_pairs
    for p in pairs:
        for path in (p.natural_path, p.perturbed_path):
            x, _ = read_audio(out / path)
            rms = 20 * np.log10(np.sqrt(np.mean(x.astype(np.float64) ** 2)))
            peak = 20 * np.log10(np.max(np.abs(x)))
            assert abs(rms + 20.0) < 0.05 or abs(peak + 1.0) < 0.01, (p.id, path, rms, peak)
            assert peak <= -1.0 + 0.01
        prm = _side(out, p)["params"]
        assert prm["loudness_gain_natural"] > 0 and prm["loudness_gain_perturbed"] > 0


def test_crop_ends_are_silent_for_350ms(ref_pairs):
    """BP L2524-2550, L2855-2870: a crop starts and ends with >= 350 ms in which every 30 ms
    window of both channels has RMS <= 0.0105 (before the clip's loudness gain)."""
    out, _, pairs = ref_pairs
    for p in pairs:
        side = _side(out, p)
        x, sr = read_audio(out / p.perturbed_path)
        g = side["params"]["loudness_gain_perturbed"]
        n, w = int(0.35 * sr), int(0.03 * sr)
        for part in (x[:n], x[-n:]):
            for ch in (0, 1):
                frames = part[: len(part) // w * w, ch].reshape(-1, w).astype(np.float64)
                assert np.sqrt((frames ** 2).mean(1)).max() <= 0.0105 * g * 1.01, (p.id, ch)


def test_early_entry_moves_everything_after_the_cut(ref_pairs):
    """BP L3141-3245 (synchronized channel-local cuts) and L1843-1852: B starts ``advance``
    earlier, inside A's turn, and every later onset of both channels moves by the same amount
    (energy onsets of the natural clip vs the perturbed clip)."""
    out, _, pairs = ref_pairs
    p = next(q for q in pairs if q.type == "early_entry")
    nat, _, _ = _energy(out / p.natural_path)
    pert, _, _ = _energy(out / p.perturbed_path)
    side = _side(out, p)
    adv = side["params"]["advance_s"]
    assert 1.2 - 1e-6 <= adv <= 2.5 + 1e-6
    off = side["crop_start_s"] - side["perturbed_crop_edited_timeline_s"][0] if \
        "perturbed_crop_edited_timeline_s" in side else 0.0
    b = side["candidate"]["b"]
    b0 = side["candidate"]["b0"]                       # original onset in perturbed-crop time
    for ch in (0, 1):
        later_nat = [a + off for a, _ in nat[ch] if a + off > b0 - 0.1]
        later_pert = [a for a, _ in pert[ch] if a > b0 - adv - 0.1]
        assert later_nat and later_pert
        for t in later_nat[:3]:
            assert min(abs(u - (t - adv)) for u in later_pert) <= TOL, (ch, t, later_pert)
    a = side["candidate"]["a"]
    a_off = min((y for _, y in pert[a] if y > b0 - adv), default=None)
    assert a_off is not None and a_off > b0 - adv          # B now starts while A still talks
    assert b != a


def test_excessive_backchannel_two_added_onsets_apart(ref_pairs):
    """BP L3492-3625: exactly two clips added to the listener, onsets >= 0.8 s apart, inside the
    speaker's turn, nothing else on the speaker's channel changed."""
    out, _, pairs = ref_pairs
    p = next(q for q in pairs if q.type == "excessive_backchannel")
    nat, xn, _ = _energy(out / p.natural_path)
    pert, xp, _ = _energy(out / p.perturbed_path)
    b = p.edits[0].channel
    new = [(x, y) for x, y in pert[b] if not any(x < v and y > u for u, v in nat[b])]
    assert len(p.edits) == 2 and len(new) == 2, (new, p.edits)
    assert new[1][0] - new[0][0] >= 0.8 - TOL
    assert all(any(u - TOL <= x and y <= v + TOL for u, v in pert[1 - b]) for x, y in new)


def test_late_response_delays_the_response(ref_pairs):
    """BP L2965-3080 (60 ms splices at the speaker's offset and the responder's onset): the
    response starts ``delay`` (1.2-2.0 s) later; the speaker's offset stays where it was."""
    out, _, pairs = ref_pairs
    p = next(q for q in pairs if q.type == "late_response")
    nat, _, _ = _energy(out / p.natural_path)
    pert, _, _ = _energy(out / p.perturbed_path)
    c, d = _side(out, p)["candidate"], _side(out, p)["params"]["delay_s"]
    assert 1.2 - 1e-6 <= d <= 2.0 + 1e-6
    on_nat = min((x for x, _ in nat[c["b"]]), key=lambda x: abs(x - c["b0"]))
    on_pert = min((x for x, _ in pert[c["b"]]), key=lambda x: abs(x - c["b0"] - d))
    assert abs((on_pert - on_nat) - d) <= TOL
    off_n = min((y for _, y in nat[c["a"]]), key=lambda y: abs(y - c["a1"]))
    off_p = min((y for _, y in pert[c["a"]]), key=lambda y: abs(y - c["a1"]))
    assert abs(off_n - off_p) <= TOL
