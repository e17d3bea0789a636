"""``bargein respond``: a model's responses for every eval item of a release, per epoch."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import FiniteFloat, fail_if_nothing, get_globals


@click.command("respond")
@click.option("--release", "release", required=True,
              help="Release folder or ORG/NAME@vX.Y.Z on the Hub.")
@click.option("--llm", required=True,
              help="PROVIDER:MODEL (openai:..., anthropic:..., llamacpp:PATH); 'oracle' (gold "
                   "recoveries) or 'smoke' (a labelled mix) only for pipeline tests.")
@click.option("--epochs", default=3, show_default=True, type=click.IntRange(1, None))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="responses.jsonl")
@click.option("--text-only", is_flag=True,
              help="Send user turns as transcripts instead of audio (the text-only ablation).")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, None))
@click.option("--temperature", default=0.7, show_default=True, type=FiniteFloat(min=0))
@click.option("--max-tokens", default=512, show_default=True, type=click.IntRange(1, None))
@click.option("--endpoint", help="Hub endpoint for ORG/NAME@REV releases.")
def respond(release: str, llm: str, epochs: int, out: Path, text_only: bool, concurrency: int,
            temperature: float, max_tokens: int, endpoint: str | None) -> None:
    """Produce responses.jsonl for `bargein score ihbench` (user turns as audio by default)."""
    from bargein.scorers.respond import generate_responses

    g = get_globals()
    got = generate_responses(release, llm=llm, epochs=epochs, out=out, seed=g.seed,
                             workdir=g.workdir, concurrency=concurrency, temperature=temperature,
                             max_tokens=max_tokens, text_only=text_only, endpoint=endpoint)
    kind = {"oracle": "gold recoveries, a pipeline test",
            "smoke": "smoke responder, a pipeline test"}.get(got["model"], f"{got['model']}, "
                                                            f"user turns as {got['modality']}")
    fails = (f"; {got['failures']} item(s) failed, see {got['failures_file']}"
             if got["failures"] else "")
    click.echo(f"wrote {got['written']} responses to {out} ({kind}){fails}")
    fail_if_nothing(got["written"], f"no response was produced for {release}")
