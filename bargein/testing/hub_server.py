"""A loopback Hugging Face Hub: the endpoints ``huggingface_hub`` (2.x) calls to create a repo,
commit files (regular and LFS, single-part and multipart), tag, list refs and download, with
state in memory. Tests drive the real ``HfApi(endpoint=hub.endpoint)`` against it.

    with LoopbackHub(tokens={"hf_test": "alice"}) as hub:
        api = HfApi(endpoint=hub.endpoint, token="hf_test")
        api.create_repo("org/data", repo_type="dataset")
        ...
        hub.requests        # [(method, path, status), ...] every request, in order

What the client sends (read from huggingface_hub's ``_commit_api``/``lfs``/``hf_api`` and
recorded here): ``POST /api/repos/create``; ``GET /api/{type}s/{repo}[/revision/{rev}]``;
``GET .../refs``; ``POST /api/validate-yaml`` for a README; ``POST .../preupload/{rev}`` (the
server picks "lfs" or "regular" per file); LFS files through ``POST /{prefix}{repo}.git/info/lfs/
objects/batch`` then ``PUT`` to the returned href (or part URLs + a completion ``POST`` when the
batch answer carries ``chunk_size``) and a verify ``POST``; then one NDJSON ``POST .../commit/
{rev}`` (header, ``file`` base64, ``lfsFile`` oid, ``deletedFile``); ``POST .../tag/{rev}``.
Downloads: ``GET .../tree/{rev}``, ``HEAD``/``GET /{prefix}{repo}/resolve/{rev}/{path}``.

Not implemented: Xet storage (the client uses it when ``hf_xet`` is installed; set
``HF_HUB_DISABLE_XET=1`` for the LFS protocol), copies (paths-info), tag deletion, PRs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

LFS_PATTERNS = re.compile(r"\.(parquet|arrow|png|jpg|jpeg|flac|wav|mp3|ogg|npz|bin|safetensors|"
                          r"onnx|zip|gz|zst|tar)$", re.I)
LFS_MIN_BYTES = 10 * 1024 * 1024


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass
class HubFile:
    size: int
    blob_id: str                    # git blob oid (of the pointer for LFS files)
    content: bytes | None = None    # regular files
    lfs_sha256: str | None = None   # LFS files


@dataclass
class HubCommit:
    oid: str
    parent: str | None
    summary: str
    files: dict[str, HubFile]


@dataclass
class HubRepo:
    repo_id: str
    repo_type: str
    private: bool
    commits: dict[str, HubCommit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    lfs: dict[str, bytes] = field(default_factory=dict)            # sha256 -> bytes, per repo
    parts: dict[str, dict[int, bytes]] = field(default_factory=dict)

    def resolve(self, rev: str) -> HubCommit | None:
        sha = self.branches.get(rev) or self.tags.get(rev) or (rev if rev in self.commits else None)
        return self.commits.get(sha) if sha else None


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class LoopbackHub:
    """In-memory Hub on 127.0.0.1. ``tokens`` maps a token to a user name (write access)."""

    def __init__(self, tokens: dict[str, str] | None = None, *, multipart_chunk: int | None = None,
                 lfs_min_bytes: int = LFS_MIN_BYTES):
        self.tokens = dict(tokens or {"hf_loopback": "tester"})
        self.multipart_chunk = multipart_chunk    # force multipart LFS uploads above this size
        self.lfs_min_bytes = lfs_min_bytes
        self.repos: dict[tuple[str, str], HubRepo] = {}
        self.requests: list[tuple[str, str, int]] = []
        self.failures: list[tuple[re.Pattern, str, int]] = []   # (path regex, method, status)
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self) -> "LoopbackHub":
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "LoopbackHub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "call start() first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail(self, path_regex: str, method: str = "*", status: int = 403) -> None:
        """Answer requests matching ``path_regex`` (and method) with ``status`` from now on."""
        self.failures.append((re.compile(path_regex), method.upper(), status))

    # ---- inspection helpers for tests ----------------------------------------------------
    def repo(self, repo_id: str, repo_type: str = "dataset") -> HubRepo:
        return self.repos[(repo_type, repo_id)]

    def read(self, repo_id: str, path: str, rev: str = "main", repo_type: str = "dataset") -> bytes:
        commit = self.repo(repo_id, repo_type).resolve(rev)
        f = commit.files[path]
        return f.content if f.lfs_sha256 is None else self.repo(repo_id, repo_type).lfs[f.lfs_sha256]

    # ---- state changes -------------------------------------------------------------------
    def create_repo(self, repo_id: str, repo_type: str, private: bool, user: str) -> HubRepo:
        with self.lock:
            if (repo_type, repo_id) in self.repos:
                raise HubError(409, "You already created this repo", "RepoExists")
            repo = HubRepo(repo_id=repo_id, repo_type=repo_type, private=private)
            attrs = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.png filter=lfs diff=lfs merge=lfs -text\n"
            files = {".gitattributes": HubFile(size=len(attrs), blob_id=git_blob_oid(attrs), content=attrs)}
            oid = hashlib.sha1(f"init:{repo_type}:{repo_id}".encode()).hexdigest()
            repo.commits[oid] = HubCommit(oid=oid, parent=None, summary="initial commit", files=files)
            repo.branches["main"] = oid
            self.repos[(repo_type, repo_id)] = repo
            return repo

    def commit(self, repo: HubRepo, rev: str, lines: list[dict]) -> HubCommit:
        with self.lock:
            if rev not in repo.branches:
                raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            head = repo.commits[repo.branches[rev]]
            if not lines or lines[0].get("key") != "header":
                raise HubError(400, "first NDJSON line must be the commit header")
            header = lines[0]["value"]
            parent = header.get("parentCommit")
            if parent and not head.oid.startswith(parent):
                raise HubError(412, f"parent commit {parent} is not the head of {rev} ({head.oid})")
            files = dict(head.files)
            for line in lines[1:]:
                key, v = line.get("key"), line.get("value", {})
                if key == "file":
                    data = base64.b64decode(v["content"])
                    files[v["path"]] = HubFile(size=len(data), blob_id=git_blob_oid(data), content=data)
                elif key == "lfsFile":
                    oid, size = v["oid"], v.get("size")
                    if oid not in repo.lfs or (size is not None and len(repo.lfs[oid]) != size):
                        raise HubError(422, f"LFS object {oid} for {v['path']} was never uploaded")
                    n = len(repo.lfs[oid])
                    files[v["path"]] = HubFile(size=n, blob_id=git_blob_oid(lfs_pointer(oid, n)),
                                               lfs_sha256=oid)
                elif key == "deletedFile":
                    if v["path"] not in files:
                        raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                    del files[v["path"]]
                elif key == "deletedFolder":
                    prefix = v["path"].rstrip("/") + "/"
                    for p in [p for p in files if p.startswith(prefix)]:
                        del files[p]
                else:
                    raise HubError(400, f"unknown commit operation {key!r}")
            digest = hashlib.sha1(json.dumps([head.oid, lines], sort_keys=True).encode()).hexdigest()
            commit = HubCommit(oid=digest, parent=head.oid, summary=header.get("summary", ""),
                               files=files)
            repo.commits[digest] = commit
            repo.branches[rev] = digest
            return commit

    def tag(self, repo: HubRepo, rev: str, tag: str) -> None:
        with self.lock:
            commit = repo.resolve(rev)
            if commit is None:
                raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            if tag in repo.tags or tag in repo.branches:
                raise HubError(409, f"Tag {tag} already exists")
            repo.tags[tag] = commit.oid


class _Handler(BaseHTTPRequestHandler):
    hub: LoopbackHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return

    # ---- plumbing ------------------------------------------------------------------------
    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None,
              raw: bytes | None = None, head: bool = False) -> None:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if raw is None else "application/octet-stream")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)
        with self.hub.lock:
            self.hub.requests.append((self.command, urlsplit(self.path).path, status))

    def _user(self, required: bool) -> str | None:
        auth = self.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        user = self.hub.tokens.get(token) if token else None
        if required and user is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        return user

    def _repo(self, rtype: str, repo_id: str, write: bool = False) -> HubRepo:
        user = self._user(required=write)
        repo = self.hub.repos.get((rtype, repo_id))
        if repo is None or (repo.private and user is None):
            raise HubError(404, "Repository not found", "RepoNotFound")
        return repo

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        for rx, method, status in list(self.hub.failures):
            if rx.search(path) and method in ("*", self.command):
                self._body()
                return self._send(status, {"error": "injected failure"},
                                  {"X-Error-Message": "injected failure"})
        try:
            self._route(path, query)
        except HubError as e:
            headers = {"X-Error-Message": e.message}
            if e.code:
                headers["X-Error-Code"] = e.code
            self._send(e.status, {"error": e.message}, headers)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _dispatch

    # ---- routes --------------------------------------------------------------------------
    def _route(self, path: str, query: dict) -> None:
        h, cmd = self.hub, self.command
        if path == "/api/whoami-v2":
            user = self._user(required=True)
            return self._send(200, {"type": "user", "name": user, "orgs": [],
                                    "auth": {"type": "access_token",
                                             "accessToken": {"role": "write"}}})
        if path == "/api/validate-yaml" and cmd == "POST":
            return self._validate_yaml(json.loads(self._body() or b"{}"))
        if path == "/api/repos/create" and cmd == "POST":
            user = self._user(required=True)
            p = json.loads(self._body())
            rtype = p.get("type") or "model"
            repo_id = f"{p['organization']}/{p['name']}" if p.get("organization") else f"{user}/{p['name']}"
            url = f"{h.endpoint}/{'' if rtype == 'model' else rtype + 's/'}{repo_id}"
            try:
                h.create_repo(repo_id, rtype, bool(p.get("private")) or p.get("visibility") == "private", user)
            except HubError as e:
                return self._send(409, {"error": e.message, "url": url})
            return self._send(200, {"url": url, "name": repo_id, "id": repo_id})
        m = re.match(r"^/lfs/(model|dataset|space)/([^/]+/[^/]+)/(.+)$", path)
        if m:     # storage URLs are pre-signed (the client sends no token there), like S3's
            repo = h.repos.get((m[1], unquote(m[2])))
            if repo is None:
                raise HubError(404, "Repository not found", "RepoNotFound")
            return self._lfs_storage(repo, m[3])
        m = re.match(r"^/api/(model|dataset|space)s/([^/]+/[^/]+)(?:/(.*))?$", path)
        if m:
            return self._api(m[1], unquote(m[2]), m[3] or "", query)
        m = re.match(r"^/(?:(dataset|space)s/)?([^/]+/[^/]+?)\.git/info/lfs/objects/batch$", path)
        if m and cmd == "POST":
            return self._lfs_batch(m[1] or "model", unquote(m[2]))
        m = re.match(r"^/(?:(dataset|space)s/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if m and cmd in ("GET", "HEAD"):
            return self._resolve(m[1] or "model", unquote(m[2]), unquote(m[3]), unquote(m[4]))
        raise HubError(404, f"loopback hub: no route for {cmd} {path}")

    def _validate_yaml(self, p: dict) -> None:
        import yaml

        content = p.get("content", "")
        errors = []
        if content.startswith("---"):
            try:
                meta = yaml.safe_load(content[3:].split("\n---", 1)[0])
                if meta is not None and not isinstance(meta, dict):
                    errors.append({"message": "metadata must be a mapping"})
                for c in (meta or {}).get("configs", []) or []:
                    if "config_name" not in c:
                        errors.append({"message": f"config entry lacks config_name: {c}"})
            except yaml.YAMLError as e:
                errors.append({"message": f"invalid YAML: {e}"})
        return self._send(400 if errors else 200, {"errors": errors, "warnings": []})

    def _api(self, rtype: str, repo_id: str, rest: str, query: dict) -> None:
        h, cmd = self.hub, self.command
        parts = rest.split("/", 1) if rest else [""]
        op, arg = parts[0], unquote(parts[1]) if len(parts) > 1 else ""
        if op in ("", "revision") and cmd == "GET":
            repo = self._repo(rtype, repo_id)
            commit = repo.resolve(arg or "main")
            if commit is None:
                raise HubError(404, f"Invalid rev id: {arg}", "RevisionNotFound")
            return self._send(200, self._info(repo, commit))
        if op == "refs" and cmd == "GET":
            repo = self._repo(rtype, repo_id)
            ref = lambda kind, n, sha: {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": sha}  # noqa: E731
            return self._send(200, {
                "branches": [ref("heads", n, s) for n, s in sorted(repo.branches.items())],
                "tags": [ref("tags", n, s) for n, s in sorted(repo.tags.items())],
                "converts": [], "pullRequests": []})
        if op == "preupload" and cmd == "POST":
            repo = self._repo(rtype, repo_id, write=True)
            head = repo.resolve(arg)
            if head is None:
                raise HubError(404, f"Invalid rev id: {arg}", "RevisionNotFound")
            out = []
            for f in json.loads(self._body())["files"]:
                lfs = f["size"] >= h.lfs_min_bytes or bool(LFS_PATTERNS.search(f["path"]))
                old = head.files.get(f["path"])
                oid = None if old is None else (old.lfs_sha256 or old.blob_id)
                out.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular",
                            "shouldIgnore": False, "oid": oid})
            return self._send(200, {"files": out, "commitOid": head.oid})
        if op == "commit" and cmd == "POST":
            repo = self._repo(rtype, repo_id, write=True)
            lines = [json.loads(x) for x in self._body().splitlines() if x.strip()]
            c = h.commit(repo, arg, lines)
            prefix = "" if rtype == "model" else f"{rtype}s/"
            return self._send(200, {"success": True, "commitOid": c.oid, "pullRequestUrl": None,
                                    "commitUrl": f"{h.endpoint}/{prefix}{repo_id}/commit/{c.oid}"})
        if op == "tag" and cmd == "POST":
            repo = self._repo(rtype, repo_id, write=True)
            h.tag(repo, arg, json.loads(self._body())["tag"])
            return self._send(200, {})
        if op == "tree" and cmd == "GET":
            repo = self._repo(rtype, repo_id)
            rev, _, sub = arg.partition("/")
            commit = repo.resolve(rev)
            if commit is None:
                raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
            return self._send(200, self._tree(commit, sub, recursive))
        raise HubError(404, f"loopback hub: no route for {cmd} /api/{rtype}s/{repo_id}/{rest}")

    @staticmethod
    def _entry(path: str, f: HubFile) -> dict:
        e: dict[str, Any] = {"type": "file", "path": path, "size": f.size, "oid": f.blob_id}
        if f.lfs_sha256:
            e["lfs"] = {"oid": f.lfs_sha256, "size": f.size,
                        "pointerSize": len(lfs_pointer(f.lfs_sha256, f.size))}
        return e

    def _tree(self, commit: HubCommit, sub: str, recursive: bool) -> list[dict]:
        prefix = sub.strip("/") + "/" if sub.strip("/") else ""
        out, folders = [], set()
        for p in sorted(commit.files):
            if not p.startswith(prefix):
                continue
            rest = p[len(prefix):]
            if "/" in rest and not recursive:
                folders.add(prefix + rest.split("/", 1)[0])
                continue
            if recursive:
                parts = rest.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    folders.add(prefix + "/".join(parts[:i]))
            out.append(self._entry(p, commit.files[p]))
        dirs = [{"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0}
                for d in sorted(folders)]
        return dirs + out

    def _info(self, repo: HubRepo, commit: HubCommit) -> dict:
        return {"id": repo.repo_id, "author": repo.repo_id.split("/")[0], "sha": commit.oid,
                "private": repo.private, "disabled": False, "gated": False, "tags": [],
                "siblings": [{"rfilename": p, "size": f.size, "blobId": f.blob_id,
                              **({"lfs": {"size": f.size, "sha256": f.lfs_sha256,
                                          "pointerSize": len(lfs_pointer(f.lfs_sha256, f.size))}}
                                 if f.lfs_sha256 else {})}
                             for p, f in sorted(commit.files.items())]}

    def _resolve(self, rtype: str, repo_id: str, rev: str, path: str) -> None:
        repo = self._repo(rtype, repo_id)
        commit = repo.resolve(rev)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        f = commit.files.get(path)
        if f is None:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        data = f.content if f.lfs_sha256 is None else repo.lfs[f.lfs_sha256]
        etag = f.lfs_sha256 or f.blob_id
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{etag}"'}
        if f.lfs_sha256:
            headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(f.size)})
        rng = re.match(r"bytes=(\d+)-$", self.headers.get("Range", ""))
        if rng and self.command == "GET":
            start = int(rng[1])
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            return self._send(206, raw=data[start:], headers=headers)
        return self._send(200, raw=data, headers=headers, head=self.command == "HEAD")

    # ---- LFS -----------------------------------------------------------------------------
    def _lfs_batch(self, rtype: str, repo_id: str) -> None:
        h = self.hub
        repo = self._repo(rtype, repo_id, write=True)
        base = f"{h.endpoint}/lfs/{rtype}/{repo_id}"
        p = json.loads(self._body())
        objects = []
        for o in p["objects"]:
            oid, size = o["oid"], o["size"]
            if oid in repo.lfs:
                objects.append({"oid": oid, "size": size})
                continue
            verify = {"href": f"{base}/verify", "header": {}}
            chunk = h.multipart_chunk
            if chunk and size > chunk:
                n = -(-size // chunk)
                header = {"chunk_size": str(chunk)}
                header.update({f"{i:05d}": f"{base}/part/{oid}/{i}" for i in range(1, n + 1)})
                upload = {"href": f"{base}/complete/{oid}", "header": header}
            else:
                upload = {"href": f"{base}/upload/{oid}", "header": {}}
            objects.append({"oid": oid, "size": size, "authenticated": True,
                            "actions": {"upload": upload, "verify": verify}})
        return self._send(200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"})

    def _lfs_storage(self, repo: HubRepo, rest: str) -> None:
        h, cmd = self.hub, self.command
        m = re.match(r"^upload/([0-9a-f]{64})$", rest)
        if m and cmd == "PUT":
            data = self._body()
            if hashlib.sha256(data).hexdigest() != m[1]:
                raise HubError(400, "uploaded bytes do not match the sha256 oid")
            with h.lock:
                repo.lfs[m[1]] = data
            return self._send(200, {})
        m = re.match(r"^part/([0-9a-f]{64})/(\d+)$", rest)
        if m and cmd == "PUT":
            data = self._body()
            with h.lock:
                repo.parts.setdefault(m[1], {})[int(m[2])] = data
            return self._send(200, {}, {"ETag": f'"{hashlib.md5(data).hexdigest()}"'})
        m = re.match(r"^complete/([0-9a-f]{64})$", rest)
        if m and cmd == "POST":
            body = json.loads(self._body())
            with h.lock:
                parts = repo.parts.pop(m[1], {})
            numbers = [p["partNumber"] for p in body["parts"]]
            if numbers != sorted(parts) or any(not p.get("etag") for p in body["parts"]):
                raise HubError(400, f"multipart completion lists parts {numbers}, got {sorted(parts)}")
            data = b"".join(parts[i] for i in numbers)
            if hashlib.sha256(data).hexdigest() != m[1]:
                raise HubError(400, "assembled parts do not match the sha256 oid")
            with h.lock:
                repo.lfs[m[1]] = data
            return self._send(200, {})
        if rest == "verify" and cmd == "POST":
            body = json.loads(self._body())
            if body["oid"] not in repo.lfs or len(repo.lfs[body["oid"]]) != body["size"]:
                raise HubError(404, f"LFS object {body['oid']} not found")
            return self._send(200, {})
        raise HubError(404, f"loopback hub: no LFS route for {cmd} {rest}")
