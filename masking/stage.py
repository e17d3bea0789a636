"""The ``mask`` stage: sources -> masked repair items through the runner (cached, resumable,
worker processes, failures with reasons).

    result = mask_rendered(rendered, conversations, workdir="work", seed=7, config=MaskConfig())
    result = mask_sources(qa_sources("my_dataset", workdir="work", audio_column="audio",
                                     question_column="question", answer_column="answer"),
                          workdir="work", seed=7, config=MaskConfig())

Per source (one runner item, ``kind="cpu"``)::

    audio --(conversation: the renderer's word timings | QA: Whisper alignment of the transcript,
             or Whisper ASR when there is none)--> words
          --(critical span: known | normalised answer match | LLM span picker)--> span
          --build_items--> answerable/unanswerable x signals x windows  (FLAC + MaskedItem)

An alignment that fails or is low-confidence, an answer that cannot be located, a masked region
longer than the utterance: that source fails with the reason, the others are produced.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bargein.audio.io import read_audio
from bargein.errors import AlignmentFailed, AudioError, BargeinError
from bargein.masking.items import STAGE, MaskConfig, MaskSource, build_items, conversation_sources
from bargein.masking.qa import locate_answer
from bargein.masking.spans import contains_value
from bargein.records import Conversation, MaskedItem, RenderedDialogue, WordTiming
from bargein.records.release import Failure
from bargein.runner import Stage, StageContext, StageResult, run_stage
from bargein.seeding import file_sha256


def _aligner_name(source: MaskSource, config: MaskConfig) -> str | None:
    """None: use the source's own timings (the synthesiser's, carried by the render)."""
    if config.aligner in ("auto", "synth"):
        if source.words:
            return None
        if config.aligner == "synth":
            raise AlignmentFailed(f"source {source.id} has no synthesiser timings; use --aligner whisper")
        return "whisper"
    return config.aligner


def load_source_audio(source: MaskSource, workdir: Path) -> tuple[np.ndarray, int]:
    root = Path(source.audio_root) if source.audio_root else Path(workdir)
    path = Path(source.audio_path)
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        raise AudioError(f"source {source.id}: audio {str(path)!r} does not exist. Fix: pass the work "
                         "directory that rendered it as --audio-root")
    if source.audio_sha256 and file_sha256(path) != source.audio_sha256:
        raise AudioError(f"source {source.id}: {path} changed since the sources were listed "
                         "(sha256 differs); re-run the command")
    data, sr = read_audio(path)
    if source.channel is not None:
        if data.ndim != 2 or source.channel >= data.shape[1]:
            raise AudioError(f"source {source.id}: {path} has no channel {source.channel}")
        data = data[:, source.channel]
        a = int(round((source.clip_start_s or 0.0) * sr))
        b = int(round(source.clip_end_s * sr)) if source.clip_end_s is not None else len(data)
        data = np.ascontiguousarray(data[a:b])
    elif data.ndim == 2:
        data = data.mean(axis=1).astype(np.float32)
    if data.size == 0:
        raise AudioError(f"source {source.id}: the utterance is empty")
    return data, sr


def source_words(source: MaskSource, samples: np.ndarray, sr: int, config: MaskConfig
                 ) -> tuple[str, tuple[WordTiming, ...]]:
    """(transcript, word timings relative to the clip) by the configured aligner."""
    from bargein.audio.align import get_aligner

    name = _aligner_name(source, config)
    if name is None:
        return source.transcript or " ".join(w.word for w in source.words), source.words
    aligner = get_aligner(name)
    if source.transcript:
        words = aligner.align(samples, sr, source.transcript)
        if source.words and len(words) != len(source.words):
            raise AlignmentFailed(f"source {source.id}: the {name} aligner returned {len(words)} words "
                                  f"for {len(source.words)}")
        return source.transcript, tuple(words)
    if not hasattr(aligner, "transcribe"):
        raise AlignmentFailed(f"source {source.id} has no transcript and the {name} aligner cannot "
                              "transcribe; use --aligner whisper or give --transcript-column")
    text, words = aligner.transcribe(samples, sr)
    if not words:
        raise AlignmentFailed(f"source {source.id}: Whisper heard no words in the audio",
                              evidence={"asr_text": text})
    return text, tuple(words)


def mask_item(source: MaskSource, ctx: StageContext) -> list[MaskedItem]:
    """The runner's stage function (module-level so worker processes can import it)."""
    config = ctx.config if isinstance(ctx.config, MaskConfig) else MaskConfig.model_validate(ctx.config)
    workdir = Path(ctx.workdir)
    samples, sr = load_source_audio(source, workdir)
    transcript, words = source_words(source, samples, sr, config)
    if source.critical is not None:
        critical = source.critical
    else:
        llm = ctx.resources.get("llm")
        if llm is None and config.span_picker not in ("", "offline"):
            from bargein.llm import get_llm

            llm = ctx.resources["llm"] = get_llm(config.span_picker, workdir=workdir)
        critical, _how = locate_answer(words, source.answer or "", question=source.question, llm=llm)
    try:
        return build_items(source, samples, sr, words, critical, transcript=transcript, config=config,
                           seed=ctx.item_seed, workdir=workdir)
    except BargeinError as e:
        raise type(e)(f"source {source.id}: {e}" if source.id not in str(e) else str(e),
                      evidence=e.evidence) from e


