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


# ---- stage commands are views over the declared specs ---------------------------------------

STAGE_COMMANDS = {           # command module -> the spec factories it must run
    "generate_scenarios": {"scenarios_spec"}, "generate_conversations": {"conversations_spec"},
    "baseline": {"baseline_spec"}, "render": {"render_spec"},
    "mask": {"mask_spec", "mask_qa_spec"}, "perturb": {"perturb_spec"}, "release": {"release_spec"},
}
LIBRARY_CALLS = {"generate_scenarios", "generate_conversations", "fill_baselines",
                 "render_conversations", "mask_rendered", "mask_sources", "run_perturb",
                 "build_release"}


def test_every_stage_command_runs_its_declared_spec_not_the_library_call():
    """Each stage command imports its spec factories and run_stages from bargein.pipeline and
    calls none of the stage library functions itself (so wiring checks, settings and the seed
    rule are the build's)."""
    import ast
    from pathlib import Path

    import bargein.cli as cli
    from bargein import pipeline

    folder = Path(cli.__file__).parent
    for module, factories in STAGE_COMMANDS.items():
        tree = ast.parse((folder / f"{module}.py").read_text(encoding="utf-8"))
        from_pipeline = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                         and n.module == "bargein.pipeline" for a in n.names}
        assert factories | {"run_stages"} <= from_pipeline, module
        assert all(callable(getattr(pipeline, f)) for f in factories)
        called = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                  for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and isinstance(n.func, (ast.Name, ast.Attribute))}
        assert not called & LIBRARY_CALLS, f"{module} calls {called & LIBRARY_CALLS} directly"


def test_a_stage_command_with_an_input_nobody_gives_fails_before_anything_runs(tmp_path):
    from bargein.pipeline import build_settings, render_spec, run_stages

    spec = render_spec(build_settings(load_preset("demo"))["render"])
    with pytest.raises(WiringError, match="'render' reads VerifiedConversation records but no "
                                          "stage produces them"):
        run_stages([spec], workdir=tmp_path, seed=1)
    assert not any(tmp_path.iterdir())          # nothing ran, nothing written
    settings = {**build_settings(load_preset("demo"))["perturb"], "per_type": {1, 2}}
    from bargein.pipeline import perturb_spec

    with pytest.raises(WiringError, match="settings is not serialisable"):
        run_stages([perturb_spec(settings)], workdir=tmp_path, seed=1,
                   records={RenderedDialogue: []})


def test_a_stage_command_and_the_build_make_the_same_stage_output(tmp_path):
    """``bargein --seed 11 generate scenarios --n 3`` is the build's scenarios spec with the
    same settings and seed: the same bytes (the global --seed resolved by the one rule)."""
    from bargein.cli import main
    from bargein.pipeline import build_settings, run_stages

    cfg = parse_config({"scenarios": {"n": 3}, "audio": {"enabled": False}})
    cfg = cfg.model_copy(update={"seed": 11})
    p = plan(cfg)
    run_stages([p.stages[0]], workdir=tmp_path / "build", seed=cfg.seed)
    assert p.stages[0].settings == build_settings(cfg)["scenarios"]
    assert main(["--seed", "11", "--workdir", str(tmp_path / "cmd"), "generate", "scenarios",
                 "--n", "3"]) == 0
    a = (tmp_path / "build" / "scenarios.jsonl").read_bytes()
    assert a and a == (tmp_path / "cmd" / "scenarios.jsonl").read_bytes()
    assert main(["--seed", "12", "--workdir", str(tmp_path / "other"), "generate", "scenarios",
                 "--n", "3"]) == 0
    assert (tmp_path / "other" / "scenarios.jsonl").read_bytes() != a
