"""``bargein``: noun-verb commands, each a thin wrapper over one library function.

Every command lives in this package, one module per noun (``bargein.cli.render``,
``bargein.cli.release``, ...), and loads lazily, so ``bargein --help`` is fast and a stage whose
optional dependencies are missing does not break the others. Library code never lives here:
a command parses its options, calls its stage's library function and prints the summary.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from bargein import __version__
from bargein.cli.score import SCORE_COMMANDS as SCORE_COMMANDS  # the table tests walk
from bargein.cli.util import DEFAULT_SEED, Globals, LazyGroup
from bargein.errors import BargeinError

# command name -> "module:attribute" of a click command or group
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("bargein.cli.build:build", "The whole pipeline: config -> release folder."),
    "generate": ("bargein.cli.generate:generate", "Generate scenarios or conversations."),
    "verify": ("bargein.cli.verify:verify", "Verify and repair conversations."),
    "baseline": ("bargein.cli.baseline:baseline", "Fill eval items' baseline responses."),
    "render": ("bargein.cli.render:render", "Render conversations to two-channel audio."),
    "mask": ("bargein.cli.mask:mask", "Build masked-audio repair items."),
    "perturb": ("bargein.cli.perturb:perturb", "Build TurnNat timing perturbation pairs."),
    "turnnat": ("bargein.cli.turnnat:turnnat", "Train the built-in turn-taking predictor."),
    "release": ("bargein.cli.release:release", "Build, push, pull and diff releases."),
    "respond": ("bargein.cli.respond:respond", "Produce model responses for a release."),
    "backends": ("bargein.cli.backends:backends", "List registered backends."),
    "score": ("bargein.cli.score:score", "Score model outputs against a release."),
    "prompts": ("bargein.cli.prompts:prompts", "List and show the prompt templates."),
    "schema": ("bargein.cli.schema:schema", "Write the JSON Schema of every record."),
    "inspect": ("bargein.cli.inspect:inspect", "A static site to listen to and look at a release."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bargein")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True,
              help="Global seed for every command; given explicitly it also overrides a build "
                   "config's seed (a command's own --seed wins over it).")
@click.option("--workdir", type=click.Path(path_type=Path), default=Path("work"),
              show_default=True, help="Work directory (cache, stage outputs, failures).")
@click.option("-v", "--verbose", count=True, help="More logging; -v also shows tracebacks.")
@click.pass_context
def cli(ctx: click.Context, seed: int, workdir: Path, verbose: int) -> None:
    """bargein: spoken-interaction benchmarks and training data for voice agents."""
    if workdir.exists() and not workdir.is_dir():
        raise click.BadParameter(f"{str(workdir)!r} is a file, not a folder. Fix: name a folder "
                                 "for the work dir.", param_hint="'--workdir'")
    given = ctx.get_parameter_source("seed") not in (None, click.core.ParameterSource.DEFAULT)
    ctx.obj = Globals(seed=seed, workdir=workdir, verbose=verbose, seed_given=given)
    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO if verbose else
                        logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns 0, or exits with the command's non-zero code.

    0: the command produced what it was asked for. 1: it ran but produced nothing useful (every
    item failed, no pairs, every LLM call refused), with a one-line summary on stderr. 2: a user
    error (bad option, config or input), one clear line (``-v`` shows the traceback).
    130: interrupted (re-run the same command to resume).
    """
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    finally:
        # Every cache entry and ledger queued for the writer thread is on disk before control
        # leaves the command, also when the caller ends the process without exit hooks
        # (``os._exit`` after a fork, an embedding host): a daemon writer stopped mid-write
        # would leave a half-written temp file in the cache.
        from bargein.cache import flush_writes

        flush_writes(60.0)


def _main(args: list[str]) -> int:
    verbose = any(a in ("-v", "--verbose") or (a.startswith("-v") and set(a[1:]) == {"v"})
                  for a in args)
    try:
        # standalone_mode=False: click returns the code of ``ctx.exit``/``Exit`` instead of exiting
        rv = cli.main(args=args, prog_name="bargein", standalone_mode=False)
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
    code = rv if isinstance(rv, int) else 0
    if code:
        sys.exit(code)
    return 0          # the console script does sys.exit(main())
