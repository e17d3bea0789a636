"""``bargein prompts list | show``."""

from __future__ import annotations

import click


@click.group()
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
