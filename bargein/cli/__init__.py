"""``bargein``: noun-verb commands, each a thin wrapper over one library function.

Commands live in the stage folders and load lazily, so ``bargein --help`` is fast and a
stage whose optional dependencies are missing does not break the others.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from bargein import __version__
from bargein.cliutil import Globals, LazyGroup
from bargein.errors import BargeinError

# command name -> "module:attribute" of a click command or group
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("bargein.releases.build_cli:build", "The whole pipeline: config -> release folder."),
    "generate": ("bargein.generators.cli:generate", "Generate scenarios or conversations."),
    "verify": ("bargein.verify.cli:verify", "Verify and repair conversations."),
    "baseline": ("bargein.generators.baseline_cli:baseline", "Fill eval items' baseline responses."),
    "render": ("bargein.audio.cli:render", "Render conversations to two-channel audio."),
    "mask": ("bargein.masking.cli:mask", "Build masked-audio repair items."),
    "perturb": ("bargein.perturb.cli:perturb", "Build TurnNat timing perturbation pairs."),
    "turnnat": ("bargein.scorers.turnnat_cli:turnnat", "Train the built-in turn-taking predictor."),
    "release": ("bargein.releases.cli:release", "Build, push, pull and diff releases."),
    "respond": ("bargein.scorers.respond_cli:respond", "Produce model responses for a release."),
    "backends": ("bargein.backends_cli:backends", "List registered backends."),
}
SCORE_COMMANDS: dict[str, tuple[str, str]] = {
    "ihbench": ("bargein.scorers.ihbench_cli:ihbench", "TF win rate and RQ pass rate."),
    "ear": ("bargein.scorers.ear_cli:ear", "EAR on repair items."),
    "turnnat": ("bargein.scorers.turnnat_cli:score_turnnat", "TurnNat pair accuracy / C-index."),
    "timing": ("bargein.scorers.timing_cli:timing", "FD-Bench and Talking-Turns timing metrics."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bargein")
@click.option("--seed", type=int, default=1234, show_default=True, help="Global seed.")
@click.option("--workdir", type=click.Path(path_type=Path), default=Path("work"),
              show_default=True, help="Work directory (cache, stage outputs, failures).")
@click.option("-v", "--verbose", count=True, help="More logging; -v also shows tracebacks.")
@click.pass_context
def cli(ctx: click.Context, seed: int, workdir: Path, verbose: int) -> None:
    """bargein: spoken-interaction benchmarks and training data for voice agents."""
    ctx.obj = Globals(seed=seed, workdir=workdir, verbose=verbose)
    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO if verbose else
                        logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@cli.group(cls=LazyGroup, lazy=SCORE_COMMANDS)
def score() -> None:
    """Score model outputs against a release."""


@cli.group()
def prompts() -> None:
    """List and show the prompt templates."""


@prompts.command("list")
def prompts_list() -> None:
    """Every prompt with its agent, version and output schema."""
    from bargein import prompts as P

    for name in P.list_prompts():
        t = P.load(name)
        click.echo(f"{name:40s} agent={t.agent} version={t.version} output={t.output} "
                   f"sha256={t.sha256[:12]}")


@prompts.command("show")
@click.argument("name")
def prompts_show(name: str) -> None:
    """Render NAME with <placeholders> for every variable."""
    from bargein import prompts as P

    t = P.load(name)
    click.echo(f"# {name}: agent={t.agent} version={t.version} output={t.output}")
    click.echo(P.show(name))


@cli.command("schema")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output folder.")
def schema(out: Path) -> None:
    """Write the JSON Schema of every record to OUT/<Record>.schema.json."""
    from bargein.records import ALL_RECORDS
    from bargein.store import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    for rec in ALL_RECORDS:
        atomic_write_text(out / f"{rec.__name__}.schema.json",
                          json.dumps(rec.model_json_schema(), indent=2, sort_keys=True) + "\n")
    click.echo(f"wrote {len(ALL_RECORDS)} schemas to {out}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors print one clear line (``-v`` shows the traceback)."""
    args = sys.argv[1:] if argv is None else argv
    verbose = any(a in ("-v", "--verbose") or (a.startswith("-v") and set(a[1:]) == {"v"})
                  for a in args)
    try:
        cli.main(args=args, prog_name="bargein", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BargeinError as e:
        if verbose:
            raise
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted; re-run the same command to resume", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
