"""``bargein release build | push | pull | diff | verify``: thin wrappers over the library."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bargein.cli.util import get_globals, parse_kv, require_file
from bargein.errors import ConfigError


@click.group()
def release() -> None:
    """Build, push, pull, diff and verify versioned Hugging Face releases."""


def _release_name(value: str) -> str:
    import re

    from bargein.config import NAME_PATTERN

    if not re.match(NAME_PATTERN, value) or len(value) > 96:
        raise click.BadParameter(f"{value!r} is not a release name: use letters, digits, '.', '_' "
                                 "and '-', starting with a letter or digit (e.g. bargein-ihbench)")
    return value


def _path_opt(value: str | None, what: str) -> Path | None:
    return require_file(value, what, f"pass the {what} a stage wrote") if value else None


def _chat_opt(values: tuple[str, ...], option: str) -> dict[str, Path] | Path | None:
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return require_file(values[0], option, "pass the JSONL the exporter wrote")
    return {k: require_file(v, option, "pass the JSONL the exporter wrote")
            for k, v in parse_kv(values, option).items()}


def _thresholds(path: str | None) -> dict | None:
    if not path:
        return None
    import yaml

    data = yaml.safe_load(require_file(path, "--quality-thresholds",
                                       "a YAML or JSON mapping figure -> threshold").read_text())
    if not isinstance(data, dict):
        raise ConfigError(f"--quality-thresholds {path}: expected a mapping figure -> threshold, "
                          f"got {type(data).__name__}")
    return data


@release.command("build")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Release folder.")
@click.option("--name", required=True, callback=lambda ctx, param, v: _release_name(v),
              help="Dataset name, e.g. bargein-ihbench (letters, digits, '.', '_', '-').")
@click.option("--version", "version", required=True, help="SemVer, e.g. 1.0.0.")
@click.option("--conversations", help="VerifiedConversation / Conversation JSONL.")
@click.option("--rendered", help="RenderedDialogue JSONL (audio for conversations/ihbench).")
@click.option("--eval-items", help="EvalItem JSONL (eval_items and baseline configs).")
@click.option("--repair", help="MaskedItem JSONL.")
@click.option("--timing", help="PerturbationPair JSONL.")
@click.option("--sft", multiple=True,
              help="SPLIT=FILE chat-format JSONL (repeatable), or one FILE split by conversation.")
@click.option("--dpo", multiple=True,
              help="SPLIT=FILE preference JSONL (repeatable), or one FILE split by conversation.")
@click.option("--test-percent", default=10, show_default=True, type=click.IntRange(0, 100),
              help="With one --sft/--dpo FILE: share of conversations in the test split.")
@click.option("--stats", help="Generation statistics JSON (discard counts by reason, ...).")
@click.option("--audio-root", multiple=True, type=click.Path(path_type=Path),
              help="Folder that relative audio paths resolve against (default: --workdir).")
@click.option("--provenance", help="JSON file merged into the provenance (models, voices, config).")
@click.option("--previous", type=click.Path(path_type=Path),
              help="The previous version's folder: carries its changelog, diffs against it.")
@click.option("--changelog", help="This version's changelog entry (default: from the diff).")
@click.option("--config", "only", multiple=True, help="Only these configs (repeatable).")
@click.option("--license", "license_", default="cc-by-4.0", show_default=True)
@click.option("--pretty-name", help="Card title (default: --name).")
@click.option("--repo", help="ORG/NAME used in the card's loading examples.")
@click.option("--quality-thresholds", help="YAML/JSON mapping figure -> threshold ('<= 0.05', "
              "{min: 0.45}); the build refuses when one is missed (figures: the quality report "
              "in --stats).")
@click.option("--allow-below-threshold", is_flag=True,
              help="Release even when a quality threshold is missed.")
@click.option("--profile", type=click.Choice(["bargein", "ihbench-public"]), default="bargein",
              show_default=True, help="ihbench-public: exactly the public IHBench layout (configs "
              "conversations + baseline, 1-based wide turns, struct columns).")
def build_cmd(out, name, version, conversations, rendered, eval_items, repair, timing, sft, dpo,
              test_percent, stats, audio_root, provenance, previous, changelog, only, license_,
              pretty_name, repo, quality_thresholds, allow_below_threshold, profile):
    """Build a release folder (Parquet per config, card, manifest) from stage outputs."""
    from bargein.pipeline import release_spec, run_stages

    g = get_globals()
    if not any((conversations, eval_items, repair, timing, sft, dpo)):
        raise ConfigError("nothing to release. Fix: pass at least one of --conversations, "
                          "--eval-items, --repair, --timing, --sft, --dpo")
    prov: dict = {}
    if provenance:
        path = require_file(provenance, "--provenance", "pass a JSON file")
        try:
            prov = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ConfigError(f"--provenance {path}: not a UTF-8 JSON file "
                              f"({str(e).splitlines()[0][:160] if str(e) else e.__class__.__name__})."
                              ' Fix: pass a JSON object such as {"llm": "offline", "seed": 7}') from None
        if not isinstance(prov, dict):
            raise ConfigError(f"--provenance {path}: expected a JSON object, got "
                              f"{type(prov).__name__}. Fix: pass a JSON object such as "
                              '{"llm": "offline", "seed": 7}')
    # the seed rule: an explicit global --seed > the provenance file's seed > the default
    file_seed = prov.get("seed") if isinstance(prov.get("seed"), int) else None
    prov["seed"] = g.resolve_seed(None, file_seed)
    sft_, dpo_ = _chat_opt(sft, "--sft"), _chat_opt(dpo, "--dpo")
    files = {"verified": _path_opt(conversations, "--conversations"),
             "rendered": _path_opt(rendered, "--rendered"),
             "baseline": _path_opt(eval_items, "--eval-items"), "repair": _path_opt(repair, "--repair"),
             "timing": _path_opt(timing, "--timing"), "stats": _path_opt(stats, "--stats"),
             "sft": sft_ if isinstance(sft_, Path) else None,
             "dpo": dpo_ if isinstance(dpo_, Path) else None}
    splits = {k: {split: str(f) for split, f in v.items()}
              for k, v in (("sft", sft_), ("dpo", dpo_)) if isinstance(v, dict)}
    spec = release_spec({
        "name": name, "version": version, "changelog": changelog, "pretty_name": pretty_name,
        "license": license_, "repo_hint": repo, "provenance": prov,
        "sources": {**splits, "test_percent": test_percent,
                    "quality_thresholds": _thresholds(quality_thresholds),
                    "allow_below_threshold": allow_below_threshold,
                    "audio_roots": [str(r) for r in (tuple(audio_root) or (g.workdir,))],
                    "configs": list(only) or None, "profile": profile}})
    m = run_stages([spec], workdir=g.workdir, seed=prov["seed"], files=files, out_dir=out,
                   previous=previous)["release"].result
    click.echo(f"built {m.name} {m.version} in {out}: " +
               ", ".join(f"{c}={n}" for c, n in m.configs.items()) + f"; {len(m.files)} files")


@release.command("verify")
@click.argument("folder", type=click.Path(path_type=Path))
def verify_cmd(folder: Path) -> None:
    """Check every file of FOLDER against its manifest checksums."""
    from bargein.releases.manifest import verify_release

    m = verify_release(folder)
    click.echo(f"ok: {m.name} {m.version}, {len(m.files)} files match manifest.json")


@release.command("push")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--repo", required=True, help="Hub dataset repo ORG/NAME.")
@click.option("--dry-run", is_flag=True, help="Show the plan; upload nothing.")
@click.option("--private", is_flag=True, help="Create the repo private.")
@click.option("--endpoint", help="Hub endpoint (default: HF_ENDPOINT or huggingface.co).")
@click.option("--message", help="Commit message (default: NAME VERSION).")
def push_cmd(folder: Path, repo: str, dry_run: bool, private: bool, endpoint: str | None,
             message: str | None) -> None:
    """Upload FOLDER in one commit and tag it vX.Y.Z (token: HF_TOKEN or `hf auth login`)."""
    from bargein.releases.hub import push_release

    plan = push_release(folder, repo, endpoint=endpoint, dry_run=dry_run, private=private,
                        commit_message=message)
    click.echo(plan.describe())
    if dry_run:
        click.echo("dry run: nothing was uploaded")


@release.command("pull")
@click.argument("ref")
@click.option("--out", type=click.Path(path_type=Path), help="Download into this folder.")
@click.option("--endpoint", help="Hub endpoint (default: HF_ENDPOINT or huggingface.co).")
@click.option("--check/--no-check", default=True, show_default=True,
              help="Load every config with datasets and decode one audio cell each.")
def pull_cmd(ref: str, out: Path | None, endpoint: str | None, check: bool) -> None:
    """Fetch REF (ORG/NAME@vX.Y.Z or a folder), verify checksums, load each config."""
    from bargein.releases.hub import pull_release
    from bargein.releases.manifest import read_manifest
    from bargein.releases.reader import decode_audio, load_config, splits

    path = pull_release(ref, out=out, endpoint=endpoint)
    m = read_manifest(path)
    click.echo(f"{m.name} {m.version} at {path} (checksums ok)")
    if not check:
        return
    from datasets import Audio

    for config in m.configs:
        for split in splits(path, config):
            ds = load_config(path, config, split)
            audio_cols = [c for c, f in ds.features.items() if isinstance(f, Audio)]
            note = ""
            for col in audio_cols:
                cell = next((r for r in ds[col] if r), None) if len(ds) else None
                if cell:
                    x, sr = decode_audio(cell)
                    ch = 1 if x.ndim == 1 else x.shape[1]
                    note = f"; {col}: {len(x) / sr:.2f} s, {ch} ch, {sr} Hz"
                    break
            click.echo(f"  {config}/{split}: {len(ds)} rows, {len(ds.column_names)} columns{note}")


@release.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
@click.option("--endpoint", help="Hub endpoint for ORG/NAME@REV references.")
def diff_cmd(a: str, b: str, as_json: bool, endpoint: str | None) -> None:
    """What changed from release A to release B (folders or ORG/NAME@REV) and the bump."""
    from bargein.releases.diff import diff_releases
    from bargein.releases.hub import pull_release

    d = diff_releases(pull_release(a, endpoint=endpoint), pull_release(b, endpoint=endpoint))
    click.echo(json.dumps(d.to_dict(), indent=2, sort_keys=True) if as_json else d.summary())
