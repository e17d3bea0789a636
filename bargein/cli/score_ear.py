"""``bargein score ear``: C, R and EAR of a responses file on masked repair items."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.score_validate import set_llamacpp_threads, threads_option
from bargein.cli.util import echo_report, fail_if_nothing, get_globals


@click.command("ear")
@click.option("--items", "items", required=True,
              help="MaskedItem JSONL written by 'bargein mask' (e.g. work/mask.jsonl), or a release "
                   "folder / ORG/NAME@vX.Y.Z whose 'repair' config holds them.")
@click.option("--responses", required=True, type=click.Path(path_type=Path),
              help='JSONL: {"item_id", "response"[, "epoch"]} per item (and epoch).')
@click.option("--judge", default=None,
              help="The judge model, PROVIDER:MODEL (openai:gpt-4o-mini, anthropic:..., "
                   "llamacpp:PATH) [default: $BARGEIN_JUDGE]; 'smoke' runs rule-based checks for "
                   "pipeline tests (smoke test, not a score).")
@click.option("--out", type=click.Path(path_type=Path),
              help="Write item_scores.jsonl, report.json and tables.md here.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=click.IntRange(min=0),
              help="Bootstrap iterations for the 95% CIs (resampling source utterances).")
@click.option("--concurrency", default=8, show_default=True, type=int, help="Parallel judge calls.")
@click.option("--allow-missing", is_flag=True, help="Score items without a response as empty responses.")
@click.option("--endpoint", help="Hub endpoint for ORG/NAME@REV releases.")
@threads_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def ear(items: str, responses: Path, judge: str | None, out: Path | None, n_boot: int, concurrency: int,
        allow_missing: bool, endpoint: str | None, threads: int | None, as_json: bool) -> None:
    """Score responses with EAR = 2CR/(C+R), per signal and window, with bootstrap CIs.

    C: accuracy on answerable items; R: 1 slot-aware repair, 0.5 generic refusal, 0 answer
    (hallucination / unaware) on unanswerable items.
    """
    from bargein.scorers.ear import score_ear

    g = get_globals()
    set_llamacpp_threads(threads)
    report = score_ear(items, responses, judge=judge, out=out, seed=g.seed, n_boot=n_boot,
                       concurrency=concurrency, workdir=g.workdir, allow_missing=allow_missing,
                       endpoint=endpoint)
    echo_report(report, as_json=as_json, out=out, wrote="item_scores.jsonl, issues.jsonl, report.json, tables.md")
    fail_if_nothing(len(report.scores), f"no item of {items} could be scored")
