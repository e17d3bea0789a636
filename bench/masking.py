"""Masking benchmark: the speed of the masking itself against alignment, measured in one run.

    python bench/masking.py [--dialogues 3] [--repeat 3] [--asr 0]

Dialogues come from the real pipeline (offline scenarios -> rule-based conversations ->
``bargein.audio.render`` with espeak voices); their user turns that speak a slot value are the
sources (``conversation_sources``). Prints::

    mask_speed_x_realtime=     seconds of masked audio produced per wall second by the masking
                               itself (both conditions x 3 signals x 3 windows; spans, signal
                               synthesis, RMS matching, fades), on one core; goal >= 1000
    mask_files_x_realtime=     the same incl. writing FLAC files and building MaskedItem records
    align_speed_x_realtime=    Whisper tiny.en forced alignment of the same utterances
                               (what a QA source costs before masking), on one core
    mask_vs_align=             how many times faster masking is than aligning
    asr_answerable_value_kept= / asr_unanswerable_value_removed=   (--asr N) Whisper on the
                               variants of N sources whose original Whisper hears correctly
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bargein.audio.align import get_aligner, transcribe  # noqa: E402
from bargein.audio.io import active_rms  # noqa: E402
from bargein.masking.items import MaskConfig, build_items, conversation_sources  # noqa: E402
from bargein.masking.signals import apply_mask, expand_region  # noqa: E402
from bargein.masking.spans import contains_value  # noqa: E402
from bargein.masking.stage import asr_check, asr_rates, load_source_audio  # noqa: E402


def rendered(n: int, seed: int, work: Path):
    from bargein.audio.render import RenderConfig, render_conversations
    from bargein.generators.conversation import simulate_stage
    from bargein.generators.scenarios import generate_scenarios
    from bargein.runner import run_stage

    scen = generate_scenarios(n, seed, workdir=work, progress=False).outputs
    convs = run_stage(simulate_stage(), scen, workdir=work, seed=seed, progress=False).outputs
    cfg = RenderConfig(assistant_voice="espeak:en-gb+f3", user_voice="espeak:en-us", label_vad="energy")
    res = render_conversations(convs, workdir=work, seed=seed, config=cfg, progress=False)
    return res.outputs, convs


def dsp_only(src, x, sr, cfg: MaskConfig, seed: int) -> float:
    """Mask every variant of one source in memory; returns seconds of audio produced."""
    from bargein.masking.items import _spans_from
    from bargein.masking.lengths import answerable_regions, targets

    words = src.words
    c0, c1 = src.critical
    t0, t1 = words[c0].start_s, words[c1 - 1].end_s
    dur = len(x) / sr
    level = active_rms(x, sr)
    produced = 0.0
    for w, target in zip(cfg.windows_ms, targets(src, cfg)):
        s, e = expand_region(t0, t1, w, dur)
        variants = [[(s, e, c0, c1)], answerable_regions(words, src.critical, w, dur, cfg, seed,
                                                         target_s=target, content=src.kind == "conversation",
                                                         protected=src.protected)]
        for regions in variants:
            samples, _ = _spans_from(regions, words, sr)
            for sig in cfg.signals:
                apply_mask(x, sr, samples, signal=sig, rng=np.random.default_rng(seed), speech_level=level)
                produced += dur
    return produced


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dialogues", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="timing repetitions of the masking")
    ap.add_argument("--asr", type=int, default=0, help="Whisper-check the variants of N sources")
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-masking-"))
    t = time.perf_counter()
    rds, convs = rendered(args.dialogues, 11, root / "render")
    cfg = MaskConfig()
    sources, fails = conversation_sources(rds, convs, cfg, root / "render")
    print(f"dialogues={len(rds)} sources={len(sources)} unusable_dialogues={len(fails)} "
          f"built_in_s={time.perf_counter() - t:.1f}")
    audio = []
    for s in sources:
        x, sr = load_source_audio(s, root)
        audio.append((s, x, sr))
    utter_s = sum(len(x) / sr for _, x, sr in audio)

    ok = []                                        # sources whose answerable variants all exist
    for s, x, sr in audio:
        try:
            dsp_only(s, x, sr, cfg, 1)
            ok.append((s, x, sr))
        except Exception as e:  # noqa: BLE001 - reported, excluded from timing
            print(f"  skipped {s.id}: {e}")
    t = time.perf_counter()
    produced = sum(dsp_only(s, x, sr, cfg, k) for k in range(args.repeat) for s, x, sr in ok)
    mask_xrt = produced / (time.perf_counter() - t)

    t = time.perf_counter()
    items, produced_f = [], 0.0
    for s, x, sr in ok:
        got = build_items(s, x, sr, s.words, s.critical, transcript=s.transcript, config=cfg, seed=3,
                          workdir=root / "mask")
        items += got
        produced_f += len(got) * len(x) / sr
    files_xrt = produced_f / (time.perf_counter() - t)

    aligner = get_aligner("whisper")
    aligner.align(*audio[0][1:], audio[0][0].transcript)          # load the model outside the clock
    t = time.perf_counter()
    aligned_s = 0.0
    for s, x, sr in ok:
        aligner.align(x, sr, s.transcript)
        aligned_s += len(x) / sr
    align_xrt = aligned_s / (time.perf_counter() - t)
    print(f"utterances={len(ok)} ({utter_s:.1f} s) variants_per_utterance={2 * len(cfg.signals) * len(cfg.windows_ms)}")
    print(f"mask_speed_x_realtime={mask_xrt:.0f}")
    print(f"mask_files_x_realtime={files_xrt:.0f}")
    print(f"align_speed_x_realtime={align_xrt:.1f}")
    print(f"mask_vs_align={mask_xrt / align_xrt:.0f}")

    if args.asr:
        chosen = []
        for s, x, sr in ok:
            if len(chosen) >= args.asr:
                break
            if contains_value(transcribe(x, sr)[0], s.answer):
                chosen.append(s.id)
        rows = asr_check([i for i in items if any(i.id.startswith(c + "_") for c in chosen)], root / "mask")
        rates = asr_rates(rows)
        print(f"asr_sources={len(chosen)} (originals Whisper hears correctly)")
        print(f"asr_answerable_value_kept={rates['answerable_value_kept']:.3f} "
              f"asr_unanswerable_value_removed={rates['unanswerable_value_removed']:.3f}")
        for r in rows:
            if not r["ok"]:
                print(f"  {r['item_id']}: Whisper heard {r['asr_text']!r}")


if __name__ == "__main__":
    main()
