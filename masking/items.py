"""Paired repair items: for one source utterance, answerable and unanswerable variants for every
mask signal and window.

    source (an utterance, its words, the critical span) --build_items--> MaskedItem x
        2 conditions x len(signals) x len(windows)

* **unanswerable**: the critical span (the slot value / the answer) is masked;
* **answerable**: function words are masked instead, about as much speech as the critical span
  (never the span, its neighbours, or anything within the window + guard of it).

Sources come from rendered conversations (:func:`conversation_sources`: a user turn that speaks a
user fact no earlier message mentioned; the eval item asks for the next assistant turn, whose
right behaviour is a slot-aware repair) or from a spoken QA dataset (:mod:`bargein.masking.qa`).

A masked value must not reach the model any other way (:func:`bargein.masking.spans.value_leak`:
any spelling, spoken form, date form or run of its digits): the system prompt given with the
item has it withheld (``[withheld]``; the records on file would otherwise answer it), a value an
earlier turn said is not masked, a value said twice in the clip is rejected, and the answerable
mask hides as much audio as the unanswerable one (:mod:`bargein.masking.lengths`: its own value's,
or, for a value too long for its utterance, a partner source's) so length says nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bargein.audio.io import active_rms, write_audio
from bargein.errors import AlignmentFailed
from bargein.masking.signals import (
    DEFAULT_FADE_MS, SIGNALS, apply_mask, check_fade_ms, expand_region, rms_db,
)
from bargein.masking.lengths import answerable_regions, pair_lengths, targets, why_unmatched
from bargein.masking.spans import SpanNotFound, critical_spans, find_fact, redact_value, value_leak
from bargein.records import (
    Conversation, MaskedItem, MaskSpan, RenderedDialogue, VerifiedConversation, WordTiming,
)
from bargein.records.base import Record
from bargein.records.derived import MaskSignal
from bargein.records.plan import Turn
from bargein.records.release import Failure
from bargein.seeding import stable_hash, stable_int

STAGE = "mask"
MASK_TOKEN = "[inaudible]"


class MaskConfig(BaseModel):
    """Everything the masked items depend on besides the source and the seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    signals: tuple[MaskSignal, ...] = SIGNALS                       # type: ignore[assignment]
    windows_ms: tuple[int, ...] = (0, 50, 100)
    snr_db: float | None = Field(None, ge=-40, le=100, allow_inf_nan=False)  # None: RMS-matched
    fade_ms: float = DEFAULT_FADE_MS
    guard_ms: float = Field(20.0, ge=0, le=500)
    aligner: Literal["auto", "synth", "whisper", "mfa"] = "auto"
    facts: Literal["required", "all"] = "required"
    slots: tuple[str, ...] = ()             # only these fact keys (conversations)
    max_per_dialogue: int | None = Field(None, ge=1)
    span_picker: str = "offline"            # or PROVIDER:MODEL (QA answers not found verbatim)

    @field_validator("signals")
    @classmethod
    def _signals(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v or len(set(v)) != len(v):
            raise ValueError(f"give each signal once, from {', '.join(SIGNALS)}")
        return v

    @field_validator("windows_ms")
    @classmethod
    def _windows(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(w < 0 or w > 2000 for w in v) or len(set(v)) != len(v):
            raise ValueError("windows are distinct integers in 0..2000 ms, e.g. 0,50,100")
        return v

    @field_validator("fade_ms")
    @classmethod
    def _fade(cls, v: float) -> float:
        try:
            return check_fade_ms(v)
        except Exception as e:
            raise ValueError(str(e)) from None

    @property
    def level(self) -> str:
        return "rms_matched" if self.snr_db is None else f"snr:{self.snr_db:g}"


class MaskSource(Record):
    """One utterance to mask (the runner's input item for the ``mask`` stage)."""

    id_prefix = "msrc"
    kind: Literal["conversation", "qa"]
    source_id: str                              # rendered dialogue id / QA example id
    audio_path: str                             # absolute, or relative to audio_root
    audio_root: str = ""                        # "" = the stage's work dir
    audio_sha256: str = ""
    channel: int | None = None                  # cut [clip_start_s, clip_end_s) of this channel
    clip_start_s: float | None = None
    clip_end_s: float | None = None
    transcript: str | None = None               # None: Whisper transcribes (QA)
    words: tuple[WordTiming, ...] = ()          # known timings, relative to the clip start
    critical: tuple[int, int] | None = None     # known critical word range [start, end)
    answer: str | None = None
    question: str | None = None
    slot: str | None = None
    message_index: int | None = None
    context: tuple[Turn, ...] = ()
    protected: tuple[tuple[int, int], ...] = ()  # word ranges of other facts' values: never masked
    answerable_target_s: tuple[float, ...] = ()  # per window; () = the value's own masked time
    length_partner: str | None = None            # the source whose value length it copies


# ------------------------------------------------------------------ conversation sources
def _slot_phrase(key: str | None) -> str:
    return (key or "answer").replace("_", " ")


def _user_segment(rd: RenderedDialogue, message_index: int):
    return next((s for s in rd.segments if s.message_index == message_index and s.kind == "message"
                 and s.channel == 0), None)


def conversation_sources(rendered: Sequence[RenderedDialogue],
                         conversations: Sequence[Conversation | VerifiedConversation],
                         config: MaskConfig, audio_root: str | Path = "",
                         ) -> tuple[list[MaskSource], list[Failure]]:
    """Sources from rendered dialogues: each user fact (required ones first) at the first user
    turn that speaks it, if no earlier message mentioned it. A dialogue with none is a failure."""
    convs = [getattr(c, "conversation", c) for c in conversations]     # VerifiedConversation too
    by_id = {c.id: c for c in convs}
    sources: list[MaskSource] = []
    unmatched: list[tuple[MaskSource, str]] = []
    failures: list[Failure] = []
    listed: list[tuple[RenderedDialogue, Conversation, str]] = []
    for rd in rendered:
        conv = by_id.get(rd.conversation_id)
        if conv is None:
            failures.append(Failure(stage=STAGE, item_id=rd.id, error_type="SpanNotFound", reason=(
                f"rendered dialogue {rd.id}: conversation {rd.conversation_id} is not in the "
                "conversations file. Fix: pass the conversations/verified JSONL that was rendered")))
            continue
        found, why, unmatched_here = _dialogue_sources(rd, conv, config, str(audio_root))
        sources += found
        unmatched += unmatched_here
        listed.append((rd, conv, why))
    sources, left = pair_lengths(sources, unmatched, config)
    have = {s.source_id for s in sources}
    for rd, conv, why in listed:
        if rd.id not in have:
            if any(u.source_id == rd.id for u, _ in left):
                why += "; and no other source could take the length of any of these"
            failures.append(Failure(stage=STAGE, item_id=rd.id, error_type="SpanNotFound",
                                    reason=f"rendered dialogue {rd.id}: no maskable slot value: {why}",
                                    evidence={"conversation_id": conv.id}))
    return sources, failures


def _dialogue_sources(rd: RenderedDialogue, conv: Conversation, config: MaskConfig, audio_root: str
                      ) -> tuple[list[MaskSource], str, list[tuple[MaskSource, str]]]:
    """(sources whose answerable masks match their own value, why none when empty, sources whose
    answerable masks cannot (for :func:`bargein.masking.lengths.pair_lengths`), with reasons)."""
    kb = conv.scenario.kb
    facts = list(kb.user_facts) + [f for f in conv.scenario.intent.hidden_facts
                                   if kb.fact(f.key) is None]
    every_fact = list(facts)
    required = {k for st in kb.workflow.stages for k in st.required_info}
    if config.slots:
        facts = [f for f in facts if f.key in config.slots]
    elif config.facts == "required" and any(f.key in required for f in facts):
        facts = [f for f in facts if f.key in required]
    if not facts:
        return [], "the scenario has no user facts" + (f" among {list(config.slots)}" if config.slots else ""), []
    found: list[tuple[int, int, MaskSource]] = []
    unmatched: list[tuple[int, int, MaskSource, str]] = []
    said_before: list[str] = []            # canonical text of every earlier message
    used: set[str] = set()
    skipped: list[str] = []
    for pos, m in enumerate(conv.messages):
        if m.role == "user":
            seg = _user_segment(rd, m.index)
            words = [w.word for w in seg.words] if seg is not None else m.text.split()
            spoken = critical_spans(words, every_fact)
            for c in critical_spans(words, [f for f in facts if f.key not in used]):
                used.add(c.fact.key)
                if any(find_fact(prev.split(), c.fact) for prev in said_before):
                    skipped.append(f"{c.fact.key} (said before message {m.index})")
                    continue
                values = [v for v in (c.fact.value, c.fact.spoken) if v]
                where = next((f"message {o.index}" for o in conv.messages[:pos]
                              if value_leak(o.spoken_text, values)), None)
                if where is None:
                    rest = words[:c.word_start], words[c.word_end:]
                    where = next((f"message {m.index} again" for part in rest if value_leak(part, values)), None)
                if where is not None:
                    skipped.append(f"{c.fact.key} (also in {where}: a mask would not hide it)")
                    continue
                if seg is None or not seg.words:
                    skipped.append(f"{c.fact.key} (message {m.index} has no rendered word timings)")
                    continue
                src = _source(rd, conv, pos, seg, c.word_start, c.word_end, c.fact, audio_root,
                              redact_value(conv.scenario.system_prompt, values)[0],
                              tuple((o.word_start, o.word_end) for o in spoken
                                    if o.fact.key != c.fact.key
                                    and (o.word_end <= c.word_start or o.word_start >= c.word_end)))
                why_not = why_unmatched(src, config)
                if why_not:
                    skipped.append(f"{c.fact.key} (message {m.index}: {why_not})")
                    unmatched.append((0 if c.fact.key in required else 1, pos, src, why_not))
                    continue
                found.append((0 if c.fact.key in required else 1, pos, src))
        said_before.append(" ".join(m.spoken_text.split()))
    found.sort(key=lambda t: (t[0], t[1]))
    out = [s for _, _, s in found][: config.max_per_dialogue]
    room = None if config.max_per_dialogue is None else max(0, config.max_per_dialogue - len(out))
    unmatched.sort(key=lambda t: (t[0], t[1]))
    why = ("no user turn speaks " + ", ".join(f.key for f in facts)) if not skipped else \
        "skipped " + "; ".join(skipped)
    return out, why, [(s, w) for _, _, s, w in unmatched][:room]


def _source(rd: RenderedDialogue, conv: Conversation, pos: int, seg, w0: int, w1: int, fact,
            audio_root: str, system_prompt: str, protected: tuple[tuple[int, int], ...] = ()) -> MaskSource:
    """The source of one spoken fact. ``system_prompt`` is the scenario's with the value withheld
    (the records on file would answer an unanswerable item)."""
    t0 = seg.start_s
    dur = seg.end_s - seg.start_s
    words = tuple(WordTiming(word=w.word, start_s=round(min(max(w.start_s - t0, 0.0), dur), 6),
                             end_s=round(min(max(w.end_s - t0, 0.0), dur), 6), char_start=w.char_start)
                  for w in seg.words)
    # keys in sorted order: the runner's cache stores JSON with sorted keys, so outputs read back
    # from the cache or a worker process must equal the ones computed in this process
    context = ({"content": system_prompt, "role": "system"},) + tuple(
        {"content": m.spoken_text, "role": m.role} for m in conv.messages[:pos])
    common = dict(kind="conversation", source_id=rd.id, audio_root=audio_root, transcript=seg.text,
                  words=words, critical=(w0, w1), answer=fact.value, slot=fact.key,
                  message_index=seg.message_index, context=context, protected=protected)
    sid = f"{rd.id}_m{seg.message_index:03d}_{fact.key}"
    if seg.clip_path:
        return MaskSource(id=sid, audio_path=seg.clip_path, **common)
    return MaskSource(id=sid, audio_path=rd.audio_path, channel=0, clip_start_s=seg.start_s,
                      clip_end_s=seg.end_s, **common)


# ------------------------------------------------------------------ building the variants
def expected_behaviour(source: MaskSource, condition: str) -> str:
    slot = _slot_phrase(source.slot)
    if source.kind == "conversation":
        if condition == "unanswerable":
            return f"slot-aware repair: say the {slot} was not heard and ask the user to repeat it"
        return f"continue the workflow with the {slot} the user gave ({source.answer})"
    if condition == "unanswerable":
        return ("slot-aware repair: say the part of the audio that answers the question was not "
                "heard and ask for it")
    return f"answer: {source.answer}"


def masked_transcript(transcript: str, words: Sequence[WordTiming], spans: Sequence[MaskSpan]) -> str:
    """``transcript`` with each span's words replaced by ``[inaudible]`` (punctuation kept)."""
    if not spans:
        return transcript
    if any(w.char_start is None for w in words):
        toks = [w.word for w in words]
        for s in sorted(spans, key=lambda s: -s.word_start):
            last = toks[s.word_end - 1]
            toks[s.word_start:s.word_end] = [MASK_TOKEN + last[len(last.rstrip(".,;:!?\"')")):]]
        return " ".join(toks)
    out = transcript
    for s in sorted(spans, key=lambda s: -s.word_start):
        first, last = words[s.word_start], words[s.word_end - 1]
        core = last.word.rstrip(".,;:!?\"')")
        out = out[: first.char_start] + MASK_TOKEN + out[last.char_start + len(core):]
    return out


def mention_leaks(words: Sequence[WordTiming], critical: tuple[int, int], context: Sequence,
                  values: Sequence[str]) -> str | None:
    """Where else the model would get the value: another mention in the clip, or anything in
    ``context`` (system prompt, other turns). None when the mask really hides it."""
    c0, c1 = critical
    for part, where in ((words[:c0], "earlier in the same utterance"), (words[c1:], "later in the same utterance")):
        hit = value_leak([w.word for w in part], values)
        if hit:
            return f"the value is said again {where} ({hit!r}); its mask would not hide it"
    for c in context:
        content = c.get("content", "") if isinstance(c, dict) else getattr(c, "content", "")
        role = c.get("role", "?") if isinstance(c, dict) else getattr(c, "role", "?")
        hit = value_leak(str(content), values)
        if hit:
            return f"the model also receives the value in the {role} context ({hit!r})"
    return None


def _spans_from(regions: list[tuple[float, float, int, int]], words: Sequence[WordTiming],
                sr: int) -> tuple[list[tuple[int, int]], list[MaskSpan]]:
    """Merge overlapping regions; one MaskSpan per merged region (its words: first to last)."""
    regions = sorted(regions)
    merged: list[list] = []
    for s, e, a, b in regions:
        if merged and s <= merged[-1][1]:
            m = merged[-1]
            m[1], m[3] = max(m[1], e), max(m[3], b)
        else:
            merged.append([s, e, a, b])
    samples, spans = [], []
    for s, e, a, b in merged:
        samples.append((int(round(s * sr)), int(round(e * sr))))
        spans.append(MaskSpan(word_start=a, word_end=b, start_s=round(s, 6), end_s=round(e, 6),
                              text=" ".join(w.word for w in words[a:b])))
    return samples, spans


def check_words(words: Sequence[WordTiming], duration_s: float, where: str) -> None:
    prev = 0.0
    for w in words:
        if not (prev - 1e-6 <= w.start_s <= w.end_s <= duration_s + 1e-3):
            raise AlignmentFailed(f"{where}: word timing {w.word!r} {w.start_s:.3f}-{w.end_s:.3f} s is "
                                  f"not monotone or lies outside the {duration_s:.3f} s utterance")
        prev = w.start_s


def build_items(source: MaskSource, samples: np.ndarray, sample_rate: int, words: Sequence[WordTiming],
                critical: tuple[int, int], *, transcript: str, config: MaskConfig, seed: int,
                workdir: Path) -> list[MaskedItem]:
    """Every variant of one source; files under ``workdir/artifacts/mask/<source>-<hash>/``."""
    x = np.asarray(samples, dtype=np.float32)
    duration = len(x) / sample_rate
    check_words(words, duration, f"source {source.id}")
    c0, c1 = critical
    if not (0 <= c0 < c1 <= len(words)):
        raise SpanNotFound(f"source {source.id}: critical span {critical} outside the {len(words)} words")
    t0, t1 = words[c0].start_s, words[c1 - 1].end_s
    if t1 - t0 <= 0:
        raise AlignmentFailed(f"source {source.id}: the critical span "
                              f"{' '.join(w.word for w in words[c0:c1])!r} has no duration")
    values = [v for v in (source.answer, " ".join(w.word for w in words[c0:c1])) if v]
    leak = mention_leaks(words, critical, source.context, values)
    if leak:
        raise SpanNotFound(f"source {source.id}: {leak}", evidence={"answer": source.answer})
    tag = stable_hash("mask-files", source, config, seed)[:10]
    out_dir = workdir / "artifacts" / STAGE / f"{source.id}-{tag}"
    rel = lambda p: p.relative_to(workdir).as_posix()  # noqa: E731
    original = rel(write_audio(out_dir / "original.flac", x, sample_rate))
    level = active_rms(x, sample_rate)
    items = []
    want = targets(source, config) if source.answerable_target_s else (None,) * len(config.windows_ms)
    if len(want) != len(config.windows_ms):
        raise SpanNotFound(f"source {source.id}: {len(want)} answerable targets for "
                           f"{len(config.windows_ms)} windows; list the sources with this config")
    for window, target in zip(config.windows_ms, want):
        s, e = expand_region(t0, t1, window, duration)
        target = e - s if target is None else target
        variants = {"unanswerable": [(s, e, c0, c1)],
                    "answerable": answerable_regions(words, critical, window, duration, config, seed,
                                                     target_s=target, content=source.kind == "conversation",
                                                     protected=source.protected)}
        for cond in ("answerable", "unanswerable"):
            regions, spans = _spans_from(variants[cond], words, sample_rate)
            for signal in config.signals:
                rng = np.random.default_rng(stable_int("mask.signal", seed, cond, signal, window))
                y, stats = apply_mask(x, sample_rate, regions, signal=signal, rng=rng,
                                      snr_db=config.snr_db, fade_ms=config.fade_ms, speech_level=level)
                name = f"{cond}_{signal}_w{window}.flac"
                path = rel(write_audio(out_dir / name, y, sample_rate))
                items.append(MaskedItem(
                    id=f"{source.id}_{cond}_{signal}_w{window}", source_id=source.source_id,
                    source_kind=source.kind, message_index=source.message_index, audio_path=path,
                    original_audio_path=original, sample_rate=sample_rate, transcript=transcript,
                    words=tuple(words), spans=tuple(spans), condition=cond, signal=signal,
                    window_ms=window, level=config.level, question=source.question,
                    answer=source.answer, slot=source.slot,
                    expected_behaviour=expected_behaviour(source, cond),
                    context=source.context,
                    masked_transcript=masked_transcript(transcript, words, spans),
                    measured=_measure(x, y, stats, sample_rate, level, signal)))
    return items


def _measure(x: np.ndarray, y: np.ndarray, stats, sr: int, level: float, signal: str) -> dict[str, float]:
    """Levels and durations measured on the output (the mask's steady part, without fades)."""
    masked = sum(r.end - r.start for r in stats)
    replaced = np.concatenate([x[r.start:r.end] for r in stats]) if stats else np.zeros(0)
    out = {"duration_s": round(len(x) / sr, 6), "masked_s": round(masked / sr, 6),
           "masked_share": round(masked / max(1, len(x)), 6),
           "fade_ms": round(min((r.fade_samples for r in stats), default=0) * 1000.0 / sr, 3),
           "speech_active_rms_dbfs": round(20 * np.log10(level), 3) if level > 0 else -120.0}
    rd = rms_db(replaced)
    out["replaced_rms_dbfs"] = round(rd, 3) if rd is not None else -120.0
    if signal != "silence":
        errs, cores = [], []
        for r in stats:
            core = y[r.start + r.fade_samples: r.end - r.fade_samples]
            got = rms_db(core)
            if got is not None and r.target_rms > 0:
                errs.append(abs(got - 20 * np.log10(r.target_rms)))
                cores.append(core)
        if cores:
            out["mask_rms_dbfs"] = round(float(rms_db(np.concatenate(cores)) or -120.0), 3)
            out["level_error_db"] = round(max(errs), 4)
    return dict(sorted(out.items()))
