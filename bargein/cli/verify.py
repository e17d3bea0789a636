"""``bargein verify --conversations FILE [--llm SPEC] [--max-rounds N]``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals, require_file


@click.command("verify")
@click.option("--conversations", "conversations", required=True,
              type=click.Path(path_type=Path, dir_okay=False),
              help="Conversation JSONL (e.g. from 'bargein generate conversations').")
@click.option("--llm", "llm_spec", default="offline", show_default=True,
              help="'offline' (deterministic checks + rule-based modifier) or PROVIDER:MODEL "
                   "(adds LLM naturalness/type-fit checks and the LLM modifier).")
@click.option("--max-rounds", type=click.IntRange(0, 20), default=3, show_default=True,
              help="Modifier rounds before a still-failing conversation is discarded.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Output JSONL [default: WORKDIR/verified.jsonl].")
def verify(conversations: Path, llm_spec: str, max_rounds: int, out: Path | None) -> None:
    """Verify and repair conversations; accepted and discarded are both written (flagged)."""
    from bargein.runner import run_stage
    from bargein.store import write_jsonl
    from bargein.verify.inputs import read_conversations
    from bargein.verify.loop import summarize, verify_stage

    g = get_globals()
    require_file(conversations, "--conversations", "pass the JSONL written by "
                 "'bargein generate conversations'")
    convs, bad = read_conversations(conversations)     # a bad line fails alone, with evidence
    for f in bad:
        click.echo(f.reason, err=True)
    stage = verify_stage(llm_spec, max_rounds=max_rounds)
    res = run_stage(stage, convs, workdir=g.workdir, seed=g.seed, write_outputs=False)
    res.failures[:0] = bad
    out = out or g.workdir / "verified.jsonl"
    write_jsonl(out, res.outputs)
    write_jsonl(g.workdir / f"{stage.name}.failures.jsonl", res.failures)
    stats = summarize(res.outputs)
    stats["failed"] = len(res.failures)
    click.echo(f"verified {stats['conversations']} conversations: {stats['accepted']} accepted "
               f"({stats['repaired']} repaired), {stats['discarded']} discarded, "
               f"{stats['failed']} failed -> {out}")
    if stats["verdicts_by_check"]:
        click.echo("issues by check (total / fixable / unfixable):")
        for name, c in stats["verdicts_by_check"].items():
            click.echo(f"  {name:24s} {c['total']:5d} {c['fixable']:5d} {c['unfixable']:5d}")
    if stats["discards_by_check"]:
        click.echo("discards by reason:")
        for name, n in stats["discards_by_check"].items():
            click.echo(f"  {name:24s} {n:5d}")
    if res.failures:
        click.echo(f"failures: {g.workdir / (stage.name + '.failures.jsonl')}")
    if g.verbose:
        click.echo(json.dumps(stats, indent=2))
    fail_if_nothing(len(res.outputs), f"every conversation failed verification ({len(res.failures)}); "
                    f"see {g.workdir / (stage.name + '.failures.jsonl')}")
