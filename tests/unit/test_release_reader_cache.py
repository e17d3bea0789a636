"""A release rebuilt in place (same folder, new rows) loads its new rows: the datasets cache is
keyed by the release's manifest, not by its path. Before, ``load_config`` returned the old
version's 3 rows for a rebuilt 5-row release."""

from __future__ import annotations

import shutil

from bargein.releases.build import ReleaseSources, build_release
from bargein.releases.reader import load_config
from doubles.synthetic_release import write_synthetic


def test_rebuilt_release_is_not_read_from_a_stale_cache(tmp_path):
    rel = tmp_path / "rel"
    for n in (3, 5):
        run = write_synthetic(tmp_path / f"work{n}", n, seed=9)
        shutil.rmtree(rel, ignore_errors=True)
        build_release(rel, name="t", version="1.0.0", provenance={"git_commit": "x"},
                      sources=ReleaseSources(conversations=run.conversations, rendered=run.rendered,
                                             eval_items=run.eval_items, audio_roots=(run.root,)))
        assert len(load_config(rel, "conversations", "test")) == n
