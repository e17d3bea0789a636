"""Prompt templates: every file has its header, shows with placeholders, renders strictly."""

from __future__ import annotations

import pytest

from bargein import prompts
from bargein.errors import ConfigError

AGENTS = {"round_planner", "rubric_generator", "verifier", "modifier", "kb_writer",
          "system_message_writer", "intent_writer", "goal_writer", "judge_tf", "judge_rq"}


def test_every_agent_has_a_prompt_file():
    names = set(prompts.list_prompts())
    assert AGENTS <= names
    assert {"assistant_simulator.normal", "assistant_simulator.interruption",
            "user_simulator.normal", "user_simulator.interrupting"} <= names


@pytest.mark.parametrize("name", prompts.list_prompts())
def test_show_renders_with_placeholders(name):
    tpl = prompts.load(name)
    assert tpl.agent and tpl.version and tpl.output and len(tpl.sha256) == 64
    text = prompts.show(name)
    assert text.strip()
    if tpl.variables:  # variables used only in conditions need not print
        assert any(f"<{v}" in text for v in tpl.variables), f"{name}: no placeholder shown"


def test_missing_variable_is_named():
    name = "judge_rq"
    with pytest.raises(ConfigError) as e:
        prompts.render(name)
    assert "is undefined" in str(e.value) and name in str(e.value)


def test_unknown_prompt_lists_valid_ones():
    with pytest.raises(ConfigError, match="Valid prompts: "):
        prompts.load("no_such_agent")


def test_sandbox_blocks_attribute_escape():
    from jinja2.exceptions import SecurityError

    env = prompts._env()
    with pytest.raises(SecurityError):
        env.from_string("{{ x.__class__.__mro__[1].__subclasses__() }}").render(x=1)
