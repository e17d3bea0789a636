"""Audio fidelity benchmark: do the labels of a demo-size build say what its audio does?

    python bench/fidelity.py                    # builds the demo preset in a temp dir first
    python bench/fidelity.py --workdir work/demo  # measure an existing build's work dir
    python bench/fidelity.py --baseline-workdir DIR   # also print ratios against another build

Every figure is measured on the output audio by an instrument that did not produce the labels
(an energy detector, Whisper tiny.en, VAP classes recomputed from measured activity;
``bargein.audio.fidelity``). Prints::

    word_end_within_30ms[<voice>]=   word ends before pauses >= 150 ms within 30 ms of the end
                                      of sound (energy detector)                 (goal >= 0.9)
    words_shorter_than_30ms[<voice>]= / words_in_silence[<voice>]=                         (goal 0)
    stop_error_ms_p95=               |last sound before stop_s - stop_s|           (goal <= 10)
    cut_error_ms_p95= / overlap_error_ms_p95=   the user's onset vs cut_s; stop - onset vs record
    heard_text_asr_agreement=        cuts whose heard text ends as Whisper hears the prefix (each
                                      disagreement listed, with the word the cut fell in)
    unanswerable_asr_recovery=       unanswerable clips where Whisper still says the value (goal 0)
    answerable_asr_recovery=         answerable clips where Whisper says the value (should be high;
                                      also given that Whisper hears it in the unmasked original)
    answerable_vs_unanswerable_mask_len_ratio=   median masked s, answerable / unanswerable
                                      (goal in [0.8, 1.25])
    frame_label_agreement=           shipped VAP classes vs classes of measured activity (>= 0.97)
    sidecar_error_ms_p95=            perturbation sidecars vs the audio (the perturb stage's hook
                                      bargein.perturb.fidelity.sidecar_report; "n/a" without it)
"""

from __future__ import annotations

import sys
from pathlib import Path

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from bargein.audio.fidelity_report import fidelity_report  # noqa: E402


def build_demo(root: Path) -> Path:
    work, out = root / "work", root / "release"
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bargein.cli", "--workdir", str(work), "build",
                        "--preset", "demo", "--out", str(out)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"demo build failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    print(f"demo_build_s={time.perf_counter() - t0:.1f}")
    return work


def _timing(work: Path) -> Path | None:
    hits = sorted(work.glob("perturb*/pairs.jsonl")) + sorted(work.glob("perturb*.jsonl"))
    return next((p for p in hits if p.stat().st_size), None)


def show(rep: dict, prefix: str = "") -> None:
    for voice, v in sorted(rep["voices"].items()):
        print(f"{prefix}word_end_within_30ms[{voice}]={v['word_end_within_30ms']} "
              f"(pauses={v['pauses']}, err_p50={v['word_end_error_ms_p50']} ms, "
              f"p95={v['word_end_error_ms_p95']} ms)")
        print(f"{prefix}words_shorter_than_30ms[{voice}]={v['words_shorter_than_30ms']} "
              f"words_in_silence[{voice}]={v['words_in_silence']} (of {v['words']})")
        for o in v.get("offending_words", []):
            print(f"{prefix}  {o['why']}: {o['dialogue']} msg {o['message']} {o['word']!r} "
                  f"{o['start_s']}-{o['end_s']} s in '{o['context']}'; sound near: {o['sound_near']}")
    c = rep["cuts"]
    print(f"{prefix}stop_error_ms_p95={c['stop_error_ms_p95']} (cuts={c['cuts']}, "
          f"within_10ms={c['stop_within_10ms']})")
    print(f"{prefix}cut_error_ms_p95={c['cut_error_ms_p95']} overlap_error_ms_p95={c['overlap_error_ms_p95']}")
    dis = c.get("disagreements", [])
    print(f"{prefix}heard_text_asr_agreement={c['heard_text_asr_agreement']} (of {c.get('asr_checked')}; "
          f"disagreements={len(dis)}, of which Whisper only adds words after the heard ones="
          f"{c.get('disagreements_asr_only_adds_words')})")
    for d in dis:
        print(f"{prefix}  {d['dialogue']} msg {d['message']}: heard '...{d['heard_text'][-40:]}' | "
              f"ASR '...{d['asr'][-40:]}' | cut in {d['partial_word']!r} after {d['partial_heard_ms']} ms")
    r = rep["repair"]
    print(f"{prefix}unanswerable_asr_recovery={r['unanswerable_asr_recovery']} "
          f"(of {r['unanswerable_items']})")
    print(f"{prefix}answerable_asr_recovery={r['answerable_asr_recovery']} (of {r['answerable_items']}; "
          f"{r['answerable_asr_kept_given_original']} of the {r['answerable_heard_in_original']} whose "
          "original Whisper hears the value in)")
    m = r["mask_len"]
    print(f"{prefix}answerable_vs_unanswerable_mask_len_ratio={m['ratio_of_medians']} "
          f"(pairs={m['pairs']}, pairs_within_0.8_1.25={m.get('pairs_within_0.8_1.25')}, "
          f"quartile ratios={m.get('quantile_ratios')}, mask_len_auc={m.get('length_auc')} (0.5: length says nothing))")
    print(f"{prefix}repair_items={r['items']} repair_sources={r.get('sources')}")
    f = rep["frames"]
    print(f"{prefix}frame_label_agreement={f['frame_label_agreement']} (frames={f['frames']})")
    print(f"{prefix}sidecar_error_ms_p95={rep.get('sidecars', {}).get('sidecar_error_ms_p95', 'n/a')}")


