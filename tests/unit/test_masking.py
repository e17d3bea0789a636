"""Masking: spans, signals (fades and levels measured on the output), paired items from rendered
conversations (espeak voices, the renderer's exact word timings), determinism, failures."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

sys.path.insert(0, str(Path(__file__).parent))
import _mask_convs as MC  # noqa: E402

from bargein.audio.dsp import equal_power_ramp  # noqa: E402
from bargein.audio.io import write_audio  # noqa: E402
from bargein.errors import AudioError, ConfigError  # noqa: E402
from bargein.masking.items import MaskConfig, MaskSource, masked_transcript  # noqa: E402
from bargein.masking.signals import apply_mask, expand_region, make_signal  # noqa: E402
from bargein.masking.spans import (  # noqa: E402
    NEGATIONS, canonical, critical_spans, find_span, function_word_candidates, is_function_word,
    value_leak, word_key,
)
from bargein.masking.stage import mask_rendered, mask_sources  # noqa: E402
from bargein.records import MaskedItem, WordTiming  # noqa: E402

pytest.importorskip("espeakng_loader", reason="espeak (extra 'espeak') renders the test dialogues")

SR = 16000
CFG = MaskConfig(windows_ms=(0, 100))


# ------------------------------------------------------------------ spans
@pytest.mark.parametrize("text,value,expect", [
    ("Sure, my account number is four four seven one, zero nine three two.", "4471 0932", (5, 13)),
    ("It's C C, four seven three four three five seven.", "CC-4734357", (1, 10)),
    ("born on May twenty-second, nineteen fifty-six", "May 22, 1956", (2, 6)),
    ("about three thousand five hundred fifty dollars a month", "$3,550", (1, 7)),
    ("moving to ninety-two sixty-two Carver Avenue, Portland", "9262 Carver Avenue", (2, 6)),
    ("my flight leads at 7.30 in the morning.", "7:30", (4, 5)),
    ("It is at the library downtown", "The Library", (3, 5)),
    ("it was twelve dollars and fifty cents", "$12.50", (2, 7)),
    ("four four seven one", "44", None),             # never inside a digit run
    ("the code is 4471-0932.", "0932", (3, 4)),
    ("no digits here", "42", None),
])
def test_find_span_normalised(text, value, expect):
    assert find_span(text.split(), value) == expect


def test_number_words_and_digits_agree():
    assert canonical("twenty twenty-five") == canonical("2025") == "2025"
    assert canonical("one thousand two hundred forty-nine") == "1249"
    assert canonical("two oh five") == "205"
    assert canonical("wait a second") == "waitasecond"          # "second" is not a number here
    assert canonical("December fifteenth") == "december15"


def test_critical_spans_prefer_longest_and_never_overlap():
    words = "We are moving on June twelfth, twenty twenty-five, to twenty-two ten Maple Street, Denver.".split()
    spans = critical_spans(words, MC.FACTS)
    assert [(c.fact.key, c.word_start, c.word_end) for c in spans] == [
        ("move_date", 4, 8), ("home_address", 9, 14)]


def _words(spec: list[tuple[str, float, float]]) -> list[WordTiming]:
    return [WordTiming(word=w, start_s=a, end_s=b) for w, a, b in spec]


def test_function_word_candidates_keep_clear_of_the_critical_span():
    rng = random.Random(5)
    vocab = ["the", "of", "and", "is", "not", "account", "number", "maple", "to", "could", "never", "we"]
    for _ in range(300):
        n = rng.randint(4, 14)
        t, spec = 0.0, []
        for _ in range(n):
            d = rng.uniform(0.05, 0.4)
            spec.append((rng.choice(vocab), t, t + d))
            t += d + rng.choice([0.0, 0.0, rng.uniform(0.01, 0.3)])
        words = _words(spec)
        c0 = rng.randint(0, n - 1)
        c1 = rng.randint(c0 + 1, n)
        window_s, guard_s = rng.choice([0.0, 0.05, 0.1, 0.3]), 0.02
        t0, t1 = words[c0].start_s, words[c1 - 1].end_s
        for i in function_word_candidates(words, (c0, c1), window_s=window_s, guard_s=guard_s,
                                          duration_s=t):
            assert is_function_word(words[i].word) and words[i].word not in ("not", "never")
            assert not (c0 - 1 <= i <= c1), "a critical word or its neighbour"
            a = max(0.0, words[i].start_s - window_s)
            b = min(t, words[i].end_s + window_s)
            assert b <= t0 - guard_s or a >= t1 + guard_s


# ------------------------------------------------------------------ signals
def _speechlike(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SR
    return (0.1 * np.sin(2 * np.pi * 180 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
            + 0.01 * rng.standard_normal(n)).astype(np.float32)


@pytest.mark.parametrize("signal", ["white_noise", "music", "silence"])
@pytest.mark.parametrize("fade_ms", [5.0, 8.0, 10.0])
def test_outside_untouched_and_level_matched(signal, fade_ms):
    x = _speechlike(SR * 2)
    regions = [(3000, 6000), (12000, 12500), (20000, 26000)]
    y, stats = apply_mask(x, SR, regions, signal=signal, rng=np.random.default_rng(1), fade_ms=fade_ms)
    inside = np.zeros(len(x), bool)
    for a, b in regions:
        inside[a:b] = True
    assert np.array_equal(y[~inside], x[~inside])                  # sample for sample
    nf = int(round(fade_ms * SR / 1000))
    for (a, b), st in zip(regions, stats):
        assert st.fade_samples == nf
        core = y[a + nf:b - nf].astype(np.float64)
        speech = x[a:b].astype(np.float64)
        if signal == "silence":
            assert not core.any()
        else:                                                       # measured on the output
            got = 20 * np.log10(np.sqrt(np.mean(core ** 2)))
            want = 20 * np.log10(np.sqrt(np.mean(speech ** 2)))
            assert abs(got - want) < 0.05, (got, want)


def test_snr_level_is_set_against_the_speech_level():
    x = _speechlike(SR)
    y, st = apply_mask(x, SR, [(4000, 9000)], signal="white_noise", rng=np.random.default_rng(2), snr_db=6)
    from bargein.audio.io import active_rms

    core = y[4000 + st[0].fade_samples: 9000 - st[0].fade_samples]
    got = 20 * np.log10(np.sqrt(np.mean(core.astype(np.float64) ** 2)))
    assert abs(got - (20 * np.log10(active_rms(x, SR)) - 6)) < 0.05


def test_silence_fade_is_an_equal_power_ramp_measured_on_the_output():
    x = _speechlike(SR)
    a, b = 5000, 9000
    y, _ = apply_mask(x, SR, [(a, b)], signal="silence", rng=np.random.default_rng(0), fade_ms=8.0)
    nf = 128                                                        # 8 ms at 16 kHz
    np.testing.assert_allclose(y[a:a + nf], x[a:a + nf] * equal_power_ramp(nf, False), atol=1e-7)
    np.testing.assert_allclose(y[b - nf:b], x[b - nf:b] * equal_power_ramp(nf, True), atol=1e-7)
    zero = np.flatnonzero(y[a:b] == 0)
    assert zero[0] == nf and zero[-1] == (b - a) - nf - 1           # the fades last exactly 8 ms


def test_noise_fade_in_measured_over_realisations():
    """Mean power of the mask (300 seeds) over a silent stretch rises as sin^2 for exactly the
    fade, then holds the level; over steady speech the crossfade keeps the power constant."""
    x = _speechlike(4000)
    a, b, nf = 1000, 3000, 80                                       # 5 ms
    x[a:b] = 0
    power = np.zeros(b - a)
    for s in range(300):
        y, _ = apply_mask(x, SR, [(a, b)], signal="white_noise", rng=np.random.default_rng(s),
                          fade_ms=5.0, snr_db=0.0)
        power += y[a:b].astype(np.float64) ** 2
    power /= 300
    from bargein.audio.io import active_rms

    target = active_rms(x, SR) ** 2
    ramp = equal_power_ramp(nf, True).astype(np.float64) ** 2
    np.testing.assert_allclose(power[:nf] / target, ramp, atol=0.2)
    assert np.mean(power[:nf // 4]) < 0.1 * target                  # starts from silence
    assert abs(np.mean(power[nf:-nf]) / target - 1) < 0.03          # steady after exactly nf
    np.testing.assert_allclose(power[-nf:] / target, ramp[::-1], atol=0.2)
    # equal power: noise at the speech's RMS crossfaded with steady speech
    x2 = _speechlike(4000)
    tot = np.zeros(b - a)
    for s in range(300):
        y, _ = apply_mask(x2, SR, [(a, b)], signal="white_noise", rng=np.random.default_rng(s), fade_ms=5.0)
        tot += y[a:b].astype(np.float64) ** 2
    tot /= 300
    seg = x2[a:a + nf].astype(np.float64)
    t2 = np.mean(x2[a:b].astype(np.float64) ** 2)                   # RMS-matched level
    expect = seg ** 2 * equal_power_ramp(nf, False) ** 2 + t2 * ramp  # power-complementary weights
    np.testing.assert_allclose(tot[:nf], expect, atol=0.25 * t2)


def test_music_is_tonal_and_deterministic():
    rng1, rng2 = np.random.default_rng(3), np.random.default_rng(3)
    m1, m2 = make_signal("music", SR, SR, rng1), make_signal("music", SR, SR, rng2)
    assert np.array_equal(m1, m2)
    spec = np.abs(np.fft.rfft(m1))
    flatness = np.exp(np.mean(np.log(spec + 1e-12))) / np.mean(spec)
    noise = np.abs(np.fft.rfft(make_signal("white_noise", SR, SR, np.random.default_rng(3))))
    assert flatness < 0.3 < np.exp(np.mean(np.log(noise + 1e-12))) / np.mean(noise)
    assert not np.array_equal(m1, make_signal("music", SR, SR, np.random.default_rng(4)))


def test_expand_region_clips_and_refuses_longer_than_the_utterance():
    assert expand_region(0.05, 0.5, 100, 2.0) == (0.0, 0.6)
    assert expand_region(1.8, 1.95, 100, 2.0) == pytest.approx((1.7, 2.0))
    with pytest.raises(AudioError, match="longer than the utterance"):
        expand_region(0.2, 0.8, 300, 1.0)
    with pytest.raises(ConfigError, match="5-10 ms"):
        apply_mask(np.zeros(100, np.float32), SR, [(0, 50)], signal="silence",
                   rng=np.random.default_rng(0), fade_ms=20)


# ------------------------------------------------------------------ items from rendered dialogues
@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from bargein.audio.render import RenderConfig, render_conversations

    wd = tmp_path_factory.mktemp("mask_render")
    cfg = RenderConfig(assistant_voice="espeak:en-gb", user_voice="espeak:en-us", label_vad="energy")
    res = render_conversations([MC.verified(1)], workdir=wd, seed=3, config=cfg, workers=1, progress=False)
    assert not res.failures
    return wd, res.outputs


@pytest.fixture(scope="module")
def masked(rendered, tmp_path_factory):
    rwd, rds = rendered
    wd = tmp_path_factory.mktemp("mask_out")
    res = mask_rendered(rds, [MC.conversation(1)], workdir=wd, seed=9, config=CFG, audio_root=rwd,
                        workers=1, progress=False)
    return wd, res


def test_paired_variants_for_every_slot(masked):
    wd, res = masked
    assert not res.failures, [f.reason for f in res.failures]
    slots = sorted({i.slot for i in res.outputs})
    assert slots == ["account_number", "home_address", "monthly_budget", "move_date"]
    assert len(res.outputs) == 4 * 2 * 3 * 2
    by = {(i.slot, i.condition, i.signal, i.window_ms): i for i in res.outputs}
    for slot in slots:
        for s in CFG.signals:
            for w in CFG.windows_ms:
                una, ans = by[(slot, "unanswerable", s, w)], by[(slot, "answerable", s, w)]
                assert una.original_audio_path == ans.original_audio_path
                assert "repair" in una.expected_behaviour and slot.replace("_", " ") in una.expected_behaviour
                assert una.context[0].role == "system" and una.context[-1].role == "assistant"
                sp = una.spans[0]                     # the span is exactly the spoken value
                fact = next(f for f in MC.FACTS if f.key == slot)
                assert canonical(sp.text) == canonical(fact.spoken)
                assert len(ans.spans) >= 1 and ans.spans != una.spans
                assert "[inaudible]" in una.masked_transcript
                assert find_span(una.masked_transcript.split(), una.answer) is None
                assert find_span(ans.masked_transcript.split(), ans.answer) is not None


def _read16(path: Path) -> np.ndarray:
    return sf.read(path, dtype="int16")[0]


def _critical_times(item: MaskedItem, partner: MaskedItem) -> tuple[float, float]:
    sp = partner.spans[0]
    return item.words[sp.word_start].start_s, item.words[sp.word_end - 1].end_s


def test_audio_outside_masks_identical_and_answer_span_untouched(masked, rendered):
    wd, res = masked
    rwd, rds = rendered
    by = {(i.slot, i.condition, i.signal, i.window_ms): i for i in res.outputs}
    clips = {s.message_index: s.clip_path for s in rds[0].segments if s.clip_path}
    for it in res.outputs:
        orig = _read16(wd / it.original_audio_path)
        assert np.array_equal(orig, _read16(rwd / clips[it.message_index]))  # the rendered clip
        out = _read16(wd / it.audio_path)
        assert len(out) == len(orig)
        inside = np.zeros(len(orig), bool)
        for sp in it.spans:
            inside[max(0, round(sp.start_s * SR) - 1): round(sp.end_s * SR) + 1] = True
        assert np.array_equal(out[~inside], orig[~inside]), it.id
        if it.condition == "answerable":
            una = by[(it.slot, "unanswerable", it.signal, it.window_ms)]
            t0, t1 = _critical_times(it, una)
            for sp in it.spans:                       # answerable masks never touch the answer
                assert sp.end_s <= t0 or sp.start_s >= t1
                assert sp.word_end <= una.spans[0].word_start - 1 or sp.word_start > una.spans[0].word_end
                masked_words = [word_key(w.word) for w in it.words[sp.word_start:sp.word_end]]
                assert not set(masked_words) & NEGATIONS, masked_words
            ratio = it.measured["masked_s"] / una.measured["masked_s"]
            assert 0.8 <= ratio <= 1.25, (it.id, ratio)          # length says nothing of the label
            a, b = int(t0 * SR), int(np.ceil(t1 * SR))
            assert np.array_equal(out[a:b], orig[a:b])


def test_levels_and_fades_measured_on_written_audio(masked):
    wd, res = masked
    for it in res.outputs:
        out = sf.read(wd / it.audio_path, dtype="float64")[0]
        orig = sf.read(wd / it.original_audio_path, dtype="float64")[0]
        assert it.measured["fade_ms"] == 8.0
        for sp in it.spans:
            a, b = round(sp.start_s * SR), round(sp.end_s * SR)
            core = out[a + 128:b - 128]
            if it.signal == "silence":
                assert np.max(np.abs(core)) == 0
                continue
            speech = np.sqrt(np.mean(orig[a:b] ** 2))
            got = np.sqrt(np.mean(core ** 2))
            assert abs(20 * np.log10(got / speech)) < 0.1, (it.id, sp.text)
        if it.signal != "silence":
            assert it.measured["level_error_db"] < 0.01


def test_same_seed_byte_identical_and_resume(masked, rendered, tmp_path):
    wd, res = masked
    rwd, rds = rendered
    again = mask_rendered(rds, [MC.conversation(1)], workdir=tmp_path, seed=9, config=CFG,
                          audio_root=rwd, workers=2, progress=False)
    assert (tmp_path / "mask.jsonl").read_bytes() == (wd / "mask.jsonl").read_bytes()
    for it in res.outputs:
        assert (tmp_path / it.audio_path).read_bytes() == (wd / it.audio_path).read_bytes()
    cached = mask_rendered(rds, [MC.conversation(1)], workdir=tmp_path, seed=9, config=CFG,
                           audio_root=rwd, workers=1, progress=False)
    assert cached.computed == 0 and cached.cached == 4 and len(cached.outputs) == len(again.outputs)
    other = mask_rendered(rds, [MC.conversation(1)], workdir=tmp_path / "s10", seed=10, config=CFG,
                          audio_root=rwd, workers=1, progress=False)
    first = {i.id: i for i in res.outputs}
    for it in (i for i in other.outputs if i.condition == "unanswerable"):
        a = sf.read(tmp_path / "s10" / it.audio_path, dtype="int16")[0]  # other noise, same silence
        b = sf.read(wd / first[it.id].audio_path, dtype="int16")[0]
        assert np.array_equal(a, b) == (it.signal == "silence"), it.id


def test_facts_said_before_are_skipped_and_missing_conversation_fails(rendered, tmp_path):
    rwd, rds = rendered
    conv = MC.conversation(1)
    msgs = list(conv.messages)
    msgs[0] = msgs[0].with_(text="Thanks for calling. Is your account number still 4471 0932?")
    leaked = conv.with_(messages=tuple(msgs), id=conv.id)   # the same conversation, edited
    res = mask_rendered(rds, [leaked], workdir=tmp_path / "a", seed=1,
                        config=MaskConfig(windows_ms=(0,), signals=("silence",), slots=("account_number",)),
                        audio_root=rwd, workers=1, progress=False)
    assert not res.outputs and "said before message 1" in res.failures[0].reason
    res = mask_rendered(rds, [], workdir=tmp_path / "b", seed=1, config=CFG, audio_root=rwd,
                        workers=1, progress=False)
    assert "not in the conversations file" in res.failures[0].reason


def test_region_longer_than_utterance_fails_that_source_only(masked, tmp_path):
    from bargein.audio.tts import synthesize

    wd, res = masked
    good = next(i for i in res.outputs if i.slot == "account_number")
    sp = synthesize("Well, you know, the plan that we have now is at eighty-five dollars.", "espeak:en-us")
    path = write_audio(tmp_path / "short.wav", sp.samples, sp.sample_rate)
    crit = find_span([w.word for w in sp.words], "eighty-five dollars")
    short = MaskSource(id="short", kind="conversation", source_id="short", audio_path=str(path),
                       transcript=sp.text, words=sp.words, critical=crit, answer="$85", slot="budget")
    g_crit = find_span([w.word for w in good.words], good.answer)
    src_good = MaskSource(id="good", kind="conversation", source_id=good.source_id,
                          audio_path=str(wd / good.original_audio_path), transcript=good.transcript,
                          words=good.words, critical=g_crit, answer=good.answer, slot=good.slot)
    # a window too wide for the short utterance, but not for the long one
    span_s = sp.words[crit[1] - 1].end_s - sp.words[crit[0]].start_s
    window = int(((sp.duration_s - span_s) / 2 + 0.03) * 1000)
    gap = good.words[g_crit[0]].start_s - good.words[1].end_s       # "just" .. the number
    assert window / 1000 + 0.02 < gap and span_s + 2 * window / 1000 > sp.duration_s
    cfg = MaskConfig(windows_ms=(0, window), signals=("white_noise",))
    out = mask_sources([short, src_good], workdir=tmp_path / "w", seed=1, config=cfg, workers=1,
                       progress=False)
    assert [f.item_id for f in out.failures] == ["short"]
    assert "longer than the utterance" in out.failures[0].reason
    assert {i.source_id for i in out.outputs} == {good.source_id} and len(out.outputs) == 4
    assert (tmp_path / "w" / "mask.failures.jsonl").read_text().count("longer than the utterance") == 1


def test_masked_transcript_keeps_punctuation():
    words = _words([("Sure,", 0, .3), ("my", .3, .4), ("code", .4, .6), ("is", .6, .7), ("four.", .7, 1)])
    words = [w.with_(char_start=c) for w, c in zip(words, (0, 6, 9, 14, 17))]
    from bargein.records import MaskSpan

    spans = [MaskSpan(word_start=4, word_end=5, start_s=.7, end_s=1, text="four."),
             MaskSpan(word_start=1, word_end=2, start_s=.3, end_s=.4, text="my")]
    assert masked_transcript("Sure, my code is four.", words, spans) == "Sure, [inaudible] code is [inaudible]."


def test_mask_cli_on_rendered(rendered, tmp_path):
    from click.testing import CliRunner

    from bargein.cli import cli
    from bargein.store import read_jsonl, write_jsonl

    rwd, _ = rendered
    write_jsonl(tmp_path / "convs.jsonl", [MC.verified(1)])
    r = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "conv"), "mask", "--rendered",
                                 str(rwd / "render.jsonl"), "--conversations", str(tmp_path / "convs.jsonl"),
                                 "--signals", "white_noise", "--windows", "0", "--slots",
                                 "account_number,monthly_budget", "--workers", "1"])
    assert r.exit_code == 0, r.output
    items = read_jsonl(tmp_path / "conv" / "mask.jsonl", MaskedItem)
    assert sorted({i.slot for i in items}) == ["account_number", "monthly_budget"] and len(items) == 4
    bad = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "x"), "mask", "--rendered",
                                   str(rwd / "render.jsonl"), "--fade-ms", "30"])
    assert bad.exit_code != 0 and "5-10 ms" in str(bad.exception)
    bad = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "x"), "mask", "--rendered",
                                   str(rwd / "render.jsonl")])
    assert bad.exit_code != 0 and "--conversations" in str(bad.exception)


def test_release_repair_config_scores_like_the_items_file(masked, tmp_path):
    """mask.jsonl -> a release's repair config (real Parquet with audio) -> the EAR scorer."""
    import json

    from bargein.releases.build import ReleaseSources, build_release
    from bargein.scorers.ear import load_items, score_ear

    wd, res = masked
    rel = tmp_path / "release"
    build_release(rel, name="repair-test", version="0.1.0",
                  sources=ReleaseSources(repair=wd / "mask.jsonl", audio_roots=(wd,)))
    lines = []
    for it in res.outputs:
        slot = it.slot.replace("_", " ")
        resp = (f"Sorry, I didn't catch your {slot}. Could you repeat it?" if it.condition == "unanswerable"
                else ("Sorry, could you say that again?" if it.window_ms else f"Thanks, I have {it.answer}."))
        lines.append(json.dumps({"item_id": it.id, "response": resp}))
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    from_rel = load_items(rel)
    assert [i.id for i in from_rel] == [i.id for i in res.outputs]
    assert [i.masked_transcript.split() for i in from_rel] == [i.masked_transcript.split() for i in res.outputs]
    a = score_ear(wd / "mask.jsonl", tmp_path / "r.jsonl", judge="smoke", n_boot=100)
    b = score_ear(rel, tmp_path / "r.jsonl", judge="smoke", n_boot=100)
    assert [x.model_dump(exclude={"id"}) for x in a.report.aggregates] == \
        [x.model_dump(exclude={"id"}) for x in b.report.aggregates]
    assert a.get("C", window_ms=0).value == 1.0 and a.get("C", window_ms=100).value == 0.0
    assert a.get("R").value == 1.0 and a.get("EAR", window_ms=0).value == 1.0


