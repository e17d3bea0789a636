"""The model judges end to end on a real local model through the in-process ``llamacpp``
provider, JSON-schema constrained (llama.cpp grammar): the packaged Qwen2.5-Coder-1.5B-Instruct
GGUF when it is there (``$BARGEIN_JUDGE_GGUF``, or ``tests/llm/models/``), else the 0.5B that
``tests/llm/setup_llamacpp.sh`` assembles.

This checks the verdict format and the plumbing on real model output, not the judge's quality
(its control-set figures are printed by ``bench/judge_validation.py``). Slow: each judgment takes tens of seconds on 2 shared cores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
MODELS = Path(__file__).parent / "models"
CANDIDATES = [Path(p) for p in (os.environ.get("BARGEIN_JUDGE_GGUF", ""),) if p] + [
    MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"]


@pytest.fixture(scope="module")
def spec():
    pytest.importorskip("llama_cpp", reason="run tests/llm/setup_llamacpp.sh first")
    gguf = next((p for p in CANDIDATES if p.is_file()), None)
    if gguf is None:
        pytest.skip(f"no judge GGUF ({', '.join(map(str, CANDIDATES))}): run tests/llm/setup_llamacpp.sh")
    return f"llamacpp:{gguf}"


@pytest.fixture(scope="module")
def judge(spec, tmp_path_factory):
    """One model in memory for the module, on one thread (the machines are shared)."""
    from bargein.llm import get_llm
    from bargein.scorers.ihbench_judges import LLMJudge

    llm = get_llm(spec, workdir=tmp_path_factory.mktemp("llm"), cache=False,
                  n_threads=int(os.environ.get("BARGEIN_TEST_THREADS", "1")))
    return LLMJudge(spec, workdir=None, llm=llm)


def test_ihbench_score_end_to_end_with_the_local_model_judge(spec, judge, tmp_path):
    """A one-conversation release, two items, gold responses, one epoch: every judgment is a
    schema-valid verdict (RQ: one verdict per rubric criterion, each met "do" criterion and each
    broken "avoid" criterion quoting the response; TF: a winner with a named deficiency, or a position-bound tie with both orders'
    answers) or an unscorable one with its evidence; the table names the judge and epochs."""
    from doubles.synthetic_release import write_synthetic

    from bargein.releases.build import ReleaseSources, build_release
    from bargein.scorers.ihbench import RQ, TF, load_eval_items, score_ihbench
    from bargein.scorers.ihbench_judges import criterion_kind, quoted_in

    run = write_synthetic(tmp_path / "w", 1, seed=5)
    rel = tmp_path / "rel"
    build_release(rel, name="t", version="1.0.0", provenance={"git_commit": "t"},
                  sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                         eval_items=run.eval_items, audio_roots=(run.root,)))
    items = load_eval_items(rel)[:2]
    keep = {i.id for i in items}
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps({"item_id": i.id, "epoch": 0, "response": i.gold_recovery}) + "\n"
                            for i in load_eval_items(rel) if i.id in keep))
    out = tmp_path / "scores"
    rep = score_ihbench(rel, resp, judge=spec, judge_obj=judge, epochs=1, n_boot=50, out=out,
                        workdir=tmp_path / "work", concurrency=1)
    assert rep.judge.startswith(spec) and not rep.smoke and "both orders" in rep.judge
    scores = [json.loads(x) for x in (out / "item_scores.jsonl").read_text().splitlines()]
    issues = [json.loads(x) for x in (out / "issues.jsonl").read_text().splitlines()]
    judge_issues = [i for i in issues if i["source"] == "judge" and i["problem"].startswith("judge")]
    by_metric = {(s["item_id"], s["metric"]) for s in scores}
    for item in items:
        for metric in (TF, RQ):
            scored = (item.id, metric) in by_metric
            failed = any(i["item_id"] == item.id and i["metric"] == metric for i in judge_issues)
            assert scored != failed, (item.id, metric)
    gold = {i.id: i.gold_recovery for i in items}
    for s in scores:
        d = s["detail"]
        if s["metric"] == RQ:
            item = next(i for i in items if i.id == s["item_id"])
            assert [c["criterion"] for c in d["rq_criteria"]] == list(item.rubric.rq_criteria)
            assert all(isinstance(c["met"], bool) for c in d["rq_criteria"])
            for c in d["rq_criteria"]:
                # met ("do") or broken ("avoid") only with a real quote
                if c["met"] == (criterion_kind(c["criterion"]) == "do"):
                    assert quoted_in(c["evidence"], gold[s["item_id"]]), c
            assert s["value"] == float(all(c["met"] for c in d["rq_criteria"]))
        else:
            assert d["tf_status"] in ("ok", "tie") and len(d["tf_orders"]) == 2
            if d["tf_status"] == "ok":
                assert d["winner"] in ("A", "B") and d["loser_deficiency"].strip()
            else:
                assert d["winner"] == "tie" and s["value"] == 0.5
    for i in judge_issues:
        assert i["evidence"]                          # the raw answers are kept
    everything = load_eval_items(rel)              # items without a response count as unscorable
    assert rep.overall[RQ]["n"] + rep.overall[RQ]["unscorable"] == len(everything) > len(items)
    assert rep.overall[RQ]["n"] == sum((i.id, RQ) in by_metric for i in items)
    text = (out / "tables.md").read_text()
    assert spec in text and "validation κ not measured" in text and "1 epoch(s)" in text
    card = json.loads((out / "report.json").read_text())["config"]["judge_card"]
    assert card["judge"] == rep.judge and card["epochs"] == 1 and card["validated"] is False
    print(f"\n{text}")


def test_verdicts_on_control_items_are_saved_and_read_back_by_score(spec, judge, tmp_path):
    from bargein.scorers.ihbench_judges import get_judge
    from bargein.scorers.judge_validation import judge_card, validate_judge, validation_summary

    rep = validate_judge(spec, workdir=tmp_path, scorer="ihbench", limit=4, concurrency=1,
                         part="dev", ih_judge=judge)
    assert len(rep.verdicts) == 4 and {v.item.axis for v in rep.verdicts} == {"tf", "rq"}
    allowed = {"tf": {"A", "B", "tie"}, "rq": {"pass", "fail"}}
    for v in rep.verdicts:
        assert v.got is None or v.got in allowed[v.item.axis], (v.item.id, v.got)
    saved = list((tmp_path / "judge_validation").glob("*.json"))
    assert saved and all(json.loads(p.read_text())["judge"].startswith(spec) for p in saved)
    summary = validation_summary(get_judge(spec, workdir=tmp_path), workdir=tmp_path, scorer="ihbench")
    card = judge_card(rep.judge, summary, epochs=3, smoke=False)
    assert card.n == 4 and card.subset == 4 and card.control_set.endswith("dev part")
    print("\n" + rep.tables())


def test_ear_score_end_to_end_with_the_local_model_judge(spec, judge, tmp_path):
    """`score_ear` on two masked items (one answerable, one unanswerable, from the control set's
    EAR cases) with the local model as the repair judge, one epoch: each judgment is a
    schema-valid verdict (a repair category of the three; correctness only on the answerable
    item) or an unscorable one listed with its evidence; the table names the judge and epochs."""
    from bargein.records import MaskedItem
    from bargein.scorers.control_set import control_items
    from bargein.scorers.ear import LLMRepairJudge, score_ear
    from bargein.scorers.ear_rules import R_VALUE
    from bargein.store import write_jsonl

    picked: dict[str, tuple[MaskedItem, str]] = {}
    for c in control_items("ear"):
        cond = c.item.condition
        if cond not in picked:
            picked[cond] = (c.item, c.response)
    assert set(picked) == {"answerable", "unanswerable"}
    items = [it for it, _ in picked.values()]
    write_jsonl(tmp_path / "items.jsonl", items)
    (tmp_path / "resp.jsonl").write_text("".join(
        json.dumps({"item_id": it.id, "epoch": 0, "response": r}) + "\n" for it, r in picked.values()))
    ear_judge = LLMRepairJudge(spec, workdir=None, llm=judge.llm)
    out = tmp_path / "scores"
    rep = score_ear(tmp_path / "items.jsonl", tmp_path / "resp.jsonl", judge=spec,
                    judge_obj=ear_judge, workdir=tmp_path / "work", n_boot=20, out=out, concurrency=1)
    issues = [json.loads(x) for x in (out / "issues.jsonl").read_text().splitlines()]
    failed = {i["item_id"] for i in issues if i["source"] == "judge"}
    assert all(i["evidence"] for i in issues if i["source"] == "judge")
    assert {s.item_id for s in rep.scores} | failed == {it.id for it in items}
    for s in rep.scores:
        (e,) = s.detail["epochs"]
        assert e["status"] == "ok" and e["category"] in R_VALUE and isinstance(e["correct"], bool)
        if s.metric == "R":
            assert s.value == R_VALUE[e["category"]] and not e["correct"]
        else:
            assert s.value == float(e["correct"])
    text = (out / "tables.md").read_text()
    assert spec in text and "1 epoch(s)" in text and "validation κ not measured" in text
    print(f"\n{text}")
