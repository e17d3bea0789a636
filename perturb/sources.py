"""Two-channel dialogue inputs for perturbation and scoring, all as :class:`RenderedDialogue`.

* bargein's ``rendered.jsonl`` (or a folder holding one): segments with word timings kept;
* a folder of stereo WAV/FLAC files (searched recursively);
* a Hugging Face dataset: a ``save_to_disk`` folder or Parquet file(s) with a stereo audio
  column, read with ``Audio(decode=False)`` + soundfile (datasets' own decoder needs torch).
  Audio bytes are written once to ``<workdir>/sources/`` so worker processes can read them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import soundfile as sf

from bargein.errors import ConfigError
from bargein.records.audio import RenderedDialogue
from bargein.seeding import stable_hash
from bargein.store import atomic_write_bytes, read_jsonl

AUDIO_SUFFIXES = (".wav", ".flac")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "item"


def source_ids(names: list[str]) -> list[str]:
    """One id per input name, never shared: ``src-<name>`` when the name is plain ASCII
    (letters, digits, ``._-``) and unique, else ``src-<slug>-<hash of the full name>``, so
    ``été`` / ``ünï`` or ``a/b`` / ``a_b`` stay apart."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    out = [f"src-{n}" if _safe(n) == n and counts[n] == 1 else
           f"src-{_safe(n)}-{stable_hash('source-id', n)[:8]}" for n in names]
    if len(set(out)) != len(out):        # a plain name that looks like a hashed one
        out = [f"src-{_safe(n)}-{stable_hash('source-id', n, i)[:8]}" for i, n in enumerate(names)]
    return out


def _info(src) -> tuple[int, float]:
    try:
        info = sf.info(src)
    except Exception:  # noqa: BLE001 - unreadable files fail later, per item, with the reason
        return 16000, 0.0
    return int(info.samplerate), float(info.frames) / max(1, info.samplerate)


def _from_file(path: Path, root: Path, rid: str) -> RenderedDialogue:
    rel = path.relative_to(root).with_suffix("").as_posix()
    sr, dur = _info(path)
    return RenderedDialogue(id=rid, conversation_id=rel, audio_path=str(path.resolve()),
                            sample_rate=sr, duration_s=dur, segments=())


def _from_files(files: list[Path], root: Path) -> list[RenderedDialogue]:
    names = [p.relative_to(root).with_suffix("").as_posix() for p in files]
    if len(set(names)) != len(names):              # zero.wav + zero.flac: keep the suffix
        names = [p.relative_to(root).as_posix() for p in files]
    return [_from_file(p, root, rid) for p, rid in zip(files, source_ids(names))]


def load_rendered(path: Path) -> list[RenderedDialogue]:
    """Rendered dialogues with audio paths made absolute (relative ones are taken from the
    jsonl's folder)."""
    out = []
    for rd in read_jsonl(path, RenderedDialogue):
        p = Path(rd.audio_path)
        if not p.is_absolute():
            p = (path.parent / p) if (path.parent / p).exists() else Path.cwd() / p
        out.append(rd.with_(audio_path=str(p.resolve()), id=rd.id))
    return out


