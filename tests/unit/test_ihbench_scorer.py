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
from bargein.scorers import ihbench_smoke as smoke
from bargein.scorers.ihbench import (
    RQ, TF, Judged, TFJudgment, aggregate, balanced_positions, item_means, load_eval_items,
    load_responses, logistic_slope, score_ihbench, win_value,
)
from bargein.scorers.ihbench_judges import (
    JUDGE_ENV, SMOKE_STAMP, LLMJudge, Unscorable, quoted_in, resolve_judge_spec, vague_deficiency,
)
from bargein.scorers.judge_validation import validate_judge
from bargein.scorers.stats import bootstrap_ci


def item(kind: str, *, item_id: str = "ev1", depth: int = 0, rq=None, interjection=None,
         heard: str = "Your claim needs three documents: a photo of") -> EvalItem:
    planned = "Your claim needs three documents: a photo of the damage, the police report and a receipt."
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


def rule_holds(kind: str, interjection: str, heard: str, rule: str, *, kept: str, broken: str):
    """A rule the judge's quote check reads: ``kept`` does not break it, ``broken`` does."""
    from bargein.scorers.ihbench_judges import shows_violation

    it = item(kind, interjection=interjection, heard=heard)
    assert not shows_violation(kept, it, rule), kept
    assert shows_violation(broken, it, rule), broken


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
    assert overall[TF] == {"value": 0.75, "ci_low": 0.5, "ci_high": 1.0, "n": 2, "unscorable": 0}
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


def test_smoke_rules_over_types():
    """The smoke judge's own checks (it never reads the RQ criteria's wording)."""
    f = item("filler")
    good = "the damage, the police report and a receipt."
    assert all(ok for _, ok, _ in smoke.assess(f, good))
    verdicts = dict((n, ok) for n, ok, _ in smoke.assess(
        f, "Great! Your claim needs three documents: a photo of the damage."))
    assert not verdicts["no acknowledgement"] and not verdicts["no repeat heard"]
    assert not verdicts["continues remainder"]
    c = item("correction")
    assert all(ok for _, ok, _ in smoke.assess(
        c, "Thanks, policy four four seven one, zero nine three three it is. Now the photo of the damage."))
    bad = dict((n, ok) for n, ok, _ in smoke.assess(c, "Are you sure? You said 4471 0932 before."))
    assert not bad["carries correction"] and not bad["no arguing"]
    p = item("pushback")
    assert all(ok for _, ok, _ in smoke.assess(
        p, "I understand. Instead of sending the police report, you can bring it to the office."))
    for template in ("Sure. What's next for you?", "Okay, I can help with that."):
        for kind in INTERRUPTION_TYPES:
            assert not all(ok for _, ok, _ in smoke.assess(item(kind), template)), (kind, template)
    assert smoke.compare(f, good, "Great! " + f.planned_text)[0] == "A"
    winner, why = smoke.compare(f, "Great! " + f.planned_text, good)
    assert winner == "B" and why
    assert smoke.compare(f, good, good) == ("tie", "")
    assert smoke.assess(f, "  ") == [("not empty", False, "empty response")]


def test_smoke_judge_reads_no_generator_wording():
    """The smoke judge imports neither the phrase banks nor the rubric generator, and reads no
    criterion text (a rubric reworded any way gives the same verdicts)."""
    import ast
    import inspect

    from bargein.scorers import ear_rules, ihbench_judges

    for mod in (smoke, ear_rules, ihbench_judges):
        tree = ast.parse(inspect.getsource(mod))
        names = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any(x.startswith("bargein.generators") for x in names), (mod.__name__, names)
        assert "phrases" not in inspect.getsource(mod).replace("phrase banks", "")
    it = item("normal")
    resp = "Friday, noted. The police report and a receipt are the last two."
    other = it.with_(rubric=it.rubric.model_copy(update={"rq_criteria": ("Zzz.", "Qqq.", "Www.")}))
    assert smoke.assess(it, resp) == smoke.assess(other, resp)


class ScriptedModel:
    """Replays queued answers, like a mock provider; records what it was asked."""

    def __init__(self, answers):
        self.answers, self.asked = list(answers), []

    async def structured(self, messages, schema, *, agent, sample, temperature=None, max_tokens=None):
        self.asked.append((agent, sample, messages))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return schema.model_validate(answer)


