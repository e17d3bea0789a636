"""The offline domain catalogue: validated entirely, and broken entries rejected with names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from bargein.errors import ConfigError
from bargein.generators.catalogue_loader import (
    DOMAIN_NAMES, SLOT, catalogue_dir, domain_files, load_catalogue, validate_catalogue,
)
from bargein.generators.facts import FACT_KINDS
from bargein.generators.workflow import stage_path, to_graph


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def test_whole_catalogue_is_valid(cat):
    assert validate_catalogue(cat) == []
    assert list(cat.domains) == list(DOMAIN_NAMES)
    assert sum(len(d.goals) for d in cat.domains.values()) >= 50
    assert len(cat.profiles) >= 10


def test_every_goal_is_a_rich_state_machine(cat):
    for d in cat.domains.values():
        assert len(d.goals) >= 5 and len(d.domain.guidelines) >= 4, d.source
        assert d.brand and d.domain.description
        for g in d.goals.values():
            wf = g.workflow
            assert len(wf.stages) >= 4, g.name
            kinds = {t.kind for t in wf.transitions}
            assert {"next", "fail", "terminate"} <= kinds, (g.name, kinds)
            assert len(stage_path(wf)) >= 3, g.name
            graph = to_graph(wf)
            assert all(graph.out_degree(s) >= 2 for s in wf.stage_names), g.name
            for st in wf.stages:
                assert st.skip_conditions and st.failure_handling and st.termination_conditions
                assert len(st.talking_points) >= 2
                for tp in st.talking_points:
                    assert 15 <= len(SLOT.sub("x", tp).split()) <= 55, tp
            # every fact the stages need is declared with a Faker-backed kind
            for st in wf.stages:
                produced = {k for s in wf.stages for k in s.produces}
                assert set(st.required_info) <= set(g.facts) | produced, (g.name, st.name)
            assert all(spec.kind in FACT_KINDS for spec in g.facts.values())
            assert len(g.hidden) >= 2 and g.correctable


def test_goal_names_unique_and_described(cat):
    names = [(d, g) for d, e in cat.domains.items() for g in e.goals]
    assert len(set(names)) == len(names)
    for d in cat.domains.values():
        for g in d.goals.values():
            assert g.goal.domain == d.domain.name
            assert len(g.goal.description.split()) >= 8


def test_interruption_profiles_lean_to_challenging_types(cat):
    """Pushback then impatient dominate the profiles (IHBench Appendix A). Filler weights sit
    lowest because the planner also realises fillers where nothing else fits (the rest of a cut
    sentence), so the drawn weight is below the realised share."""
    mean = {t: sum(p["weights"][t] / sum(p["weights"].values()) for p in cat.profiles)
            / len(cat.profiles) for t in cat.profiles[0]["weights"]}
    assert max(mean, key=mean.get) == "pushback"
    assert sorted(mean, key=mean.get)[-2] == "impatient"
    assert mean["correction"] < mean["normal"] < mean["impatient"]


def _copy_catalogue(tmp_path: Path, only: str = "domain_telecom.yaml") -> Path:
    d = tmp_path / "cat"
    d.mkdir(parents=True)
    for name in ("_common.yaml", "_profiles.yaml", only):
        shutil.copy(catalogue_dir() / name, d / name)
    return d


def _edit_goal(path: Path, goal: str, fn) -> None:
    data = yaml.safe_load(path.read_text())
    g = next(g for g in data["goals"] if g["name"] == goal)
    fn(g, data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_broken_entry_is_rejected_with_stage_names(tmp_path):
    d = _copy_catalogue(tmp_path)

    def unreachable(g, _):
        # 'verify_fix' is only entered from 'remote_diagnostics'; drop that edge
        diag = next(s for s in g["stages"] if s.get("name") == "remote_diagnostics")
        diag["transitions"] = [t for t in diag["transitions"] if "verify_fix" not in t]
        diag["transitions"].append("next -> schedule_technician: the line test passes")

    _edit_goal(d / "domain_telecom.yaml", "troubleshoot_home_internet", unreachable)
    problems = validate_catalogue(load_catalogue(d), require_all_domains=False)
    assert problems == ["domain_telecom.yaml: goal 'troubleshoot_home_internet': more than one "
                        "start: no transition leads to 'verify_fix', only 'authenticate' may be "
                        "entered without one"]


def test_cycle_without_exit_is_rejected(tmp_path):
    d = _copy_catalogue(tmp_path)

    def loop(g, data):
        # collect_port_details <-> submit_port with every exit removed (the domain-wide
        # "caller hangs up" transition is an exit too, so it goes as well)
        data["every_stage"]["transitions"] = []
        for s in g["stages"]:
            if s.get("name") == "collect_port_details":
                s["transitions"] = ["next -> submit_port: details given"]
            if s.get("name") == "submit_port":
                s["transitions"] = ["next -> collect_port_details: rejected"]

    _edit_goal(d / "domain_telecom.yaml", "port_in_number", loop)
    problems = [p for p in validate_catalogue(load_catalogue(d), require_all_domains=False)
                if "port_in_number" in p]
    assert problems == [
        "domain_telecom.yaml: goal 'port_in_number': more than one start: no transition leads "
        "to 'confirm_port', only 'authenticate' may be entered without one",
        "domain_telecom.yaml: goal 'port_in_number': cycle with no exit: "
        "collect_port_details -> submit_port -> collect_port_details"]


def test_unknown_slot_and_missing_fact_are_named(tmp_path):
    d = _copy_catalogue(tmp_path)

    def slots(g, _):
        stage = next(s for s in g["stages"] if s.get("name") == "assess_credit")
        stage["talking_points"][0] += " Your reference is {credit_case_id} for this dispute."
        stage["required_info"] = ["loyalty_tier"]

    _edit_goal(d / "domain_telecom.yaml", "dispute_bill_charge", slots)
    text = "\n".join(validate_catalogue(load_catalogue(d), require_all_domains=False))
    assert "stage 'assess_credit': unknown slots ['credit_case_id']" in text
    assert "stage 'assess_credit' requires 'loyalty_tier'" in text


def test_structural_errors_name_file_and_key(tmp_path):
    d = _copy_catalogue(tmp_path)
    path = d / "domain_telecom.yaml"
    _edit_goal(path, "port_in_number",
               lambda g, _: g["stages"][1].__setitem__("transitions", ["go to submit_port"]))
    with pytest.raises(ConfigError, match=r"port_in_number.*'go to submit_port' is not 'KIND -> "
                                          r"TARGET: condition'"):
        load_catalogue(d)
    d2 = _copy_catalogue(tmp_path / "b")
    _edit_goal(d2 / "domain_telecom.yaml", "port_in_number",
               lambda g, _: g["facts"].__setitem__("transfer_pin", {"kind": "pin"}))
    with pytest.raises(ConfigError, match=r"transfer_pin: unknown fact kind 'pin'; valid kinds"):
        load_catalogue(d2)
    d3 = _copy_catalogue(tmp_path / "c")
    _edit_goal(d3 / "domain_telecom.yaml", "port_in_number",
               lambda g, _: g["stages"].insert(0, {"use": "login"}))
    with pytest.raises(ConfigError, match=r"uses unknown shared stage 'login'; shared stages: "
                                          r"authenticate, verify_account"):
        load_catalogue(d3)
    d4 = _copy_catalogue(tmp_path / "d")
    data = yaml.safe_load((d4 / "domain_telecom.yaml").read_text())
    del data["brand"]
    (d4 / "domain_telecom.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"domain_telecom.yaml: missing key 'brand'"):
        load_catalogue(d4)


def test_only_domain_files_are_domains():
    names = [p.name for p in domain_files()]
    assert len(names) == 10 and all(n.startswith("domain_") for n in names)
