"""The IHBench scorer: TF win rate vs the baseline and RQ pass rate, with bootstrap CIs.

    report = score_ihbench(release_dir, responses_path, judge="offline", epochs=3, out=out_dir)
    print(report.tables())

Per (item, epoch):
  TF  comparative judge on (model response, baseline) in a seeded, balanced position order;
      the judge must name a concrete deficiency of the loser ("longer", "more detail" are
      re-asked, then scored as a tie); win = 1, tie = 0.5, loss = 0.
  RQ  absolute judge over the rubric's 2–4 criteria; pass = 1 only if every criterion is met.
Per item: the mean over epochs. Aggregates: the mean over items with a 95% CI from a
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
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from bargein.errors import ConfigError
from bargein.records import INTERRUPTION_TYPES, ChatMessage, EvalItem, ItemScore, Rubric
from bargein.releases.stats import depth_bin, depth_bin_labels
from bargein.scorers.ihbench_judges import Judge, get_judge
from bargein.scorers.stats import bootstrap_ci
from bargein.seeding import stable_int
from bargein.store import iter_text_lines

log = logging.getLogger("bargein.scorers.ihbench")
TF, RQ = "tf_win", "rq_pass"


class TFJudgment(BaseModel):
    """The comparative judge's answer (prompt ``judge_tf``)."""

    reasoning: str = ""
    winner: Literal["A", "B"]
    loser_deficiency: str = Field(min_length=1)


class CriterionVerdict(BaseModel):
    criterion: str
    met: bool
    reason: str = ""


class RQJudgment(BaseModel):
    """The absolute judge's answer (prompt ``judge_rq``)."""

    criteria: list[CriterionVerdict]
    verdict: Literal["pass", "fail"]


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


