"""The build configuration: one YAML file, validated, every default written back to provenance.

    bargein build --config my.yaml       # or --preset demo
    bargein build --print-config demo    # the full config with every default

A wrong key or value raises :class:`ConfigError` that names the key, the value and the fix.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bargein.errors import ConfigError

PERTURBATION_TYPES = ("late_response", "early_entry", "hold_instead_of_shift",
                      "shift_instead_of_hold", "excessive_backchannel")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScenarioConfig(_Section):
    n: int = Field(50, ge=1, description="number of (domain, goal, intent) scenarios")
    domains: list[str] | None = Field(None, description="restrict to these domains (default all 10)")


class ConversationConfig(_Section):
    verify_rounds: int = Field(3, ge=0, le=10, description="verifier-modifier rounds")


class AudioConfig(_Section):
    enabled: bool = True
    sample_rate: int = Field(16000, ge=8000, le=48000)
    assistant_voice: str = "hibari:heart"
    user_voice: str = "piper:joe"
    noise: Literal["none", "white", "pink", "babble"] = "none"
    snr_db: float = 20.0
    telephony: bool = False
    backchannels: bool = False
    workers: int | None = Field(None, ge=1, description="render worker processes (default: cores)")


class RepairConfig(_Section):
    enabled: bool = True
    signals: list[Literal["white_noise", "silence", "music"]] = ["white_noise", "silence", "music"]
    windows_ms: list[int] = [0]
    max_items: int | None = Field(None, ge=1)


class TimingConfig(_Section):
    enabled: bool = True
    types: list[Literal[PERTURBATION_TYPES]] = list(PERTURBATION_TYPES)  # type: ignore[valid-type]
    per_type: int = Field(4, ge=1)


class ExportConfig(_Section):
    sft: bool = True
    dpo: bool = True


class ReleaseConfig(_Section):
    license: str = "cc-by-4.0"
    pretty_name: str | None = None
    changelog: str | None = None


class BuildConfig(_Section):
    name: str = Field("bargein-ihbench", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: str = Field("0.1.0", pattern=r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
    seed: int = 7
    llm: str = Field("offline", description="offline | openai:MODEL | anthropic:MODEL | llamacpp:PATH")
    budget_usd: float | None = Field(None, ge=0)
    scenarios: ScenarioConfig = ScenarioConfig()
    conversations: ConversationConfig = ConversationConfig()
    audio: AudioConfig = AudioConfig()
    repair: RepairConfig = RepairConfig()
    timing: TimingConfig = TimingConfig()
    exports: ExportConfig = ExportConfig()
    release: ReleaseConfig = ReleaseConfig()

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def _explain(err: ValidationError, source: str) -> ConfigError:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        value = e.get("input")
        if e["type"] == "extra_forbidden":
            fix = "remove it or check its spelling; `bargein build --print-config demo` lists every key"
        else:
            fix = e["msg"]
        lines.append(f"  {key}: {value!r} — {fix}")
    return ConfigError(f"invalid config {source}:\n" + "\n".join(lines))


def parse_config(data: dict[str, Any] | None, source: str = "<config>") -> BuildConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {source} must be a YAML mapping, got {type(data).__name__}")
    try:
        return BuildConfig.model_validate(data)
    except ValidationError as e:
        raise _explain(e, source) from None


def load_config(path: str | Path) -> BuildConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist. Fix: pass an existing YAML "
                          "file, or use --preset demo")
    from bargein.store import read_yaml

    return parse_config(read_yaml(path, "config"), str(path))


def presets() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("bargein.presets").iterdir()
                  if p.name.endswith(".yaml"))


def load_preset(name: str) -> BuildConfig:
    f = resources.files("bargein.presets") / f"{name}.yaml"
    if not f.is_file():
        raise ConfigError(f"unknown preset {name!r}; valid presets: {', '.join(presets())}")
    return parse_config(yaml.safe_load(f.read_text(encoding="utf-8")), f"preset {name}")
