"""IHBench scorer: win-rate and bootstrap arithmetic on hand-computed cases, seeded balanced
positions, the depth regression, judges (offline rules, re-asking on vague deficiencies),
responses refusals, and scoring a built release end to end."""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter

import numpy as np
import pytest

from bargein.errors import ConfigError
from bargein.records import INTERRUPTION_TYPES, ChatMessage, EvalItem, Rubric
from bargein.releases.build import ReleaseSources, build_release
from doubles.synthetic_release import write_synthetic
from bargein.scorers import ihbench_rules as rules
from bargein.scorers.ihbench import (
    RQ, TF, Judged, TFJudgment, aggregate, balanced_positions, item_means, load_eval_items,
    load_responses, logistic_slope, score_ihbench, win_value,
)
from bargein.scorers.ihbench_judges import LLMJudge, vague_deficiency
from bargein.scorers.stats import bootstrap_ci


def item(kind: str, *, item_id: str = "ev1", depth: int = 0, rq=None, interjection=None) -> EvalItem:
    planned = "Your claim needs three documents: a photo of the damage, the police report and a receipt."
    heard = "Your claim needs three documents: a photo of"
    inter = interjection or {"filler": "mm-hm", "correction": "Sorry, my policy number is 4471 0933.",
                             "topic_switch": "Can you check my outstanding invoices?",
                             "pushback": "I'm not comfortable sending that.",
                             "impatient": "I know, skip ahead.",
                             "normal": "By the way, it happened on Friday."}[kind]
    rub = Rubric(message_index=3, type=kind, tf_criterion="Continue the claim intake correctly.",
                 rq_criteria=tuple(rq or ("Criterion one is met.", "Criterion two is met.")))
    return EvalItem(id=item_id, conversation_id="conv-x", domain="insurance", message_index=3,
                    system_prompt="You are a claims agent.",
                    history=(ChatMessage(role="assistant", content=heard),
                             ChatMessage(role="user", content=inter)),
                    interjection=inter, type=kind, depth=depth, rubric=rub, gold_recovery="",
                    planned_text=planned, heard_text=heard, baseline="A baseline reply here.")


# ---- arithmetic ---------------------------------------------------------------------------
def test_win_value_and_win_rate_with_ties():
    assert win_value("A", model_first=True) == 1.0 and win_value("B", model_first=False) == 1.0
    assert win_value("B", model_first=True) == 0.0 and win_value("A", model_first=False) == 0.0
    assert win_value("tie", model_first=True) == 0.5
    # item x: win, tie, loss over 3 epochs -> 0.5; item y: 3 wins -> 1.0; win rate = 0.75
    tf = {("x", 0): 1.0, ("x", 1): 0.5, ("x", 2): 0.0, ("y", 0): 1.0, ("y", 1): 1.0, ("y", 2): 1.0}
    assert item_means(tf) == {"x": 0.5, "y": 1.0}


def test_bootstrap_over_item_epoch_means_hand_computed():
    assert bootstrap_ci([0.25, 0.25, 0.25], seed=1) == (0.25, 0.25, 0.25)
    # two items with means 0.5 and 1.0: resampled means are 0.5 (p=1/4), 0.75 (1/2), 1.0 (1/4),
    # so with 1000 draws the 2.5th/97.5th percentiles are exactly 0.5 and 1.0
    point, lo, hi = bootstrap_ci([0.5, 1.0], n_boot=1000, seed=7)
    assert (point, lo, hi) == (0.75, 0.5, 1.0)
    items = [item("filler", item_id="x"), item("pushback", item_id="y", depth=6)]
    j = Judged(tf={("x", 0): 1.0, ("x", 1): 0.5, ("x", 2): 0.0, ("y", 0): 1.0, ("y", 1): 1.0,
                   ("y", 2): 1.0},
               rq={("x", 0): 1.0, ("x", 1): 0.0, ("x", 2): 1.0, ("y", 0): 0.0, ("y", 1): 0.0,
                   ("y", 2): 0.0})
    overall, by_type, by_depth, _ = aggregate(items, j, seed=3, n_boot=1000)
    assert overall[TF] == {"value": 0.75, "ci_low": 0.5, "ci_high": 1.0, "n": 2}
    assert overall[RQ]["value"] == pytest.approx(1 / 3)
    assert (overall[RQ]["ci_low"], overall[RQ]["ci_high"]) == pytest.approx((0.0, 2 / 3))
    assert by_type["filler"][TF]["value"] == 0.5 and by_type["pushback"][RQ]["value"] == 0.0
    assert by_type["filler"][TF]["n"] == 1 and set(by_depth) == {"0–4", "5–9"}


