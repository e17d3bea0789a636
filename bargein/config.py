"""The build configuration: one YAML file, validated, every default written back to provenance.

    bargein build --config my.yaml       # or --preset demo
    bargein build --print-config demo    # the full config with every default

A wrong key or value raises :class:`ConfigError` that names the key, the value and the fix, when
the config is loaded (not when the stage that uses it starts): the LLM spec, domains and voices
are resolved against what is installed. Settings that change how a build runs but not what it
writes (``audio.workers``, ``budget_usd``) are marked ``execution``: they are left out of the
provenance, so the manifest id depends on the data only.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bargein.errors import ConfigError
from bargein.executors import ExecutorConfig

PERTURBATION_TYPES = ("late_response", "early_entry", "hold_instead_of_shift",
                      "shift_instead_of_hold", "excessive_backchannel")


# a release name: one path segment, safe as a folder name and as the NAME of ORG/NAME on the Hub
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScenarioConfig(_Section):
    n: int = Field(50, ge=1, description="number of (domain, goal, intent) scenarios")
    domains: list[str] | None = Field(None, description="restrict to these domains (default all 10)")


class ConversationConfig(_Section):
    verify_rounds: int = Field(3, ge=0, le=10, description="verifier-modifier rounds")
    resamples: int = Field(2, ge=0, le=10, description="times a scenario whose conversation is "
                           "discarded (or cannot be simulated) is simulated again with a new seed")


class AudioConfig(_Section):
    enabled: bool = True
    sample_rate: int = Field(16000, ge=8000, le=48000)
    assistant_voice: str = "hibari:heart"
    user_voice: str = "piper:joe"
    noise: Literal["none", "white", "pink", "babble"] = "none"
    snr_db: float = Field(20.0, allow_inf_nan=False)
    telephony: bool = False
    backchannels: bool = False
    workers: int | None = Field(None, ge=1, description="render worker processes (default: cores)",
                                json_schema_extra={"execution": True})


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
    quality_thresholds: dict[str, float | str | dict[str, float]] | None = Field(
        None, description="figure of the quality report -> '<= X', '>= X' or {max: X} / {min: X}, "
        "e.g. {flagged_defect_rate_after_loop: '<= 0.05'}; the build refuses to release when one "
        "is missed")
    allow_below_threshold: bool = Field(False, description="release even when a quality "
                                        "threshold is missed (the card shows the figures)")


class BuildConfig(_Section):
    name: str = Field("bargein-ihbench", pattern=NAME_PATTERN, max_length=96)
    version: str = Field("0.1.0", pattern=r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
    seed: int = 7
    llm: str = Field("offline", description="offline | openai:MODEL | anthropic:MODEL | llamacpp:PATH")
    llm_agents: dict[str, str] = Field(
        {}, description="per-agent models, e.g. {verifier: 'openai:gpt-4o'}; other agents use llm")
    budget_usd: float | None = Field(None, ge=0, allow_inf_nan=False,
                                     description="LLM spend cap in USD: a limit on the run, not data",
                                     json_schema_extra={"execution": True})
    scenarios: ScenarioConfig = ScenarioConfig()
    conversations: ConversationConfig = ConversationConfig()
    audio: AudioConfig = AudioConfig()
    repair: RepairConfig = RepairConfig()
    timing: TimingConfig = TimingConfig()
    exports: ExportConfig = ExportConfig()
    release: ReleaseConfig = ReleaseConfig()
    executor: ExecutorConfig = Field(ExecutorConfig(), description="where CPU stages run: "
                                     "local (default) or ray; `executor: ray` is short for "
                                     "{kind: ray}", json_schema_extra={"execution": True})

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_shorthand(cls, v: Any) -> Any:
        return {"kind": v} if isinstance(v, str) else v

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)

    def provenance(self) -> dict[str, Any]:
        """The config as recorded in a release: every setting that shapes the data, none of the
        ``execution`` ones (worker counts), so the manifest id does not change with them."""
        return _without_execution(self)


def _without_execution(model: BaseModel) -> dict[str, Any]:
    from pydantic_core import to_jsonable_python

    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("execution"):
            continue
        value = getattr(model, name)
        out[name] = (_without_execution(value) if isinstance(value, BaseModel)
                     else to_jsonable_python(value))
    return out


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


def _check_values(cfg: BuildConfig) -> list[str]:
    """What the schema cannot see: names resolved against what is installed (LLM providers,
    domains, voices, a local model file). One line per wrong value, naming key, value and fix."""
    problems: list[str] = []

    def check(key: str, value: Any, fn) -> None:
        try:
            fn()
        except ConfigError as e:
            problems.append(f"  {key}: {value!r} — {e}")

    from bargein.llm.base import is_offline

    if not is_offline(cfg.llm):
        def llm() -> None:
            from bargein.llm import parse_spec

            name, model = parse_spec(cfg.llm)
            if name == "llamacpp" and not Path(model).expanduser().is_file():
                raise ConfigError(f"model file {model!r} does not exist; give the path of a .gguf file")

        check("llm", cfg.llm, llm)
    if cfg.llm_agents:
        def agents() -> None:
            from bargein.llm import check_agent_models

            check_agent_models(cfg.llm_agents)

        check("llm_agents", cfg.llm_agents, agents)
    if cfg.scenarios.domains:
        def domains() -> None:
            from bargein.generators.catalogue_loader import load_catalogue
            from bargein.generators.scenarios import resolve_domains

            resolve_domains(cfg.scenarios.domains, load_catalogue())

        check("scenarios.domains", cfg.scenarios.domains, domains)
    if cfg.audio.enabled:
        from bargein.audio.voices import get_voice

        for role in ("assistant", "user"):
            vid = getattr(cfg.audio, f"{role}_voice")
            check(f"audio.{role}_voice", vid, lambda vid=vid: get_voice(vid))
    return problems


def parse_config(data: dict[str, Any] | None, source: str = "<config>") -> BuildConfig:
    """Validate ``data`` (keys, types, ranges, then names against what is installed)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {source} must be a YAML mapping of keys to values, got "
                          f"{type(data).__name__}. Fix: `bargein build --print-config demo` shows one")
    try:
        cfg = BuildConfig.model_validate(data)
    except ValidationError as e:
        raise _explain(e, source) from None
    problems = _check_values(cfg)
    if problems:
        raise ConfigError(f"invalid config {source}:\n" + "\n".join(problems))
    return cfg


def load_config(path: str | Path) -> BuildConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist. Fix: pass an existing YAML "
                          "file, or use --preset demo")
    from bargein.store import read_yaml

    data = read_yaml(path, "config")
    if data is None:        # an empty file or only comments: never run the defaults by accident
        raise ConfigError(f"config {path} is empty. Fix: write the keys you want to change (`bargein "
                          "build --print-config demo` prints every key with its default), or use "
                          "--preset demo")
    return parse_config(data, str(path))


def presets() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("bargein.presets").iterdir()
                  if p.name.endswith(".yaml"))


def load_preset(name: str) -> BuildConfig:
    f = resources.files("bargein.presets") / f"{name}.yaml"
    if not f.is_file():
        raise ConfigError(f"unknown preset {name!r}; valid presets: {', '.join(presets())}")
    return parse_config(yaml.safe_load(f.read_text(encoding="utf-8")), f"preset {name}")
