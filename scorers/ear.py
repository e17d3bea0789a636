"""The EAR scorer (Pardon?): task competence C, repair R, and their harmonic mean.

    report = score_ear("work/mask.jsonl", "responses.jsonl", judge="openai:gpt-4o-mini", out=Path("ear"))
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

The judge is a model, ``PROVIDER:MODEL`` (prompt ``judge_repair``, a schema-checked
:class:`RepairVerdict`), or ``smoke`` (the rules in :mod:`bargein.scorers.ear_rules`; a smoke
test, not a score). A judge answer that fails its schema makes that judgment unscorable, listed
in ``issues.jsonl`` with the evidence and counted beside every figure.
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
from bargein.scorers.ear_rules import (
    R_VALUE, RepairJudgment, RepairVerdict, answer_correct, classify_repair,
)
from bargein.seeding import stable_int
from bargein.store import atomic_write_text, iter_text_lines

SIGNAL_DESCRIPTIONS = {"white_noise": "white noise", "silence": "silence",
                       "music": "a music-like sound"}


def ear(c: float, r: float) -> float:
    """EAR = 2CR / (C + R); 0 when both are 0."""
    return 0.0 if c + r <= 0 else 2.0 * c * r / (c + r)


# ---- judges -------------------------------------------------------------------------------
class SmokeRepairJudge:
    """Rule-based (:mod:`bargein.scorers.ear_rules`): deterministic; a smoke test, not a score."""

    id = "smoke-rules@2"
    smoke = True

    async def judge(self, item: MaskedItem, response: str, *, sample: int = 0) -> RepairJudgment:
        j = classify_repair(response, item)
        if item.condition == "answerable":
            j = j.model_copy(update={"correct": answer_correct(response, item, j)})
        return j


class LLMRepairJudge:
    """Renders ``judge_repair`` and asks any provider for a :class:`RepairJudgment`."""

    smoke = False

    def __init__(self, spec: str, *, workdir: Path | None, llm: Any = None,
                 temperature: float | None = 0.0, max_tokens: int = 400):
        from bargein.prompts import load

        self.spec = spec
        from bargein.scorers.ihbench_judges import judge_temperature

        self.id = f"{spec} (judge_repair v{load('judge_repair').version})"
        self.temperature = judge_temperature(spec, temperature)
        self.max_tokens = max_tokens
        if llm is None:
            from bargein.llm import get_llm

            llm = get_llm(spec, workdir=workdir)
        self.llm = llm

    async def judge(self, item: MaskedItem, response: str, *, sample: int = 0) -> RepairJudgment:
        from bargein.masking.items import MASK_TOKEN
        from bargein.scorers.ihbench_judges import _messages

        chat = _messages(
            "judge_repair", signal_description=SIGNAL_DESCRIPTIONS.get(item.signal, item.signal),
            context=[c for c in item.context if c.role != "system"][-6:],
            masked_transcript=item.masked_transcript or item.transcript, mask_token=MASK_TOKEN,
            question=item.question, condition=item.condition,
            slot=(item.slot or "answer").replace("_", " "), answer=item.answer, response=response)
        try:
            ans = await self.llm.structured(chat, RepairVerdict, agent="judge_repair", sample=sample,
                                            temperature=self.temperature, max_tokens=self.max_tokens)
        except GenerationFailed as e:
            return RepairJudgment(category="answer", correct=False,
                                  reason=f"judge gave no valid answer: {e}", status="judge_failed",
                                  evidence=e.evidence)
        ans = ans if isinstance(ans, RepairVerdict) else RepairVerdict.model_validate(ans)
        correct = ans.correct and item.condition == "answerable" and ans.category == "answer"
        return RepairJudgment(category=ans.category, correct=correct, reason=ans.reason)


def get_repair_judge(spec: str | None, *, workdir: Path | None):
    from bargein.scorers.ihbench_judges import SMOKE, resolve_judge_spec

    spec = resolve_judge_spec(spec, what="score ear")
    return SmokeRepairJudge() if spec.lower() == SMOKE else LLMRepairJudge(spec, workdir=workdir)


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
                   ) -> tuple[dict[str, dict[int, str]], list[dict[str, Any]]]:
    """(``{item_id: {epoch: response}}``, issues). Nothing is dropped silently: unreadable lines,
    unknown ids, conflicting duplicates, missing items (unscorable unless ``allow_missing``
    scores them as empty) and empty answers (scored: no repair, not correct) are all reported
    per item. A file that matches no item is refused."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--responses {str(path)!r} does not exist. Fix: write one JSON line "
                          '{"item_id": ..., "response": ...} per item (optional "epoch")')
    known = {i.id for i in items}
    seen: dict[str, dict[int, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
    issues: list[dict[str, Any]] = []
    for n, line in iter_text_lines(path, "--responses"):
        try:
            obj = json.loads(line)
            iid, epoch, text = str(obj["item_id"]), int(obj.get("epoch", 0)), obj["response"]
            if not isinstance(text, str):
                raise TypeError("response is not a string")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            issues.append({"problem": "unreadable line", "line": n,
                           "evidence": f"{type(e).__name__}: {e}; {line.strip()[:200]!r}"})
            continue
        if iid not in known:
            issues.append({"problem": "unknown item id", "item_id": iid, "epoch": epoch, "line": n,
                           "evidence": "not in the items file"})
        else:
            seen[iid][epoch].append((n, text))
    if not seen:
        raise ConfigError(f"responses file {path} has no response for any of these items "
                          f"({len(issues)} problem line(s), e.g. {issues[:2]}). Fix: answer the "
                          "items of this mask.jsonl / release", evidence=issues[:20])
    out: dict[str, dict[int, str]] = {}
    for iid in sorted(known):
        epochs = seen.get(iid)
        if not epochs:
            if allow_missing:
                issues.append({"problem": "missing response (scored as empty: --allow-missing)",
                               "item_id": iid})
                out[iid] = {0: ""}
            else:
                issues.append({"problem": "missing response", "item_id": iid,
                               "evidence": "no line for this item (pass --allow-missing to score "
                                           "it as an empty response)"})
            continue
        for epoch, got in sorted(epochs.items()):
            distinct = sorted({t for _, t in got})
            if len(distinct) > 1:
                issues.append({"problem": "conflicting duplicates", "item_id": iid, "epoch": epoch,
                               "lines": [n for n, _ in got], "evidence": [t[:200] for t in distinct]})
                continue
            if len(got) > 1:
                issues.append({"problem": "duplicate (identical, counted once)", "item_id": iid,
                               "epoch": epoch, "lines": [n for n, _ in got],
                               "evidence": distinct[0][:200]})
            if not distinct[0].strip():
                issues.append({"problem": "empty response (scored: no repair, not correct)",
                               "item_id": iid, "epoch": epoch, "lines": [n for n, _ in got],
                               "evidence": repr(distinct[0][:200])})
            out.setdefault(iid, {})[epoch] = distinct[0]
    return out, issues


# ---- scoring ------------------------------------------------------------------------------
def _unit(item: MaskedItem) -> str:
    """The source utterance an item was made from (the bootstrap resamples these)."""
    return f"{item.source_id}|{item.message_index}|{item.slot}"


async def judge_items(items: list[MaskedItem], responses: dict[str, dict[int, str]], judge,
                      concurrency: int = 8) -> tuple[list[ItemScore], list[dict[str, Any]]]:
    """(scores of every item with at least one usable judgment, unscorable judgments)."""
    sem = asyncio.Semaphore(max(1, concurrency))
    failed: list[dict[str, Any]] = []

    async def one(item: MaskedItem, epoch: int, text: str) -> tuple[int, RepairJudgment]:
        if not text.strip():
            return epoch, RepairJudgment(category="answer", reason="empty response")
        async with sem:
            return epoch, await judge.judge(item, text, sample=epoch)

    async def per_item(item: MaskedItem) -> ItemScore | None:
        got = await asyncio.gather(*(one(item, e, t) for e, t in sorted(responses[item.id].items())))
        ok = [(e, j) for e, j in got if j.status == "ok"]
        for e, j in got:
            if j.status != "ok":
                failed.append({"problem": "judge answer unusable", "item_id": item.id, "epoch": e,
                               "evidence": {"reason": j.reason, **j.evidence}})
        if not ok:
            return None
        if item.condition == "answerable":
            metric, vals = "C", [1.0 if j.correct else 0.0 for _, j in ok]
        else:
            metric, vals = "R", [R_VALUE[j.category] for _, j in ok]
        return ItemScore(
            item_id=item.id, metric=metric, value=float(np.mean(vals)),
            group={"signal": item.signal, "window_ms": str(item.window_ms),
                   "condition": item.condition, "source_kind": item.source_kind, "unit": _unit(item)},
            detail={"epochs": [{"epoch": e, "category": j.category, "correct": j.correct,
                                "reason": j.reason, "status": j.status} for e, j in got]})

    scored = await asyncio.gather(*(per_item(i) for i in items if i.id in responses))
    return [s for s in scored if s is not None], failed


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

    def unscorable(self, metric: str, group: dict[str, str]) -> int:
        key = "|".join(f"{k}={v}" for k, v in sorted(group.items()))
        return int(self.report.config.get("unscorable", {}).get(metric, {}).get(key, 0))

    def tables(self) -> str:
        from bargein.scorers.ihbench_judges import SMOKE_STAMP
        from bargein.scorers.ihbench_report import judge_line

        cfg = self.report.config

        def fmt(a: Aggregate | None) -> str:
            if a is None:
                return "—"
            ci = f" [{a.ci_low:.2f}, {a.ci_high:.2f}]" if a.ci_low is not None else ""
            return f"{a.value:.3f}{ci}"

        groups = []
        for a in self.report.aggregates:
            if a.group not in groups:
                groups.append(a.group)
        lines = [f"EAR scores — {cfg.get('items')} items (95% CI, bootstrap over source utterances)",
                 judge_line(cfg.get("judge", "?"), cfg.get("judge_validation", {}),
                            cfg.get("epochs", 1), bool(cfg.get("smoke"))), "",
                 "| group | n ans (unscorable) | C | n unans (unscorable) | R | EAR | R=1 / 0.5 / 0 |",
                 "|---|---|---|---|---|---|---|"]
        for g in groups:
            name = ", ".join(f"{k}={v}" for k, v in g.items()) or "all"
            c, r, e = (self.get(m, **g) for m in ("C", "R", "EAR"))
            dist = "/".join(f"{x.value:.2f}" for x in (self.get(m, **g) for m in
                            ("R_explicit", "R_generic", "R_unaware")) if x is not None) or "—"
            lines.append(f"| {name} | {c.n if c else 0} ({self.unscorable('C', g)}) | {fmt(c)} | "
                         f"{r.n if r else 0} ({self.unscorable('R', g)}) | {fmt(r)} | {fmt(e)} | {dist} |")
        if cfg.get("judge_failures"):
            lines += ["", f"Note: {cfg['judge_failures']} judgment(s) got no usable answer from the "
                          "judge (per item, with the judge's answers, in issues.jsonl; an item "
                          "with no usable epoch is counted unscorable above)."]
        if cfg.get("input_issues"):
            lines += ["", "Note: responses file: " + ", ".join(
                f"{n} × {k}" for k, n in cfg["input_issues"].items()) + " (per item in issues.jsonl)."]
        if cfg.get("smoke"):
            lines += ["", f"[{SMOKE_STAMP}]"]
        return "\n".join(lines) + "\n"


def _unscorable_counts(items: list[MaskedItem], scores: list[ItemScore]) -> dict[str, dict[str, int]]:
    scored = {s.item_id for s in scores}
    out: dict[str, dict[str, int]] = {"C": defaultdict(int), "R": defaultdict(int)}
    for i in items:
        if i.id in scored:
            continue
        metric = "C" if i.condition == "answerable" else "R"
        s, w = i.signal, str(i.window_ms)
        for g in ({}, {"signal": s}, {"window_ms": w}, {"signal": s, "window_ms": w}):
            out[metric]["|".join(f"{k}={v}" for k, v in sorted(g.items()))] += 1
    return {m: dict(sorted(v.items())) for m, v in out.items()}


def score_ear(items_path: str | Path, responses_path: str | Path, *, judge: str | None = None,
              out: Path | None = None, seed: int = 1234, n_boot: int = 1000, concurrency: int = 8,
              workdir: Path = Path("work"), allow_missing: bool = False, judge_obj: Any = None,
              endpoint: str | None = None) -> EARReport:
    """Score a responses file on masked repair items; write item_scores.jsonl, issues.jsonl,
    report.json and tables.md to ``out`` when given. ``judge``: PROVIDER:MODEL, ``smoke``, or
    None for ``$BARGEIN_JUDGE`` (an error names the fix when no judge is configured)."""
    from bargein.scorers.ihbench_judges import SMOKE_STAMP
    from bargein.scorers.judge_validation import judge_card, validation_summary

    if n_boot < 0:
        raise ConfigError(f"--bootstrap {n_boot}: must be >= 0")
    j = judge_obj or get_repair_judge(judge, workdir=Path(workdir))
    items = load_items(items_path, endpoint=endpoint)
    responses, issues = load_responses(responses_path, items, allow_missing=allow_missing)
    scores, failed = asyncio.run(judge_items(items, responses, j, concurrency))
    aggs = aggregate(scores, n_boot=n_boot, seed=seed)
    smoke = bool(getattr(j, "smoke", False))
    counts: dict[str, int] = defaultdict(int)
    for i in issues:
        counts[i["problem"]] += 1
    epochs = max((len(v) for v in responses.values()), default=1)
    config = {"judge": j.id, "judge_validation": validation_summary(j, workdir=Path(workdir), scorer="ear"),
              "smoke": smoke, "epochs": epochs, "n_boot": n_boot, "seed": seed, "items": len(items),
              "responses": str(responses_path), "input_issues": dict(sorted(counts.items())),
              "judge_failures": len(failed), "unscorable": _unscorable_counts(items, scores)}
    if smoke:
        config["stamp"] = SMOKE_STAMP
    config["judge_card"] = judge_card(j.id, config["judge_validation"], epochs=epochs,
                                      smoke=smoke).model_dump()
    report = ScoreReport(scorer="ear", release=str(items_path), aggregates=tuple(aggs), config=config)
    res = EARReport(report=report, scores=scores)
    if out is not None:
        from bargein.store import write_jsonl

        out = Path(out)
        stamp = {"stamp": SMOKE_STAMP} if smoke else {}
        write_jsonl(out / "item_scores.jsonl", [s.with_(detail={**s.detail, **stamp})
                                                for s in scores])
        atomic_write_text(out / "issues.jsonl", "".join(
            json.dumps(dict(i, **stamp), sort_keys=True, default=str) + "\n"
            for i in [dict(x, source="responses") for x in issues]
            + [dict(x, source="judge") for x in failed]))
        atomic_write_text(out / "report.json", json.dumps(res.to_dict(), indent=2, sort_keys=True) + "\n")
        atomic_write_text(out / "tables.md", res.tables())
    return res
