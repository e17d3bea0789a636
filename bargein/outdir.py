"""The one guard for every folder bargein writes or replaces.

A command that *replaces* a folder (``release build --out``, ``build --out``) builds the new one
beside it and swaps it in, and it only ever deletes a folder bargein made:

    out = check_replaceable(Path("release/v1"), option="--out", protect=[workdir])
    staging = make_staging(out)            # release/.v1.building, marked as ours
    ... write into staging ...
    swap_into_place(staging, out)          # old folder moved aside, new one renamed in, old removed

A folder is ours when it holds the marker file (:data:`MARKER`, written into every folder made
here) or a bargein ``manifest.json`` (a release pulled from the Hub). Anything else that is not
empty is refused with one line naming the folder and the fix; ``--out .`` (or any folder that
holds the current directory, the home folder or a protected folder such as the work dir) is
refused before any work starts. A command that writes *into* a folder uses
:func:`check_writable_dir`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from bargein.errors import InputError

MARKER = ".bargein-folder"


def _listing(folder: Path, limit: int = 3) -> str:
    names = sorted(p.name for p in folder.iterdir())
    more = f", … ({len(names)} entries)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def is_ours(folder: Path) -> bool:
    """True when ``folder`` was made by bargein (marker file, or a parseable release manifest)."""
    folder = Path(folder)
    if (folder / MARKER).is_file():
        return True
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        from bargein.records import ReleaseManifest

        ReleaseManifest.model_validate_json(manifest.read_bytes())
        return True
    except (ValueError, OSError):
        return False


def mark(folder: Path) -> None:
    (Path(folder) / MARKER).write_text("made by bargein; safe for bargein to replace\n",
                                       encoding="utf-8")


def _too_wide(resolved: Path, protect: Iterable[Path]) -> str | None:
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        return "is the current folder or holds it"
    if resolved == Path(resolved.anchor):
        return "is the filesystem root"
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError):
        home = None
    if home is not None and (resolved == home or resolved in home.parents):
        return "is the home folder or holds it"
    for p in protect:
        pr = Path(p).resolve()
        if resolved == pr or resolved in pr.parents:
            return f"is or holds {p} (which this command needs)"
    return None


def check_replaceable(out: str | os.PathLike, *, option: str = "--out",
                      what: str = "release folder",
                      protect: Iterable[str | os.PathLike] = ()) -> Path:
    """``out`` resolved, if it may be replaced: absent, empty, or made by bargein.

    Raises :class:`InputError` (nothing touched) otherwise.
    """
    raw = str(out)
    if not raw.strip():
        raise InputError(f"{option} is empty. Fix: name a new folder, e.g. {option} release/v1")
    resolved = Path(out).resolve()
    why = _too_wide(resolved, [Path(p) for p in protect])
    if why:
        raise InputError(f"{option} {raw!r} {why}; bargein replaces the whole {what}. Nothing was "
                         f"changed. Fix: name a new folder, e.g. {option} release/v1")
    if resolved.exists() and not resolved.is_dir():
        raise InputError(f"{option} {raw!r} is a file, not a folder. Nothing was changed. Fix: "
                         f"name a new folder for the {what}.")
    if resolved.is_dir() and any(resolved.iterdir()) and not is_ours(resolved):
        raise InputError(f"{option} {raw!r} exists and is not a bargein {what} (it holds "
                         f"{_listing(resolved)}); bargein only replaces folders it made. Nothing "
                         f"was changed. Fix: choose a new folder, or move that one away yourself.")
    return resolved


def check_writable_dir(out: str | os.PathLike, *, option: str = "--out") -> Path:
    """A folder files will be written into: created if missing; a file in the way is refused."""
    raw = str(out)
    if not raw.strip():
        raise InputError(f"{option} is empty. Fix: name a folder.")
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise InputError(f"{option} {raw!r} is a file, not a folder. Fix: name a folder.")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{option} {raw!r} cannot be created ({e.strerror or e}). Fix: name a "
                         "folder you can write to.") from None
    return p


def staging_for(out: Path) -> Path:
    return out.parent / f".{out.name}.building"


def make_staging(out: Path) -> Path:
    """An empty, marked folder beside ``out``; a leftover one from a killed run is removed
    only if it carries our marker."""
    staging = staging_for(out)
    if staging.exists():
        if not staging.is_dir() or not is_ours(staging):
            raise InputError(f"{staging} exists and was not made by bargein. Nothing was changed. "
                             "Fix: move it away, then run again.")
        shutil.rmtree(staging)
    _clean_old(out)
    staging.mkdir(parents=True)
    mark(staging)
    return staging


def _clean_old(out: Path) -> None:
    """Remove folders a swap killed half-way left (``.NAME.old-*``), only if ours."""
    if not out.parent.is_dir():
        return
    for p in out.parent.glob(f".{out.name}.old-*"):
        if p.is_dir() and is_ours(p):
            shutil.rmtree(p, ignore_errors=True)


def swap_into_place(staging: Path, out: Path) -> None:
    """Rename ``staging`` to ``out``; an existing ``out`` (checked ours) is moved aside first
    and removed after, so a crash leaves either the old or the new folder complete."""
    mark(staging)
    old = None
    if out.exists():
        if any(out.iterdir()) and not is_ours(out):     # checked again: it may have changed
            raise InputError(f"{out} is not a bargein folder (it holds {_listing(out)}); it was "
                             f"left untouched and the new one is in {staging}. Fix: move it away.")
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old)            # onto the new empty folder (POSIX rename)
    os.replace(staging, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
