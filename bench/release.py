"""Release build benchmark: memory stays flat as the release grows; build speed.

    python bench/release.py [--small 200] [--large 1000] [--keep DIR]

Synthetic stage outputs (``bench/doubles/synthetic_release.py``: offline phrase-bank conversations with
all six interruption types, espeak-ng voices for both roles — tone bursts if the espeak extra is
missing; the output says which) are generated once for ``--large`` conversations; the small
release uses the first ``--small`` of them. Each release is built in a fresh subprocess that
reports its own peak RSS (``resource.getrusage``), next to an import-only subprocess (the
libraries' baseline) measured in the same run. Prints::

    peak_rss_ratio=                  peak RSS, large build / small build        (goal <= 1.3)
    peak_rss_over_imports_ratio=     (large - imports) / (small - imports): what the data adds
    build_speed_small= / _large=     conversations per second (whole release: all configs)
    write_mb_per_s_large=            release bytes written per second
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
args = json.loads(sys.argv[1])
import bargein.releases.build as B        # the imports every build pays for
if args["mode"] == "imports":
    import datasets, pyarrow.parquet, matplotlib.figure  # noqa: F401
    from bargein.releases.plots import bar_png
    bar_png(["a"], [1], title="t", ylabel="y")
    print(json.dumps({"rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
    sys.exit(0)
w = Path(args["work"])
t0 = time.perf_counter()
m = B.build_release(Path(args["out"]), name="bench", version="1.0.0",
                    provenance={"git_commit": "bench"},
                    sources=B.ReleaseSources(conversations=w / "verify.jsonl",
                                             rendered=w / "render.jsonl",
                                             eval_items=w / "eval_items.jsonl",
                                             sft={"train": w / "sft.jsonl"},
                                             dpo={"train": w / "dpo.jsonl"},
                                             audio_roots=(Path(args["root"]),)))
wall = time.perf_counter() - t0
print(json.dumps({"rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "wall_s": wall,
                  "rows": m.configs, "bytes": sum(f.bytes for f in m.files)}))
"""


def _child(args: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True,
                       text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"bench child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _slice(src: Path, dst: Path, n: int) -> None:
    """The first ``n`` accepted conversations and every line of the other files that refers to them."""
    dst.mkdir(parents=True, exist_ok=True)
    keep, lines = set(), []
    for line in (src / "verify.jsonl").read_text().splitlines():
        if len(keep) >= n:
            break
        keep.add(json.loads(line)["conversation"]["id"])
        lines.append(line)
    (dst / "verify.jsonl").write_text("\n".join(lines) + "\n")
    for name, key in (("render", "conversation_id"), ("eval_items", "conversation_id")):
        out = [ln for ln in (src / f"{name}.jsonl").read_text().splitlines()
               if json.loads(ln)[key] in keep]
        (dst / f"{name}.jsonl").write_text("\n".join(out) + "\n")
    for name in ("sft", "dpo"):
        out = [ln for ln in (src / f"{name}.jsonl").read_text().splitlines()
               if json.loads(ln)["id"].rsplit("_ev", 1)[0] in keep]
        (dst / f"{name}.jsonl").write_text("\n".join(out) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=200)
    ap.add_argument("--large", type=int, default=1000)
    ap.add_argument("--keep", type=Path, help="keep the work and release folders here")
    a = ap.parse_args()
    tmp = a.keep or Path(tempfile.mkdtemp(prefix="bargein-bench-release-"))
    try:
        from doubles.synthetic_release import write_synthetic

        t0 = time.perf_counter()
        run = write_synthetic(tmp / "work", a.large, seed=7)
        print(f"synthetic inputs: {a.large} conversations, audio={run.audio_kind} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        _slice(tmp / "work", tmp / "work_small", a.small)
        base = _child({"mode": "imports"})
        small = _child({"mode": "build", "work": str(tmp / "work_small"), "root": str(run.root),
                        "out": str(tmp / "rel_small")})
        large = _child({"mode": "build", "work": str(tmp / "work"), "root": str(run.root),
                        "out": str(tmp / "rel_large")})
        for label, r in (("small", small), ("large", large)):
            print(f"{label}: {r['rows']} | {r['bytes'] / 1e6:.1f} MB | {r['wall_s']:.1f} s | "
                  f"peak RSS {r['rss_kb'] / 1024:.0f} MB")
        print(f"imports only: peak RSS {base['rss_kb'] / 1024:.0f} MB")
        print(f"peak_rss_ratio={large['rss_kb'] / small['rss_kb']:.3f}")
        extra_s, extra_l = small["rss_kb"] - base["rss_kb"], large["rss_kb"] - base["rss_kb"]
        print(f"peak_rss_over_imports_ratio={extra_l / max(1, extra_s):.3f}")
        print(f"build_speed_small={small['rows']['conversations'] / small['wall_s']:.1f} conv/s")
        print(f"build_speed_large={large['rows']['conversations'] / large['wall_s']:.1f} conv/s")
        print(f"write_mb_per_s_large={large['bytes'] / 1e6 / large['wall_s']:.1f}")
    finally:
        if a.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
