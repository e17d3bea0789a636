"""SFT / DPO exports: chat format TRL reads, loadable with `datasets`, realistic rejected sides."""

from __future__ import annotations

import json
import random

import datasets
import pytest

from bargein.generators import phrases as P
from bargein.generators.antipatterns import _APOLOGY, ANTIPATTERNS, cut_sentence, rejected_response
from bargein.generators.conversation import generate_conversations
from bargein.generators.exports import goal_key, interruption_details

APOLOGY_OPENERS = _APOLOGY[0]
from bargein.generators.scenarios import generate_scenarios


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    work = tmp_path_factory.mktemp("exp")
    scn = generate_scenarios(12, 21, workdir=work, progress=False).outputs
    run = generate_conversations(scn, seed=21, workdir=work, progress=False, train_percent=50)
    return work, run


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_train_and_test_pools_share_no_goal_and_no_conversation(exported):
    work, run = exported
    assert run.train_items and run.items
    goal = {c.id: goal_key(c) for c in run.accepted}
    train = {i.conversation_id for i in run.train_items}
    test = {i.conversation_id for i in run.items}
    assert not train & test and not {goal[c] for c in train} & {goal[c] for c in test}
    sft_convs = {r["conversation_id"] for r in _rows(work / "sft.jsonl")}
    assert sft_convs == train
    tested = {json.loads(x)["conversation_id"] for x in (work / "eval_items.jsonl").read_text().splitlines()}
    assert tested == test
    split = run.stats["split"]
    assert split["goal_overlap"] == 0 and split["train_conversations"] + split["test_conversations"] \
        == len(run.accepted)


def test_sft_loads_with_datasets_and_ends_with_the_gold_recovery(exported):
    work, run = exported
    ds = datasets.load_dataset("json", data_files=str(work / "sft.jsonl"), split="train")
    assert len(ds) == len(run.train_items) == run.exports["sft"] > 0
    items = {i.id: i for i in run.train_items}
    for row in ds:
        item = items[row["eval_item"]]
        msgs = row["messages"]
        assert [m["role"] for m in msgs[:1]] == ["system"] and msgs[0]["content"] == item.system_prompt
        assert msgs[-1] == {"role": "assistant", "content": item.gold_recovery}
        assert msgs[-2] == {"role": "user", "content": item.interjection}
        assert {m["role"] for m in msgs} <= {"system", "user", "assistant"}
        assert row["type"] == item.type and row["depth"] == item.depth


def test_dpo_loads_with_datasets_in_trl_conversational_form(exported):
    work, run = exported
    ds = datasets.load_dataset("json", data_files=str(work / "dpo.jsonl"), split="train")
    assert set(ds.column_names) >= {"prompt", "chosen", "rejected", "antipattern", "type"}
    assert len(ds) == len(run.train_items)
    items = {i.id: i for i in run.train_items}
    for row in ds:
        item = items[row["eval_item"]]
        assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["role"] == "user"
        assert len(row["prompt"]) == len(item.history) + 1
        assert row["chosen"] == [{"role": "assistant", "content": item.gold_recovery}]
        assert row["rejected"][0]["role"] == "assistant"
        assert P.norm(row["rejected"][0]["content"]) != P.norm(item.gold_recovery)
        assert row["antipattern"] in ANTIPATTERNS[item.type]


def test_rejected_responses_are_the_failures_of_their_type(exported):
    _, run = exported
    items = run.items + run.train_items
    details = interruption_details(run.accepted)
    seen, near = set(), 0
    n = 0
    for item in items:
        d = details[(item.conversation_id, item.message_index)]
        for seed in range(4):
            name, bad = rejected_response(item, d, random.Random(seed))
            seen.add(name)
            n += 1
            gold_n, bad_n = P.n_words(item.gold_recovery), P.n_words(bad)
            near += abs(bad_n - gold_n) <= 0.2 * gold_n + 2
            rest = item.planned_text[len(item.heard_text):].strip()
            again = cut_sentence(item.planned_text, item.heard_text)
            if name == "restart":                     # re-delivers words the caller heard
                head = " ".join(P.tokens(item.planned_text if item.type == "impatient" else again)[:4])
                assert head in " ".join(P.tokens(bad)), (head, bad)
            elif name == "ignore" and item.type == "correction":   # keeps the old value
                assert d["new"] not in bad
            elif name == "ignore":                    # carries on with the unsaid rest, unaddressed
                toks, said = P.tokens(rest), " ".join(P.tokens(bad))   # (cut to the gold's length:
                assert (toks[:1] and toks[0] in said) or any(         # any 4 words of the rest)
                    " ".join(toks[k:k + 4]) in said for k in range(len(toks) - 3)), (rest, bad)
            elif name == "over_apologise":
                assert bad.startswith(tuple(APOLOGY_OPENERS))
            elif name == "repeat_heard":
                assert set(P.tokens(" ".join(item.heard_text.split()[-7:]))) & set(P.tokens(bad))
            elif name == "lose_thread":               # a sentence from an earlier assistant turn
                earlier = " ".join(m.content for m in item.history[:-2] if m.role == "assistant")
                grams = {" ".join(P.tokens(earlier)[k:k + 5]) for k in range(len(P.tokens(earlier)))}
                toks = P.tokens(bad)
                assert any(" ".join(toks[k:k + 5]) in grams for k in range(len(toks) - 4)), bad
    assert {"restart", "ignore", "over_apologise", "lose_thread"} <= seen
    assert near / n >= 0.8                      # length-matched to the good recovery


def test_rejected_responses_have_no_fixed_opener(exported):
    _, run = exported
    details = interruption_details(run.accepted)
    firsts = [" ".join(P.tokens(rejected_response(i, details[(i.conversation_id, i.message_index)],
                                                  random.Random(0))[1])[:2])
              for i in run.items + run.train_items]
    top = max(firsts.count(f) for f in set(firsts))
    assert top / len(firsts) < 0.15, sorted(set(firsts), key=firsts.count)[-5:]


def test_exports_are_deterministic(exported, tmp_path):
    work, run = exported
    from bargein.generators.exports import write_exports

    write_exports(run.train_items, run.accepted, tmp_path, seed=21)
    assert (tmp_path / "dpo.jsonl").read_bytes() == (work / "dpo.jsonl").read_bytes()
    assert (tmp_path / "sft.jsonl").read_bytes() == (work / "sft.jsonl").read_bytes()
    write_exports(run.train_items, run.accepted, tmp_path / "other", seed=22)
    assert _rows(tmp_path / "other" / "dpo.jsonl") != _rows(work / "dpo.jsonl")
