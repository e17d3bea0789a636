"""The fidelity instruments on signals whose answers are known by construction (issue 14 §5).

Each check is computed here by hand from the synthetic signal: bursts of noise at known times,
word timings off by a known amount, a cut whose audio ends at a known sample.
"""

from __future__ import annotations

import numpy as np
import pytest

from bargein.audio import fidelity as F
from bargein.records import MaskedItem, MaskSpan, RenderedDialogue, Segment, WordTiming
from bargein.releases.card import fidelity_section

SR = 16000


def _bursts(spans: list[tuple[float, float]], duration_s: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros(int(duration_s * SR), np.float32)
    for a, b in spans:
        n = int(b * SR) - int(a * SR)
        x[int(a * SR): int(b * SR)] = 0.1 * rng.standard_normal(n).astype(np.float32)
    return x


def test_activity_finds_bursts_to_the_millisecond():
    x = _bursts([(0.1, 0.3), (0.5, 0.9)], 1.2)
    runs = F.activity(x, SR).runs()
    assert len(runs) == 2
    for (a, b), (ra, rb) in zip([(0.1, 0.3), (0.5, 0.9)], runs):
        assert abs(ra - a) <= 0.004 and abs(rb - b) <= 0.004, runs


def _dialogue(words, stop=None, cut=None, duration=2.0) -> RenderedDialogue:
    seg = Segment(message_index=0, channel=1, start_s=words[0].start_s, end_s=stop or words[-1].end_s,
                  text=" ".join(w.word for w in words), words=tuple(words), voice_id="test:voice",
                  stop_s=stop, cut_s=cut, heard_text="a b" if cut else None)
    segs = [seg]
    if cut is not None:
        segs.append(Segment(message_index=1, channel=0, start_s=cut, end_s=cut + 0.4, text="wait",
                            voice_id="test:user"))
    return RenderedDialogue(conversation_id="c", audio_path="x.flac", duration_s=duration,
                            segments=tuple(segs))


def test_word_end_errors_are_measured_against_the_sound():
    """Sound: word A 0.10-0.40, pause, word B 0.70-1.00. Timings say A ends at 0.35 (50 ms early)."""
    ch1 = _bursts([(0.1, 0.4), (0.7, 1.0)], 2.0)
    audio = np.stack([np.zeros_like(ch1), ch1], axis=1)
    words = [WordTiming(word="alpha", start_s=0.1, end_s=0.35), WordTiming(word="beta", start_s=0.7, end_s=1.0)]
    got = F.word_boundaries([(_dialogue(words), audio)])["test:voice"]
    assert got.words == 2 and got.short == 0 and got.in_silence == 0
    assert len(got.errors_ms) == 2                      # the pause and the natural end
    assert got.errors_ms[0] == pytest.approx(-50, abs=4) and got.errors_ms[1] == pytest.approx(0, abs=4)
    assert got.summary()["word_end_within_30ms"] == 0.5
    silent = [WordTiming(word="alpha", start_s=0.1, end_s=0.4), WordTiming(word="ghost", start_s=0.45, end_s=0.6),
              WordTiming(word="beta", start_s=0.7, end_s=1.0)]
    got = F.word_boundaries([(_dialogue(silent), audio)])["test:voice"]
    assert got.in_silence == 1


def test_cut_checks_measure_stop_cut_and_overlap():
    """The assistant's sound ends at 0.82 while the record says 0.90; the user starts at 0.60."""
    ch1 = _bursts([(0.1, 0.82)], 2.0)
    ch0 = _bursts([(0.6, 1.0)], 2.0, seed=1)
    audio = np.stack([ch0, ch1], axis=1)
    words = [WordTiming(word="a", start_s=0.1, end_s=0.5), WordTiming(word="b", start_s=0.5, end_s=0.9)]
    (c,) = F.cut_checks(_dialogue(words, stop=0.9, cut=0.6), audio)
    assert c.stop_error_ms == pytest.approx(-80, abs=4)
    assert c.cut_error_ms == pytest.approx(0, abs=4)
    assert c.overlap_error_ms == pytest.approx(-80, abs=6)
    assert (c.partial_word, c.partial_heard_ms) == ("b", pytest.approx(100.0))   # the cut fell in "b"


def test_asr_that_only_completes_the_cut_word_is_told_apart():
    """Whisper hears "...confirm the email" where the cut fell 80 ms into "email": a disagreement
    (heard text is what ended before the cut), told apart as ASR going on past the heard words;
    an ASR that hears the heard words differently is not."""
    words = [WordTiming(word=w, start_s=0.1 + 0.2 * i, end_s=0.28 + 0.2 * i)
             for i, w in enumerate(["can", "you", "confirm", "the", "email"])]
    ch1 = _bursts([(0.1, 1.08)], 2.0)
    audio = np.stack([np.zeros_like(ch1), ch1], axis=1)
    rd = _dialogue(words, stop=1.0, cut=0.98)
    (c,) = F.cut_checks(rd, audio)
    c = F.CutCheck(**{**c.__dict__, "heard_text": "can you confirm the"})
    assert c.partial_word == "email" and c.partial_heard_ms == pytest.approx(80.0)
    for asr, adds in (("Can you confirm the email?", True), ("Can you confirm the email address?", True),
                      ("Could you reply on Monday?", False)):
        got = F.with_asr_prefix(c, asr)
        assert got.heard_agrees is False and got.asr_only_adds_words is adds, asr


@pytest.mark.parametrize("heard,asr,ok", [
    ("can you confirm the", "Can you confirm the", True),
    ("can you confirm the", "can you confirm the email", False),
    ("with a 40 dollar", "with a $40.", True),
    ("the last four digits of", "the last 4 digits of", True),
])
def test_heard_text_agreement(heard, asr, ok):
    assert F.heard_text_agrees(heard, asr) is ok


def _item(cond: str, masked_s: float, source: str = "s") -> MaskedItem:
    return MaskedItem(source_id=source, audio_path="a.flac", transcript="x y", words=(), condition=cond,
                      spans=(MaskSpan(word_start=0, word_end=1, start_s=0.0, end_s=masked_s, text="x"),),
                      signal="silence", measured={"masked_s": masked_s})


def test_mask_length_ratio_pairs_and_medians():
    items = [_item("answerable", 1.0, "a"), _item("unanswerable", 1.1, "a"),
             _item("answerable", 0.2, "b"), _item("unanswerable", 2.0, "b")]
    r = F.mask_length_ratio(items)
    assert r["pairs"] == 2 and r["pairs_within_0.8_1.25"] == 0.5
    assert r["ratio_of_medians"] == pytest.approx(0.6 / 1.55, abs=1e-3)


def test_card_fidelity_section():
    assert fidelity_section(None) == []
    fid = {"voices": {"hibari:heart": {"word_end_within_30ms": 0.98, "pauses": 10, "word_end_error_ms_p95": 12.0,
                                       "words_shorter_than_30ms": 0, "words_in_silence": 0}},
           "cuts": {"heard_text_asr_agreement": 0.9, "asr_checked": 10, "stop_error_ms_p95": 3.3,
                    "cut_error_ms_p95": 7.0, "overlap_error_ms_p95": 6.0},
           "frames": {"frame_label_agreement": 0.987},
           "repair": {"unanswerable_asr_recovery": 0.0, "unanswerable_items": 6,
                      "answerable_asr_recovery": 0.667, "answerable_items": 6,
                      "mask_len": {"ratio_of_medians": 1.05}},
           "sidecars": {"sidecar_error_ms_p95": "n/a"}}
    text = "\n".join(fidelity_section(fid))
    assert "## Audio fidelity" in text and "| `hibari:heart` | 0.98 |" in text
    assert "3.3 ms" in text and "0.987" in text and "| perturbation sidecar error p95 | n/a |" in text
