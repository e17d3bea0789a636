"""Reference-protocol conformance, public IHBench layout, scoring speed and sidecar truth.

    python bench/protocol_conformance.py [--seconds 120]

Prints::

    turnnat_ref_conformance=     fraction of hand-derived expected values our ``turnnat-ref``
    fdbench_conformance=         / ``fdbench-v1`` / ``fdb-v1|v1.5`` code reproduces (goal 1.000;
    fdb_conformance=             cases in bargein.scorers.conformance)
    ihbench_public_schema_match= 1 when a release built with the ``ihbench-public`` profile has
                                 the public card's configs, columns, 1-based turns and structs
    turnnat_ref_score_xrt=       audio seconds scored per wall second by the whole ``turnnat-ref``
                                 scorer on a first pass (silero VAD of both channels on two threads,
                                 50 Hz cleaning, units, predictor), ratio to the wall clock of this
                                 run (goal >= 500)
    turnnat_ref_score_sequential_xrt=  the same with the channels one after the other (the output is
                                 checked identical)
    turnnat_ref_vad_cpu_floor_xrt=   audio seconds per CPU second of the silero model alone on both
                                 channels: the ceiling of a first pass on one core; x2 for two cores
                                 (``turnnat_ref_vad_two_core_bound_xrt``)
    turnnat_ref_units_xrt=       the same without the VAD (activity given)
    turnnat_ref_score_cached_vad_xrt=  the file scorer (read, hash, cached reference VAD, units,
                                 predictor) when the clip's VAD is already cached
    fdbench_v1_score_xrt=        the ``fdbench-v1`` scorer incl. its VAD
    sidecar_error_ms_p95=        |sidecar measured - energy VAD on the written audio| over every
                                 timing figure of every pair (goal <= 20); the energy detector is
                                 not the detector that placed or measured the edit
    turnnat_ref_sidecar_error_ms_p95=  the same for pairs made with ``perturb --protocol turnnat-ref``
    turn_segments / shifts=      turns and turn changes the reference rules and bargein's find on
                                 the same dialogues (informative)
"""

from __future__ import annotations

import sys
from pathlib import Path

# this folder holds helpers (``doubles``) but also scripts named like stdlib modules
# (``inspect.py``): search it after the standard library, not before
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from random import Random  # noqa: E402

import numpy as np  # noqa: E402

from bargein.audio.io import resample  # noqa: E402
from bargein.audio.tts import get_engine  # noqa: E402
from bargein.scorers.conformance import conformance  # noqa: E402

SENTENCES = [
    "Could you tell me where my parcel is right now", "Yes of course, let me look that up for you",
    "It was supposed to arrive on Tuesday", "I see the order here, it left the depot this morning",
    "Okay and when will it get here", "The driver should reach you before six this evening",
    "That is later than I hoped", "I understand, I can send you a tracking link",
    "Please do, and send it by text", "Done, you should have it in a moment",
]


def spoken_dialogue(seconds: float, seed: int) -> np.ndarray:
    """(n, 2) 16 kHz espeak dialogue alternating channels with 0.2-0.9 s gaps."""
    tts, rng = get_engine("espeak"), Random(seed)
    n = int(seconds * 16000)
    x = np.zeros((n, 2), dtype=np.float32)
    t, k = 0.5, 0
    while True:
        ch = k % 2
        sp = tts.synthesize(SENTENCES[k % len(SENTENCES)], ("en-us", "en-gb+f3")[ch])
        y = resample(sp.samples, sp.sample_rate, 16000)
        a = int(t * 16000)
        if a + len(y) >= n:
            return x
        x[a:a + len(y), ch] += y
        t += len(y) / 16000 + rng.uniform(0.2, 0.9)
        k += 1


