"""What checking artifacts costs a cached re-run, and what it saves when a file is gone.

    python bench/cache_validity.py [--conversations 6] [--workers 2]

Renders ``--conversations`` hand-built conversations (espeak voices, both roles) into a fresh
work dir, then re-runs the same render four ways, all in this run::

    first_run_s=                 cold render (synthesis, cut-ins, mixing, labels)
    cached_rerun_s=              nothing changed: every record served, every artifact hashed
    cached_rerun_over_first=     cached_rerun_s / first_run_s
    artifact_check_s=            the hashing alone (check_artifacts over every cache entry)
    artifact_bytes_mb=           what was hashed
    check_share_of_rerun=        artifact_check_s / cached_rerun_s
    one_deleted_rerun_computed=  items computed after deleting one clip of one dialogue (goal 1)
    one_deleted_rerun_over_first= that re-run's time / first_run_s
    corrupted_rerun_computed=    items computed after flipping one byte of one labels file (goal 1)
    outputs_identical=           1 if every re-run wrote the first run's render.jsonl and files
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from doubles import render_convs as RC  # noqa: E402

from bargein.audio.render import RenderConfig, render_conversations  # noqa: E402
from bargein.cache import ArtifactRef, check_artifacts  # noqa: E402
from bargein.records import Conversation, Message  # noqa: E402

TEXTS = [
    "Thanks for calling. I can see your account here, and I just need to confirm a few details "
    "before we change anything on the plan.",
    "Your claim needs three documents: a photo of the damage, the receipt for the repair, and "
    "the policy number printed on your renewal letter.",
    "I have moved the appointment to Thursday at ten in the morning, and you will get a text "
    "message with the address and a map of the parking area.",
]
REPLIES = ["Okay, go ahead.", "Wait, which documents exactly?", "Sure, that works for me."]


def conversations(n: int) -> list[Conversation]:
    out = []
    for c in range(n):
        rng = random.Random(c)
        msgs = []
        for i in range(6):
            if i % 2 == 0:
                text = TEXTS[(c + i // 2) % len(TEXTS)]
                k = rng.randrange(4, len(text.split()) - 4)
                msgs.append(RC.msg(i, "assistant", text, cut_words=k, overlap_ms=rng.randrange(150, 500),
                                   itype="normal", interjection=REPLIES[(c + i) % len(REPLIES)]))
            else:
                msgs.append(Message(index=i, role="user", text=REPLIES[(c + i - 1) % len(REPLIES)]))
        out.append(Conversation(scenario=RC.scenario(c), messages=tuple(msgs)))
    return out


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "artifacts").rglob("*"))
            if p.is_file()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    convs = conversations(args.conversations)
    cfg = RenderConfig(assistant_voice="espeak:en-us+f3", user_voice="espeak:en-gb", label_vad="energy")
    wd = Path(tempfile.mkdtemp(prefix="bargein-bench-cache-"))
    try:
        def render():
            t = time.perf_counter()
            res = render_conversations(convs, workdir=wd, seed=3, config=cfg, workers=args.workers,
                                       progress=False)
            assert not res.failures, res.failures[0].reason
            return res, time.perf_counter() - t

        first, first_s = render()
        jsonl, arts = (wd / "render.jsonl").read_bytes(), files(wd)
        same = True
        again, rerun_s = render()
        same &= again.computed == 0 and (wd / "render.jsonl").read_bytes() == jsonl

        refs = [ArtifactRef.from_json(a) for p in sorted((wd / "cache" / "render").rglob("*.json"))
                for a in json.loads(p.read_text(encoding="utf-8"))["artifacts"]]
        t = time.perf_counter()
        assert check_artifacts(refs, wd) == []
        check_s = time.perf_counter() - t
        size_mb = sum(r.bytes for r in refs) / 1e6

        clip = next(s.clip_path for s in first.outputs[0].segments if s.clip_path)
        (wd / clip).unlink()
        deleted, deleted_s = render()
        same &= (wd / "render.jsonl").read_bytes() == jsonl and files(wd) == arts

        labels = wd / first.outputs[-1].frame_labels_path
        data = bytearray(labels.read_bytes())
        data[len(data) // 2] ^= 0xFF
        labels.write_bytes(bytes(data))
        corrupted, _ = render()
        same &= (wd / "render.jsonl").read_bytes() == jsonl and files(wd) == arts

        print(f"conversations={args.conversations} workers={args.workers}")
        print(f"first_run_s={first_s:.2f}")
        print(f"cached_rerun_s={rerun_s:.3f}")
        print(f"cached_rerun_over_first={rerun_s / first_s:.4f}")
        print(f"artifact_check_s={check_s:.4f}")
        print(f"artifact_bytes_mb={size_mb:.1f}")
        print(f"check_share_of_rerun={check_s / rerun_s:.3f}")
        print(f"one_deleted_rerun_computed={deleted.computed}")
        print(f"one_deleted_rerun_over_first={deleted_s / first_s:.3f}")
        print(f"corrupted_rerun_computed={corrupted.computed}")
        print(f"outputs_identical={int(same)}")
    finally:
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
