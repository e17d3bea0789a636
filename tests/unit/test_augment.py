"""Augmentation: noise at an SNR (white, pink, babble of real voices), mu-law telephony, records."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from doubles import render_convs as RC  # noqa: E402

from bargein.audio.augment import (  # noqa: E402
    BABBLE_SENTENCES, augment, make_augmentation, measured_snr_db, pink_noise, telephone,
)
from bargein.audio.io import active_rms  # noqa: E402
from bargein.audio.mix import prepare_speech  # noqa: E402
from bargein.audio.render import RenderConfig, TTSPool, render_conversations  # noqa: E402
from bargein.errors import ConfigError  # noqa: E402
from bargein.records import Augmentation  # noqa: E402

pytest.importorskip("espeakng_loader", reason="espeak-ng (extra 'espeak') is needed for fast real TTS")

SR = 16000
A, U = "espeak:en-us+f3", "espeak:en-gb"


@pytest.fixture(scope="module")
def speech():
    pool = TTSPool(None)
    x, _ = prepare_speech(pool.synthesize(A, "Your claim needs three documents: a photo of the "
                                          "damage, the receipt, and your policy number."), SR)
    y, _ = prepare_speech(pool.synthesize(U, "Actually, it was my work address, not my home."), SR)
    n = max(len(x), len(y)) + SR // 2
    st = np.zeros((n, 2), np.float32)
    st[:len(y), 0], st[:len(x), 1] = 0.3 * y / np.abs(y).max(), 0.3 * x / np.abs(x).max()
    return st


@pytest.fixture(scope="module")
def babble_sources():
    pool = TTSPool(None)
    return [prepare_speech(pool.synthesize(v, t), SR)[0]
            for v in ("espeak:en-029+m3", "espeak:en-gb-scotland+f4") for t in BABBLE_SENTENCES[:4]]


@pytest.mark.parametrize("kind", ["white", "pink", "babble"])
@pytest.mark.parametrize("snr", [5.0, 20.0])
def test_noise_at_the_requested_snr(speech, babble_sources, kind, snr):
    aug = make_augmentation(kind, snr, seed=11)
    out = augment(speech, SR, aug, babble_sources=babble_sources)
    assert out.shape == speech.shape and out.dtype == np.float32
    assert not np.array_equal(out, speech)
    for c in (0, 1):
        assert abs(measured_snr_db(speech[:, c], out[:, c], SR) - snr) < 0.5
        assert np.abs(out[:, c]).max() <= 10 ** (-1 / 20) + 1e-6
    # noise also fills the silence: the pause after the shorter channel is no longer silent
    assert np.abs(out[-SR // 4:, 0]).max() > 0
    # the clean input is untouched; seeded: same record -> same samples, other seed -> other noise
    assert np.array_equal(augment(speech, SR, aug, babble_sources=babble_sources), out)
    other = augment(speech, SR, aug.with_(seed=12), babble_sources=babble_sources)
    assert not np.array_equal(other, out)


def test_pink_noise_falls_3db_per_octave():
    x = pink_noise(1 << 18, np.random.default_rng(0))
    f = np.fft.rfftfreq(len(x), 1 / SR)
    p = np.abs(np.fft.rfft(x)) ** 2

    def band(lo):
        return p[(f >= lo) & (f < 2 * lo)].mean()

    slopes = [10 * np.log10(band(lo) / band(2 * lo)) for lo in (100, 400, 1600)]
    assert all(2.0 < s < 4.0 for s in slopes), slopes


def test_babble_is_speech_like(speech, babble_sources):
    aug = make_augmentation("babble", 10.0, seed=3, babble_voices=("espeak:en-029+m3",))
    out = augment(np.zeros((SR * 3, 1), np.float32) + speech[: SR * 3, :1], SR, aug,
                  babble_sources=babble_sources, babble_talkers=3)
    noise = out[:, 0] - speech[: SR * 3, 0] * (np.dot(out[:, 0], speech[: SR * 3, 0])
                                               / np.dot(speech[: SR * 3, 0], speech[: SR * 3, 0]))
    f = np.fft.rfftfreq(len(noise), 1 / SR)
    p = np.abs(np.fft.rfft(noise)) ** 2
    assert p[(f > 100) & (f < 1000)].sum() > 5 * p[f > 5000].sum()   # speech band, unlike white
    assert aug.babble_voices == ("espeak:en-029+m3",)
    with pytest.raises(Exception, match="babble noise needs"):
        augment(speech, SR, aug, babble_sources=[])


def test_telephony_band_limits_and_quantises(speech):
    out = telephone(speech[:, 1], SR)
    assert out.shape == speech[:, 1].shape
    f = np.fft.rfftfreq(len(out), 1 / SR)
    p_in, p_out = np.abs(np.fft.rfft(speech[:, 1])) ** 2, np.abs(np.fft.rfft(out)) ** 2
    assert p_out[f > 4200].sum() < 1e-3 * p_out.sum() < p_in[f > 4200].sum()
    band = (f > 500) & (f < 3000)
    assert 0.5 < p_out[band].sum() / p_in[band].sum() < 2.0        # speech band kept
    assert not np.allclose(out, speech[:, 1], atol=1e-3)
    aug = make_augmentation("none", None, telephony=True)
    assert aug.snr_db is None and np.array_equal(augment(speech, SR, aug)[:, 1],
                                                 np.clip(out, -1, 1) * min(1.0, 10 ** (-1 / 20) / np.abs(out).max()))


def test_bad_parameters_are_named():
    with pytest.raises(ConfigError, match="noise='hiss'"):
        make_augmentation("hiss", 20)
    with pytest.raises(ConfigError, match="snr_db=99"):
        make_augmentation("white", 99)
    assert make_augmentation("none", 99) == Augmentation()


def test_render_keeps_the_clean_audio(tmp_path):
    base = RenderConfig(assistant_voice=A, user_voice=U, label_vad="none")
    noisy = base.model_copy(update={"noise": "pink", "snr_db": 10.0, "telephony": True})
    conv = RC.verified(1)
    pool = TTSPool(tmp_path / "tts_cache")
    clean = render_conversations([conv], workdir=tmp_path / "a", seed=5, config=base, pool=pool,
                                 progress=False).outputs[0]
    rd = render_conversations([conv], workdir=tmp_path / "b", seed=5, config=noisy, pool=pool,
                              progress=False).outputs[0]
    assert rd.augmentation.noise == "pink" and rd.augmentation.telephony and rd.augmentation.snr_db == 10
    assert rd.augmentation.seed != 0 and clean.augmentation.noise == "none"
    # the clean render of the noisy config is the plain render: same timeline, same samples
    assert [s.start_s for s in rd.segments] == [s.start_s for s in clean.segments]
    c1, _ = sf.read(tmp_path / "a" / clean.audio_path, dtype="float32")
    c2, _ = sf.read(tmp_path / "b" / rd.clean_audio_path, dtype="float32")
    n, _ = sf.read(tmp_path / "b" / rd.audio_path, dtype="float32")
    assert np.array_equal(c1, c2) and n.shape == c1.shape and not np.array_equal(n, c1)
    assert active_rms(n[:, 0], SR) > 0
    seg = next(s for s in rd.segments if s.kind == "message")
    clip, _ = sf.read(tmp_path / "b" / seg.clip_path, dtype="float32")
    a = round(seg.start_s * SR)
    assert np.array_equal(clip, n[a:a + len(clip), seg.channel])     # clips cut from the final mix