def speeds(seconds: float) -> dict[str, float]:
    from bargein.scorers import fdbench, turnnat_ref
    from bargein.scorers.predictors import BuiltinPredictor

    train = spoken_dialogue(seconds, 1)
    test = spoken_dialogue(seconds, 2)
    pred = BuiltinPredictor.train([turnnat_ref.scoring_activity(train, 16000).astype(bool)])
    dur = len(test) / 16000
    from bargein.audio.vad import SileroVAD, silero_probs

    models = (SileroVAD(), SileroVAD())
    seq_s, par_s = [], []
    for _ in range(3):          # interleaved, best of 3 each: the machine is shared
        ts0 = time.perf_counter()
        v_seq = turnnat_ref.scoring_activity(test, 16000, models[0])       # channels one after the other
        turnnat_ref.score_activity(v_seq, pred, dur)
        t0 = time.perf_counter()
        v = turnnat_ref.scoring_activity(test, 16000, vads=models)         # channels on two threads
        r = turnnat_ref.score_activity(v, pred, dur)
        t1 = time.perf_counter()
        seq_s.append(t0 - ts0)
        par_s.append(t1 - t0)
        assert np.array_equal(v, v_seq), "parallel channels changed the reference VAD's output"
    c0 = time.thread_time()                       # the model alone: CPU seconds of both channels
    for c in range(2):
        silero_probs(np.ascontiguousarray(test[:, c]), 16000, models[0])
    cpu = time.thread_time() - c0
    reps = 20
    t1 = time.perf_counter()
    for _ in range(reps):
        turnnat_ref.score_activity(v, pred, dur)
    t2 = time.perf_counter()
    fdbench.score_recording(test, 16000)
    t3 = time.perf_counter()
    assert r["units"] > 0
    from bargein.audio.io import write_audio
    from bargein.scorers.turnnat import RefClipScorer

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.flac"
        write_audio(path, test, 16000)
        scorer = RefClipScorer(pred, Path(tmp) / "vad")
        scorer.score(path)                              # fills the VAD cache
        t4 = time.perf_counter()
        for _ in range(reps):
            scorer.score(path)
        t5 = time.perf_counter()
    return {"turnnat_ref_score_xrt": dur / min(par_s), "turnnat_ref_score_sequential_xrt": dur / min(seq_s),
            "turnnat_ref_vad_cpu_floor_xrt": dur / cpu, "turnnat_ref_vad_two_core_bound_xrt": 2 * dur / cpu,
            "turnnat_ref_units_xrt": reps * dur / (t2 - t1),
            "turnnat_ref_score_cached_vad_xrt": reps * dur / (t5 - t4),
            "fdbench_v1_score_xrt": dur / (t3 - t2)}


def public_schema_problems(tmp: Path) -> list[str]:
    """Build a 4-conversation release with ``profile="ihbench-public"`` (bench helper stage
    outputs) and compare it with the public card's layout."""
    from doubles.synthetic_release import write_synthetic

    from bargein.releases.build import ReleaseSources, build_release
    from bargein.releases.public_schema import check_public_schema

    run = write_synthetic(tmp / "work", 4, seed=11)
    build_release(tmp / "rel", name="ihbench-public-bench", version="1.0.0", provenance={"seed": 11},
                  sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                         eval_items=run.eval_items, profile="ihbench-public"))
    return check_public_schema(tmp / "rel")


def sidecar_errors(tmp: Path, n_dialogues: int, per_type: int,
                   protocol: str = "turnnat-bargein") -> tuple[list[float], int, dict]:
    """Perturb spoken dialogues (silero placement), then recompute every timing figure of every
    sidecar from the written audio (:mod:`bargein.perturb.fidelity`, energy detector)."""
    from doubles.synthetic_audio import speech_dialogue

    from bargein.audio.io import write_audio
    from bargein.perturb.fidelity import sidecar_errors as sidecar_errors_on_audio
    from bargein.perturb.sources import load_sources
    from bargein.perturb.stage import run_perturb
    from bargein.records.audio import RenderedDialogue
    from bargein.records.derived import PERTURBATION_TYPES
    from bargein.store import write_jsonl

    recs = []
    for i in range(n_dialogues):
        x, segs = speech_dialogue(Random(100 + i), duration_s=90)
        if not (tmp / f"d{i}.flac").exists():
            write_audio(tmp / f"d{i}.flac", x, 16000)
        recs.append(RenderedDialogue(conversation_id=f"d{i}", audio_path=f"d{i}.flac",
                                     duration_s=len(x) / 16000, segments=tuple(segs),
                                     voices={"user": "espeak:en-us", "assistant": "espeak:en-gb+f3"}))
    write_jsonl(tmp / "rendered.jsonl", recs)
    out = tmp / f"out-{protocol}"
    run_perturb(load_sources(tmp / "rendered.jsonl", tmp / "w"), types=list(PERTURBATION_TYPES),
                per_type=per_type, out_dir=out, workdir=tmp / "w", seed=5, vad="silero", protocol=protocol)
    errs, by_type, n_pairs, _ = sidecar_errors_on_audio(out / "pairs.jsonl", [out])
    return errs, n_pairs, by_type