def test_positions_are_seeded_and_balanced():
    keys = [(f"i{n:02d}", e, INTERRUPTION_TYPES[n % 6]) for n in range(41) for e in range(3)]
    a, b = balanced_positions(keys, seed=1), balanced_positions(keys, seed=1)
    assert a == b and len(a) == len(keys)
    assert balanced_positions(list(reversed(keys)), seed=1) == a      # order of input irrelevant
    assert balanced_positions(keys, seed=2) != a
    for kind in INTERRUPTION_TYPES:
        flags = [a[(i, e)] for i, e, k in keys if k == kind]
        assert abs(sum(flags) - len(flags) / 2) <= 0.5, kind           # balanced within type
    # randomised: neither "model always first" nor a fixed alternation
    per_item = Counter(tuple(a[(f"i{n:02d}", e)] for e in range(3)) for n in range(41))
    assert len(per_item) >= 4


def test_depth_logistic_regression_matches_direct_likelihood_fit():
    from scipy.optimize import minimize

    x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 2, 4, 6, 8], float)
    y = np.array([1, 1, 0.5, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0.5, 0], float)

    def nll(b):
        p = 1 / (1 + np.exp(-(b[0] + b[1] * x)))
        return -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))

    ref = minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    fit = logistic_slope(x, y)
    assert fit["intercept"] == pytest.approx(ref[0], abs=1e-5)
    assert fit["slope"] == pytest.approx(ref[1], abs=1e-5) and fit["slope"] < 0
    assert fit["se"] > 0 and 0 < fit["p"] < 1 and fit["n"] == 15
    assert math.isnan(logistic_slope(x, np.ones_like(x))["slope"])      # no variation
    assert math.isnan(logistic_slope(np.ones(5), y[:5])["slope"])


# ---- judges -------------------------------------------------------------------------------
def test_vague_deficiencies_are_rejected():
    for vague in ("longer", "More detail.", "it is less detailed", "the response is shorter",
                  "more comprehensive and thorough", ""):
        assert vague_deficiency(vague), vague
    for concrete in ("ignores the Friday deadline the user mentioned",
                     "asks for the account number again although the user gave it"):
        assert vague_deficiency(concrete) is None


def test_offline_rules_over_types():
    f = item("filler", rq=("Continues from where the utterance was cut.",
                           "Does not repeat the heard part.", "Does not acknowledge the filler."))
    good = "the damage, the police report and a receipt."
    assert all(ok for _, ok, _ in rules.assess(f, good))
    verdicts = rules.assess(f, "Great! Your claim needs three documents: a photo of the damage.")
    assert [ok for _, ok, _ in verdicts] == [False, False, False]
    c = item("correction", rq=("Accepts the correction without pushback.", "Uses the corrected value."))
    assert all(ok for _, ok, _ in rules.assess(c, "Thanks, I've updated it to 4471-0933. Next, the date."))
    bad = rules.assess(c, "Are you sure? You said 4471 0932 before.")
    assert [ok for _, ok, _ in bad] == [False, False]
    p = item("pushback", rq=("Shows empathy for the concern.", "Offers an alternative."))
    assert all(ok for _, ok, _ in rules.assess(p, "I understand. Alternatively, you can mail it."))
    t = item("topic_switch")          # criteria with no recognisable wording: the type's default
    assert rules.assess(t, "Your invoices are all paid. Now, back to the claim.")[0][1]
    assert rules.compare(f, good, "Great! " + f.planned_text)[0] == "A"
    winner, why = rules.compare(f, "Great! " + f.planned_text, good)
    assert winner == "B" and "continue" in why
    assert rules.compare(f, good, good) == ("tie", "")


