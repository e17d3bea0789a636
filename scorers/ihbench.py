"""The IHBench scorer: TF win rate vs the baseline and RQ pass rate, with bootstrap CIs.

    report = score_ihbench(release_dir, responses_path, judge="openai:gpt-4o-mini", epochs=3,
                           out=out_dir)
    print(report.tables())

Per (item, epoch):
  TF  comparative judge on (model response, baseline) in a seeded, balanced position order;
      the judge must name a concrete deficiency of the loser ("longer", "more detail" are
      re-asked; a judge that never names one makes the judgment unscorable); win = 1, loss = 0
      (the smoke judge may also tie = 0.5).
  RQ  absolute judge over the rubric's 2–4 criteria; pass = 1 only if every criterion is met.
Per item: the mean over its scored epochs. Nothing is dropped silently: every input problem and
every unusable judge answer is listed with its evidence in ``issues.jsonl``, and every figure
carries its count of scored and unscorable items. Aggregates: the mean over items with a 95% CI from a
1000-iteration percentile bootstrap (``bootstrap_ci``); per type; per depth bin; and the depth
effect as the slope of a logistic regression of TF outcome on the user turn index.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bargein.errors import ConfigError
from bargein.records import INTERRUPTION_TYPES, ChatMessage, EvalItem, ItemScore, Rubric
from bargein.releases.stats import depth_bin, depth_bin_labels
from bargein.scorers.ihbench_judges import (  # noqa: F401  (re-exported schemas)
    CriterionVerdict, Judge, RQJudgment, TFJudgment, get_judge,
)
from bargein.scorers.stats import bootstrap_ci
from bargein.seeding import stable_int
from bargein.store import iter_text_lines

log = logging.getLogger("bargein.scorers.ihbench")
TF, RQ = "tf_win", "rq_pass"


# ---- inputs -------------------------------------------------------------------------------
def load_eval_items(release: Path) -> list[EvalItem]:
    """The release's ``eval_items`` config as :class:`EvalItem` records (audio not read)."""
    from bargein.releases.reader import iter_rows

    cols = ["item_id", "conversation_id", "domain", "message_index", "type", "depth",
            "system_prompt", "history", "interjection", "planned_text", "heard_text",
            "tf_rubric", "rq_rubrics", "gold_recovery", "baseline", "baseline_model"]
    items = []
    for r in iter_rows(release, "eval_items", "test", columns=cols):
        items.append(EvalItem(
            id=r["item_id"], conversation_id=r["conversation_id"], domain=r["domain"],
            message_index=r["message_index"], system_prompt=r["system_prompt"],
            history=tuple(ChatMessage(role=m["role"], content=m["content"]) for m in r["history"]),
            interjection=r["interjection"], type=r["type"], depth=r["depth"],
            rubric=Rubric(message_index=r["message_index"], type=r["type"],
                          tf_criterion=r["tf_rubric"], rq_criteria=tuple(r["rq_rubrics"])),
            gold_recovery=r["gold_recovery"] or "", planned_text=r["planned_text"] or "",
            heard_text=r["heard_text"] or "", baseline=r["baseline"],
            baseline_model=r["baseline_model"]))
    return items


@dataclass
class Responses:
    """A responses file read item by item: what can be scored, and every problem with evidence."""

    texts: dict[tuple[str, int], str]
    issues: list[dict[str, Any]]
    unscorable: dict[tuple[str, int], dict[str, Any]]     # (item, epoch) -> issue


