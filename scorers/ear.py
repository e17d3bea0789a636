"""The EAR scorer (Pardon?): task competence C, repair R, and their harmonic mean.

    report = score_ear("work/mask.jsonl", "responses.jsonl", judge="offline", out=Path("ear"))
    print(report.tables())

Per response:
  answerable item    C = 1 if correct (QA: the reference answer, normalised match; conversation:
                     carries on with the slot value, does not ask for it again), else 0
  unanswerable item  R = 1 explicit slot-aware repair ("sorry, what was the account number?"),
                     0.5 generic refusal ("could you repeat that?"), 0 an answer (hallucinated or
                     unaware of the gap)
Per item: the mean over epochs. EAR = 2CR / (C + R) (0 when C + R = 0): non-compensatory, so
C = 0.9 with R = 0.1 gives 0.18, not 0.5. Aggregates overall, per signal, per window and per
(signal, window), with 95% CIs from a percentile bootstrap that resamples source utterances
(an answerable and an unanswerable variant of the same utterance stay together).

The judge is ``offline`` (the rules in :mod:`bargein.scorers.ear_rules`) or ``PROVIDER:MODEL``
(prompt ``judge_repair``, a schema-checked :class:`RepairJudgment`).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bargein.errors import ConfigError, GenerationFailed
from bargein.records import Aggregate, ItemScore, MaskedItem, ScoreReport
from bargein.scorers.ear_rules import R_VALUE, RepairJudgment, answer_correct, classify_repair
from bargein.seeding import stable_int
from bargein.store import atomic_write_text, iter_text_lines

SIGNAL_DESCRIPTIONS = {"white_noise": "white noise", "silence": "silence",
                       "music": "a music-like sound"}


def ear(c: float, r: float) -> float:
    """EAR = 2CR / (C + R); 0 when both are 0."""
    return 0.0 if c + r <= 0 else 2.0 * c * r / (c + r)


# ---- judges -------------------------------------------------------------------------------
class OfflineRepairJudge:
    """Rule-based: deterministic, no network (see :mod:`bargein.scorers.ear_rules`)."""

    id = "offline-rules@1"

    async def judge(self, item: MaskedItem, response: str, *, sample: int = 0) -> RepairJudgment:
        j = classify_repair(response, item)
        if item.condition == "answerable":
            j = j.model_copy(update={"correct": answer_correct(response, item, j)})
        return j


class LLMRepairJudge:
    """Renders ``judge_repair`` and asks any provider for a :class:`RepairJudgment`."""

    def __init__(self, spec: str, *, workdir: Path, llm: Any = None):
        self.spec = spec
        self.id = f"{spec} (prompt judge_repair)"
        if llm is None:
            from bargein.llm import get_llm

            llm = get_llm(spec, workdir=workdir)
        self.llm = llm

    async def judge(self, item: MaskedItem, response: str, *, sample: int = 0) -> RepairJudgment:
        from bargein.masking.items import MASK_TOKEN
        from bargein.prompts import render

        prompt = render(
            "judge_repair", signal_description=SIGNAL_DESCRIPTIONS.get(item.signal, item.signal),
            context=[c for c in item.context if c.get("role") != "system"][-6:],
            masked_transcript=item.masked_transcript or item.transcript, mask_token=MASK_TOKEN,
            question=item.question, condition=item.condition,
            slot=(item.slot or "answer").replace("_", " "), answer=item.answer, response=response)
        try:
            ans = await self.llm.structured([{"role": "user", "content": prompt}], RepairJudgment,
                                            agent="judge_repair", sample=sample)
        except GenerationFailed as e:
            return RepairJudgment(category="answer", correct=False,
                                  reason=f"judge gave no valid answer: {e}", status="judge_failed")
        ans = ans if isinstance(ans, RepairJudgment) else RepairJudgment.model_validate(ans)
        if item.condition == "unanswerable" or ans.category != "answer":
            ans = ans.model_copy(update={"correct": False})
        return ans


def get_repair_judge(spec: str | None, *, workdir: Path):
    from bargein.llm.base import is_offline

    return OfflineRepairJudge() if is_offline(spec) else LLMRepairJudge(spec, workdir=workdir)


# ---- inputs -------------------------------------------------------------------------------
REPAIR_COLUMNS = ["id", "source_id", "source_kind", "message_index", "condition", "signal",
                  "window_ms", "level", "transcript", "words", "spans", "question", "answer", "slot",
                  "expected_behaviour", "context", "sampling_rate"]


def load_items(path: str | Path, *, endpoint: str | None = None) -> list[MaskedItem]:
    """Masked items from ``mask.jsonl``, or from a release's ``repair`` config (a release folder
    or ``ORG/NAME@REV`` on the Hub; audio is not read)."""
    from bargein.store import read_jsonl

    p = Path(path)
    if p.is_file():
        items = read_jsonl(p, MaskedItem)
    elif p.is_dir() or "@" in str(path):
        items = _release_items(str(path), endpoint)
    else:
        raise ConfigError(f"--items {str(p)!r} does not exist. Fix: pass the mask.jsonl written by "
                          "'bargein mask', a release folder, or ORG/NAME@vX.Y.Z")
    if not items:
        raise ConfigError(f"--items {path} holds no masked repair items")
    return items


def _release_items(ref: str, endpoint: str | None) -> list[MaskedItem]:
    from bargein.masking.items import masked_transcript
    from bargein.records import MaskSpan, WordTiming
    from bargein.releases.hub import pull_release
    from bargein.releases.reader import iter_rows

    release = pull_release(ref, endpoint=endpoint)
    out = []
    for r in iter_rows(release, "repair", "test", columns=REPAIR_COLUMNS):
        words = tuple(WordTiming(word=w["word"], start_s=round(w["start_s"], 6), end_s=round(w["end_s"], 6))
                      for w in r["words"])
        spans = tuple(MaskSpan(**{k: v for k, v in s.items()}) for s in r["spans"])
        out.append(MaskedItem(
            id=r["id"], source_id=r["source_id"], source_kind=r["source_kind"],
            message_index=r["message_index"], audio_path=f"{release.name}/repair/{r['id']}",
            sample_rate=r["sampling_rate"], transcript=r["transcript"], words=words, spans=spans,
            condition=r["condition"], signal=r["signal"], window_ms=r["window_ms"], level=r["level"],
            question=r["question"], answer=r["answer"], slot=r["slot"],
            expected_behaviour=r["expected_behaviour"] or "",
            context=tuple(json.loads(r["context"] or "[]")),
            masked_transcript=masked_transcript(r["transcript"], words, spans)))
    return out


def load_responses(path: str | Path, items: list[MaskedItem], *, allow_missing: bool = False
                   ) -> dict[str, dict[int, str]]:
    """``{item_id: {epoch: response}}``; bad lines, unknown ids and duplicates are refused."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--responses {str(path)!r} does not exist. Fix: write one JSON line "
                          '{"item_id": ..., "response": ...} per item (optional "epoch")')
    known = {i.id for i in items}
    out: dict[str, dict[int, str]] = defaultdict(dict)
    unknown, dupes, bad = set(), set(), []
    for n, line in iter_text_lines(path, "--responses"):
        try:
            obj = json.loads(line)
            iid, epoch, text = str(obj["item_id"]), int(obj.get("epoch", 0)), obj["response"]
            if not isinstance(text, str):
                raise TypeError("response is not a string")
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            bad.append(f"line {n}: {type(e).__name__}: {e}")
            continue
        if iid not in known:
            unknown.add(iid)
        elif epoch in out[iid]:
            dupes.add((iid, epoch))
        else:
            out[iid][epoch] = text
    problems = []
    if bad:
        problems.append(f"{len(bad)} unreadable lines ({'; '.join(bad[:3])})")
    if unknown:
        problems.append(f"{len(unknown)} item ids not in the items file (e.g. {sorted(unknown)[:3]})")
    if dupes:
        problems.append(f"{len(dupes)} duplicate (item_id, epoch) pairs (e.g. {sorted(dupes)[:3]})")
    missing = sorted(known - {k for k, v in out.items() if v})
    if missing and not allow_missing:
        problems.append(f"{len(missing)} items have no response (e.g. {missing[:3]}); pass "
                        "--allow-missing to score them as empty responses")
    if problems:
        raise ConfigError(f"responses file {path}: " + "; ".join(problems))
    for m in missing:
        out[m][0] = ""
    return dict(out)