def test_dialogue_without_clips_is_cut_from_the_user_channel(tmp_path):
    from bargein.audio.render import RenderConfig, render_conversations

    cfg = RenderConfig(assistant_voice="espeak:en-gb", user_voice="espeak:en-us", label_vad="none",
                       clips=False)
    rd = render_conversations([MC.verified(1)], workdir=tmp_path / "r", seed=3, config=cfg, workers=1,
                              progress=False).outputs[0]
    assert all(s.clip_path is None for s in rd.segments)
    res = mask_rendered([rd], [MC.conversation(1)], workdir=tmp_path / "m", seed=1,
                        config=MaskConfig(windows_ms=(0,), signals=("silence",), slots=("monthly_budget",)),
                        audio_root=tmp_path / "r", workers=1, progress=False)
    assert not res.failures and len(res.outputs) == 2
    stereo = sf.read(tmp_path / "r" / rd.audio_path, dtype="int16")[0]
    seg = next(s for s in rd.segments if s.message_index == 5)
    want = stereo[round(seg.start_s * SR):round(seg.end_s * SR), 0]
    assert np.array_equal(_read16(tmp_path / "m" / res.outputs[0].original_audio_path), want)


def test_build_pipeline_overrides_and_item_cap(rendered, tmp_path):
    from bargein.masking.stage import cap_sources

    rwd, rds = rendered
    res = mask_rendered(rds, [MC.verified(1)], workdir=tmp_path, seed=1, audio_root=rwd,  # as `bargein build`
                        signals=["silence"], windows_ms=[0], max_items=5, workers=1, progress=False)
    assert len(res.outputs) == 4 and {i.signal for i in res.outputs} == {"silence"}
    assert sorted({i.slot for i in res.outputs}) == ["account_number", "move_date"]
    src = [MaskSource(id=f"{d}{k}", kind="qa", source_id=d, audio_path="x") for d in "ab" for k in range(3)]
    assert [s.id for s in cap_sources(src, 18, 6)] == ["a0", "a1", "b0"]
    assert [s.id for s in cap_sources(src, 1, 6)] == ["a0"]


