"""``bargein perturb``: TurnNat natural/perturbed pairs from two-channel dialogues."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals, require_file
from bargein.records.derived import PERTURBATION_TYPES


@click.command("perturb")
@click.option("--input", "input_path", required=True, type=click.Path(path_type=Path),
              help="rendered.jsonl (or its folder), a folder of stereo WAV/FLAC, or a local HF "
                   "dataset (save_to_disk folder or Parquet) with a stereo audio column.")
@click.option("--types", default=",".join(PERTURBATION_TYPES), show_default=True,
              help="Comma-separated perturbation types.")
@click.option("--per-type", type=click.IntRange(1, None), default=20, show_default=True, help="Pairs per type (quota).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output folder for pairs.jsonl, audio/ and sidecars/. Default: <workdir>/perturb")
@click.option("--vad", default="silero", show_default=True,
              help="VAD for events and re-measurement (silero, webrtc, energy).")
@click.option("--sample-rate", type=click.IntRange(8000, 48000), default=16000, show_default=True, help="Output sample rate.")
@click.option("--audio-column", default=None, help="HF dataset audio column (default: first Audio).")
@click.option("--split", default=None, help="HF dataset split (default: the only one).")
@click.option("--workers", type=click.IntRange(1, None), default=1, show_default=True,
              help="Worker processes.")
@click.option("--protocol", type=click.Choice(["turnnat-bargein", "turnnat-ref"]), default="turnnat-bargein",
              show_default=True, help="turnnat-ref: the reference's excessive backchannel (2 added, "
              "onsets >= 0.8 s apart); early entry cuts both channels in both (docs/protocols.md).")
@click.option("--strict/--no-strict", default=True, show_default=True,
              help="Drop pairs whose re-measured edit falls outside the specified range.")
def perturb(input_path: Path, types: str, per_type: int, out: Path | None, vad: str,
            sample_rate: int, audio_column: str | None, split: str | None, workers: int,
            protocol: str, strict: bool) -> None:
    """Build TurnNat timing perturbation pairs (five types, 20-25 s crops, sidecars)."""
    from bargein.perturb.sources import load_sources
    from bargein.pipeline import perturb_spec, run_stages
    from bargein.records import RenderedDialogue

    g = get_globals()
    require_file(input_path, "--input", "give rendered.jsonl, a folder of stereo files or an HF dataset")
    kinds = [t.strip() for t in types.split(",") if t.strip()]
    out = out or g.workdir / "perturb"
    dialogues = load_sources(input_path, g.workdir, audio_column=audio_column, split=split)
    spec = perturb_spec({"types": kinds, "per_type": per_type, "vad": vad,
                         "sample_rate": sample_rate, "protocol": protocol, "strict": strict,
                         "out_dir": str(out)})
    s = run_stages([spec], workdir=g.workdir, seed=g.resolve_seed(), workers=workers,
                   records={RenderedDialogue: dialogues})["perturb"].result
    click.echo(f"{s['pairs']} pairs ({protocol}) from {s['scanned']}/{s['dialogues']} dialogues -> "
               f"{out}/pairs.jsonl")
    for t in kinds:
        short = "" if s["per_type"][t] >= per_type else "  (quota not met: too few candidates)"
        click.echo(f"  {t:24s} {s['per_type'][t]:4d} / {per_type}   candidates {s['candidates'][t]}{short}")
    if s["skipped"]:
        click.echo(f"  {s['skipped']} skipped with reasons in {out}/skipped.jsonl")
    fail_if_nothing(s["pairs"], f"no perturbation pair was built from {s['dialogues']} dialogues; "
                    f"reasons in {out}/skipped.jsonl")