# ---- scoring ------------------------------------------------------------------------------
def _unit(item: MaskedItem) -> str:
    """The source utterance an item was made from (the bootstrap resamples these)."""
    return f"{item.source_id}|{item.message_index}|{item.slot}"


async def judge_items(items: list[MaskedItem], responses: dict[str, dict[int, str]], judge,
                      concurrency: int = 8) -> list[ItemScore]:
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(item: MaskedItem, epoch: int, text: str) -> tuple[int, RepairJudgment]:
        async with sem:
            return epoch, await judge.judge(item, text, sample=epoch)

    async def per_item(item: MaskedItem) -> ItemScore:
        got = await asyncio.gather(*(one(item, e, t) for e, t in sorted(responses[item.id].items())))
        if item.condition == "answerable":
            metric, vals = "C", [1.0 if j.correct else 0.0 for _, j in got]
        else:
            metric, vals = "R", [R_VALUE[j.category] for _, j in got]
        return ItemScore(
            item_id=item.id, metric=metric, value=float(np.mean(vals)),
            group={"signal": item.signal, "window_ms": str(item.window_ms),
                   "condition": item.condition, "source_kind": item.source_kind, "unit": _unit(item)},
            detail={"epochs": [{"epoch": e, "category": j.category, "correct": j.correct,
                                "reason": j.reason, "status": j.status} for e, j in got]})

    return list(await asyncio.gather(*(per_item(i) for i in items)))


