"""``bargein score validate-judge``: a judge's agreement with the hand-labelled control set."""

from __future__ import annotations

import click

from bargein.cli.util import get_globals


@click.command("validate-judge")
@click.option("--judge", default=None,
              help="PROVIDER:MODEL [default: $BARGEIN_JUDGE], or 'smoke' for the rule-based checks.")
@click.option("--scorer", type=click.Choice(["all", "ihbench", "ear"]), default="all",
              show_default=True, help="Which judges to validate.")
@click.option("--limit", type=int, default=None,
              help="A stratified subset of this many control judgments (for slow local models).")
@click.option("--concurrency", default=4, show_default=True, type=int, help="Parallel judge calls.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report (every verdict) as JSON.")
def validate_judge(judge: str | None, scorer: str, limit: int | None, concurrency: int,
                   as_json: bool) -> None:
    """Accuracy, Cohen's kappa and per-type confusion of a judge on the control set.

    A model judge's figures are saved under WORKDIR/judge_validation/ and printed by
    `bargein score ihbench | ear` beside every figure that judge produces.
    """
    import json

    from bargein.scorers.judge_validation import validate_judge as run

    g = get_globals()
    if limit is not None and limit < 1:
        raise click.BadParameter(f"{limit}: must be >= 1", param_hint="--limit")
    rep = run(judge, workdir=g.workdir, scorer=scorer, limit=limit, concurrency=concurrency)
    if as_json:
        click.echo(json.dumps(rep.to_dict(), indent=2, sort_keys=True))
        return
    click.echo(rep.tables(), nl=False)
    if not rep.smoke:
        click.echo(f"saved to {g.workdir / 'judge_validation'}/ (read by `bargein score`)")
