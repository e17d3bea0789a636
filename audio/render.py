"""Render conversations to two-channel audio: synthesis (cached), cut-ins, timeline, mix, labels.

    result = render_conversations(convs, workdir="work", seed=7, config=RenderConfig())

Per conversation (one runner item, ``kind="cpu"``)::

    message --TTS (cache: engine@version, voice, text)--> Speech --resample/trim--> clip
    interrupted assistant message --plan_cut/apply_cut--> clip stops overlap_ms after onset
    clips --place_clips (gaps, cut-ins) [+ backchannels]--> timeline --mix/normalise-->
    clean.flac [+ augmented dialogue.flac] + per-message FLAC clips + labels.npz

Files go to ``<workdir>/artifacts/render/<conversation id>-<hash>/``; record paths are
relative to the work dir. The synthesis cache lives in ``<workdir>/tts_cache/``.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bargein.audio import labels as L
from bargein.audio.augment import BABBLE_SENTENCES, augment, make_augmentation
from bargein.audio.base import Speech
from bargein.audio.cutin import apply_cut, cut_words, plan_cut
from bargein.audio.mix import mix, normalize_channels, prepare_speech, write_clip, write_stereo
from bargein.audio.timeline import (
    BACKCHANNEL_PHRASES, Clip, GapModel, Placement, add_backchannels, place_clips,
    plan_backchannels, timeline_length,
)
from bargein.audio.voices import DEFAULT_ASSISTANT, DEFAULT_USER, assign_voices, get_tts, get_voice
from bargein.audio.wordtimes import SILENCE_DB, check_text, frame_energy
from bargein.cache import ContentCache, cache_key
from bargein.errors import AlignmentFailed, AudioError, BargeinError, ConfigError
from bargein.records.audio import RenderedDialogue, Segment, WordTiming
from bargein.records.conversation import Conversation, VerifiedConversation
from bargein.records.release import Failure
from bargein.runner import Stage, StageContext, StageResult, run_stage
from bargein.seeding import stable_hash, stable_int

log = logging.getLogger("bargein.audio.render")

STAGE = "render"
CHANNEL = {"user": 0, "assistant": 1}
IPU_MERGE_S = 0.18          # word gaps shorter than this stay inside one speech unit (labels)


class RenderConfig(BaseModel):
    """Everything a rendered dialogue depends on besides the conversation and the seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    assistant_voice: str = DEFAULT_ASSISTANT
    user_voice: str = DEFAULT_USER
    voice_pool: dict[Literal["assistant", "user"], tuple[str, ...]] = {}  # drawn per conversation
    voice_overrides: dict[str, dict[Literal["assistant", "user"], str]] = {}  # conv id -> role -> voice
    sample_rate: int = Field(16000, ge=8000, le=48000)
    gaps: GapModel = GapModel()
    jitter_ms: float = Field(40.0, ge=0, le=200)
    fade_ms: float = Field(10.0, ge=5, le=20)
    lead_in_s: float = Field(0.3, ge=0, le=5)
    tail_s: float = Field(0.5, ge=0, le=5)
    backchannels: bool = False
    backchannel_prob: float = Field(0.5, ge=0, le=1)
    backchannel_min_turn_s: float = Field(3.0, ge=0.5)
    noise: Literal["none", "white", "pink", "babble"] = "none"
    snr_db: float = Field(20.0, ge=-10, le=60)
    telephony: bool = False
    babble_voices: tuple[str, ...] = ("espeak:en-gb", "espeak:en-us+f2", "espeak:en-029+m3",
                                      "espeak:en-gb-scotland+f4", "espeak:en-us-nyc+m5")
    babble_talkers: int = Field(4, ge=1, le=16)
    label_vad: Literal["auto", "silero", "webrtc", "energy", "none"] = "auto"
    clips: bool = True

    @field_validator("sample_rate")
    @classmethod
    def _rate(cls, v: int) -> int:
        if v not in (8000, 16000, 22050, 24000, 32000, 44100, 48000):
            raise ValueError(f"sample_rate {v} is not a standard release rate; use 16000 (default), "
                             "8000, 22050, 24000, 32000, 44100 or 48000")
        return v

    @classmethod
    def from_build(cls, audio: Any, **overrides: Any) -> "RenderConfig":
        """From the build config's ``audio`` section (:class:`bargein.config.AudioConfig`)."""
        return cls(assistant_voice=audio.assistant_voice, user_voice=audio.user_voice,
                   sample_rate=audio.sample_rate, noise=audio.noise, snr_db=audio.snr_db,
                   telephony=audio.telephony, backchannels=audio.backchannels, **overrides)

    def voice_ids(self) -> list[str]:
        ids = {self.assistant_voice, self.user_voice}
        for vs in self.voice_pool.values():
            ids.update(vs)
        for m in self.voice_overrides.values():
            ids.update(m.values())
        if self.noise == "babble":
            ids.update(self.babble_voices)
        return sorted(ids)