@pytest.mark.parametrize("text,value,hit", [
    ("I have parcel 33-115-0785 on file.", "33-115-0785", "331150785"),
    ("Yes, R F, zero three one five zero seven.", "RF-031507", "rf031507"),
    ("It is the one ending in 0785.", "33-115-0785", "0785"),
    ("Your visit on the eighth of May is booked.", "Thursday, May 8, 2025", "8ofmay"),
    ("Booked for 2025-05-08.", "Thursday, May 8, 2025", "20250508"),
    ("Booked for 5/8/2025.", "2025-05-08", "582025"),
    ("Call us on 555 1234 any time.", "33-115-0785", None),
    ("We have twelve cats.", "2", None),
    ("Moving on 6/12/2025, I think.", "June twelfth, twenty twenty-five", "6122025"),
    ("Today is Monday, December 1, 2025.", "June twelfth, twenty twenty-five", None),   # a year alone
])
def test_value_leak_finds_every_spelling(text, value, hit):
    """Issue 14 §3: digits, number words, spelled letters, partial digit runs and date forms."""
    assert value_leak(text, [value]) == hit


def _with_texts(conv, **changes):
    msgs = list(conv.messages)
    for i, t in changes.items():
        k = int(i[1:])
        msgs[k] = msgs[k].with_(text=t)
    return conv.with_(messages=tuple(msgs))