def test_offline_rules_follow_the_rubric_wording():
    """Criteria worded like the rubric generator's map to the right check and use its quotes."""
    cases = {
        "Uses the corrected account email (sgreen@thomas-blake.com) and no longer the earlier "
        "value (samantha_green@aol.com).": "contains_corrected_value",
        'Continues exactly where the utterance was cut off (after "a photo of"), starting with '
        '"the damage, the".': "continues_cut",
        "Keeps the two topics separate instead of blending them together.": "no_blend",
        "Neither caves by dropping the requirement nor stonewalls by repeating it.": "holds_requirement",
        "Does not acknowledge the backchannel (no \"great\" or \"as I was saying\").": "no_ack",
        "Skips the rest of the interrupted explanation instead of finishing it.": "skips_remainder",
        "Engages with the caller's specific concern (police report).": "addresses_interjection",
        "Does not drop the interrupted task in favour of the new topic.": "steers_back",
        "Keeps the reply brief and to the point.": "brief",
        "Moves directly to the next concrete step.": "advances",
    }
    for crit, name in cases.items():
        assert rules.check_for(crit, "normal").__name__ == name, crit
    crit = next(iter(cases))
    c = item("correction", rq=(crit, "Accepts the correction without questioning or arguing."),
             interjection="Oops, my account email is sgreen@thomas-blake.com.")
    assert [ok for _, ok, _ in rules.assess(c, "Done, your email is now sgreen@thomas-blake.com.")] == [True, True]
    old = rules.assess(c, "I'll keep samantha_green@aol.com on file.")[0]
    assert not old[1] and "sgreen@thomas-blake.com" in old[2]
    t = item("topic_switch", rq=("Briefly addresses the unrelated request (\"Can you check my "
                                 "outstanding invoices?\").",
                                 "Keeps the two topics separate instead of blending them together."))
    blended = rules.assess(t, "Okay, I'll do both at once then and check your invoices as part of that.")
    assert blended[0][1] and not blended[1][1] and "blends" in blended[1][2]


class ScriptedModel:
    """Replays queued answers, like a mock provider; records what it was asked."""

    def __init__(self, answers):
        self.answers, self.asked = list(answers), []

    async def structured(self, messages, schema, *, agent, sample):
        self.asked.append((agent, sample, messages))
        return schema.model_validate(self.answers.pop(0))


def test_llm_judge_reasks_on_vague_deficiency_then_scores_a_tie():
    it = item("impatient")
    m = ScriptedModel([{"winner": "B", "loser_deficiency": "longer"},
                       {"winner": "B", "loser_deficiency": "re-explains the photo requirement the user skipped"}])
    j = LLMJudge("scripted:model", workdir=None, llm=m)
    assert asyncio.run(j.compare(it, "x", "y", sample=1)) == (
        "B", "re-explains the photo requirement the user skipped", "ok")
    assert len(m.asked) == 2 and "not accepted" in m.asked[1][2][-1]["content"]
    assert "Response A" in m.asked[0][2][0]["content"] and m.asked[0][:2] == ("judge_tf", 1)
    m2 = ScriptedModel([{"winner": "A", "loser_deficiency": "more detail"}] * 3)
    assert asyncio.run(LLMJudge("s:m", workdir=None, llm=m2).compare(it, "x", "y", sample=0)) == (
        "tie", "more detail", "judge_failed")
    # RQ: the verdict is recomputed from the criteria, never trusted
    m3 = ScriptedModel([{"criteria": [{"criterion": "a", "met": True}, {"criterion": "b", "met": False}],
                         "verdict": "pass"}])
    rq = asyncio.run(LLMJudge("s:m", workdir=None, llm=m3).assess(it, "resp", sample=0))
    assert rq.verdict == "fail" and [c.criterion for c in rq.criteria] == list(it.rubric.rq_criteria)
    TFJudgment(winner="A", loser_deficiency="x")          # schema accepts A/B only
    with pytest.raises(ValueError):
        TFJudgment(winner="tie", loser_deficiency="x")


# ---- responses and end to end --------------------------------------------------------------
@pytest.fixture(scope="module")
def release(tmp_path_factory):
    run = write_synthetic(tmp_path_factory.mktemp("w"), 6, seed=5)
    out = tmp_path_factory.mktemp("r") / "rel"
    build_release(out, name="t", version="1.0.0", provenance={"git_commit": "t"},
                  sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                         eval_items=run.eval_items, audio_roots=(run.root,)))
    return out


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_responses_with_unknown_or_missing_ids_are_refused(release, tmp_path):
    items = load_eval_items(release)
    rows = [{"item_id": i.id, "epoch": e, "response": "ok"} for i in items for e in range(3)]
    assert len(load_responses(_write(tmp_path / "ok.jsonl", rows), items, 3)) == len(rows)
    bad = rows[1:] + [{"item_id": "ev-nope", "epoch": 0, "response": "x"}, rows[5]]
    with pytest.raises(ConfigError) as e:
        load_responses(_write(tmp_path / "bad.jsonl", bad), items, 3)
    msg = str(e.value)
    assert "1 unknown item ids" in msg and "ev-nope" in msg and "1 missing" in msg
    assert "1 duplicate" in msg and "Fix: regenerate it for this release with `bargein respond" in msg
    with pytest.raises(ConfigError, match="epochs outside"):
        load_responses(_write(tmp_path / "e.jsonl", rows), items, 2)