# ------------------------------------------------------------------ synthesis cache
class TTSPool:
    """Voices by id, with a content-addressed synthesis cache on disk (``None``: no cache).

    The key is (engine id@version, engine voice name, text): the same text in the same voice is
    synthesised once per work dir, in any process. Entries are ``.npz`` with the exact float32
    samples, so a cache hit renders byte-identically to a fresh synthesis.
    """

    def __init__(self, cache_dir: str | Path | None):
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.cache = ContentCache(self.cache_dir, ".npz") if self.cache_dir is not None else None
        self.hits = 0
        self.misses = 0
        self.synth_s = 0.0                      # wall time spent inside the engines

    def engine_key(self, voice_id: str) -> str:
        tts, _ = get_tts(voice_id)
        return f"{tts.id}@{tts.version}"

    def synthesize(self, voice_id: str, text: str) -> Speech:
        voice = get_voice(voice_id)
        tts, name = get_tts(voice_id)
        key = cache_key("tts", f"{tts.id}@{tts.version}", name, text)
        data = self.cache.get(key) if self.cache is not None else None
        if data is not None:
            speech = _load_speech(data, self.cache.path(key))
            if speech is not None:
                _check_rate(speech, voice.sample_rate, voice_id, f"cache entry {self.cache.path(key)}")
                self.hits += 1
                return speech
        t0 = time.perf_counter()
        speech = tts.synthesize(text, name)
        self.synth_s += time.perf_counter() - t0
        _check_rate(speech, voice.sample_rate, voice_id, f"engine {tts.id}")
        self.misses += 1
        if self.cache is not None:
            self.cache.put(key, _dump_speech(speech))
        return speech


def _check_rate(speech: Speech, expected: int, voice_id: str, source: str) -> None:
    if speech.sample_rate != expected:
        raise AudioError(f"sample-rate mismatch for voice {voice_id}: {source} gives "
                         f"{speech.sample_rate} Hz, the voice registry says {expected} Hz. Fix: "
                         "register the voice with its real rate (voices.register_voice) or delete "
                         "the stale <workdir>/tts_cache entry")


def _dump_speech(s: Speech) -> bytes:
    meta = {"sample_rate": s.sample_rate, "text": s.text, "voice_id": s.voice_id,
            "timing_source": s.timing_source, "words": [w.model_dump(mode="json") for w in s.words]}
    buf = io.BytesIO()
    np.savez(buf, samples=np.asarray(s.samples, dtype=np.float32), meta=np.array(json.dumps(meta)))
    return buf.getvalue()


def _load_speech(data: bytes, path: Path) -> Speech | None:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            samples = np.array(z["samples"], dtype=np.float32)
        return Speech(samples=samples, sample_rate=int(meta["sample_rate"]),
                      words=tuple(WordTiming.model_validate(w) for w in meta["words"]),
                      text=meta["text"], voice_id=meta["voice_id"], timing_source=meta["timing_source"])
    except (OSError, ValueError, KeyError) as e:
        log.warning("unreadable synthesis cache entry %s (%s); synthesising again", path, e)
        return None


