"""``bargein schema --out DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("schema")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output folder.")
def schema(out: Path) -> None:
    """Write the JSON Schema of every record to OUT/<Record>.schema.json."""
    from bargein.records import ALL_RECORDS
    from bargein.store import atomic_write_text

    from bargein.outdir import check_writable_dir

    check_writable_dir(out)
    for rec in ALL_RECORDS:
        atomic_write_text(out / f"{rec.__name__}.schema.json",
                          json.dumps(rec.model_json_schema(), indent=2, sort_keys=True) + "\n")
    click.echo(f"wrote {len(ALL_RECORDS)} schemas to {out}")
