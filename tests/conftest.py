"""Test-wide isolation: every cache (ours and the Hub's) lives in a temp dir; the Hub is offline."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory, monkeypatch):
    root = tmp_path_factory.getbasetemp() / "caches"
    root.mkdir(exist_ok=True)
    monkeypatch.setenv("HF_HOME", str(root / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(root / "hf" / "datasets"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("BARGEIN_CACHE_DIR", str(root / "bargein"))
    monkeypatch.setenv("BARGEIN_PROGRESS", "0")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    yield


def pytest_collection_modifyitems(config, items):
    # everything is a unit test unless it says otherwise
    for item in items:
        if not any(m.name in ("integration", "slow", "network") for m in item.iter_markers()):
            item.add_marker(pytest.mark.unit)


@pytest.fixture(autouse=True)
def _restore_registry():
    """Tests may register backends, voices or engine options; give every test the installed ones."""
    from bargein import registry

    saved = registry.snapshot()
    yield
    registry.restore(saved)
