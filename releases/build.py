"""``build_release``: stage outputs (JSONL records + audio files) -> one release folder.

    manifest = build_release(Path("release/v1"), name="bargein-ihbench", version="1.0.0",
                             sources=ReleaseSources(conversations=work / "verify.jsonl",
                                                    rendered=work / "render.jsonl",
                                                    eval_items=work / "eval_items.jsonl",
                                                    audio_roots=(work,)),
                             provenance={"seed": 7, "llm": "offline"})

Every config streams: records are read line by line, rows go out row group by row group, and
the only per-item state kept is a byte-offset index of rendered dialogues by conversation id.
The folder is built beside ``out_dir`` and renamed into place, so a failed build leaves the old
release untouched. Same inputs ⇒ byte-identical Parquet, card, plots and manifest.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bargein.errors import ReleaseError
from bargein.outdir import check_replaceable, make_staging, swap_into_place
from bargein.records import (
    Conversation, EvalItem, MaskedItem, PerturbationPair, ReleaseManifest, RenderedDialogue,
    VerifiedConversation,
)
from bargein.releases import card as C
from bargein.releases import rows as R
from bargein.releases.features import CONFIG_ORDER, ROW_GROUP_SIZE, features_for
from bargein.releases.manifest import parse_semver, write_manifest
from bargein.releases.plots import bar_png
from bargein.releases.stats import ReleaseStats, depth_bin_labels
from bargein.releases.writer import DEFAULT_MAX_SHARD_BYTES, ConfigWriter
from bargein.seeding import stable_int
from bargein.store import atomic_write_bytes, atomic_write_text, iter_text_lines, read_json, read_text

log = logging.getLogger("bargein.releases")


@dataclass(frozen=True)
class ReleaseSources:
    """Where each config's records are. A config whose source is missing is simply omitted.

    ``conversations`` may hold :class:`VerifiedConversation` (discarded ones are counted in the
    card, not released) or plain :class:`Conversation` lines. ``sft`` / ``dpo`` map a split
    ("train", "test") to a chat-format JSONL file, or are one file that is split by
    conversation id (``test_percent`` of conversations go to test, stably). Relative audio paths in records resolve
    against ``audio_roots`` (the work directories that wrote them).
    """

    conversations: Path | None = None
    rendered: Path | None = None
    eval_items: Path | None = None
    repair: Path | None = None
    timing: Path | None = None
    sft: Mapping[str, Path] | Path | None = None
    dpo: Mapping[str, Path] | Path | None = None
    stats: Path | Mapping[str, Any] | None = None
    audio_roots: tuple[Path, ...] = ()
    configs: tuple[str, ...] | None = None      # restrict to these configs
    fidelity: bool = True                       # measure the labels on the audio for the card
    test_percent: int = 10                      # sft/dpo from one file: % of conversations in test
    # quality gate: figure -> threshold ("<= 0.05", {"min": 0.45}, or a number); the build
    # refuses when one is missed, unless allow_below_threshold (bargein.verify.report)
    quality_thresholds: Mapping[str, Any] | None = None
    allow_below_threshold: bool = False
    # "bargein" (every config) or "ihbench-public": exactly the public IHBench release's configs
    # (``conversations`` in its wide 1-based layout with structs, ``baseline``)
    profile: str = "bargein"

    def wants(self, config: str) -> bool:
        if self.profile == "ihbench-public" and config not in ("conversations", "baseline"):
            return False
        return self.configs is None or config in self.configs


FIDELITY_MAX_ASR = 16          # Whisper passes per fidelity figure (a stable subset): a minute, not hours


@dataclass
class _Build:
    staging: Path
    sources: ReleaseSources
    max_shard_bytes: int
    stats: ReleaseStats = field(default_factory=ReleaseStats)
    splits: dict[str, dict[str, int]] = field(default_factory=dict)

    def writer(self, config: str, split: str = "test", **kw: Any) -> ConfigWriter:
        return ConfigWriter(self.staging, config, split, features_for(config, **kw),
                            row_group_size=ROW_GROUP_SIZE[config],
                            max_shard_bytes=self.max_shard_bytes)

    def finish(self, w: ConfigWriter) -> None:
        if w.close():
            self.splits.setdefault(w.config, {})[w.split] = w.rows
            self.stats.set_rows(w.config, w.split, w.rows)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def check_release_name(name: str) -> str:
    """A dataset name usable as a folder and a Hub repo name (no spaces, no path parts)."""
    if not _NAME.fullmatch(name or "") or ".." in name:
        raise ReleaseError(f"release name {name!r} is not usable: use letters, digits, '.', '_' "
                           "and '-' (no spaces, no '/' or '..'), at most 96 characters. Fix: "
                           "e.g. --name bargein-ihbench")
    return name


def _progress(it, desc: str):
    """tqdm on a TTY (like the runner), silent otherwise."""
    import sys

    if not sys.stderr.isatty() or os.environ.get("BARGEIN_PROGRESS", "1") == "0":
        return it
    from tqdm import tqdm

    return tqdm(it, desc=f"release {desc}", unit="row", leave=False)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    if not Path(path).is_file():
        raise ReleaseError(f"release source {path} does not exist. Fix: run the stage that writes "
                           "it, or leave that config out of ReleaseSources.")
    yield from iter_text_lines(path, "release source")


def _parse(path: Path, n: int, line: str, rtype: type) -> Any:
    try:
        return rtype.model_validate_json(line)
    except ValueError as e:
        raise ReleaseError(f"{path}:{n}: not a valid {rtype.__name__} ({e.__class__.__name__}: "
                           f"{str(e).splitlines()[0]}). Fix: regenerate it with its stage.") from e


def iter_conversations(path: Path) -> Iterator[tuple[Conversation, VerifiedConversation | None]]:
    """(conversation, its verification or None) for every line, accepted or not."""
    for n, line in _lines(path):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:
            raise ReleaseError(f"{path}:{n}: not JSON ({e.__class__.__name__}). Fix: regenerate "
                               "it.") from None
        if not isinstance(obj, dict):
            raise ReleaseError(f"{path}:{n}: a JSON {type(obj).__name__}, not a conversation. "
                               "Fix: regenerate it.")
        rtype = VerifiedConversation if "conversation" in obj else Conversation
        try:
            rec = rtype.model_validate(obj)
        except ValueError as e:
            raise ReleaseError(f"{path}:{n}: not a valid {rtype.__name__} ({e.__class__.__name__}"
                               f": {str(e).splitlines()[0]}). Fix: regenerate it.") from e
        if isinstance(rec, VerifiedConversation):
            yield rec.conversation, rec
        else:
            yield rec, None


class _OffsetIndex:
    """conversation id -> byte offset of its RenderedDialogue line (ids only in memory)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.offsets: dict[str, int] = {}
        self._last: RenderedDialogue | None = None
        if path is None:
            return
        if not path.is_file():
            raise ReleaseError(f"rendered dialogues file {path} does not exist. Fix: run "
                               "`bargein render` or leave `rendered` out of ReleaseSources.")
        with open(path, "rb") as f:
            while True:
                pos = f.tell()
                line = f.readline()
                if not line:
                    break
                if line.strip():
                    self.offsets[self._id(line, len(self.offsets) + 1)] = pos

    def _id(self, line: bytes, n: int) -> str:
        try:
            cid = json.loads(line.decode("utf-8"))["conversation_id"]
        except UnicodeDecodeError:
            raise ReleaseError(f"rendered dialogues file {self.path}: record {n} is not UTF-8 "
                               "text. Fix: pass the render.jsonl that `bargein render` wrote.") from None
        except (ValueError, KeyError, TypeError, RecursionError):
            cid = None
        if not isinstance(cid, str):
            raise ReleaseError(f"rendered dialogues file {self.path}: record {n} is not a "
                               "RenderedDialogue (no conversation_id). Fix: pass the "
                               "render.jsonl that `bargein render` wrote.")
        return cid

    def get(self, *ids: str) -> RenderedDialogue | None:
        for cid in ids:
            if self._last is not None and self._last.conversation_id == cid:
                return self._last
            pos = self.offsets.get(cid)
            if pos is not None:
                with open(self.path, "rb") as f:
                    f.seek(pos)
                    line = f.readline()
                try:
                    self._last = RenderedDialogue.model_validate_json(line)
                except ValueError as e:
                    raise ReleaseError(f"rendered dialogues file {self.path}: the record of "
                                       f"{cid} is not a valid RenderedDialogue "
                                       f"({e.__class__.__name__}). Fix: re-run `bargein render`."
                                       ) from None
                return self._last
        return None


