"""TurnNat: TBUs, pooling, pair accuracy, C-index, the built-in predictor, the VAP adapter, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from random import Random

import numpy as np
import pytest

from bargein.audio.labels import activity_from_segments
from bargein.errors import BackendUnavailable, ConfigError
from bargein.scorers.predictors import BuiltinPredictor, contexts, get_predictor
from bargein.scorers.turnnat import c_index, pair_accuracy, pool, score_activity, tbus, unit_scores
from doubles.synthetic_audio import random_timeline


def _segs(seed: int, duration_s: float = 120.0):
    segs: list[list[tuple[float, float]]] = [[], []]
    for ch, start, length, _ in random_timeline(Random(seed), duration_s):
        segs[ch].append((start, start + length))
    return segs


def _activity(segs, duration_s: float = 122.0):
    return activity_from_segments(segs, duration_s)


def test_tbus_two_per_utterance_of_at_least_200_ms():
    a = np.zeros((500, 2), dtype=bool)
    a[150:160, 0] = True           # 200 ms: kept
    a[300:309, 1] = True           # 180 ms: dropped
    units = tbus(a)
    assert units == [(50, 150, "onset", 0), (60, 160, "offset", 0)]
    assert all(b - s == 100 for s, b, _, _ in units)          # [boundary - 2 s, boundary]
    a[0:30, 0] = True              # onset at frame 0: the window is clipped at the start
    assert tbus(a)[0] == (0, 0, "onset", 0)


def test_unit_scores_pooling_and_the_dialogue_nll():
    nll = np.array([1.0, 1.0, 3.0, np.nan, 5.0, 2.0, 2.0, 2.0])
    s = unit_scores(nll, [(0, 1, "onset", 0), (2, 4, "offset", 0), (5, 7, "onset", 1)])
    assert s.tolist() == [1.0, 4.0, 2.0]                       # NaN frames are left out
    r = pool(np.array([1.0, 2.0, 3.0, 4.0, 10.0]))
    assert r["mean_nll"] == 4.0
    assert r["tail_nll"] == 7.0                                # worst ceil(25 % of 5) = 2 units
    assert r["nll"] == 5.5 and r["naturalness"] == -5.5
    assert math.isnan(pool(np.array([]))["nll"])


def test_pair_accuracy_and_c_index_on_known_cases():
    nat, pert = [1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 3.0, 5.0]
    assert pair_accuracy(nat, pert) == 0.5                     # a tie counts as a miss
    # all 16 perturbed x natural combinations: 7 concordant, 6 discordant, 3 ties (excluded)
    assert c_index(pert, nat) == pytest.approx(7 / 13)
    assert c_index([2.0], [1.0]) == 1.0 and math.isnan(c_index([1.0], [1.0]))


def test_contexts_stay_in_range():
    a = _activity(_segs(1))
    c = contexts(a)
    from bargein.scorers.predictors import LEVEL_SIZES

    for level, size in enumerate(LEVEL_SIZES):
        assert 0 <= c[:, level].min() and c[:, level].max() < size


@pytest.fixture(scope="module")
def model():
    return BuiltinPredictor.train([_activity(_segs(s)) for s in range(40)])


def test_probabilities_normalise_and_history_helps(model):
    assert np.allclose(np.exp(model.logp).sum(axis=1), 1.0)
    held = [_activity(_segs(s)) for s in range(100, 110)]
    full = np.nanmean(np.concatenate([model.frame_nll(a) for a in held]))
    state_only = BuiltinPredictor([np.zeros_like(c) for c in model.counts[:3]] + [model.counts[3]])
    base = np.nanmean(np.concatenate([state_only.frame_nll(a) for a in held]))
    assert full < base - 0.1, (full, base)


def test_save_load_roundtrip_is_deterministic(model, tmp_path):
    model.save(tmp_path / "a.npz")
    model.save(tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    again = get_predictor(f"builtin:{tmp_path / 'a.npz'}")
    a = _activity(_segs(200))
    assert np.allclose(again.frame_nll(a), model.frame_nll(a), equal_nan=True, atol=1e-5)
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="retrain"):
        BuiltinPredictor.load(tmp_path / "bad.npz")
    with pytest.raises(ConfigError, match="turnnat train"):
        BuiltinPredictor.load(tmp_path / "missing.npz")


def test_late_responses_score_as_less_natural(model):
    """Delay each dialogue's first clean response by 1.6 s: its NLL must rise."""
    wins = 0
    for s in range(300, 310):
        segs = _segs(s, 40.0)
        ca = 0
        a1 = segs[ca][0][1]
        resp = next((x for x in segs[1] if a1 - 0.2 <= x[0] <= a1 + 1.0), None)
        if resp is None:
            continue
        t = resp[0]       # B's response and everything after it (A after a1) moves 1.6 s later
        late = [[(a + 1.6, b + 1.6) if a > a1 else (a, b) for a, b in segs[0]],
                [(a + 1.6, b + 1.6) if a >= t else (a, b) for a, b in segs[1]]]
        nat = score_activity(_activity(segs, 45.0), model)["nll"]
        pert = score_activity(_activity(late, 46.6), model)["nll"]
        wins += pert > nat
    assert wins >= 7


