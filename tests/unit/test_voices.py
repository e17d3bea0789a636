"""The voice registry and per-conversation voice assignment."""

from __future__ import annotations

from collections import Counter

import pytest

from bargein.audio.voices import (DEFAULT_ASSISTANT, DEFAULT_USER, assign_voices, get_tts, get_voice,
                                  list_voices, register_voice, set_engine_options)
from bargein.errors import ConfigError
from bargein.records.audio import Voice


def test_builtin_voices():
    ids = {v.id for v in list_voices()}
    assert {"piper:joe", "hibari:heart", "espeak:en-us+m3", "espeak:en-gb-scotland", "openai:alloy"} <= ids
    joe, heart = get_voice("piper:joe"), get_voice("hibari:heart")
    assert (joe.engine, joe.name, joe.sex, joe.accent, joe.sample_rate) == ("piper", "joe", "male", "en-us", 22050)
    assert (heart.sex, heart.sample_rate) == ("female", 24000)
    es = list_voices("espeak")
    assert len(es) == 8 * 13 and all(v.engine == "espeak" for v in es)
    assert len({v.accent for v in es}) == 8
    assert get_voice("espeak:en-029+f2").sex == "female" and get_voice("espeak:en-029+m2").sex == "male"
    assert [v.id for v in list_voices()] == sorted(v.id for v in list_voices())


def test_voice_sample_rates_match_engines():
    for vid in ("piper:joe", "hibari:heart", "espeak:en-gb+f3"):
        tts, name = get_tts(vid)
        assert tts.sample_rate == get_voice(vid).sample_rate
        assert name in tts.voices()


def test_espeak_aliases_and_extra_variants():
    assert get_voice("espeak:en-sc").id == "espeak:en-gb-scotland"
    v = get_voice("espeak:en-us+klatt")
    assert v.engine == "espeak" and v.name == "en-us+klatt"


@pytest.mark.parametrize("bad,match", [
    ("piper:bob", r"unknown voice 'piper:bob'.*Valid voices: piper:joe"),
    ("espeak:en-zz", r"unknown voice 'espeak:en-zz'.*espeak:en-029"),
    ("joe", r"must look like 'engine:name'.*piper:joe"),
    ("nosuch:voice", r"unknown voice.*hibari:heart"),
])
def test_unknown_voice_lists_valid(bad, match):
    with pytest.raises(ConfigError, match=match):
        get_voice(bad)


def test_get_tts_is_cached_per_process():
    a, name = get_tts("espeak:en-gb+f3")
    b, _ = get_tts("espeak:en-us")
    assert a is b and name == "en-gb+f3"


def test_assign_defaults_and_determinism():
    assert assign_voices("conv-1", 7) == {"assistant": DEFAULT_ASSISTANT, "user": DEFAULT_USER}
    assert assign_voices("conv-1", 7, user="espeak:en-gb+f3")["user"] == "espeak:en-gb+f3"
    pool = ["espeak:en-us+m3", "espeak:en-gb+f3", "espeak:en-029+m2", "piper:joe"]
    a = assign_voices("conv-1", 7, pool=pool)
    assert a == assign_voices("conv-1", 7, pool=list(reversed(pool)))   # order of the pool is irrelevant
    seen = {tuple(sorted(assign_voices(f"conv-{i}", 7, pool=pool).items())) for i in range(40)}
    assert len(seen) > 4                                                 # it varies per conversation
    for i in range(40):
        got = assign_voices(f"conv-{i}", 7, pool=pool)
        assert got["assistant"] != got["user"] and set(got.values()) <= set(pool)


def test_role_pools_sample_per_conversation():
    users = ["espeak:en-us+f1", "espeak:en-gb+m2", "piper:joe"]
    counts = Counter(assign_voices(f"c{i}", 3, pool={"user": users})["user"] for i in range(90))
    assert set(counts) == set(users) and min(counts.values()) >= 15
    assert {assign_voices(f"c{i}", 3, pool={"user": users})["assistant"] for i in range(20)} == {DEFAULT_ASSISTANT}
    other_seed = [assign_voices(f"c{i}", 4, pool={"user": users})["user"] for i in range(30)]
    assert other_seed != [assign_voices(f"c{i}", 3, pool={"user": users})["user"] for i in range(30)]


def test_assign_rejects_bad_config():
    with pytest.raises(ConfigError, match="voices.user.*unknown voice 'piper:amy'"):
        assign_voices("c", 1, user="piper:amy")
    with pytest.raises(ConfigError, match="unknown role"):
        assign_voices("c", 1, pool={"agent": ["piper:joe"]})
    with pytest.raises(ConfigError, match="voices.pool.user is empty"):
        assign_voices("c", 1, pool={"user": []})
    with pytest.raises(ConfigError, match="unknown voice 'espeak:xx'"):
        assign_voices("c", 1, pool=["piper:joe", "espeak:xx"])


def test_register_custom_voice_and_engine_options():
    v = register_voice(Voice(engine="openai", name="my-clone", sex="female", sample_rate=24000))
    assert v.id == "openai:my-clone" and get_voice("openai:my-clone") == v
    set_engine_options("openai", base_url="http://127.0.0.1:9/v1", max_retries=0)
    try:
        tts, name = get_tts("openai:my-clone")
        assert name == "my-clone" and "my-clone" in tts.voices()
        assert tts.base_url == "http://127.0.0.1:9/v1"
    finally:
        set_engine_options("openai")