def git_commit(where: Path | None = None) -> str:
    """``<sha>`` of the checkout bargein runs from (``+dirty`` if tracked files changed)."""
    where = where or Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"


def default_provenance() -> dict[str, Any]:
    import datasets
    import pyarrow

    from bargein import __version__
    from bargein.prompts import list_prompts, prompt_hash

    return {
        "bargein_version": __version__, "git_commit": git_commit(),
        "pyarrow_version": pyarrow.__version__, "datasets_version": datasets.__version__,
        "prompts": {p: prompt_hash(p) for p in list_prompts() if not p.startswith("_")},
    }


def _write_conversations(b: _Build, rendered: _OffsetIndex, audio: R.AudioResolver) -> None:
    src = b.sources.conversations
    want_conv, want_ih = b.sources.wants("conversations"), b.sources.wants("ihbench")
    max_turns = 0
    for conv, v in iter_conversations(src):       # pass 1: the widest ihbench row
        if v is None or v.accepted:
            max_turns = max(max_turns, len(R.ihbench_turns(conv)))
    public = b.sources.profile == "ihbench-public"
    wc = (b.writer("conversations", max_turns=max_turns, profile=b.sources.profile) if public else
          b.writer("conversations")) if want_conv else None
    wi = b.writer("ihbench", max_turns=max_turns) if want_ih else None
    try:
        for conv, v in _progress(iter_conversations(src), "conversations"):
            if v is not None and not v.accepted:
                b.stats.add_discard(v.discard_reasons)
                continue
            b.stats.add_conversation(conv, [d.check for d in v.verdicts] if v else [])
            rd = rendered.get(conv.id, v.id) if v else rendered.get(conv.id)
            if rd is not None:
                b.stats.add_rendered(rd)
            if wc is not None:
                wc.write(R.ihbench_public_row(conv, rd, audio, max_turns) if public else
                         R.conversation_row(conv, v, rd, audio))
            if wi is not None:
                wi.write(R.ihbench_row(conv, rd, audio, max_turns))
    except BaseException:
        for w in (wc, wi):
            if w is not None:
                w.abort()
        raise
    for w in (wc, wi):
        if w is not None:
            b.finish(w)


