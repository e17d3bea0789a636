"""`bargein build` end to end on the offline backends: a real release folder, twice, identical."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

pytestmark = pytest.mark.integration

CONFIG = {
    "name": "tiny",
    "version": "0.1.0",
    "seed": 11,
    # four: masking rejects values whose answerable twin cannot match their length, so two short
    # espeak conversations can leave the repair config empty
    "scenarios": {"n": 4, "domains": ["telecom", "travel", "ecommerce", "healthcare"]},
    "audio": {"assistant_voice": "espeak:en-us+f3", "user_voice": "espeak:en-gb+m3",
              "workers": 1},
    "repair": {"signals": ["white_noise"], "max_items": 4},
    "timing": {"per_type": 1},
}


def _build(tmp_path, tag: str, workers: int = 1):
    cfg = tmp_path / f"tiny-{workers}.yaml"
    cfg.write_text(yaml.safe_dump({**CONFIG, "audio": {**CONFIG["audio"], "workers": workers}}))
    out, work = tmp_path / f"release-{tag}", tmp_path / f"work-{tag}"
    proc = subprocess.run([sys.executable, "-m", "bargein.cli", "--workdir", str(work), "build",
                           "--config", str(cfg), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, work, proc


def test_build_twice_gives_a_loadable_identical_release(tmp_path):
    import datasets

    from bargein.releases.manifest import verify_release

    out_a, work_a, proc = _build(tmp_path, "a")
    assert "release folder:" in proc.stdout
    manifest = json.loads((out_a / "manifest.json").read_text())
    configs = manifest["configs"]
    assert {"conversations", "ihbench", "eval_items", "baseline", "repair", "sft", "dpo"} <= set(configs)
    # every interruption point the generator kept is an eval item of the release (how many points
    # two conversations have is the generator's business, not the build's)
    work_items = (work_a / "baseline.jsonl").read_text().splitlines()
    assert configs["conversations"] == 4 and configs["eval_items"] == len(work_items) >= 2
    verify_release(out_a)
    card = (out_a / "README.md").read_text()
    assert card.startswith("---\n") and "offline rule-based" in card
    # datasets names its cache of a local folder by the folder's name, not its content: another
    # test's "release-a" must not answer for this one (bargein's own reader keys it by manifest)
    for name in configs:
        ds = datasets.load_dataset(str(out_a), name, cache_dir=str(tmp_path / "hf-a"))
        assert sum(split.num_rows for split in ds.values()) == configs[name]
    # the stereo dialogue audio is real and two-channel
    import io

    import soundfile as sf
    from datasets import Audio

    conv = datasets.load_dataset(str(out_a), "conversations", split="test",
                                 cache_dir=str(tmp_path / "hf-a"))
    conv = conv.cast_column("audio", Audio(decode=False))
    x, sr = sf.read(io.BytesIO(conv[0]["audio"]["bytes"]))
    assert x.ndim == 2 and x.shape[1] == 2 and sr == 16000 and x.shape[0] > 10 * sr
    assert (abs(x) > 0.01).mean(axis=0).min() > 0.05      # both channels carry speech

    # a second build in another work dir with another worker count: byte-identical release,
    # manifest (and so its id) included: the worker count is not provenance
    out_b, _, _ = _build(tmp_path, "b", workers=2)
    files_a = sorted(p.relative_to(out_a).as_posix() for p in out_a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(out_b).as_posix() for p in out_b.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (out_a / rel).read_bytes() == (out_b / rel).read_bytes(), rel

    # a re-run of the first build is served from cache and changes nothing
    before = (out_a / "manifest.json").read_bytes()
    _, _, again = _build(tmp_path, "a")
    assert (out_a / "manifest.json").read_bytes() == before
    assert "render=" in again.stdout


def test_release_quality_thresholds_in_the_build_config(tmp_path):
    """``release.quality_thresholds``: an unknown figure is refused before anything runs (naming
    the known ones); a missed threshold refuses the release, naming the figure and both ways to
    override; ``release.allow_below_threshold`` releases anyway."""
    def run(release: dict, tag: str):
        cfg = tmp_path / f"{tag}.yaml"
        cfg.write_text(yaml.safe_dump({**CONFIG, "scenarios": {"n": 2, "domains": ["telecom"]},
                                       "audio": {"enabled": False}, "release": release}))
        out, work = tmp_path / f"release-{tag}", tmp_path / f"work-{tag}"
        proc = subprocess.run([sys.executable, "-m", "bargein.cli", "--workdir", str(work), "build",
                               "--config", str(cfg), "--out", str(out)],
                              capture_output=True, text=True, timeout=900)
        return proc, out, work

    proc, out, work = run({"quality_thresholds": {"user_distinct": 0.4}}, "typo")
    assert proc.returncode != 0 and "release.quality_thresholds" in proc.stderr
    assert "'user_distinct'" in proc.stderr and "user_distinct2" in proc.stderr
    assert not out.exists() and not (work / "scenarios.jsonl").exists()

    strict = {"quality_thresholds": {"assistant_distinct2": ">= 0.999"}}
    proc, out, _ = run(strict, "strict")
    assert proc.returncode != 0 and "assistant_distinct2" in proc.stderr
    assert "--allow-below-threshold" in proc.stderr and "release.allow_below_threshold" in proc.stderr
    assert not out.exists()

    proc, out, _ = run({**strict, "allow_below_threshold": True}, "allowed")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "manifest.json").is_file() and "assistant_distinct2" in (out / "README.md").read_text()