def _backends(config: MaskConfig, kinds: set[str]) -> tuple[str, ...]:
    names = set()
    if config.aligner in ("whisper", "mfa"):
        names.add(config.aligner)
    elif "qa" in kinds:
        names.add("whisper")
    out = []
    for n in sorted(names):
        try:
            from bargein.audio.align import get_aligner

            out.append(f"{n}@{get_aligner(n).version}")
        except BargeinError:
            out.append(f"{n}@unavailable")
    return tuple(out)


def mask_stage(config: MaskConfig, kinds: Sequence[str] = ("conversation",)) -> Stage:
    kinds = set(kinds)
    prompts = ("mask_span_picker",) if "qa" in kinds and config.span_picker not in ("", "offline") else ()
    return Stage(name=STAGE, fn=mask_item, output=MaskedItem, config=config, version="1",
                 prompts=prompts, backends=_backends(config, kinds), kind="cpu")


def _llm_resources(spec: str, workdir: str) -> dict[str, Any]:
    if spec in ("", "offline"):
        return {}
    from bargein.llm import get_llm

    return {"llm": get_llm(spec, workdir=workdir)}


def mask_sources(sources: Sequence[MaskSource], *, workdir: str | Path, seed: int,
                 config: MaskConfig | None = None, workers: int | None = None,
                 progress: bool | None = None, extra_failures: Sequence[Failure] = ()) -> StageResult:
    """Run the ``mask`` stage on ``sources``; ``extra_failures`` (from listing) join the file."""
    from bargein.store import write_jsonl

    config = config or MaskConfig()
    workdir = Path(workdir)
    stage = mask_stage(config, {s.kind for s in sources} or {"conversation"})
    factory = functools.partial(_llm_resources, config.span_picker, str(workdir))
    result = run_stage(stage, list(sources), workdir=workdir, seed=seed, resources_factory=factory,
                       workers=workers, progress=progress)
    if extra_failures:
        result.failures = list(extra_failures) + result.failures
        write_jsonl(workdir / f"{STAGE}.failures.jsonl", result.failures)
    return result