def turn_counts(tmp: Path, n_dialogues: int) -> dict[str, int]:
    """Turns and turn changes found on the spoken dialogues by the reference perturbation rules
    (0.1 s VAD on 80 ms frames, proper shifts) and by bargein's (µs VAD, VAP-style shifts)."""
    from bargein.audio.events import shift_hold_regions
    from bargein.audio.io import read_audio
    from bargein.audio.vad import get_vad, segments_to_tuples
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R

    out = {"ref_segments": 0, "bargein_segments": 0, "ref_proper_shifts": 0, "bargein_shifts": 0}
    vad = get_vad("silero")
    for i in range(n_dialogues):
        x, sr = read_audio(tmp / f"d{i}.flac")
        si = ref_ops.scan_input(x, sr)
        segs = [segments_to_tuples(s) for s in vad.channel_segments(x, sr)]
        out["ref_segments"] += sum(len(s) for s in si.segs)
        out["bargein_segments"] += sum(len(s) for s in segs)
        out["ref_proper_shifts"] += len(R.proper_shifts(si.segs, si.vads()))
        out["bargein_shifts"] += len(shift_hold_regions(segs, len(x) / sr)[0])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="length of the spoken test dialogue")
    ap.add_argument("--dialogues", type=int, default=3, help="spoken dialogues to perturb")
    ap.add_argument("--per-type", type=int, default=4, help="pairs per perturbation type")
    args = ap.parse_args(argv)
    failures = []
    for family, key in (("turnnat", "turnnat_ref_conformance"), ("fdbench", "fdbench_conformance"),
                        ("fdb", "fdb_conformance")):
        ok, total, bad = conformance(family)
        failures += bad
        print(f"{key}={ok / total:.3f}  ({ok}/{total} hand-derived values)")
    if failures:
        print("  not matched: " + ", ".join(failures))
    with tempfile.TemporaryDirectory() as tmp:
        problems = public_schema_problems(Path(tmp))
    print(f"ihbench_public_schema_match={int(not problems)}  "
          f"({'; '.join(problems) if problems else 'configs, columns, 1-based turns, structs as the public card'})")
    for k, v in speeds(args.seconds).items():
        goal = "  (goal >= 500)" if k.startswith("turnnat_ref_score") else ""
        print(f"{k}={v:.0f}{goal}")
    with tempfile.TemporaryDirectory() as tmp:
        for protocol, key in (("turnnat-bargein", "sidecar_error_ms_p95"),
                              ("turnnat-ref", "turnnat_ref_sidecar_error_ms_p95")):
            errs, n_pairs, per_type = sidecar_errors(Path(tmp), args.dialogues, args.per_type, protocol)
            if errs:
                print(f"{key}={np.percentile(errs, 95):.1f}  ({len(errs)} figures of {n_pairs} pairs; "
                      f"max {np.max(errs):.1f} ms; goal <= 20)")
                for t, e in sorted(per_type.items()):
                    print(f"  {key}[{t}]={np.percentile(e, 95):.1f}  (n={len(e)})")
            else:
                print(f"{key}=n/a  (no pairs)")
        tc = turn_counts(Path(tmp), args.dialogues)
        print(f"turn_segments ref={tc['ref_segments']} bargein={tc['bargein_segments']}  "
              f"shifts ref_proper={tc['ref_proper_shifts']} bargein={tc['bargein_shifts']}  "
              f"(on the {args.dialogues} spoken dialogues)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