def make_resources(cache_dir: str | None) -> dict[str, Any]:
    """The per-process resources of the render stage (``resources_factory``)."""
    return {"tts": TTSPool(cache_dir)}


# ------------------------------------------------------------------ one dialogue
def resolve_voices(conversation_id: str, seed: int, config: RenderConfig) -> dict[str, str]:
    """Role -> voice id: the override for this conversation, else seeded from the pool/defaults."""
    if conversation_id in config.voice_overrides:
        chosen = {"assistant": config.assistant_voice, "user": config.user_voice}
        chosen.update(config.voice_overrides[conversation_id])
        return chosen
    return assign_voices(conversation_id, seed, assistant=config.assistant_voice,
                         user=config.user_voice, pool=config.voice_pool or None)


def _vad(name: str) -> Any:
    from bargein.audio.vad import get_vad

    return get_vad(name)                # one instance per process (bargein.registry.get)


def _context(e: BargeinError, where: str) -> BargeinError:
    return type(e)(f"{where}: {e}", evidence=e.evidence)


def _ipus(seg: Segment, clean: np.ndarray | None = None, sr: int = 16000) -> list[tuple[float, float, str]]:
    """Speech units of a segment, merged across gaps < 180 ms.

    With the clean channel: where the segment's own audio sounds (5 ms frames, -40 dB under the
    segment's loudest), so a pause inside a word ("two one six ... seven nine") splits a unit and
    a unit ends where the sound ends. Without it: the word timings (whole segment if untimed).
    """
    runs: list[list[float]] = []
    if clean is not None:
        a, b = int(round(seg.start_s * sr)), int(round(seg.end_s * sr))
        e, hop = frame_energy(clean[a:b, seg.channel], sr)
        if e.size and e.max() > 0:
            loud = e > e.max() * 10 ** (SILENCE_DB / 20.0)
            d = np.diff(np.concatenate([[0], loud.astype(np.int8), [0]]))
            for i, j in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
                runs.append([(a + i * hop) / sr, (a + j * hop) / sr])
    if not runs and seg.words:
        runs = [[w.start_s, w.end_s] for w in seg.words]
        runs[0][0], runs[-1][1] = min(runs[0][0], seg.start_s), max(runs[-1][1], seg.end_s)
    if not runs:
        return [(seg.start_s, seg.end_s, seg.kind)]
    out: list[list[float]] = []
    for r0, r1 in runs:
        if out and r0 - out[-1][1] < IPU_MERGE_S:
            out[-1][1] = max(out[-1][1], r1)
        else:
            out.append([r0, r1])
    return [(a_, b_, seg.kind) for a_, b_ in out]


def message_clips(conv: Conversation, *, config: RenderConfig, voices: dict[str, str],
                  synth: Callable[[str, str], Speech], rng: random.Random) -> tuple[list[Clip], dict]:
    """One clip per message at the output rate; interrupted messages cut (``{position: CutIn}``)."""
    sr, msgs = config.sample_rate, conv.messages
    if not msgs:
        raise AudioError(f"conversation {conv.id} has no messages to render")
    clips: list[Clip] = []
    cuts = {}
    for i, m in enumerate(msgs):
        vid = voices[m.role]
        try:
            check_text(m.text, vid)
            samples, words = prepare_speech(synth(vid, m.text), sr)
            onset = None
            if m.interruption is not None:
                nxt = msgs[i + 1] if i + 1 < len(msgs) else None
                if nxt is None or nxt.role != "user":
                    raise AudioError("is interrupted but is not followed by a user interjection")
                if not words:
                    raise AlignmentFailed("has no word timings, so the cut-in cannot be placed")
                cut = plan_cut(words, len(samples), sr, m.text, m.interruption, rng=rng,
                               jitter_ms=config.jitter_ms, samples=samples)
                samples, words, onset = apply_cut(samples, cut, sr, config.fade_ms), cut_words(words, cut), cut.onset
                cuts[i] = cut
        except BargeinError as e:
            raise _context(e, f"conversation {conv.id} message {m.index} ({m.role}, voice {vid})") from e
        clips.append(Clip(i, CHANNEL[m.role], samples, words, m.text, vid, onset=onset))
    return clips, cuts


