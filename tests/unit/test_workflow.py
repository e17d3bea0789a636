"""Workflow state machines: the graph, and every kind of violation on deliberately broken ones."""

from __future__ import annotations

import pytest

from bargein.errors import ConfigError
from bargein.generators.workflow import (
    check_workflow, stage_path, to_graph, validate_kb, validate_workflow,
)
from bargein.records import KnowledgeBase, Transition, UserFact, Workflow, WorkflowStage

FACTS = ["full_name", "account_number", "new_plan"]


def st(name: str, required: tuple[str, ...] = (), produces: tuple[str, ...] = ()) -> WorkflowStage:
    return WorkflowStage(name=name, description=f"do {name}", required_info=required,
                         produces=produces)


def tr(source: str, target: str, kind: str = "next", condition: str = "") -> Transition:
    return Transition(source=source, target=target, kind=kind, condition=condition)


def good() -> Workflow:
    """authenticate -> verify -> process -> confirm -> (resolved), with skip/fail/terminate."""
    return Workflow(
        stages=(st("authenticate", ("full_name", "account_number")), st("verify"),
                st("process", ("new_plan",), produces=("order_id",)),
                st("confirm", ("order_id",))),
        transitions=(tr("authenticate", "verify"), tr("authenticate", "escalated", "fail"),
                     tr("verify", "process"), tr("verify", "confirm", "skip", "already done"),
                     tr("process", "confirm"), tr("process", "process", "fail", "retry once"),
                     tr("process", "escalated", "fail"), tr("confirm", "resolved"),
                     tr("confirm", "caller_ended", "terminate")),
        start="authenticate", terminals=("resolved", "escalated", "caller_ended"))


def broken(**changes) -> Workflow:
    return good().with_(**changes)


def test_good_workflow_is_valid_and_graph_is_labelled():
    wf = good()
    # order_id is produced by 'process', but 'confirm' is reachable by skipping it
    assert validate_workflow(wf, FACTS) == [
        "stage 'confirm' requires 'order_id', which is neither a user fact nor produced by an "
        "earlier stage ('order_id' produced by a stage that does not precede it on every path)"]
    wf = wf.with_(transitions=tuple(t for t in wf.transitions if t.kind != "skip"))
    assert validate_workflow(wf, FACTS) == []
    check_workflow(wf, FACTS)
    g = to_graph(wf)
    assert {n for n, d in g.nodes(data=True) if d["type"] == "stage"} == set(wf.stage_names)
    assert {n for n, d in g.nodes(data=True) if d["type"] == "terminal"} == set(wf.terminals)
    assert g.edges["authenticate", "escalated"]["kind"] == "fail"
    assert g.edges["process", "process"]["condition"] == "retry once"
    assert stage_path(wf) == ["authenticate", "verify", "process", "confirm"]


def test_parallel_transitions_are_all_kept():
    wf = good().with_(transitions=good().transitions + (tr("verify", "process", "skip", "x"),))
    labels = to_graph(wf).edges["verify", "process"]["transitions"]
    assert [lab["kind"] for lab in labels] == ["next", "skip"]


def test_unknown_start():
    v = validate_workflow(broken(start="login"))
    assert any("start 'login' is not a stage" in x and "'authenticate'" in x for x in v)


def test_more_than_one_start():
    wf = broken(stages=good().stages + (st("survey"),),
                transitions=good().transitions + (tr("survey", "resolved"),))
    v = validate_workflow(wf)
    assert v == ["more than one start: no transition leads to 'survey', only 'authenticate' "
                 "may be entered without one"]


def test_unreachable_stage():
    # 'upsell' <-> 'discount' lead to each other and out, but nothing from the start reaches them
    wf = broken(stages=good().stages + (st("upsell"), st("discount")),
                transitions=good().transitions + (tr("upsell", "discount"),
                                                   tr("discount", "upsell", "fail"),
                                                   tr("discount", "resolved")))
    v = validate_workflow(wf)
    assert v == ["unreachable from start 'authenticate': 'upsell', 'discount'"]


def test_dead_end():
    wf = broken(transitions=tuple(t for t in good().transitions if t.source != "confirm"))
    v = validate_workflow(wf)
    assert "dead ends (no outgoing transition): 'confirm'" in v
    assert "terminal outcomes never reached by any transition: 'resolved', 'caller_ended'" in v


