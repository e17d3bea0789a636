"""Simulation, gold recoveries, rubrics, verification, eval items, statistics and the CLIs
(offline path, real scenarios from the catalogue, the real verifier)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bargein.cli import cli
from bargein.generators import phrases as P
from bargein.generators.baseline import OFFLINE_MODEL, fill_baselines
from bargein.generators.conversation import caller_purposes, generate_conversations
from bargein.generators.planner import RoundPlan
from bargein.generators.scenarios import generate_scenarios
from bargein.generators.stats import DEPTH_BINS, depth_bin, format_stats
from bargein.generators.user_sim import check_interjection, user_plan
from bargein.records import EvalItem, Scenario
from bargein.store import read_jsonl
from bargein.verify.text import contains_phrase, is_backchannel

OUTPUTS = ("simulate.jsonl", "conversations.jsonl", "verified.jsonl", "eval_items.jsonl",
           "sft.jsonl", "dpo.jsonl", "stats.json")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> list[Scenario]:
    res = generate_scenarios(16, 5, workdir=tmp_path_factory.mktemp("scn"), progress=False)
    assert not res.failures
    return res.outputs


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("w1")


@pytest.fixture(scope="module")
def run(scenarios, workdir):
    return generate_conversations(scenarios, seed=5, workdir=workdir, progress=False)


@pytest.fixture(scope="module")
def convs(run):
    return [r for r in run.results["conversations"].outputs]


def plan_at(conv, index: int) -> RoundPlan:
    return next(p for p in conv.plan if p.message_index == index)


# ---- every interruption -------------------------------------------------------------------
def test_every_interruption_is_consistent_with_what_was_heard(convs):
    n = 0
    for conv in convs:
        for cut, inter in conv.interruptions:
            n += 1
            itr = cut.interruption
            assert itr.heard_text == P.prefix_words(cut.text, itr.cut_word_index)
            assert itr.cut_char_offset == len(itr.heard_text) < len(cut.text.rstrip())
            assert itr.interjection == inter.text and cut.heard_text == itr.heard_text
            plan = plan_at(conv, cut.index)
            up = user_plan(plan)
            rec = next(p.recovery for p in conv.plan
                       if p.recovery and p.recovery.message_index == inter.index)
            context = tuple(m.spoken_text for m in conv.messages[: cut.index])
            said = inter.text             # a cut-in on the greeting opens with why they call
            why = next((w for w in caller_purposes(conv.scenario) if said.startswith(w)), "")
            said = said[len(why):].strip() if why and not context else said
            assert check_interjection(up, cut.text, rec.content_start, itr.heard_text,
                                      said, context) == []
            assert is_backchannel(inter.text) == (itr.type == "filler")
    assert n > 80


def test_gold_recoveries_follow_the_type_semantics(convs):
    seen = set()
    for conv in convs:
        for cut, inter in conv.interruptions:
            itr, gold = cut.interruption, conv.gold_recoveries[inter.index]
            assert gold == conv.messages[inter.index + 1].text
            rest = cut.text[itr.cut_char_offset:].strip()
            d = plan_at(conv, cut.index).detail
            seen.add(itr.type)
            if itr.type == "filler":          # continue exactly from the cut word
                assert gold == rest
            elif itr.type == "impatient":     # skip: never re-deliver what was heard
                heard_content = " ".join(itr.heard_text.split()[-6:])
                assert not contains_phrase(gold, heard_content)
                assert rest not in gold
            elif itr.type == "correction":    # integrate the corrected value
                assert contains_phrase(gold, d["new"])
            elif itr.type == "topic_switch":  # address it, then steer back
                pair = P.pair(d, "topic_switch")
                assert any(gold.startswith(a) for a in P.answers(pair))
            elif itr.type == "pushback":      # de-escalate and offer an alternative of the kind
                kind = d.get("object_kind") or ("requirement" if d.get("label") else "policy")
                own = f"alternatives_{kind}.{conv.scenario.domain.name}"   # the domain's own too
                alts = P.bank("assistant", f"alternatives_{kind}") + (
                    P.bank("assistant", own) if own in P.bank_keys("assistant") else ())
                if kind == "fee":               # a disputed charge the call itself credits
                    alts += P.bank("assistant", "alternatives_disputed")
                assert any(a in gold for a in alts)
            elif itr.type == "normal":        # address it, fresh start of the cut sentence
                assert gold != rest and not gold.startswith(rest)
    assert seen == {"normal", "impatient", "correction", "topic_switch", "filler", "pushback"}


def test_rubrics_one_per_interruption_fixed_at_generation(convs):
    for conv in convs:
        idx = [u.index for _, u in conv.interruptions]
        assert [r.message_index for r in conv.rubrics] == idx
        for r, (cut, _) in zip(conv.rubrics, conv.interruptions):
            assert r.type == cut.interruption.type and r.tf_criterion.strip()
            assert 2 <= len(r.rq_criteria) <= 4 and len(set(r.rq_criteria)) == len(r.rq_criteria)
            assert not any(P.has_placeholder(c) for c in (r.tf_criterion, *r.rq_criteria))
        corr = [r for r in conv.rubrics if r.type == "correction"]
        for r in corr:
            d = plan_at(conv, r.message_index - 1).detail
            assert any(d["new"] in c and d["old"] in c for c in r.rq_criteria)


# Checks added from a hand reading (verify/discourse.py, 12:50 UTC): the offline agents do not
# pass them yet (listed in the checks engineer's findings). A discard by one of these is
# reported as an expected failure; a discard by any other check fails. Remove a name here
# when the agents pass it.
# (presupposed_value, yes_no_answered, cut_inside_value, escalation_addressed and
# pushback_on_benefit no longer fire on 150 held-out conversations, seeds 7/23/101: removed)
# (confirmation_has_object, doubled_phrase, impatient_at_readback, reasks_after_verified and
# pushback_on_cost no longer fire on the first attempt of 300 conversations, seeds
# 7/23/101/311/42 and held-out 2027, after the second shift's fixes: removed)
NOT_YET_PASSED = {
    # a volunteered or confirmed value the check holds to be the system's (1 of 50, seed 311:
    # "the project cost is ..." where the scenario's talking points only state it)
    "user_states_system_value",
    # an impatient gold that restates a heard sentence in other words (1 of 50, seed 7)
    "gold_meets_own_rubric",
    # still fires on held-out seeds: an impatient gold that closes a step never done (1 of 50,
    # seed 8191) and "What I can do is this: ... in an email" read as asking for the email
    # the caller gave (2 flags in 50, seed 977)
    "task_abandoned_on_skip", "reasks_given_value"}


def test_the_verifier_accepts_the_offline_conversations(run):
    reasons = [r for v in run.verified if not v.accepted for r in v.discard_reasons]
    assert run.verified and all(r.split(":", 1)[0] in NOT_YET_PASSED for r in reasons), reasons
    if reasons:
        pytest.xfail(f"{len(reasons)} discards by checks the offline agents do not pass yet: "
                     f"{reasons}")


# ---- eval items ---------------------------------------------------------------------------
def test_eval_items_one_per_interruption_with_the_cut_turn_as_heard(run):
    items = run.items + run.train_items          # the test pool and the training pool
    assert len(items) == sum(len(c.interruptions) for c in run.accepted)
    by_conv = {c.id: c for c in run.accepted}
    for item in items:
        conv = by_conv[item.conversation_id]
        assert item.id == f"{conv.id}_ev{item.message_index}"
        cut, inter = conv.messages[item.message_index - 1], conv.messages[item.message_index]
        assert item.history[-1].role == "user" and item.history[-1].content == inter.text
        assert item.history[-2].content == cut.heard_text == item.heard_text
        assert item.planned_text == cut.text and len(item.history) == item.message_index + 1
        assert item.depth == sum(m.role == "user" for m in conv.messages[: item.message_index])
        assert item.gold_recovery == conv.messages[item.message_index + 1].text
        assert item.rubric.message_index == item.message_index and item.type == cut.interruption.type


def test_statistics_count_what_was_written(run, tmp_path):
    s = run.stats
    assert s["conversations"] == len(run.accepted) and s["interruption_points"] == len(run.items)
    assert sum(t["count"] for t in s["types"].values()) == len(run.items)
    assert sum(b["count"] for b in s["depth"].values()) == len(run.items)
    assert s["domains"] == len({c.scenario.domain.name for c in run.accepted})
    lens = [len(c.messages) for c in run.accepted]
    assert s["messages_per_conversation"] == {"mean": round(sum(lens) / len(lens), 1),
                                              "min": min(lens), "max": max(lens)}
    table = format_stats(s)
    assert "Total interruption points" in table and "|   0-4 " in table
    assert [depth_bin(d) for d in (0, 4, 5, 19, 20, 33)] == ["0-4", "0-4", "5-9", "15-19", "20+", "20+"]
    assert len(DEPTH_BINS) == 5


# ---- determinism and resume ----------------------------------------------------------------
def test_same_seed_gives_byte_identical_outputs(scenarios, run, workdir, tmp_path):
    again = generate_conversations(scenarios, seed=5, workdir=tmp_path / "w2", progress=False)
    assert again.results["simulate"].computed == len(scenarios)      # nothing shared but the seed
    for name in OUTPUTS:
        assert (tmp_path / "w2" / name).read_bytes() == (workdir / name).read_bytes(), name
    cached = generate_conversations(scenarios, seed=5, workdir=tmp_path / "w2", progress=False)
    assert cached.results["simulate"].cached == len(scenarios)
    assert (tmp_path / "w2" / "dpo.jsonl").read_bytes() == (workdir / "dpo.jsonl").read_bytes()
    other = generate_conversations(scenarios[:3], seed=6, workdir=tmp_path / "w3", progress=False)
    assert [c.messages for c in other.accepted] != [c.messages for c in run.accepted[:3]]


# ---- CLIs ---------------------------------------------------------------------------------
def test_cli_generate_conversations_prints_the_table(tmp_path):
    res = CliRunner().invoke(cli, ["--workdir", str(tmp_path), "generate", "conversations",
                                   "--scenarios", "3", "--seed", "7"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "Total interruption points" in res.output and "Avg. messages per conversation" in res.output
    for name in OUTPUTS:
        assert (tmp_path / name).exists(), name
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["simulated"] == 3 and stats["agents"] == "offline"
    items = read_jsonl(tmp_path / "eval_items.jsonl", EvalItem)
    assert len(items) == stats["interruption_points"]
    # --scenarios-file replays the same scenarios
    res2 = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "b"), "generate", "conversations",
                                    "--scenarios-file", str(tmp_path / "scenarios.jsonl"), "--seed", "7"])
    assert res2.exit_code == 0, res2.output
    assert (tmp_path / "b" / "eval_items.jsonl").read_bytes() == (tmp_path / "eval_items.jsonl").read_bytes()


def test_cli_bad_scenarios_file_names_the_option_and_the_fix(tmp_path):
    from bargein.errors import ConfigError

    with pytest.raises(ConfigError, match="--scenarios-file .*does not exist. Fix: pass the scenarios.jsonl"):
        CliRunner().invoke(cli, ["--workdir", str(tmp_path), "generate", "conversations",
                                 "--scenarios-file", str(tmp_path / "nope.jsonl")],
                           catch_exceptions=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a scenario"}\n')
    with pytest.raises(Exception, match=r"bad.jsonl:1: not a valid Scenario"):
        CliRunner().invoke(cli, ["--workdir", str(tmp_path), "generate", "conversations",
                                 "--scenarios-file", str(bad)], catch_exceptions=False)


def test_offline_baseline_is_a_labelled_smoke_stand_in_never_the_gold(run, tmp_path):
    items = run.items[:40]
    res = fill_baselines(items, llm="offline", seed=1, workdir=tmp_path, progress=False)
    assert not res.failures and len(res.outputs) == len(items)
    assert "smoke test, not a model" in OFFLINE_MODEL
    for before, after in zip(items, res.outputs):
        assert after.baseline_model == OFFLINE_MODEL and after.baseline.strip()
        assert after.id == before.id and after.gold_recovery == before.gold_recovery
        assert after.baseline.strip() != after.gold_recovery.strip()          # filler too
        if after.type == "filler":
            assert after.baseline == after.planned_text                         # a restart
    res_cli = CliRunner().invoke(cli, ["--workdir", str(tmp_path), "baseline", "--items",
                                       str(tmp_path / "missing.jsonl")])
    assert res_cli.exit_code != 0


def test_rng_is_per_item(scenarios, tmp_path):
    """An item's conversation does not depend on which other items are in the batch."""
    one = generate_conversations(scenarios[2:3], seed=5, workdir=tmp_path / "a", progress=False)
    many = generate_conversations(scenarios[:4], seed=5, workdir=tmp_path / "b", progress=False)
    assert one.results["simulate"].outputs[0] == many.results["simulate"].outputs[2]


@pytest.mark.parametrize("name", ["round_planner", "assistant_simulator.normal",
                                  "assistant_simulator.interruption", "user_simulator.normal",
                                  "user_simulator.interrupting", "rubric_generator", "baseline"])
def test_prompts_have_headers_and_show_with_placeholders(name):
    from bargein import prompts

    tpl = prompts.load(name)
    assert tpl.agent == name and tpl.version.isdigit()
    shown = prompts.show(name)
    assert any(f"<{v}" in shown for v in tpl.variables), tpl.variables