def load_responses(path: Path, items: list[EvalItem], epochs: int) -> Responses:
    """Read ``{"item_id", "epoch", "response"}`` lines; never drop a problem silently.

    Unknown item ids, malformed lines and epochs outside ``0..epochs-1`` are reported and left
    out; a (item, epoch) with two different answers or none is unscorable; an exact duplicate
    is reported and counted once; an empty answer is scored (as a fail and a loss) and reported.
    A file where nothing matches this release is refused (wrong release or version).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"responses file {path} does not exist. Fix: produce it with "
                          "`bargein respond --release ... --out responses.jsonl`.")
    known = {i.id for i in items}
    seen: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
    issues: list[dict[str, Any]] = []
    for n, line in iter_text_lines(path, "responses file"):
        try:
            obj = json.loads(line)
            key = (str(obj["item_id"]), int(obj.get("epoch", 0)))
            text = obj["response"]
            if not isinstance(text, str):
                raise TypeError(f"response is {type(text).__name__}, not a string")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            issues.append({"problem": "malformed line", "line": n,
                           "evidence": f"{e.__class__.__name__}: {e}; line {line.strip()[:200]!r}"})
            continue
        if key[0] not in known:
            issues.append({"problem": "unknown item id", "item_id": key[0], "epoch": key[1],
                           "line": n, "evidence": "not in this release's eval_items"})
        elif not 0 <= key[1] < epochs:
            issues.append({"problem": "epoch out of range", "item_id": key[0], "epoch": key[1],
                           "line": n, "evidence": f"epochs are 0..{epochs - 1} (--epochs {epochs})"})
        else:
            seen[key].append((n, text))
    if not seen:
        raise ConfigError(f"responses file {path} has no response for any eval item of this release "
                          f"({len(issues)} problem line(s), e.g. {issues[:2]}). Fix: regenerate it "
                          f"for this release with `bargein respond --release <release> --epochs "
                          f"{epochs} --out {path.name}`.", evidence=issues[:20])
    texts: dict[tuple[str, int], str] = {}
    unscorable: dict[tuple[str, int], dict[str, Any]] = {}
    for key in sorted((i, e) for i in known for e in range(epochs)):
        got = seen.get(key, [])
        if not got:
            issue = {"problem": "missing response", "item_id": key[0], "epoch": key[1],
                     "evidence": "no line for this (item_id, epoch)"}
            issues.append(issue)
            unscorable[key] = issue
            continue
        distinct = sorted({t for _, t in got})
        if len(distinct) > 1:
            issue = {"problem": "conflicting duplicates", "item_id": key[0], "epoch": key[1],
                     "lines": [n for n, _ in got], "evidence": [t[:200] for t in distinct]}
            issues.append(issue)
            unscorable[key] = issue
            continue
        if len(got) > 1:
            issues.append({"problem": "duplicate (identical, counted once)", "item_id": key[0],
                           "epoch": key[1], "lines": [n for n, _ in got],
                           "evidence": distinct[0][:200]})
        if not distinct[0].strip():
            issues.append({"problem": "empty response (scored as RQ fail and TF loss)",
                           "item_id": key[0], "epoch": key[1], "lines": [n for n, _ in got],
                           "evidence": repr(distinct[0][:200])})
        texts[key] = distinct[0]
    return Responses(texts=texts, issues=issues, unscorable=unscorable)


# ---- arithmetic (pure, hand-checkable) ----------------------------------------------------
def balanced_positions(keys: list[tuple[str, int, str]], seed: int) -> dict[tuple[str, int], bool]:
    """``{(item_id, epoch): model_first}``, seeded and balanced within each type.

    Within a type, exactly ⌊n/2⌋ or ⌈n/2⌉ of the judgments show the model response first; which
    ones is a seeded shuffle. The same keys and seed always give the same order.
    """
    by_type: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for item_id, epoch, kind in sorted(keys):
        by_type[kind].append((item_id, epoch))
    out = {}
    for kind, ks in sorted(by_type.items()):
        rng = np.random.default_rng(stable_int("tf-positions", seed, kind))
        flags = np.array([i % 2 == 0 for i in range(len(ks))])
        if rng.random() < 0.5:
            flags = ~flags
        rng.shuffle(flags)
        out.update({k: bool(f) for k, f in zip(ks, flags)})
    return out


def win_value(winner: str, model_first: bool) -> float:
    """1 if the model's response won, 0 if the baseline won, 0.5 for a tie or failed judgment."""
    if winner not in ("A", "B"):
        return 0.5
    return 1.0 if (winner == "A") == model_first else 0.0


