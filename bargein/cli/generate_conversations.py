"""``bargein generate conversations``: scenarios -> conversations -> verified -> eval items -> SFT/DPO.

    bargein generate conversations --scenarios 50 --seed 7              # offline, rule-based
    bargein generate conversations --scenarios-file work/scenarios.jsonl --llm openai:gpt-4o-mini
"""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals, require_file


@click.command("conversations")
@click.option("--scenarios", "n", type=click.IntRange(1, None), default=None,
              help="How many scenarios to simulate [default: 50, or all in --scenarios-file].")
@click.option("--scenarios-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Scenario JSONL (from 'bargein generate scenarios'); generated when absent.")
@click.option("--seed", type=int, default=None, help="Seed [default: the global --seed].")
@click.option("--llm", default="offline", show_default=True,
              help="'offline' (rule-based agents) or PROVIDER:MODEL for every agent.")
@click.option("--verify-rounds", type=click.IntRange(0, 10), default=3, show_default=True,
              help="Verifier-modifier rounds before an unfixed conversation is discarded.")
@click.option("--resamples", type=click.IntRange(0, 10), default=2, show_default=True,
              help="Times a scenario whose conversation is discarded is simulated again (new seed).")
@click.option("--domains", default=None, help="Comma-separated domains when generating scenarios.")
@click.option("--no-exports", is_flag=True, help="Skip sft.jsonl and dpo.jsonl.")
def conversations(n: int | None, scenarios_file: Path | None, seed: int | None, llm: str,
                  verify_rounds: int, resamples: int, domains: str | None, no_exports: bool) -> None:
    """Simulate, verify and export conversations with interruptions; print the statistics."""
    from bargein.generators.stats import format_stats
    from bargein.pipeline import conversations_spec, run_stages, scenarios_spec
    from bargein.records import Scenario
    from bargein.store import read_jsonl

    g = get_globals()
    seed = g.resolve_seed(seed)
    if scenarios_file is not None:
        require_file(scenarios_file, "--scenarios-file",
                     "pass the scenarios.jsonl written by 'bargein generate scenarios'")
        scenarios = read_jsonl(scenarios_file, Scenario)
        scenarios = scenarios[:n] if n else scenarios
    else:
        spec = scenarios_spec({"llm": llm, "n": n or 50, "domains": domains, "budget_usd": None})
        res = run_stages([spec], workdir=g.workdir, seed=seed)["scenarios"].result
        scenarios = res.outputs
        if res.failures:
            click.echo(f"{len(res.failures)} scenarios failed (see {g.workdir}/scenarios.failures.jsonl)",
                       err=True)
    if not scenarios:
        raise click.ClickException("no scenarios to simulate")
    spec = conversations_spec({"llm": llm, "verify_rounds": verify_rounds, "resamples": resamples,
                               "sft": not no_exports,
                               "dpo": not no_exports})
    run = run_stages([spec], workdir=g.workdir, seed=seed,
                     records={Scenario: scenarios})["conversations"].result
    click.echo(format_stats(run.stats))
    files = ["conversations.jsonl", "verified.jsonl", "eval_items.jsonl"]
    files += [] if no_exports else ["sft.jsonl", "dpo.jsonl"]
    click.echo(f"wrote {', '.join(files)} and stats.json to {g.workdir}")
    fail_if_nothing(len(run.accepted), f"no conversation was accepted ({len(run.verified)} verified, "
                    f"every one discarded or failed); see {g.workdir / 'verified.jsonl'} and the "
                    "*.failures.jsonl files for the reasons")
