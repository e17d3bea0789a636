"""``bargein score ihbench``: TF win rate and RQ pass rate of a responses file on a release."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.score_validate import set_llamacpp_threads, threads_option
from bargein.cli.util import echo_report, fail_if_nothing, get_globals


@click.command("ihbench")
@click.option("--release", "release", required=True,
              help="Release folder or ORG/NAME@vX.Y.Z on the Hub.")
@click.option("--responses", required=True, type=click.Path(path_type=Path),
              help='JSONL: {"item_id", "epoch", "response"} per item and epoch.')
@click.option("--judge", default=None,
              help="The judge model, PROVIDER:MODEL (openai:gpt-4o-mini, anthropic:..., "
                   "llamacpp:PATH) [default: $BARGEIN_JUDGE]; 'smoke' runs rule-based checks for "
                   "pipeline tests (smoke test, not a score).")
@click.option("--epochs", default=3, show_default=True, type=int, help="Epochs per item.")
@click.option("--out", type=click.Path(path_type=Path),
              help="Write item_scores.jsonl, report.json, tables.md and plots/ here.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=click.IntRange(min=0),
              help="Bootstrap iterations for the 95% CIs.")
@click.option("--concurrency", default=8, show_default=True, type=int, help="Parallel judge calls.")
@click.option("--endpoint", help="Hub endpoint for ORG/NAME@REV releases.")
@threads_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def ihbench(release: str, responses: Path, judge: str | None, epochs: int, out: Path | None,
            n_boot: int, concurrency: int, endpoint: str | None, threads: int | None, as_json: bool) -> None:
    """Score responses with the IHBench judges (3 epochs, bootstrap CIs, per type and depth)."""
    from bargein.scorers.ihbench import score_ihbench

    g = get_globals()
    set_llamacpp_threads(threads)
    report = score_ihbench(release, responses, judge=judge, epochs=epochs, out=out, seed=g.seed,
                           n_boot=n_boot, concurrency=concurrency, workdir=g.workdir,
                           endpoint=endpoint)
    echo_report(report, as_json=as_json, out=out, wrote="item_scores.jsonl, issues.jsonl, report.json, tables.md, plots/")
    scored = max(report.overall["tf_win"]["n"], report.overall["rq_pass"]["n"])
    fail_if_nothing(scored, f"no item of {release} could be scored ({report.judge_failures} "
                    "judge failures; see issues.jsonl)")
