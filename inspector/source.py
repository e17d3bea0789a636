"""Where an inspection reads from: a release folder (Parquet, as pulled from the Hub) or a work
directory before release (the stage JSONL files and their audio artifacts).

Both are read one conversation at a time and turned into the same plain rows (the release's own
``conversations`` / ``eval_items`` / ``repair`` / ``timing`` layout), so the site writer has one
input shape and memory stays flat however large the release is::

    src = open_source(Path("release/demo"))
    for conv in src.conversations():          # one row at a time, audio as file bytes
        ...
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bargein.errors import ReleaseError

AUDIO_COLUMNS = ("audio", "original_audio", "natural_audio", "perturbed_audio",
                 "interjection_audio")


@dataclass
class Audit:
    """What the verifier did to one conversation."""

    conversation_id: str
    outcome: str                          # "accepted" | "repaired" | "discarded"
    rounds: int = 0
    issues: list[dict[str, Any]] = field(default_factory=list)
    discard_reasons: list[str] = field(default_factory=list)


class Source:
    """The interface both sources implement."""

    kind: str = ""
    path: Path

    def card_markdown(self) -> str | None:
        return None

    def asset(self, rel: str) -> bytes | None:
        """A file the card refers to (plots), by its relative path."""
        return None

    def conversations(self) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def eval_items(self) -> dict[str, list[dict[str, Any]]]:
        """conversation_id -> eval item rows (no audio), in message order."""
        raise NotImplementedError

    def repair(self) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def timing(self) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def audits(self) -> Iterator[Audit]:
        raise NotImplementedError


def _outcome(rounds: int | None, issues: int | None) -> str:
    return "repaired" if (rounds or 0) > 0 or (issues or 0) > 0 else "accepted"


class ReleaseSource(Source):
    """A release folder: ``README.md`` + one folder of Parquet files per config."""

    kind = "release"

    def __init__(self, path: Path):
        self.path = path
        if not (path / "README.md").is_file():
            raise ReleaseError(f"{path} has no README.md (dataset card), so it is not a release "
                               "folder. Fix: pass a release folder (bargein release build/pull) "
                               "or a work directory (bargein --workdir DIR build).")

    def _has(self, config: str) -> bool:
        return any((self.path / config).glob("*.parquet"))

    def _rows(self, config: str, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
        from bargein.releases.reader import iter_rows, splits

        if not self._has(config):
            return
        for split in splits(self.path, config):
            yield from iter_rows(self.path, config, split, columns=columns)

    def card_markdown(self) -> str | None:
        return (self.path / "README.md").read_text(encoding="utf-8", errors="replace")

    def asset(self, rel: str) -> bytes | None:
        p = (self.path / rel).resolve()
        if self.path.resolve() not in p.parents or not p.is_file():
            return None
        return p.read_bytes()

    def conversations(self) -> Iterator[dict[str, Any]]:
        yield from self._rows("conversations")

    def eval_items(self) -> dict[str, list[dict[str, Any]]]:
        import pyarrow.parquet as pq

        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        if not self._has("eval_items"):
            return out
        names = pq.ParquetFile(next((self.path / "eval_items").glob("*.parquet"))).schema_arrow.names
        cols = [c for c in names if c not in AUDIO_COLUMNS]
        for row in self._rows("eval_items", cols):
            out[row["conversation_id"]].append(row)
        baselines = {r["item_id"]: r for r in self._rows("baseline")}
        for rows in out.values():
            rows.sort(key=lambda r: r["message_index"])
            for r in rows:
                b = baselines.get(r["item_id"])
                if b and not r.get("baseline"):
                    r["baseline"], r["baseline_model"] = b["response"], b["baseline_model"]
        return out

    def repair(self) -> Iterator[dict[str, Any]]:
        yield from self._rows("repair")

    def timing(self) -> Iterator[dict[str, Any]]:
        yield from self._rows("timing")

    def audits(self) -> Iterator[Audit]:
        for r in self._rows("conversations", ["conversation_id", "verifier_rounds",
                                              "verifier_issues"]):
            yield Audit(r["conversation_id"], _outcome(r["verifier_rounds"], r["verifier_issues"]),
                        rounds=r["verifier_rounds"] or 0,
                        issues=[{"check": "(issue details are kept in the work directory)",
                                 "count": r["verifier_issues"] or 0}] if r["verifier_issues"] else [])


class WorkdirSource(Source):
    """A work directory of ``bargein build`` (or of the stage commands) before release."""

    kind = "workdir"

    def __init__(self, path: Path):
        self.path = path
        if not (path / "verified.jsonl").is_file():
            raise ReleaseError(f"{path} has no verified.jsonl, so it is not a bargein work "
                               "directory that reached verification. Fix: pass the --workdir of "
                               "a build, or a release folder.")
        from bargein.releases.rows import AudioResolver

        self.audio = AudioResolver([path, path.parent, Path.cwd()])

    def _lines(self, name: str) -> Iterator[dict[str, Any]]:
        p = self.path / name
        if not p.is_file():
            return
        with p.open(encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as e:
                        raise ReleaseError(f"{p}:{n} is not JSON ({e.msg}). Fix: re-run the "
                                           "stage that wrote it.") from None

    def _records(self, name: str, model):
        for obj in self._lines(name):
            yield model.model_validate(obj)

    def card_markdown(self) -> str | None:
        p = self.path / "stats.json"
        if not p.is_file():
            return None
        stats = json.loads(p.read_text(encoding="utf-8"))
        lines = ["# Work directory " + self.path.name, "", "| statistic | value |", "|---|---|"]
        for k, v in sorted(stats.items()):
            lines.append(f"| {k} | {json.dumps(v, sort_keys=True)[:200]} |")
        return "\n".join(lines) + "\n"

    def _rendered(self) -> dict[str, Any]:
        from bargein.records import RenderedDialogue

        return {rd.conversation_id: rd for rd in self._records("render.jsonl", RenderedDialogue)}

    def conversations(self) -> Iterator[dict[str, Any]]:
        from bargein.records import VerifiedConversation
        from bargein.releases.rows import conversation_row

        rendered = self._rendered()
        for vc in self._records("verified.jsonl", VerifiedConversation):
            if not vc.accepted:
                continue
            conv = vc.conversation
            row = conversation_row(conv, vc, rendered.get(conv.id), self.audio)
            yield row

    def eval_items(self) -> dict[str, list[dict[str, Any]]]:
        from bargein.records import EvalItem

        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        name = "baseline.jsonl" if (self.path / "baseline.jsonl").is_file() else "eval_items.jsonl"
        for it in self._records(name, EvalItem):
            out[it.conversation_id].append({
                "item_id": it.id, "conversation_id": it.conversation_id,
                "message_index": it.message_index, "type": it.type, "depth": it.depth,
                "interjection": it.interjection, "heard_text": it.heard_text,
                "planned_text": it.planned_text, "tf_rubric": it.rubric.tf_criterion,
                "rq_rubrics": list(it.rubric.rq_criteria), "gold_recovery": it.gold_recovery,
                "baseline": it.baseline, "baseline_model": it.baseline_model,
            })
        for rows in out.values():
            rows.sort(key=lambda r: r["message_index"])
        return out

    def repair(self) -> Iterator[dict[str, Any]]:
        from bargein.records import MaskedItem
        from bargein.releases.rows import repair_row

        for m in self._records("mask.jsonl", MaskedItem):
            yield repair_row(m, self.audio)

    def timing(self) -> Iterator[dict[str, Any]]:
        from bargein.records import PerturbationPair
        from bargein.releases.rows import timing_row

        from bargein.releases.rows import AudioResolver

        for name in ("perturb/pairs.jsonl", "perturb.jsonl"):
            if (self.path / name).is_file():
                audio = AudioResolver([(self.path / name).parent, self.path])
                for p in self._records(name, PerturbationPair):
                    yield timing_row(p, audio)
                return

    def audits(self) -> Iterator[Audit]:
        for obj in self._lines("verified.jsonl"):
            conv = obj.get("conversation") or {}
            verdicts = obj.get("verdicts") or []
            accepted = obj.get("accepted", True)
            yield Audit(
                conversation_id=conv.get("id", "?"),
                outcome="discarded" if not accepted else _outcome(obj.get("rounds"), len(verdicts)),
                rounds=int(obj.get("rounds") or 0),
                issues=[{k: v.get(k) for k in ("check", "message_index", "issue", "fixable",
                                               "evidence", "edit", "round")} for v in verdicts],
                discard_reasons=list(obj.get("discard_reasons") or []))
        for obj in self._lines("verify.failures.jsonl"):
            yield Audit(conversation_id=str(obj.get("item_id", "?")), outcome="discarded",
                        discard_reasons=[str(obj.get("reason", ""))],
                        issues=[{"check": obj.get("error_type", ""),
                                 "evidence": json.dumps(obj.get("evidence"))[:2000]}])


def open_source(path: str | Path) -> Source:
    """A release folder or a work directory, whichever ``path`` is."""
    p = Path(path)
    if not p.is_dir():
        raise ReleaseError(f"{p} is not a folder. Fix: pass a release folder (with README.md) or "
                           "a work directory (with verified.jsonl); for a Hub release run "
                           "`bargein release pull ORG/NAME@VERSION` first.")
    if (p / "README.md").is_file() and any(p.glob("*/*.parquet")):
        return ReleaseSource(p)
    return WorkdirSource(p)
