"""Forced aligners: synth pass-through, Whisper tiny.en (real model), MFA (CLI) and TextGrids."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from bargein import registry
from bargein.audio.align import SynthAligner, get_aligner, transcribe
from bargein.audio.textgrid import parse_textgrid, read_textgrid, words_from_tier
from bargein.audio.tts import get_engine
from bargein.audio.wordtimes import split_words
from bargein.errors import AlignmentFailed, AudioError, BackendUnavailable

SENTENCE = "Your claim needs three documents: a photo of the damage, the police report, and a receipt."


@pytest.fixture(scope="session")
def whisper():
    al = get_aligner("whisper")
    al.model                                  # load once for the session
    return al


@pytest.fixture(scope="session")
def piper_speech():
    return get_engine("piper").synthesize(SENTENCE, "joe")


def test_registered():
    assert {"synth", "whisper", "mfa"} <= set(registry.names("aligner"))
    assert get_aligner("whisper") is get_aligner("whisper")


# ------------------------------------------------------------------ synth

def test_synth_aligner_passes_through(piper_speech):
    assert SynthAligner().align(piper_speech) == piper_speech.words
    assert SynthAligner().align(piper_speech, piper_speech.sample_rate, SENTENCE) == piper_speech.words
    with pytest.raises(AlignmentFailed, match="differs from the synthesised text"):
        SynthAligner().align(piper_speech, piper_speech.sample_rate, "something else")
    with pytest.raises(AlignmentFailed, match="needs the Speech"):
        SynthAligner().align(piper_speech.samples, 22050, SENTENCE)


# ------------------------------------------------------------------ whisper

def start_errors_ms(a, b) -> np.ndarray:
    assert [w.word for w in a] == [w.word for w in b]
    return np.array([(x.start_s - y.start_s) * 1000 for x, y in zip(a, b)])


def test_whisper_matches_piper_word_starts(whisper, piper_speech):
    words = whisper.align(piper_speech.samples, piper_speech.sample_rate, SENTENCE)
    assert [(w.word, w.char_start) for w in words] == split_words(SENTENCE)
    err = np.abs(start_errors_ms(words, piper_speech.words))
    # measured on this sentence: median ~30 ms, worst word ~150 ms (Whisper is late in running speech)
    assert np.median(err) <= 150, err
    assert np.percentile(err, 90) <= 200, err
    assert all(a.start_s <= b.start_s for a, b in zip(words, words[1:]))
    assert all(w.start_s <= w.end_s <= piper_speech.duration_s + 1e-3 for w in words)


def test_whisper_long_audio_spans_windows(whisper):
    text = " ".join(f"Item {n}: please confirm the delivery address and the phone number on file."
                    for n in ("one", "two", "three", "four", "five", "six", "seven", "eight"))
    s = get_engine("espeak").synthesize(text, "en-us")
    assert s.duration_s > 35                                  # more than one 30 s Whisper window
    words = whisper.align(s.samples, s.sample_rate, text)
    err = np.abs(start_errors_ms(words, s.words))
    assert np.median(err) <= 150, err
    late = [w for w in words if w.start_s > 30]
    assert late and np.median(np.abs(start_errors_ms(late, s.words[-len(late):]))) <= 150


def test_whisper_rejects_a_wrong_transcript(whisper, piper_speech):
    with pytest.raises(AlignmentFailed, match="low-confidence") as e:
        whisper.align(piper_speech.samples, piper_speech.sample_rate,
                      "Please hold while I transfer you to the billing department.")
    assert len(e.value.evidence["word_probs"]) == 10 and max(e.value.evidence["word_probs"]) < 0.5


def test_whisper_rejects_silence_and_empty(whisper):
    with pytest.raises(AlignmentFailed, match="silent"):
        whisper.align(np.zeros(16000, np.float32), 16000, "hello there")
    with pytest.raises(AlignmentFailed, match="no words"):
        whisper.align(np.zeros(16000, np.float32), 16000, "  ... ")
    with pytest.raises(AudioError, match="empty audio"):
        whisper.align(np.zeros(0, np.float32), 16000, "hello")


def test_transcribe(whisper, piper_speech):
    text, words = transcribe(piper_speech.samples, piper_speech.sample_rate)
    low = text.lower()
    for w in ("claim", "documents", "photo", "damage", "police", "report", "receipt"):
        assert w in low
    assert all(text[w.char_start:w.char_start + len(w.word)] == w.word for w in words)
    assert all(a.start_s <= b.start_s for a, b in zip(words, words[1:]))
    assert transcribe(piper_speech.samples, piper_speech.sample_rate) == (text, words)   # deterministic


# ------------------------------------------------------------------ TextGrid

LONG_TG = '''File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 2.0
tiers? <exists>
size = 2
item []:
    item [1]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 2.0
        intervals: size = 6
        intervals [1]:
            xmin = 0
            xmax = 0.12
            text = ""
        intervals [2]:
            xmin = 0.12
            xmax = 0.5
            text = "hello"
        intervals [3]:
            xmin = 0.5
            xmax = 0.71
            text = "do"
        intervals [4]:
            xmin = 0.71
            xmax = 0.9
            text = "n't"
        intervals [5]:
            xmin = 0.9
            xmax = 1.6
            text = "say ""no"""
        intervals [6]:
            xmin = 1.6
            xmax = 2.0
            text = "sil"
    item [2]:
        class = "TextTier"
        name = "marks"
        xmin = 0
        xmax = 2.0
        points: size = 1
        points [1]:
            number = 0.5
            mark = "x"
