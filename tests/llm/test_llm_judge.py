"""The model judges end to end on a real local model: Qwen2.5-Coder-0.5B-Instruct (GGUF) through
the in-process ``llamacpp`` provider, JSON-schema constrained (llama.cpp grammar).

Set up with ``bash tests/llm/setup_llamacpp.sh .venv/bin/python`` (``make test-llm`` does it).
This checks the verdict format and the plumbing on real model output, not the judge's quality:
a 0.5B model is no IHBench judge (its control-set figures are printed by
``bench/judge_validation.py``). Slow: each judgment takes seconds on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
GGUF = Path(__file__).parent / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


@pytest.fixture(scope="module")
def spec():
    pytest.importorskip("llama_cpp", reason="run tests/llm/setup_llamacpp.sh first")
    if not GGUF.is_file():
        pytest.skip(f"{GGUF} missing: run tests/llm/setup_llamacpp.sh first")
    return f"llamacpp:{GGUF}"


def test_ihbench_score_end_to_end_with_the_local_model_judge(spec, tmp_path):
    """A one-conversation release (one item per interruption type), gold responses, one epoch:
    every judgment is either a schema-valid verdict or an unscorable one with its evidence."""
    from doubles.synthetic_release import write_synthetic

    from bargein.releases.build import ReleaseSources, build_release
    from bargein.scorers.ihbench import RQ, TF, load_eval_items, score_ihbench

    run = write_synthetic(tmp_path / "w", 1, seed=5)
    rel = tmp_path / "rel"
    build_release(rel, name="t", version="1.0.0", provenance={"git_commit": "t"},
                  sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                         eval_items=run.eval_items, audio_roots=(run.root,)))
    items = load_eval_items(rel)[:3]
    keep = {i.id for i in items}
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps({"item_id": i.id, "epoch": 0, "response": i.gold_recovery}) + "\n"
                            for i in load_eval_items(rel) if i.id in keep))
    out = tmp_path / "scores"
    rep = score_ihbench(rel, resp, judge=spec, epochs=1, n_boot=50, out=out, workdir=tmp_path / "work",
                        concurrency=1)
    assert rep.judge.startswith(spec) and not rep.smoke
    scores = [json.loads(x) for x in (out / "item_scores.jsonl").read_text().splitlines()]
    issues = [json.loads(x) for x in (out / "issues.jsonl").read_text().splitlines()]
    judge_issues = [i for i in issues if i["source"] == "judge" and i["problem"].startswith("judge")]
    by_metric = {(s["item_id"], s["metric"]) for s in scores}
    for item in items:
        for metric in (TF, RQ):
            scored = (item.id, metric) in by_metric
            failed = any(i["item_id"] == item.id and i["metric"] == metric for i in judge_issues)
            assert scored != failed, (item.id, metric)
    for s in scores:
        d = s["detail"]
        if s["metric"] == RQ:
            assert len(d["rq_criteria"]) == len(next(i for i in items if i.id == s["item_id"]).rubric.rq_criteria)
            assert all(isinstance(c["met"], bool) for c in d["rq_criteria"])
        else:
            assert d["winner"] in ("A", "B") and d["loser_deficiency"].strip()
    for i in judge_issues:
        assert i["evidence"]                          # the raw answers are kept
    assert rep.overall[RQ]["n"] + rep.overall[RQ]["unscorable"] == len(items)
    text = (out / "tables.md").read_text()
    assert spec in text and "validation κ not measured" in text and "1 epoch(s)" in text
    print(f"\n{text}")


def test_repair_and_rq_verdicts_on_control_items(spec, tmp_path):
    from bargein.scorers.judge_validation import validate_judge

    rep = validate_judge(spec, workdir=tmp_path, limit=8, concurrency=1)
    assert len(rep.verdicts) == 8
    allowed = {"tf": {"A", "B"}, "rq": {"pass", "fail"},
               "ear_r": {"explicit_repair", "generic_refusal", "answer"},
               "ear_c": {"correct", "incorrect"}}
    for v in rep.verdicts:
        assert v.got is None or v.got in allowed[v.item.axis], (v.item.id, v.got)
    saved = list((tmp_path / "judge_validation").glob("*.json"))
    assert saved and all(json.loads(p.read_text())["judge"].startswith(spec) for p in saved)
    print("\n" + rep.tables())