def _write_eval_items(b: _Build, rendered: _OffsetIndex, audio: R.AudioResolver) -> None:
    src = b.sources.eval_items
    we = b.writer("eval_items") if b.sources.wants("eval_items") else None
    wb = b.writer("baseline") if b.sources.wants("baseline") else None
    with (we or _Null()), (wb or _Null()):
        for n, line in _progress(_lines(src), "eval items"):
            item = _parse(src, n, line, EvalItem)
            b.stats.add_eval_item(item)
            if we is not None:
                we.write(R.eval_item_row(item, rendered.get(item.conversation_id), audio))
            if wb is not None and item.baseline is not None:
                wb.write(R.baseline_row(item))
    for w in (we, wb):
        if w is not None:
            b.finish(w)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return None


def _write_simple(b: _Build, config: str, src: Path, rtype: type, to_row, add=None) -> None:
    with b.writer(config) as w:
        for n, line in _lines(src):
            rec = _parse(src, n, line, rtype)
            if add is not None:
                add(rec)
            w.write(to_row(rec))
    b.finish(w)


def _chat_rows(src: Path, config: str, to_row) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(source object, release row) per line; a line that is not a chat record names itself."""
    for n, line in _lines(src):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:
            raise ReleaseError(f"{src}:{n}: not JSON ({e.__class__.__name__}). Fix: re-export "
                               f"{config}.") from None
        try:
            if not isinstance(obj, dict):
                raise TypeError(f"a JSON {type(obj).__name__}, not an object")
            row = to_row(obj)
        except ReleaseError as e:
            raise ReleaseError(f"{config} file {src} line {n}: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ReleaseError(f"{config} file {src} line {n}: not a {config} record "
                               f"({e.__class__.__name__}: {str(e)[:120]}). Fix: pass the "
                               f"{config}.jsonl a build exported.") from None
        yield obj, row


def in_test_split(key: str, test_percent: int) -> bool:
    """Seeded, stable train/test assignment by conversation: no conversation in both splits."""
    return stable_int("release-split", key) % 100 < test_percent


def _write_chat(b: _Build, config: str, splits: Mapping[str, Path] | Path, to_row) -> None:
    """Explicit ``{split: file}``, or one file split by conversation (``test_percent``)."""
    if not isinstance(splits, Mapping):
        src = Path(splits)
        train, test = b.writer(config, "train"), b.writer(config, "test")
        with train, test:
            for obj, row in _chat_rows(src, config, to_row):
                key = str(obj.get("conversation_id") or row["id"])
                (test if in_test_split(key, b.sources.test_percent) else train).write(row)
        b.finish(train)
        b.finish(test)
        return
    for split in sorted(splits, key=lambda s: (s != "train", s)):
        with b.writer(config, split) as w:
            for _, row in _chat_rows(Path(splits[split]), config, to_row):
                w.write(row)
        b.finish(w)


def _plots(b: _Build) -> dict[str, str]:
    s = b.stats.to_dict()
    out: dict[str, str] = {}
    if s["interruption_points"]:
        types = list(s["types"])
        atomic_write_bytes(b.staging / "assets" / "interruption_types.png", bar_png(
            [t.replace("_", " ") for t in types], [s["types"][t] for t in types],
            title="Interruption points by type", ylabel="count"))
        out["Interruption points by type"] = "assets/interruption_types.png"
        bins = depth_bin_labels()
        atomic_write_bytes(b.staging / "assets" / "depth_bins.png", bar_png(
            bins, [s["depth_bins"][x] for x in bins],
            title="Interruption points by depth (user turn index)", ylabel="count",
            color="#55A868"))
        out["Interruption points by depth"] = "assets/depth_bins.png"
    return out


def build_release(out_dir: str | os.PathLike, *, name: str, version: str,
                  sources: ReleaseSources, provenance: Mapping[str, Any] | None = None,
                  changelog: str | None = None, previous: str | os.PathLike | None = None,
                  pretty_name: str | None = None, license: str = "cc-by-4.0",
                  repo_hint: str | None = None,
                  max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
                  protect: tuple[str | os.PathLike, ...] = ()) -> ReleaseManifest:
    """Build the release folder ``out_dir`` (replaced atomically) and return its manifest.

    ``out_dir`` must be absent, empty or a folder bargein made (see :mod:`bargein.outdir`);
    ``protect`` lists folders it must not be or hold (the work dir).

    ``previous`` is the folder of the last version: its changelog is carried over and, when
    ``changelog`` is None, this version's entry is written from the diff against it.
    """
    parse_semver(version)
    check_release_name(name)
    unknown = sorted(set(sources.configs or ()) - set(CONFIG_ORDER))
    if unknown:
        raise ReleaseError(f"unknown release config(s) {', '.join(map(repr, unknown))}. Fix: "
                           f"choose from {', '.join(CONFIG_ORDER)}.")
    if previous is not None:
        from bargein.releases.manifest import read_manifest

        read_manifest(previous)          # the previous version must be a release folder
    out_dir = check_replaceable(out_dir, protect=protect)
    staging = make_staging(out_dir)
    b = _Build(staging=staging, sources=sources, max_shard_bytes=max_shard_bytes)
    try:
        roots = list(sources.audio_roots) or [Path.cwd()]
        # paths in records are relative to the work dir that wrote them; the source file's own
        # folder is tried last (perturb writes pairs.jsonl beside its audio/)
        beside = [Path(p).parent for p in (sources.rendered, sources.conversations) if p]
        audio = R.AudioResolver(roots + beside)
        rendered = _OffsetIndex(Path(sources.rendered) if sources.rendered else None)
        if sources.conversations and (sources.wants("conversations") or sources.wants("ihbench")):
            _write_conversations(b, rendered, audio)
        if sources.eval_items and (sources.wants("eval_items") or sources.wants("baseline")):
            _write_eval_items(b, rendered, audio)
        if sources.repair and sources.wants("repair"):
            ra = R.AudioResolver(roots + [Path(sources.repair).parent])
            _write_simple(b, "repair", Path(sources.repair), MaskedItem,
                          lambda m: R.repair_row(m, ra), b.stats.add_repair)
        if sources.timing and sources.wants("timing"):
            ta = R.AudioResolver(roots + [Path(sources.timing).parent])
            _write_simple(b, "timing", Path(sources.timing), PerturbationPair,
                          lambda p: R.timing_row(p, ta), b.stats.add_timing)
        if sources.sft and sources.wants("sft"):
            _write_chat(b, "sft", sources.sft, R.sft_row)
        if sources.dpo and sources.wants("dpo"):
            _write_chat(b, "dpo", sources.dpo, R.dpo_row)
        if not b.splits:
            raise ReleaseError("no config has any rows: nothing to release. Fix: point "
                               "ReleaseSources at the stage outputs (conversations, eval items…).")
        splits = {c: b.splits[c] for c in CONFIG_ORDER if c in b.splits}
        stats = b.stats.to_dict()
        if sources.stats is not None:
            extra = sources.stats if isinstance(sources.stats, Mapping) else read_json(
                sources.stats, "--stats file")
            if not isinstance(extra, Mapping):
                raise ReleaseError(f"--stats file {sources.stats} holds a JSON "
                                   f"{type(extra).__name__}, not an object. Fix: pass the "
                                   "stats.json a build wrote.")
            stats["generation"] = dict(extra)
            reasons = extra.get("discard_reasons") or extra.get("discards") or {}
            for reason, n in (dict(reasons) if isinstance(reasons, Mapping) else {}).items():
                if reason not in stats["discard_reasons"]:
                    stats["discard_reasons"][reason] = n
        _quality_gate(stats, sources)
        if sources.fidelity and sources.rendered:
            from bargein.audio.fidelity_report import fidelity_report

            stats["fidelity"] = fidelity_report(sources.rendered, sources.repair, audio_root=roots,
                                                timing=sources.timing, max_asr=FIDELITY_MAX_ASR)
        prov = {**default_provenance(), **dict(provenance or {})}
        summary = Path(sources.timing).parent / "summary.json" if sources.timing else None
        if summary is not None and summary.is_file():      # which TurnNat protocol made the pairs
            prov.setdefault("perturbation_protocol",
                            json.loads(summary.read_text(encoding="utf-8")).get("protocol", "turnnat-bargein"))
        if sources.profile == "ihbench-public":
            prov["profile"] = ("ihbench-public: configs, column names, 1-based turns and struct "
                               "columns of the public IHBench card; the structs' inner fields are "
                               "bargein's records (the public card does not list them)")
        prov["stats"] = stats
        entries = _changelog(version, changelog, previous, staging)
        plots = _plots(b)
        atomic_write_text(staging / "README.md", C.card_markdown(
            name=name, version=version, pretty_name=pretty_name or name, license=license,
            splits=splits, stats=stats, provenance=prov, changelog=entries, plots=plots,
            repo_hint=repo_hint))
        manifest = write_manifest(staging, name=name, version=version,
                                  configs={c: sum(s.values()) for c, s in splits.items()},
                                  provenance=_jsonable(prov))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    swap_into_place(staging, out_dir)
    log.info("release %s %s: %s", name, version,
             ", ".join(f"{c}={sum(s.values())}" for c, s in splits.items()))
    return manifest


def _quality_gate(stats: dict[str, Any], sources: ReleaseSources) -> None:
    """Refuse a release whose quality report misses a configured threshold."""
    if not sources.quality_thresholds:
        return
    from bargein.verify.report import check_thresholds

    q = (stats.get("generation") or {}).get("quality")
    if not q:
        raise ReleaseError("quality thresholds are configured but there is no quality report. "
                           "Fix: pass the stats.json written by 'generate conversations' "
                           "(--stats), or drop the thresholds")
    missed = check_thresholds(q, sources.quality_thresholds)
    if missed and not sources.allow_below_threshold:
        raise ReleaseError("the release misses its quality thresholds: " + "; ".join(missed)
                           + ". Fix: improve the data, or pass --allow-below-threshold (release build) or set "
                           "release.allow_below_threshold: true (build config) to "
                           "release it anyway (the card shows the figures)")
    if missed:
        log.warning("releasing below quality thresholds: %s", "; ".join(missed))


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def _changelog(version: str, text: str | None, previous: str | os.PathLike | None,
               staging: Path) -> list[tuple[str, str]]:
    entries: list[tuple[str, str]] = []
    if previous is not None:
        prev = Path(previous)
        card = prev / "README.md"
        if card.is_file():
            entries = [(v, t) for v, t in C.read_changelog(read_text(card, "previous card"))
                       if v != version]
        if text is None:
            from bargein.releases.diff import diff_items

            text = diff_items(prev, staging).changelog_text()
    return [(version, text or "Initial release.")] + entries