def item_means(scores: dict[tuple[str, int], float]) -> dict[str, float]:
    per: dict[str, list[float]] = defaultdict(list)
    for (item_id, _), v in sorted(scores.items()):
        per[item_id].append(v)
    return {k: float(np.mean(v)) for k, v in per.items()}


def logistic_slope(x: np.ndarray, y: np.ndarray, *, max_iter: int = 100) -> dict[str, float]:
    """Logistic regression y ~ 1 + x by IRLS (y in [0, 1]; ties 0.5 are fractional outcomes).

    Returns intercept, slope, the slope's standard error, z and two-sided p; NaN when the fit
    does not exist (no variation in x or y, or separation).
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    nan = {"intercept": math.nan, "slope": math.nan, "se": math.nan, "z": math.nan,
           "p": math.nan, "n": int(x.size)}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return nan
    X = np.column_stack([np.ones_like(x), x])
    beta = np.zeros(2)
    for _ in range(max_iter):
        eta = np.clip(X @ beta, -30, 30)
        p = 1.0 / (1.0 + np.exp(-eta))
        w = np.maximum(p * (1 - p), 1e-10)
        z = eta + (y - p) / w
        xtw = X.T * w
        try:
            new = np.linalg.solve(xtw @ X, xtw @ z)
        except np.linalg.LinAlgError:
            return nan
        if np.max(np.abs(new - beta)) < 1e-10:
            beta = new
            break
        beta = new
    if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > 25:
        return nan
    p = 1.0 / (1.0 + np.exp(-(X @ beta)))
    cov = np.linalg.inv((X.T * (p * (1 - p))) @ X)
    se = float(math.sqrt(cov[1, 1]))
    zval = float(beta[1] / se) if se > 0 else math.nan
    from scipy.stats import norm

    return {"intercept": float(beta[0]), "slope": float(beta[1]), "se": se, "z": zval,
            "p": float(2 * norm.sf(abs(zval))) if math.isfinite(zval) else math.nan,
            "n": int(x.size)}


# ---- judging ------------------------------------------------------------------------------
@dataclass
class Judged:
    tf: dict[tuple[str, int], float] = field(default_factory=dict)
    rq: dict[tuple[str, int], float] = field(default_factory=dict)
    detail: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    # (item, epoch) -> why it could not be scored, per metric
    unscorable: dict[str, dict[tuple[str, int], dict[str, Any]]] = field(
        default_factory=lambda: {TF: {}, RQ: {}})

    @property
    def judge_failures(self) -> int:
        return sum(1 for m in (TF, RQ) for v in self.unscorable[m].values()
                   if v.get("problem", "").startswith("judge"))


async def _judge_all(items: list[EvalItem], responses: Responses, judge: Judge, epochs: int,
                     seed: int, concurrency: int) -> Judged:
    from bargein.scorers.ihbench_judges import Unscorable

    with_base = [i for i in items if i.baseline]
    positions = balanced_positions([(i.id, e, i.type) for i in with_base for e in range(epochs)], seed)
    out = Judged()
    for key, issue in responses.unscorable.items():
        for m in (TF, RQ):
            out.unscorable[m][key] = issue
    for i in items:
        if not i.baseline:
            for e in range(epochs):
                out.unscorable[TF].setdefault((i.id, e), {
                    "problem": "no baseline response", "item_id": i.id, "epoch": e,
                    "evidence": "fill it with `bargein baseline`"})
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(item: EvalItem, epoch: int) -> None:
        key = (item.id, epoch)
        resp = responses.texts[key]
        d: dict[str, Any] = {"epoch": epoch}
        if not resp.strip():                        # an empty answer fails and loses, unjudged
            out.rq[key] = 0.0
            d["rq_criteria"] = [{"criterion": "not empty", "met": False, "reason": "empty response"}]
            if key in positions:
                out.tf[key] = 0.0
                d.update({"winner": "baseline", "loser_deficiency": "empty response",
                          "tf_status": "empty"})
            out.detail[key] = d
            return
        async with sem:
            rq = await judge.assess(item, resp, sample=epoch)
            if isinstance(rq, Unscorable):
                out.unscorable[RQ][key] = {"problem": "judge answer unusable (RQ)", "item_id": item.id,
                                           "epoch": epoch, "evidence": {"reason": rq.reason, **rq.evidence}}
                d["rq_status"] = "unscorable"
            else:
                d["rq_criteria"] = [c.model_dump() for c in rq.criteria]
                out.rq[key] = 1.0 if rq.criteria and all(c.met for c in rq.criteria) else 0.0
            if key in positions:
                first = positions[key]
                a, b = (resp, item.baseline) if first else (item.baseline, resp)
                v = await judge.compare(item, a, b, sample=epoch)
                d.update({"model_position": "A" if first else "B", "winner": v.winner,
                          "loser_deficiency": v.deficiency, "tf_status": v.status})
                if v.evidence.get("orders"):           # both positions' answers, for the audit
                    d["tf_orders"] = v.evidence["orders"]
                if v.status == "unscorable":
                    out.unscorable[TF][key] = {"problem": "judge answer unusable (TF)",
                                               "item_id": item.id, "epoch": epoch, "evidence": v.evidence}
                else:
                    out.tf[key] = win_value(v.winner or "tie", first)
        out.detail[key] = d

    await asyncio.gather(*(one(i, e) for i in items for e in range(epochs)
                           if (i.id, e) in responses.texts))
    return out


# ---- aggregation --------------------------------------------------------------------------
@dataclass
class IHBenchReport:
    release: str
    judge: str
    epochs: int
    items: int
    overall: dict[str, dict[str, float]]
    by_type: dict[str, dict[str, dict[str, float]]]
    by_depth: dict[str, dict[str, dict[str, float]]]
    depth_regression: dict[str, float]
    judge_failures: int
    no_baseline: int
    smoke: bool = False
    validation: dict[str, Any] = field(default_factory=dict)
    input_issues: dict[str, int] = field(default_factory=dict)
    baseline_models: dict[str, int] = field(default_factory=dict)
    plots: dict[str, str] = field(default_factory=dict)

    @property
    def judge_card(self):
        """The judge and its validation figures as structured fields (a JudgeCard)."""
        from bargein.scorers.judge_validation import judge_card

        return judge_card(self.judge, self.validation, epochs=self.epochs, smoke=self.smoke)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "release", "judge", "epochs", "items", "overall", "by_type", "by_depth",
            "depth_regression", "judge_failures", "no_baseline", "smoke", "validation",
            "input_issues", "baseline_models", "plots")}
        d["judge_card"] = self.judge_card.model_dump()
        if self.smoke:
            from bargein.scorers.ihbench_judges import SMOKE_STAMP

            d["stamp"] = SMOKE_STAMP
        return d

    def tables(self) -> str:
        from bargein.scorers.ihbench_report import render_tables

        return render_tables(self)


def _ci(values: list[float], seed: int, n_boot: int, unscorable: int) -> dict[str, float]:
    if not values:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0,
                "unscorable": unscorable}
    point, lo, hi = bootstrap_ci(values, n_boot=n_boot, seed=seed)
    return {"value": point, "ci_low": lo, "ci_high": hi, "n": len(values), "unscorable": unscorable}


def aggregate(items: list[EvalItem], judged: Judged, *, seed: int, n_boot: int = 1000
              ) -> tuple[dict, dict, dict, dict[str, float]]:
    """(overall, by_type, by_depth, depth regression) from per-(item, epoch) scores.

    Each block gives the mean over items (each item the mean of its scored epochs), its CI, the
    number of scored items ``n`` and of ``unscorable`` items (no epoch could be scored).
    """
    tf_m, rq_m = item_means(judged.tf), item_means(judged.rq)
    by_id = {i.id: i for i in items}

    def block(ids: list[str], salt: str) -> dict[str, dict[str, float]]:
        return {TF: _ci([tf_m[i] for i in ids if i in tf_m], stable_int(seed, "tf", salt), n_boot,
                        sum(1 for i in ids if i not in tf_m)),
                RQ: _ci([rq_m[i] for i in ids if i in rq_m], stable_int(seed, "rq", salt), n_boot,
                        sum(1 for i in ids if i not in rq_m))}

    ids = sorted(by_id)
    overall = block(ids, "all")
    by_type = {t: block([i for i in ids if by_id[i].type == t], t)
               for t in INTERRUPTION_TYPES if any(by_id[i].type == t for i in ids)}
    by_depth = {b: block([i for i in ids if depth_bin(by_id[i].depth) == b], b)
                for b in depth_bin_labels() if any(depth_bin(by_id[i].depth) == b for i in ids)}
    keys = sorted(judged.tf)
    reg = logistic_slope(np.array([by_id[k[0]].depth for k in keys], float),
                         np.array([judged.tf[k] for k in keys], float))
    return overall, by_type, by_depth, reg


def score_ihbench(release: str | Path, responses: str | Path, *, judge: str | None = None,
                  epochs: int = 3, out: str | Path | None = None, seed: int = 1234,
                  n_boot: int = 1000, concurrency: int = 8, workdir: Path | None = None,
                  endpoint: str | None = None, judge_obj: Judge | None = None) -> IHBenchReport:
    """Score a responses file against a release (folder or ORG/NAME@REV).

    ``judge``: PROVIDER:MODEL, ``smoke``, or None for ``$BARGEIN_JUDGE`` (an error names the fix
    when no judge is configured).
    """
    from bargein.releases.hub import pull_release
    from bargein.scorers.judge_validation import validation_summary

    if epochs < 1:
        raise ConfigError(f"--epochs {epochs}: must be >= 1 (IHBench uses 3)")
    if n_boot < 1:
        raise ConfigError(f"--bootstrap {n_boot}: must be >= 1 (IHBench uses 1000)")
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: must be >= 1")
    workdir = Path(workdir or "work")
    j = judge_obj or get_judge(judge, workdir=workdir)
    path = pull_release(str(release), endpoint=endpoint)
    items = load_eval_items(path)
    if not items:
        raise ConfigError(f"release {path} has no eval items to score")
    resp = load_responses(Path(responses), items, epochs)
    judged = asyncio.run(_judge_all(items, resp, j, epochs, seed, concurrency))
    overall, by_type, by_depth, reg = aggregate(items, judged, seed=seed, n_boot=n_boot)
    issue_counts: dict[str, int] = defaultdict(int)
    for issue in resp.issues:
        issue_counts[issue["problem"]] += 1
    models: dict[str, int] = defaultdict(int)
    for i in items:
        models[i.baseline_model or "none"] += 1
    report = IHBenchReport(release=str(release), judge=j.id, epochs=epochs, items=len(items),
                           overall=overall, by_type=by_type, by_depth=by_depth,
                           depth_regression=reg, judge_failures=judged.judge_failures,
                           no_baseline=sum(1 for i in items if not i.baseline),
                           smoke=bool(getattr(j, "smoke", False)),
                           validation=validation_summary(j, workdir=workdir, scorer="ihbench"),
                           input_issues=dict(sorted(issue_counts.items())),
                           baseline_models=dict(sorted(models.items())))
    if out is not None:
        from bargein.scorers.ihbench_report import write_outputs

        write_outputs(Path(out), report, items, judged, resp.issues, item_score_type=ItemScore)
    return report
