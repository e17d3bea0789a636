"""Write the inspection site: static HTML that opens from disk (no server), one page per
conversation, audio copied byte for byte from the release.

::

    site/
      index.html                 quality and fidelity tables (the card), filterable conversation list
      conv/<conversation_id>.html two-channel waveform + timeline, cut-ins, heard/unheard text,
                                  rubrics, gold, baseline and scored responses per interruption
      repair/<source_id>.html    masked items, answerable beside unanswerable, mask shaded
      timing/<source_id>.html    natural/perturbed A/B players, edited region marked
      audit.html                 what the verifier repaired or discarded
      audio/...                  the release's own FLAC files
      assets/app.js style.css    one script and one stylesheet for every page

Pages carry their data as embedded JSON, so they work from ``file://``. Rows are streamed and
written as they come; only the small index entries stay in memory, so a 1,000-conversation
release costs about what a 100-conversation one does.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, FunctionLoader, StrictUndefined, select_autoescape

from bargein.errors import ConfigError
from bargein.inspector.source import Audit, Source, open_source
from bargein.inspector.waveform import decode, envelope
from bargein.store import atomic_write_bytes, atomic_write_text

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(s: str) -> str:
    """A file name that cannot leave its folder."""
    return _SAFE.sub("_", s).strip("._") or "item"


def _embed(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True).replace("</", "<\\/")


def depth_bucket(depth: int | None) -> str:
    if depth is None:
        return "-"
    lo = (depth // 5) * 5
    return f"{lo}-{lo + 4}" if lo < 20 else "20+"


@dataclass
class InspectReport:
    out_dir: Path
    conversations: int = 0
    repair_pages: int = 0
    timing_pages: int = 0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        s = (f"wrote {self.out_dir}/index.html: {self.conversations} conversation pages, "
             f"{self.repair_pages} repair pages, {self.timing_pages} timing pages "
             f"in {self.seconds:.1f} s")
        if self.skipped:
            s += f"; {len(self.skipped)} skipped (see index)"
        return s


class _Writer:
    def __init__(self, src: Source, out: Path, *, responses: dict[str, list[dict]],
                 scores: dict[str, list[dict]]):
        self.src, self.out = src, out
        self.responses, self.scores = responses, scores
        self.message_owner: dict[str, str] = {}    # (message index, text) key -> conversation
        self.source_owner: dict[str, str] = {}     # rendered-dialogue id -> conversation
        self.env = Environment(loader=FunctionLoader(_template),
                               autoescape=select_autoescape(default=True, default_for_string=True),
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters["embed"] = _embed
        self.env.filters["secs"] = lambda v: "" if v is None else f"{v:.2f} s"
        self.tpl = {n: self.env.get_template(f"{n}.html") for n in
                    ("index", "conversation", "repair", "timing", "audit")}

    def page(self, name: str, rel: str, **ctx: Any) -> None:
        depth = rel.count("/")
        html = self.tpl[name].render(root="../" * depth, **ctx)
        atomic_write_text(self.out / rel, html)

    def audio(self, rel: str, data: bytes) -> None:
        atomic_write_bytes(self.out / rel, data)


def _bytes(cell: Any) -> bytes | None:
    if isinstance(cell, dict) and cell.get("bytes"):
        return cell["bytes"]
    return None


def _ext(cell: Any) -> str:
    name = (cell or {}).get("path") or ""
    return Path(name).suffix.lower() if Path(name).suffix.lower() in (".flac", ".wav") else ".flac"


def _message_views(row: dict[str, Any]) -> list[dict[str, Any]]:
    segs = {(s["message_index"]): s for s in row.get("segments") or [] if s["kind"] == "message"}
    out = []
    for m in row["messages"]:
        text, heard = m["text"] or "", m.get("heard_text")
        unheard = ""
        if m.get("interruption_type") and heard is not None:
            if text.startswith(heard):
                unheard = text[len(heard):]
            elif m.get("cut_char_offset") is not None:
                heard, unheard = text[:m["cut_char_offset"]], text[m["cut_char_offset"]:]
        else:
            heard = text
        s = segs.get(m["index"])
        out.append({
            "index": m["index"], "role": m["role"], "heard": heard, "unheard": unheard,
            "type": m.get("interruption_type"), "overlap_ms": m.get("overlap_ms"),
            "start_s": s["start_s"] if s else None, "end_s": s["end_s"] if s else None,
            "cut_s": s.get("cut_s") if s else None, "stop_s": s.get("stop_s") if s else None,
            "channel": s["channel"] if s else (0 if m["role"] == "user" else 1),
        })
    return out


def write_site(source: str | Path, out: str | Path, *, responses: str | Path | None = None,
               scores: str | Path | None = None, limit: int | None = None,
               progress: Callable[[str], None] | None = None) -> InspectReport:
    """Write the inspection site of a release folder or work directory to ``out``."""
    t0 = time.perf_counter()
    src = open_source(source)
    final = Path(out)
    stage = _staging_dir(final)
    try:
        rep = _write(src, source, stage, responses=responses, scores=scores, limit=limit,
                     progress=progress)
        _swap_into_place(stage, final)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    rep.out_dir = final
    rep.seconds = time.perf_counter() - t0
    return rep


MARKER = ".bargein-inspect"


def _staging_dir(final: Path) -> Path:
    """Refuse to replace a folder bargein did not make (the shared guard); stage beside it."""
    from bargein.outdir import check_replaceable, make_staging

    return make_staging(check_replaceable(final, what="inspection site"))


def _swap_into_place(stage: Path, final: Path) -> None:
    from bargein.outdir import swap_into_place

    (stage / MARKER).write_text("written by bargein inspect\n", encoding="utf-8")
    swap_into_place(stage, final.resolve())


def _write(src: Source, source: str | Path, out: Path, *, responses, scores, limit,
           progress) -> InspectReport:
    w = _Writer(src, out, responses=_by_item(responses, "responses"),
                scores=_by_item(scores, "scores"))
    rep = InspectReport(out_dir=out)
    say = progress or (lambda _m: None)
    _write_assets(out)

    audits: dict[str, Audit] = {a.conversation_id: a for a in src.audits()}
    items = src.eval_items()
    entries: list[dict[str, Any]] = []
    for n, row in enumerate(src.conversations()):
        if limit is not None and n >= limit:
            break
        entries.append(_conversation_page(w, row, items.get(row["conversation_id"], []),
                                          audits.get(row["conversation_id"])))
        for m in row["messages"]:
            w.message_owner[_text_key(m["index"], m["text"])] = row["conversation_id"]
        rep.conversations += 1
        if rep.conversations % 50 == 0:
            say(f"{rep.conversations} conversation pages")
    del items

    repair_links = _repair_pages(w, rep)
    timing_links = _timing_pages(w, rep)
    for e in entries:
        e["timing"] = None
        e["repair"] = next((v for k, v in repair_links.items()
                            if w.source_owner.get(k) == e["id"]), None)
    derived = [{"kind": "repair", "source_id": k, "href": v,
                "conversation": w.source_owner.get(k)} for k, v in sorted(repair_links.items())]
    derived += [{"kind": "timing", "source_id": k, "href": v, "conversation": None}
                for k, v in sorted(timing_links.items())]
    discarded = [a for a in audits.values() if a.outcome == "discarded"]
    w.page("audit", "audit.html", audits=sorted(audits.values(), key=lambda a: a.conversation_id),
           discarded=len(discarded), kind=src.kind)
    card_html = _card_html(src, out)
    w.page("index", "index.html", entries=entries, card_html=card_html, kind=src.kind,
           source=str(Path(source)), n_discarded=len(discarded), derived=derived,
           n_repair=rep.repair_pages, n_timing=rep.timing_pages)
    return rep


def _conversation_page(w: _Writer, row: dict[str, Any], items: list[dict[str, Any]],
                       audit: Audit | None) -> dict[str, Any]:
    cid = row["conversation_id"]
    name = safe_name(cid)
    cell = row.get("audio")
    data = _bytes(cell)
    audio_rel, env, dur = None, None, row.get("duration_s") or 0.0
    if data is not None:
        audio_rel = f"audio/conv/{name}{_ext(cell)}"
        w.audio(audio_rel, data)
        x, sr = decode(data)
        env, dur = envelope(x), x.shape[0] / sr
    msgs = _message_views(row)
    by_msg = {it["message_index"]: it for it in items}
    for it in items:
        it["responses"] = w.responses.get(it["item_id"], [])
        it["scores"] = w.scores.get(it["item_id"], [])
    types = sorted({it["type"] for it in items})
    depths = sorted({depth_bucket(it["depth"]) for it in items})
    outcome = audit.outcome if audit else "accepted"
    page = {
        "id": cid, "duration_s": dur, "envelope": env,
        "segments": [{k: s.get(k) for k in ("message_index", "channel", "kind", "start_s",
                                              "end_s", "cut_s", "stop_s", "text")}
                     for s in row.get("segments") or []],
        "cuts": [{"message_index": m["index"], "cut_s": m["cut_s"], "stop_s": m["stop_s"],
                  "type": m["type"]} for m in msgs if m["cut_s"] is not None],
    }
    w.page("conversation", f"conv/{name}.html", row=row, msgs=msgs, items=by_msg,
           audio=audio_rel, page=page, audit=audit, outcome=outcome,
           kb=_pretty(row.get("knowledge_base")), intent=_pretty(row.get("user_intent")))
    return {"id": cid, "href": f"conv/{name}.html", "domain": row.get("domain") or "",
            "goal": (row.get("goal") or "")[:140], "types": types, "depths": depths,
            "outcome": outcome, "n_interruptions": row.get("num_interruptions") or len(items),
            "n_messages": row.get("num_messages") or len(msgs), "duration_s": round(dur, 1)}


def _text_key(index: Any, text: str) -> str:
    import hashlib

    return hashlib.sha256(f"{index}\x00{text}".encode()).hexdigest()[:20]


def _pretty(s: Any) -> str:
    if not isinstance(s, str):
        return json.dumps(s, indent=2, sort_keys=True, ensure_ascii=False)
    try:
        return json.dumps(json.loads(s), indent=2, sort_keys=True, ensure_ascii=False)
    except ValueError:
        return s


def _repair_pages(w: _Writer, rep: InspectReport) -> dict[str, str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in w.src.repair():
        name = safe_name(r["id"])
        item = {k: r.get(k) for k in ("id", "source_id", "message_index", "condition", "signal",
                                      "window_ms", "level", "transcript", "spans", "question",
                                      "answer", "slot", "expected_behaviour")}
        for col, tag in (("audio", "masked"), ("original_audio", "original")):
            data = _bytes(r.get(col))
            if data is None:
                item[tag] = None
                continue
            rel = f"audio/repair/{name}.{tag}{_ext(r.get(col))}"
            if tag == "original":   # originals repeat across variants: write each file once
                rel = f"audio/repair/{safe_name(r['source_id'])}_m{r.get('message_index')}.original{_ext(r.get(col))}"
            if not (w.out / rel).exists():
                w.audio(rel, data)
            x, sr = decode(data)
            item[tag] = {"src": rel, "duration_s": x.shape[0] / sr, "envelope": envelope(x, 600)}
        groups[r["source_id"]].append(item)
        owner = w.message_owner.get(_text_key(r.get("message_index"), r.get("transcript") or ""))
        if owner:
            w.source_owner[r["source_id"]] = owner
    links = {}
    for source_id, rows in groups.items():
        rel = f"repair/{safe_name(source_id)}.html"
        pairs: dict[tuple, dict[str, Any]] = {}
        for it in sorted(rows, key=lambda i: (i["message_index"] or -1, i["signal"] or "",
                                              i["window_ms"] or 0, i["condition"] or "")):
            key = (it["message_index"], it["signal"], it["window_ms"], it["level"])
            pairs.setdefault(key, {"key": key})[it["condition"] or "?"] = it
        w.page("repair", rel, source_id=source_id, pairs=list(pairs.values()))
        links[source_id] = rel
        rep.repair_pages += 1
    return links


def _timing_pages(w: _Writer, rep: InspectReport) -> dict[str, str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in w.src.timing():
        name = safe_name(r["id"])
        item = {k: r.get(k) for k in ("id", "source_id", "type", "crop_start_s", "crop_end_s")}
        item["edits"] = json.loads(r.get("edits") or "[]")
        item["measured"] = json.loads(r.get("measured") or "{}")
        for col, tag in (("natural_audio", "natural"), ("perturbed_audio", "perturbed")):
            data = _bytes(r.get(col))
            if data is None:
                item[tag] = None
                continue
            rel = f"audio/timing/{name}.{tag}{_ext(r.get(col))}"
            w.audio(rel, data)
            x, sr = decode(data)
            item[tag] = {"src": rel, "duration_s": x.shape[0] / sr, "envelope": envelope(x, 800)}
        groups[r["source_id"]].append(item)
    links = {}
    for source_id, rows in groups.items():
        rel = f"timing/{safe_name(source_id)}.html"
        w.page("timing", rel, source_id=source_id, pairs=sorted(rows, key=lambda i: i["id"]))
        links[source_id] = rel
        rep.timing_pages += 1
    return links


def _card_html(src: Source, out: Path) -> str:
    """The card's body (after the YAML header) as HTML; images it shows are copied along."""
    from markdown_it import MarkdownIt

    md = src.card_markdown()
    if not md:
        return ""
    if md.startswith("---\n"):
        end = md.find("\n---\n", 4)
        md = md[end + 5:] if end != -1 else md
    for rel in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md):
        data = src.asset(rel)
        if data is not None and ".." not in Path(rel).parts:
            atomic_write_bytes(out / rel, data)
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(md)


def _by_item(path: str | Path | None, what: str) -> dict[str, list[dict]]:
    """``item_id`` -> the JSONL objects of a responses or scores file."""
    out: dict[str, list[dict]] = defaultdict(list)
    if path is None:
        return out
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read the {what} file {p}: {e}. Fix: pass the JSONL file "
                          f"that `bargein respond`/`bargein score` wrote.") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}:{n}: not JSON ({e.msg}). Fix: pass the JSONL file that "
                              f"`bargein respond`/`bargein score` wrote.") from None
        if isinstance(obj, dict) and obj.get("item_id"):
            out[str(obj["item_id"])].append(obj)
    return out


def _write_assets(out: Path) -> None:
    base = resources.files("bargein.inspector") / "static"
    for name in ("app.js", "style.css"):
        atomic_write_text(out / "assets" / name, (base / name).read_text(encoding="utf-8"))


def _template(name: str) -> str:
    return (resources.files("bargein.inspector") / "templates" / name).read_text(encoding="utf-8")


__all__ = ["InspectReport", "write_site", "open_source", "safe_name", "depth_bucket"]
