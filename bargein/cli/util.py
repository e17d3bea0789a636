"""What every command module shares: the global options and small helpers.

Every command module in ``bargein.cli`` imports this module; the root group imports the
command modules lazily, so there is no import cycle.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path

import click

from bargein.errors import ConfigError, NotBuiltYet


DEFAULT_SEED = 1234


@dataclass
class Globals:
    seed: int = DEFAULT_SEED
    workdir: Path = Path("work")
    verbose: int = 0
    seed_given: bool = False        # --seed was on the command line (it then overrides a config's seed)

    def resolve_seed(self, local: int | None = None, config: int | None = None) -> int:
        """The one seed rule every command follows: a command's own ``--seed`` > the global
        ``--seed`` given on the command line > the config's ``seed`` > the global default."""
        if local is not None:
            return local
        if self.seed_given or config is None:
            return self.seed
        return config


def get_globals() -> Globals:
    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, Globals):
        root.obj = Globals()
    return root.obj


pass_globals = click.make_pass_decorator(Globals, ensure=True)


class FiniteFloat(click.ParamType):
    """A float option that refuses nan and ±inf (and, with ``min``, values below it)."""

    name = "number"

    def __init__(self, min: float | None = None):
        self.min = min

    def convert(self, value, param, ctx):
        if isinstance(value, float) and math.isfinite(value):
            x = value
        else:
            try:
                x = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number; give e.g. 10 or -5.5", param, ctx)
        if self.min is not None and x < self.min:
            self.fail(f"{value!r} is below the minimum {self.min:g}", param, ctx)
        return x


def parse_kv(values: tuple[str, ...], option: str) -> dict[str, str]:
    """Parse repeated ``KEY=VALUE`` options; a bad one names the option and the fix."""
    out = {}
    for v in values:
        if "=" not in v:
            raise ConfigError(f"{option} {v!r}: expected KEY=VALUE, e.g. {option} assistant=hibari:heart")
        k, val = v.split("=", 1)
        out[k.strip()] = val.strip()
    return out


def require_file(path: str | Path, what: str, hint: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{what} {str(p)!r} does not exist. Fix: {hint}")
    return p


def _not_built(name: str, target: str, err: Exception) -> click.Command:
    @click.command(name=name, context_settings={"ignore_unknown_options": True},
                   help="(not built yet)")
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def cmd(args):
        raise NotBuiltYet(f"'bargein {name}' is not built yet ({target} is missing: {err}).")

    return cmd


class LazyGroup(click.Group):
    def __init__(self, *args, lazy: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        if name not in self.lazy:
            return None
        target, _ = self.lazy[name]
        module, attr = target.split(":")
        try:
            cmd = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            if isinstance(e, ImportError) and e.name and not module.startswith(e.name):
                raise  # a real missing dependency inside the module: show it
            cmd = _not_built(name, target, e)
        return cmd

    def format_commands(self, ctx, formatter):
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                rows.append((name, self.lazy[name][1]))
            else:
                cmd = self.commands[name]
                rows.append((name, cmd.get_short_help_str(60)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def fail_if_nothing(produced: int, summary: str) -> None:
    """A command that ran but produced nothing useful exits 1 with a one-line summary on stderr.

    ``summary`` says what failed and where the evidence is (the failures file)."""
    if produced <= 0:
        click.echo(f"error: {summary}", err=True)
        raise click.exceptions.Exit(1)


def echo_report(report, *, as_json: bool, out, wrote: str) -> None:
    """Print a scorer's report as JSON or tables, and where its files went."""
    import json

    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str))
        return
    click.echo(report.tables(), nl=False)
    if out is not None:
        click.echo(f"wrote {out}/{wrote}")