def _backchannel_maker(voices: dict[str, str], synth: Callable[[str, str], Speech], sr: int,
                       rng: random.Random) -> Callable[[int, int, int], Clip | None]:
    def make(ch: int, idx: int, k: int) -> Clip | None:
        vid = voices["user" if ch == 0 else "assistant"]
        phrases = list(BACKCHANNEL_PHRASES)
        rng.shuffle(phrases)
        for phrase in phrases:          # an engine may reject a phrase (e.g. its alignment)
            try:
                s, w = prepare_speech(synth(vid, phrase), sr)
            except BargeinError as e:
                log.debug("backchannel %r in voice %s failed: %s", phrase, vid, e)
                continue
            return Clip(idx, ch, s, w, phrase, vid, kind="backchannel")
        return None

    return make


def _write_labels(path: Path, segments: Sequence[Segment], duration: float, audio: np.ndarray,
                  sr: int, label_vad: str, augmented: bool, clean: np.ndarray | None = None) -> None:
    """Timeline (truth) labels from each segment's clean audio, plus ``vad_*`` labels measured on
    the final audio."""
    per_ch: list[list[tuple[float, float, str]]] = [[], []]
    for s in segments:
        per_ch[s.channel].extend(_ipus(s, clean, sr))
    lab = L.frame_labels(per_ch, duration)
    source = "timeline"
    if label_vad == "auto":     # energy is exact on clean synthetic audio; noise needs silero
        label_vad = "silero" if augmented else "energy"
    if label_vad != "none":
        vad = _vad(label_vad)
        measured = L.frame_labels(vad.channel_segments(audio, sr), duration)
        lab.update({f"vad_{k}": v for k, v in measured.items()})
        source = f"timeline+vad:{vad.id}"
    L.save_frame_labels(path, labels=lab, source=source)


def render_dialogue(conv: Conversation, *, config: RenderConfig, voices: dict[str, str],
                    synth: Callable[[str, str], Speech], seed: int, workdir: Path,
                    engines: Sequence[str] = ()) -> RenderedDialogue:
    """Render one conversation (see the module docstring). ``seed`` is the item's seed."""
    sr = config.sample_rate
    workdir = Path(workdir)
    tag = stable_hash("render-files", conv.id, config, voices, seed)[:12]
    out_dir = workdir / "artifacts" / STAGE / f"{conv.id}-{tag}"
    rel = lambda p: p.relative_to(workdir).as_posix()  # noqa: E731
    rng_bc = random.Random(stable_int("render.backchannels", seed))
    clips, cuts = message_clips(conv, config=config, voices=voices, synth=synth,
                                rng=random.Random(stable_int("render.cut", seed)))
    placements = place_clips(clips, config.gaps, random.Random(stable_int("render.gaps", seed)), sr,
                             lead_in_s=config.lead_in_s)
    if config.backchannels:
        plans = plan_backchannels(placements, rng_bc, sr, prob=config.backchannel_prob,
                                  min_turn_s=config.backchannel_min_turn_s)
        placements = add_backchannels(placements, plans, _backchannel_maker(voices, synth, sr, rng_bc),
                                      sample_rate=sr)
    n = timeline_length(placements, sr, config.tail_s)
    clean, _gains = normalize_channels(mix(placements, n), sr)
    clean_path = write_stereo(out_dir / "clean.flac", clean, sr)
    aug = make_augmentation(config.noise, config.snr_db, config.telephony,
                            seed=stable_int("render.augment", seed), babble_voices=config.babble_voices)
    final, audio_path = clean, clean_path
    augmented = aug.noise != "none" or aug.telephony
    if augmented:
        sources = ([prepare_speech(synth(v, t), sr)[0] for v in config.babble_voices
                    for t in BABBLE_SENTENCES] if aug.noise == "babble" else [])
        final = augment(clean, sr, aug, babble_sources=sources, babble_talkers=config.babble_talkers)
        audio_path = write_stereo(out_dir / "dialogue.flac", final, sr)
    segments = [_segment(p, conv.messages, cuts.get(p.clip.message_index) if p.clip.kind == "message"
                         else None, sr, final if config.clips else None, out_dir, rel)
                for p in sorted(placements, key=lambda p: (p.start, p.clip.channel))]
    labels_path = out_dir / "labels.npz"
    _write_labels(labels_path, segments, n / sr, final, sr, config.label_vad, augmented, clean)
    return RenderedDialogue(
        conversation_id=conv.id, audio_path=rel(audio_path), sample_rate=sr, duration_s=n / sr,
        segments=tuple(segments), voices=dict(voices), augmentation=aug,
        frame_labels_path=rel(labels_path), engines=tuple(engines),
        clean_audio_path=rel(clean_path) if augmented else None)


