"""Judge validation: a judge's verdicts on the hand-labelled control set, with agreement figures.

    rep = validate_judge("openai:gpt-4o-mini", workdir=Path("work"))     # or "smoke"
    print(rep.tables())          # accuracy, Cohen's kappa, per-type confusion, per category

Per axis (IHBench TF and RQ, EAR R category and C correctness): accuracy and Cohen's kappa of the
judge's labels against the expected ones, over the judgments the judge could give; an
unscorable judgment (no schema-valid answer) counts as a disagreement in ``accuracy`` and is
reported in ``unscorable``. A scorer's kappa is the judgment-weighted mean of its axes' kappas
(IHBench: TF and RQ; EAR: R and C). A model judge's report is saved under
``<workdir>/judge_validation/`` and read back by ``score`` to print beside every figure; the
smoke judge is validated on the fly (it is fast and deterministic).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from bargein.scorers.control_set import (CONTROL_VERSION, GOOD, PARAPHRASES, ControlItem, case_of,
                                         control_items, split, stratified)

SCORER_AXES = {"ihbench": ("tf", "rq"), "ear": ("ear_r", "ear_c")}


def cohen_kappa(expected: list[str], got: list[str]) -> float:
    """Cohen's kappa of two label lists (NaN when undefined: no items, or chance agreement 1)."""
    n = len(expected)
    if n == 0 or n != len(got):
        return math.nan
    po = sum(e == g for e, g in zip(expected, got)) / n
    ce, cg = Counter(expected), Counter(got)
    pe = sum(ce[k] * cg.get(k, 0) for k in ce) / (n * n)
    if pe >= 1.0:
        return math.nan
    return (po - pe) / (1 - pe)


@dataclass
class Verdict:
    item: ControlItem
    got: str | None                 # None: unscorable
    evidence: str = ""


