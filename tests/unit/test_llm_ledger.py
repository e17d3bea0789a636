"""Price table and cost ledger: unknown prices stay unpriced, totals add up, runs accumulate."""

from __future__ import annotations

import asyncio

import json

import pytest

from bargein.errors import BudgetExceeded, ConfigError
from bargein.llm.base import Usage
from bargein.llm.ledger import UNPRICED, CostLedger, Price, PriceTable, ledger_for


def test_price_table_is_versioned_and_matches_snapshots_not_prefixes():
    t = PriceTable.load()
    assert t.version and t.date
    assert t.lookup("openai", "gpt-4o-mini") == Price(0.15, 0.60)
    assert t.lookup("openai", "gpt-4o-mini-2024-07-18") == t.lookup("openai", "gpt-4o-mini")
    assert t.lookup("anthropic", "claude-3-5-haiku-20241022") == t.lookup("anthropic", "claude-3-5-haiku")
    assert t.lookup("anthropic", "claude-3-5-haiku-latest") == Price(0.80, 4.00)
    assert t.lookup("openai", "gpt-4o-audio-preview") is None          # not priced as gpt-4o
    assert t.lookup("openai", "my-finetune") is None
    assert t.lookup("llamacpp", "qwen.gguf") == Price(0.0, 0.0)        # local: known to be free


def test_price_cost_is_per_million_tokens():
    assert Price(2.5, 10.0).cost(1_000_000, 500_000) == pytest.approx(7.5)


def test_overrides_and_bad_tables(tmp_path):
    t = PriceTable.load().with_overrides({"my-model": {"input": 1, "output": 2}}, "openai")
    assert t.lookup("openai", "my-model") == Price(1.0, 2.0) and t.version.endswith("+overrides")
    with pytest.raises(ConfigError, match="my-model"):
        PriceTable.load().with_overrides({"my-model": {"in": 1}}, "openai")
    bad = tmp_path / "prices.yaml"
    bad.write_text("version: 1\nproviders:\n  openai:\n    m: {input: cheap}\n")
    with pytest.raises(ConfigError, match="prices.yaml"):
        PriceTable.load(bad)


def test_ledger_keeps_raw_usage_and_marks_unpriced(tmp_path):
    ledger = CostLedger(tmp_path / "llm_ledger.json")
    ledger.record("openai", "gpt-4o-mini", "planner", Usage(1000, 200), cost_usd=0.00027, cached=False)
    ledger.record("openai", "gpt-4o-mini", "planner", Usage(1000, 200), cost_usd=0.0, cached=True)
    ledger.record("openai", "local", "judge", Usage(50, 5), cost_usd=None, cached=False)
    s = ledger.summary()
    rows = {r["agent"]: r for r in s["entries"]}
    assert rows["planner"] == {"provider": "openai", "model": "gpt-4o-mini", "agent": "planner",
                               "calls": 1, "cached_calls": 1, "input_tokens": 1000,
                               "output_tokens": 200, "cost_usd": 0.00027}
    assert rows["judge"]["cost_usd"] == UNPRICED and rows["judge"]["input_tokens"] == 50
    assert s["total"]["cost_usd"] == pytest.approx(0.00027) and s["total"]["unpriced_calls"] == 1
    assert ledger.spend_str() == "$0.0003 2 calls +1 cached (1 unpriced)"


def test_ledger_accumulates_across_runs_but_budget_is_per_run(tmp_path):
    path = tmp_path / "llm_ledger.json"
    first = CostLedger(path)
    first.record("anthropic", "claude-haiku-4-5", "a", Usage(10, 10), cost_usd=2.0, cached=False)
    first.save(wait=True)
    second = CostLedger(path)
    second.record("anthropic", "claude-haiku-4-5", "a", Usage(5, 5), cost_usd=1.0, cached=False)
    asyncio.run(second.reserve(1.5, 2.5))                      # this run spent 1.0 only: 1.5 fits
    second.release(1.5)
    second.save(wait=True)
    saved = json.loads(path.read_text())
    assert saved["total"]["cost_usd"] == 3.0 and saved["total"]["calls"] == 2
    assert saved["this_run"]["cost_usd"] == 1.0
    second.record("anthropic", "claude-haiku-4-5", "a", Usage(5, 5), cost_usd=1.5, cached=False)
    with pytest.raises(BudgetExceeded, match="could cost up to \\$0.0100, more than the \\$0.0000 left") as ei:
        asyncio.run(second.reserve(0.01, 2.5))
    assert ei.value.evidence["this_run"]["calls"] == 2 and second.budget_stopped


def test_unreadable_ledger_names_the_file(tmp_path):
    path = tmp_path / "llm_ledger.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="llm_ledger.json"):
        CostLedger(path)


def test_clients_of_one_workdir_share_a_ledger(tmp_path):
    a, b = ledger_for(tmp_path / "x" / ".." / "llm_ledger.json"), ledger_for(tmp_path / "llm_ledger.json")
    assert a is b and ledger_for(tmp_path / "other.json") is not a


def test_ledger_writes_go_through_the_cache_writer_last_write_wins(tmp_path):
    """The ledger's snapshots use the one writer thread of :mod:`bargein.cache` (no second
    writer): queued in order, the last write of a path wins, no temp file is left."""
    from bargein.cache import flush_writes, write_behind

    paths = [tmp_path / "b" / f"{i}.json" for i in range(50)]
    for i, p in enumerate(paths):
        write_behind(p, str(i).encode())
    write_behind(paths[0], b"last write wins")
    assert flush_writes(30)
    assert paths[0].read_bytes() == b"last write wins" and paths[49].read_bytes() == b"49"
    assert not [p for p in (tmp_path / "b").iterdir() if p.name.endswith(".tmp")]
    ledger = CostLedger(tmp_path / "l" / "llm_ledger.json")
    ledger.record("openai", "gpt-4o-mini", "bench", Usage(input_tokens=1000, output_tokens=10),
                  cost_usd=0.001, cached=False)
    ledger.save(wait=True)
    assert json.loads((tmp_path / "l" / "llm_ledger.json").read_text())["entries"]
