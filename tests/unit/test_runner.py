"""The runner: cache, resume after kill -9, failures, seeds, concurrency, worker processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bargein.errors import BargeinError, BudgetExceeded
from bargein.records import ChatMessage, Failure
from bargein.runner import Stage, run, run_stage
from bargein.store import read_jsonl

sys.path.insert(0, str(Path(__file__).parent))
import _runner_stages as S  # noqa: E402


def items(n: int, bad: tuple[int, ...] = ()) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=("boom " if i in bad else "") + f"item number {i}",
                        id=f"it{i:03d}") for i in range(n)]


def shout_stage(**kw) -> Stage:
    return Stage(name="shout", fn=S.shout, output=ChatMessage, **kw)


def test_outputs_in_input_order_and_rerun_is_free(tmp_path):
    res = run_stage(shout_stage(), items(12), workdir=tmp_path, seed=1)
    assert res.computed == 12 and res.cached == 0 and not res.failures
    assert [o.id for o in res.outputs] == [f"it{i:03d}_shout" for i in range(12)]
    first = (tmp_path / "shout.jsonl").read_bytes()
    again = run_stage(shout_stage(), items(12), workdir=tmp_path, seed=1)
    assert again.computed == 0 and again.cached == 12
    assert (tmp_path / "shout.jsonl").read_bytes() == first
    assert read_jsonl(tmp_path / "shout.jsonl", ChatMessage) == res.outputs


def test_cache_key_covers_seed_config_and_version(tmp_path):
    base = run_stage(shout_stage(), items(3), workdir=tmp_path, seed=1)
    assert run_stage(shout_stage(), items(3), workdir=tmp_path, seed=2).computed == 3
    assert run_stage(shout_stage(config={"x": 1}), items(3), workdir=tmp_path, seed=1).computed == 3
    assert run_stage(shout_stage(version="2"), items(3), workdir=tmp_path, seed=1).computed == 3
    other_seed = run_stage(shout_stage(), items(3), workdir=tmp_path / "b", seed=2)
    assert [o.content for o in other_seed.outputs] != [o.content for o in base.outputs]


def test_failures_are_recorded_with_evidence_and_the_batch_goes_on(tmp_path):
    res = run_stage(shout_stage(), items(6, bad=(2, 4)), workdir=tmp_path, seed=1)
    assert len(res.outputs) == 4 and [f.item_id for f in res.failures] == ["it002", "it004"]
    fails = read_jsonl(tmp_path / "shout.failures.jsonl", Failure)
    assert fails[0].stage == "shout" and fails[0].error_type == "ValueError"
    assert "cannot shout" in fails[0].reason and fails[0].evidence["traceback"]
    # failures are retried on the next run; successes come from cache
    again = run_stage(shout_stage(), items(6, bad=(2, 4)), workdir=tmp_path, seed=1)
    assert again.cached == 4 and len(again.failures) == 2


def test_every_failure_keeps_its_evidence_typed_or_as_text(tmp_path):
    """Evidence that fits FailureEvidence is kept typed; a list stays a list; a stage's bug (a
    typed key with a value of another type, an object that is not JSON) still reaches the
    failures file with its evidence, as text, and the batch goes on."""
    its = [ChatMessage(role="user", content=k, id=k) for k in ("typed", "mistyped", "list", "number", "object")]
    res = run_stage(Stage(name="failing", fn=S.fail_with_evidence, output=ChatMessage), its,
                    workdir=tmp_path, seed=1)
    got = {f.item_id: f.evidence for f in read_jsonl(tmp_path / "failing.failures.jsonl", Failure)}
    assert [f.item_id for f in res.failures] == [i.id for i in its]
    assert got["typed"] == {"agent": "a", "attempts": 2, "errors": ("no JSON",)}
    assert json.loads(got["mistyped"]) == {"agent": "a", "attempts": "two"}
    assert got["list"] == ("first problem", "second problem") and got["number"] == {"value": 7}
    assert got["object"].startswith("{'agent': 'a', 'when': <object object at")


def test_io_stage_keeps_the_heap_it_started_with_out_of_the_gc_and_gives_it_back(tmp_path):
    """While an I/O stage runs, the objects alive at its start are frozen (a full collection
    does not scan them and stall every call in flight); after it, nothing stays frozen."""
    import gc

    assert gc.get_freeze_count() == 0
    res = run_stage(Stage(name="gc", fn=S.frozen_count, output=ChatMessage, kind="io"), items(3),
                    workdir=tmp_path, seed=1)
    assert all(int(o.content) > 10_000 for o in res.outputs)      # modules, the inputs, ...
    assert gc.get_freeze_count() == 0


def test_one_to_many_and_composition(tmp_path):
    split = Stage(name="split", fn=S.split_words, output=ChatMessage)
    results = run([split, shout_stage()], items(2), workdir=tmp_path, seed=3)
    assert len(results[0].outputs) == 6 and len(results[1].outputs) == 6
    assert results[1].outputs[0].content.startswith("ITEM ")


def test_duplicate_input_ids_refused(tmp_path):
    dup = [ChatMessage(role="user", content="a", id="x"), ChatMessage(role="user", content="b", id="x")]
    with pytest.raises(BargeinError, match="duplicate"):
        run_stage(shout_stage(), dup, workdir=tmp_path, seed=1)


def test_worker_processes_match_inline(tmp_path):
    inline = run_stage(shout_stage(kind="cpu"), items(8, bad=(5,)), workdir=tmp_path / "a",
                       seed=9, workers=1)
    procs = run_stage(shout_stage(kind="cpu"), items(8, bad=(5,)), workdir=tmp_path / "b",
                      seed=9, workers=2)
    assert procs.outputs == inline.outputs
    assert [f.item_id for f in procs.failures] == ["it005"]
    assert (tmp_path / "a" / "shout.jsonl").read_bytes() == (tmp_path / "b" / "shout.jsonl").read_bytes()


def test_io_stage_runs_concurrently_within_its_bound(tmp_path):
    state = {"now": 0, "peak": 0}

    async def slow_echo(item, ctx):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        if item.id == "it003":
            raise RuntimeError("provider said no")
        return ChatMessage(role="assistant", content=item.content, id=item.id + "_e")

    stage = Stage(name="echo", fn=slow_echo, output=ChatMessage, kind="io", concurrency=5)
    res = run_stage(stage, items(20), workdir=tmp_path, seed=1)
    assert state["peak"] == 5
    assert len(res.outputs) == 19 and res.failures[0].reason == "provider said no"


def test_budget_stop_keeps_finished_items(tmp_path):
    calls = {"n": 0}

    async def spend(item, ctx):
        calls["n"] += 1
        if calls["n"] > 3:
            raise BudgetExceeded("budget of $0.01 reached")
        return ChatMessage(role="assistant", content=item.content, id=item.id + "_s")

    stage = Stage(name="spend", fn=spend, output=ChatMessage, kind="io", concurrency=1)
    res = run_stage(stage, items(10), workdir=tmp_path, seed=1)
    assert res.budget_stopped and len(res.outputs) == 3 and res.skipped == 7
    assert "budget reached" in res.summary()


_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import _runner_stages as S
from bargein.records import ChatMessage
from bargein.runner import Stage, run_stage
items = [ChatMessage(role="user", content=f"item number {{i}}", id=f"it{{i:03d}}") for i in range(40)]
run_stage(Stage(name="shout", fn=S.shout, output=ChatMessage), items, workdir={workdir!r}, seed=5)
"""