@dataclass
class ValidationReport:
    judge: str
    control_set: str
    smoke: bool
    verdicts: list[Verdict] = field(default_factory=list)
    limit: int | None = None

    # ---- figures ------------------------------------------------------------------------------
    def axis(self, axis: str) -> dict[str, Any]:
        vs = [v for v in self.verdicts if v.item.axis == axis]
        scored = [v for v in vs if v.got is not None]
        return {"n": len(vs), "scored": len(scored), "unscorable": len(vs) - len(scored),
                "accuracy": (sum(v.got == v.item.expected for v in scored) / len(vs)) if vs else math.nan,
                "kappa": cohen_kappa([v.item.expected for v in scored], [v.got for v in scored])}

    def scorer(self, scorer: str) -> dict[str, Any]:
        axes = [self.axis(a) for a in SCORER_AXES[scorer]]
        axes = [a for a in axes if a["n"]]
        n = sum(a["n"] for a in axes)
        ks = [(a["kappa"], a["scored"]) for a in axes if not math.isnan(a["kappa"])]
        kappa = sum(k * w for k, w in ks) / sum(w for _, w in ks) if ks and sum(w for _, w in ks) else math.nan
        acc = sum(a["accuracy"] * a["n"] for a in axes) / n if n else math.nan
        return {"n": n, "kappa": kappa, "accuracy": acc,
                "unscorable": sum(a["unscorable"] for a in axes)}

    def category_rate(self, axis: str, categories: tuple[str, ...], label: str) -> dict[str, Any]:
        vs = [v for v in self.verdicts if v.item.axis == axis and v.item.category in categories]
        hit = sum(v.got == label for v in vs)
        return {"rate": hit / len(vs) if vs else math.nan, "n": len(vs)}

    def template_fail_rate(self) -> dict[str, Any]:
        return self.category_rate("rq", ("template",), "fail")

    def paraphrase_pass_rate(self) -> dict[str, Any]:
        return self.category_rate("rq", PARAPHRASES, "pass")

    def confusion(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{"axis/kind": {"expected->got": count}}``."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for v in self.verdicts:
            out[f"{v.item.axis}/{v.item.kind}"][f"{v.item.expected}->{v.got or 'unscorable'}"] += 1
        return {k: dict(sorted(c.items())) for k, c in sorted(out.items())}

    def by_category(self) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[Verdict]] = defaultdict(list)
        for v in self.verdicts:
            groups[f"{v.item.axis}/{v.item.category}"].append(v)
        return {k: {"n": len(vs), "accuracy": sum(v.got == v.item.expected for v in vs) / len(vs)}
                for k, vs in sorted(groups.items())}

    def summary(self, scorer: str) -> dict[str, Any]:
        s = self.scorer(scorer)
        out = {"judge": self.judge, "control_set": self.control_set, "n": s["n"],
               "kappa": None if math.isnan(s["kappa"]) else round(s["kappa"], 4),
               "accuracy": None if math.isnan(s["accuracy"]) else round(s["accuracy"], 4),
               "unscorable": s["unscorable"], "subset": self.limit,
               "axes": {a: _finite(self.axis(a)) for a in SCORER_AXES[scorer]}}
        if scorer == "ihbench":
            out["template_fail_rate"] = _finite(self.template_fail_rate())
            out["paraphrase_pass_rate"] = _finite(self.paraphrase_pass_rate())
        return out

    def to_dict(self) -> dict[str, Any]:
        from bargein.scorers.ihbench_judges import SMOKE_STAMP

        return _finite({
            **({"stamp": SMOKE_STAMP} if self.smoke else {}),
            "judge": self.judge, "control_set": self.control_set, "smoke": self.smoke,
            "subset": self.limit,
            "scorers": {s: self.summary(s) for s in SCORER_AXES if self.scorer(s)["n"]},
            "axes": {a: self.axis(a) for a in ("tf", "rq", "ear_r", "ear_c") if self.axis(a)["n"]},
            "template_fail_rate": self.template_fail_rate(),
            "paraphrase_pass_rate": self.paraphrase_pass_rate(),
            "confusion": self.confusion(), "by_category": self.by_category(),
            "verdicts": [{"id": v.item.id, "expected": v.item.expected, "got": v.got,
                          "evidence": v.evidence[:300]} for v in self.verdicts]})

    def tables(self) -> str:
        from bargein.scorers.ihbench_judges import SMOKE_STAMP

        head = f"{SMOKE_STAMP.upper()} — " if self.smoke else ""
        sub = f", stratified subset of {len(self.verdicts)}" if self.limit else ""
        lines = [f"{head}Judge validation — judge {self.judge}, {self.control_set} "
                 f"({len(self.verdicts)} labelled judgments{sub})", "",
                 "| axis | judgments | scored | unscorable | accuracy | Cohen's κ |",
                 "|---|---|---|---|---|---|"]
        for a in ("tf", "rq", "ear_r", "ear_c"):
            d = self.axis(a)
            if d["n"]:
                lines.append(f"| {a} | {d['n']} | {d['scored']} | {d['unscorable']} | "
                             f"{_f(d['accuracy'])} | {_f(d['kappa'])} |")
        for s in SCORER_AXES:
            d = self.scorer(s)
            if d["n"]:
                lines.append(f"| **{s}** | {d['n']} | | {d['unscorable']} | {_f(d['accuracy'])} | "
                             f"{_f(d['kappa'])} |")
        t, p = self.template_fail_rate(), self.paraphrase_pass_rate()
        lines += ["", f"template_fail_rate (content-free templates judged RQ fail): {_f(t['rate'])} "
                      f"(n {t['n']})",
                  f"paraphrase_pass_rate (good answers in other words judged RQ pass): "
                  f"{_f(p['rate'])} (n {p['n']})", "",
                  "| axis/category | n | accuracy |", "|---|---|---|"]
        for k, d in self.by_category().items():
            lines.append(f"| {k} | {d['n']} | {_f(d['accuracy'])} |")
        lines += ["", "Confusion per type (expected->judged: count):"]
        for k, c in self.confusion().items():
            lines.append(f"  {k}: " + ", ".join(f"{e} {n}" for e, n in c.items()))
        return "\n".join(lines) + "\n"