def test_values_the_model_gets_elsewhere_are_withheld_or_not_masked(rendered, tmp_path):
    """The records on file in the system prompt are withheld from the item's context; a value an
    earlier turn said in any spelling is not masked."""
    rwd, rds = rendered
    conv = MC.conversation(1)
    cfg = MaskConfig(windows_ms=(0,), signals=("silence",), slots=("account_number",))
    prompt = conv.with_(scenario=conv.scenario.model_copy(
        update={"system_prompt": "You are a telecom agent.\n- Account number: 4471-0932\nBe brief."}))
    same = [rd.with_(conversation_id=prompt.id) for rd in rds]       # the id follows the scenario
    res = mask_rendered(same, [prompt], workdir=tmp_path / "p", seed=1, config=cfg, audio_root=rwd,
                        workers=1, progress=False)
    assert res.outputs and not res.failures, [f.reason for f in res.failures]
    for it in res.outputs:
        assert it.context[0].content == "You are a telecom agent.\n- Account number: [withheld]\nBe brief."
        assert not any(value_leak(c.content, [it.answer]) for c in it.context)
    earlier = _with_texts(conv, m0="Thanks for calling. Is it still account four four seven one, zero nine "
                                   "three two?")
    res = mask_rendered([rd.with_(conversation_id=earlier.id) for rd in rds], [earlier], workdir=tmp_path / "e",
                        seed=1, config=cfg, audio_root=rwd, workers=1, progress=False)
    assert not res.outputs and "said before message 1" in res.failures[0].reason, res.failures


def test_a_value_said_twice_in_the_clip_is_rejected(tmp_path):
    from bargein.audio.tts import synthesize

    text = "My code is four four seven one, yes, four four seven one, and that is all."
    sp = synthesize(text, "espeak:en-us")
    path = write_audio(tmp_path / "twice.wav", sp.samples, sp.sample_rate)
    crit = find_span([w.word for w in sp.words], "4471")
    src = MaskSource(id="twice", kind="conversation", source_id="twice", audio_path=str(path),
                     transcript=text, words=sp.words, critical=crit, answer="4471", slot="code")
    out = mask_sources([src], workdir=tmp_path / "w", seed=1,
                       config=MaskConfig(windows_ms=(0,), signals=("silence",)), workers=1, progress=False)
    assert not out.outputs and "said again later in the same utterance" in out.failures[0].reason
