"""The composition layer: declared stage specs, wiring validated before anything runs."""

from __future__ import annotations

import json

import pytest

from bargein.config import load_preset, parse_config
from bargein.pipeline import (
    BuildState, StageOutcome, StageSpec, WiringError, plan, run, validate,
)
from bargein.records import (
    EvalItem, MaskedItem, PerturbationPair, ReleaseManifest, RenderedDialogue, Scenario,
    VerifiedConversation,
)


class Recorder:
    """Stage functions that only note that they ran (so a test can assert nothing ran)."""

    def __init__(self):
        self.calls: list[str] = []

    def fn(self, name: str, records: dict | None = None):
        def run_(state: BuildState) -> StageOutcome:
            self.calls.append(name)
            return StageOutcome(records or {})
        return run_


def test_the_build_plan_of_the_demo_preset():
    p = plan(load_preset("demo"))
    assert p.names == ("scenarios", "conversations", "baseline", "render", "mask", "perturb",
                       "release")
    dag = {d["stage"]: d for d in p.describe()}
    assert dag["render"]["after"] == ["conversations"]
    assert dag["mask"]["after"] == ["conversations", "render"]
    assert dag["release"]["after"] == ["baseline", "conversations", "mask", "perturb", "render"]
    assert dag["render"]["backend"] == {"assistant_voice": "hibari:heart", "user_voice": "piper:joe",
                                        "sample_rate": 16000}
    json.dumps(p.describe())                 # the DAG itself is serialisable (provenance)


def test_disabled_stages_leave_the_plan_and_it_still_validates():
    cfg = parse_config({"audio": {"enabled": False}, "exports": {"sft": False}})
    p = plan(cfg)
    assert p.names == ("scenarios", "conversations", "baseline", "release")
    release = p.stages[-1]
    assert "sft" not in release.reads and "dpo" in release.reads


def test_an_input_no_stage_produces_fails_before_any_stage_runs():
    rec = Recorder()
    specs = [
        StageSpec("scenarios", (), (Scenario,), rec.fn("scenarios")),
        # mis-wired: scores perturbation pairs, but the perturb stage was left out
        StageSpec("score", (PerturbationPair,), (), rec.fn("score")),
    ]
    with pytest.raises(WiringError) as e:
        run(validate(specs), BuildState(config=load_preset("demo"), workdir=None, out_dir=None,
                                        seed=1))
    msg = str(e.value)
    assert "'score' reads PerturbationPair records but no stage produces them" in msg
    assert rec.calls == []


def test_an_artifact_no_stage_writes_is_a_wiring_error():
    rec = Recorder()
    specs = [StageSpec("release", (), (ReleaseManifest,), rec.fn("release"), reads=("timing",))]
    with pytest.raises(WiringError, match="reads artifact 'timing' but no stage writes it"):
        validate(specs)


def test_a_cycle_is_a_wiring_error():
    rec = Recorder()
    specs = [
        StageSpec("render", (VerifiedConversation,), (RenderedDialogue,), rec.fn("render")),
        StageSpec("verify", (RenderedDialogue,), (VerifiedConversation,), rec.fn("verify")),
    ]
    with pytest.raises(WiringError, match="cycle") as e:
        validate(specs)
    assert "render" in str(e.value) and "verify" in str(e.value)
    assert rec.calls == []


def test_missing_or_unserialisable_backend_config_is_a_wiring_error():
    rec = Recorder()
    with pytest.raises(WiringError, match="'scenarios' needs backend setting 'llm'"):
        validate([StageSpec("scenarios", (), (Scenario,), rec.fn("s"), backend={"llm": None},
                            needs=("llm",))])
    with pytest.raises(WiringError, match="not serialisable"):
        validate([StageSpec("render", (), (RenderedDialogue,), rec.fn("r"),
                            backend={"voice": object()})])


def test_two_producers_of_one_record_type_and_duplicate_names_are_refused():
    rec = Recorder()
    with pytest.raises(WiringError) as e:
        validate([StageSpec("mask", (), (MaskedItem,), rec.fn("a")),
                  StageSpec("mask2", (), (MaskedItem,), rec.fn("b")),
                  StageSpec("mask2", (), (), rec.fn("c"))])
    assert "produced by both 'mask' and 'mask2'" in str(e.value)
    assert "'mask2' is declared 2 times" in str(e.value)


def test_stages_run_in_dependency_order_whatever_the_declared_order(tmp_path):
    rec = Recorder()
    specs = [
        StageSpec("baseline", (EvalItem,), (), rec.fn("baseline")),
        StageSpec("items", (Scenario,), (EvalItem,), rec.fn("items", {EvalItem: []})),
        StageSpec("scenarios", (), (Scenario,), rec.fn("scenarios", {Scenario: []})),
    ]
    p = validate(specs)
    assert p.names == ("scenarios", "items", "baseline")
    state = BuildState(config=load_preset("demo"), workdir=tmp_path, out_dir=tmp_path, seed=3)
    run(p, state)
    assert rec.calls == ["scenarios", "items", "baseline"]


def test_a_stage_returning_undeclared_records_or_missing_its_artifact_stops_the_run(tmp_path):
    rec = Recorder()
    state = BuildState(config=load_preset("demo"), workdir=tmp_path, out_dir=tmp_path, seed=3)
    p = validate([StageSpec("scenarios", (), (Scenario,), rec.fn("s", {EvalItem: []}))])
    with pytest.raises(WiringError, match="does not declare"):
        run(p, state)
    p = validate([StageSpec("scenarios", (), (Scenario,), rec.fn("s", {Scenario: []}),
                            artifacts={"scenarios": "scenarios.jsonl"})])
    with pytest.raises(Exception, match="did not write its artifact"):
        run(p, state)