'''

SHORT_TG = '''File type = "ooTextFile"
Object class = "TextGrid"

0
2.0
<exists>
1
"IntervalTier"
"words"
0
2.0
4
0
0.12
""
0.12
0.5
"hello"
0.5
0.9
"don't"
0.9
1.6
"say ""no"""
'''


def test_textgrid_long_and_short_formats(tmp_path):
    long_tiers = parse_textgrid(LONG_TG)
    assert set(long_tiers) == {"words"}
    assert long_tiers["words"][4] == (0.9, 1.6, 'say "no"')
    short = tmp_path / "utt.TextGrid"
    short.write_text(SHORT_TG, encoding="utf-8")
    assert read_textgrid(short)["words"][2] == (0.5, 0.9, "don't")
    for tiers in (long_tiers, read_textgrid(short)):
        words = words_from_tier(tiers, "Hello, don't say-no!")
        assert [(w.word, w.start_s, w.end_s, w.char_start) for w in words] == [
            ("Hello,", 0.12, 0.5, 0), ("don't", 0.5, 0.9, 7), ("say-no!", 0.9, 1.6, 13)]


def test_textgrid_utf16_and_errors(tmp_path):
    p = tmp_path / "u16.TextGrid"
    p.write_bytes(SHORT_TG.encode("utf-16"))
    assert read_textgrid(p)["words"][1][2] == "hello"
    with pytest.raises(AudioError, match="cannot parse TextGrid.*header"):
        parse_textgrid("not a textgrid")
    with pytest.raises(AudioError, match="cannot read TextGrid"):
        read_textgrid(tmp_path / "missing.TextGrid")
    with pytest.raises(AlignmentFailed, match="no 'phones' tier"):
        words_from_tier(parse_textgrid(SHORT_TG), "hello", tier="phones")
    with pytest.raises(AlignmentFailed, match="ran out of intervals"):
        words_from_tier(parse_textgrid(SHORT_TG), "hello don't say no more words")


# ------------------------------------------------------------------ MFA

HAVE_MFA = shutil.which("mfa") is not None


@pytest.mark.skipif(not HAVE_MFA, reason="Montreal Forced Aligner's 'mfa' command is not on PATH "
                    "(it needs Kaldi from conda and downloaded models; REFERENCE.md)")
def test_mfa_aligns_piper(piper_speech):
    words = get_aligner("mfa").align(piper_speech.samples, piper_speech.sample_rate, SENTENCE)
    err = np.abs(start_errors_ms(words, piper_speech.words))
    assert np.median(err) <= 100, err


@pytest.mark.skipif(HAVE_MFA, reason="mfa is installed; the missing-CLI path cannot be shown")
def test_mfa_missing_says_how_to_install():
    with pytest.raises(BackendUnavailable, match="'mfa' command is not on PATH.*conda install"):
        get_aligner("mfa")


def _align_in_worker(args):
    samples, sr, text = args
    return get_aligner("whisper").align(samples, sr, text)


def test_whisper_survives_fork(whisper, piper_speech):
    """Rendering uses worker processes: a forked worker must not reuse the parent's CTranslate2
    model (it deadlocks); it loads its own and gets the same timings."""
    import multiprocessing as mp

    here = whisper.align(piper_speech.samples, piper_speech.sample_rate, SENTENCE)
    with mp.get_context("fork").Pool(1) as pool:
        there = pool.map_async(_align_in_worker,
                               [(piper_speech.samples, piper_speech.sample_rate, SENTENCE)]).get(timeout=120)
    assert there == [here]


def test_backchannel_only_transcripts_align_without_whisper_confidence():
    """Whisper scores fillers near zero; a filler-only message still gets word times (hibari)."""
    from bargein.audio.tts import synthesize

    s = synthesize("Mm-hm, mm-hm", "hibari:heart")
    assert [w.word for w in s.words] == ["Mm-hm,", "mm-hm"]
    a, b = s.words
    assert 0 <= a.start_s < a.end_s <= b.start_s < b.end_s <= s.duration_s