def _groups(score: ItemScore) -> list[tuple[tuple[str, str], ...]]:
    s, w = score.group["signal"], score.group["window_ms"]
    return [(), (("signal", s),), (("window_ms", w),), (("signal", s), ("window_ms", w))]


def aggregate(scores: list[ItemScore], *, n_boot: int = 1000, seed: int = 0) -> list[Aggregate]:
    """C, R and EAR (and the R category shares) per group, with unit-resampled bootstrap CIs."""
    buckets: dict[tuple, list[ItemScore]] = defaultdict(list)
    for sc in scores:
        for g in _groups(sc):
            buckets[g].append(sc)
    out: list[Aggregate] = []
    for g in sorted(buckets, key=lambda g: (len(g), [(k, v.zfill(6)) for k, v in g])):
        out += _aggregate_group(dict(g), buckets[g], n_boot, stable_int("ear-boot", seed, list(g)))
    return out


def _aggregate_group(group: dict[str, str], scores: list[ItemScore], n_boot: int, seed: int
                     ) -> list[Aggregate]:
    units = sorted({s.group["unit"] for s in scores})
    idx = {u: k for k, u in enumerate(units)}
    sums = np.zeros((2, len(units)))
    cnts = np.zeros((2, len(units)))
    for s in scores:
        row = 0 if s.metric == "C" else 1
        sums[row, idx[s.group["unit"]]] += s.value
        cnts[row, idx[s.group["unit"]]] += 1

    def stats(pick: np.ndarray) -> np.ndarray:
        """(C, R, EAR) for each row of unit indices."""
        with np.errstate(invalid="ignore", divide="ignore"):
            c = sums[0][pick].sum(-1) / cnts[0][pick].sum(-1)
            r = sums[1][pick].sum(-1) / cnts[1][pick].sum(-1)
            e = np.where(c + r > 0, 2 * c * r / (c + r), 0.0)
            e = np.where(np.isnan(c) | np.isnan(r), np.nan, e)
        return np.stack([c, r, e], axis=-1)

    point = stats(np.arange(len(units)))
    boots = stats(np.random.default_rng(seed).integers(0, len(units), size=(n_boot, len(units)))) \
        if n_boot > 0 and units else np.full((0, 3), np.nan)
    n = {"C": int(cnts[0].sum()), "R": int(cnts[1].sum()), "EAR": len(units)}
    out = []
    for k, metric in enumerate(("C", "R", "EAR")):
        value = float(point[k])
        col = boots[:, k][~np.isnan(boots[:, k])] if boots.size else np.zeros(0)
        lo, hi = (float(np.percentile(col, 2.5)), float(np.percentile(col, 97.5))) if col.size else (None, None)
        if math.isnan(value):
            continue
        out.append(Aggregate(metric=metric, group=group, value=value, ci_low=lo, ci_high=hi, n=n[metric]))
    r_vals = [s.value for s in scores if s.metric == "R"]
    for name, v in (("R_explicit", 1.0), ("R_generic", 0.5), ("R_unaware", 0.0)):
        if r_vals:
            out.append(Aggregate(metric=name, group=group, value=float(np.mean([x == v for x in r_vals])),
                                 n=len(r_vals)))
    return out


