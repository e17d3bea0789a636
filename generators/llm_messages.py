"""The chat messages each LLM agent of the simulate stage is sent (rendered from ``prompts/``).

* :func:`assistant_messages` — the assistant simulator's branch (normal | interruption), given the
  conversation as spoken and the plan without anything about the coming cut;
* :func:`user_messages` — the user simulator's branch (normal | interrupting), given the
  :class:`~bargein.generators.user_sim.UserPlan` (never the intent) and what the caller heard.
"""

from __future__ import annotations

import json

from bargein.generators import phrases as P
from bargein.generators.assistant_sim import brand
from bargein.generators.planner import EDGE_WORDS, MIN_CUT_WORDS, RoundPlan
from bargein.generators.user_sim import UserPlan
from bargein.records import Scenario


def history_view(messages) -> list[dict[str, str]]:
    """Messages as they were actually spoken; a cut one is marked with what went unsaid."""
    out = []
    for m in messages:
        item = {"index": m.index, "role": m.role, "text": m.spoken_text}
        if m.interruption is not None:
            item["cut_off"] = f"(interrupted; unsaid: {m.text[len(m.heard_text or ''):].strip()!r})"
        out.append(item)
    return out


def assistant_messages(plan: RoundPlan, scenario: Scenario, messages) -> tuple[str, list[dict[str, str]]]:
    """(agent name, chat messages) for the branch the plan calls for."""
    from bargein.prompts import render

    branch = "interruption" if plan.assistant_mode == "recovery" else "normal"
    name = f"assistant_simulator.{branch}"
    # the assistant never learns whether or where it will be cut (no cross-contamination)
    view = plan.model_dump(mode="json", exclude={
        "user_style", "user_profile", "user_facts", "user_goal", "user_action", "message_index",
        "cut_word_index", "interrupt", "type", "detail", "cut_fraction", "overlap_ms", "rationale"})
    prompt = render(name, system_prompt=scenario.system_prompt, brand=brand(scenario),
                    history=history_view(messages), plan=json.dumps(view, indent=1),
                    recovery=json.dumps(plan.recovery.model_dump() if plan.recovery else {}, indent=1),
                    min_words=1 if plan.assistant_action == "farewell" else MIN_CUT_WORDS)
    return name, [{"role": "user", "content": prompt}]


def user_messages(up: UserPlan, heard_history: list[dict], message: str | None = None,
                  content_start: int = 0) -> tuple[str, list[dict[str, str]]]:
    """(agent name, chat messages) for the user simulator's branch."""
    from bargein.prompts import render

    if up.interrupt:
        n = P.n_words(message or "")
        first = P.n_words((message or "")[:content_start])
        name = "user_simulator.interrupting"
        prompt = render(name, plan=json.dumps(up.model_dump(mode="json"), indent=1),
                        history=heard_history, assistant_message=message,
                        min_cut=max(first + EDGE_WORDS, EDGE_WORDS), max_cut=n - EDGE_WORDS,
                        type=up.type, detail=json.dumps(up.detail))
    else:
        name = "user_simulator.normal"
        prompt = render(name, plan=json.dumps(up.model_dump(mode="json"), indent=1),
                        history=heard_history)
    return name, [{"role": "user", "content": prompt}]