def _run_script(workdir: Path, delay: str) -> subprocess.Popen:
    code = _SCRIPT.format(tests=str(Path(__file__).parent), workdir=str(workdir))
    env = {**os.environ, "BARGEIN_TEST_DELAY": delay}
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def test_resume_after_kill_9_is_byte_identical(tmp_path):
    ref = _run_script(tmp_path / "ref", "0")
    assert ref.wait(timeout=120) == 0
    proc = _run_script(tmp_path / "killed", "0.05")
    cache = tmp_path / "killed" / "cache" / "shout"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(cache.glob("*/*.json"))) < 10:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(cache.glob("*/*.json")))
    assert 10 <= done_before < 40, "the kill must land mid-stage"
    assert not (tmp_path / "killed" / "shout.jsonl").exists()
    for f in cache.glob("*/*.json"):  # nothing half-written: every entry parses
        assert json.loads(f.read_text())["outputs"]
    resumed = _run_script(tmp_path / "killed", "0")
    assert resumed.wait(timeout=120) == 0
    assert (tmp_path / "killed" / "shout.jsonl").read_bytes() == (tmp_path / "ref" / "shout.jsonl").read_bytes()
    lines = (tmp_path / "killed" / "shout.jsonl").read_text().splitlines()
    assert len(lines) == 40 and len({json.loads(x)["id"] for x in lines}) == 40


def test_first_run_and_cached_rerun_write_the_same_bytes(tmp_path):
    def with_dict(item, ctx):
        from bargein.records import Failure

        return Failure(stage="x", item_id=item.id, reason="r", evidence={"z": 1, "a": 2})

    from bargein.records import Failure

    stage = Stage(name="dicts", fn=with_dict, output=Failure)
    run_stage(stage, items(3), workdir=tmp_path, seed=1)
    first = (tmp_path / "dicts.jsonl").read_bytes()
    assert run_stage(stage, items(3), workdir=tmp_path, seed=1).cached == 3
    assert (tmp_path / "dicts.jsonl").read_bytes() == first