def test_llm_judge_reasks_on_vague_deficiency_then_is_unscorable():
    """Plumbing only (scripted answers, not a validation of any judge)."""
    from bargein.errors import GenerationFailed

    it = item("impatient")
    m = ScriptedModel([{"winner": "B", "loser_deficiency": "longer"},
                       {"winner": "B", "loser_deficiency": "re-explains the photo requirement the user skipped"}])
    j = LLMJudge("scripted:model", workdir=None, llm=m, both_orders=False)
    v = asyncio.run(j.compare(it, "x", "y", sample=1))
    assert (v.winner, v.deficiency, v.status) == (
        "B", "re-explains the photo requirement the user skipped", "ok")
    assert len(m.asked) == 2 and "not accepted" in m.asked[1][2][-1]["content"]
    first = m.asked[0][2]
    assert first[0]["role"] == "system" and "Ties are not allowed" in first[0]["content"]
    assert "Response A" in first[1]["content"] and m.asked[0][:2] == ("judge_tf", 1)
    m2 = ScriptedModel([{"winner": "A", "loser_deficiency": "more detail"}] * 3)
    v2 = asyncio.run(LLMJudge("s:m", workdir=None, llm=m2).compare(it, "x", "y", sample=0))
    assert v2.winner is None and v2.status == "unscorable" and len(v2.evidence["answers"]) == 3
    # RQ in one call: the verdict is recomputed from the criteria, never trusted
    m3 = ScriptedModel([{"criteria": [{"criterion": "a", "met": True}, {"criterion": "b", "met": False}],
                         "verdict": "pass"}])
    rq = asyncio.run(LLMJudge("s:m", workdir=None, llm=m3, rq_mode="all").assess(it, "resp", sample=0))
    assert rq.verdict == "fail" and [c.criterion for c in rq.criteria] == list(it.rubric.rq_criteria)
    # a judge answer that never fits the schema: unscorable, with the evidence kept
    m4 = ScriptedModel([GenerationFailed("no valid RQJudgment", evidence={"attempts": [{"raw": "??"}]})])
    bad = asyncio.run(LLMJudge("s:m", workdir=None, llm=m4, rq_mode="all").assess(it, "resp", sample=0))
    assert isinstance(bad, Unscorable) and bad.evidence["details"]["attempts"][0]["raw"] == "??"
    m5 = ScriptedModel([GenerationFailed("no valid CriterionCheck", evidence={"attempts": [{"raw": "?"}]})])
    bad = asyncio.run(LLMJudge("s:m", workdir=None, llm=m5).assess(it, "resp", sample=0))
    assert isinstance(bad, Unscorable) and bad.evidence["criterion"] == it.rubric.rq_criteria[0]
    TFJudgment(winner="A", loser_deficiency="x")          # schema accepts A/B only
    with pytest.raises(ValueError):
        TFJudgment(winner="tie", loser_deficiency="x")


def test_tf_in_both_orders_a_position_bound_winner_is_a_tie():
    """Plumbing: the pair is judged as given and swapped; the same response must win both."""
    it = item("normal")
    why = "skips the Friday deadline the caller just gave"
    same = ScriptedModel([{"winner": "A", "loser_deficiency": why}, {"winner": "B", "loser_deficiency": why}])
    v = asyncio.run(LLMJudge("s:m", workdir=None, llm=same).compare(it, "good", "bad", sample=0))
    assert (v.winner, v.status) == ("A", "ok") and len(same.asked) == 2
    shown = [m[2][1]["content"] for m in same.asked]
    assert shown[0].index('"""good"""') < shown[0].index('"""bad"""')
    assert shown[1].index('"""bad"""') < shown[1].index('"""good"""')          # swapped
    biased = ScriptedModel([{"winner": "A", "loser_deficiency": why}] * 2)     # always "A"
    t = asyncio.run(LLMJudge("s:m", workdir=None, llm=biased).compare(it, "good", "bad", sample=0))
    assert (t.winner, t.status) == ("tie", "tie") and len(t.evidence["orders"]) == 2
    assert win_value(t.winner, True) == 0.5


def test_rq_per_criterion_evidence_must_be_words_of_the_response():
    """A criterion judged met whose quote is not in the response fails, in code."""
    it = item("correction")
    resp = "Thanks, policy 4471 0933 noted. Next, the police report and a receipt, please."
    n = len(it.rubric.rq_criteria)
    ok = [{"evidence": "policy 4471 0933 noted", "met": True}] * n
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=ScriptedModel(ok)).assess(it, resp, sample=0))
    assert r.verdict == "pass" and all(c.met for c in r.criteria)
    invented = ok[:-1] + [{"evidence": "I have booked the engineer", "met": True}] * 2   # re-asked once
    m = ScriptedModel(invented)
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, resp, sample=0))
    assert r.verdict == "fail" and not r.criteria[-1].met and "not words of the response" in r.criteria[-1].reason
    assert len(m.asked) == n + 1 and "not words of the reply" in m.asked[-1][2][-1]["content"]
    fixed = [{"evidence": "I have booked the engineer", "met": True}] + ok
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=ScriptedModel(fixed)).assess(it, resp, sample=0))
    assert r.verdict == "pass"
    empty = [{"evidence": "", "met": True}] * 2 + ok[1:]
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=ScriptedModel(empty)).assess(it, resp, sample=0))
    assert r.verdict == "fail" and "without quoting" in r.criteria[0].reason
    m = ScriptedModel(ok)
    asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, resp, sample=0))
    assert [a[0] for a in m.asked] == ["judge_rq_criterion"] * n
    assert all(c in a[2][-1]["content"] for a, c in zip(m.asked, it.rubric.rq_criteria))
    assert quoted_in("POLICY 4471  0933, noted!", resp) and not quoted_in("policy 4471 0934", resp)
    # a real quote that names nothing of this conversation shows no case-specific recovery
    # (asked once more with that reason; a content-free reply has no other words to quote)
    generic = "Sure, happy to help. What's next for you?"
    anyw = [{"evidence": "happy to help", "met": True}] * (2 * n)
    m = ScriptedModel(anyw)
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, generic, sample=0))
    assert r.verdict == "fail" and all("nothing of this conversation" in c.reason for c in r.criteria)
    assert len(m.asked) == 2 * n and "would fit any conversation" in m.asked[1][2][-1]["content"]
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=ScriptedModel(anyw[:n]), grounding=False).assess(
        it, generic, sample=0))
    assert r.verdict == "pass"


