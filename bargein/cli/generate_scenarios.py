"""``bargein generate scenarios``: sample and build scenarios into the work directory."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import click

from bargein.cli.util import FiniteFloat, fail_if_nothing, get_globals


@click.command("scenarios")
@click.option("--n", "n", type=click.IntRange(1, None), default=50, show_default=True,
              help="Number of (domain, goal, intent) configurations to sample.")
@click.option("--seed", type=int, default=None,
              help="Seed for this command (default: the global --seed).")
@click.option("--llm", default="offline", show_default=True,
              help="offline | openai:MODEL | anthropic:MODEL | llamacpp:PATH.gguf")
@click.option("--domains", default="", help="Comma-separated domain names (default: all 10).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also copy the scenarios JSONL here.")
@click.option("--budget", type=FiniteFloat(min=0),  default=None, help="Spend cap in USD for the LLM path.")
def scenarios(n: int, seed: int | None, llm: str, domains: str, out: Path | None,
              budget: float | None) -> None:
    """Sample scenarios (domain x goal x intent) with KBs, system prompts and user intents.

    Writes WORKDIR/scenarios.jsonl (one Scenario per line) through the runner: cached,
    resumable, failures in WORKDIR/scenarios.failures.jsonl.
    """
    from bargein.generators.scenarios import STAGE_NAME
    from bargein.pipeline import run_stages, scenarios_spec

    g = get_globals()
    seed = g.resolve_seed(seed)
    spec = scenarios_spec({"llm": llm, "n": n, "domains": domains or None, "budget_usd": budget})
    res = run_stages([spec], workdir=g.workdir, seed=seed)["scenarios"].result
    path = g.workdir / f"{STAGE_NAME}.jsonl"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
    by_domain = Counter(s.domain.name for s in res.outputs)
    click.echo(f"{len(res.outputs)} scenarios ({res.cached} cached, {res.computed} computed) "
               f"-> {out or path}")
    click.echo(f"domains covered: {len(by_domain)} ("
               + ", ".join(f"{d} {c}" for d, c in sorted(by_domain.items())) + ")")
    click.echo(f"failures: {len(res.failures)}"
               + (f" (see {g.workdir / f'{STAGE_NAME}.failures.jsonl'})" if res.failures else ""))
    for f in res.failures[:5]:
        click.echo(f"  {f.item_id}: {f.reason.splitlines()[0][:160]}")
    if res.budget_stopped:
        click.echo(f"budget reached: {res.skipped} items not started; re-run to resume")
    first = f" (first: {res.failures[0].reason.splitlines()[0][:200]})" if res.failures else ""
    fail_if_nothing(len(res.outputs), f"no scenario was generated: {len(res.failures)} failed{first}; "
                    f"see {g.workdir / f'{STAGE_NAME}.failures.jsonl'}")
