"""On-policy DPO rejects end to end: the export asks a model (the official openai SDK over real
HTTP to the loopback server, its answers scripted here per item and sample) for its own
answers, checks them with the release's deterministic checks and the IHBench judge, and writes
a failing answer as the rejected side; otherwise the offline anti-pattern, with the reason."""

from __future__ import annotations

import json
import re

import datasets
import pytest

from bargein.generators.conversation import generate_conversations
from bargein.generators.exports import write_exports
from bargein.generators.onpolicy import _messages, malformed
from bargein.generators.scenarios import generate_scenarios
from bargein.llm import get_llm
from bargein.testing.loopback import LoopbackLLMServer
from bargein.testing.wire import request_schema

pytestmark = pytest.mark.integration
SPEC = "openai:policy-under-test"
RESTART = "Let me start over from the top."


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("onp")
    scn = generate_scenarios(8, 5, workdir=work, progress=False).outputs
    out = generate_conversations(scn, seed=5, workdir=work, progress=False, train_percent=50,
                                 sft=False, dpo=False)
    assert len(out.train_items) >= 4
    return out


class Script:
    """The model: item A restarts (the judge then prefers the gold in both orders), item B says
    a placeholder (a deterministic check fails it), item D answers nothing usable, every other
    answer is the gold recovery itself (which passes)."""

    def __init__(self, items):
        self.items = items
        self.a, self.b, self.c, self.d = items[:4]
        self.by_prompt = {json.dumps(_messages(i)): i for i in items}
        self.restart = f"{RESTART} {self.a.planned_text}"

    def answer(self, item, sample: int) -> str:
        if item is self.a:
            return self.restart
        if item is self.b:
            return "Sure, your reference is [REFERENCE_NUMBER] and I'll send it to {email}."
        if item is self.d:
            return ["", '{"reply": "Okay."}', "   "][sample % 3]
        return item.gold_recovery

    def __call__(self, req: dict) -> str:
        if request_schema(req) is None:                                  # the policy's turn
            msgs = [{"role": m["role"], "content": m["content"]} for m in req["messages"]]
            return self.answer(self.by_prompt[json.dumps(msgs)], int(req.get("seed") or 0))
        props = request_schema(req).get("properties", {})
        case = req["messages"][-1]["content"]
        if "winner" in props:                                            # judge_tf
            a = re.search(r'Response A:\n"""(.*?)"""', case, re.S).group(1)
            b = re.search(r'Response B:\n"""(.*?)"""', case, re.S).group(1)
            restart_shown = RESTART in a or RESTART in b
            # the restart loses wherever it is shown; any other answer wins as A (position
            # bias: a tie in both orders, so no TF failure)
            winner = ("B" if RESTART in a else "A") if restart_shown else "A"
            return json.dumps({"reasoning": "", "winner": winner, "loser_deficiency":
                               "It restarts the explanation the caller already heard."})
        if "does_it" in props:                                           # judge_rq_avoid
            return json.dumps({"forbidden": "", "evidence": "", "does_it": False})
        return json.dumps({"evidence": "", "met": True})                 # judge_rq_criterion


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_model_failures_become_rejected_and_the_rest_fall_back(run, tmp_path):
    items = run.train_items
    script = Script(items)
    with LoopbackLLMServer(responder=script) as srv:
        llm = get_llm(SPEC, base_url=srv.openai_base_url, workdir=tmp_path, max_retries=0)
        counts = write_exports(items, run.accepted, tmp_path, seed=5, sft=False, llm=SPEC,
                               resources={"llm": llm}, progress=False)
        policy_calls = [r for r in srv.requests if r.api == "openai"
                        and request_schema(r.json) is None]
    assert counts["dpo"] == len(items)
    rows = {r["eval_item"]: r for r in _rows(tmp_path / "dpo.jsonl")}
    # a failing answer of the model is the rejected side, with what it failed
    a, b = rows[script.a.id], rows[script.b.id]
    assert a["rejected_source"] == "model" and a["rejected"][0]["content"] == script.restart
    # what it failed: the judge's TF deficiency, or a deterministic check the restart breaks
    # before any judge is asked (the heard span said again; a fact the caller volunteered just
    # before the cut, which the gold takes up and the restart ignores)
    assert any(f.startswith(("tf: It restarts",
                             "check gold_meets_own_rubric: the gold recovery restates the quoted heard span",
                             "check hidden_fact_addressed: the caller volunteered"))
               for f in a["rejected_failed"]), a["rejected_failed"]
    assert "policy-under-test" in a["rejected_model"] and "3 samples" in a["rejected_model"]
    assert b["rejected_source"] == "model" and "[REFERENCE_NUMBER]" in b["rejected"][0]["content"]
    assert any(f.startswith("check placeholders") for f in b["rejected_failed"])
    # all answers good: the offline anti-pattern, the source and reason recorded
    c = rows[script.c.id]
    assert c["rejected_source"] == "anti_pattern" and c["rejected_fallback"] == "model_answers_passed"
    assert c["antipattern"] in ("restart", "ignore", "over_apologise", "lose_thread", "repeat_heard")
    assert c["rejected"][0]["content"] != c["chosen"][0]["content"]
    # no usable answer: the item fails with its evidence, the row falls back, the batch went on
    fails = _rows(tmp_path / "dpo_rejects.failures.jsonl")
    assert [f["item_id"] for f in fails] == [script.d.id]
    assert "is a spoken turn" in fails[0]["reason"]
    assert {x["reason"] for x in fails[0]["evidence"]["answers"]} == {
        "empty answer", "JSON, not a spoken turn"}
    d = rows[script.d.id]
    assert d["rejected_source"] == "anti_pattern" and d["rejected_fallback"] == "model_answers_malformed"
    # each item sampled until one failed: A and B once, the others three times
    per_item = {}
    for r in policy_calls:
        i = script.by_prompt[json.dumps([{"role": m["role"], "content": m["content"]}
                                         for m in r.json["messages"]])]
        per_item[i.id] = per_item.get(i.id, 0) + 1
    assert per_item[script.a.id] == 1 and per_item[script.b.id] == 1
    assert per_item[script.c.id] == 3 and per_item[script.d.id] == 3
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "dpo.jsonl"), split="train")
    assert len(ds) == len(items)
    # what the card reports: the sources, the fallbacks and the model with its settings
    from bargein.verify.report import rejected_sources

    q = rejected_sources(_rows(tmp_path / "dpo.jsonl"))
    assert q["dpo_rejected_sources"] == {"anti_pattern": len(items) - 2, "model": 2}
    assert q["dpo_rejected_fallbacks"] == {"model_answers_malformed": 1,
                                           "model_answers_passed": len(items) - 3}
    assert q["dpo_rejected_model"].startswith(SPEC + "; 3 samples; temperature 0.7")

    # deterministic given the cache: a rerun against a server that would answer differently
    # writes the same bytes; only the failed item is asked again
    first = (tmp_path / "dpo.jsonl").read_bytes()
    with LoopbackLLMServer(responder=lambda req: "A different answer entirely.") as srv2:
        llm2 = get_llm(SPEC, base_url=srv2.openai_base_url, workdir=tmp_path, max_retries=0)
        write_exports(items, run.accepted, tmp_path, seed=5, sft=False, llm=SPEC,
                      resources={"llm": llm2}, progress=False)
        asked = {json.dumps([{"role": m["role"], "content": m["content"]}
                             for m in r.json["messages"]]) for r in srv2.requests}
    assert asked <= {json.dumps(_messages(script.d))}
    assert (tmp_path / "dpo.jsonl").read_bytes() == first