def mask_rendered(rendered: Sequence[RenderedDialogue], conversations: Sequence[Conversation], *,
                  workdir: str | Path, seed: int, config: MaskConfig | None = None,
                  audio_root: str | Path = "", workers: int | None = None,
                  progress: bool | None = None, signals: Sequence[str] | None = None,
                  windows_ms: Sequence[int] | None = None, max_items: int | None = None) -> StageResult:
    """Repair items from rendered conversations (``audio_root``: the render work dir).

    ``signals`` / ``windows_ms`` override the config's. ``max_items`` caps the items: whole
    sources only (their variants stay complete; at least one), taken round-robin over dialogues.
    """
    config = config or MaskConfig()
    over = {k: tuple(v) for k, v in (("signals", signals), ("windows_ms", windows_ms)) if v is not None}
    if over:
        config = MaskConfig(**{**config.model_dump(), **over})
    root = str(Path(audio_root).resolve()) if audio_root else str(Path(workdir).resolve())
    sources, failures = conversation_sources(rendered, conversations, config, root)
    if max_items is not None:
        sources = cap_sources(sources, max_items, 2 * len(config.signals) * len(config.windows_ms))
    return mask_sources(sources, workdir=workdir, seed=seed, config=config, workers=workers,
                        progress=progress, extra_failures=failures)


def cap_sources(sources: Sequence[MaskSource], max_items: int, per_source: int) -> list[MaskSource]:
    """At most ``max_items // per_source`` sources (>= 1 when any exists), one per dialogue in
    turn. Sources whose answerable mask matches their own value come first; pairs that copy each
    other's mask length (``length_partner``) are taken together or not at all, so the capped
    items keep one length distribution, and as many as fill the cap (one own-matched source
    fewer when two partners fit where it would)::

        keep 6, own-matched 3, pairs 2   ->  own 2 + 2 pairs = 6  (not own 3 + 1 pair = 5)
    """
    keep = max(1, int(max_items) // max(1, per_source))
    by_id = {s.id: s for s in sources}
    own = [s for s in sources if s.length_partner not in by_id]
    paired = [s for s in sources if s.length_partner in by_id]
    n_pairs = len(paired) // 2
    pairs = min(n_pairs, max(0, -(-(keep - len(own)) // 2)))
    if not own and keep == 1 and n_pairs:
        pairs = 1                           # at least one item: one pair over a cap of one source
    chosen: dict[str, MaskSource] = {}
    for pool, limit in ((own, min(len(own), max(0, keep - 2 * pairs))), (paired, 2 * pairs)):
        by_dialogue: dict[str, list[MaskSource]] = {}
        for s in pool:
            by_dialogue.setdefault(s.source_id, []).append(s)
        queues = list(by_dialogue.values())
        taken = 0
        while taken < limit and any(queues):
            for q in queues:
                while q and q[0].id in chosen:
                    q.pop(0)
                if not q or taken >= limit:
                    continue
                s = q.pop(0)
                unit = [s, by_id[s.length_partner]] if s.length_partner in by_id else [s]
                if taken + len(unit) <= limit:
                    chosen.update((u.id, u) for u in unit)
                    taken += len(unit)
    order = {s.id: n for n, s in enumerate(sources)}
    return sorted(chosen.values(), key=lambda s: order[s.id])


# ------------------------------------------------------------------ Whisper check
def asr_check(items: Sequence[MaskedItem], workdir: str | Path) -> list[dict[str, Any]]:
    """Transcribe every item with Whisper: does the masked audio still say the value?

    The right outcome: answerable variants still say it, unanswerable ones no longer do.
    """
    from bargein.audio.align import transcribe

    out = []
    for it in items:
        if not it.answer:
            continue
        x, sr = read_audio(Path(workdir) / it.audio_path)
        text, _ = transcribe(x, sr)
        has = contains_value(text, it.answer)
        out.append({"item_id": it.id, "condition": it.condition, "signal": it.signal,
                    "window_ms": it.window_ms, "asr_text": text, "contains_value": has,
                    "ok": has == (it.condition == "answerable")})
    return out


def asr_rates(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Share of answerable variants that still say the value, unanswerable that no longer do."""
    ans = [r for r in rows if r["condition"] == "answerable"]
    una = [r for r in rows if r["condition"] == "unanswerable"]
    return {"answerable_value_kept": sum(r["contains_value"] for r in ans) / len(ans) if ans else float("nan"),
            "unanswerable_value_removed": sum(not r["contains_value"] for r in una) / len(una) if una else float("nan"),
            "n_answerable": len(ans), "n_unanswerable": len(una)}
