"""The one cache: a cached record is served only while the files it points to are intact.

Render items use the plugin ``tone`` engine (fast, deterministic); the generic cases use a
runner stage that writes one file per item, inside and outside the work dir.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bargein.audio.render import RenderConfig, render_conversations
from bargein.cache import ArtifactRef, ContentCache, cache_key, check_artifacts, recording
from bargein.records import ChatMessage
from bargein.runner import Stage, run_stage
from bargein.store import atomic_write_bytes

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from doubles import render_convs as C  # noqa: E402
import _runner_stages as S  # noqa: E402
from test_plugins import plugin  # noqa: E402,F401 - the fixture

TONE = RenderConfig(assistant_voice="tone:high", user_voice="tone:low", label_vad="energy")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def rendered(plugin, tmp_path):  # noqa: F811
    convs = [C.verified(seed=s, variant=s % 2) for s in (1, 2, 3)]
    first = render_conversations(convs, workdir=tmp_path, seed=5, config=TONE, workers=1)
    assert first.computed == 3 and not first.failures
    return convs, first, _files(tmp_path / "artifacts"), (tmp_path / "render.jsonl").read_bytes(), tmp_path


def test_untouched_rerun_computes_nothing(rendered):
    convs, first, files, jsonl, wd = rendered
    again = render_conversations(convs, workdir=wd, seed=5, config=TONE, workers=1)
    assert (again.computed, again.cached, again.stale) == (0, 3, 0)
    assert (wd / "render.jsonl").read_bytes() == jsonl


def test_deleting_one_artifact_rerenders_exactly_that_item(rendered):
    convs, first, files, jsonl, wd = rendered
    victim = first.outputs[1]
    clip = next(s.clip_path for s in victim.segments if s.clip_path)
    (wd / clip).unlink()
    again = render_conversations(convs, workdir=wd, seed=5, config=TONE, workers=1)
    assert (again.computed, again.cached, again.stale) == (1, 2, 1)
    assert "1 recomputed because their files were missing or changed" in again.summary()
    assert _files(wd / "artifacts") == files and (wd / "render.jsonl").read_bytes() == jsonl


def test_deleting_the_whole_audio_folder_rerenders_everything(rendered):
    import shutil

    convs, first, files, jsonl, wd = rendered
    shutil.rmtree(wd / "artifacts")
    again = render_conversations(convs, workdir=wd, seed=5, config=TONE, workers=2)
    assert (again.computed, again.stale) == (3, 3)
    assert _files(wd / "artifacts") == files and (wd / "render.jsonl").read_bytes() == jsonl


def test_corrupting_one_artifact_same_size_recomputes_that_item(rendered):
    convs, first, files, jsonl, wd = rendered
    labels = wd / first.outputs[2].frame_labels_path
    data = bytearray(labels.read_bytes())
    data[len(data) // 2] ^= 0xFF
    labels.write_bytes(bytes(data))
    assert labels.stat().st_size == len(files[Path(first.outputs[2].frame_labels_path).relative_to("artifacts").as_posix()])
    again = render_conversations(convs, workdir=wd, seed=5, config=TONE, workers=1)
    assert (again.computed, again.cached) == (1, 2)
    assert _files(wd / "artifacts") == files


def test_artifacts_outside_the_workdir_are_checked_too(tmp_path):
    """Perturb writes its pairs under --out, not the work dir: those files count the same."""
    out = tmp_path / "out"
    stage = Stage(name="write", fn=S.write_file, output=ChatMessage, config={"out": str(out)})
    items = [ChatMessage(role="user", content=f"text {i}", id=f"t{i}") for i in range(4)]
    assert run_stage(stage, items, workdir=tmp_path / "w", seed=1).computed == 4
    (out / "t2.txt").unlink()
    (out / "t3.txt").write_text("tampered", encoding="utf-8")
    again = run_stage(stage, items, workdir=tmp_path / "w", seed=1)
    assert (again.computed, again.cached) == (2, 2)
    assert (out / "t2.txt").read_text(encoding="utf-8").startswith("TEXT 2")
    assert (out / "t3.txt").read_text(encoding="utf-8").startswith("TEXT 3")


def test_files_written_in_worker_processes_are_recorded(tmp_path):
    out = tmp_path / "out"
    stage = Stage(name="write", fn=S.write_file, output=ChatMessage, config={"out": str(out)}, kind="cpu")
    items = [ChatMessage(role="user", content=f"text {i}", id=f"t{i}") for i in range(4)]
    assert run_stage(stage, items, workdir=tmp_path / "w", seed=1, workers=2).computed == 4
    (out / "t0.txt").unlink()
    assert run_stage(stage, items, workdir=tmp_path / "w", seed=1, workers=2).computed == 1


def test_recording_and_check(tmp_path):
    with recording() as written:
        atomic_write_bytes(tmp_path / "a.bin", b"abc")
        atomic_write_bytes(tmp_path / "cache-entry", b"x", artifact=False)
    refs = written.refs(tmp_path)
    assert refs == [ArtifactRef(path="a.bin", bytes=3,
                                sha256="ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")]
    assert check_artifacts(refs, tmp_path) == []
    (tmp_path / "a.bin").write_bytes(b"abd")
    assert check_artifacts(refs, tmp_path) == ["a.bin: sha256 differs from the recorded one"]
    (tmp_path / "a.bin").write_bytes(b"ab")
    assert check_artifacts(refs, tmp_path) == ["a.bin: 2 bytes, recorded 3"]
    os.unlink(tmp_path / "a.bin")
    assert check_artifacts(refs, tmp_path) == ["a.bin: missing"]
    atomic_write_bytes(tmp_path / "b.bin", b"outside any stage")      # no recording: nothing noted


def test_content_cache(tmp_path):
    c = ContentCache(tmp_path / "c", ".npz")
    k = cache_key("tts", "espeak@1", "en-us", "hello")
    assert c.get(k) is None and k not in c
    p = c.put(k, b"\x00\x01")
    assert p == tmp_path / "c" / k[:2] / f"{k}.npz" and c.get(k) == b"\x00\x01" and k in c
    assert not list(p.parent.glob(".*.tmp"))
    c.discard(k)
    assert c.get(k) is None
    with pytest.raises(ValueError, match="not a lowercase hex digest"):
        c.path("../../etc/passwd")


def test_write_behind_cache_reads_its_queue_and_writes_the_same_files(tmp_path, monkeypatch):
    """An entry put with write_behind is readable at once, lands on disk byte-identical (atomic:
    no temp file left), and a fresh instance (as another process) reads it after the flush.
    The disk is made slow (a gate before each write) so every entry is still queued when read."""
    import threading

    import bargein.cache as cache_mod
    from bargein.cache import flush_writes

    wb = ContentCache(tmp_path / "wb", ".json", write_behind=True)
    keys = [cache_key("llm", i) for i in range(200)]
    want = [f'{{"n": {i}}}'.encode() for i in range(200)]
    gate = threading.Event()
    real = cache_mod._write_atomic

    def slow_disk(path, data):
        gate.wait(30)
        real(path, data)

    monkeypatch.setattr(cache_mod, "_write_atomic", slow_disk)
    try:
        for k, data in zip(keys, want):
            wb.put(k, data)
        assert [wb.get(k) for k in keys] == want and all(k in wb for k in keys)
        assert not any(wb.path(k).exists() for k in keys)        # nothing on disk yet
    finally:
        gate.set()
    assert flush_writes(30)
    fresh = ContentCache(tmp_path / "wb", ".json")
    assert [fresh.get(k) for k in keys] == want
    assert not list((tmp_path / "wb").rglob("*.tmp"))
    wb.put(keys[0], b"again")
    wb.discard(keys[0])                     # a queued write must not bring a discarded entry back
    assert flush_writes(30) and wb.get(keys[0]) is None and not wb.path(keys[0]).exists()


def test_shared_caches_are_not_artifacts(rendered):
    """The synthesis cache is a cache: deleting it costs synthesis later, never a re-render."""
    import shutil

    convs, first, files, jsonl, wd = rendered
    assert list((wd / "tts_cache").rglob("*.npz"))
    shutil.rmtree(wd / "tts_cache")
    again = render_conversations(convs, workdir=wd, seed=5, config=TONE, workers=1)
    assert (again.computed, again.cached) == (0, 3)


def test_llm_answers_written_behind_are_seen_by_every_cache_over_the_folder(tmp_path, monkeypatch):
    """A second ResponseCache over the same folder (a new client, same workdir) finds an answer
    the first one queued, both while it is queued and once it is on disk; after the flush a new
    process (a fresh listing of the folder) finds it on disk."""
    import threading

    import bargein.cache as cache_mod
    from bargein.llm import cache as llm_cache
    from bargein.llm.base import Completion, Usage

    gate = threading.Event()
    real = cache_mod._write_atomic
    monkeypatch.setattr(cache_mod, "_write_atomic", lambda p, d: (gate.wait(30), real(p, d)))
    answer = Completion(text='{"a": 1}', usage=Usage(3, 4), model="m", provider="openai", finish_reason="stop")
    keys = [cache_mod.cache_key("q", i) for i in range(3)]
    first = llm_cache.ResponseCache(tmp_path / "llm_cache")
    first.put(keys[0], answer)
    queued = llm_cache.ResponseCache(tmp_path / "llm_cache")        # lists while the answer is queued
    assert queued.get(keys[0]).text == '{"a": 1}' and queued.get(keys[1]) is None
    first.put(keys[1], answer)
    gate.set()
    assert first.flush(30)
    written = llm_cache.ResponseCache(tmp_path / "llm_cache")       # lists after it is written
    assert written.get(keys[1]).usage == Usage(3, 4) and queued.get(keys[1]).cached
    monkeypatch.setattr(llm_cache, "_LISTINGS", {})                  # as a new process
    assert llm_cache.ResponseCache(tmp_path / "llm_cache").get(keys[0]).text == '{"a": 1}'
    assert llm_cache.ResponseCache(tmp_path / "llm_cache").get(keys[2]) is None


def test_write_behind_entries_queued_by_late_exit_hooks_reach_disk(tmp_path):
    """A ``weakref.finalize`` hook registered before bargein.cache was imported runs after the
    cache's exit flush (exit hooks run last-in first-out) -- the LLM ledger saves itself from
    such a finalizer. Entries it queues must still be written whole: before the fix the writer
    thread was started during interpreter shutdown and the 200 entries below were lost (0 on
    disk) or left as half-written ``.tmp`` files (seen as a flaky leftover in the bad-input
    corpus under load)."""
    import subprocess
    import textwrap

    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        import weakref
        class Owner: pass
        owner = Owner()
        weakref.finalize(Owner(), lambda: None)     # weakref's exit hook is registered first
        from pathlib import Path
        import bargein.cache as cache
        def save():
            for i in range(200):
                cache.write_behind(Path({str(out)!r}) / f"e{{i}}.bin", bytes([i]) * 100_000)
        weakref.finalize(owner, save)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.glob("e*.bin"))
    assert len(files) == 200
    assert all(f.read_bytes() == bytes([int(f.stem[1:])]) * 100_000 for f in files)
    assert not list(out.glob(".*.tmp"))


def test_cli_main_leaves_every_queued_entry_on_disk_before_returning(tmp_path):
    """A host that ends its process without exit hooks after ``main`` returns (``os._exit`` in a
    forked child, as the bad-input corpus runs every command) must find the LLM answers the
    command queued written whole. Before the fix ``main`` returned with the writer thread still
    busy and ``os._exit`` stopped it mid-write: the corpus case ``llm-judge-invalid`` left a
    ``.tmp`` file in ``work/llm_cache`` on a loaded CI machine. Here the child queues 200 entries
    (as a command's LLM calls do), runs a command and exits at once."""
    out = tmp_path / "out"
    pid = os.fork()
    if pid == 0:                                    # child: never returns
        code = 70
        try:
            import io

            import bargein.cache as cache
            from bargein.cli import main

            sys.stdout = sys.stderr = io.StringIO()
            for i in range(200):
                cache.write_behind(out / f"e{i}.bin", bytes([i]) * 100_000)
            try:
                main(["--version"])
            except SystemExit:
                pass
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    files = sorted(out.glob("e*.bin"))
    assert len(files) == 200
    assert all(f.read_bytes() == bytes([int(f.stem[1:])]) * 100_000 for f in files)
    assert not list(out.glob(".*.tmp"))
