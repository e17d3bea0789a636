"""Answerable masks hide as much audio as unanswerable ones, over the release (issue 14 §3).

A value too long for its utterance swaps answerable targets with a source that can take its
length; the lengths are measured on the written items (``masked_s``, from the audio's replaced
samples) and compared by an AUC written here, not by the code that chose them.
"""

from __future__ import annotations

import pytest

from bargein.audio.io import write_audio
from bargein.audio.tts import synthesize
from bargein.masking.items import MaskConfig, MaskSource
from bargein.masking.lengths import pair_lengths, value_lengths, why_unmatched
from bargein.masking.spans import find_span, maskable_candidates
from bargein.masking.stage import cap_sources, mask_sources
from bargein.records import WordTiming

CFG = MaskConfig(windows_ms=(0,), signals=("silence",))


def _source(tmp_path, sid: str, text: str, value: str, answer: str, protect: str | None = None) -> MaskSource:
    sp = synthesize(text, "espeak:en-us")
    path = write_audio(tmp_path / f"{sid}.wav", sp.samples, sp.sample_rate)
    words = [w.word for w in sp.words]
    prot = (find_span(words, protect),) if protect else ()
    return MaskSource(id=sid, kind="conversation", source_id=sid, audio_path=str(path), transcript=text,
                      words=sp.words, critical=find_span(words, value), answer=answer, slot="code",
                      protected=prot)


def _auc(ans: list[float], una: list[float]) -> float:
    """P(a random unanswerable mask is longer than a random answerable one), ties half."""
    wins = sum((u > a) + 0.5 * (u == a) for a in ans for u in una)
    return wins / (len(ans) * len(una))


def test_a_long_value_swaps_lengths_with_a_source_that_can_take_it(tmp_path):
    long_ = _source(tmp_path, "long", "Sure, it's four four seven one, three nine two eight, zero five.",
                    "447139280 5", "4471392805")
    roomy = _source(tmp_path, "roomy", "Well, as I said to the lady on the phone before, it is in the "
                    "drawer in the kitchen, and my name is Kim, like I told you on Monday.", "Kim", "Kim")
    assert why_unmatched(long_, CFG) and why_unmatched(roomy, CFG) is None
    sources, left = pair_lengths([roomy], [(long_, why_unmatched(long_, CFG))], CFG)
    assert not left and [s.id for s in sources] == ["roomy", "long"]
    r, u = sources
    assert r.answerable_target_s == value_lengths(long_, CFG) and r.length_partner == "long"
    assert u.answerable_target_s == value_lengths(roomy, CFG) and u.length_partner == "roomy"
    out = mask_sources(sources, workdir=tmp_path / "w", seed=1, config=CFG, workers=1, progress=False)
    assert not out.failures and len(out.outputs) == 4
    got = {c: sorted(i.measured["masked_s"] for i in out.outputs if i.condition == c)
           for c in ("answerable", "unanswerable")}
    for a, b in zip(got["answerable"], got["unanswerable"]):     # one distribution: quantile by quantile
        assert 0.8 <= a / b <= 1.25, got
    assert _auc(got["answerable"], got["unanswerable"]) == pytest.approx(0.5, abs=0.26)
    # without the swap the long value would have stayed out: its own mask could not match
    only = mask_sources([long_], workdir=tmp_path / "x", seed=1, config=CFG, workers=1, progress=False)
    assert not only.outputs and "give the label away" in only.failures[0].reason


def test_no_partner_leaves_the_source_out_with_its_reason(tmp_path):
    long_ = _source(tmp_path, "long", "Sure, it's four four seven one, three nine two eight, zero five.",
                    "447139280 5", "4471392805")
    short = _source(tmp_path, "short", "It is Kim.", "Kim", "Kim")
    sources, left = pair_lengths([short], [(long_, "too long")], CFG)
    assert [s.id for s in sources] == ["short"] and not sources[0].length_partner
    assert left[0][0].id == "long" and "no other source can take its length" in left[0][1]


def test_other_facts_are_never_masked_for_the_answerable_variant():
    words = [WordTiming(word=w, start_s=0.3 * i, end_s=0.3 * i + 0.25)
             for i, w in enumerate("my name is Kim and my code is four four seven one ok".split())]
    cand = {i for _, i in maskable_candidates(words, (3, 4), protected=[(8, 12)])}
    assert cand and not cand & set(range(8, 12))
    assert {i for _, i in maskable_candidates(words, (3, 4))} & set(range(8, 12))


def test_the_cap_takes_partners_together():
    def src(sid: str, d: str, partner: str | None = None) -> MaskSource:
        return MaskSource(id=sid, kind="qa", source_id=d, audio_path="x", length_partner=partner,
                          answerable_target_s=(1.0,) if partner else ())

    srcs = [src("a0", "a", "c0"), src("a1", "a"), src("b0", "b"), src("c0", "c", "a0")]
    assert [s.id for s in cap_sources(srcs, 1 * 4, 4)] == ["a1"]          # own-matched first
    assert [s.id for s in cap_sources(srcs, 2 * 4, 4)] == ["a1", "b0"]
    assert [s.id for s in cap_sources(srcs, 3 * 4, 4)] == ["a0", "a1", "c0"]   # a pair fills the cap
    assert [s.id for s in cap_sources(srcs, 4 * 4, 4)] == ["a0", "a1", "b0", "c0"]
    for n in range(1, 6):
        ids = {s.id for s in cap_sources(srcs, n * 4, 4)}
        assert ("a0" in ids) == ("c0" in ids) and len(ids) == min(n, 4)
    only_pairs = [src("a0", "a", "c0"), src("c0", "c", "a0")]
    assert [s.id for s in cap_sources(only_pairs, 4, 4)] == ["a0", "c0"]   # at least one item
