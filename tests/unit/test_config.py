"""Build config: presets load, every default is explicit, bad keys and values are named."""

from __future__ import annotations

import pytest
import yaml

from bargein.config import BuildConfig, load_config, load_preset, parse_config, presets
from bargein.errors import ConfigError


def test_presets_load_and_round_trip(tmp_path):
    assert {"demo", "full"} <= set(presets())
    demo = load_preset("demo")
    assert demo.scenarios.n == 10 and demo.llm == "offline"
    path = tmp_path / "c.yaml"
    path.write_text(demo.to_yaml())
    assert load_config(path) == demo
    assert set(yaml.safe_load(demo.to_yaml())) == set(BuildConfig.model_fields)


@pytest.mark.parametrize("data, key, fragment", [
    ({"audio": {"sample_rat": 16000}}, "audio.sample_rat", "spelling"),
    ({"scenarios": {"n": 0}}, "scenarios.n", "greater than or equal to 1"),
    ({"timing": {"types": ["late"]}}, "timing.types.0", "late_response"),
    ({"version": "one"}, "version", "pattern"),
])
def test_bad_values_name_key_value_and_fix(data, key, fragment):
    with pytest.raises(ConfigError) as e:
        parse_config(data, "x.yaml")
    assert key in str(e.value) and fragment in str(e.value) and "x.yaml" in str(e.value)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="valid presets: demo"):
        load_preset("huge")
