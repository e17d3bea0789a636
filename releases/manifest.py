"""The release manifest (sha256 of every file), SemVer, and checksum verification.

``manifest.json`` lists every file of the release folder but itself, sorted by path. A release
is valid when the folder holds exactly those files with exactly those checksums.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bargein.errors import ReleaseError
from bargein.records import FileEntry, ReleaseManifest
from bargein.seeding import file_sha256
from bargein.store import atomic_write_text

MANIFEST = "manifest.json"
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z.-]+))?$")
BUMPS = ("major", "minor", "patch")


def parse_semver(version: str) -> tuple[int, int, int, str]:
    """(major, minor, patch, pre-release); a bad version names the fix."""
    m = _SEMVER.match(version.strip().removeprefix("v"))
    if not m:
        raise ReleaseError(f"version {version!r} is not SemVer. Fix: use MAJOR.MINOR.PATCH, "
                           "e.g. 1.0.0 or 0.2.1")
    return int(m[1]), int(m[2]), int(m[3]), m[4] or ""


def bump(version: str, kind: str) -> str:
    """``bump("1.4.2", "minor") == "1.5.0"``; ``kind`` "none" returns the version unchanged."""
    major, minor, patch, _ = parse_semver(version)
    if kind == "major":
        return f"{major + 1}.0.0"
    if kind == "minor":
        return f"{major}.{minor + 1}.0"
    if kind == "patch":
        return f"{major}.{minor}.{patch + 1}"
    if kind == "none":
        return version
    raise ReleaseError(f"unknown bump {kind!r}; use one of {BUMPS}")


def tag_for(version: str) -> str:
    parse_semver(version)
    return f"v{version.removeprefix('v')}"


def release_files(release_dir: Path) -> list[Path]:
    """Every regular file in the folder except the manifest and hidden files, sorted."""
    out = []
    for p in sorted(release_dir.rglob("*")):
        rel = p.relative_to(release_dir)
        if p.is_file() and rel.as_posix() != MANIFEST and not any(
                part.startswith(".") for part in rel.parts):
            out.append(p)
    return out


def write_manifest(release_dir: str | Path, *, name: str, version: str,
                   configs: dict[str, int], provenance: dict[str, Any]) -> ReleaseManifest:
    release_dir = Path(release_dir)
    parse_semver(version)
    files = tuple(FileEntry(path=p.relative_to(release_dir).as_posix(), sha256=file_sha256(p),
                            bytes=p.stat().st_size) for p in release_files(release_dir))
    manifest = ReleaseManifest(name=name, version=version, configs=dict(sorted(configs.items())),
                               files=files, provenance=provenance)
    atomic_write_text(release_dir / MANIFEST, manifest_json(manifest))
    return manifest


def manifest_json(manifest: ReleaseManifest) -> str:
    return json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def read_manifest(release_dir: str | Path) -> ReleaseManifest:
    path = Path(release_dir) / MANIFEST
    if not path.is_file():
        raise ReleaseError(f"{release_dir} has no {MANIFEST}: not a bargein release folder. "
                           "Fix: build it with `bargein release build` or pull a published one.")
    try:
        return ReleaseManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ReleaseError(f"{path} is not a valid release manifest ({e.__class__.__name__}). "
                           "Fix: rebuild the release.") from e


def _inside(rel: str) -> bool:
    """A relative POSIX path that stays inside its folder (no ``..``, root, drive or URL)."""
    if not isinstance(rel, str) or not rel or rel.startswith(("/", "~")) or "\\" in rel:
        return False
    parts = rel.split("/")
    return not any(p in ("", "..") for p in parts) and ":" not in parts[0]


def card_path_problems(release_dir: Path) -> list[str]:
    """Every ``data_files`` / ``data_dir`` in the card's YAML that points outside the folder."""
    from bargein.releases.card import read_header

    card = Path(release_dir) / "README.md"
    if not card.is_file():
        return []
    try:
        header = read_header(card.read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:   # yaml errors and bad UTF-8 are ValueErrors
        return [f"README.md has an unreadable YAML header ({e.__class__.__name__})"]
    configs = header.get("configs") if isinstance(header, dict) else None
    out = []
    for c in configs if isinstance(configs, list) else []:
        if not isinstance(c, dict):
            continue
        for p in _card_patterns(c.get("data_files")) + _card_patterns(c.get("data_dir")):
            if not _inside(p):
                out.append(f"README.md config {c.get('config_name')!r} reads data_files {p!r}, "
                           "outside the release folder")
    return out


def _card_patterns(v: Any) -> list[Any]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return _card_patterns(v.get("path"))
    if isinstance(v, list):
        return [p for x in v for p in _card_patterns(x)]
    return [repr(v)]


def verify_release(release_dir: str | Path) -> ReleaseManifest:
    """Check every file against the manifest; raise :class:`ReleaseError` listing each problem."""
    release_dir = Path(release_dir)
    manifest = read_manifest(release_dir)
    problems = [f"manifest lists {f.path!r}, a path outside the release folder"
                for f in manifest.files if not _inside(f.path)]
    problems += card_path_problems(release_dir)
    listed = {f.path: f for f in manifest.files if _inside(f.path)}
    present = {p.relative_to(release_dir).as_posix(): p for p in release_files(release_dir)}
    for path, entry in listed.items():
        p = present.get(path)
        if p is None:
            problems.append(f"missing file {path}")
        elif p.stat().st_size != entry.bytes or file_sha256(p) != entry.sha256:
            problems.append(f"checksum mismatch for {path} (manifest sha256 {entry.sha256[:12]}…)")
    for path in sorted(set(present) - set(listed)):
        problems.append(f"file {path} is not in the manifest")
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ReleaseError(
            f"release {release_dir} ({manifest.name} {manifest.version}) does not match its "
            f"manifest: " + "; ".join(problems[:3]) + more +
            ". Fix: re-download it (`bargein release pull`) or rebuild it; never edit a release "
            "folder by hand.", evidence=problems)
    return manifest
