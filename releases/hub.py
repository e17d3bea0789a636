"""Push a release folder to the Hub in one commit + a ``vX.Y.Z`` tag; pull one back.

    plan = push_release(Path("release/demo"), "org/bargein-demo", dry_run=True)
    print(plan.describe())
    result = push_release(Path("release/demo"), "org/bargein-demo")   # commit + tag
    path = pull_release("org/bargein-demo@v1.0.0", out=Path("pulled"))  # verified folder

Refusals (nothing is sent): manifest checksums that do not match, no token, a tag that already
exists (tags never move). The commit carries every file of the release (and deletes files a
previous version left on the branch) with ``parent_commit`` set to the head it planned against,
so a concurrent push fails instead of mixing. The tag is created on exactly that commit.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bargein.errors import ReleaseError
from bargein.outdir import check_replaceable, make_staging, swap_into_place
from bargein.records import ReleaseManifest
from bargein.releases.manifest import MANIFEST, tag_for, verify_release

REPO_TYPE = "dataset"
_NAME_PART = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
_REVISION = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._+-]{0,127}|refs/pr/[0-9]{1,9})$")
_KEEP_REMOTE = (".gitattributes",)


def resolve_token(token: str | None = None) -> tuple[str | None, str]:
    """(token, where it came from): an explicit value, ``HF_TOKEN``, or the HF login file."""
    if token:
        return token, "argument"
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"], "HF_TOKEN"
    from huggingface_hub import get_token

    found = get_token()
    return (found, "huggingface login") if found else (None, "none")


@dataclass
class PushPlan:
    release: str
    repo_id: str
    name: str
    version: str
    tag: str
    endpoint: str
    files: list[tuple[str, int]]                   # (path in repo, bytes)
    deletions: list[str] = field(default_factory=list)
    repo_exists: bool | None = None
    head: str | None = None
    existing_tags: list[str] = field(default_factory=list)
    token_source: str = "none"
    commit_oid: str | None = None
    commit_url: str | None = None
    pushed: bool = False

    @property
    def total_bytes(self) -> int:
        return sum(n for _, n in self.files)

    def describe(self) -> str:
        lines = [
            f"{'pushed' if self.pushed else 'plan'}: {self.name} {self.version} -> "
            f"{self.endpoint}/datasets/{self.repo_id} tag {self.tag}",
            f"  token: {self.token_source}",
            f"  repo: {'exists' if self.repo_exists else 'will be created' if self.repo_exists is False else 'not checked'}"
            + (f" (head {self.head[:12]})" if self.head else ""),
            f"  existing tags: {', '.join(self.existing_tags) or '(none)'}",
            f"  one commit: {len(self.files)} files, {self.total_bytes / 1e6:.2f} MB"
            + (f", deleting {len(self.deletions)} stale files" if self.deletions else ""),
        ]
        lines += [f"    + {p} ({n} bytes)" for p, n in self.files]
        lines += [f"    - {p}" for p in self.deletions]
        if self.commit_oid:
            lines.append(f"  commit {self.commit_oid} tagged {self.tag}: {self.commit_url}")
        return "\n".join(lines)


@contextmanager
def _progress_bars():
    """huggingface_hub's progress bars on a TTY only (like the runner's), restored after."""
    from huggingface_hub.utils import (
        are_progress_bars_disabled, disable_progress_bars, enable_progress_bars,
    )

    turn_off = not sys.stderr.isatty() and not are_progress_bars_disabled()
    if turn_off:
        disable_progress_bars()
    try:
        yield
    finally:
        if turn_off:
            enable_progress_bars()


def _api(endpoint: str | None, token: str | None):
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint, token=token)


def _remote_state(api, repo_id: str, plan: PushPlan) -> None:
    from huggingface_hub.errors import OfflineModeIsEnabled, RepositoryNotFoundError

    try:
        info = api.repo_info(repo_id, repo_type=REPO_TYPE)
    except RepositoryNotFoundError:
        plan.repo_exists = False
        return
    except OfflineModeIsEnabled as e:
        raise ReleaseError("HF_HUB_OFFLINE is set, so the Hub cannot be reached. Fix: unset "
                           "HF_HUB_OFFLINE to push (or use --dry-run).") from e
    plan.repo_exists = True
    plan.head = info.sha
    refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    plan.existing_tags = sorted(t.name for t in refs.tags)
    local = {p for p, _ in plan.files}
    plan.deletions = sorted(s.rfilename for s in (info.siblings or [])
                            if s.rfilename not in local and s.rfilename not in _KEEP_REMOTE)


def plan_push(release_dir: str | Path, repo_id: str, *, token: str | None = None,
              endpoint: str | None = None, check_remote: bool = True) -> PushPlan:
    """Verify the release and work out exactly what a push would do (read-only)."""
    release_dir = Path(release_dir)
    check_repo_id(repo_id, "--repo")
    manifest: ReleaseManifest = verify_release(release_dir)
    token, source = resolve_token(token)
    from huggingface_hub import constants

    plan = PushPlan(
        release=str(release_dir), repo_id=repo_id, name=manifest.name, version=manifest.version,
        tag=tag_for(manifest.version), endpoint=(endpoint or constants.ENDPOINT).rstrip("/"),
        files=[(f.path, f.bytes) for f in manifest.files]
        + [(MANIFEST, (release_dir / MANIFEST).stat().st_size)],
        token_source=source)
    plan.files.sort()
    if check_remote and (token or endpoint):
        _remote_state(_api(endpoint, token), repo_id, plan)
    return plan


def push_release(release_dir: str | Path, repo_id: str, *, token: str | None = None,
                 endpoint: str | None = None, dry_run: bool = False, private: bool = False,
                 commit_message: str | None = None) -> PushPlan:
    """Upload the release in one commit and tag it; ``dry_run`` returns the plan only."""
    release_dir = Path(release_dir)
    tok, _ = resolve_token(token)
    if tok is None and not dry_run:
        verify_release(release_dir)
        raise ReleaseError("no Hugging Face token: nothing was pushed. Fix: export HF_TOKEN=hf_... "
                           "(a write token) or run `hf auth login`, then push again.")
    plan = plan_push(release_dir, repo_id, token=token, endpoint=endpoint, check_remote=True)
    if plan.tag in plan.existing_tags:
        raise ReleaseError(
            f"tag {plan.tag} already exists on {repo_id}: tags are never moved, nothing was pushed. "
            f"Fix: bump the version (e.g. `bargein release build ... --version <next>`; "
            f"`bargein release diff` suggests the bump) and push the new folder.")
    if dry_run:
        return plan
    api = _api(endpoint, tok)
    with _progress_bars():
        return _push(api, release_dir, repo_id, plan, private, commit_message)


def _push(api, release_dir: Path, repo_id: str, plan: PushPlan, private: bool,
          commit_message: str | None) -> PushPlan:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    try:
        if not plan.repo_exists:
            api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
            plan.head = api.repo_info(repo_id, repo_type=REPO_TYPE).sha
        ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(release_dir / p))
               for p, _ in plan.files]
        ops += [CommitOperationDelete(path_in_repo=p) for p in plan.deletions]
        info = api.create_commit(
            repo_id, ops, repo_type=REPO_TYPE, parent_commit=plan.head,
            commit_message=commit_message or f"{plan.name} {plan.version}",
            commit_description=f"Release {plan.tag} built by bargein; manifest.json lists the "
                               "sha256 of every file.")
    except (HfHubHTTPError, RuntimeError, OSError, ValueError) as e:
        # upload errors arrive wrapped in RuntimeError; the cause says what the Hub answered
        cause = e.__cause__ if isinstance(e, RuntimeError) and e.__cause__ else e
        raise ReleaseError(f"push to {repo_id} failed before the commit was made, so its "
                           f"branches and tags are unchanged (no partial commit, no tag): "
                           f"{str(e).splitlines()[0]} ({str(cause).splitlines()[0]}). Fix: check "
                           "the token's write access and the network, then push again.") from e
    plan.commit_oid, plan.commit_url = info.oid, info.commit_url
    try:
        api.create_tag(repo_id, tag=plan.tag, revision=info.oid, repo_type=REPO_TYPE,
                       tag_message=f"{plan.name} {plan.version}")
    except HfHubHTTPError as e:
        raise ReleaseError(f"commit {info.oid} was made on {repo_id} but tagging {plan.tag} "
                           f"failed: {str(e).splitlines()[0]}. Fix: if another push created the "
                           f"tag meanwhile, bump the version; else run `bargein release push` "
                           "again (the unchanged files are skipped).") from e
    plan.pushed = True
    return plan


def check_repo_id(repo_id: str, what: str = "repo") -> str:
    """``ORG/NAME`` as the Hub allows it: letters, digits, ``.``, ``_``, ``-``; no ``..``, ``--``,
    path parts or spaces. The one check every push, pull and diff goes through."""
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    if (len(parts) != 2 or not all(_NAME_PART.fullmatch(x) for x in parts)
            or ".." in repo_id or "--" in repo_id):
        raise ReleaseError(f"{what} {repo_id!r} is not a Hub dataset name ORG/NAME (letters, "
                           "digits, '.', '_', '-'; no '..', '--', spaces or extra '/'). Fix: e.g. "
                           "my-org/bargein-ihbench")
    return repo_id


def check_revision(rev: str, ref: str | None = None) -> str:
    """A tag, branch or commit id; never a path (``..``, ``/``, ``\\``, spaces are refused,
    because the Hub client files refs under these names)."""
    if not isinstance(rev, str) or not _REVISION.fullmatch(rev) or ".." in rev:
        raise ReleaseError(f"revision {rev!r}{f' in {ref!r}' if ref else ''} is not a tag, "
                           "branch or commit id (letters, digits, '.', '_', '+', '-'; no '..', "
                           "'/' or spaces). Fix: e.g. @v1.0.0 or @main")
    return rev


def check_repo_path(path: str, repo_id: str) -> str:
    """A file name inside a repo: relative, no ``..`` or backslashes, no control characters."""
    parts = path.split("/")
    if (not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts)
            or any(ord(c) < 32 for c in path) or ":" in parts[0]):
        raise ReleaseError(f"{repo_id} lists a file named {path!r}, which would be written outside "
                           "the download folder. Nothing was downloaded. Fix: do not pull from "
                           "this repo (or endpoint); report it to its owner.")
    return path


def parse_ref(ref: str) -> tuple[str, str]:
    """``ORG/NAME[@REVISION]`` -> (repo id, revision), both validated."""
    text = ref.strip() if isinstance(ref, str) else ""
    repo, sep, rev = text.partition("@")
    if not repo or "/" not in repo or (sep and not rev):
        raise ReleaseError(f"{ref!r} is neither an existing folder nor ORG/NAME@REVISION. "
                           "Fix: pass a release folder or e.g. my-org/bargein-ihbench@v1.0.0")
    check_repo_id(repo)
    return repo, check_revision(rev, ref) if sep else "main"


def pull_release(ref: str | Path, *, out: str | Path | None = None, token: str | None = None,
                 endpoint: str | None = None) -> Path:
    """A verified local release folder from a path or ``ORG/NAME@vX.Y.Z`` (snapshot download).

    The repo name, the revision and every file name the Hub lists are checked before anything
    is downloaded; with ``out`` the files go to a staging folder beside it that replaces ``out``
    only once every checksum matched (``out`` itself must be new, empty or a bargein folder).
    """
    if isinstance(ref, Path) or Path(str(ref)).is_dir():
        verify_release(Path(ref))
        return Path(ref)
    repo_id, rev = parse_ref(str(ref))
    target = check_replaceable(out, option="--out") if out is not None else None
    tok, _ = resolve_token(token)
    staging = None
    try:
        with _hub_errors(ref, repo_id, rev):
            files = _api(endpoint, tok).list_repo_files(repo_id, repo_type=REPO_TYPE,
                                                        revision=rev)
        for name in files:
            check_repo_path(name, repo_id)
        if MANIFEST not in files:
            raise ReleaseError(f"{repo_id}@{rev} has no {MANIFEST}: not a bargein release. "
                               "Nothing was downloaded. Fix: check the repo name and revision.")
        from huggingface_hub import snapshot_download

        staging = make_staging(target) if target is not None else None
        with _hub_errors(ref, repo_id, rev), _progress_bars():
            path = Path(snapshot_download(repo_id, repo_type=REPO_TYPE, revision=rev, token=tok,
                                          endpoint=endpoint,
                                          local_dir=str(staging) if staging else None))
        try:
            verify_release(path)
        except ReleaseError as e:
            kept = " (nothing was kept)" if staging is not None else ""
            raise ReleaseError(f"{repo_id}@{rev} refused{kept}: {e}", evidence=e.evidence) from None
        if staging is not None:
            shutil.rmtree(staging / ".cache", ignore_errors=True)   # the client's download state
            swap_into_place(staging, target)
            staging = None
            return target
        return path
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def _hub_errors(ref: str, repo_id: str, rev: str):
    """The Hub client's errors as one-line :class:`ReleaseError` s."""
    from huggingface_hub.errors import (
        EntryNotFoundError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:                                  # the HTTP client huggingface_hub is built on
        from httpx2 import HTTPError as TransportError
    except ImportError:                   # older huggingface_hub releases
        from httpx import HTTPError as TransportError

    try:
        yield
    except RevisionNotFoundError as e:
        raise ReleaseError(f"{repo_id} has no revision {rev!r}. Fix: list its tags on the Hub "
                           "and pass one, e.g. @v1.0.0.") from e
    except RepositoryNotFoundError as e:
        raise ReleaseError(f"dataset repo {repo_id} not found (or private without a token). "
                           "Fix: check the name, or export HF_TOKEN for a private repo.") from e
    except OfflineModeIsEnabled as e:
        raise ReleaseError(f"{ref} is not in the local cache and HF_HUB_OFFLINE is set. Fix: "
                           "unset HF_HUB_OFFLINE or pass a local release folder.") from e
    except (HfHubHTTPError, EntryNotFoundError) as e:
        raise ReleaseError(f"pulling {ref} failed: {str(e).splitlines()[0]}. Fix: check the "
                           "endpoint, the name and your token, then pull again.") from e
    except (ValueError, OSError, TransportError) as e:   # a file name it refuses, a dead endpoint
        raise ReleaseError(f"pulling {ref} failed: {(str(e).splitlines() or [repr(e)])[0]}. "
                           "Nothing was kept. Fix: check the endpoint and the repo, then pull "
                           "again.") from e
