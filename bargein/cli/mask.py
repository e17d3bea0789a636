"""``bargein mask``: rendered conversations or a spoken QA dataset -> masked repair items."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bargein.cli.util import FiniteFloat, fail_if_nothing, get_globals, require_file
from bargein.errors import ConfigError


def _csv(value: str, option: str) -> tuple[str, ...]:
    out = tuple(v.strip() for v in value.split(",") if v.strip())
    if not out:
        raise ConfigError(f"{option} {value!r}: give a comma-separated list")
    return out


def _windows(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in _csv(value, "--windows"))
    except ValueError:
        raise ConfigError(f"--windows {value!r}: give integers in ms, e.g. --windows 0,50,100") from None


def _find_conversations(rendered: Path, workdir: Path) -> Path:
    for d in (rendered.parent, workdir):
        for name in ("verified.jsonl", "conversations.jsonl"):
            if (d / name).is_file():
                return d / name
    raise ConfigError(f"no conversations file beside {rendered} or in {workdir} (looked for "
                      "verified.jsonl, conversations.jsonl). Fix: pass --conversations FILE")


@click.command("mask")
@click.option("--rendered", type=click.Path(path_type=Path),
              help="RenderedDialogue JSONL (render.jsonl written by 'bargein render').")
@click.option("--conversations", type=click.Path(path_type=Path),
              help="The conversations that were rendered (default: verified.jsonl or "
                   "conversations.jsonl beside --rendered or in the work dir).")
@click.option("--audio-root", type=click.Path(path_type=Path),
              help="Folder the rendered audio paths are relative to (default: the folder of --rendered).")
@click.option("--qa-dataset", help="Spoken QA: a saved HF dataset folder, a .parquet file/folder or a Hub id.")
@click.option("--split", help="Dataset split (default: test, or the only one).")
@click.option("--audio-column", default="audio", show_default=True)
@click.option("--question-column", default="question", show_default=True)
@click.option("--answer-column", default="answer", show_default=True)
@click.option("--transcript-column", default=None, help="Transcript column (default: none; Whisper transcribes).")
@click.option("--id-column", default=None, help="Example id column (default: split-row number).")
@click.option("--limit", type=int, default=None, help="Only the first N examples.")
@click.option("--signals", default="white_noise,silence,music", show_default=True,
              help="Mask signals, comma-separated.")
@click.option("--windows", default="0,50,100", show_default=True,
              help="Window expansion in ms (± around each span), comma-separated.")
@click.option("--snr", "snr_db", type=FiniteFloat(), default=None,
              help="Mask level in dB below the utterance's speech level (default: RMS-matched to "
                   "the replaced speech).")
@click.option("--fade-ms", type=FiniteFloat(min=0), default=8.0, show_default=True,
              help="Equal-power fades (5-10 ms).")
@click.option("--aligner", type=click.Choice(["auto", "synth", "whisper", "mfa"]), default="auto",
              show_default=True, help="auto: the renderer's timings for conversations, Whisper for QA.")
@click.option("--facts", type=click.Choice(["required", "all"]), default="required", show_default=True,
              help="Conversations: mask facts the workflow requires, or every user fact.")
@click.option("--slots", default=None, help="Conversations: only these fact keys, comma-separated.")
@click.option("--max-per-dialogue", type=int, default=None, help="At most N sources per dialogue.")
@click.option("--span-picker", default="offline", show_default=True,
              help="QA: PROVIDER:MODEL to locate answers not found verbatim in the transcript.")
@click.option("--workers", type=click.IntRange(1, None), default=None,
              help="Worker processes (default: cores).")
@click.option("--asr-check", is_flag=True,
              help="Transcribe every item with Whisper and print how often answerable variants "
                   "still say the value and unanswerable ones no longer do (slow).")
@click.option("--out", type=click.Path(path_type=Path), help="Also copy the items JSONL here.")
def mask(rendered, conversations, audio_root, qa_dataset, split, audio_column, question_column,
         answer_column, transcript_column, id_column, limit, signals, windows, snr_db, fade_ms,
         aligner, facts, slots, max_per_dialogue, span_picker, workers, asr_check, out) -> None:
    """Build paired answerable / unanswerable masked-audio repair items (Pardon?/EAR).

    Writes <workdir>/mask.jsonl (MaskedItem records), mask.failures.jsonl, and audio under
    <workdir>/artifacts/mask/.
    """
    from pydantic import ValidationError

    from bargein.masking.items import MaskConfig
    from bargein.masking.stage import asr_check as run_asr_check, asr_rates
    from bargein.pipeline import mask_qa_spec, mask_spec, run_stages
    from bargein.store import atomic_write_text

    g = get_globals()
    if (rendered is None) == (qa_dataset is None):
        raise ConfigError("give exactly one source: --rendered render.jsonl or --qa-dataset PATH")
    try:
        config = MaskConfig(signals=_csv(signals, "--signals"), windows_ms=_windows(windows),
                            snr_db=snr_db, fade_ms=fade_ms, aligner=aligner, facts=facts,
                            slots=_csv(slots, "--slots") if slots else (),
                            max_per_dialogue=max_per_dialogue, span_picker=span_picker)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"mask option {key}={err.get('input')!r}: {err['msg']}") from None
    if rendered is not None:
        from bargein.audio.render import load_conversations
        from bargein.records import RenderedDialogue, VerifiedConversation
        from bargein.store import read_jsonl

        require_file(rendered, "--rendered", "pass the render.jsonl written by 'bargein render'")
        conv_path = conversations or _find_conversations(rendered, g.workdir)
        require_file(conv_path, "--conversations", "pass the conversations JSONL that was rendered")
        convs, bad = load_conversations(conv_path)
        if bad:
            click.echo(f"{len(bad)} unreadable lines in {conv_path} skipped (first: {bad[0].reason[:200]})",
                       err=True)
        convs = [c.conversation if isinstance(c, VerifiedConversation) else c for c in convs]
        spec = mask_spec({"mask": config.model_dump(mode="json"),
                          "audio_root": str(audio_root or rendered.parent)})
        # the conversations stand for the verified ones (the masker reads either)
        result = run_stages([spec], workdir=g.workdir, seed=g.resolve_seed(), workers=workers,
                            records={RenderedDialogue: read_jsonl(rendered, RenderedDialogue),
                                     VerifiedConversation: convs})["mask"].result
        kind = "rendered dialogues"
    else:
        spec = mask_qa_spec({"mask": config.model_dump(mode="json"), "dataset": str(qa_dataset),
                             "split": split, "audio_column": audio_column,
                             "question_column": question_column, "answer_column": answer_column,
                             "transcript_column": transcript_column, "id_column": id_column,
                             "limit": limit})
        result = run_stages([spec], workdir=g.workdir, seed=g.resolve_seed(),
                            workers=workers)["mask"].result
        kind = f"QA examples from {qa_dataset}"
    items = result.outputs
    sources_ok = len({(i.source_id, i.message_index, i.slot) for i in items})
    click.echo(f"{len(items)} masked items from {sources_ok} utterances of {kind} "
               f"({result.cached} cached, {result.computed} computed) in {result.wall_s:.1f} s")
    click.echo(f"signals {','.join(config.signals)}; windows ±{','.join(map(str, config.windows_ms))} ms; "
               f"level {config.level}; fades {config.fade_ms:g} ms")
    click.echo(f"outputs: {g.workdir / 'mask.jsonl'}")
    if out is not None:
        atomic_write_text(out, (g.workdir / "mask.jsonl").read_text(encoding="utf-8"))
    if result.failures:
        click.echo(f"{len(result.failures)} failed (see {g.workdir / 'mask.failures.jsonl'}):", err=True)
        for f in result.failures[:5]:
            click.echo(f"  {f.item_id}: {f.error_type}: {f.reason[:300]}", err=True)
    if asr_check and items:
        rows = run_asr_check(items, g.workdir)
        rates = asr_rates(rows)
        atomic_write_text(g.workdir / "mask.asr_check.jsonl",
                          "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
        click.echo(f"asr check: answerable_value_kept={rates['answerable_value_kept']:.3f} "
                   f"(n={rates['n_answerable']}), unanswerable_value_removed="
                   f"{rates['unanswerable_value_removed']:.3f} (n={rates['n_unanswerable']}); "
                   f"details in {g.workdir / 'mask.asr_check.jsonl'}")
    fail_if_nothing(len(items), f"no masked item was built ({len(result.failures)} failed); "
                    f"see {g.workdir / 'mask.failures.jsonl'}")
