"""SFT / DPO exports: chat format TRL reads, loadable with `datasets`, realistic rejected sides."""

from __future__ import annotations

import json
import random

import datasets
import pytest

from bargein.generators import phrases as P
from bargein.generators.antipatterns import ANTIPATTERNS, cut_sentence, rejected_response
from bargein.generators.conversation import generate_conversations
from bargein.generators.exports import interruption_details
from bargein.generators.scenarios import generate_scenarios


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    work = tmp_path_factory.mktemp("exp")
    scn = generate_scenarios(10, 21, workdir=work, progress=False).outputs
    run = generate_conversations(scn, seed=21, workdir=work, progress=False)
    return work, run


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_sft_loads_with_datasets_and_ends_with_the_gold_recovery(exported):
    work, run = exported
    ds = datasets.load_dataset("json", data_files=str(work / "sft.jsonl"), split="train")
    assert len(ds) == len(run.items) == run.exports["sft"] > 0
    items = {i.id: i for i in run.items}
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
    assert len(ds) == len(run.items)
    items = {i.id: i for i in run.items}
    for row in ds:
        item = items[row["eval_item"]]
        assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["role"] == "user"
        assert len(row["prompt"]) == len(item.history) + 1
        assert row["chosen"] == [{"role": "assistant", "content": item.gold_recovery}]
        assert row["rejected"][0]["role"] == "assistant"
        assert P.norm(row["rejected"][0]["content"]) != P.norm(item.gold_recovery)
        assert row["antipattern"] in ANTIPATTERNS[item.type] + ("restart_message",)


def test_rejected_responses_are_the_failures_of_their_type(exported):
    _, run = exported
    details = interruption_details(run.accepted)
    seen = set()
    for item in run.items:
        d = details[(item.conversation_id, item.message_index)]
        for seed in range(4):
            name, bad = rejected_response(item, d, random.Random(seed))
            seen.add(name)
            rest = item.planned_text[len(item.heard_text):].strip()
            if name == "acknowledge_filler":
                assert bad.endswith(rest[1:]) and any(
                    bad.startswith(a) for a in P.bank("assistant", "bad_filler_ack"))
            elif name == "restart_sentence":           # re-delivers heard words
                assert cut_sentence(item.planned_text, item.heard_text) in bad
            elif name == "reexplain":
                assert item.planned_text in bad
            elif name == "ignore_correction":
                assert d["old"] in bad and d["new"] not in bad
            elif name == "argue_correction":
                assert d["old"] in bad
            elif name == "cave":
                assert bad in P.bank("assistant", "bad_cave")
            elif name == "stonewall":
                assert any(bad.startswith(b) for b in P.bank("assistant", "bad_stonewall"))
            elif name == "blend_topics":
                assert bad.startswith(tuple(P.bank("assistant", "bad_blend")))
    assert {"reexplain", "cave", "stonewall", "acknowledge_filler", "restart_sentence"} <= seen


def test_exports_are_deterministic(exported, tmp_path):
    work, run = exported
    from bargein.generators.exports import write_exports

    write_exports(run.items, run.accepted, tmp_path, seed=21)
    assert (tmp_path / "dpo.jsonl").read_bytes() == (work / "dpo.jsonl").read_bytes()
    assert (tmp_path / "sft.jsonl").read_bytes() == (work / "sft.jsonl").read_bytes()
    write_exports(run.items, run.accepted, tmp_path / "other", seed=22)
    assert _rows(tmp_path / "other" / "dpo.jsonl") != _rows(work / "dpo.jsonl")