def test_a_met_quote_that_names_nothing_of_the_case_is_asked_again():
    """Plumbing only (scripted answers). A good reply whose judge first quotes its generic
    closing question is asked once more; a grounded second quote meets the criterion, a second
    generic one does not, and a met with a grounded quote is never re-asked."""
    it = item("correction", rq=("The new policy number is used.", "The reply goes on."))
    resp = "No problem, I've updated it to policy 4471 0933. Shall we go on?"
    closing = {"evidence": "Shall we go on?", "met": True}
    fine = {"evidence": "policy 4471 0933", "met": True}
    m = ScriptedModel([closing, {"evidence": "updated it to policy 4471 0933", "met": True}, fine])
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, resp, sample=0))
    assert r.verdict == "pass" and len(m.asked) == 3
    assert "would fit any conversation" in m.asked[1][2][-1]["content"]
    m = ScriptedModel([closing, closing, fine])
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, resp, sample=0))
    assert r.verdict == "fail" and "nothing of this conversation" in r.criteria[0].reason
    assert r.criteria[1].met
    m = ScriptedModel([fine, fine])
    assert asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, resp, sample=0)).verdict == "pass"
    assert len(m.asked) == 2
    m = ScriptedModel([closing, fine])             # reasks=0: no second ask, the check stands
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m, reasks=0).assess(it, resp, sample=0))
    assert r.verdict == "fail" and len(m.asked) == 2


def test_written_and_spoken_numbers_are_the_same_words_to_the_checks():
    """Hand-worked spoken forms; applied alike to quotes, replies and the conversation, so a
    reply that writes "30" quotes a conversation that said "thirty" (and the reverse)."""
    from bargein.scorers.ihbench_judges import grounded_in, spoken_numbers

    def said(t):
        import re

        return " ".join(re.findall(r"[a-z]+", spoken_numbers(t)))

    assert said("wait 30 seconds") == "wait thirty seconds"
    assert said("the 12th of May, 1st floor") == "the twelfth of may first floor"
    assert said("reading 04771 on account 83153") == ("reading zero four seven seven one on account "
                                                      "eight three one five three")
    assert said("born in 1988, pay 1,200 by 9:45") == ("born in nineteen eighty eight pay twelve "
                                                       "hundred by nine forty five")
    assert said("2007 and 250") == "two thousand seven and two hundred fifty"
    assert quoted_in("wait thirty seconds", "Please wait 30 seconds.")
    assert quoted_in("account 83153", "That's account eight three one five three.")
    assert not quoted_in("account 83154", "That's account eight three one five three.")
    it = item("normal", interjection="By the way, it happened on the twenty first.")
    assert grounded_in("on the 21st", it) and not grounded_in("on the 14th", it)
    # a number is one content word, ordinals as cardinals; a lone one/first/second is none
    from bargein.scorers.ihbench_judges import _content

    assert _content("the 31st of July") == _content("thirty-first of July") == _content("31 July")
    assert _content("$312") == _content("three hundred and twelve") == {"#three hundred twelve"}
    assert _content("9080") != _content("9550") and not _content("9080") & _content("9550")
    assert _content("one of them, first") == {"first"} and _content("a second time") == {"secon", "time"}
    assert not grounded_in("on the 1st", it)                      # "twenty one" is not "one"


def test_criterion_kind_reads_the_criterion_grammar():
    from bargein.scorers.ihbench_judges import criterion_kind

    for c in ("It does not read the booking details again.", "No slot already heard is read out again.",
              "The old figure is not used any more.", "The explanation of the fees is dropped.",
              "The description is skipped.", "Leaves out the rest of the rules.", "Doesn't restart.",
              "The reply never argues.", 'Does not acknowledge the backchannel (no "great").'):
        assert criterion_kind(c) == "avoid", c
    for c in ("The late arrival is acknowledged.", "Asks for the registration number right away.",
              "The correction is accepted without any pushback.",
              "The reply carries on from the list instead of starting it over.",
              "Delivery is offered rather than collection.", "Notes the new date.",
              "The Sunday question is answered (no phone support on Sundays).",
              'Quotes the caller\'s "I\'m not paying that" back with empathy.'):
        assert criterion_kind(c) == "do", c


