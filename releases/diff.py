"""What changed between two release versions, and the SemVer bump that suggests.

    d = diff_releases(Path("release/v1.0.0"), Path("release/v1.1.0"))
    print(d.summary())          # items added/removed/changed per config, provenance changes
    d.suggested_bump            # "major" | "minor" | "patch" | "none"

Rules: a config removed or its features changed = major; a config added or rows added, removed
or changed = minor; only the card, plots or provenance changed = patch. Rows are compared by
their key column (``conversation_id``, ``item_id``, ``id``) and a hash of the whole row (audio
bytes included), read one row group at a time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bargein.errors import ReleaseError
from bargein.releases.features import CONFIG_ORDER, KEY_COLUMN
from bargein.releases.manifest import MANIFEST, read_manifest
from bargein.seeding import stable_hash

_RANK = {"none": 0, "patch": 1, "minor": 2, "major": 3}


@dataclass
class ConfigDiff:
    config: str
    status: str                                   # "same" | "changed" | "added" | "removed"
    schema_changed: bool = False
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    rows_a: int = 0
    rows_b: int = 0

    @property
    def bump(self) -> str:
        if self.status == "removed" or self.schema_changed:
            return "major"
        if self.status == "added" or self.added or self.removed or self.changed:
            return "minor"
        return "none"


@dataclass
class ReleaseDiff:
    a: str
    b: str
    configs: dict[str, ConfigDiff]
    provenance: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    card_changed: bool = False
    other_files_changed: list[str] = field(default_factory=list)

    @property
    def suggested_bump(self) -> str:
        kind = max((c.bump for c in self.configs.values()), key=_RANK.__getitem__, default="none")
        if kind == "none" and (self.provenance or self.card_changed or self.other_files_changed):
            kind = "patch"
        return kind

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b, "suggested_bump": self.suggested_bump,
            "configs": {c: {"status": d.status, "schema_changed": d.schema_changed,
                            "rows_a": d.rows_a, "rows_b": d.rows_b, "added": d.added,
                            "removed": d.removed, "changed": d.changed}
                        for c, d in self.configs.items()},
            "provenance": {k: {"a": a, "b": b} for k, (a, b) in self.provenance.items()},
            "card_changed": self.card_changed, "other_files_changed": self.other_files_changed,
        }

    def changelog_text(self) -> str:
        lines = []
        for c, d in self.configs.items():
            if d.status == "added":
                lines.append(f"- `{c}`: new config ({d.rows_b} rows).")
            elif d.status == "removed":
                lines.append(f"- `{c}`: config removed (had {d.rows_a} rows).")
            elif d.status == "changed":
                bits = [f"{len(x)} {w}" for x, w in ((d.added, "added"), (d.removed, "removed"),
                                                     (d.changed, "changed")) if x]
                if d.schema_changed:
                    bits.insert(0, "features changed")
                lines.append(f"- `{c}`: " + ", ".join(bits) + f" ({d.rows_a} → {d.rows_b} rows).")
        for k, (a, b) in self.provenance.items():
            lines.append(f"- provenance `{k}`: {_short(a)} → {_short(b)}")
        if self.card_changed and not lines:
            lines.append("- dataset card updated.")
        return "\n".join(lines) or "- no changes."

    def summary(self) -> str:
        head = f"diff {self.a} → {self.b}: suggested bump {self.suggested_bump.upper()}"
        rows = [head]
        for c, d in self.configs.items():
            rows.append(f"  {c:14s} {d.status:8s} rows {d.rows_a} → {d.rows_b}  "
                        f"+{len(d.added)} -{len(d.removed)} ~{len(d.changed)}"
                        + ("  FEATURES CHANGED" if d.schema_changed else ""))
            for label, ids in (("+", d.added), ("-", d.removed), ("~", d.changed)):
                for i in ids[:5]:
                    rows.append(f"      {label} {i}")
                if len(ids) > 5:
                    rows.append(f"      {label} … {len(ids) - 5} more")
        for k, (a, b) in self.provenance.items():
            rows.append(f"  provenance {k}: {_short(a)} → {_short(b)}")
        if self.card_changed:
            rows.append("  card: changed")
        for f in self.other_files_changed:
            rows.append(f"  file changed: {f}")
        return "\n".join(rows)


def _short(v: Any, n: int = 60) -> str:
    s = json.dumps(v, sort_keys=True, default=str) if not isinstance(v, str) else v
    return s if len(s) <= n else s[: n - 1] + "…"


def _split_files(release: Path, config: str) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for p in sorted((release / config).glob("*.parquet")):
        m = re.match(r"^(.+?)-\d{5}-of-\d{5}\.parquet$", p.name)
        out.setdefault(m.group(1) if m else p.stem, []).append(p)
    return out


def _features(path: Path) -> Any:
    md = pq.read_schema(path).metadata or {}
    hf = md.get(b"huggingface")
    return json.loads(hf)["info"]["features"] if hf else str(pq.read_schema(path))


def row_hashes(release: Path, config: str) -> tuple[dict[str, str], Any]:
    """{split/key: row hash} over every shard, one row group at a time; plus the features."""
    key = KEY_COLUMN.get(config, "id")
    hashes: dict[str, str] = {}
    features = None
    for split, files in _split_files(release, config).items():
        for path in files:
            features = features or _features(path)
            pf = pq.ParquetFile(path)
            for g in range(pf.num_row_groups):
                for row in pf.read_row_group(g).to_pylist():
                    hashes[f"{split}/{row.get(key)}"] = stable_hash(row)
    return hashes, features


def _configs(release: Path) -> list[str]:
    present = [p.name for p in release.iterdir() if p.is_dir() and any(p.glob("*.parquet"))]
    return [c for c in CONFIG_ORDER if c in present] + sorted(set(present) - set(CONFIG_ORDER))


def diff_items(a: Path, b: Path) -> ReleaseDiff:
    """Row-level diff of two release folders (no manifest needed)."""
    a, b = Path(a), Path(b)
    for p in (a, b):
        if not p.is_dir():
            raise ReleaseError(f"{p} is not a release folder. Fix: pass two release folders "
                               "or ORG/NAME@vX.Y.Z references.")
    ca, cb = _configs(a), _configs(b)
    order = [c for c in CONFIG_ORDER if c in ca or c in cb] + sorted(
        (set(ca) | set(cb)) - set(CONFIG_ORDER))
    out: dict[str, ConfigDiff] = {}
    for c in order:
        ha, fa = row_hashes(a, c) if c in ca else ({}, None)
        hb, fb = row_hashes(b, c) if c in cb else ({}, None)
        status = "added" if c not in ca else "removed" if c not in cb else "same"
        d = ConfigDiff(config=c, status=status, rows_a=len(ha), rows_b=len(hb))
        if status == "same":
            d.schema_changed = fa != fb
            d.added = sorted(set(hb) - set(ha))
            d.removed = sorted(set(ha) - set(hb))
            d.changed = sorted(k for k in set(ha) & set(hb) if ha[k] != hb[k])
            if d.schema_changed or d.added or d.removed or d.changed:
                d.status = "changed"
        out[c] = d
    return ReleaseDiff(a=str(a), b=str(b), configs=out)


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: d}


def _normal_card(text: str, version: str) -> str:
    from bargein.releases.card import CHANGELOG_END, CHANGELOG_START

    if CHANGELOG_START in text and CHANGELOG_END in text:
        head, rest = text.split(CHANGELOG_START, 1)
        text = head + rest.split(CHANGELOG_END, 1)[1]
    return text.replace(version, "{VERSION}")


def diff_releases(a: Path, b: Path) -> ReleaseDiff:
    """Rows, features, provenance, card and other files of two built releases."""
    a, b = Path(a), Path(b)
    ma, mb = read_manifest(a), read_manifest(b)
    d = diff_items(a, b)
    d.a, d.b = f"{ma.name} {ma.version}", f"{mb.name} {mb.version}"
    pa_, pb_ = (_flatten({k: v for k, v in m.provenance.items() if k != "stats"})
                for m in (ma, mb))
    d.provenance = {k: (pa_.get(k), pb_.get(k)) for k in sorted(set(pa_) | set(pb_))
                    if pa_.get(k) != pb_.get(k)}
    ca, cb = a / "README.md", b / "README.md"
    if ca.is_file() and cb.is_file():
        d.card_changed = (_normal_card(ca.read_text(encoding="utf-8"), ma.version)
                          != _normal_card(cb.read_text(encoding="utf-8"), mb.version))
    else:
        d.card_changed = ca.is_file() != cb.is_file()
    fa = {f.path: f.sha256 for f in ma.files}
    fb = {f.path: f.sha256 for f in mb.files}
    d.other_files_changed = sorted(
        p for p in set(fa) | set(fb)
        if not p.endswith(".parquet") and p not in ("README.md", MANIFEST) and fa.get(p) != fb.get(p))
    return d
