"""Release folders: byte-identical rebuilds, datasets loading per config, the public IHBench
columns, the card header, and manifest refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bargein.errors import AudioError, ReleaseError
from bargein.records import INTERRUPTION_TYPES
from bargein.releases.build import ReleaseSources, build_release, iter_conversations
from bargein.releases.card import read_changelog, read_header
from bargein.releases.features import IHBENCH_FIXED, ihbench_columns
from bargein.releases.manifest import read_manifest, verify_release
from bargein.releases.reader import decode_audio, load_config, splits
from bargein.releases.rows import ihbench_turns
from doubles.synthetic_release import write_synthetic

PROV = {"seed": 7, "llm": "offline", "git_commit": "test-commit",
        "models": {"baseline": "synthetic-baseline"}}


def sources(run, **kw) -> ReleaseSources:
    return ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                          eval_items=run.eval_items, repair=run.repair, timing=run.timing,
                          sft={"train": run.sft}, dpo={"train": run.dpo},
                          audio_roots=(run.root,), **kw)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_synthetic(tmp_path_factory.mktemp("work"), 9, seed=3, discard_every=4)


@pytest.fixture(scope="module")
def release(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("rel") / "v1"
    build_release(out, name="bargein-test", version="1.0.0", sources=sources(run), provenance=PROV)
    return out


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_rebuild_is_byte_identical_across_processes(run, release, tmp_path):
    again = tmp_path / "again"
    code = (
        "import json,sys; from pathlib import Path\n"
        "from bargein.releases.build import build_release, ReleaseSources\n"
        "a=json.loads(sys.argv[1])\n"
        "build_release(Path(a['out']), name='bargein-test', version='1.0.0', provenance=a['prov'],"
        " sources=ReleaseSources(conversations=Path(a['c']), rendered=Path(a['r']),"
        " eval_items=Path(a['e']), repair=Path(a['m']), timing=Path(a['t']),"
        " sft={'train': Path(a['s'])}, dpo={'train': Path(a['d'])},"
        " audio_roots=(Path(a['root']),)))\n")
    args = {"out": str(again), "prov": PROV, "c": str(run.conversations), "r": str(run.rendered),
            "e": str(run.eval_items), "s": str(run.sft), "d": str(run.dpo), "root": str(run.root),
            "m": str(run.repair), "t": str(run.timing)}
    subprocess.run([sys.executable, "-c", code, json.dumps(args)], check=True, timeout=300)
    a, b = _tree(release), _tree(again)
    assert sorted(a) == sorted(b)
    differing = [p for p in a if a[p] != b[p]]
    assert differing == []
    assert any(p.endswith(".parquet") for p in a) and "manifest.json" in a
    assert any(p.endswith(".png") for p in a)


def test_every_config_loads_with_datasets_and_audio_decodes_without_torch(release):
    m = read_manifest(release)
    assert set(m.configs) == {"conversations", "ihbench", "eval_items", "baseline", "repair",
                              "timing", "sft", "dpo"}
    for config, rows in m.configs.items():
        total = 0
        for split in splits(release, config):
            ds = load_config(release, config, split)
            total += len(ds)
            if config == "conversations":
                x, sr = decode_audio(ds[0]["audio"])
                assert x.ndim == 2 and x.shape[1] == 2 and sr == 16000      # stereo: user, assistant
                assert np.abs(x[:, 0]).max() > 0.01 and np.abs(x[:, 1]).max() > 0.01
                seg = ds[0]["segments"][1]
                assert seg["channel"] == 0 and seg["words"], "word timings travel with the audio"
            if config == "ihbench":
                x, sr = decode_audio(ds[0]["user_turn_0_audio"])
                assert x.ndim == 1 and len(x) / sr > 0.2
            if config == "eval_items":
                x, _ = decode_audio(ds[0]["interjection_audio"])
                assert x.ndim == 1 and np.abs(x).max() > 0.01
            if config == "repair":
                masked, _ = decode_audio(ds[0]["audio"])
                orig, _ = decode_audio(ds[0]["original_audio"])
                span = ds[0]["spans"][0]
                assert masked.ndim == 1 and masked.shape == orig.shape
                assert not np.allclose(masked, orig) and ds[0]["condition"] == "answerable"
                assert 0 <= span["start_s"] < span["end_s"] <= len(orig) / 16000
            if config == "timing":
                nat, sr = decode_audio(ds[0]["natural_audio"])
                per, _ = decode_audio(ds[0]["perturbed_audio"])
                assert nat.shape[1] == per.shape[1] == 2 and nat.shape == per.shape
                edit = json.loads(ds[0]["edits"])[0]
                assert edit["op"] == "insert_silence" and edit["duration_s"] == 1.5
                at = int(edit["at_s"] * sr)
                assert np.abs(per[at:at + int(1.4 * sr)]).max() == 0.0     # the inserted gap
        assert total == rows
    sft = load_config(release, "sft", "train")
    assert sft[0]["messages"][0]["role"] == "system" and sft[0]["messages"][-1]["role"] == "assistant"
    dpo = load_config(release, "dpo", "train")
    assert dpo[0]["chosen"][0]["content"] != dpo[0]["rejected"][0]["content"]


def test_ihbench_config_has_exactly_the_public_column_names(run, release):
    files = sorted((release / "ihbench").glob("test-*.parquet"))
    names = pq.read_schema(files[0]).names
    accepted = [(c, v) for c, v in iter_conversations(run.conversations) if v.accepted]
    max_turns = max(len(ihbench_turns(c)) for c, _ in accepted)
    assert names == ihbench_columns(max_turns)
    assert names[:7] == ["conversation_id", "domain", "goal", "system_message", "knowledge_base",
                         "user_intent", "num_turns"] == list(IHBENCH_FIXED)
    assert names[7:14] == ["assistant_turn_0_original", "assistant_turn_0_transcript",
                           "user_turn_0_transcript", "user_turn_0_audio",
                           "user_turn_0_interruption_type", "turn_0_tf_rubric", "turn_0_rq_rubrics"]
    rows = pq.read_table(files).to_pylist()
    assert len(rows) == len(accepted)
    conv = accepted[0][0]
    row = next(r for r in rows if r["conversation_id"] == conv.id)
    assert row["num_turns"] == len(ihbench_turns(conv))
    for k, t in enumerate(ihbench_turns(conv)):
        a, u = t["assistant"], t["user"]
        assert row[f"assistant_turn_{k}_original"] == a.text
        assert row[f"assistant_turn_{k}_transcript"] == a.spoken_text
        assert row[f"user_turn_{k}_transcript"] == u.text
        if a.interruption is not None:
            assert row[f"user_turn_{k}_interruption_type"] == a.interruption.type
            assert row[f"assistant_turn_{k}_transcript"] == a.interruption.heard_text != a.text
            assert row[f"turn_{k}_tf_rubric"] and 2 <= len(row[f"turn_{k}_rq_rubrics"]) <= 4
        else:
            assert row[f"user_turn_{k}_interruption_type"] is None
            assert row[f"turn_{k}_tf_rubric"] is None
    for k in range(row["num_turns"], max_turns):      # nulls beyond this conversation's turns
        assert row[f"assistant_turn_{k}_original"] is None and row[f"user_turn_{k}_audio"] is None


def test_card_header_stats_provenance_and_changelog(release):
    text = (release / "README.md").read_text()
    head = read_header(text)
    assert head["license"] == "cc-by-4.0" and head["size_categories"] == ["n<1K"]
    assert head["pretty_name"] == "bargein-test" and head["task_categories"]
    by_name = {c["config_name"]: c for c in head["configs"]}
    assert set(by_name) == set(read_manifest(release).configs)
    for c in head["configs"]:
        for df in c["data_files"]:
            assert list(release.glob(df["path"])), df
    assert "offline rule-based agents" in text and "no LLM involved" in text
    assert "`state_machine_leakage`: 2" in text          # 9 synthetic, every 4th discarded
    assert "test-commit" in text and "synthetic-baseline" in text
    for t in INTERRUPTION_TYPES:
        assert t.replace("_", " ").capitalize() in text
    for png in ("assets/interruption_types.png", "assets/depth_bins.png"):
        assert f"]({png})" in text and (release / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert read_changelog(text) == [("1.0.0", "Initial release.")]
    m = read_manifest(release)
    assert m.version == "1.0.0" and m.provenance["stats"]["discarded"] == 2
    assert m.provenance["prompts"] == {} or all(len(h) == 64 for h in m.provenance["prompts"].values())


def test_manifest_refuses_tampered_missing_and_extra_files(release, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(release, copy)
    verify_release(copy)
    parquet = next(copy.glob("eval_items/*.parquet"))
    data = bytearray(parquet.read_bytes())
    data[len(data) // 2] ^= 0xFF
    parquet.write_bytes(bytes(data))
    (copy / "notes.txt").write_text("hand edit")
    (copy / "assets" / "depth_bins.png").unlink()
    with pytest.raises(ReleaseError) as e:
        verify_release(copy)
    msg = str(e.value)
    assert f"checksum mismatch for {parquet.relative_to(copy).as_posix()}" in msg
    assert "missing file assets/depth_bins.png" in msg and "notes.txt is not in the manifest" in msg
    assert "Fix:" in msg


def test_bad_inputs_name_the_file_and_leave_the_old_release(run, release, tmp_path):
    bad = tmp_path / "eval.jsonl"
    lines = run.eval_items.read_text().splitlines()
    bad.write_text("\n".join(lines[:2] + ['{"id": "broken"}'] + lines[2:]) + "\n")
    out = tmp_path / "rel"
    build_release(out, name="x", version="0.1.0", provenance=PROV,
                  sources=ReleaseSources(eval_items=run.eval_items, audio_roots=(run.root,)))
    before = _tree(out)
    with pytest.raises(ReleaseError, match=r"eval\.jsonl:3: not a valid EvalItem"):
        build_release(out, name="x", version="0.1.1", provenance=PROV,
                      sources=ReleaseSources(eval_items=bad, audio_roots=(run.root,)))
    assert _tree(out) == before                  # the failed build left the old release intact
    assert not list(tmp_path.glob(".rel.*"))     # and no staging folder behind
    moved = tmp_path / "moved" / "render.jsonl"       # records whose audio is not beside them
    moved.parent.mkdir()
    moved.write_bytes(run.rendered.read_bytes())
    with pytest.raises(AudioError, match="not found under.*Fix: pass the work directory"):
        build_release(tmp_path / "r2", name="x", version="0.1.0", provenance=PROV,
                      sources=ReleaseSources(eval_items=run.eval_items, rendered=moved,
                                             audio_roots=(tmp_path,)))
    with pytest.raises(ReleaseError, match="not SemVer"):
        build_release(tmp_path / "r3", name="x", version="1.0", sources=sources(run))


def test_cli_build_and_verify(run, tmp_path, capsys):
    from bargein.cli import main

    out = tmp_path / "cli-rel"
    main(["--workdir", str(run.root), "release", "build", "--out", str(out), "--name", "cli",
          "--version", "0.3.0", "--conversations", str(run.conversations), "--eval-items",
          str(run.eval_items), "--config", "eval_items", "--config", "baseline",
          "--changelog", "First CLI build."])
    assert "built cli 0.3.0" in capsys.readouterr().out
    main(["release", "verify", str(out)])
    assert "files match manifest.json" in capsys.readouterr().out
    assert set(read_manifest(out).configs) == {"eval_items", "baseline"}
    assert read_changelog((out / "README.md").read_text()) == [("0.3.0", "First CLI build.")]
    with pytest.raises(SystemExit) as e:
        main(["release", "build", "--out", str(tmp_path / "x"), "--name", "x", "--version", "1.0.0"])
    assert e.value.code == 2 and "nothing to release" in capsys.readouterr().err
