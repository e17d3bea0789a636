"""VAD backends on real synthesised speech and on hand-made score sequences."""

from __future__ import annotations

import numpy as np
import pytest

from bargein.audio.vad import VADSettings, get_vad, postprocess
from bargein.errors import AudioError, ConfigError
from bargein.registry import names


@pytest.fixture(scope="module")
def speech():
    """One espeak sentence placed at 0.50 s in 3 s of silence (16 kHz), with its true span."""
    from bargein.audio.io import resample
    from bargein.audio.tts import get_engine

    sp = get_engine("espeak").synthesize("Could you tell me which plan I am on at the moment.", "en-us")
    y = resample(sp.samples, sp.sample_rate, 16000)
    nz = np.flatnonzero(np.abs(y) > 1e-3)
    y = y[nz[0]: nz[-1] + 1]
    x = np.zeros(int(16000 * (1.5 + len(y) / 16000)), dtype=np.float32)
    x[8000: 8000 + len(y)] = y
    return x, (0.5, 0.5 + len(y) / 16000)


def test_registered_backends():
    assert {"silero", "webrtc", "energy"} <= set(names("vad"))
    with pytest.raises(ConfigError, match="valid: .*silero"):
        get_vad("nope")


@pytest.mark.parametrize("name", ["silero", "webrtc", "energy"])
def test_detects_the_sentence(speech, name):
    x, (a, b) = speech
    segs = get_vad(name).segments(x, 16000)
    assert segs, f"{name} found no speech"
    assert abs(segs[0].start_s - a) < 0.12, (name, segs)
    assert abs(segs[-1].end_s - b) < 0.2, (name, segs)
    assert all(s.start_s >= a - 0.15 and s.end_s <= b + 0.25 for s in segs)


def test_silero_resamples_other_rates(speech):
    from bargein.audio.io import resample

    x, _ = speech
    vad = get_vad("silero")
    ref = vad.segments(x, 16000)
    other = vad.segments(resample(x, 16000, 22050), 22050)
    assert len(other) == len(ref)
    assert abs(other[0].start_s - ref[0].start_s) < 0.04
    assert abs(other[-1].end_s - ref[-1].end_s) < 0.04


def test_silence_and_noise_floor_give_nothing():
    rng = np.random.default_rng(0)
    quiet = (rng.standard_normal(16000 * 2) * 1e-4).astype(np.float32)
    assert get_vad("silero").segments(quiet, 16000) == []
    assert get_vad("energy").segments(np.zeros(16000, np.float32), 16000) == []


def test_channel_segments_per_channel(speech):
    x, (a, _) = speech
    stereo = np.stack([x, np.zeros_like(x)], axis=1)
    left, right = get_vad("energy").channel_segments(stereo, 16000)
    assert left and right == []
    assert abs(left[0].start_s - a) < 0.06


def test_bad_input_is_a_clear_error():
    vad = get_vad("energy")
    with pytest.raises(AudioError, match="NaN"):
        vad.segments(np.array([0.0, np.nan, 0.1], dtype=np.float32), 16000)
    with pytest.raises(AudioError, match="channel_segments"):
        vad.segments(np.zeros((100, 2), np.float32), 16000)
    with pytest.raises(ConfigError, match="threshold"):
        VADSettings(threshold=1.5)


def _scores(pattern: str) -> np.ndarray:
    return np.array([1.0 if ch == "#" else 0.0 for ch in pattern])


def test_postprocess_min_speech_min_silence_pad_and_merge():
    hop = 0.032
    s = VADSettings(threshold=0.5, min_speech_ms=120, min_silence_ms=120, pad_ms=40, merge_gap_ms=180)
    # 3 windows (96 ms) of speech: start counts from the window, end at the silence start
    # -> 96 ms is not > 120 ms, dropped
    assert postprocess(_scores("....###......."), hop, 14 * hop, s) == []
    # a 2-window dip (64 ms < 120 ms min silence) does not split the segment
    segs = postprocess(_scores("..######..######......"), hop, 22 * hop, s)
    assert len(segs) == 1
    assert segs[0].start_s == pytest.approx(2 * hop - 0.04)
    assert segs[0].end_s == pytest.approx(16 * hop + 0.04)
    # a 6-window gap (192 ms) splits; after padding the gap is 112 ms < 180 ms: merged again
    assert len(postprocess(_scores("..######......######......"), hop, 26 * hop, s)) == 1
    # a 12-window gap (384 ms) stays split; padding is 40 ms on both sides of both segments
    segs = postprocess(_scores("..######............######......"), hop, 32 * hop, s)
    assert len(segs) == 2
    assert segs[1].start_s - segs[0].end_s == pytest.approx(12 * hop - 0.08)


def test_silero_channels_in_parallel_match_sequential_runs():
    """Both channels of a clip on two model instances (two threads) give exactly the
    probabilities of one instance run over the channels one after the other."""
    from bargein.audio.vad import SileroVAD, silero_probs, silero_probs_channels

    rng = np.random.default_rng(3)
    x = np.zeros((16000 * 4, 2), dtype=np.float32)
    x[8000:40000, 0] = 0.3 * np.sin(np.arange(32000) * 0.07) * rng.standard_normal(32000)
    x[30000:60000, 1] = 0.2 * rng.standard_normal(30000)
    m = SileroVAD()
    seq = [silero_probs(np.ascontiguousarray(x[:, c]), 16000, m) for c in (0, 1)]
    par = silero_probs_channels(x, 16000, (SileroVAD(), SileroVAD()))
    assert all(np.array_equal(a, b) for a, b in zip(seq, par))
    assert not np.array_equal(seq[0], seq[1])
