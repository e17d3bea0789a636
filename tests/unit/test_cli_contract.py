"""What every command promises: exit codes, one seed rule, configs refused when loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
import yaml

from bargein.cli import main
from bargein.config import load_preset, parse_config


def _main(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr): main() returns 0 and exits with any other code."""
    try:
        code = main(list(args))
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- --print-config ---------------------------------------------------------------------------

def test_print_config_as_the_readme_shows_it(capsys):
    code, out, _ = _main(capsys, "build", "--print-config", "demo")
    assert code == 0
    assert yaml.safe_load(out) == load_preset("demo").model_dump(mode="json")


def test_print_config_of_a_file_and_without_a_value(capsys, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("scenarios:\n  n: 3\n")
    code, out, _ = _main(capsys, "build", "--print-config", str(cfg))
    assert code == 0 and yaml.safe_load(out)["scenarios"]["n"] == 3
    code, out, _ = _main(capsys, "build", "--config", str(cfg), "--print-config")
    assert code == 0 and yaml.safe_load(out)["scenarios"]["n"] == 3
    code, _, err = _main(capsys, "build", "--preset", "demo", "--print-config", "full")
    assert code == 2 and "drop --config/--preset" in err


# ---- the seed rule ----------------------------------------------------------------------------

@pytest.mark.parametrize("args, seed", [
    ([], 7),                                   # the config's seed
    (["--seed", "99"], 99),                    # an explicit global --seed overrides it
    (["--seed", "99", "@", "--seed", "5"], 5),  # the command's own --seed wins
    (["--seed", "1234"], 1234),                # explicit, even when it equals the default
])
def test_seed_rule_for_build(capsys, args, seed):
    glob = args[:args.index("@")] if "@" in args else args
    local = args[args.index("@") + 1:] if "@" in args else []
    code, out, _ = _main(capsys, *glob, "build", "--preset", "demo", *local, "--print-config")
    assert code == 0 and yaml.safe_load(out)["seed"] == seed


def test_build_honours_the_global_seed(tmp_path):
    """A real (audio-less) build: the global --seed reaches the stages and the provenance."""
    cfg = tmp_path / "t.yaml"
    cfg.write_text(yaml.safe_dump({"name": "tiny", "seed": 11, "audio": {"enabled": False},
                                   "scenarios": {"n": 2, "domains": ["telecom"]}}))
    ids = {}
    for seed in ("3", "4"):
        work, out = tmp_path / f"w{seed}", tmp_path / f"r{seed}"
        r = subprocess.run([sys.executable, "-m", "bargein.cli", "--workdir", str(work), "--seed",
                            seed, "build", "--config", str(cfg), "--out", str(out)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        prov = json.loads((out / "manifest.json").read_text())["provenance"]
        assert prov["seed"] == int(seed) and prov["config"]["seed"] == int(seed)
        ids[seed] = [json.loads(line)["id"] for line in
                     (work / "scenarios.jsonl").read_text().splitlines()]
    from bargein.generators.scenarios import generate_scenarios

    for seed in ("3", "4"):                 # what the library makes with that seed
        lib = generate_scenarios(2, int(seed), domains=["telecom"], workdir=tmp_path / f"lib{seed}",
                                 progress=False)
        assert ids[seed] == [s.id for s in lib.outputs]
    assert ids["3"] != ids["4"]


# ---- configs refused when loaded --------------------------------------------------------------

def test_empty_config_is_refused_naming_the_fix(capsys, tmp_path):
    for text in ("", "# only a comment\n"):
        cfg = tmp_path / "empty.yaml"
        cfg.write_text(text)
        code, _, err = _main(capsys, "build", "--config", str(cfg))
        assert code == 2 and "is empty" in err and "--print-config demo" in err
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("data, key, fragment", [
    ({"llm": "bogus"}, "llm", "Valid forms"),
    ({"llm": "nosuch:model"}, "llm", "providers:"),
    ({"llm": "llamacpp:/nowhere/model.gguf"}, "llm", "does not exist"),
    ({"scenarios": {"domains": ["moon_base"]}}, "scenarios.domains", "valid domains"),
    ({"audio": {"user_voice": "piper:nobody"}}, "audio.user_voice", "Valid voices"),
])
def test_values_are_resolved_when_the_config_is_loaded(data, key, fragment):
    from bargein.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        parse_config(data, "x.yaml")
    assert f"{key}: " in str(e.value) and fragment in str(e.value)


def test_voices_of_disabled_audio_are_not_resolved():
    assert parse_config({"audio": {"enabled": False, "user_voice": "x:y"}}).audio.user_voice == "x:y"


def test_execution_settings_are_not_provenance():
    a = parse_config({"audio": {"workers": 1}})
    b = parse_config({"audio": {"workers": 2}, "budget_usd": 3.0})
    assert a != b and a.provenance() == b.provenance()
    assert "workers" not in a.provenance()["audio"] and "budget_usd" not in a.provenance()
    assert a.provenance()["audio"]["user_voice"] == a.audio.user_voice


@pytest.mark.parametrize("cmd", [["perturb", "--input", "x"], ["render", "--conversations", "x"],
                                 ["mask", "--rendered", "x"]])
@pytest.mark.parametrize("n", ["0", "-2"])
def test_zero_or_negative_workers_refused(capsys, cmd, n):
    code, _, err = _main(capsys, *cmd, "--workers", n)
    assert code == 2 and "--workers" in err and "Traceback" not in err


# ---- exit codes -------------------------------------------------------------------------------

def test_a_command_that_produces_nothing_exits_1_with_a_summary(capsys, tmp_path):
    wavs = tmp_path / "wavs"
    wavs.mkdir()
    sf.write(wavs / "silence.wav", np.zeros((32000, 2), dtype="float32"), 16000)
    code, out, err = _main(capsys, "--workdir", str(tmp_path / "w"), "perturb", "--input",
                           str(wavs), "--vad", "energy")
    assert code == 1 and "0 pairs" in out
    assert err.strip().splitlines()[-1].startswith("error: no perturbation pair was built")


def test_every_llm_call_refused_exits_1(tmp_path):
    from bargein.testing.loopback import LoopbackLLMServer

    with LoopbackLLMServer(api_key="sk-right") as srv:
        env = dict(os.environ, OPENAI_BASE_URL=srv.openai_base_url, OPENAI_API_KEY="sk-wrong")
        r = subprocess.run([sys.executable, "-m", "bargein.cli", "--workdir", str(tmp_path),
                            "generate", "scenarios", "--n", "2", "--llm", "openai:gpt-4o-mini"],
                           env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: no scenario was generated") and "401" in last


def test_success_exits_0_and_a_user_error_2(capsys, tmp_path):
    code, out, _ = _main(capsys, "--workdir", str(tmp_path), "generate", "scenarios", "--n", "2",
                         "--domains", "telecom")
    assert code == 0 and "2 scenarios" in out
    code, _, err = _main(capsys, "generate", "scenarios", "--n", "0")
    assert code == 2 and "--n" in err


@pytest.mark.parametrize("cmd", [["mask", "--rendered", "x", "--snr"],
                                 ["render", "--conversations", "x", "--snr"],
                                 ["generate", "scenarios", "--budget"]])
@pytest.mark.parametrize("value", ["nan", "-inf", "inf"])
def test_non_finite_numbers_refused(capsys, cmd, value):
    code, _, err = _main(capsys, *cmd, value)
    assert code == 2 and "not a finite number" in err and "Traceback" not in err


def test_non_finite_config_values_refused():
    from bargein.errors import ConfigError

    for data in ({"audio": {"snr_db": float("nan")}}, {"budget_usd": float("inf")}):
        with pytest.raises(ConfigError, match="finite"):
            parse_config(data, "x.yaml")


@pytest.mark.parametrize("text, fragment", [("{bad", "not a UTF-8 JSON file"),
                                            ("[1, 2]", "expected a JSON object"),
                                            (b"\xff\xfe{}", "not a UTF-8 JSON file")])
def test_release_build_malformed_provenance_is_one_line(capsys, tmp_path, text, fragment):
    prov = tmp_path / "p.json"
    prov.write_bytes(text if isinstance(text, bytes) else text.encode())
    code, _, err = _main(capsys, "release", "build", "--out", str(tmp_path / "r"), "--name", "x",
                         "--version", "1.0.0", "--sft", "sft.jsonl", "--provenance", str(prov))
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["../x y", "a/b", ".hidden", "x" * 97, ""])
def test_release_build_refuses_a_name_that_is_not_one_path_segment(capsys, tmp_path, name):
    code, _, err = _main(capsys, "release", "build", "--out", str(tmp_path / "r"), "--name", name,
                         "--version", "1.0.0", "--sft", "sft.jsonl")
    assert code == 2 and "is not a release name" in err
    assert not (tmp_path / "r").exists()
    with pytest.raises(Exception, match="name"):
        parse_config({"name": name})


def test_build_dry_run_prints_the_validated_dag_and_runs_nothing(capsys, tmp_path):
    work = tmp_path / "work"
    code, out, _ = _main(capsys, "--workdir", str(work), "build", "--preset", "demo", "--dry-run",
                         "--out", str(tmp_path / "rel"))
    assert code == 0
    lines = [ln.split()[1] for ln in out.splitlines() if ln[:1].isdigit()]
    assert lines == ["scenarios", "conversations", "baseline", "render", "mask", "perturb", "release"]
    assert "render.jsonl" in out and "user_voice=piper:joe" in out
    assert not work.exists() and not (tmp_path / "rel").exists()
