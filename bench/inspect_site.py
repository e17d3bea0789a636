"""Inspector speed and memory.

    python bench/inspect_site.py [--release release/demo]

(Not ``bench/inspect.py``: a script of that name would shadow the standard library's
``inspect`` for every benchmark in this folder.)

1. ``demo_site_s``: index + 10 conversation pages of the demo release (goal ≤ 5 s), beside
   ``read_only_s``, the time to read and decode the same rows without writing a site, measured in
   the same run (``site_vs_read_ratio``).
2. ``peak_rss_ratio_1000_vs_100``: peak RSS of inspecting a 1,000-conversation release over a
   100-conversation one (goal ≤ 1.3). Both releases are made here from the demo's rows (new ids,
   audio trimmed to 8 s so the 1,000-row release stays small on disk); each inspection runs in
   its own process and its peak RSS is read from the kernel.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf


def _read_only(release: Path, n: int) -> float:
    from bargein.inspector.waveform import decode, envelope
    from bargein.releases.reader import iter_rows

    t0 = time.perf_counter()
    for k, row in enumerate(iter_rows(release, "conversations")):
        if k >= n:
            break
        x, _ = decode(row["audio"]["bytes"])
        envelope(x)
    return time.perf_counter() - t0


def _trim(cell: dict, seconds: float = 8.0) -> dict:
    x, sr = sf.read(io.BytesIO(cell["bytes"]), dtype="float32", always_2d=True)
    buf = io.BytesIO()
    sf.write(buf, x[: int(seconds * sr)], sr, format="FLAC")
    return {"bytes": buf.getvalue(), "path": cell.get("path")}


def _scaled_release(demo: Path, out: Path, n: int) -> Path:
    """A release of ``n`` conversations made from the demo's (ids suffixed, audio trimmed)."""
    out.mkdir(parents=True)
    shutil.copy(demo / "README.md", out / "README.md")
    for config, key in (("conversations", "conversation_id"), ("eval_items", "item_id")):
        src = sorted((demo / config).glob("test-*.parquet"))
        table = pa.concat_tables([pq.read_table(p) for p in src])
        rows = table.to_pylist()
        (out / config).mkdir()
        writer = pq.ParquetWriter(out / config / "test-00000-of-00001.parquet", table.schema)
        conv_ids = sorted({r["conversation_id"] for r in rows})
        per_copy = {c: [r for r in rows if r["conversation_id"] == c] for c in conv_ids}
        batch: list[dict] = []
        for i in range(n):
            base = conv_ids[i % len(conv_ids)]
            for r in per_copy[base]:
                r = dict(r)
                r["conversation_id"] = f"{base}-x{i:04d}"
                if key != "conversation_id":
                    r[key] = f"{r[key]}-x{i:04d}"
                for col in ("audio", "interjection_audio"):
                    if r.get(col):
                        r[col] = _trim(r[col])
                batch.append(r)
            if len(batch) >= 16:
                writer.write_table(pa.Table.from_pylist(batch, schema=table.schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=table.schema))
        writer.close()
    return out


_CHILD = """
import json, resource, sys, time
from bargein.inspector import write_site
t0 = time.perf_counter()
rep = write_site(sys.argv[1], sys.argv[2])
print(json.dumps({"conversations": rep.conversations, "seconds": time.perf_counter() - t0,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _inspect_in_child(release: Path, site: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(release), str(site)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", type=Path, default=Path("release/demo"))
    args = ap.parse_args()
    demo = args.release
    if not (demo / "README.md").is_file():
        sys.exit(f"{demo} is not a release folder. Fix: run `make demo` first (or pass --release).")
    from bargein.inspector import write_site

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        read_s = _read_only(demo, 10)
        t0 = time.perf_counter()
        rep = write_site(demo, tmp / "demo-site", limit=10)
        site_s = time.perf_counter() - t0
        print(f"demo_site_s={site_s:.2f} (index + {rep.conversations} conversation pages, "
              f"{rep.repair_pages} repair, {rep.timing_pages} timing; goal <= 5)")
        print(f"read_only_s={read_s:.2f}  site_vs_read_ratio={site_s / read_s:.2f}")

        small = _scaled_release(demo, tmp / "r100", 100)
        large = _scaled_release(demo, tmp / "r1000", 1000)
        a = _inspect_in_child(small, tmp / "s100")
        b = _inspect_in_child(large, tmp / "s1000")
        ratio = b["maxrss_kb"] / a["maxrss_kb"]
        print(f"rss_100_mb={a['maxrss_kb'] / 1024:.0f} rss_1000_mb={b['maxrss_kb'] / 1024:.0f} "
              f"(conversations {a['conversations']} / {b['conversations']})")
        print(f"seconds_per_conversation_100={a['seconds'] / a['conversations']:.3f} "
              f"seconds_per_conversation_1000={b['seconds'] / b['conversations']:.3f}")
        print(f"peak_rss_ratio_1000_vs_100={ratio:.3f} (goal <= 1.3)")
    _ = resource  # imported for the child's measurement docs


if __name__ == "__main__":
    main()
