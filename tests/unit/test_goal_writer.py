"""The goal writer's prompt is a conversation (instructions, one worked example as an earlier
turn, the domain last), and its answers are checked for variety: the formula the 1.5B model
wrote for every goal ("The assistant asks the caller to authenticate, verify their billing
information, and then ...", issue 17) is refused, while the hand-written catalogue goals (an
independent set: 5 goals in each of 10 domains) all pass."""

from __future__ import annotations

import pytest

from bargein.generators.catalogue_loader import load_catalogue
from bargein.generators.scenarios_llm import GOAL_EXAMPLE, goal_messages, goal_problems
from bargein.records import Goal

FORMULA = "The assistant asks the caller to authenticate, verify their billing information, and then {}."


def goals(domain: str, *pairs: tuple[str, str]) -> list[Goal]:
    return [Goal(domain=domain, name=n, description=d) for n, d in pairs]


def test_the_issues_formula_is_refused():
    bad = goals("saas", ("reset_password", FORMULA.format("reset the password")),
                ("restore_deleted_data", FORMULA.format("restore the deleted data")))
    problems = " | ".join(goal_problems(bad))
    assert "shared procedure" in problems and "open with the same words" in problems
    assert "mostly the same words" in problems


@pytest.mark.parametrize("domain", sorted(load_catalogue().domains))
def test_hand_written_catalogue_goals_pass(domain):
    assert goal_problems([e.goal for e in load_catalogue().domain(domain).goals.values()]) == []


def test_the_same_need_reworded_and_the_example_copied_are_refused():
    same = goals("telecom",
                 ("upgrade_plan", "Upgrade a mobile plan to unlimited data and explain the new monthly price."),
                 ("plan_upgrade", "Upgrade the mobile plan to unlimited data and explain the monthly price change."))
    assert any("mostly the same words" in p for p in goal_problems(same))
    copied = goals("telecom", *((g["name"], g["description"]) for g in GOAL_EXAMPLE["goals"][:1]))
    assert any("copies the worked example" in p for p in goal_problems(copied))


def test_prompt_is_a_conversation_with_the_domain_last():
    dom = load_catalogue().domain("travel")
    msgs = goal_messages(dom.domain, dom.brand, 2)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert "Write 3 goals" in msgs[1]["content"] and "Utilities" in msgs[1]["content"]
    assert dom.brand in msgs[-1]["content"] and "Write 2 goals" in msgs[-1]["content"]
    assert dom.brand not in msgs[0]["content"] + msgs[1]["content"]
