"""What every command module shares: the global options and small helpers.

Command modules in the stage folders import this module; ``bargein.cli`` imports them lazily,
so there is no import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from bargein.errors import ConfigError


@dataclass
class Globals:
    seed: int = 1234
    workdir: Path = Path("work")
    verbose: int = 0


def get_globals() -> Globals:
    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, Globals):
        root.obj = Globals()
    return root.obj


pass_globals = click.make_pass_decorator(Globals, ensure=True)


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
