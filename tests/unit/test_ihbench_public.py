"""The ``ihbench-public`` release profile reads like the public IHBench release.

The loader below is written only from the public card and viewer schema of ``bosonai/IHBench``
(configs ``conversations`` (default) and ``baseline``, split ``test``; ``conversation_id``,
``domain`` (struct), ``goal``, ``system_message``, ``knowledge_base`` (struct), ``user_intent``
(struct), ``num_turns``, then per turn k = 1, 2, ...: ``assistant_turn_k_transcript``,
``assistant_turn_k_original``, ``user_turn_k_transcript``, ``user_turn_k_audio``,
``user_turn_k_interruption_type``, ``turn_k_tf_rubric``, ``turn_k_rq_rubrics``): it reads YAML
and Parquet with pyarrow, not through bargein.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf
import yaml

from bargein.releases.build import ReleaseSources, build_release
from doubles.synthetic_release import write_synthetic


def public_loader(release: Path) -> dict[str, list[dict]]:
    """Rows per config of an IHBench-layout folder, validated against the public schema."""
    text = (release / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(text.split("---")[1])
    configs = {c["config_name"]: c for c in header["configs"]}
    assert list(configs) == ["conversations", "baseline"]
    assert configs["conversations"].get("default") is True
    out = {}
    for name, c in configs.items():
        (files,) = [d for d in c["data_files"] if d["split"] == "test"]
        tables = [pq.read_table(p) for p in sorted(release.glob(files["path"]))]
        out[name] = pa.concat_tables(tables).to_pylist()
        if name != "conversations":
            continue
        schema = tables[0].schema
        fixed = ["conversation_id", "domain", "goal", "system_message", "knowledge_base", "user_intent", "num_turns"]
        assert schema.names[:7] == fixed
        for col in ("domain", "knowledge_base", "user_intent"):
            assert pa.types.is_struct(schema.field(col).type), col
        assert schema.field("num_turns").type == pa.int32()
        turns = (len(schema.names) - 7) // 7
        for k in range(1, turns + 1):
            per = [f"assistant_turn_{k}_transcript", f"assistant_turn_{k}_original", f"user_turn_{k}_transcript",
                   f"user_turn_{k}_audio", f"user_turn_{k}_interruption_type", f"turn_{k}_tf_rubric",
                   f"turn_{k}_rq_rubrics"]
            assert schema.names[7 + 7 * (k - 1): 7 + 7 * k] == per
            assert pa.types.is_struct(schema.field(per[3]).type)          # {bytes, path}
            assert pa.types.is_list(schema.field(per[6]).type)
    return out


@pytest.fixture(scope="module")
def public_release(tmp_path_factory):
    run = write_synthetic(tmp_path_factory.mktemp("work"), 3, seed=5)
    out = tmp_path_factory.mktemp("rel") / "pub"
    build_release(out, name="ihbench-public-test", version="1.0.0", provenance={"seed": 5},
                  sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                         eval_items=run.eval_items, repair=run.repair, timing=run.timing,
                                         profile="ihbench-public"))
    return run, out


def test_public_loader_reads_our_release(public_release):
    """A loader written from the public schema alone reads every row, turn 1 first."""
    run, out = public_release
    data = public_loader(out)
    convs = data["conversations"]
    assert len(convs) == 3 and data["baseline"]
    row = convs[0]
    assert row["num_turns"] >= 2 and row["assistant_turn_1_original"] and "assistant_turn_0_original" not in row
    assert row["domain"]["name"] and row["knowledge_base"]["stages"] and row["user_intent"]["profile"]
    cut = [k for k in range(1, row["num_turns"] + 1) if row[f"user_turn_{k}_interruption_type"]]
    assert cut, "some user turn interrupts"
    k = cut[0]
    assert row[f"assistant_turn_{k}_original"].startswith(row[f"assistant_turn_{k}_transcript"].rstrip(" .,"))
    audio = row[f"user_turn_{k}_audio"]
    x, sr = sf.read(io.BytesIO(audio["bytes"]))
    assert sr > 0 and len(x) > 0


def test_package_check_agrees_and_default_profile_differs(public_release, tmp_path):
    """``check_public_schema`` passes the public profile and names what differs in the default one."""
    from bargein.releases.public_schema import check_public_schema

    run, out = public_release
    assert check_public_schema(out) == []
    assert "layout profile: ihbench-public" in (out / "README.md").read_text()
    default = tmp_path / "default"
    build_release(default, name="d", version="1.0.0", provenance={"seed": 5},
                  sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                         eval_items=run.eval_items))
    problems = check_public_schema(default)
    assert any("configs" in p for p in problems)
    with pytest.raises(AssertionError):
        public_loader(default)
