"""``bargein build``: the whole pipeline from one config to one release folder."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import get_globals


@click.command("build")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="Build config (YAML). See --print-config for every key.")
@click.option("--preset", help="A built-in config instead of --config (e.g. demo, full).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Release folder (default: release/<name>-<version>).")
@click.option("--previous", type=click.Path(path_type=Path), default=None,
              help="Folder of the previous version: its changelog is carried over.")
@click.option("--seed", type=int, default=None, help="Override the config's seed.")
@click.option("--print-config", "print_config", is_flag=True,
              help="Print the resolved config with every default and exit.")
def build(config_path: Path | None, preset: str | None, out: Path | None,
          previous: Path | None, seed: int | None, print_config: bool) -> None:
    """Scenarios -> conversations -> verification -> audio -> repair -> timing -> release."""
    from bargein.config import load_config, load_preset
    from bargein.errors import ConfigError
    from bargein.releases.pipeline import build as run_build

    if bool(config_path) == bool(preset):
        raise ConfigError("give exactly one of --config FILE or --preset NAME "
                          "(e.g. bargein build --preset demo)")
    cfg = load_config(config_path) if config_path else load_preset(preset)
    if seed is not None:
        cfg = cfg.model_copy(update={"seed": seed})
    if print_config:
        click.echo(cfg.to_yaml(), nl=False)
        return
    g = get_globals()
    out = out or Path("release") / f"{cfg.name}-{cfg.version}"
    report = run_build(cfg, workdir=g.workdir, out_dir=out, previous=previous)
    click.echo(f"release folder: {report.out_dir}")
    for k, v in report.manifest.configs.items():
        click.echo(f"  {k:15s} {v:6d} rows")
    click.echo("stage seconds: " + ", ".join(f"{k}={v:.1f}" for k, v in report.stage_seconds.items()))
    bad = {k: v for k, v in report.failures.items() if v}
    if bad:
        click.echo("failed items (see <workdir>/<stage>.failures.jsonl): "
                   + ", ".join(f"{k}={v}" for k, v in bad.items()))
