"""``bargein inspect RELEASE_OR_WORKDIR [--out DIR] [--serve]``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("inspect")
@click.argument("source")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Site folder (default: <source>-inspect beside the source).")
@click.option("--responses", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              default=None, help="Model responses (JSONL from `bargein respond`) to show per item.")
@click.option("--scores", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              default=None, help="Per-item scores (JSONL) to show beside each interruption.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Write at most this many conversation pages.")
@click.option("--serve", is_flag=True, help="Then serve the site on 127.0.0.1 until Ctrl-C.")
@click.option("--endpoint", default=None, help="Hub endpoint for an ORG/NAME@REV source.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port for --serve (0 picks a free one).")
def inspect(source: str, out: Path | None, responses: Path | None, scores: Path | None,
            limit: int | None, serve: bool, endpoint: str | None, port: int) -> None:
    """Write a static site to listen to and look at a release or a work dir.

    SOURCE is a release folder (as built or pulled), a Hub release ORG/NAME@REVISION (pulled and
    verified first), or a work directory before release. Open OUT/index.html in a browser; no
    server is needed.
    """
    from bargein.inspector import write_site

    path = Path(source)
    if not path.exists():
        from bargein.releases.hub import pull_release

        path = pull_release(source, endpoint=endpoint)
        out = out or Path(source.replace("/", "_").replace("@", "_") + "-inspect")
    source = path
    out = out or source.resolve().parent / f"{source.resolve().name}-inspect"
    rep = write_site(source, out, responses=responses, scores=scores, limit=limit,
                     progress=lambda m: click.echo(m, err=True))
    click.echo(rep.summary())
    if serve:
        from bargein.inspector.serve import serve_site

        serve_site(out, port=port, announce=click.echo)