def _f(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


# ---- running a judge over the control set -----------------------------------------------
async def _one(c: ControlItem, ih, ear) -> Verdict:
    from bargein.scorers.ihbench_judges import Unscorable

    if c.axis == "rq":
        r = await ih.assess(c.item, c.response, sample=0)
        if isinstance(r, Unscorable):
            return Verdict(c, None, r.reason)
        bad = [x.reason for x in r.criteria if not x.met]
        return Verdict(c, "pass" if not bad else "fail", "; ".join(bad))
    if c.axis == "tf":
        v = await ih.compare(c.item, c.response, c.response_b, sample=0)
        if v.status == "unscorable":
            return Verdict(c, None, json.dumps(v.evidence, default=str)[:300])
        return Verdict(c, v.winner if v.winner in ("A", "B") else "tie", v.deficiency)
    j = await ear.judge(c.item, c.response, sample=0)
    if j.status != "ok":
        return Verdict(c, None, j.reason)
    if c.axis == "ear_r":
        return Verdict(c, j.category, j.reason)
    return Verdict(c, "correct" if j.correct else "incorrect", j.reason)


def validate_judge(spec: str | None, *, workdir: Path | None = None, scorer: str = "all",
                   limit: int | None = None, concurrency: int = 4, ih_judge=None, ear_judge=None,
                   save: bool = True, part: str = "all", axes: tuple[str, ...] | None = None,
                   categories: tuple[str, ...] | None = None,
                   judge_options: dict[str, Any] | None = None) -> ValidationReport:
    """Run a judge (``smoke`` or PROVIDER:MODEL) over the control set (``part``: "all", the
    "dev" cases prompts may be worked on, or the "heldout" rest), or a stratified subset of
    ``limit`` items of it, and return the agreement figures; a model judge's report is saved
    under ``<workdir>/judge_validation/`` for ``score`` to print. ``axes`` / ``categories``
    keep only those judgments (e.g. the RQ template and paraphrase gates). ``judge_options``
    (``rq_mode``, ``both_orders``, ``grounding``) configure a model IHBench judge.

    Judgments run grouped by axis, then case (a local model reuses the shared prompt prefix);
    the report keeps the stratified order."""
    from bargein.scorers.ear import get_repair_judge
    from bargein.scorers.ihbench_judges import get_judge, resolve_judge_spec

    workdir = Path(workdir or "work")
    spec = resolve_judge_spec(spec, what="score validate-judge") if ih_judge is None and ear_judge is None else spec
    items = [i for i in split(control_items(scorer), part)
             if (axes is None or i.axis in axes) and (categories is None or i.category in categories)]
    items = stratified(items, limit)
    ih = ih_judge or (get_judge(spec, workdir=workdir, **(judge_options or {})) if any(i.axis in ("tf", "rq") for i in items) else None)
    ear = ear_judge or (get_repair_judge(spec, workdir=workdir) if any(i.axis.startswith("ear") for i in items) else None)
    sem = asyncio.Semaphore(max(1, concurrency))

    async def run() -> list[Verdict]:
        async def one(c: ControlItem) -> Verdict:
            async with sem:
                return await _one(c, ih, ear)
        order = sorted(range(len(items)), key=lambda k: (items[k].axis, case_of(items[k]),
                                                           items[k].response, items[k].id))
        done = await asyncio.gather(*(one(items[k]) for k in order))
        out: list[Verdict | None] = [None] * len(items)
        for k, v in zip(order, done):
            out[k] = v
        return out                                  # type: ignore[return-value]

    verdicts = asyncio.run(run())
    judge_id = (ih or ear).id if ih is None or ear is None else _joint_id(ih.id, ear.id)
    rep = ValidationReport(judge=judge_id, control_set=CONTROL_VERSION if part == "all" else
                           f"{CONTROL_VERSION} {part} part",
                           smoke=bool(getattr(ih or ear, "smoke", False)), verdicts=verdicts, limit=limit)
    if save and not rep.smoke:
        for s, j in (("ihbench", ih), ("ear", ear)):
            if j is not None and rep.scorer(s)["n"]:
                _store(workdir, j.id, s, rep)
    return rep


def _joint_id(a: str, b: str) -> str:
    return a if a == b else f"{a} + {b}"


def _slug(text: str) -> str:
    """A file name for a judge id; a long id is cut and told apart by a hash of the whole id
    (two judges that differ only in their last settings never share a file)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")
    if len(slug) <= 120:
        return slug
    import hashlib

    return f"{slug[:108]}_{hashlib.sha256(text.encode('utf-8')).hexdigest()[:11]}"


def _path(workdir: Path, judge_id: str, scorer: str) -> Path:
    return Path(workdir) / "judge_validation" / f"{scorer}__{_slug(judge_id)}.json"


def _store(workdir: Path, judge_id: str, scorer: str, rep: ValidationReport) -> None:
    from bargein.store import atomic_write_text

    data = {**rep.summary(scorer), "judge": judge_id, "scorer": scorer,
            "template_fail_rate": _finite(rep.template_fail_rate()),
            "paraphrase_pass_rate": _finite(rep.paraphrase_pass_rate()),
            "confusion": rep.confusion()}
    atomic_write_text(_path(workdir, judge_id, scorer), json.dumps(data, indent=2, sort_keys=True) + "\n")


class JudgeCard(BaseModel):
    """The judge of a scored run and its validation figures, as structured fields (the
    ``judge_card`` of every score report; :func:`judge_card`). Rates are None when not measured
    (a model judge not validated yet, or EAR, which has no template/paraphrase categories)."""

    model_config = ConfigDict(frozen=True)

    judge: str
    smoke: bool
    validated: bool
    epochs: int
    control_set: str | None = None
    n: int | None = None                   # control-set judgments the figures rest on
    subset: int | None = None              # a stratified subset of this many, if not the whole part
    kappa: float | None = None
    accuracy: float | None = None
    unscorable: int | None = None
    template_fail_rate: float | None = None
    template_n: int | None = None
    paraphrase_pass_rate: float | None = None
    paraphrase_n: int | None = None
    note: str = ""


def judge_card(judge_id: str, validation: dict[str, Any], *, epochs: int, smoke: bool) -> JudgeCard:
    """The structured judge fields from :func:`validation_summary`'s dict."""
    v = validation or {}
    t, p = v.get("template_fail_rate") or {}, v.get("paraphrase_pass_rate") or {}
    return JudgeCard(judge=judge_id, smoke=smoke, validated=v.get("kappa") is not None,
                     epochs=epochs, control_set=v.get("control_set"), n=v.get("n"),
                     subset=v.get("subset"), kappa=v.get("kappa"), accuracy=v.get("accuracy"),
                     unscorable=v.get("unscorable"), template_fail_rate=t.get("rate"),
                     template_n=t.get("n"), paraphrase_pass_rate=p.get("rate"),
                     paraphrase_n=p.get("n"), note=v.get("note", ""))


_SMOKE_CACHE: dict[str, dict[str, Any]] = {}


def validation_summary(judge: Any, *, workdir: Path, scorer: str) -> dict[str, Any]:
    """The figures ``score`` prints beside every table: measured now for the smoke judge, read
    from ``<workdir>/judge_validation/`` for a model judge (or a note saying how to measure)."""
    if getattr(judge, "smoke", False):
        if scorer not in _SMOKE_CACHE:
            kw = {"ih_judge": judge} if scorer == "ihbench" else {"ear_judge": judge}
            rep = validate_judge(None, scorer=scorer, save=False, **kw)
            _SMOKE_CACHE[scorer] = rep.summary(scorer)
        return _SMOKE_CACHE[scorer]
    p = _path(workdir, judge.id, scorer)
    if p.is_file():
        return json.loads(p.read_text(encoding="utf-8"))
    spec = getattr(judge, "spec", judge.id)
    return {"judge": judge.id, "kappa": None,
            "note": f"not validated yet: run `bargein --workdir {workdir} score validate-judge "
                    f"--judge {spec}`"}


__all__ = ["JudgeCard", "ValidationReport", "judge_card", "cohen_kappa", "validate_judge", "validation_summary", "GOOD"]
