"""IHBench report output: tables (text/markdown), per-item scores, report JSON, PNG plots."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bargein.records import Aggregate, ScoreReport
from bargein.releases.plots import bar_png, curve_png
from bargein.releases.stats import DEPTH_BINS, depth_bin
from bargein.store import atomic_write_bytes, atomic_write_text, write_jsonl

if TYPE_CHECKING:
    from bargein.scorers.ihbench import IHBenchReport, Judged

TF, RQ = "tf_win", "rq_pass"


def _cell(d: dict[str, float] | None) -> str:
    if not d:
        return "—"
    count = f"(n {d.get('n', 0)}, unscorable {d.get('unscorable', 0)})"
    if not d.get("n") or math.isnan(d.get("value", math.nan)):
        return f"— {count}"
    return f"{d['value']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] {count}"


def _rows(title: str, blocks: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    out = [f"| {title} | TF win rate [95% CI] (scored, unscorable items) | "
           "RQ pass rate [95% CI] (scored, unscorable items) |", "|---|---|---|"]
    for name, b in blocks.items():
        out.append(f"| {name.replace('_', ' ')} | {_cell(b[TF])} | {_cell(b[RQ])} |")
    return out


def judge_line(judge: str, validation: dict[str, Any], epochs: int, smoke: bool) -> str:
    """The line every table starts with: the judge, its validation kappa (with the template
    fail and paraphrase pass rates where measured), the epochs."""
    from bargein.scorers.ihbench_judges import SMOKE_STAMP
    from bargein.scorers.judge_validation import judge_card

    c = judge_card(judge, validation, epochs=epochs, smoke=smoke)
    if c.validated:
        val = (f"validation κ {c.kappa:.3f}, accuracy {c.accuracy:.3f} on {c.n} "
               f"control-set judgments ({c.control_set or '?'})")
        if c.template_fail_rate is not None:
            val += f", template fail {c.template_fail_rate:.3f} (n {c.template_n})"
        if c.paraphrase_pass_rate is not None:
            val += f", paraphrase pass {c.paraphrase_pass_rate:.3f} (n {c.paraphrase_n})"
    else:
        val = f"validation κ not measured ({c.note or 'run `bargein score validate-judge`'})"
    stamp = f"{SMOKE_STAMP.upper()} — " if smoke else ""
    return f"{stamp}judge {judge}; {val}; {epochs} epoch(s)"


def judge_tag(judge: str, validation: dict[str, Any], epochs: int, smoke: bool) -> str:
    """The short caption each table carries: the judge, its validation kappa, the epochs."""
    from bargein.scorers.ihbench_judges import SMOKE_STAMP
    from bargein.scorers.judge_validation import judge_card

    c = judge_card(judge, validation, epochs=epochs, smoke=smoke)
    k = f"validation κ {c.kappa:.3f}" if c.validated else "validation κ not measured"
    return f"{SMOKE_STAMP + ': ' if smoke else ''}judge {judge}, {k}, {epochs} epoch(s)"


def render_tables(r: "IHBenchReport") -> str:
    reg = r.depth_regression
    tag = judge_tag(r.judge, r.validation, r.epochs, r.smoke)
    lines = [f"IHBench scores — release {r.release}, {r.items} items",
             judge_line(r.judge, r.validation, r.epochs, r.smoke), ""]
    lines += [f"Overall ({tag})", ""] + _rows("overall", {"all": r.overall}) + [""]
    lines += [f"By interruption type ({tag})", ""] + _rows("type", r.by_type) + [""]
    lines += [f"By depth ({tag})", ""] + _rows("depth (user turn)", r.by_depth) + [""]
    if math.isfinite(reg.get("slope", math.nan)):
        lines.append(f"Depth effect (logistic regression of TF outcome on user turn index): slope "
                     f"{reg['slope']:+.4f} per turn (SE {reg['se']:.4f}, z {reg['z']:+.2f}, "
                     f"p {reg['p']:.3g}, n {reg['n']} judgments)")
    else:
        lines.append(f"Depth effect: not estimable (n {reg.get('n', 0)} judgments; no variation "
                     "in depth or outcome, or separation)")
    notes = []
    if r.no_baseline:
        notes.append(f"{r.no_baseline} item(s) have no baseline response and are unscorable for "
                     "TF (fill them with `bargein baseline`)")
    if r.judge_failures:
        notes.append(f"{r.judge_failures} judgment(s) got no usable answer from the judge "
                     "(see issues.jsonl)")
    if r.input_issues:
        notes.append("responses file: " + ", ".join(f"{n} × {k}" for k, n in r.input_issues.items())
                     + " (per item in issues.jsonl)")
    rule = {m: n for m, n in r.baseline_models.items() if m.startswith(("offline", "smoke", "rule"))}
    if rule:
        notes.append(f"{sum(rule.values())} baseline(s) come from the rule-based smoke baseline "
                     f"({', '.join(rule)}), not a model: TF against it is a smoke test")
    if r.smoke:
        from bargein.scorers.ihbench_judges import SMOKE_STAMP

        notes.append(f"{SMOKE_STAMP}: the smoke judge checks surface features for pipeline tests; "
                     "use --judge PROVIDER:MODEL for IHBench's LLM judge")
    lines += [""] + [f"Note: {n}." for n in notes]
    if r.smoke:
        lines.append("")
        lines.append(f"[{SMOKE_STAMP}]")
    return "\n".join(lines).rstrip() + "\n"


def _plots(out: Path, r: "IHBenchReport", depth_points: list[tuple[float, float, str]]) -> dict[str, str]:
    from bargein.scorers.ihbench_judges import SMOKE_STAMP

    plots = {}
    tag = f" ({SMOKE_STAMP})" if r.smoke else ""
    for metric, name, title in ((TF, "tf_by_type.png", "TF win rate by interruption type"),
                                (RQ, "rq_by_type.png", "RQ pass rate by interruption type")):
        types = [t for t, b in r.by_type.items() if b[metric]["n"]]
        if not types:
            continue
        vals = [r.by_type[t][metric]["value"] for t in types]
        errs = [(r.by_type[t][metric]["ci_low"], r.by_type[t][metric]["ci_high"]) for t in types]
        atomic_write_bytes(out / "plots" / name, bar_png(
            [t.replace("_", " ") for t in types], vals, errors=errs, title=title + tag,
            ylabel=title.split(" by ")[0], ylim=(0, 1.05), hline=0.5 if metric == TF else None))
        plots[title] = f"plots/{name}"
    reg = r.depth_regression
    if depth_points and math.isfinite(reg.get("slope", math.nan)):
        xs = np.linspace(0, max(x for x, _, _ in depth_points) + 2, 50)
        ys = 1.0 / (1.0 + np.exp(-(reg["intercept"] + reg["slope"] * xs)))
        atomic_write_bytes(out / "plots" / "tf_by_depth.png", curve_png(
            [x for x, _, _ in depth_points], [y for _, y, _ in depth_points], xs, ys,
            title=f"TF win rate vs depth (slope {reg['slope']:+.3f}/turn){tag}",
            xlabel="user turn index", ylabel="TF win rate",
            labels=[b for _, _, b in depth_points]))
        plots["TF win rate vs depth"] = "plots/tf_by_depth.png"
    return plots


def _finite(obj: Any) -> Any:
    """NaN / inf -> None, so report.json is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def write_outputs(out: Path, r: "IHBenchReport", items: list, judged: "Judged",
                  input_issues: list[dict[str, Any]], item_score_type: type) -> None:
    """item_scores.jsonl, issues.jsonl, report.json (a ScoreReport), tables.md, plots/*.png."""
    from bargein.scorers.ihbench_judges import SMOKE_STAMP

    out.mkdir(parents=True, exist_ok=True)
    stamp = {"stamp": SMOKE_STAMP} if r.smoke else {}
    by_id = {i.id: i for i in items}
    scores = []
    for key in sorted(judged.detail):
        item = by_id[key[0]]
        group = {"type": item.type, "depth_bin": depth_bin(item.depth), "depth": str(item.depth)}
        d = {**judged.detail[key], **stamp}
        if key in judged.tf:
            scores.append(item_score_type(item_id=key[0], metric=TF, value=judged.tf[key],
                                          epoch=key[1], group=group, detail=d))
        if key in judged.rq:
            scores.append(item_score_type(item_id=key[0], metric=RQ, value=judged.rq[key],
                                          epoch=key[1], group=group, detail=d))
    write_jsonl(out / "item_scores.jsonl", scores)
    issues = [dict(i, source="responses") for i in input_issues] + [
        dict(v, source="judge", metric=m) for m in (TF, RQ) for k, v in sorted(judged.unscorable[m].items())
        if v.get("problem", "").startswith("judge") or v.get("problem") == "no baseline response"]
    atomic_write_text(out / "issues.jsonl", "".join(
        json.dumps(_finite(dict(i, **stamp)), sort_keys=True, default=str) + "\n" for i in issues))
    centers = {depth_bin(lo): (lo + min(hi, lo + 4)) / 2.0 for lo, hi in DEPTH_BINS}
    depth_points = [(centers[b], v[TF]["value"], b) for b, v in r.by_depth.items()
                    if v[TF]["n"] and math.isfinite(v[TF]["value"])]
    r.plots = _plots(out, r, depth_points)
    aggs = []
    for group, blocks in ([({}, r.overall)] + [({"type": t}, b) for t, b in r.by_type.items()]
                          + [({"depth_bin": k}, b) for k, b in r.by_depth.items()]):
        for metric in (TF, RQ):
            c = blocks[metric]
            if c["n"]:
                aggs.append(Aggregate(metric=metric, group=group, value=c["value"],
                                      ci_low=c["ci_low"], ci_high=c["ci_high"], n=c["n"]))
    cfg: dict[str, Any] = {**stamp, "judge": r.judge, "judge_card": r.judge_card.model_dump(),
                           "judge_validation": r.validation,
                           "epochs": r.epochs, "items": r.items, "input_issues": r.input_issues,
                           "baseline_models": r.baseline_models,
                           "blocks": {"overall": r.overall, "by_type": r.by_type,
                                      "by_depth": r.by_depth},
                           "depth_regression": r.depth_regression,
                           "judge_failures": r.judge_failures, "no_baseline": r.no_baseline,
                           "bootstrap": "1000-iteration percentile over per-item epoch means",
                           "plots": r.plots}
    report = ScoreReport(scorer="ihbench", release=r.release, aggregates=tuple(aggs),
                         config=_finite(json.loads(json.dumps(cfg, default=str))))
    atomic_write_text(out / "report.json", json.dumps(report.model_dump(mode="json"), indent=2,
                                                      sort_keys=True) + "\n")
    atomic_write_text(out / "tables.md", r.tables())