def test_vap_adapter_needs_torch_and_says_so(tmp_path):
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailable, match="torch"):
            get_predictor(f"vap:{tmp_path / 'vap.pt'}")
        return
    pytest.skip("torch is installed: covered by test_vap_adapter_loads_torchscript")


def test_vap_adapter_loads_torchscript(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0); "
                                "the VAP adapter cannot load a checkpoint without it")

    class Tiny(torch.nn.Module):
        def forward(self, wav):                  # (1, 2, samples) -> (1, frames, 256)
            frames = wav.shape[-1] // 320
            e = wav[:, :, : frames * 320].reshape(1, 2, frames, 320).abs().mean(-1)
            return e.transpose(1, 2) @ torch.ones(2, 256)

    path = tmp_path / "tiny.pt"
    torch.jit.script(Tiny()).save(str(path))
    pred = get_predictor(f"vap:{path}")
    audio = np.zeros((16000 * 5, 2), dtype=np.float32)
    act = np.zeros((250, 2), dtype=bool)
    nll = pred.frame_nll(act, audio=audio, sample_rate=16000)
    assert np.allclose(nll[:150], np.log(256)) and np.isnan(nll[-100:]).all()


def test_train_and_score_cli(tmp_path):
    from click.testing import CliRunner

    from bargein.audio.io import write_audio
    from bargein.cli import cli
    from bargein.perturb.sources import load_sources
    from bargein.perturb.stage import run_perturb
    from doubles.synthetic_audio import burst_audio

    for s in range(6):
        write_audio(tmp_path / "train" / f"t{s}.flac", burst_audio(_segs(s), 122.0, 16000, seed=s), 16000)
    write_audio(tmp_path / "test" / "x.flac", burst_audio(_segs(50, 90.0), 92.0, 16000, seed=50), 16000)
    run = CliRunner().invoke
    w = str(tmp_path / "w")
    r = run(cli, ["--workdir", w, "turnnat", "train", "--dialogues", str(tmp_path / "train"), "--vad", "energy"])
    assert r.exit_code == 0, r.output
    assert "trained on 6 dialogues" in r.output and "held-out TBU-frame NLL" in r.output
    run_perturb(load_sources(tmp_path / "test", tmp_path / "w"), types=["late_response", "early_entry"],
                per_type=2, out_dir=tmp_path / "pairs", workdir=tmp_path / "w", seed=1, vad="energy")
    pairs = tmp_path / "pairs" / "pairs.jsonl"
    lines = pairs.read_text().splitlines()
    broken = json.loads(lines[0])
    broken["natural_path"] = "audio/missing.flac"
    broken["id"] = "broken"
    pairs.write_text("\n".join(lines + [json.dumps(broken)]) + "\n")
    r = run(cli, ["--workdir", w, "score", "turnnat", "--pairs", str(pairs), "--vad", "energy", "--n-boot", "200"])
    assert r.exit_code == 0, r.output
    report = json.loads((Path(w) / "scores" / "turnnat" / "report.json").read_text())
    groups = {(a["metric"], a["group"].get("type", "all")) for a in report["aggregates"]}
    assert {("pair_accuracy", "all"), ("c_index", "early_entry"), ("pair_accuracy", "late_response")} <= groups
    scores = (Path(w) / "scores" / "turnnat" / "scores.jsonl").read_text().splitlines()
    assert len(scores) == 4
    failures = (Path(w) / "scores" / "turnnat" / "failures.jsonl").read_text()
    assert "broken" in failures and "missing.flac" in failures
    r = run(cli, ["--workdir", str(tmp_path / "empty"), "score", "turnnat", "--pairs", str(pairs)])
    assert r.exit_code != 0 and "turnnat train" in str(r.exception)
