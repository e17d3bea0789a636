"""Backends as plugins: entry points found by name in every process, worker processes included.

The plugin is a package written to a temp folder with its ``*.dist-info/entry_points.txt``, on
``sys.path`` and ``PYTHONPATH`` (what ``pip install`` gives): bargein never names it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bargein import registry
from bargein.audio.render import RenderConfig, render_conversations
from bargein.audio.voices import get_voice, list_voices, register_voice
from bargein.errors import ConfigError
from bargein.records import ChatMessage, RenderedDialogue, Voice
from bargein.runner import Stage, run_stage
from bargein.store import read_jsonl

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import _plugin_pkg  # noqa: E402
from doubles import render_convs as C  # noqa: E402
import _runner_stages as S  # noqa: E402


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    root = _plugin_pkg.install(tmp_path / "site-packages")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    yield root
    sys.modules.pop(_plugin_pkg.PACKAGE, None)


def _convs(n: int = 3):
    return [C.verified(seed=s, variant=s % 2) for s in range(1, n + 1)]


TONE = RenderConfig(assistant_voice="tone:high", user_voice="tone:low", label_vad="energy")


def test_names_are_complete_before_anything_is_imported():
    code = ("import sys, json; from bargein import registry;"
            "names = {k: registry.names(k) for k in registry.KINDS};"
            "print(json.dumps([names, sorted(m for m in sys.modules if m.startswith('bargein.')"
            " and m not in ('bargein.registry', 'bargein.errors', 'bargein.seeding'))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    names, imported = json.loads(out)
    assert {"silero", "webrtc", "energy"} <= set(names["vad"])
    assert {"espeak", "piper", "hibari", "openai", "coqui"} <= set(names["tts"])
    assert {"synth", "whisper", "mfa"} <= set(names["aligner"])
    assert {"openai", "anthropic", "llamacpp"} <= set(names["llm"])
    assert {"builtin", "vap"} <= set(names["predictor"]) and "builtin" in names["voices"]
    assert imported == [], "listing backends must not import them"


def test_unknown_backend_names_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown vad backend 'nope'; valid: energy, silero, webrtc"):
        registry.create("vad", "nope")
    with pytest.raises(ConfigError, match="unknown backend kind"):
        registry.names("vads")


def test_plugin_backends_are_found_by_name(plugin):
    assert "tone" in registry.names("tts") and "tonevad" in registry.names("vad")
    assert registry.installed("vad")["tonevad"] == "bargein_tone_plugin:ToneVAD"
    assert get_voice("tone:low").sample_rate == 16000 and "tone:high" in {v.id for v in list_voices("tone")}
    assert registry.describe("tts", "tone").startswith("Tone-per-word speech (plugin)")
    assert registry.get("vad", "tonevad") is registry.get("vad", "tonevad")   # one per process
    from bargein.audio.vad import get_vad

    assert get_vad("tonevad").id == "tonevad"


def test_plugin_voice_renders_with_two_workers_as_with_one(plugin, tmp_path):
    two = render_conversations(_convs(), workdir=tmp_path / "two", seed=7, config=TONE, workers=2)
    assert not two.failures and len(two.outputs) == 3
    for rd in two.outputs:
        assert rd.voices == {"assistant": "tone:high", "user": "tone:low"} and rd.engines == ("tone@1",)
        assert (tmp_path / "two" / rd.audio_path).stat().st_size > 1000
    one = render_conversations(_convs(), workdir=tmp_path / "one", seed=7, config=TONE, workers=1)
    assert (tmp_path / "two" / "render.jsonl").read_bytes() == (tmp_path / "one" / "render.jsonl").read_bytes()
    for rd in one.outputs:
        assert (tmp_path / "one" / rd.audio_path).read_bytes() == (tmp_path / "two" / rd.audio_path).read_bytes()


def test_voice_and_engine_registered_in_process_reach_the_workers(plugin, tmp_path):
    """Issue: a voice added with register_voice failed every item ("unknown voice") at workers=2."""
    from bargein_tone_plugin import ToneTTS

    registry.register("tts", "tone2", ToneTTS)
    register_voice(Voice(engine="tone2", name="deep", sample_rate=16000))
    register_voice(Voice(engine="tone", name="mid", sample_rate=16000))
    cfg = TONE.model_copy(update={"assistant_voice": "tone2:deep", "user_voice": "tone:mid"})
    res = render_conversations(_convs(), workdir=tmp_path / "w", seed=3, config=cfg, workers=2)
    assert not res.failures, res.failures[0].reason
    assert {tuple(sorted(rd.voices.values())) for rd in res.outputs} == {("tone2:deep", "tone:mid")}


def test_plugin_vad_runs_in_worker_processes(plugin, tmp_path):
    stage = Stage(name="regions", fn=S.vad_regions, output=ChatMessage, config={"vad": "tonevad"}, kind="cpu")
    items = [ChatMessage(role="user", content=" ".join(["word"] * k), id=f"m{k}") for k in (1, 2, 3, 4)]
    res = run_stage(stage, items, workdir=tmp_path, seed=1, workers=2)
    assert not res.failures, res.failures[0].reason
    got = {o.id: json.loads(o.content) for o in res.outputs}
    for k in (1, 2, 3, 4):
        vad_id, regions = got[f"m{k}_regions"]
        assert vad_id == "tonevad" and regions
        # the tones occupy [0, 0.22 k + 0.08 (k - 1)] s; the detector's regions lie inside, to a frame
        assert regions[0][0] >= 0 and regions[-1][1] <= 0.30 * k + 0.05


def test_without_the_plugin_its_voice_is_an_unknown_voice(tmp_path):
    res = render_conversations(_convs(1), workdir=tmp_path, seed=7, config=TONE, workers=1)
    assert not res.outputs and "unknown voice 'tone:high'" in res.failures[0].reason
    assert read_jsonl(tmp_path / "render.jsonl", RenderedDialogue) == []
