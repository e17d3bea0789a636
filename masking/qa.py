"""External spoken QA as a masking source: any dataset with audio, question and answer columns.

    sources = qa_sources("path/to/dataset", workdir="work", audio_column="audio",
                         question_column="question", answer_column="answer",
                         transcript_column=None)      # None: Whisper transcribes

The dataset may be a folder written by ``Dataset.save_to_disk``, a Parquet file or folder, a
local dataset repo, or a Hub id. Audio is read as bytes (``Audio(decode=False)``) and decoded
with soundfile, so no torch is needed; each clip is stored once under
``<workdir>/qa_audio/`` by its sha256. In the stage, the answer is located in the aligned (or
ASR) transcript by normalised match; when it is not there verbatim, an optional LLM span picker
(``prompts/mask_span_picker``) names the words that carry it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bargein.errors import ConfigError, GenerationFailed
from bargein.masking.items import MaskSource
from bargein.masking.spans import SpanNotFound, canonical, find_span
from bargein.records import WordTiming
from bargein.store import atomic_write_bytes

QA_AUDIO_DIR = "qa_audio"


def _load(path_or_id: str, split: str | None):
    import datasets

    p = Path(path_or_id)
    try:
        if p.is_dir() and ((p / "state.json").is_file() or (p / "dataset_dict.json").is_file()):
            ds = datasets.load_from_disk(str(p))
        elif p.is_file() and p.suffix == ".parquet":
            ds = datasets.load_dataset("parquet", data_files=str(p))
        elif p.is_dir() and not any(p.rglob("*.parquet")) and not (p / "README.md").is_file():
            raise ConfigError(f"--qa-dataset {path_or_id!r}: the folder is neither a saved dataset "
                              "(state.json) nor holds Parquet files. Fix: pass a folder written by "
                              "Dataset.save_to_disk, a .parquet file, or a Hub id")
        else:
            ds = datasets.load_dataset(str(p) if p.exists() else path_or_id)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - datasets raises many types; name the input and the fix
        raise ConfigError(f"--qa-dataset {path_or_id!r} cannot be loaded: {type(e).__name__}: {e}. "
                          "Fix: pass a saved dataset folder, a .parquet file or a Hub id "
                          "(offline: the Hub cache must hold it)") from e
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds)
        if split is None:
            if len(names) != 1 and "test" not in names:
                raise ConfigError(f"--qa-dataset {path_or_id!r} has splits {names}; choose one with --split")
            split = "test" if "test" in names else names[0]
        if split not in ds:
            raise ConfigError(f"--split {split!r} is not in {path_or_id!r}; splits: {names}")
        ds = ds[split]
    return ds, split or "train"


def _audio_bytes(cell: Any, root: Path, row: int, column: str) -> tuple[bytes, str]:
    """(file bytes, suffix) from an ``Audio(decode=False)`` cell, a path string or a dict."""
    if isinstance(cell, dict):
        if cell.get("bytes"):
            suffix = Path(cell.get("path") or "a.wav").suffix or ".wav"
            return bytes(cell["bytes"]), suffix
        cell = cell.get("path")
    if isinstance(cell, str) and cell:
        p = Path(cell) if Path(cell).is_absolute() else root / cell
        if p.is_file():
            return p.read_bytes(), p.suffix or ".wav"
        raise ConfigError(f"row {row}: audio file {cell!r} in column {column!r} does not exist")
    raise ConfigError(f"row {row}: column {column!r} holds no audio ({type(cell).__name__}). Fix: "
                      "--audio-column must name an Audio column or a column of file paths")


def _answer_text(value: Any, row: int, column: str) -> str:
    """A plain answer string; SQuAD-style ``{"text": [...]}`` and lists give their first entry."""
    if isinstance(value, dict):
        value = value.get("text", value.get("answer"))
    if isinstance(value, (list, tuple)):
        value = next((v for v in value if isinstance(v, str) and v.strip()), None)
    if value is None or not str(value).strip():
        raise ConfigError(f"row {row}: answer column {column!r} is empty")
    return str(value).strip()


def qa_sources(dataset: str, *, workdir: str | Path, audio_column: str, question_column: str,
               answer_column: str, transcript_column: str | None = None, id_column: str | None = None,
               split: str | None = None, limit: int | None = None) -> list[MaskSource]:
    """One :class:`MaskSource` per row (audio stored by content under ``workdir/qa_audio``)."""
    from datasets import Audio

    ds, split = _load(dataset, split)
    cols = list(ds.column_names)
    for opt, col in (("--audio-column", audio_column), ("--question-column", question_column),
                     ("--answer-column", answer_column), ("--transcript-column", transcript_column),
                     ("--id-column", id_column)):
        if col is not None and col not in cols:
            raise ConfigError(f"{opt} {col!r} is not a column of {dataset!r}; columns: {cols}")
    if isinstance(ds.features.get(audio_column), Audio):
        ds = ds.cast_column(audio_column, Audio(decode=False))
    n = len(ds) if limit is None else min(len(ds), limit)
    root = Path(dataset) if Path(dataset).is_dir() else Path(dataset).parent
    workdir = Path(workdir)
    out, seen = [], set()
    for row in range(n):
        r = ds[row]
        data, suffix = _audio_bytes(r[audio_column], root, row, audio_column)
        sha = hashlib.sha256(data).hexdigest()
        rel = f"{QA_AUDIO_DIR}/{sha[:2]}/{sha}{suffix.lower()}"
        if not (workdir / rel).is_file():
            atomic_write_bytes(workdir / rel, data)
        ex_id = str(r[id_column]) if id_column else f"{split}-{row:06d}"
        if ex_id in seen:
            raise ConfigError(f"--id-column {id_column!r}: id {ex_id!r} repeats (row {row}); ids must be unique")
        seen.add(ex_id)
        transcript = r[transcript_column] if transcript_column else None
        if transcript_column and (not isinstance(transcript, str) or not transcript.strip()):
            transcript = None                      # an empty transcript: Whisper transcribes
        question = r[question_column]
        out.append(MaskSource(
            id=f"qa-{ex_id}", kind="qa", source_id=ex_id, audio_path=rel, audio_sha256=sha,
            transcript=transcript, answer=_answer_text(r[answer_column], row, answer_column),
            question=str(question) if question is not None else None))
    return out


# ------------------------------------------------------------------ LLM span picker
class SpanPick(BaseModel):
    """The words of a numbered transcript that carry the answer (inclusive indices)."""

    found: bool
    start_word: int = Field(0, ge=0)
    end_word: int = Field(0, ge=0)
    quote: str = ""


async def pick_span_llm(llm: Any, words: Sequence[WordTiming], question: str | None, answer: str,
                        *, sample: int = 0) -> tuple[int, int]:
    """Ask ``llm`` (``structured``) which words carry ``answer``; the quote must match the words."""
    from bargein.prompts import render

    toks = [w.word for w in words]
    prompt = render("mask_span_picker", words=list(enumerate(toks)), question=question or "",
                    answer=answer)
    try:
        pick = await llm.structured([{"role": "user", "content": prompt}], SpanPick,
                                    agent="mask_span_picker", sample=sample)
    except GenerationFailed as e:
        raise SpanNotFound(f"the LLM span picker gave no valid answer for {answer!r}: {e}",
                           evidence=e.evidence) from e
    pick = pick if isinstance(pick, SpanPick) else SpanPick.model_validate(pick)
    ev = {"pick": pick.model_dump(), "words": toks, "answer": answer}
    if not pick.found:
        raise SpanNotFound(f"the answer {answer!r} is not in the transcript (LLM span picker)", evidence=ev)
    a, b = pick.start_word, pick.end_word + 1
    if not (0 <= a < b <= len(toks)):
        raise SpanNotFound(f"the LLM span picker chose words {a}..{b - 1} outside 0..{len(toks) - 1}",
                           evidence=ev)
    if pick.quote and canonical(pick.quote) != canonical(toks[a:b]):
        hit = find_span(toks, [canonical(pick.quote)])
        if hit is None:
            raise SpanNotFound(f"the LLM span picker's quote {pick.quote!r} is not words {a}..{b - 1} "
                               f"({' '.join(toks[a:b])!r}) nor anywhere in the transcript", evidence=ev)
        a, b = hit
    return a, b


def locate_answer(words: Sequence[WordTiming], answer: str, *, question: str | None = None,
                  llm: Any = None) -> tuple[tuple[int, int], str]:
    """The answer's word range and how it was found (``"match"`` or ``"llm"``)."""
    hit = find_span([w.word for w in words], answer)
    if hit is not None:
        return hit, "match"
    if llm is None:
        raise SpanNotFound(f"the answer {answer!r} is not in the transcript "
                           f"{' '.join(w.word for w in words)[:200]!r} (normalised match). Fix: check "
                           "the answer column, or pass --span-picker PROVIDER:MODEL",
                           evidence={"answer": answer, "words": [w.word for w in words]})
    import asyncio

    return asyncio.run(pick_span_llm(llm, words, question, answer)), "llm"