def test_rq_split_mode_asks_forbidding_criteria_for_the_words_that_break_them():
    """Plumbing only (scripted answers). A "do" criterion is asked with ``judge_rq_criterion``,
    an "avoid" one with ``judge_rq_avoid``; an avoid criterion is broken only when the judge
    quotes words of the response that mostly say again what the user heard or the criterion
    names (the interrupted 'photo of the damage' here); a quote of new content, an invented
    quote or a "does not do it" leaves it met."""
    rq = ("The reply asks for the police report.", "It does not list the photo of the damage again.")
    it = item("filler", rq=rq)
    good = "the police report and a receipt, please."
    restart = "Your claim needs three documents: a photo of the damage, the police report and a receipt."
    do = {"evidence": "the police report", "met": True}

    def run(avoid_answer, resp):
        m = ScriptedModel([do, avoid_answer])
        r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, resp, sample=0))
        assert [a[0] for a in m.asked] == ["judge_rq_criterion", "judge_rq_avoid"]
        assert rq[1] in m.asked[1][2][-1]["content"] and "must NOT do" in m.asked[1][2][0]["content"]
        return r

    new_words = run({"forbidden": "listing the photo", "evidence": good, "does_it": True}, good)
    assert new_words.verdict == "pass" and "new content" in new_words.criteria[1].reason
    invented = run({"evidence": "a photo of the damage", "does_it": True}, good)
    assert invented.verdict == "pass" and "not words of the response" in invented.criteria[1].reason
    assert run({"evidence": "", "does_it": False}, good).verdict == "pass"
    broken = run({"forbidden": "listing the photo", "evidence": "a photo of the damage", "does_it": True},
                 restart)
    assert broken.verdict == "fail" and not broken.criteria[1].met
    assert broken.criteria[1].evidence == "a photo of the damage"
    # without grounding, any quoted words judged as breaking it break it
    m = ScriptedModel([do, {"evidence": good, "does_it": True}])
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m, grounding=False).assess(it, good, sample=0))
    assert r.verdict == "fail"
    # rq_mode="criteria" asks every criterion the "do" way
    m = ScriptedModel([do, do])
    asyncio.run(LLMJudge("s:m", workdir=None, llm=m, rq_mode="criteria").assess(it, good, sample=0))
    assert [a[0] for a in m.asked] == ["judge_rq_criterion"] * 2
    ids = {LLMJudge("s:m", workdir=None, llm=m, rq_mode=mode, grounding=g).id
           for mode in ("split", "criteria", "all") for g in (True, False)}
    assert len(ids) == 5                      # "all" has no quotes, so no grounding setting
    with pytest.raises(ConfigError, match="rq_mode"):
        LLMJudge("s:m", workdir=None, llm=m, rq_mode="vote")


def test_a_word_the_user_said_is_not_forbidden_by_a_rule_against_going_on():
    """An "avoid" criterion forbids what it names and what the user already heard; the user's
    own words are forbidden only by a rule about them (echoing, reacting, thanking). Hand-made
    case: the impatient caller says "just check where it is"; a good reply asking "Which
    postcode should I check?" does not break "the rest of the explanation is skipped"."""
    from bargein.scorers.ihbench_judges import about_user_words, echoes, forbidden_content, shows_violation

    it = item("impatient", interjection="I don't need the tracking lesson, just check where it is.")
    skip = "The rest of the explanation of the documents is skipped."
    assert not about_user_words(skip)
    assert "check" not in forbidden_content(it, skip) and "photo" in forbidden_content(it, skip)
    assert not shows_violation("Which postcode should I check?", it, skip)          # one shared word
    assert not shows_violation("What postcode should I check it against?", it, skip)
    assert shows_violation("a photo of the damage", it, skip)                  # what was heard again
    # a real echo of the interjection breaks it still, whatever the rule
    echo = "So, i don't need the tracking lesson, just check where it is. Got it."
    assert echoes(echo, it) and shows_violation(echo, it, skip)
    assert not echoes("just check it", it)                      # three of eleven words: no echo
    # a rule about the user's words forbids them (more than half of the quote's content words)
    react = "It does not comment on what the caller said."
    assert about_user_words(react) and "check" in forbidden_content(it, react)
    assert shows_violation("tracking lesson noted, I'll check", it, react)
    assert not shows_violation("Which postcode and street should I check?", it, react)  # 1 of 3
    for c in ("It says nothing about the member's \"uh-huh\".", "There is no reaction to the 'right'.",
              "The reply does not thank the caller for the backchannel.",
              "It does not repeat the caller's words back."):
        assert about_user_words(c), c
    for c in ("It does not simply carry on as if nothing was said.", "The fees are not stated again.",
              "The caller is not asked whether they are sure."):
        assert not about_user_words(c), c
    # a backchannel of four words or fewer is echoed only when all of it is said back
    filler = item("filler", interjection="Uh-huh, right.")
    assert echoes("Uh-huh, right. So the police report", filler) and not echoes("right, so", filler)
    # saying the corrected value back is the recovery of a correction, not an echo
    corr = item("correction")
    assert echoes("my policy number is 4471 0933", corr)
    assert not shows_violation("your policy number is 4471 0933", corr, "It does not argue.")
    # a word the user just said is theirs even when the heard text had it too
    plan = item("correction", interjection="Sorry, correction, it's Business Plus, not Business.",
                heard="So that's the Business plan, twelve seats,")
    sure = "The caller is not asked whether they are sure about the plan."
    assert "busin" not in forbidden_content(plan, sure) and "seats" in forbidden_content(plan, sure)
    assert not shows_violation("Business Plus", plan, sure)
    assert shows_violation("the Business plan, twelve seats", plan, sure)
    # a number is one word: 9080 shares "nine thousand" with 9550 but is not the same content
    rule_holds("correction", "Sorry, wrong address, it's 9080 Meadowlark Drive.",
               "I've opened a review for 9550 Delmar",
               "9550 Delmar Lane is no longer given as the address.",
               kept="I've changed the address to 9080 Meadowlark Drive.",
               broken="the review for 9550 Delmar Lane")


