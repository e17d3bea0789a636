"""Prompt templates: one Jinja2 file per LLM agent (and branch), rendered strictly.

Each file starts with a header comment::

    {# agent: user_simulator.interrupting  version: 2  output: UserTurnPlan #}

Templates render in a sandboxed environment with ``StrictUndefined``: a missing variable
raises an error that names it. ``prompt_hash(name)`` enters the runner's cache keys, so
editing a prompt invalidates exactly the stages that use it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import StrictUndefined, meta
from jinja2.exceptions import TemplateSyntaxError, UndefinedError
from jinja2.sandbox import SandboxedEnvironment

from bargein.errors import ConfigError

_HEADER = re.compile(r"^\{#\s*(?P<body>.*?)\s*#\}", re.S)
_FIELD = re.compile(r"(\w+):\s*(\S+)")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    agent: str
    version: str
    output: str
    source: str
    sha256: str

    @property
    def variables(self) -> list[str]:
        return sorted(meta.find_undeclared_variables(_env().parse(self.source)))


@lru_cache(maxsize=1)
def _env() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True,
                                trim_blocks=True, lstrip_blocks=True, autoescape=False)


def _files():
    return resources.files("bargein.prompts")


def list_prompts() -> list[str]:
    return sorted(p.name[: -len(".jinja2")] for p in _files().iterdir()
                  if p.name.endswith(".jinja2"))


@lru_cache(maxsize=None)
def load(name: str) -> PromptTemplate:
    path = _files() / f"{name}.jinja2"
    if not path.is_file():
        raise ConfigError(f"no prompt named {name!r}. Valid prompts: {', '.join(list_prompts())}")
    source = path.read_text(encoding="utf-8")
    m = _HEADER.match(source)
    if not m:
        raise ConfigError(f"prompt {name!r} lacks its header "
                          "'{# agent: NAME  version: N  output: SCHEMA #}'")
    fields = dict(_FIELD.findall(m.group("body")))
    missing = {"agent", "version", "output"} - set(fields)
    if missing:
        raise ConfigError(f"prompt {name!r} header lacks {sorted(missing)}")
    return PromptTemplate(name=name, agent=fields["agent"], version=fields["version"],
                          output=fields["output"], source=source,
                          sha256=hashlib.sha256(source.encode("utf-8")).hexdigest())


def prompt_hash(name: str) -> str:
    return load(name).sha256


@lru_cache(maxsize=None)
def _compiled(name: str, sha256: str):
    return _env().from_string(load(name).source)


def render(name: str, **variables: Any) -> str:
    """Render a prompt; a missing variable raises :class:`ConfigError` naming it."""
    tpl = load(name)
    try:
        return _compiled(name, tpl.sha256).render(**variables).strip() + "\n"
    except UndefinedError as e:
        raise ConfigError(f"prompt {name!r}: {e}. Variables it uses: {tpl.variables}") from e
    except TemplateSyntaxError as e:
        raise ConfigError(f"prompt {name!r} line {e.lineno}: {e.message}") from e


class _Placeholder:
    """Stands in for any variable in ``show``: prints <name>, iterates once, has any attribute."""

    def __init__(self, name: str):
        self._name = name

    def __str__(self) -> str:
        return f"<{self._name}>"

    def __getattr__(self, attr: str) -> "_Placeholder":
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(f"{self._name}.{attr}")

    def __getitem__(self, key: Any) -> "_Placeholder":
        return _Placeholder(f"{self._name}[{key}]")

    def __iter__(self):
        # two elements, so both `for x in xs` and `for a, b in pairs` render
        return iter([_Placeholder(f"{self._name}[0]"), _Placeholder(f"{self._name}[1]")])

    def __len__(self) -> int:
        return 2

    def __bool__(self) -> bool:
        return True

    def items(self):
        return [(_Placeholder(f"{self._name}.key"), _Placeholder(f"{self._name}.value"))]


def show(name: str) -> str:
    """Render a prompt with ``<placeholders>`` for review."""
    tpl = load(name)
    return render(name, **{v: _Placeholder(v) for v in tpl.variables})
