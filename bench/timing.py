"""Timing benchmark: TurnNat perturbation speed and spec conformance, scoring speed, and the
pair accuracy of the built-in predictor trained here.

    python bench/timing.py [--train 16] [--test 8] [--per-type 6] [--source render|synth]

Dialogues come from the real pipeline (offline scenarios -> rule-based conversations ->
``bargein.audio.render`` with espeak voices and listener backchannels), split by conversation
into a training set (for the predictor) and a test set (perturbed). ``--source synth`` uses
``bench/doubles/synthetic_audio.py`` instead. Prints::

    perturb_xrt=                 seconds of pair audio written (natural + perturbed) per wall second
    perturb_spec_conformance=    share of generated pairs whose edit, re-measured by silero VAD on
                                 the output audio, lies in the specified range (goal 1.0)
    score_predictor_xrt=         builtin predictor + TBU pooling on precomputed activity (goal >= 500)
    score_e2e_silero_xrt=        the whole scorer incl. silero VAD of both channels (cold cache)
    score_e2e_energy_xrt=        the whole scorer with the energy VAD
    pair_accuracy[type]=         built-in predictor, with the C-index, per type and overall

All speeds are ratios against the wall clock of this run (x realtime).
"""

from __future__ import annotations

import sys
from pathlib import Path

# this folder holds helpers but also scripts named like stdlib modules (``inspect.py``): search
# it after the standard library
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from random import Random  # noqa: E402

import numpy as np  # noqa: E402

from bargein.audio.io import write_audio  # noqa: E402
from bargein.audio.vad import get_vad  # noqa: E402
from bargein.perturb.sources import load_sources  # noqa: E402
from bargein.perturb.stage import run_perturb  # noqa: E402
from bargein.records.audio import RenderedDialogue  # noqa: E402
from bargein.records.derived import PERTURBATION_TYPES, PerturbationPair  # noqa: E402
from bargein.scorers.predictors import BuiltinPredictor  # noqa: E402
from bargein.scorers.turnnat import ClipScorer, c_index, pair_accuracy, score_activity, score_pairs  # noqa: E402
from bargein.scorers.turnnat_train import train_predictor  # noqa: E402
from bargein.store import read_jsonl, write_jsonl  # noqa: E402


def rendered(n: int, seed: int, work: Path, voices: str = "default") -> Path:
    """Render ``n`` offline conversations (default voices: hibari heart + Piper joe, or
    espeak); returns render.jsonl."""
    from bargein.audio.render import RenderConfig, render_conversations
    from bargein.generators.conversation import simulate_stage
    from bargein.generators.scenarios import generate_scenarios
    from bargein.runner import run_stage

    scen = generate_scenarios(n, seed, workdir=work, progress=False).outputs
    convs = run_stage(simulate_stage(), scen, workdir=work, seed=seed, progress=False).outputs
    if voices == "espeak":
        cfg = RenderConfig(assistant_voice="espeak:en-gb+f3", user_voice="espeak:en-us",
                           backchannels=True, backchannel_prob=0.6)
    else:
        cfg = RenderConfig(backchannels=True, backchannel_prob=0.6)
    res = render_conversations(convs, workdir=work, seed=seed, config=cfg, progress=False)
    if not res.outputs:
        raise RuntimeError(f"rendering produced nothing: {res.failures[:2]}")
    return work / "render.jsonl"