def test_checks_v6_values_codes_wishes_and_the_rest_that_is_skipped():
    """Hand-made cases for the v6 checks: a rule naming a value is broken only by saying it; a
    code is one word ("KL79QB" is not "KL79QD"); one forbidden word beside new content is no
    violation, a quote of forbidden words only is; "the caller's wish not to give X" asks for
    something; a rule that the rest is skipped forbids the unsaid rest but not its closing
    question."""
    from bargein.scorers.ihbench_judges import (criterion_kind, forbidden_content, named_values,
                                                shows_violation, unsaid_part)

    assert named_values("KL79QD is no longer used.") == {"kl79qd"}
    rule_holds("correction", "Sorry, the reference is KL79QB, not KL79QD.",
               "I've found booking KL79QD", "KL79QD is no longer used.",
               kept="Got it, booking KL79QB", broken="your booking KL79QD")
    rule_holds("normal", "I changed banks last month.",
               "The first payment will come from your account ending 2291",
               "The old account ending 2291 is not used for the payment.",
               kept="The first payment will need to come from your new bank.",
               broken="the payment comes from your account ending 2291")
    it = item("filler")
    assert shows_violation("the photo", it, "It does not list the photo again.")  # all forbidden
    assert not shows_violation("the police report and a photo of your receipt", it,
                               "It does not ask for the damage again.")  # one word of the rule
    assert criterion_kind("It shows understanding of the caller's wish not to give the order number.") == "do"
    assert criterion_kind("The reply is careful not to repeat the list.") == "avoid"
    imp = item("impatient")
    imp = imp.model_copy(update={"planned_text": imp.planned_text + " Which do you have ready?"})
    assert unsaid_part(imp) == "the damage, the police report and a receipt."
    skip = "The rest of the list of documents is skipped."
    assert "polic" in forbidden_content(imp, skip) and "ready" not in forbidden_content(imp, skip)
    assert shows_violation("the police report and a receipt", imp, skip)
    assert not shows_violation("Which do you have ready?", imp, skip)


def test_a_reply_that_carries_on_regardless_fails_whatever_the_judge_says():
    """For a cut-in the reply must take up (not a backchannel, not an impatient skip), a reply
    of nothing but the interrupted message's own words fails RQ without a model call, with the
    reason in its criteria; one that adds the user's new detail is judged as usual."""
    from bargein.scorers.ihbench_judges import CUT_IN_CHECK, carries_on_regardless

    it = item("normal")                 # "By the way, it happened on Friday."
    rest = "the damage, the police report and a receipt."
    assert carries_on_regardless(rest, it) and "as if the user had not said" in carries_on_regardless(rest, it)
    assert not carries_on_regardless("Friday, noted. Then the police report and a receipt.", it)
    assert not carries_on_regardless(rest, item("filler")) and not carries_on_regardless(rest, item("impatient"))
    assert not carries_on_regardless("Okay.", it)                      # too short to say
    m = ScriptedModel([])
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m, stop_at_fail=True).assess(it, rest, sample=0))
    assert r.verdict == "fail" and r.criteria[0].criterion == CUT_IN_CHECK and not m.asked
    # without stopping at the first failure every criterion is still asked, the check listed first
    m = ScriptedModel([{"evidence": "the police report", "met": True}] * 2)
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m).assess(it, rest, sample=0))
    assert r.verdict == "fail" and len(r.criteria) == 3 and r.criteria[0].criterion == CUT_IN_CHECK
    # stopping at the first unmet criterion asks "do" criteria first and no more after a failure
    rq = ("It does not list the photo again.", "The reply asks for the police report.",
          "It mentions Friday.")
    it2 = item("normal", rq=rq)
    m = ScriptedModel([{"evidence": "", "met": False}, {"evidence": "", "met": False}])
    r = asyncio.run(LLMJudge("s:m", workdir=None, llm=m, stop_at_fail=True, reasks=0).assess(
        it2, "On Friday, noted. Could you send the police report?", sample=0))
    assert r.verdict == "fail" and [a[0] for a in m.asked] == ["judge_rq_criterion"]
    assert [c.criterion for c in r.criteria] == [rq[1]]