def _segment(p: Placement, msgs, cut, sr: int, audio: np.ndarray | None, out_dir: Path, rel) -> Segment:
    c = p.clip
    words = tuple(WordTiming(word=w.word, start_s=(p.start + w.start) / sr, end_s=(p.start + w.end) / sr,
                             char_start=w.char_start) for w in c.words)
    clip_path = None
    if audio is not None and c.kind == "message":
        m = msgs[c.message_index]
        path = write_clip(out_dir / f"m{m.index:03d}_{m.role}.flac", audio, c.channel,
                          p.start, p.end, sr)
        clip_path = rel(path)
    return Segment(
        message_index=msgs[c.message_index].index, channel=c.channel, start_s=p.start / sr,
        end_s=p.end / sr, text=c.text, words=words, voice_id=c.voice_id, clip_path=clip_path,
        kind=c.kind,
        heard_text=cut.heard_text if cut else None, spoken_text=cut.spoken_text if cut else None,
        cut_s=(p.start + cut.onset) / sr if cut else None,
        stop_s=(p.start + cut.stop) / sr if cut else None,
        cut_resolution=cut.resolution if cut else None)


def as_rendered(conv: Conversation, rd: RenderedDialogue) -> Conversation:
    """``conv`` as its audio says it: each interrupted message's heard text (and cut word) is the
    render's, and ``overlap_ms`` is the realised ``stop_s - cut_s`` (0 if the assistant had
    already fallen silent). Stages downstream of the render (eval items, rubrics, release rows)
    should read this rather than the planned conversation::

        planned   heard "...can you confirm the"  overlap_ms 300
        audio     heard "...can you confirm the"  stop_s - cut_s = 0.284 s  ->  overlap_ms 284
    """
    by_index = {s.message_index: s for s in rd.segments if s.kind == "message" and s.cut_s is not None}
    msgs = []
    for m in conv.messages:
        seg = by_index.get(m.index)
        if m.interruption is None or seg is None or seg.heard_text is None:
            msgs.append(m)
            continue
        heard = seg.heard_text
        k = len(heard.split())
        overlap = max(0, int(round((seg.stop_s - seg.cut_s) * 1000))) if seg.stop_s is not None else \
            m.interruption.overlap_ms
        itr = m.interruption.with_(heard_text=heard, cut_char_offset=max(1, len(heard)),
                                   cut_word_index=max(1, k), overlap_ms=overlap,
                                   id=m.interruption.id)
        msgs.append(m.with_(heard_text=heard, interruption=itr, id=m.id))
    return conv.with_(messages=tuple(msgs), id=conv.id)      # the same conversation, as heard