def test_quality_report_and_card_record_the_source(run, tmp_path):
    from bargein.verify.report import rejected_sources
    from bargein.releases.card import quality_section

    rows = [{"rejected_source": "model", "rejected_model": "openai:m; 3 samples"},
            {"rejected_source": "anti_pattern", "rejected_model": "openai:m; 3 samples",
             "rejected_fallback": "model_answers_passed"}]
    q = rejected_sources(rows)
    assert q == {"dpo_rejected_sources": {"anti_pattern": 1, "model": 1},
                 "dpo_rejected_fallbacks": {"model_answers_passed": 1},
                 "dpo_rejected_model": "openai:m; 3 samples"}
    text = "\n".join(quality_section({"quality": q}))
    assert "1 of 2 are the configured model's own failing answers (on-policy; openai:m; 3 samples)" in text
    assert "model answers passed: 1" in text


def test_malformed_answers():
    assert malformed("") == "empty answer"
    assert malformed("Sure, the fee is ten dollars.", truncated=True) == "answer cut at max_tokens"
    assert malformed('{"response": "hi"}').startswith("JSON")
    assert malformed("Assistant: Sure.") == "starts with a role label"
    assert malformed("Here you go:\n- first\n- second").startswith("markup")
    assert malformed("Sure. The fee is ten dollars - it covers the visit.") == ""
