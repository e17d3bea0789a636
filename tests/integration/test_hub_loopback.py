"""Push / pull against the loopback Hub with the real huggingface_hub client (LFS protocol,
multipart included): the plan, one commit + tag, tag refusal, no token, tampered folders,
nothing pushed half, stale files deleted, and pulling a tag back for datasets to load."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from huggingface_hub import HfApi

from bargein.errors import ReleaseError
from bargein.releases.build import ReleaseSources, build_release
from bargein.releases.hub import plan_push, pull_release, push_release
from bargein.releases.manifest import read_manifest
from bargein.releases.reader import decode_audio, load_config
from doubles.synthetic_release import write_synthetic
from bargein.testing.hub_server import LoopbackHub

pytestmark = pytest.mark.integration
TOKEN = "hf_loopback_test_token"


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    base = tmp_path_factory.mktemp("hub")
    run = write_synthetic(base / "work", 4, seed=9)
    src = dict(conversations=run.conversations, rendered=run.rendered, eval_items=run.eval_items,
               audio_roots=(run.root,))
    v1 = base / "v1"
    build_release(v1, name="hubtest", version="1.0.0", provenance={"git_commit": "x"},
                  sources=ReleaseSources(**src, dpo={"train": run.dpo}))
    v2 = base / "v2"          # drops the dpo config: its files must go from the branch
    build_release(v2, name="hubtest", version="1.1.0", provenance={"git_commit": "x"},
                  sources=ReleaseSources(**src), previous=v1)
    return {"v1": v1, "v2": v2, "base": base}


@pytest.fixture()
def hub(monkeypatch):
    import huggingface_hub.constants as C

    # conftest sets the Hub offline; the loopback server is the one exception. The client uses
    # Xet storage when hf_xet is installed: the loopback Hub speaks the LFS protocol instead.
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(C, "HF_HUB_DISABLE_XET", True)
    with LoopbackHub({TOKEN: "alice"}, multipart_chunk=256 * 1024) as h:
        yield h


def test_dry_run_plan_then_push_one_commit_and_tag(releases, hub):
    v1 = releases["v1"]
    plan = push_release(v1, "org/hubtest", token=TOKEN, endpoint=hub.endpoint, dry_run=True)
    assert plan.repo_exists is False and not plan.pushed and plan.tag == "v1.0.0"
    files = {p for p, _ in plan.files}
    assert "manifest.json" in files and "README.md" in files
    assert {f.path for f in read_manifest(v1).files} | {"manifest.json"} == files
    assert "one commit" in plan.describe() and not any(m == "POST" and "commit" in p
                                                       for m, p, _ in hub.requests)
    done = push_release(v1, "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    assert done.pushed and done.commit_oid
    commits = [p for m, p, s in hub.requests if m == "POST" and "/commit/" in p]
    assert commits == ["/api/datasets/org/hubtest/commit/main"]          # exactly one commit
    assert any("/part/" in p for _, p, _ in hub.requests)                # multipart LFS exercised
    repo = hub.repo("org/hubtest")
    assert repo.tags == {"v1.0.0": done.commit_oid} and repo.branches["main"] == done.commit_oid
    for p in files:
        assert hub.read("org/hubtest", p, rev="v1.0.0") == (v1 / p).read_bytes()
    refs = HfApi(endpoint=hub.endpoint, token=TOKEN).list_repo_refs("org/hubtest", repo_type="dataset")
    assert [t.name for t in refs.tags] == ["v1.0.0"]


def test_existing_tag_no_token_and_tampered_release_are_refused(releases, hub, tmp_path):
    v1 = releases["v1"]
    push_release(v1, "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    head = hub.repo("org/hubtest").branches["main"]
    n_requests = len(hub.requests)
    with pytest.raises(ReleaseError, match=r"tag v1\.0\.0 already exists.*never moved.*Fix: bump"):
        push_release(v1, "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    assert hub.repo("org/hubtest").branches["main"] == head
    assert not any(m in ("PUT", "POST") and ("commit" in p or "lfs" in p or "tag" in p)
                   for m, p, _ in hub.requests[n_requests:])
    n_requests = len(hub.requests)
    with pytest.raises(ReleaseError, match="no Hugging Face token.*HF_TOKEN"):
        push_release(releases["v2"], "org/hubtest", endpoint=hub.endpoint)
    bad = tmp_path / "bad"
    shutil.copytree(releases["v2"], bad)
    (bad / "README.md").write_text("edited by hand\n")
    with pytest.raises(ReleaseError, match="checksum mismatch for README.md"):
        push_release(bad, "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    assert len(hub.requests) == n_requests                 # refused before any request


def test_failed_upload_or_commit_pushes_nothing(releases, hub):
    push_release(releases["v1"], "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    repo = hub.repo("org/hubtest")
    before = dict(repo.branches), dict(repo.tags)
    hub.fail(r"/commit/main$", "POST", status=422)
    with pytest.raises(ReleaseError, match="before the commit was made.*no partial commit, no tag"):
        push_release(releases["v2"], "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    assert (dict(repo.branches), dict(repo.tags)) == before
    hub.failures.clear()
    hub.fail(r"/upload/[0-9a-f]{64}$", "PUT", status=403)        # storage refuses a file
    with pytest.raises(ReleaseError, match="before the commit was made"):
        push_release(releases["v1"], "org/fresh", token=TOKEN, endpoint=hub.endpoint)
    fresh = hub.repo("org/fresh")
    assert len(fresh.commits) == 1 and not fresh.tags        # only the repo's initial commit
    assert set(fresh.resolve("main").files) == {".gitattributes"}


def test_next_version_deletes_stale_files_and_pull_round_trips(releases, hub, tmp_path):
    push_release(releases["v1"], "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    plan = plan_push(releases["v2"], "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    assert plan.existing_tags == ["v1.0.0"]
    assert plan.deletions and all(p.startswith("dpo/") for p in plan.deletions)
    push_release(releases["v2"], "org/hubtest", token=TOKEN, endpoint=hub.endpoint)
    repo = hub.repo("org/hubtest")
    assert set(repo.tags) == {"v1.0.0", "v1.1.0"} and repo.tags["v1.0.0"] != repo.tags["v1.1.0"]
    head_files = set(repo.resolve("main").files)
    assert not any(p.startswith("dpo/") for p in head_files)
    # pull the older tag: the exact v1 folder, verified, loadable by datasets, audio decodable
    got = pull_release("org/hubtest@v1.0.0", out=tmp_path / "pulled", endpoint=hub.endpoint,
                       token=TOKEN)
    assert read_manifest(got).version == "1.0.0"
    for f in read_manifest(releases["v1"]).files:
        assert (got / f.path).read_bytes() == (releases["v1"] / f.path).read_bytes()
    ds = load_config(got, "conversations", "test")
    x, sr = decode_audio(ds[0]["audio"])
    assert x.shape[1] == 2 and sr == 16000
    with pytest.raises(ReleaseError, match="has no revision 'v9.9.9'"):
        pull_release("org/hubtest@v9.9.9", out=tmp_path / "nope", endpoint=hub.endpoint, token=TOKEN)


def test_cli_push_dry_run_and_push_in_a_subprocess(releases, tmp_path):
    with LoopbackHub({TOKEN: "alice"}) as hub:
        env = {**os.environ, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1",
               "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        cmd = [sys.executable, "-m", "bargein.cli", "release", "push", str(releases["v1"]),
               "--repo", "org/cli", "--endpoint", hub.endpoint]
        dry = subprocess.run(cmd + ["--dry-run"], env=env, capture_output=True, text=True, timeout=120)
        assert dry.returncode == 0, dry.stderr
        assert "repo: will be created" in dry.stdout and "dry run: nothing was uploaded" in dry.stdout
        assert "token: HF_TOKEN" in dry.stdout and ("datasets", "org/cli") not in hub.repos
        real = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert real.returncode == 0, real.stderr
        assert "tagged v1.0.0" in real.stdout and hub.repo("org/cli").tags
        again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 2 and "already exists" in again.stderr
        assert TOKEN not in real.stdout + real.stderr + again.stderr