def test_grounding_reads_the_users_turns_and_the_interrupted_message_not_politeness():
    """A quote grounds a criterion by content of what the user said or what the assistant was
    saying when cut (two content words, or one name or number); the assistant's earlier small
    talk does not count."""
    from bargein.scorers.ihbench_judges import grounded_in

    it = item("normal")
    polite = it.model_copy(update={"history": (ChatMessage(role="assistant", content="Happy to help today!"),)
                                   + it.history})
    assert not grounded_in("Happy to help with whatever you need today.", polite)
    assert grounded_in("I'll note that it happened on Friday.", polite)          # the interjection
    assert grounded_in("and then the police report.", polite)                     # the planned message
    # one common word of the case is not enough; two are, or one name or number of the case
    assert not grounded_in("a copy of the report", polite)
    assert not grounded_in("What's next for you?", polite.model_copy(update={
        "planned_text": "Your next bill is due soon."}))
    assert grounded_in("the report from Friday", polite)                       # two words
    assert grounded_in("Friday, then", polite)                                 # a name
    assert grounded_in("3 of them", polite.model_copy(update={
        "planned_text": "Send three pages."}))                                    # a number, said


def test_no_judge_configured_stops_with_the_fix(monkeypatch):
    monkeypatch.delenv(JUDGE_ENV, raising=False)
    with pytest.raises(ConfigError) as e:
        resolve_judge_spec(None)
    msg = str(e.value)
    assert "--judge PROVIDER:MODEL" in msg and JUDGE_ENV in msg and "--judge smoke" in msg
    with pytest.raises(ConfigError, match="only a smoke test"):
        resolve_judge_spec("offline")
    with pytest.raises(ConfigError, match="--judge gpt-4o: not a judge. Fix: pass --judge PROVIDER:MODEL"):
        resolve_judge_spec("gpt-4o")
    monkeypatch.setenv(JUDGE_ENV, "openai:gpt-4o-mini")
    assert resolve_judge_spec(None) == "openai:gpt-4o-mini"
    assert resolve_judge_spec("smoke") == "smoke"


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


def test_bad_responses_are_reported_per_item_never_dropped(release, tmp_path):
    items = load_eval_items(release)
    rows = [{"item_id": i.id, "epoch": e, "response": "ok"} for i in items for e in range(3)]
    r = load_responses(_write(tmp_path / "ok.jsonl", rows), items, 3)
    assert len(r.texts) == len(rows) and not r.issues and not r.unscorable
    a, b, c = items[0].id, items[1].id, items[2].id
    bad = [x for x in rows if (x["item_id"], x["epoch"]) != (a, 0)] + [
        {"item_id": "ev-nope", "epoch": 0, "response": "x"},
        {"item_id": b, "epoch": 1, "response": "a different answer"},     # conflicting duplicate
        {"item_id": c, "epoch": 2, "response": "ok"}]                     # identical duplicate
    bad = [dict(x, response="") if (x["item_id"], x["epoch"]) == (c, 0) else x for x in bad]
    r = load_responses(_write(tmp_path / "bad.jsonl", bad + ["not json"]), items, 3)
    problems = Counter(i["problem"] for i in r.issues)
    assert problems["unknown item id"] == 1 and problems["missing response"] == 1
    assert problems["conflicting duplicates"] == 1 and problems["malformed line"] == 1
    assert problems["duplicate (identical, counted once)"] == 1
    assert problems["empty response (scored as RQ fail and TF loss)"] == 1
    assert set(r.unscorable) == {(a, 0), (b, 1)} and r.texts[(c, 0)] == ""
    assert sum(problems.values()) == len(r.issues) == 6
    with pytest.raises(ConfigError, match="no response for any eval item.*bargein respond"):
        load_responses(_write(tmp_path / "other.jsonl", [{"item_id": "x", "response": "y"}]), items, 3)
    # scored end to end: the counts sit beside every figure and issues.jsonl lists each problem
    rep = score_ihbench(release, tmp_path / "bad.jsonl", judge="smoke", epochs=3, n_boot=50,
                        out=tmp_path / "s", workdir=tmp_path / "w")
    assert rep.overall[RQ]["n"] == len(items) and rep.overall[RQ]["unscorable"] == 0
    issues = [json.loads(x) for x in (tmp_path / "s" / "issues.jsonl").read_text().splitlines()]
    assert len([i for i in issues if i["source"] == "responses"]) == 6
    assert all(i["stamp"] == SMOKE_STAMP for i in issues)
    text = rep.tables()
    assert f"(n {len(items)}, unscorable 0)" in text and "1 × unknown item id" in text


def test_baseline_against_itself_is_exactly_parity(release, tmp_path):
    items = load_eval_items(release)
    rows = [{"item_id": i.id, "epoch": e, "response": i.baseline} for i in items for e in range(3)]
    rep = score_ihbench(release, _write(tmp_path / "b.jsonl", rows), judge="smoke", epochs=3,
                        n_boot=200, workdir=tmp_path / "w")
    assert rep.overall[TF]["value"] == 0.5 and rep.overall[TF]["ci_low"] == 0.5
    assert all(b[TF]["value"] == 0.5 for b in rep.by_type.values())
    assert set(rep.by_type) == set(INTERRUPTION_TYPES)