def load_responses(path: Path, items: list[EvalItem], epochs: int) -> dict[tuple[str, int], str]:
    """``{(item_id, epoch): response}``; unknown, missing or duplicate ids are refused."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"responses file {path} does not exist. Fix: produce it with "
                          "`bargein respond --release ... --out responses.jsonl`.")
    known = {i.id for i in items}
    out: dict[tuple[str, int], str] = {}
    unknown, dupes, bad = set(), set(), []
    for n, line in iter_text_lines(path, "responses file"):
        try:
            obj = json.loads(line)
            key = (str(obj["item_id"]), int(obj.get("epoch", 0)))
            text = obj["response"]
            if not isinstance(text, str):
                raise TypeError("response is not a string")
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            bad.append(f"line {n}: {e.__class__.__name__}: {e}")
            continue
        if key[0] not in known:
            unknown.add(key[0])
        elif key in out:
            dupes.add(key)
        else:
            out[key] = text
    want = {(i, e) for i in known for e in range(epochs)}
    missing = sorted(want - set(out))
    extra = sorted(k for k in out if k[1] >= epochs or k[1] < 0)
    problems = []
    if bad:
        problems.append(f"{len(bad)} malformed lines ({'; '.join(bad[:3])}); each line must be "
                        '{"item_id": ..., "epoch": 0, "response": "..."}')
    if unknown:
        problems.append(f"{len(unknown)} unknown item ids (e.g. {sorted(unknown)[:3]}): they are "
                        "not in this release's eval_items — were the responses made for another "
                        "release or version?")
    if dupes:
        problems.append(f"{len(dupes)} duplicate (item_id, epoch) pairs (e.g. {sorted(dupes)[:2]})")
    if missing:
        problems.append(f"{len(missing)} missing (item_id, epoch) pairs for epochs 0..{epochs - 1} "
                        f"(e.g. {missing[:3]})")
    if extra:
        problems.append(f"{len(extra)} responses with epochs outside 0..{epochs - 1} "
                        f"(e.g. {extra[:2]}); pass the matching --epochs")
    if problems:
        raise ConfigError(f"responses file {path} refused:\n  - " + "\n  - ".join(problems) +
                          "\nFix: regenerate it for this release with `bargein respond --release "
                          f"<release> --epochs {epochs} --out {path.name}`.", evidence=problems)
    return out


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
    judge_failures: int = 0


async def _judge_all(items: list[EvalItem], responses: dict[tuple[str, int], str], judge: Judge,
                     epochs: int, seed: int, concurrency: int) -> Judged:
    with_base = [i for i in items if i.baseline]
    positions = balanced_positions([(i.id, e, i.type) for i in with_base for e in range(epochs)], seed)
    by_id = {i.id: i for i in items}
    out = Judged()
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(item_id: str, epoch: int) -> None:
        item, resp = by_id[item_id], responses[(item_id, epoch)]
        d: dict[str, Any] = {"epoch": epoch}
        async with sem:
            rq = await judge.assess(item, resp, sample=epoch)
            d["rq_criteria"] = [c.model_dump() for c in rq.criteria]
            out.rq[(item_id, epoch)] = 1.0 if rq.criteria and all(c.met for c in rq.criteria) else 0.0
            if (item_id, epoch) in positions:
                first = positions[(item_id, epoch)]
                a, b = (resp, item.baseline) if first else (item.baseline, resp)
                winner, deficiency, status = await judge.compare(item, a, b, sample=epoch)
                out.tf[(item_id, epoch)] = win_value(winner, first)
                d.update({"model_position": "A" if first else "B", "winner": winner,
                          "loser_deficiency": deficiency, "tf_status": status})
                if status == "judge_failed":
                    out.judge_failures += 1
        out.detail[(item_id, epoch)] = d

    await asyncio.gather(*(one(i.id, e) for i in items for e in range(epochs)))
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
    plots: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "release", "judge", "epochs", "items", "overall", "by_type", "by_depth",
            "depth_regression", "judge_failures", "no_baseline", "plots")}

    def tables(self) -> str:
        from bargein.scorers.ihbench_report import render_tables

        return render_tables(self)


def _ci(values: list[float], seed: int, n_boot: int) -> dict[str, float]:
    if not values:
        return {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}
    point, lo, hi = bootstrap_ci(values, n_boot=n_boot, seed=seed)
    return {"value": point, "ci_low": lo, "ci_high": hi, "n": len(values)}


def aggregate(items: list[EvalItem], judged: Judged, *, seed: int, n_boot: int = 1000
              ) -> tuple[dict, dict, dict, dict[str, float]]:
    """(overall, by_type, by_depth, depth regression) from per-(item, epoch) scores."""
    tf_m, rq_m = item_means(judged.tf), item_means(judged.rq)
    by_id = {i.id: i for i in items}

    def block(ids: list[str], salt: str) -> dict[str, dict[str, float]]:
        return {TF: _ci([tf_m[i] for i in ids if i in tf_m], stable_int(seed, "tf", salt), n_boot),
                RQ: _ci([rq_m[i] for i in ids if i in rq_m], stable_int(seed, "rq", salt), n_boot)}

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


def score_ihbench(release: str | Path, responses: str | Path, *, judge: str = "offline",
                  epochs: int = 3, out: str | Path | None = None, seed: int = 1234,
                  n_boot: int = 1000, concurrency: int = 8, workdir: Path | None = None,
                  endpoint: str | None = None) -> IHBenchReport:
    """Score a responses file against a release (folder or ORG/NAME@REV)."""
    from bargein.releases.hub import pull_release

    if epochs < 1:
        raise ConfigError(f"--epochs {epochs}: must be >= 1 (IHBench uses 3)")
    path = pull_release(str(release), endpoint=endpoint)
    items = load_eval_items(path)
    if not items:
        raise ConfigError(f"release {path} has no eval items to score")
    resp = load_responses(Path(responses), items, epochs)
    j = get_judge(judge, workdir=workdir or Path("work"))
    judged = asyncio.run(_judge_all(items, resp, j, epochs, seed, concurrency))
    overall, by_type, by_depth, reg = aggregate(items, judged, seed=seed, n_boot=n_boot)
    report = IHBenchReport(release=str(release), judge=j.id, epochs=epochs, items=len(items),
                           overall=overall, by_type=by_type, by_depth=by_depth,
                           depth_regression=reg, judge_failures=judged.judge_failures,
                           no_baseline=sum(1 for i in items if not i.baseline))
    if out is not None:
        from bargein.scorers.ihbench_report import write_outputs

        write_outputs(Path(out), report, items, judged, item_score_type=ItemScore)
    return report