def test_baseline_against_itself_is_exactly_parity(release, tmp_path):
    items = load_eval_items(release)
    rows = [{"item_id": i.id, "epoch": e, "response": i.baseline} for i in items for e in range(3)]
    rep = score_ihbench(release, _write(tmp_path / "b.jsonl", rows), epochs=3, n_boot=200)
    assert rep.overall[TF]["value"] == 0.5 and rep.overall[TF]["ci_low"] == 0.5
    assert all(b[TF]["value"] == 0.5 for b in rep.by_type.values())
    assert set(rep.by_type) == set(INTERRUPTION_TYPES)


def test_cli_respond_then_score_writes_tables_scores_and_plots(release, tmp_path, capsys):
    from bargein.cli import main

    resp, out = tmp_path / "responses.jsonl", tmp_path / "scores"
    main(["--seed", "11", "respond", "--release", str(release), "--llm", "oracle", "--epochs", "3",
          "--out", str(resp)])
    main(["--seed", "11", "score", "ihbench", "--release", str(release), "--responses", str(resp),
          "--out", str(out)])
    text = capsys.readouterr().out
    assert "TF win rate [95% CI]" in text and "Depth effect" in text and "| filler |" in text
    report = json.loads((out / "report.json").read_text())
    overall = {a["metric"]: a for a in report["aggregates"] if not a["group"]}
    assert overall[TF]["value"] > 0.8 and overall[RQ]["value"] > 0.8      # gold beats baseline
    lines = (out / "item_scores.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 3 * len(load_eval_items(release))
    assert json.loads(lines[0])["detail"]["model_position"] in ("A", "B")
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    slope = report["config"]["depth_regression"]["slope"]
    assert pngs == ["rq_by_type.png"] + (["tf_by_depth.png"] if slope is not None else []) + [
        "tf_by_type.png"]
    before = {p.name: p.read_bytes() for p in (out / "plots").glob("*.png")}
    main(["--seed", "11", "score", "ihbench", "--release", str(release), "--responses", str(resp),
          "--out", str(out)])
    assert {p.name: p.read_bytes() for p in (out / "plots").glob("*.png")} == before
    off = tmp_path / "offline.jsonl"
    main(["respond", "--release", str(release), "--llm", "offline", "--epochs", "3", "--out", str(off)])
    assert "offline rule-based responder" in capsys.readouterr().out


def test_llm_judges_and_responder_through_the_openai_sdk(release, tmp_path, monkeypatch):
    """The judge prompts and `respond` on a real provider path: the OpenAI SDK against the
    loopback server. The scripted judge prefers the model's answer but first gives a vague
    reason, so every TF judgment is re-asked once; RQ passes everything."""
    import re

    from bargein.testing import LoopbackLLMServer, wire

    def responder(req):
        schema = wire.request_schema(req) or {}
        prompt = wire.first_user_text(req)
        users = sum(1 for m in req["messages"] if m["role"] == "user")
        if schema.get("title") == "TFJudgment" or "Candidate responses" in prompt:
            if users == 1:
                return json.dumps({"reasoning": "r", "winner": "A", "loser_deficiency": "longer"})
            a = prompt.split("Response A:", 1)[1].split("Response B:", 1)[0]
            return json.dumps({"reasoning": "r", "winner": "A" if "MODEL:" in a else "B",
                               "loser_deficiency": "ignores what the user just said"})
        if schema.get("title") == "RQJudgment" or "Recovery-quality criteria" in prompt:
            crit = re.findall(r"^\d+\. (.+)$", prompt.split("## Recovery-quality criteria", 1)[1],
                              re.M)
            return json.dumps({"criteria": [{"criterion": c, "met": True, "reason": "ok"}
                                            for c in crit], "verdict": "pass"})
        return "MODEL: I hear you; let's pick up where we left off."

    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        from bargein.scorers.respond import generate_responses

        resp = tmp_path / "r.jsonl"
        n = generate_responses(release, llm="openai:test-model", epochs=2, out=resp,
                               workdir=tmp_path / "work")
        assert n == 2 * len(load_eval_items(release))
        assert all(json.loads(x)["response"].startswith("MODEL:") for x in resp.read_text().splitlines())
        rep = score_ihbench(release, resp, judge="openai:judge-model", epochs=2, n_boot=200,
                            workdir=tmp_path / "work")
    assert rep.overall[TF]["value"] == 1.0 and rep.overall[RQ]["value"] == 1.0
    assert rep.judge_failures == 0 and rep.judge.startswith("openai:judge-model")
    tf_requests = [r for r in srv.requests if "Candidate responses" in json.dumps(r.json)]
    assert len(tf_requests) == 2 * n            # every TF judgment asked twice (one re-ask)