@dataclass
class EARReport:
    report: ScoreReport
    scores: list[ItemScore] = field(default_factory=list)

    def get(self, metric: str, **group: Any) -> Aggregate | None:
        want = {k: str(v) for k, v in group.items()}
        return next((a for a in self.report.aggregates if a.metric == metric and a.group == want), None)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.report.model_dump_json())

    def tables(self) -> str:
        def fmt(a: Aggregate | None) -> str:
            if a is None:
                return "—"
            ci = f" [{a.ci_low:.2f}, {a.ci_high:.2f}]" if a.ci_low is not None else ""
            return f"{a.value:.3f}{ci}"

        groups = []
        for a in self.report.aggregates:
            if a.group not in groups:
                groups.append(a.group)
        lines = [f"EAR ({self.report.config.get('judge')}; 95% CI, bootstrap over source utterances)", "",
                 "| group | n ans | C | n unans | R | EAR | R=1 / 0.5 / 0 |", "|---|---|---|---|---|---|---|"]
        for g in groups:
            name = ", ".join(f"{k}={v}" for k, v in g.items()) or "all"
            c, r, e = (self.get(m, **g) for m in ("C", "R", "EAR"))
            dist = "/".join(f"{x.value:.2f}" for x in (self.get(m, **g) for m in
                            ("R_explicit", "R_generic", "R_unaware")) if x is not None) or "—"
            lines.append(f"| {name} | {c.n if c else 0} | {fmt(c)} | {r.n if r else 0} | {fmt(r)} | "
                         f"{fmt(e)} | {dist} |")
        return "\n".join(lines) + "\n"


def score_ear(items_path: str | Path, responses_path: str | Path, *, judge: str = "offline",
              out: Path | None = None, seed: int = 1234, n_boot: int = 1000, concurrency: int = 8,
              workdir: Path = Path("work"), allow_missing: bool = False, judge_obj: Any = None,
              endpoint: str | None = None) -> EARReport:
    """Score a responses file on masked repair items; write item_scores.jsonl, report.json and
    tables.md to ``out`` when given."""
    if n_boot < 0:
        raise ConfigError(f"--bootstrap {n_boot}: must be >= 0")
    items = load_items(items_path, endpoint=endpoint)
    responses = load_responses(responses_path, items, allow_missing=allow_missing)
    j = judge_obj or get_repair_judge(judge, workdir=Path(workdir))
    scores = asyncio.run(judge_items(items, responses, j, concurrency))
    aggs = aggregate(scores, n_boot=n_boot, seed=seed)
    report = ScoreReport(scorer="ear", release=str(items_path), aggregates=tuple(aggs),
                         config={"judge": j.id, "n_boot": n_boot, "seed": seed,
                                 "items": len(items), "responses": str(responses_path)})
    res = EARReport(report=report, scores=scores)
    if out is not None:
        from bargein.store import write_jsonl

        out = Path(out)
        write_jsonl(out / "item_scores.jsonl", scores)
        atomic_write_text(out / "report.json", json.dumps(res.to_dict(), indent=2, sort_keys=True) + "\n")
        atomic_write_text(out / "tables.md", res.tables())
    return res
