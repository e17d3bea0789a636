"""Atomic files, JSONL record files, and the one reader every input file goes through.

Nothing is ever written half. Every input file (configs, JSONL, JSON, YAML) is read by
:func:`read_text` / :func:`iter_text_lines`, so a missing file, a folder, a file that is not
UTF-8 or not JSON fails with one line naming the file, the line and the fix — never a traceback.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from bargein.errors import InputError
from bargein.artifacts import note_written
from bargein.records.base import Record

R = TypeVar("R", bound=Record)

_UMASK = os.umask(0o022)
os.umask(_UMASK)
MAX_YAML_NODES = 200_000      # a config expands to a few hundred nodes; aliases can fake billions
MAX_YAML_BYTES = 4 * 1024 * 1024


def _open_failed(path: Path, what: str, e: OSError) -> InputError:
    if isinstance(e, FileNotFoundError):
        why = "does not exist"
    elif isinstance(e, IsADirectoryError) or path.is_dir():
        why = "is a folder, not a file"
    elif isinstance(e, PermissionError):
        why = "cannot be read (permission denied)"
    else:
        why = f"cannot be read ({e.strerror or e.__class__.__name__})"
    return InputError(f"{what} {str(path)!r} {why}. Fix: pass the path of a readable {what}.")


def _not_utf8(path: Path, what: str, data: bytes, start: int, line: int) -> InputError:
    col = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return InputError(f"{what} {path}:{line}: not UTF-8 text (byte "
                      f"0x{data[start:start + 1].hex()} at column {col}). Fix: save the file as "
                      "UTF-8 (e.g. `iconv -f latin1 -t utf-8`).")


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """The whole file as text; a missing, unreadable or non-UTF-8 file is one clear error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _open_failed(path, what, e) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise _not_utf8(path, what, data, e.start, data.count(b"\n", 0, e.start) + 1) from None


def iter_text_lines(path: str | os.PathLike, what: str = "file") -> Iterator[tuple[int, str]]:
    """``(line number, text)`` for every non-blank line, streamed; errors name the line."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise _open_failed(path, what, e) from None
    with f:
        try:
            for n, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise _not_utf8(path, what, raw, e.start, n) from None
                if n == 1:
                    line = line.removeprefix("\ufeff")
                if line.strip():
                    yield n, line
        except OSError as e:           # e.g. EISDIR on the first read
            raise _open_failed(path, what, e) from None


def iter_json_lines(path: str | os.PathLike, what: str = "JSONL file") -> Iterator[tuple[int, Any]]:
    """``(line number, parsed JSON object)`` for every non-blank line of a JSONL file."""
    for n, line in iter_text_lines(path, what):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:
            raise InputError(f"{what} {path}:{n}: not JSON ({_first_line(e)}). Fix: "
                             "one JSON object per line; regenerate the file with the stage that "
                             "writes it.") from None
        if not isinstance(obj, dict):
            raise InputError(f"{what} {path}:{n}: a JSON {type(obj).__name__}, not an "
                             "object. Fix: one JSON object per line.")
        yield n, obj


def read_json(path: str | os.PathLike, what: str = "JSON file") -> Any:
    text = read_text(path, what)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise InputError(f"{what} {str(path)!r}: not valid JSON ({_first_line(e)}). Fix: check "
                         "the file with `python -m json.tool`.") from None


def read_yaml(path: str | os.PathLike, what: str = "YAML file") -> Any:
    """Safe YAML (no Python tags); size and alias expansion are capped so a hostile file
    cannot exhaust memory or time."""
    import yaml

    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise _open_failed(path, what, e) from None
    if size > MAX_YAML_BYTES:
        raise InputError(f"{what} {str(path)!r} is {size / 1e6:.1f} MB; a {what} is a few KB. "
                         "Fix: pass the right file.")
    text = read_text(path, what)
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise InputError(f"{what} {str(path)!r} nests too deeply to be a {what}. Fix: pass the "
                         "right file.") from None
    except yaml.YAMLError as e:
        raise InputError(f"{what} {str(path)!r} is not valid YAML ({_first_line(e)}). Fix: "
                         "correct the syntax (plain YAML only; Python tags are refused).") from None
    if _expanded_nodes(data, MAX_YAML_NODES) > MAX_YAML_NODES:
        raise InputError(f"{what} {str(path)!r} expands to more than {MAX_YAML_NODES} values "
                         "(YAML aliases). Fix: write the values out; do not nest aliases.")
    return data


def _expanded_nodes(obj: Any, cap: int) -> int:
    """Values in ``obj`` counting shared (aliased) containers each time they appear, up to cap."""
    n, stack = 0, [obj]
    while stack and n <= cap:
        o = stack.pop()
        n += 1
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)
    return n


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return " ".join(text[:1])[:200] if text else e.__class__.__name__


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, artifact: bool = True) -> None:
    """Write ``data`` to a temp file beside ``path`` and rename it into place.

    Inside a runner stage item the file is noted as one of the item's artifacts (see
    :mod:`bargein.artifacts`), unless ``artifact=False`` (cache entries, shared files).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder. Fix: name a file (e.g. "
                         f"{path / 'out.jsonl'}).")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(f"cannot write {path}: {_file_in_the_way(path.parent)} is a file, not a "
                         "folder. Fix: choose another output folder or move that file away.") from None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)      # mkstemp makes 0600; outputs get the usual mode
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if artifact:
        note_written(path, data)


def _file_in_the_way(folder: Path) -> Path:
    for p in (folder, *folder.parents):
        if p.exists() and not p.is_dir():
            return p
    return folder


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_jsonl(path: str | os.PathLike, records: Iterable[Record | dict]) -> int:
    """Write records as JSON lines, atomically. Returns the number of lines."""
    lines = []
    for r in records:
        lines.append(r.model_dump_json() if isinstance(r, Record) else json.dumps(r, sort_keys=True))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def iter_jsonl(path: str | os.PathLike, record_type: type[R], what: str | None = None) -> Iterator[R]:
    """Typed records from a JSONL file; a bad line names the file, the line and the fix."""
    what = what or f"{record_type.__name__} JSONL"
    for n, obj in iter_json_lines(path, what):
        try:
            yield record_type.model_validate(obj)
        except ValueError as e:
            raise InputError(
                f"{what} {path}:{n}: not a valid {record_type.__name__} record "
                f"({_validation_summary(e)}). Fix: pass the file the stage that writes "
                f"{record_type.__name__} records produced, or regenerate it.") from None


def _validation_summary(e: Exception) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            loc = ".".join(str(x) for x in first.get("loc", ())) or "(record)"
            return f"{loc}: {first.get('msg', '')}"[:200]
        except Exception:  # noqa: BLE001 - fall back to the message
            pass
    return _first_line(e)


def read_jsonl(path: str | os.PathLike, record_type: type[R]) -> list[R]:
    return list(iter_jsonl(path, record_type))