def test_cycle_with_no_exit_and_terminal_unreachable():
    # verify <-> process loop forever; authenticate can only enter that loop
    wf = Workflow(stages=(st("authenticate"), st("verify"), st("process")),
                  transitions=(tr("authenticate", "verify"), tr("verify", "process"),
                               tr("process", "verify", "fail")),
                  start="authenticate", terminals=("resolved",))
    v = validate_workflow(wf)
    assert "cycle with no exit: verify -> process -> verify" in v
    assert "no terminal outcome reachable from 'authenticate'" in v
    assert "terminal outcomes never reached by any transition: 'resolved'" in v


def test_self_loop_without_exit():
    wf = Workflow(stages=(st("a"), st("b")), transitions=(tr("a", "b"), tr("b", "b", "fail")),
                  start="a", terminals=("done",))
    assert "cycle with no exit: b -> b" in validate_workflow(wf)


def test_unknown_targets_and_sources():
    wf = broken(transitions=good().transitions + (tr("verify", "refund"), tr("billing", "confirm"),
                                                   tr("resolved", "verify")))
    v = validate_workflow(wf)
    assert any("from 'verify' targets unknown 'refund'" in x for x in v)
    assert any("from unknown stage 'billing'" in x for x in v)
    assert any("from terminal outcome 'resolved'" in x for x in v)


def test_terminate_must_reach_a_terminal():
    wf = broken(transitions=good().transitions + (tr("verify", "confirm", "terminate"),))
    assert ("terminate transition from 'verify' goes to stage 'confirm'; terminate must end in a "
            "terminal outcome") in validate_workflow(wf)


def test_required_info_not_obtainable():
    wf = good().with_(transitions=tuple(t for t in good().transitions if t.kind != "skip"))
    v = validate_workflow(wf, ["full_name"])
    assert v == [
        "stage 'authenticate' requires 'account_number', which is neither a user fact nor "
        "produced by an earlier stage",
        "stage 'process' requires 'new_plan', which is neither a user fact nor produced by an "
        "earlier stage"]
    assert validate_workflow(wf) == []          # fact_keys=None skips the check


def test_duplicates_clashes_and_no_terminals():
    wf = Workflow(stages=(st("a"), st("a"), st("done")), transitions=(tr("a", "done"),),
                  start="a", terminals=())
    v = validate_workflow(wf)
    assert "duplicate stage names: 'a'" in v
    assert "workflow declares no terminal outcome" in v
    clash = Workflow(stages=(st("a"), st("resolved")), transitions=(tr("a", "resolved"),),
                     start="a", terminals=("resolved",))
    assert "names used both as stage and terminal outcome: 'resolved'" in validate_workflow(clash)
    assert validate_workflow(Workflow(stages=(), transitions=(), start="a", terminals=("x",))) \
        == ["workflow has no stages"]


def test_check_workflow_lists_every_violation():
    wf = Workflow(stages=(st("a"), st("b"), st("c")), transitions=(tr("a", "b"),),
                  start="a", terminals=("done",))
    with pytest.raises(ConfigError) as e:
        check_workflow(wf, where="kb 'telecom/upgrade'")
    msg = str(e.value)
    assert msg.startswith("kb 'telecom/upgrade' is not a valid state machine")
    assert "'b'" in msg and "'c'" in msg and "'done'" in msg
    assert e.value.evidence["violations"] == [
        "more than one start: no transition leads to 'c', only 'a' may be entered without one",
        "dead ends (no outgoing transition): 'b', 'c'",
        "no terminal outcome reachable from 'a'",
        "terminal outcomes never reached by any transition: 'done'"]


def test_validate_kb_uses_its_user_facts():
    wf = good().with_(transitions=tuple(t for t in good().transitions if t.kind != "skip"))
    kb = KnowledgeBase(domain="telecom", goal="upgrade", workflow=wf,
                       user_facts=(UserFact(key="full_name", value="Ada Reyes"),
                                   UserFact(key="account_number", value="4471 0932")))
    assert validate_kb(kb) == ["stage 'process' requires 'new_plan', which is neither a user "
                               "fact nor produced by an earlier stage"]