def test_smoke_pipeline_writes_stamped_tables_scores_and_plots(release, tmp_path):
    """A pipeline test, not a validation: gold recoveries scored by the smoke judge; every
    table and file says so, names the judge, its control-set kappa and the epochs."""
    from bargein.scorers.respond import generate_responses

    resp, out = tmp_path / "responses.jsonl", tmp_path / "scores"
    got = generate_responses(release, llm="oracle", epochs=3, out=resp, seed=11, workdir=tmp_path / "w")
    assert got["written"] == 3 * len(load_eval_items(release)) and got["modality"] == "stand-in"
    rep = score_ihbench(release, resp, judge="smoke", epochs=3, out=out, seed=11,
                        workdir=tmp_path / "w")
    text = (out / "tables.md").read_text()
    assert text == rep.tables()
    head = text.splitlines()[1]
    assert head.startswith(SMOKE_STAMP.upper()) and "judge smoke-rules@2" in head
    assert "validation κ 0." in head and "3 epoch(s)" in head and text.rstrip().endswith(f"[{SMOKE_STAMP}]")
    assert "(scored, unscorable items)" in text and "| filler |" in text and "Depth effect" in text
    report = json.loads((out / "report.json").read_text())
    assert report["config"]["stamp"] == SMOKE_STAMP
    assert report["config"]["judge_validation"]["kappa"] > 0.5
    card = report["config"]["judge_card"]             # the judge as structured fields
    val = validate_judge("smoke", scorer="ihbench", save=False)
    assert card["judge"] == "smoke-rules@2" and card["smoke"] and card["validated"]
    assert card["epochs"] == 3 and card["n"] == val.scorer("ihbench")["n"]
    assert card["kappa"] == round(val.scorer("ihbench")["kappa"], 4)
    assert card["template_fail_rate"] == val.template_fail_rate()["rate"]
    assert card["paraphrase_pass_rate"] == val.paraphrase_pass_rate()["rate"] and card["paraphrase_n"] >= 40
    assert f"template fail {card['template_fail_rate']:.3f}" in head and "paraphrase pass" in head
    captions = [x for x in text.splitlines() if x.startswith(("Overall (", "By interruption type (", "By depth ("))]
    assert len(captions) == 3 and all(f"judge smoke-rules@2, validation κ {card['kappa']:.3f}, 3 epoch(s)" in c
                                      for c in captions)       # every table names judge, κ, epochs
    lines = [json.loads(x) for x in (out / "item_scores.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * 3 * len(load_eval_items(release))
    assert all(x["detail"]["stamp"] == SMOKE_STAMP for x in lines)
    assert lines[0]["detail"]["model_position"] in ("A", "B")
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    slope = report["config"]["depth_regression"]["slope"]
    assert pngs == ["rq_by_type.png"] + (["tf_by_depth.png"] if slope is not None else []) + [
        "tf_by_type.png"]
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    score_ihbench(release, resp, judge="smoke", epochs=3, out=out, seed=11, workdir=tmp_path / "w")
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # the smoke responder is a labelled stand-in, cached and resumable through the runner
    smoke_out = tmp_path / "smoke.jsonl"
    again = generate_responses(release, llm="smoke", epochs=3, out=smoke_out, seed=11,
                               workdir=tmp_path / "w")
    rows = [json.loads(x) for x in smoke_out.read_text().splitlines()]
    assert again["written"] == len(rows) and {r["model"] for r in rows} == {"smoke"}
    with pytest.raises(ConfigError, match="no rule-based responder"):
        generate_responses(release, llm="offline", epochs=1, out=tmp_path / "x.jsonl")


def test_llm_judges_and_audio_responder_through_the_openai_sdk(release, tmp_path, monkeypatch):
    """Plumbing, not validation: the judge prompts and `respond` on a real provider path (the
    OpenAI SDK against the loopback server) with scripted verdicts. The responder sends every
    user turn as an ``input_audio`` part (WAV); the scripted judge prefers the model's answer
    but first gives a vague reason, so every TF judgment is re-asked once; RQ passes everything
    (the scripted answers repeat what the assistant said, so the quotes name the conversation)."""
    import base64
    import io
    import re

    import soundfile as sf

    from bargein.testing import LoopbackLLMServer, wire

    def responder(req):
        schema = wire.request_schema(req) or {}
        prompt = wire.last_user_text(req) if schema else ""
        users = sum(1 for m in req["messages"] if m["role"] == "user")
        if schema.get("title") == "TFJudgment":
            if users == 1:
                return json.dumps({"reasoning": "r", "winner": "A", "loser_deficiency": "longer"})
            first = wire.first_user_text(req)
            a = first.split("Response A:", 1)[1].split("Response B:", 1)[0]
            return json.dumps({"reasoning": "r", "winner": "A" if "MODEL:" in a else "B",
                               "loser_deficiency": "ignores what the user just said"})
        if schema.get("title") == "CriterionCheck":
            reply = prompt.split("## The assistant's next reply", 1)[1].split('"""')[1]
            # the reply's end: the interrupted turn's words, so the quote names the conversation
            return json.dumps({"evidence": " ".join(reply.split()[-25:]), "met": True})
        if schema.get("title") == "AvoidCheck":
            return json.dumps({"forbidden": "f", "evidence": "", "does_it": False})
        said = [m["content"] for m in req["messages"] if m["role"] == "assistant"]
        return f"MODEL: picking up from {' '.join(said) or 'the start'}; let's go on."

    items = load_eval_items(release)
    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        from bargein.scorers.respond import generate_responses

        resp = tmp_path / "r.jsonl"
        got = generate_responses(release, llm="openai:test-model", epochs=2, out=resp,
                                 workdir=tmp_path / "work")
        n = got["written"]
        assert n == 2 * len(items) and got["modality"] == "audio" and got["failures"] == 0
        rows = [json.loads(x) for x in resp.read_text().splitlines()]
        assert all(r["response"].startswith("MODEL:") and r["modality"] == "audio" for r in rows)
        chats = [r.json for r in srv.requests if not (r.json or {}).get("response_format")]
        assert len(chats) == n
        for chat in chats:
            users = [m for m in chat["messages"] if m["role"] == "user"]
            assert users and all(isinstance(m["content"], list) for m in users)
            part = users[-1]["content"][0]
            assert part["type"] == "input_audio" and part["input_audio"]["format"] == "wav"
            audio, sr = sf.read(io.BytesIO(base64.b64decode(part["input_audio"]["data"])))
            assert sr >= 8000 and len(audio) > sr // 10          # real audio of the interjection
            assert all(isinstance(m["content"], str) for m in chat["messages"] if m["role"] != "user")
        sent = len(srv.requests)
        generate_responses(release, llm="openai:test-model", epochs=2, out=resp, workdir=tmp_path / "work")
        assert len(srv.requests) == sent                  # resumed from the runner's cache
        text_out = tmp_path / "t.jsonl"
        generate_responses(release, llm="openai:test-model", epochs=1, out=text_out, text_only=True,
                           workdir=tmp_path / "work")
        text_chats = [r.json for r in srv.requests[sent:]]
        assert all(isinstance(m["content"], str) for c in text_chats for m in c["messages"])
        rep = score_ihbench(release, resp, judge="openai:judge-model", epochs=2, n_boot=200,
                            workdir=tmp_path / "work")
    assert rep.overall[TF]["value"] == 1.0 and rep.overall[RQ]["value"] == 1.0
    assert rep.judge_failures == 0 and rep.judge.startswith("openai:judge-model")
    assert not rep.smoke and "not validated yet" in rep.tables()
    tf_requests = [r for r in srv.requests if "Candidate responses" in json.dumps(r.json)]
    assert len(tf_requests) == 4 * n            # both orders, each re-asked once


def test_judge_answers_that_fail_their_schema_are_unscorable_per_item_with_evidence(
        release, tmp_path, monkeypatch):
    """A scripted judge over the OpenAI SDK answers every judgment of one item with the wrong
    shape: that item is unscorable for TF and RQ (counted beside every figure, never dropped),
    each of its judgments is listed in issues.jsonl with the judge's raw answer, the table says
    how many judgments got no usable answer, and the other items are scored."""
    from bargein.testing import LoopbackLLMServer, wire

    items = load_eval_items(release)
    bad = items[0]

    def responder(req):
        schema = wire.request_schema(req) or {}
        if MARK in wire.prompt_text(req):                # the bad item's response is in the prompt
            return json.dumps({"verdict": "looks fine to me"})          # no field of the schema
        if schema.get("title") == "TFJudgment":
            return json.dumps({"reasoning": "r", "winner": "A",
                               "loser_deficiency": "ignores what the user just said"})
        if schema.get("title") == "AvoidCheck":
            return json.dumps({"forbidden": "f", "evidence": "", "does_it": False})
        reply = wire.last_user_text(req).split("## The assistant's next reply", 1)[1].split('"""')[1]
        return json.dumps({"evidence": " ".join(reply.split()[-25:]), "met": True})

    MARK = "Quixotic zebra, back to your booking."
    rows = [{"item_id": i.id, "epoch": 0, "response": MARK if i is bad else i.gold_recovery}
            for i in items]
    out = tmp_path / "s"
    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        rep = score_ihbench(release, _write(tmp_path / "r.jsonl", rows), judge="openai:judge-model",
                            epochs=1, n_boot=50, out=out, workdir=tmp_path / "w", concurrency=2)
    n = len(items)
    for m in (TF, RQ):
        assert rep.overall[m]["n"] == n - 1 and rep.overall[m]["unscorable"] == 1, m
    assert rep.by_type[bad.type][RQ]["unscorable"] == 1
    assert rep.judge_failures == 2                                  # its TF and its RQ judgment
    issues = [json.loads(x) for x in (out / "issues.jsonl").read_text().splitlines()]
    judged = [i for i in issues if i["source"] == "judge"]
    assert {(i["item_id"], i["metric"]) for i in judged} == {(bad.id, TF), (bad.id, RQ)}
    assert all("looks fine to me" in json.dumps(i["evidence"]) for i in judged)
    text = (out / "tables.md").read_text()
    assert f"(n {n - 1}, unscorable 1)" in text and "2 judgment(s) got no usable answer" in text
    assert "judge openai:judge-model" in text and "1 epoch(s)" in text
    scored = {json.loads(x)["item_id"] for x in (out / "item_scores.jsonl").read_text().splitlines()}
    assert scored == {i.id for i in items} - {bad.id}