def other_voices(work: Path, voices: list[str], n: int) -> None:
    """Voices the build did not use, on the build's own texts: each message synthesised alone and
    measured like a rendered one (pauses >= 150 ms inside the clip, and its natural end)."""
    import numpy as np

    from bargein.audio import fidelity as F
    from bargein.audio.tts import synthesize
    from bargein.records import RenderedDialogue

    texts: list[str] = []
    with open(work / "render.jsonl", encoding="utf-8") as f:
        for line in f:
            texts += [s.text for s in RenderedDialogue.model_validate_json(line).segments if s.kind == "message"]
    texts = sorted(set(texts), key=lambda t: (len(t) % 97, t))[:n]
    for voice in voices:
        acc = F.VoiceWords()
        for t in texts:
            sp = synthesize(t, voice)
            x = np.stack([np.zeros_like(sp.samples), sp.samples], axis=1)
            from bargein.records import Segment

            seg = Segment(message_index=0, channel=1, start_s=0.0, end_s=sp.duration_s, text=t,
                          words=sp.words, voice_id=voice)
            rd = RenderedDialogue(conversation_id="c", audio_path="-", sample_rate=sp.sample_rate,
                                  duration_s=sp.duration_s, segments=(seg,))
            F.word_boundaries([(rd, x)], {voice: acc})
        v = acc.summary()
        print(f"word_end_within_30ms[{voice}]={v['word_end_within_30ms']} (unrendered clips of {len(texts)} "
              f"build texts, pauses={v['pauses']}, p95={v['word_end_error_ms_p95']} ms) "
              f"words_shorter_than_30ms[{voice}]={v['words_shorter_than_30ms']} words_in_silence[{voice}]={v['words_in_silence']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, help="an existing build's work dir (default: build the demo)")
    ap.add_argument("--baseline-workdir", type=Path, help="another build's work dir to compare against")
    ap.add_argument("--json", type=Path, help="also write the full report here")
    ap.add_argument("--other-voices", default="espeak:en-us,espeak:en-gb+f3",
                    help="voices the build does not use, measured on its texts ('' to skip)")
    ap.add_argument("--other-texts", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bargein-fidelity-") as tmp:
        work = args.workdir or build_demo(Path(tmp))
        t0 = time.perf_counter()
        rep = fidelity_report(work / "render.jsonl", work / "mask.jsonl", audio_root=work,
                              timing=_timing(work))
        print(f"measure_s={time.perf_counter() - t0:.1f}")
        show(rep)
        if args.other_voices:
            other_voices(work, [v for v in args.other_voices.split(",") if v], args.other_texts)
        if args.baseline_workdir:
            base = fidelity_report(args.baseline_workdir / "render.jsonl",
                                   args.baseline_workdir / "mask.jsonl", audio_root=args.baseline_workdir)
            print("--- baseline")
            show(base, "baseline_")
        if args.json:
            args.json.write_text(json.dumps(rep, indent=1, sort_keys=True), encoding="utf-8")


if __name__ == "__main__":
    main()
