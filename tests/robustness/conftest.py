"""Session inputs for the bad-input corpus, the loopback Hub it pulls from, and its summary line."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import inputs as I  # noqa: E402
from harness import RESULTS, run_forked  # noqa: E402


def _preload() -> None:
    """Import every command module and the heavy libraries once, so each forked case starts
    warm (the fork shares them) and the corpus stays a few minutes."""
    import importlib

    from bargein.cli import COMMANDS, SCORE_COMMANDS

    for target, _ in [*COMMANDS.values(), *SCORE_COMMANDS.values()]:
        try:
            importlib.import_module(target.split(":")[0])
        except ImportError:
            pass
    for mod in ("datasets", "pyarrow.parquet", "huggingface_hub", "soundfile", "openai",
                "anthropic", "bargein.releases.build", "bargein.releases.hub",
                "bargein.generators.conversation", "bargein.verify.loop", "bargein.audio.render",
                "bargein.masking.stage", "bargein.perturb.stage", "bargein.scorers.ihbench"):
        try:
            importlib.import_module(mod)
        except ImportError:
            pass


def _cli(argv: list[str], cwd: Path) -> None:
    cwd.mkdir(parents=True, exist_ok=True)
    res = run_forked(argv, cwd, {}, 300)
    assert res.code == 0 and not res.traceback, res.stderr[-2000:]


@pytest.fixture(scope="session")
def corpus_inputs(tmp_path_factory) -> Path:
    _preload()
    root = tmp_path_factory.mktemp("corpus-inputs")
    build = root.parent / "corpus-build"
    _cli(["--workdir", str(root / "good"), "generate", "conversations", "--scenarios", "2"], build)
    _cli(["release", "build", "--out", str(root / "rel"), "--name", "corpus", "--version", "1.0.0",
          "--eval-items", str(root / "good" / "eval_items.jsonl"),
          "--sft", str(root / "good" / "sft.jsonl"), "--dpo", str(root / "good" / "dpo.jsonl")],
         build)
    shutil.rmtree(root / "good" / "cache", ignore_errors=True)
    I.build_bad_text(root)
    I.build_configs(root, root.parent / "sandbox-outside-never-used")
    I.build_good(root / "good", root / "rel")
    I.build_audio(root)
    I.build_parquet(root)
    I.build_releases(root, root / "rel")
    items = [json.loads(x) for x in (root / "good" / "eval_items.jsonl").read_text().splitlines()]
    (root / "responses.jsonl").write_text("".join(
        json.dumps({"item_id": it["id"], "epoch": 0, "response": "Sorry, could you repeat?"}) + "\n"
        for it in items))
    for p in root.rglob("*"):                 # inputs are read-only: a write is a finding
        if p.is_file():
            p.chmod(0o444)
    return root


@pytest.fixture(scope="session")
def loopback_hub(corpus_inputs):
    """evil/rel (a real release), evil/dots (also lists ``../escape.txt``), evil/card (its card
    reads data files outside the folder; manifest updated to match)."""
    import huggingface_hub.constants as C

    from bargein.releases.hub import push_release
    from bargein.testing.hub_server import HubFile, LoopbackHub, git_blob_oid

    saved = (C.HF_HUB_OFFLINE, C.HF_HUB_DISABLE_XET)
    C.HF_HUB_OFFLINE, C.HF_HUB_DISABLE_XET = False, True
    token = "hf_corpus_token"
    hub = LoopbackHub({token: "evil"}).start()
    try:
        push_release(corpus_inputs / "rel", "evil/rel", token=token, endpoint=hub.endpoint)
        push_release(corpus_inputs / "rel", "evil/dots", token=token, endpoint=hub.endpoint)
        repo = hub.repo("evil/dots")
        data = b"escaped\n"
        repo.resolve("v1.0.0").files["../escape.txt"] = HubFile(
            size=len(data), blob_id=git_blob_oid(data), content=data)
        card = corpus_inputs / "releases" / "card_outside"
        _push_unverified(hub, token, card, "evil/card")
        yield hub
    finally:
        hub.stop()
        C.HF_HUB_OFFLINE, C.HF_HUB_DISABLE_XET = saved


def _push_unverified(hub, token: str, folder: Path, repo_id: str) -> None:
    """Upload a folder as it is (a hostile publisher does not run our checks) and tag it."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=hub.endpoint, token=token)
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    ops = [CommitOperationAdd(path_in_repo=p.relative_to(folder).as_posix(), path_or_fileobj=str(p))
           for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    info = api.create_commit(repo_id, ops, repo_type="dataset", commit_message="hostile")
    api.create_tag(repo_id, tag="v1.0.0", revision=info.oid, repo_type="dataset")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not RESULTS:
        return
    done = [r for r in RESULTS.values() if not r["pending"]]
    pend = [r for r in RESULTS.values() if r["pending"]]
    line = (f"bad_inputs_total={len(RESULTS)} "
            f"bad_inputs_clean={sum(r['clean'] for r in RESULTS.values())} "
            f"tracebacks={sum(r['traceback'] for r in RESULTS.values())} "
            f"runaways={sum(r['runaway'] for r in RESULTS.values())} "
            f"files_outside_target={sum(r['outside'] for r in RESULTS.values())} "
            f"leftovers={sum(r['leftovers'] for r in RESULTS.values())} "
            f"orphans={sum(r['orphans'] for r in RESULTS.values())} "
            f"pending_cases={len(pend)} pending_clean={sum(r['clean'] for r in pend)} "
            f"own_cases={len(done)} own_clean={sum(r['clean'] for r in done)} "
            f"commands={len({r['command'] for r in RESULTS.values()})} "
            f"kinds={len({r['kind'] for r in RESULTS.values()})}")
    terminalreporter.write_sep("=", "bad-input corpus")
    terminalreporter.write_line(line)
    out = os.environ.get("BARGEIN_CORPUS_SUMMARY")
    if out:
        Path(out).write_text(json.dumps({"summary": line, "cases": RESULTS}, indent=1,
                                        sort_keys=True))