def synthetic(n: int, seed: int, work: Path, voices: str = "espeak") -> Path:
    from doubles.synthetic_audio import speech_dialogue

    rds = []
    for i in range(n):
        x, segs = speech_dialogue(Random(seed * 1000 + i), duration_s=150.0)
        write_audio(work / f"d{i}.flac", x, 16000)
        rds.append(RenderedDialogue(conversation_id=f"synth-{seed}-{i}", audio_path=f"d{i}.flac",
                                    duration_s=len(x) / 16000, segments=tuple(segs)))
    write_jsonl(work / "rendered.jsonl", rds)
    return work / "rendered.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=16)
    ap.add_argument("--test", type=int, default=8)
    ap.add_argument("--per-type", type=int, default=6)
    ap.add_argument("--source", choices=["render", "synth"], default="render")
    ap.add_argument("--voices", choices=["default", "espeak"], default="default",
                    help="render voices: hibari heart + Piper joe (default; their sentence pauses "
                         "give 0.3-1.0 s holds) or espeak (fast; pauses ~0.25 s: few holds)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-timing-"))
    make = rendered if args.source == "render" else synthetic
    t0 = time.perf_counter()
    (root / "train").mkdir(parents=True, exist_ok=True)
    (root / "test").mkdir(parents=True, exist_ok=True)
    train_jsonl = make(args.train, 101, root / "train", args.voices)
    test_jsonl = make(args.test, 202, root / "test", args.voices)
    hours = sum(r.duration_s for r in read_jsonl(train_jsonl, RenderedDialogue)) / 3600
    print(f"source={args.source} voices={args.voices} train_dialogues={args.train} ({hours:.2f} h) "
          f"test_dialogues={args.test} built_in_s={time.perf_counter() - t0:.1f}")

    t = time.perf_counter()
    s = train_predictor(train_jsonl, root / "model.npz", workdir=root / "w")
    print(f"train_s={time.perf_counter() - t:.1f} dev_nll={s.get('dev_nll')} "
          f"dev_nll_state_only={s.get('dev_nll_state_only')}")

    dialogues = load_sources(test_jsonl, root / "w")
    t = time.perf_counter()
    summ = run_perturb(dialogues, types=list(PERTURBATION_TYPES), per_type=args.per_type,
                       out_dir=root / "pairs", workdir=root / "w", seed=1, vad="silero", strict=False)
    wall = time.perf_counter() - t
    pairs = read_jsonl(root / "pairs" / "pairs.jsonl", PerturbationPair)
    import soundfile as sf

    out_s = sum(sf.info(root / "pairs" / p.natural_path).duration + sf.info(root / "pairs" / p.perturbed_path).duration
                for p in pairs)
    conform = np.mean([p.measured.get("in_spec", 0.0) for p in pairs]) if pairs else float("nan")
    print(f"pairs={len(pairs)} per_type={summ['per_type']} candidates={summ['candidates']}")
    print(f"perturb_xrt={out_s / wall:.1f}")
    print(f"perturb_spec_conformance={conform:.3f}")
    for p in pairs:
        if p.measured.get("in_spec") != 1.0:
            print(f"  out of spec: {p.id} {p.measured}")
    good = [p for p in pairs if p.measured.get("in_spec") == 1.0]

    model = BuiltinPredictor.load(root / "model.npz")
    sil = ClipScorer(model, get_vad("silero"), None)
    acts = [sil.activity(root / "pairs" / path)[0] for p in good for path in (p.natural_path, p.perturbed_path)]
    audio_s = sum(len(a) for a in acts) / 50
    t = time.perf_counter()
    for _ in range(5):
        for a in acts:
            score_activity(a, model)
    print(f"score_predictor_xrt={5 * audio_s / (time.perf_counter() - t):.0f}")
    for vad in ("silero", "energy"):
        sc = ClipScorer(model, get_vad(vad), None)
        t = time.perf_counter()
        items, report, fails = score_pairs(good, root / "pairs", sc, seed=0, n_boot=200)
        print(f"score_e2e_{vad}_xrt={audio_s / (time.perf_counter() - t):.0f}")
        if vad == "silero":
            rows = [(i.group["type"], i.detail["nll_natural"], i.detail["nll_perturbed"]) for i in items]
    for kind in ["all"] + list(PERTURBATION_TYPES):
        rs = [r for r in rows if kind == "all" or r[0] == kind]
        if rs:
            nat, pert = [r[1] for r in rs], [r[2] for r in rs]
            print(f"pair_accuracy[{kind}]={pair_accuracy(nat, pert):.3f} "
                  f"c_index[{kind}]={c_index(pert, nat):.3f} n={len(rs)}")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"kept {root}")


if __name__ == "__main__":
    sys.exit(main())
