"""The sidecar check of the release card (issue 14 §4/§5): every timing figure of a sidecar
re-measured on the written audio by the energy detector, which neither placed the edit (silero)
nor measured the sidecar. True sidecars agree to ≤ 20 ms at p95; a sidecar that lies is caught."""

from __future__ import annotations

import json
from random import Random

import pytest

from bargein.audio.io import write_audio
from bargein.perturb.fidelity import sidecar_errors, sidecar_report
from bargein.perturb.sources import load_sources
from bargein.perturb.stage import run_perturb
from bargein.records.audio import RenderedDialogue
from bargein.store import write_jsonl
from doubles.synthetic_audio import speech_dialogue


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pf")
    x, segs = speech_dialogue(Random(101), duration_s=90)
    write_audio(tmp / "d.flac", x, 16000)
    write_jsonl(tmp / "rendered.jsonl", [RenderedDialogue(
        conversation_id="d", audio_path="d.flac", duration_s=len(x) / 16000, segments=tuple(segs),
        voices={"user": "espeak:en-us", "assistant": "espeak:en-gb+f3"})])
    run_perturb(load_sources(tmp / "rendered.jsonl", tmp / "w"),
                types=["late_response", "early_entry", "hold_instead_of_shift"], per_type=1,
                out_dir=tmp / "out", workdir=tmp / "w", seed=5, vad="silero")
    return tmp / "out"


def test_true_sidecars_agree_with_the_audio(perturbed):
    rep = sidecar_report(perturbed / "pairs.jsonl", [])
    assert rep["pairs"] >= 2 and rep["figures"] >= 2, rep
    assert rep["sidecar_error_ms_p95"] <= 20.0, rep


def test_a_sidecar_that_lies_is_caught(perturbed, tmp_path):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(perturbed, out)
    side = sorted((out / "sidecars").glob("*.json"))[0]
    data = json.loads(side.read_text())
    key = next(k for k, v in data["measured"].items()
               if k not in ("in_spec", "count", "listener_in_gap", "residue_over_floor_db"))
    data["measured"][key] += 0.150                          # claims 150 ms more than the audio has
    side.write_text(json.dumps(data))
    errs, _, _, _ = sidecar_errors(out / "pairs.jsonl", [])
    assert max(errs) >= 140.0