def _hf_dataset(path: Path, split: str | None):
    import datasets

    if path.is_dir() and ((path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists()
                          or (path / "state.json").exists()):
        ds = datasets.load_from_disk(str(path))
    else:
        files = [str(path)] if path.is_file() else sorted(str(p) for p in path.rglob("*.parquet"))
        ds = datasets.Dataset.from_parquet(files)
    if isinstance(ds, datasets.DatasetDict):
        if split is None:
            if len(ds) != 1:
                raise ConfigError(f"{path} has splits {list(ds)}; pick one with --split")
            split = next(iter(ds))
        if split not in ds:
            raise ConfigError(f"{path} has no split {split!r}; splits: {list(ds)}")
        ds = ds[split]
    return ds


def load_hf(path: Path, workdir: Path, *, audio_column: str | None = None, split: str | None = None,
            id_column: str | None = None) -> list[RenderedDialogue]:
    """Rows of a local HF dataset as dialogues; audio bytes are copied to ``workdir/sources``."""
    from datasets import Audio

    try:
        ds = _hf_dataset(path, split)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow/datasets raise many types for a bad file
        raise ConfigError(f"--input {str(path)!r} cannot be read as a Hugging Face dataset or "
                          f"Parquet file ({e.__class__.__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}). "
                          "Fix: pass a valid Parquet file, a save_to_disk folder, rendered.jsonl "
                          "or a folder of stereo WAV/FLAC files.") from None
    if audio_column is None:
        cands = [k for k, f in ds.features.items() if isinstance(f, Audio)]
        if not cands:
            raise ConfigError(f"{path}: no Audio column among {list(ds.features)}; "
                              "name it with --audio-column")
        audio_column = cands[0]
    if audio_column not in ds.column_names:
        raise ConfigError(f"{path}: no column {audio_column!r}; columns: {ds.column_names}")
    if isinstance(ds.features[audio_column], Audio):
        ds = ds.cast_column(audio_column, Audio(decode=False))
    id_column = id_column or next((c for c in ("id", "pair_id", "conversation_id", "dialogue_id")
                                   if c in ds.column_names), None)
    out_dir = workdir / "sources"
    out = []
    names = ([str(x) for x in ds[id_column]] if id_column else
             [f"{path.stem}-{i:06d}" for i in range(len(ds))])
    ids = source_ids(names)
    for i, row in enumerate(ds):
        cell = row[audio_column]
        data = cell.get("bytes") if isinstance(cell, dict) else None
        name = names[i]
        if data is None and isinstance(cell, dict) and cell.get("path") and Path(cell["path"]).exists():
            data = Path(cell["path"]).read_bytes()
        if data is None:
            raise ConfigError(f"{path} row {i}: column {audio_column!r} holds no audio bytes")
        ext = Path((cell.get("path") or "") if isinstance(cell, dict) else "").suffix.lower() or ".flac"
        if ext not in (".wav", ".flac", ".ogg"):
            ext = ".flac"
        target = out_dir / f"{_safe(name)}-{stable_hash(data)[:8]}{ext}"
        if not target.exists():
            atomic_write_bytes(target, data)
        sr, dur = _info(io.BytesIO(data))
        out.append(RenderedDialogue(id=ids[i], conversation_id=name,
                                    audio_path=str(target.resolve()), sample_rate=sr,
                                    duration_s=dur, segments=()))
    return out


def load_sources(path: str | Path, workdir: str | Path, *, audio_column: str | None = None,
                 split: str | None = None) -> list[RenderedDialogue]:
    """Any supported input (see module docstring) as a list of dialogues with absolute paths."""
    path, workdir = Path(path), Path(workdir)
    if not path.exists():
        raise ConfigError(f"--input {str(path)!r} does not exist. Fix: give rendered.jsonl, a "
                          "folder of stereo WAV/FLAC files, or a local HF dataset / Parquet file.")
    if path.is_file() and path.suffix == ".jsonl":
        return load_rendered(path)
    if path.is_file() and path.suffix == ".parquet":
        return load_hf(path, workdir, audio_column=audio_column, split=split)
    if path.is_file() and path.suffix.lower() in AUDIO_SUFFIXES:
        return _from_files([path], path.parent)
    if path.is_dir():
        if (path / "rendered.jsonl").exists():
            return load_rendered(path / "rendered.jsonl")
        if any((path / f).exists() for f in ("dataset_info.json", "dataset_dict.json", "state.json")) \
                or any(path.rglob("*.parquet")):
            return load_hf(path, workdir, audio_column=audio_column, split=split)
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES)
        if not files:
            raise ConfigError(f"{path}: no rendered.jsonl, HF dataset or .wav/.flac files found")
        return _from_files(files, path)
    raise ConfigError(f"--input {path}: unsupported file type {path.suffix!r}; use .jsonl, "
                      ".parquet, .wav, .flac or a folder")