# ------------------------------------------------------------------ the stage
def render_item(item: Conversation | VerifiedConversation, ctx: StageContext) -> RenderedDialogue:
    """The runner's stage function (module-level so worker processes can import it)."""
    config = ctx.config if isinstance(ctx.config, RenderConfig) else RenderConfig.model_validate(ctx.config)
    conv = item.conversation if isinstance(item, VerifiedConversation) else item
    pool = ctx.resources.get("tts")
    if pool is None:
        pool = ctx.resources["tts"] = TTSPool(Path(ctx.workdir) / "tts_cache")
    voices = resolve_voices(conv.id, ctx.seed, config)
    used = sorted(set(voices.values()) | (set(config.babble_voices) if config.noise == "babble" else set()))
    engines = tuple(sorted({pool.engine_key(v) for v in used}))
    return render_dialogue(conv, config=config, voices=voices, synth=pool.synthesize,
                           seed=ctx.item_seed, workdir=Path(ctx.workdir), engines=engines)


def backend_ids(config: RenderConfig) -> tuple[str, ...]:
    """Engine id@version for every voice the config can use (``@unavailable`` if not installed)."""
    out = set()
    for vid in config.voice_ids():
        try:
            tts, _ = get_tts(vid)
            out.add(f"{tts.id}@{tts.version}")
        except BargeinError:
            out.add(f"{vid.partition(':')[0]}@unavailable")
    return tuple(sorted(out))


def render_stage(config: RenderConfig) -> Stage:
    return Stage(name=STAGE, fn=render_item, output=RenderedDialogue, config=config,
                 version="3", backends=backend_ids(config), kind="cpu")


def render_conversations(items: Sequence[Conversation | VerifiedConversation], *, workdir: str | Path,
                         seed: int, config: RenderConfig | None = None, workers: int | None = None,
                         progress: bool | None = None, pool: TTSPool | None = None) -> StageResult:
    """Render every conversation through the runner (cached, resumable, worker processes).

    Discarded verified conversations (``accepted=False``) are skipped. ``pool`` (in-process,
    ``workers=1``) lets a caller see cache hits; otherwise each worker builds its own.
    """
    config = config or RenderConfig()
    workdir = Path(workdir)
    todo = [it for it in items if not (isinstance(it, VerifiedConversation) and not it.accepted)]
    if pool is not None:
        return run_stage(render_stage(config), todo, workdir=workdir, seed=seed,
                         resources={"tts": pool}, workers=1, progress=progress)
    factory = functools.partial(make_resources, str(workdir / "tts_cache"))
    return run_stage(render_stage(config), todo, workdir=workdir, seed=seed,
                     resources_factory=factory, workers=workers, progress=progress)


def load_conversations(path: str | Path) -> tuple[list[Conversation | VerifiedConversation], list[Failure]]:
    """Conversations from a JSONL file of VerifiedConversation or Conversation records.

    A line that is not valid JSON or not such a record becomes a :class:`Failure` naming the
    file and line; the other lines load.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read conversations file {str(path)!r}: {e}. Fix: pass the "
                          "conversations.jsonl written by 'bargein generate conversations'") from e
    items: list[Conversation | VerifiedConversation] = []
    failures: list[Failure] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        errors = []
        for cls in (VerifiedConversation, Conversation):
            try:
                items.append(cls.model_validate_json(line))
                break
            except ValidationError as e:
                err = e.errors()[0]
                loc = ".".join(str(p) for p in err["loc"]) or "(line)"
                errors.append(f"as {cls.__name__}: {loc}: {err['msg']}")
        else:
            failures.append(Failure(
                stage=STAGE, item_id=f"{path.name}:{n}", error_type="AudioError",
                reason=(f"{path}:{n} is not a Conversation or VerifiedConversation record "
                        f"({'; '.join(errors)}). Fix: regenerate the file or remove the line"),
                evidence={"line": n, "text": line[:200]}))
    return items, failures
