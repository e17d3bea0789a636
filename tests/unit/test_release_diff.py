"""Release versions: diff two builds (items added/removed/changed, provenance), SemVer bumps,
and the changelog carried into the card."""

from __future__ import annotations

import json

import pytest

from bargein.errors import ReleaseError
from bargein.releases.build import ReleaseSources, build_release
from bargein.releases.card import read_changelog
from bargein.releases.diff import diff_releases
from bargein.releases.manifest import bump, parse_semver, tag_for
from doubles.synthetic_release import write_synthetic

PROV = {"seed": 3, "llm": "offline", "git_commit": "c0ffee"}


def _src(run, **kw):
    return ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                          eval_items=run.eval_items, dpo={"train": run.dpo},
                          audio_roots=(run.root,), **kw)


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    base = tmp_path_factory.mktemp("versions")
    run5 = write_synthetic(base / "w5", 5, seed=3)
    run6 = write_synthetic(base / "w6", 6, seed=3)        # the same 5 conversations + 1 more
    lines = run6.eval_items.read_text().splitlines()
    first = json.loads(lines[0])
    first["baseline"] = "A different baseline answer for this item."
    lines[0] = json.dumps(first)
    run6.eval_items.write_text("\n".join(lines) + "\n")
    v1 = base / "v1.0.0"
    build_release(v1, name="b", version="1.0.0", sources=_src(run5), provenance=PROV)
    v11 = base / "v1.1.0"
    build_release(v11, name="b", version="1.1.0", sources=_src(run6), provenance=PROV, previous=v1)
    return {"run5": run5, "run6": run6, "v1": v1, "v11": v11, "base": base, "changed": first["id"]}


def test_items_added_and_changed_suggest_minor(versions):
    d = diff_releases(versions["v1"], versions["v11"])
    conv, ev, base = d.configs["conversations"], d.configs["eval_items"], d.configs["baseline"]
    assert conv.status == "changed" and len(conv.added) == 1 and not conv.removed and not conv.changed
    assert conv.rows_a == 5 and conv.rows_b == 6
    assert d.configs["ihbench"].added == conv.added
    assert f"test/{versions['changed']}" in ev.changed and f"test/{versions['changed']}" in base.changed
    assert len(ev.added) == ev.rows_b - ev.rows_a > 0
    assert not any(c.schema_changed for c in d.configs.values())
    assert d.suggested_bump == "minor" and bump("1.0.0", d.suggested_bump) == "1.1.0"
    assert d.provenance == {}
    text = d.summary()
    assert "suggested bump MINOR" in text and "+1 -0 ~0" in text


def test_changelog_written_from_the_diff_and_carried_over(versions):
    log = read_changelog((versions["v11"] / "README.md").read_text())
    assert [v for v, _ in log] == ["1.1.0", "1.0.0"]
    assert "`conversations`: 1 added (5 → 6 rows)" in log[0][1]
    assert log[1][1] == "Initial release."


def test_provenance_only_change_is_a_patch_and_identical_is_none(versions, tmp_path):
    run5 = versions["run5"]
    same = tmp_path / "same"
    build_release(same, name="b", version="1.0.1", sources=_src(run5), provenance=PROV)
    assert diff_releases(versions["v1"], same).suggested_bump == "none"
    p = tmp_path / "prov"
    build_release(p, name="b", version="1.0.1", sources=_src(run5),
                  provenance={**PROV, "models": {"baseline": "openai:gpt-4o-audio"}})
    d = diff_releases(versions["v1"], p)
    assert d.provenance == {"models.baseline": (None, "openai:gpt-4o-audio")}
    assert d.card_changed and d.suggested_bump == "patch"
    assert all(c.status == "same" for c in d.configs.values())


def test_schema_change_or_removed_config_is_major(versions, tmp_path):
    run5 = versions["run5"]
    fewer = tmp_path / "fewer"
    build_release(fewer, name="b", version="2.0.0", provenance=PROV,
                  sources=_src(run5, configs=("conversations", "ihbench", "eval_items")))
    d = diff_releases(versions["v1"], fewer)
    assert d.configs["dpo"].status == "removed" and d.configs["baseline"].status == "removed"
    assert d.suggested_bump == "major"
    # fewer turns in the longest conversation narrows the ihbench layout: its features change
    lines = [ln for ln in run5.conversations.read_text().splitlines()
             if len(json.loads(ln)["conversation"]["messages"]) == 10]
    assert 0 < len(lines) < 5
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines) + "\n")
    narrow = tmp_path / "narrow"
    build_release(narrow, name="b", version="2.0.0", provenance=PROV,
                  sources=ReleaseSources(conversations=short, rendered=run5.rendered,
                                         audio_roots=(run5.root,), configs=("ihbench",)))
    d2 = diff_releases(versions["v1"], narrow)
    assert d2.configs["ihbench"].schema_changed and d2.configs["ihbench"].removed
    assert d2.suggested_bump == "major"


def test_semver_helpers():
    assert parse_semver("1.2.3") == (1, 2, 3, "")
    assert parse_semver("v0.1.0-rc.1")[3] == "rc.1"
    assert [bump("1.4.2", k) for k in ("major", "minor", "patch", "none")] == [
        "2.0.0", "1.5.0", "1.4.3", "1.4.2"]
    assert tag_for("1.0.0") == "v1.0.0"
    for bad in ("1.0", "01.0.0", "x.y.z", ""):
        with pytest.raises(ReleaseError, match="not SemVer"):
            parse_semver(bad)


def test_cli_diff_prints_json(versions, capsys):
    from bargein.cli import main

    main(["release", "diff", str(versions["v1"]), str(versions["v11"]), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["suggested_bump"] == "minor" and out["configs"]["conversations"]["rows_b"] == 6


def test_one_sft_file_is_split_by_conversation(versions, tmp_path):
    import pyarrow.parquet as pq

    run = versions["run6"]
    out = tmp_path / "split"
    build_release(out, name="b", version="1.0.0", provenance=PROV, sources=ReleaseSources(
        sft=run.sft, dpo=run.dpo, test_percent=40))
    conv_of = {}
    for split in ("train", "test"):
        files = sorted((out / "sft").glob(f"{split}-*.parquet"))
        assert files, split
        for r in pq.read_table(files).to_pylist():
            conv_of.setdefault(r["id"].split("_ev")[0], set()).add(split)
    assert all(len(s) == 1 for s in conv_of.values())          # no conversation in both splits
    assert {s for v in conv_of.values() for s in v} == {"train", "test"}
    text = (out / "README.md").read_text()
    assert "sft/train-*.parquet" in text and "sft/test-*.parquet" in text
