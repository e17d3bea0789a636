"""``bargein respond``: a model's responses for every eval item of a release, per epoch."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import fail_if_nothing, get_globals


@click.command("respond")
@click.option("--release", "release", required=True,
              help="Release folder or ORG/NAME@vX.Y.Z on the Hub.")
@click.option("--llm", required=True,
              help="PROVIDER:MODEL (openai:..., anthropic:..., llamacpp:PATH), or 'offline' "
                   "(rule-based responder) / 'oracle' (gold recoveries).")
@click.option("--epochs", default=3, show_default=True, type=int)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="responses.jsonl")
@click.option("--concurrency", default=8, show_default=True, type=int)
@click.option("--temperature", default=0.7, show_default=True, type=float)
@click.option("--endpoint", help="Hub endpoint for ORG/NAME@REV releases.")
def respond(release: str, llm: str, epochs: int, out: Path, concurrency: int,
            temperature: float, endpoint: str | None) -> None:
    """Produce responses.jsonl for `bargein score ihbench`."""
    from bargein.scorers.respond import generate_responses

    g = get_globals()
    n = generate_responses(release, llm=llm, epochs=epochs, out=out, seed=g.seed,
                           workdir=g.workdir, concurrency=concurrency, temperature=temperature,
                           endpoint=endpoint)
    kind = {"offline": " (offline rule-based responder)", "oracle": " (gold recoveries)"}.get(
        llm.strip().lower(), "")
    click.echo(f"wrote {n} responses to {out}{kind}")
    fail_if_nothing(n, f"no response was produced for {release}")
