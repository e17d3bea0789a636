"""``bargein build``: the whole pipeline from one config to one release folder.

    bargein build --preset demo
    bargein build --config my.yaml --out release/my-1.0.0
    bargein build --print-config demo          # a preset (or a config file) with every default
    bargein --seed 11 build --preset demo      # an explicit seed overrides the config's seed
    bargein build --preset demo --dry-run      # the validated stage DAG, nothing run

The seed rule is the same for every command: ``build --seed`` > the global ``--seed`` given on
the command line > the config's ``seed``. The resolved seed is what ``--print-config`` shows and
what the release's provenance records.
"""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import get_globals


def _resolve(config_path: Path | None, preset: str | None, print_config: str | None):
    from bargein.config import load_config, load_preset
    from bargein.errors import ConfigError

    if print_config:                       # --print-config NAME: a preset name or a config file
        if config_path or preset:
            raise ConfigError(f"--print-config {print_config} names the config to print; drop "
                              "--config/--preset, or give --print-config without a value")
        if Path(print_config).is_file():
            return load_config(print_config)
        return load_preset(print_config)
    if bool(config_path) == bool(preset):
        raise ConfigError("give exactly one of --config FILE or --preset NAME "
                          "(e.g. bargein build --preset demo)")
    return load_config(config_path) if config_path else load_preset(preset)


@click.command("build")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="Build config (YAML). See --print-config for every key.")
@click.option("--preset", help="A built-in config instead of --config (e.g. demo, full).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Release folder (default: release/<name>-<version>).")
@click.option("--previous", type=click.Path(path_type=Path), default=None,
              help="Folder of the previous version: its changelog is carried over.")
@click.option("--seed", type=int, default=None,
              help="Override the config's seed (and the global --seed).")
@click.option("--print-config", "print_config", is_flag=False, flag_value="-", default=None,
              metavar="[PRESET|FILE]",
              help="Print the resolved config with every default and exit: of PRESET or FILE, "
                   "or (without a value) of --config/--preset.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default=None,
              help="Where CPU stages run (overrides the config's executor).")
@click.option("--ray-address", default=None,
              help="Ray cluster to join with --executor ray (default: $RAY_ADDRESS or local).")
@click.option("--ray-node-ip", default=None,
              help="This machine's address in the Ray cluster, if not the auto-detected one.")
@click.option("--dry-run", is_flag=True,
              help="Validate the stage DAG and print it (stages, record types, files, backends); "
                   "run nothing.")
def build(config_path: Path | None, preset: str | None, out: Path | None,
          previous: Path | None, seed: int | None, print_config: str | None,
          executor: str | None = None, ray_address: str | None = None,
          ray_node_ip: str | None = None, dry_run: bool = False) -> None:
    """Scenarios -> conversations -> verification -> audio -> repair -> timing -> release."""
    from bargein.pipeline import build as run_build, plan

    g = get_globals()
    cfg = _resolve(config_path, preset, None if print_config == "-" else print_config)
    cfg = cfg.model_copy(update={"seed": g.resolve_seed(seed, cfg.seed)})
    if executor or ray_address or ray_node_ip:
        ex = cfg.executor.model_copy(update={k: v for k, v in
                                             (("kind", executor), ("ray_address", ray_address),
                                              ("node_ip_address", ray_node_ip))
                                             if v is not None})
        cfg = cfg.model_copy(update={"executor": ex})
    if print_config is not None:
        click.echo(cfg.to_yaml(), nl=False)
        return
    out = out or Path("release") / f"{cfg.name}-{cfg.version}"
    if dry_run:
        click.echo(f"{cfg.name} {cfg.version}, seed {cfg.seed} -> {out}; stages in order:")
        for i, spec in enumerate(plan(cfg).stages, 1):
            ins = ", ".join(t.__name__ for t in spec.inputs) or "-"
            outs = ", ".join(t.__name__ for t in spec.outputs) or "-"
            reads = ", ".join(spec.reads + spec.optional_reads)
            click.echo(f"{i}. {spec.name:14s} {ins} -> {outs}" + (f"; reads {reads}" if reads else ""))
            click.echo(f"   writes {', '.join(spec.artifacts.values()) or '-'}; backend "
                       + (", ".join(f"{k}={v}" for k, v in spec.backend.items()) or "-"))
        return
    report = run_build(cfg, workdir=g.workdir, out_dir=out, previous=previous)
    click.echo(f"release folder: {report.out_dir} (seed {cfg.seed})")
    for k, v in report.manifest.configs.items():
        click.echo(f"  {k:15s} {v:6d} rows")
    click.echo("stage seconds: " + ", ".join(f"{k}={v:.1f}" for k, v in report.stage_seconds.items()))
    bad = {k: v for k, v in report.failures.items() if v}
    if bad:
        click.echo("failed items (see <workdir>/<stage>.failures.jsonl): "
                   + ", ".join(f"{k}={v}" for k, v in bad.items()))
