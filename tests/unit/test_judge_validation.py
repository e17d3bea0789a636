"""Judge validation: the hand-labelled control set (size, coverage, independence from the
generator's wording), Cohen's kappa on hand-computed cases, the smoke judge held to the gates on
the categories it claims to catch, and the model-judge path over the real OpenAI SDK against the
loopback server (scripted verdicts: that tests plumbing only, it validates no judge)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from bargein.errors import ConfigError
from bargein.records import INTERRUPTION_TYPES
from bargein.scorers.control_set import GOOD, PARAPHRASES, control_items, stratified
from bargein.scorers.ihbench_smoke import SMOKE_CATEGORIES
from bargein.scorers.judge_validation import cohen_kappa, validate_judge, validation_summary

REPO = Path(__file__).resolve().parents[2]


def test_control_set_size_and_coverage():
    items = control_items()
    assert len(items) >= 300
    axes = Counter(i.axis for i in items)
    assert set(axes) == {"tf", "rq", "ear_r", "ear_c"} and min(axes.values()) >= 50
    for axis in ("tf", "rq"):
        assert {i.kind for i in items if i.axis == axis} == set(INTERRUPTION_TYPES)
    cats = Counter(i.category for i in items if i.axis == "rq")
    for cat in ("good_paraphrase", "good_spoken", "good_reordered", "template", "echo", "restart",
                "ignore", "wrong_fact", "over_apology"):
        assert cats[cat] >= 4, cat
    for i in items:
        if i.axis == "rq":
            assert i.expected == ("pass" if i.category in GOOD else "fail")
    tf = Counter(i.expected for i in items if i.axis == "tf")
    assert abs(tf["A"] - tf["B"]) <= 0.2 * sum(tf.values())          # positions balanced
    assert Counter(i.expected for i in items if i.axis == "ear_r") == {
        "explicit_repair": 24, "generic_refusal": 12, "answer": 24}
    assert len({i.id for i in items}) == len(items)
    assert [i.id for i in stratified(items, 40)] == [i.id for i in stratified(items, 40)]
    assert len({(i.axis, i.category) for i in stratified(items, 40)}) >= 20


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    w = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(w[k:k + n]) for k in range(len(w) - n + 1)}


def test_control_set_is_not_written_from_the_generators_wording():
    """No 7-word run and no sentence of 5+ words of a control response or rubric occurs in the
    generator's catalogue, phrase banks or rubric writer."""
    src = "".join(p.read_text() for p in (REPO / "generators" / "catalogue").glob("*.yaml"))
    src += (REPO / "generators" / "phrases.py").read_text() + (REPO / "generators" / "rubric.py").read_text()
    theirs = _grams(src, 7)
    lines = {" ".join(re.findall(r"[a-z0-9']+", s.lower())) for line in src.splitlines()
             for s in re.split(r"(?<=[.!?])\s+", line.strip(" -\"'"))}
    for i in control_items():
        texts = [i.response, i.response_b]
        if hasattr(i.item, "rubric"):
            texts += [i.item.rubric.tf_criterion, *i.item.rubric.rq_criteria, i.item.planned_text]
        for t in texts:
            assert not (_grams(t, 7) & theirs), (i.id, t)
            for s in re.split(r"(?<=[.!?])\s+", t):
                norm = " ".join(re.findall(r"[a-z0-9']+", s.lower()))
                assert len(norm.split()) < 5 or norm not in lines, (i.id, s)


