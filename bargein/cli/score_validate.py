"""``bargein score validate-judge``: a judge's agreement with the hand-labelled control set."""

from __future__ import annotations

import click

from bargein.cli.util import get_globals

PARTS = {"all": None, "tf": ("tf",), "rq": ("rq",), "ear": ("ear_r", "ear_c")}


def threads_option(f):
    """``--threads N``: the CPU threads of an in-process ``llamacpp`` judge model."""
    return click.option(
        "--threads", type=click.IntRange(min=1), default=None,
        help="CPU threads of an in-process llamacpp judge model (the provider setting n_threads; "
             "also BARGEIN_LLM_SETTINGS=llamacpp.n_threads=N) [default: the setting, else the "
             "machine's cores, at most 4].")(f)


def set_llamacpp_threads(threads: int | None) -> None:
    """Make ``threads`` the ``llamacpp`` provider's ``n_threads`` setting for this process."""
    if threads is None:
        return
    from bargein import registry

    registry.set_options("llm", "llamacpp", **{**registry.options("llm", "llamacpp"), "n_threads": threads})


@click.command("validate-judge")
@click.option("--judge", default=None,
              help="PROVIDER:MODEL [default: $BARGEIN_JUDGE], or 'smoke' for the rule-based checks.")
@click.option("--scorer", type=click.Choice(["all", "ihbench", "ear"]), default="all",
              show_default=True, help="Which judges to validate.")
@click.option("--part", type=click.Choice(list(PARTS)), default="all", show_default=True,
              help="Which judgments: tf (IHBench pairwise), rq (IHBench rubric), ear (EAR repair "
                   "category and correctness) or all.")
@click.option("--split", "split_",
              type=click.Choice(["all", "dev", "heldout", "heldout2", "dev+heldout"]), default="all",
              show_default=True,
              help="Control-set cases: dev (for prompt work), heldout (the first held-out part, "
                   "development material since judge v6), heldout2 (written before judge v6: "
                   "report these), dev+heldout or all.")
@click.option("--rq-mode", type=click.Choice(["split", "criteria", "all"]), default="split",
              show_default=True,
              help="RQ protocol of a model judge: split (a criterion that asks for something is "
                   "asked for the words that meet it, one that forbids something for the words "
                   "that break it), criteria (every criterion asked for the words that meet it), "
                   "all (every criterion in one call).")
@click.option("--both-orders/--one-order", default=True, show_default=True,
              help="TF: judge each pair in both positions (a winner that changes with the position "
                   "is a tie) or once.")
@click.option("--grounding/--no-grounding", default=True, show_default=True,
              help="RQ: a quote must also name something of the conversation (a met criterion) or "
                   "say again what it forbids (a broken one), besides being words of the response.")
@threads_option
@click.option("--limit", type=int, default=None,
              help="A stratified subset of this many control judgments (for slow local models).")
@click.option("--concurrency", default=4, show_default=True, type=int, help="Parallel judge calls.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report (every verdict) as JSON.")
def validate_judge(judge: str | None, scorer: str, part: str, split_: str, rq_mode: str,
                   both_orders: bool, grounding: bool, threads: int | None, limit: int | None,
                   concurrency: int, as_json: bool) -> None:
    """Accuracy, Cohen's kappa and per-type confusion of a judge on the control set.

    A model judge's figures are saved under WORKDIR/judge_validation/ and printed by
    `bargein score ihbench | ear` beside every figure that judge produces (a judge run with
    other --rq-mode/--one-order/--no-grounding settings is another judge, saved apart).
    """
    import json

    from bargein.scorers.judge_validation import validate_judge as run

    g = get_globals()
    if limit is not None and limit < 1:
        raise click.BadParameter(f"{limit}: must be >= 1", param_hint="--limit")
    if part == "ear" and scorer == "ihbench" or part in ("tf", "rq") and scorer == "ear":
        raise click.BadParameter(f"--part {part} has no judgments with --scorer {scorer}",
                                 param_hint="--part")
    set_llamacpp_threads(threads)
    rep = run(judge, workdir=g.workdir, scorer=scorer, limit=limit, concurrency=concurrency,
              part=split_, axes=PARTS[part],
              judge_options={"rq_mode": rq_mode, "both_orders": both_orders, "grounding": grounding})
    if as_json:
        click.echo(json.dumps(rep.to_dict(), indent=2, sort_keys=True))
        return
    click.echo(rep.tables(), nl=False)
    if not rep.smoke:
        click.echo(f"saved to {g.workdir / 'judge_validation'}/ (read by `bargein score`)")
