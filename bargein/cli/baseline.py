"""``bargein baseline``: fill each eval item's ``baseline`` response.

    bargein baseline --llm openai:gpt-4o-audio-preview --items work/eval_items.jsonl
    bargein baseline --llm smoke --items work/eval_items.jsonl       # rule-based stand-in (smoke test)

The library is :mod:`bargein.generators.baseline`.
"""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals, require_file


@click.command("baseline")
@click.option("--llm", required=True,
              help="PROVIDER:MODEL that plays the baseline (IHBench: an audio chat model), or "
                   "'smoke' for the rule-based stand-in (pipeline tests only, never a score).")
@click.option("--temperature", default=0.7, show_default=True, type=float)
@click.option("--max-tokens", default=512, show_default=True, type=int)
@click.option("--items", "items_file", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="eval_items.jsonl from 'bargein generate conversations'.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Output JSONL [default: WORKDIR/baseline.jsonl].")
def baseline(llm: str, temperature: float, max_tokens: int, items_file: Path, out: Path | None) -> None:
    """Fill eval items' baseline responses."""
    from bargein.pipeline import baseline_spec, run_stages
    from bargein.records import EvalItem
    from bargein.store import read_jsonl, write_jsonl

    g = get_globals()
    require_file(items_file, "--items", "pass the eval_items.jsonl written by "
                 "'bargein generate conversations'")
    items = read_jsonl(items_file, EvalItem)
    spec = baseline_spec({"llm": llm, "temperature": temperature, "max_tokens": max_tokens})
    res = run_stages([spec], workdir=g.workdir, seed=g.resolve_seed(),
                     records={EvalItem: items})["baseline"].result
    out = out or g.workdir / "baseline.jsonl"
    write_jsonl(out, res.outputs)
    made_by = res.outputs[0].baseline_model if res.outputs else llm
    click.echo(f"{len(res.outputs)} baselines ({made_by}) -> {out}; "
               f"{len(res.failures)} failed")
    first = f" (first: {res.failures[0].reason.splitlines()[0][:200]})" if res.failures else ""
    fail_if_nothing(len(res.outputs), f"no baseline was produced: {len(res.failures)} failed{first}; "
                    f"see {g.workdir / 'baseline.failures.jsonl'}")
