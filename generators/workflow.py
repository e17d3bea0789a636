"""A knowledge base's workflow as a state machine, held as a networkx DiGraph and validated.

    authenticate --next--> verify --next--> process --next--> confirm --next--> (resolved)
         |fail                |skip-----------------------------^     |terminate
         v                                                            v
    (escalated)                                                (caller_ended)

Stages are nodes with ``type="stage"``; terminal outcomes are nodes with ``type="terminal"``;
every transition is an edge labelled with its kind and condition (several transitions between
the same two nodes are kept in the edge's ``transitions`` list).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import networkx as nx

from bargein.errors import ConfigError
from bargein.records import KnowledgeBase, Workflow


# a lookup that finds the caller's record (a booking by its code and name, an order by its
# number) is a check too: a wrong code finds nothing, and a booking "found" for a caller who gave
# no code and no name (a hand read of seed 7373) is no lookup at all
_CHECK_STAGE = re.compile(r"(?:verify|authenticat|identify|confirm_identity|retrieve_booking|find_order)")


def check_stages(workflow: Workflow) -> list:
    """The workflow's identity-check and record-lookup stages (verify, authenticate, identify,
    retrieve_booking ...): what they take the caller gives right, or the check would pass with
    a wrong value."""
    return [st for st in workflow.stages if _CHECK_STAGE.match(st.name)]


# a call about a lost or stolen phone: nothing can be texted to it (a hand read of seeds 2929 and
# 8585: "I'll text you today's values", a one-time code "to the mobile number on the account")
_PHONE_GONE = re.compile(r"\b(?:lost|stolen|missing)\b(?:\s+or\s+stolen)?\s+(?:mobile\s+)?phone\b", re.I)
BY_TEXT = re.compile(r"\btext(?:ed|ing|s)?\b(?!\s+(?:box|field))|\bSMS\b|\bcode (?:sent )?to your (?:phone|mobile)\b|"
                     r"\bsent to your phone\b", re.I)


def phone_gone(goal_description: str) -> bool:
    """The call is about a lost or stolen phone: no text, code or link reaches the caller by it."""
    return bool(_PHONE_GONE.search(goal_description))


# a caller the business has no record of yet ("intake details for a new ... client"): no
# check against "what we have on file", no "date your engagement began" (seed 7070, call 8)
_NEW_CALLER = re.compile(r"\bnew (?:small-business |business |bookkeeping )*(?:client|customer|patient|member)\b", re.I)
ON_RECORD = re.compile(r"\bon file\b|\bwe (?:already )?(?:have|hold)\b|\bengagement began\b|"
                       r"\blast (?:visit|payment|bill)\b|\brecent activity\b|\bon your account\b|"
                       r"\bPIN you set\b|\bthe number we have\b|\bengagement letter\b|\bfiles?\b|speaking with|"
                       r"\byour account\b|only you would know|\bportal\b|one-time code|\bverify\b|"
                       r"security questions|right person|right record|really you|it's you|nothing is "
                       r"stored|every call|open anything|stays between|changes to|in your name|any change|pretending|same check|the account|"
                       r"talking to|protected|standard check|all I'd compare|goes nowhere", re.I)


def unfit_alternatives(goal_description: str) -> re.Pattern | None:
    """What a pushback's answer cannot offer or say in this call: a text to a lost phone, a
    check against records a new client does not have yet."""
    pats = ([BY_TEXT.pattern] if phone_gone(goal_description) else []) + \
        ([ON_RECORD.pattern] if _NEW_CALLER.search(goal_description) else [])
    return re.compile("|".join(pats), re.I) if pats else None


def to_graph(workflow: Workflow) -> nx.DiGraph:
    """Stages and terminals as nodes, transitions as labelled edges (unknown targets kept)."""
    g = nx.DiGraph()
    for order, s in enumerate(workflow.stages):
        g.add_node(s.name, type="stage", order=order)
    for t in workflow.terminals:
        if t not in g:
            g.add_node(t, type="terminal")
    for tr in workflow.transitions:
        for node in (tr.source, tr.target):
            if node not in g:
                g.add_node(node, type="unknown")
        label = {"kind": tr.kind, "condition": tr.condition}
        if g.has_edge(tr.source, tr.target):
            g.edges[tr.source, tr.target]["transitions"].append(label)
        else:
            g.add_edge(tr.source, tr.target, kind=tr.kind, condition=tr.condition,
                       transitions=[label])
    return g


def _fmt(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names)


def validate_workflow(workflow: Workflow, fact_keys: Iterable[str] | None = None) -> list[str]:
    """Every violation of the state-machine rules, each naming the stages involved.

    ``fact_keys`` are the user facts the assistant can obtain; a stage's required info must be
    one of them or be produced by a stage that precedes it on every path from the start.
    ``None`` skips that check.
    """
    v: list[str] = []
    names = [s.name for s in workflow.stages]
    stage_set = set(names)
    if not names:
        return ["workflow has no stages"]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        v.append(f"duplicate stage names: {_fmt(dupes)}")
    clash = sorted(stage_set & set(workflow.terminals))
    if clash:
        v.append(f"names used both as stage and terminal outcome: {_fmt(clash)}")
    if not workflow.terminals:
        v.append("workflow declares no terminal outcome")
    g = to_graph(workflow)
    stages = [n for n, d in g.nodes(data=True) if d["type"] == "stage"]
    terminals = [n for n, d in g.nodes(data=True) if d["type"] == "terminal"]

    for tr in workflow.transitions:
        if tr.source not in stage_set:
            kind = "terminal outcome" if tr.source in workflow.terminals else "unknown stage"
            v.append(f"transition {tr.kind} from {kind} {tr.source!r} to {tr.target!r}: "
                     f"transitions must start at a stage")
        if tr.target not in stage_set and tr.target not in workflow.terminals:
            v.append(f"transition {tr.kind} from {tr.source!r} targets unknown "
                     f"{tr.target!r} (not a stage or terminal outcome)")
        if tr.kind == "terminate" and tr.target in stage_set:
            v.append(f"terminate transition from {tr.source!r} goes to stage {tr.target!r}; "
                     f"terminate must end in a terminal outcome")

    if workflow.start not in stage_set:
        v.append(f"start {workflow.start!r} is not a stage (stages: {_fmt(names)})")
        return v
    entries = [s for s in stages if s != workflow.start and g.in_degree(s) == 0]
    if entries:
        v.append(f"more than one start: no transition leads to {_fmt(entries)}, "
                 f"only {workflow.start!r} may be entered without one")
    reachable = nx.descendants(g, workflow.start) | {workflow.start}
    unreachable = [s for s in stages if s not in reachable and s not in entries]
    if unreachable:
        v.append(f"unreachable from start {workflow.start!r}: {_fmt(unreachable)}")
    dead = [s for s in stages if g.out_degree(s) == 0]
    if dead:
        v.append(f"dead ends (no outgoing transition): {_fmt(dead)}")

    in_trap: set[str] = set()
    for comp in nx.strongly_connected_components(g):
        is_cycle = len(comp) > 1 or any(g.has_edge(n, n) for n in comp)
        if not is_cycle:
            continue
        exits = [(a, b) for a in comp for b in g.successors(a) if b not in comp]
        if not exits:
            ordered = sorted(comp, key=lambda n: g.nodes[n].get("order", 1 << 30))
            in_trap |= comp
            v.append(f"cycle with no exit: {' -> '.join(ordered + ordered[:1])}")
    if terminals:
        stuck = [s for s in stages if s not in in_trap and s not in dead
                 and not any(t in nx.descendants(g, s) for t in terminals)]
        if stuck:
            v.append(f"no terminal outcome reachable from {_fmt(stuck)}")
    unused = [t for t in terminals if g.in_degree(t) == 0]
    if unused:
        v.append(f"terminal outcomes never reached by any transition: {_fmt(unused)}")

    if fact_keys is not None:
        v.extend(_info_violations(workflow, g, set(fact_keys), reachable))
    return v


def _info_violations(workflow: Workflow, g: nx.DiGraph, facts: set[str],
                     reachable: set[str]) -> list[str]:
    stage_graph = g.subgraph([s.name for s in workflow.stages])
    try:
        idom = nx.immediate_dominators(stage_graph, workflow.start)
    except nx.NetworkXError:
        idom = {}
    out = []
    for s in workflow.stages:
        earlier: set[str] = set()
        node = s.name
        while node in idom and idom[node] != node:
            node = idom[node]
            earlier |= set(workflow.stage(node).produces)
        missing = [k for k in s.required_info if k not in facts and k not in earlier]
        if missing and s.name in reachable:
            hint = [k for k in missing if any(k in t.produces for t in workflow.stages)]
            why = (f" ({_fmt(hint)} produced by a stage that does not precede it on every path)"
                   if hint else "")
            out.append(f"stage {s.name!r} requires {_fmt(missing)}, which is neither a user fact "
                       f"nor produced by an earlier stage{why}")
    return out


def check_workflow(workflow: Workflow, fact_keys: Iterable[str] | None = None,
                   where: str = "workflow") -> None:
    """Raise :class:`ConfigError` listing every violation (nothing when valid)."""
    problems = validate_workflow(workflow, fact_keys)
    if problems:
        raise ConfigError(f"{where} is not a valid state machine:\n  - " + "\n  - ".join(problems),
                          evidence={"violations": problems})


def validate_kb(kb: KnowledgeBase) -> list[str]:
    """Workflow rules plus: required info must come from the KB's user facts or earlier stages."""
    return validate_workflow(kb.workflow, [f.key for f in kb.user_facts])


def stage_path(workflow: Workflow) -> list[str]:
    """The happy path: follow ``next`` transitions from the start until a terminal."""
    by_source: dict[str, str] = {}
    for tr in workflow.transitions:
        if tr.kind == "next" and tr.source not in by_source:
            by_source[tr.source] = tr.target
    path, node = [], workflow.start
    stage_names = set(workflow.stage_names)
    while node in stage_names and node not in path:
        path.append(node)
        node = by_source.get(node, "")
    return path