def test_dev_and_heldout_parts_split_by_case():
    """Prompts are worked on against the dev cases; figures are reported on the held-out rest.
    No case (so no conversation, rubric or hand-written answer) is in both."""
    from bargein.scorers.control_set import case_of, dev_cases, split

    from bargein.scorers.control_set import heldout2_cases

    items = control_items()
    dev, held, held2 = split(items, "dev"), split(items, "heldout"), split(items, "heldout2")
    assert len(dev) + len(held) + len(held2) == len(items)
    cases = [{case_of(i) for i in p} for p in (dev, held, held2)]
    assert not cases[0] & cases[1] and not cases[0] & cases[2] and not cases[1] & cases[2]
    assert cases[2] == heldout2_cases() and {i.axis for i in held2} == {"tf", "rq"}
    assert {i.kind for i in held2} == {"normal", "impatient", "correction", "topic_switch",
                                       "filler", "pushback"}
    assert sorted(i.id for i in split(items, "dev+heldout")) == sorted(i.id for i in dev + held)
    # the second held-out part is big enough for both gates, with its own hand-written templates
    rq2 = Counter(i.category for i in held2 if i.axis == "rq")
    assert sum(rq2[c] for c in PARAPHRASES) >= 54 and rq2["template"] >= 36
    assert not {i.response for i in held2 if i.category == "template"} & {
        i.response for i in dev + held if i.category == "template"}
    kinds = Counter(i.kind for i in items if i.axis == "rq" and case_of(i) in dev_cases())
    assert set(kinds) == {"normal", "impatient", "correction", "topic_switch", "filler", "pushback"}
    assert {i.axis for i in dev} == {i.axis for i in held} == {"tf", "rq", "ear_r", "ear_c"}
    # the added development cases are all dev and take no part in the hashed choice: per type
    # one case of ihbench_cases.yaml in four is dev, the rest held out, as before they existed
    from bargein.scorers.control_set import control_metadata, dev_only_cases

    extra = dev_only_cases()
    assert len(extra) >= 10 and extra <= dev_cases() and all(c.startswith("dev-") for c in extra)
    assert not extra & {case_of(i) for i in held}
    hashed = [i for i in items if case_of(i) not in extra | heldout2_cases()]
    for kind in ("normal", "impatient", "correction", "topic_switch", "filler", "pushback", "ear"):
        cases = {case_of(i) for i in hashed if i.kind == kind}
        assert len(cases & dev_cases()) == max(1, len(cases) // 4), kind
    assert len(held) > 2 * len([i for i in hashed if case_of(i) in dev_cases()])
    meta = control_metadata()["ihbench_dev_cases.yaml"]
    assert meta["part"] == "dev" and "by hand" in meta["written_by"] and meta["source"]
    meta2 = control_metadata()["ihbench_heldout2_cases.yaml"]
    assert meta2["part"] == "heldout2" and "by hand" in meta2["written_by"]
    with pytest.raises(ConfigError, match="valid splits"):
        split(items, "test")


def test_stratified_subsets_are_prefixes_of_larger_ones():
    """A run stopped for time is reported on a smaller limit: its judgments must be exactly the
    first ones the larger run asked (the cached answers), also when the limit covers them all."""
    items = [i for i in control_items("ihbench") if i.axis == "rq"]
    full = [i.id for i in stratified(items, len(items) + 10)]
    assert sorted(full) == sorted(i.id for i in items) and full != [i.id for i in items]
    for k in (1, 7, 30, len(items) - 1, len(items)):
        assert [i.id for i in stratified(items, k)] == full[:k]


def test_cohen_kappa_hand_computed():
    # po = 3/4; pe = (2*1 + 2*3) / 16 = 1/2; kappa = (0.75 - 0.5) / 0.5 = 0.5
    assert cohen_kappa(["p", "p", "f", "f"], ["p", "f", "f", "f"]) == pytest.approx(0.5)
    assert cohen_kappa(["A", "B", "A", "B"], ["A", "B", "A", "B"]) == 1.0
    assert cohen_kappa(["A", "B", "A", "B"], ["B", "A", "B", "A"]) == -1.0
    # three classes: po = 5/6, pe = (2*2 + 2*1 + 2*3) / 36 = 1/3 -> kappa = (1/2) / (2/3) = 0.75
    assert cohen_kappa(list("xxyyzz"), list("xxyzzz")) == pytest.approx(0.75)
    assert math.isnan(cohen_kappa(["p", "p"], ["p", "p"])) and math.isnan(cohen_kappa([], []))


@pytest.fixture(scope="module")
def smoke_report():
    return validate_judge("smoke", save=False)


def test_smoke_judge_meets_the_gates_on_its_own_categories(smoke_report):
    """The categories the smoke judge claims (SMOKE_CATEGORIES) are held to gates; its figures
    on everything else (wrong facts, paraphrases) are reported, not gated. The per-category
    gates were set on the control set before the second held-out part existed and are checked
    there (dev + heldout); on heldout2 the issue's own gate holds (content-free templates fail
    RQ >= 95% with any shipped judge), and the smoke judge's other figures there are reported
    in bench/judge_validation.py, not fitted (it was not changed after heldout2 was written)."""
    rep = smoke_report
    assert rep.template_fail_rate()["rate"] >= 0.95 and rep.template_fail_rate()["n"] >= 40
    h2 = validate_judge("smoke", save=False, part="heldout2")
    assert h2.template_fail_rate()["rate"] >= 0.95 and h2.template_fail_rate()["n"] >= 36
    rep = validate_judge("smoke", save=False, part="dev+heldout")
    cats = rep.by_category()
    gates = {"rq/template": 0.95, "rq/echo": 0.95, "rq/restart": 0.9, "rq/ignore": 0.8,
             "tf/template": 0.9, "tf/echo": 0.9, "tf/restart": 0.9, "tf/ignore": 0.85,
             "ear_c/content_free": 0.95}
    assert {k.split("/")[1] for k in gates} - {"content_free"} <= set(SMOKE_CATEGORIES)
    for key, gate in gates.items():
        assert cats[key]["accuracy"] >= gate, (key, cats[key])
    ih = rep.scorer("ihbench")
    assert ih["n"] >= 300 and ih["unscorable"] == 0 and ih["kappa"] > 0.5
    text = rep.tables()
    assert text.startswith("SMOKE TEST, NOT A SCORE") and "Cohen's κ" in text
    assert "rq/correction:" in text and "pass->pass" in text           # per-type confusion


def test_smoke_validation_is_deterministic(smoke_report):
    again = validate_judge("smoke", save=False)
    assert again.to_dict() == smoke_report.to_dict()


def test_model_judge_validation_over_the_openai_sdk(tmp_path, monkeypatch):
    """Plumbing only: a scripted judge behind the loopback server answers by a fixed rule (it
    fails any response that echoes the user's last words, passes the rest, prefers response A
    (so every TF pair, judged in both orders, is a position-bound tie), and classifies repairs
    by keywords). The figures it gets are whatever that rule earns on the
    control set; the test checks they are computed, saved, and printed by `score` — not that the
    rule is a good judge. One answer in five is schema-invalid JSON, re-asked by the client."""
    from bargein.scorers.ihbench_judges import get_judge
    from bargein.testing import LoopbackLLMServer, wire

    seen = Counter()

    def responder(req):
        schema = wire.request_schema(req) or {}
        title = schema.get("title")
        seen[title] += 1
        if seen[title] % 5 == 0 and sum(1 for m in req["messages"] if m["role"] == "user") == 1:
            return '{"not": "the schema"}'
        text = wire.first_user_text(req)
        if title == "TFJudgment":
            return json.dumps({"reasoning": "r", "winner": "A",
                               "loser_deficiency": "ignores what the caller just asked for"})
        if title == "CriterionCheck":
            resp = text.split('"""')[1]
            inter = re.search(r'The user\'s interjection: "(.*)"', text).group(1)
            echo = inter.lower()[:20] in resp.lower()
            return json.dumps({"evidence": resp[:30], "met": not echo})
        if title == "AvoidCheck":
            resp = text.split('"""')[1]
            inter = re.search(r'The user\'s interjection: "(.*)"', text).group(1)
            echo = inter.lower()[:20] in resp.lower()
            return json.dumps({"forbidden": "f", "evidence": resp if echo else "", "does_it": echo})
        resp = text.split('"""')[1].lower()
        cat = ("explicit_repair" if "missed the" in resp or "didn't catch the" in resp
               else "generic_refusal" if "again" in resp else "answer")
        return json.dumps({"category": cat, "correct": cat == "answer", "reason": "r"})

    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        rep = validate_judge("openai:scripted-judge", workdir=tmp_path, limit=60, concurrency=8)
        assert len(rep.verdicts) == 60 and not rep.smoke
        assert rep.scorer("ihbench")["unscorable"] == 0               # re-asks recovered
        saved = sorted(p.name for p in (tmp_path / "judge_validation").glob("*.json"))
        assert saved == ["ear__openai_scripted-judge_judge_repair_v2.json",
                         "ihbench__openai_scripted-judge_judge_tf_v3_both_orders_judge_rq_criterion_v2_judge_rq_avoid_v1_quotes_grounded_6_cut-in_taken_up.json"]
        assert rep.axis("tf")["n"] and all(v.got == "tie" for v in rep.verdicts if v.item.axis == "tf")
        judge = get_judge("openai:scripted-judge", workdir=tmp_path)
        summary = validation_summary(judge, workdir=tmp_path, scorer="ihbench")
        assert summary["n"] == rep.scorer("ihbench")["n"] and summary["subset"] == 60
        assert summary["kappa"] == pytest.approx(rep.scorer("ihbench")["kappa"], abs=1e-4)
    assert srv.requests


def test_judges_over_the_anthropic_sdk_and_schema_failures(tmp_path, monkeypatch):
    """Plumbing only, through the real Anthropic SDK: a scripted judge; the TF judge answers
    with the wrong shape every time (schema-invalid JSON), so every TF judgment is unscorable
    with the raw answers as evidence, while RQ verdicts come through."""
    from bargein.testing import LoopbackLLMServer, wire

    def responder(req):
        schema = wire.request_schema(req) or {}
        if schema.get("title") == "TFJudgment":
            return json.dumps({"winner": "neither"})
        if schema.get("title") == "CriterionCheck":
            return json.dumps({"evidence": "", "met": False})
        if schema.get("title") == "AvoidCheck":
            return json.dumps({"evidence": "", "does_it": False})
        return json.dumps({"category": "answer", "correct": False, "reason": "r"})

    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        rep = validate_judge("anthropic:scripted-judge", workdir=tmp_path, scorer="ihbench",
                             limit=16, concurrency=4)
    tf = rep.axis("tf")
    assert tf["n"] > 0 and tf["unscorable"] == tf["n"] and tf["scored"] == 0
    assert rep.axis("rq")["unscorable"] == 0
    unscorable = [v for v in rep.verdicts if v.got is None]
    assert all("winner" in v.evidence for v in unscorable)          # the judge's raw answer
    assert any(r.path.endswith("/v1/messages") for r in srv.requests)


def test_model_baseline_records_model_and_settings_and_smoke_never_equals_gold(tmp_path, monkeypatch):
    from bargein.generators.baseline import SMOKE_MODEL, fill_baselines, smoke_baseline
    from bargein.testing import LoopbackLLMServer

    first = {}
    for c in control_items("ihbench"):
        if c.axis == "rq" and c.category == "good_paraphrase":
            first.setdefault(c.item.id, c.item.with_(gold_recovery=c.response))
    items = list(first.values())[:12]
    with LoopbackLLMServer(responder=lambda req: "A model's own recovery.") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        res = fill_baselines(items, llm="openai:baseline-model", seed=1, workdir=tmp_path,
                             temperature=0.3, max_tokens=200, progress=False)
    assert not res.failures and {o.baseline for o in res.outputs} == {"A model's own recovery."}
    label = res.outputs[0].baseline_model
    assert label.startswith("openai:baseline-model;") and "temperature 0.3" in label
    assert "max_tokens 200" in label and "prompt baseline v" in label
    sent = srv.requests[0].json
    assert sent["temperature"] == 0.3 and sent["messages"][0]["role"] == "system"
    smoke = fill_baselines(items, llm="smoke", seed=1, workdir=tmp_path / "s", progress=False)
    assert {o.baseline_model for o in smoke.outputs} == {SMOKE_MODEL}
    for it in items:
        assert smoke_baseline(it) != it.gold_recovery
        exact = it.with_(gold_recovery=it.planned_text)              # even when gold == planned
        assert smoke_baseline(exact).strip() != exact.gold_recovery.strip()


def test_validate_judge_cli_part_split_and_judge_settings(tmp_path, monkeypatch):
    """`score validate-judge --part rq --split dev` keeps only those judgments; the judge
    settings reach the judge (its id names them); --threads becomes the llamacpp provider's
    n_threads setting."""
    from click.testing import CliRunner

    from bargein import registry
    from bargein.cli import cli
    from bargein.scorers.control_set import split

    def run(*args):
        return CliRunner().invoke(cli, ["--workdir", str(tmp_path), "score", "validate-judge", *args])

    res = run("--judge", "smoke", "--part", "rq", "--split", "dev", "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    want = [i.id for i in split(control_items("ihbench"), "dev") if i.axis == "rq"]
    assert [v["id"] for v in got["verdicts"]] == want and set(got["axes"]) == {"rq"}
    res = run("--judge", "smoke", "--part", "ear", "--split", "heldout")
    assert res.exit_code == 0 and "| ear_r |" in res.output and "| rq |" not in res.output
    bad = run("--judge", "smoke", "--part", "tf", "--scorer", "ear")
    assert bad.exit_code != 0 and "--part tf" in bad.output

    seen = {}

    def fake_run(spec, **kw):                      # only to see what the CLI passes on
        seen.update(kw, threads=registry.options("llm", "llamacpp").get("n_threads"))
        return validate_judge("smoke", scorer="ihbench", limit=2, save=False)

    monkeypatch.setattr("bargein.scorers.judge_validation.validate_judge", fake_run)
    before = registry.options("llm", "llamacpp")
    try:
        res = run("--judge", "llamacpp:/m.gguf", "--part", "tf", "--rq-mode", "criteria",
                  "--one-order", "--no-grounding", "--threads", "1")
        assert res.exit_code == 0, res.output
    finally:
        registry.set_options("llm", "llamacpp", **before)
    assert seen["axes"] == ("tf",) and seen["threads"] == 1
    assert seen["judge_options"] == {"rq_mode": "criteria", "both_orders": False, "grounding": False}
    assert run("--judge", "smoke", "--threads", "0").exit_code != 0


def test_model_judge_options_and_the_llamacpp_threads_setting(tmp_path, monkeypatch):
    """get_judge passes rq_mode / both_orders / grounding to the model judge; n_threads is a
    provider setting checked like the others (given, from registry options, or from
    $BARGEIN_LLM_SETTINGS) and reaches the in-process provider."""
    from bargein.llm import get_llm
    from bargein.scorers.ihbench_judges import get_judge

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")      # never called
    j = get_judge("openai:m", workdir=tmp_path, rq_mode="criteria", both_orders=False, grounding=False)
    assert (j.rq_mode, j.both_orders, j.grounding) == ("criteria", False, False)
    assert "both orders" not in j.id and "judge_rq_avoid" not in j.id and "grounded" not in j.id
    assert get_judge("smoke", workdir=tmp_path, rq_mode="criteria").smoke
    with pytest.raises(ConfigError, match="n_threads"):
        get_llm("openai:m", workdir=tmp_path, n_threads=0)
    pytest.importorskip("llama_cpp")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")                      # the model loads on first use only
    assert get_llm(f"llamacpp:{gguf}", workdir=tmp_path, n_threads=1).provider.n_threads == 1
    monkeypatch.setenv("BARGEIN_LLM_SETTINGS", "llamacpp.n_threads=2")
    assert get_llm(f"llamacpp:{gguf}", workdir=tmp_path).provider.n_threads == 2
