"""The CLI: every command loads; user errors are one clear line, -v shows the traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bargein.cli import COMMANDS, SCORE_COMMANDS


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bargein.cli", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("cmd", [[c] for c in COMMANDS] + [["score", c] for c in SCORE_COMMANDS])
def test_every_command_is_built(cmd):
    from click.testing import CliRunner

    from bargein.cli import cli

    res = CliRunner().invoke(cli, [*cmd, "--help"])
    assert res.exit_code == 0, res.output
    assert "not built yet" not in res.output


def test_user_error_is_one_line_without_traceback():
    res = _run("build", "--preset", "huge")
    assert res.returncode == 2
    assert res.stderr.startswith("error: unknown preset 'huge'; valid presets: demo")
    assert "Traceback" not in res.stderr
    verbose = _run("-v", "build", "--preset", "huge")
    assert verbose.returncode != 0 and "Traceback" in verbose.stderr


def test_bad_config_names_key_and_fix(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("audio:\n  sample_rat: 16000\nscenarios:\n  domains: [telecom, moon_base]\n")
    res = _run("build", "--config", str(cfg))
    assert res.returncode == 2 and "audio.sample_rat" in res.stderr and "spelling" in res.stderr


def test_unknown_domain_lists_valid_ones(tmp_path):
    res = _run("--workdir", str(tmp_path), "generate", "scenarios", "--n", "2", "--domains", "moon_base")
    assert res.returncode == 2 and "moon_base" in res.stderr and "telecom" in res.stderr
