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
    entry = load_catalogue().domain(domain)
    assert goal_problems([e.goal for e in entry.goals.values()], entry.domain.guidelines) == []


def test_a_rule_of_the_assistant_written_as_a_goal_is_refused():
    """Seen on the 1.5B model: the travel domain's guidelines came back as its goals."""
    dom = load_catalogue().domain("travel").domain
    copied = goals("travel", ("book_flight", "Retrieve the booking with the six-character confirmation "
                              "code and the passenger's last name before discussing or changing it."))
    assert any(r.startswith("Retrieve the booking") for r in dom.guidelines)
    assert any("copies a rule" in p for p in goal_problems(copied, dom.guidelines))


def test_a_goal_reask_leaves_the_refused_answer_out():
    """A small model shown its refused answer wrote it again word for word (three times): the
    goal writer's re-ask is the request again, with the problems and without the answer."""
    import asyncio

    from bargein.generators.scenarios_llm import GoalList, ask_valid

    class Recording:         # a stand-in client: answers from a list, keeps each chat it got
        def __init__(self, answers):
            self.answers, self.chats = list(answers), []

        async def structured(self, messages, schema, **kw):
            self.chats.append(messages)
            return schema.model_validate(self.answers.pop(0))

    same = {"goals": [{"name": "upgrade_plan", "description": "Log a request to upgrade the plan and quote it."},
                      {"name": "downgrade_plan", "description": "Log a request to downgrade the plan and quote it."}]}
    good = {"goals": [{"name": "upgrade_plan", "description": "Move the workspace to the Business plan and quote the new price."},
                      {"name": "recover_deleted_file", "description": "Restore a file deleted from the shared drive within the last thirty days."}]}
    llm = Recording([same, good])
    dom = load_catalogue().domain("saas")
    msgs = goal_messages(dom.domain, dom.brand, 2)

    def check(d: GoalList):
        gs = [Goal(domain="saas", name=g.name, description=g.description) for g in d.goals]
        return gs, goal_problems(gs)

    out = asyncio.run(ask_valid(llm, msgs, GoalList, agent="goal_writer", check=check,
                                max_reasks=2, show_answer=False))
    assert [g.name for g in out] == ["upgrade_plan", "recover_deleted_file"]
    reask = llm.chats[1]
    assert [m["role"] for m in reask] == ["system", "user", "assistant", "user"]
    assert "Log a request" not in str(reask) and "open with the same words" in reask[-1]["content"]
    assert reask[-1]["content"].startswith(msgs[-1]["content"])


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
