"""Judge validation figures on the hand-labelled control set (slow with a local model).

    python bench/judge_validation.py                          # smoke judge, then the local model
    python bench/judge_validation.py --limit 60 --model PATH  # a stratified subset for the model
    python bench/judge_validation.py --limit 0 --gate-limit 60 --ear-limit 24 --rq-limit 40 --tf-limit 0
    python bench/judge_validation.py --limit 0 --gate-limit 54 --minutes 58   # gates in a time budget

Prints, per judge: ``judge_kappa`` (IHBench TF+RQ, judgment-weighted), ``ear_kappa``,
accuracy, ``template_fail_rate`` (content-free templates judged RQ fail; goal >= 0.95 for any
shipped judge) and ``paraphrase_pass_rate`` (good answers in other words judged RQ pass; goal
>= 0.80 for the model judge), each with its count.

The control set is split by case (:func:`bargein.scorers.control_set.split`, ``--part``):
``dev`` (the cases prompts and checks were worked on from the start), ``heldout`` (the first
held-out part, the hashed three quarters of ``ihbench_cases.yaml``: judged once each by judge
versions v3, v4 and v5, so since v6 it is development material too) and ``heldout2`` (the
default: 18 cases over the six types in ``scorers/control/ihbench_heldout2_cases.yaml``, written
by hand on 2026-11-25 BEFORE judge v6 was changed, with their own content-free templates,
echoes, restarts and over-apologies; commits 65bd481 and 5cc04ff; no model judged them before
v6 was frozen at 93575a4). The model judge is reported on a stratified subset of ``--limit``
judgments (round-robin over axis, type and category in a stable hashed order, no random seed),
since each judgment takes tens of seconds on a shared CPU. The smoke judge runs on the whole
control set and on the same subset.
The local model (the packaged Qwen2.5-Coder GGUF through the in-process ``llamacpp`` provider,
JSON-schema constrained, one thread) answers through the same judge class ``score`` uses: RQ one
criterion at a time (``--rq-mode split``: a criterion that asks for something is asked for the
words that meet it, one that forbids something for the words that break it), each verdict
resting on a quote checked in code, and a reply to a normal, correction, topic-switch or
pushback cut-in that says only the interrupted message's own words failing without a model
call; the first unmet criterion decides (the rest are not asked: same verdicts, fewer calls).
TF in both orders, EAR's repair category and correctness (``--ear-limit``).

Judge v6 on heldout2, its one run (1.5B, one thread, niced, beside another model process;
commit 93575a4; ``--part heldout2 --limit 0 --gate-limit 54 --ear-limit 0 --rq-limit 0
--tf-limit 0 --minutes 68 --no-ungrounded``; 2091 s for the paraphrases, 736 s for the
templates): paraphrase_pass_rate 0.833 (n 54: 45 passed; goal >= 0.80 met on this part),
template_fail_rate 0.972 (n 36: 35 failed; goal >= 0.95 met), gate judge_kappa 0.777
(accuracy 0.889, n 90, unscorable 0). The smoke judge on the same items: 0.704 / 1.000, kappa
0.655. Read after the run (no change made since): the template that passed ("Sure thing, happy
to do that. Anything else?", a filler case) passed because its one "do" criterion ("continues
with the sailings not yet given, ...") was read as forbidding ("not" inside a noun's clause);
three of the nine paraphrase failures are one criterion ("The explanation of how a move works
stops.", read as asking, which the model then judged unmet), the others a criterion the model
judged unmet (a reply's final "Shall I book it?" not seen as asking whether to book, "refund
the fee this once" / "waive ... as a goodwill gesture" not seen as the waiver, a spoken email
address). RQ over the other categories (echoes, ignores, wrong facts) was not run on heldout2.

Judge v6 (quote checks v6: a rule naming a value is broken only by a quote that says it; a code
of letters and digits is one word; one forbidden word beside new content is no violation; the
user's own words are not forbidden by a rule naming them; "the rest is skipped" forbids the
unsaid rest less its closing question; "the caller's wish not to give X" asks for something;
plus the cut-in check) was chosen on the dev part and the first held-out part only, from the
model's cached answers there: dev 0.922 (n 51) / 1.000 (n 34), kappa 0.904 (v5: 0.882 /
1.000, kappa 0.857); first held-out part 0.833 (n 54) / 1.000 (n 36), kappa 0.800 (v5 on the
same answers: 0.759 / 1.000, kappa 0.716); dev RQ over every category (``--rq-limit 40``) kappa
0.595 (accuracy 0.825, n 40; v5 0.350; smoke 0.624): ignore 4/4 (v5 0/4), restart 5/6 (3/6),
wrong fact 2/6 (2/6), echo 4/4, template 6/6, over-apology 3/3, good answers 9/11. A second
reading of an unmet "do" criterion (another prompt) was tried on dev and dropped: it rescued 1
of 13 failed paraphrases. Wrong facts are still mostly passed, and EAR correctness still
judges wrong values correct (not worked on in v6).

Judge v5 on the first held-out part, when it was still held out (one run; criterion prompt v2,
avoid prompt v1, quote checks v5): paraphrase_pass_rate 0.759 (n 54; goal NOT met),
template_fail_rate 1.000 (n 36), gate kappa 0.716 (accuracy 0.856, n 90); without the checks
on the quotes 0.296 / 0.750, kappa 0.041; the smoke judge on the same items 0.870 / 1.000,
kappa 0.843. v4 gave 0.685 / 1.000, kappa 0.635 there, v3 0.741 / 1.000, kappa 0.696.

Measured with checks v5 on the dev part (``--part dev``; not on a held-out part): RQ over
every category (``--rq-limit 40``) kappa 0.350 (accuracy 0.675, n 40;
the smoke judge 0.624 on the same items): echo 4/4, template 6/6, over-apology 3/3, good
answers 9/11, restart 3/6, wrong fact 2/6, ignore (carrying on as if nothing was said) 0/4, so
the checks stop content-free and echoed replies but not a reply that is all case content and
wrong or deaf to the cut-in; EAR (``--ear-limit 24``) ear_kappa 0.576 (R 11/12, kappa 0.867;
C 7/12, kappa 0.286: wrong values 0/3 and "Okay."-style replies 1/3 judged correct); TF
(``--tf-limit 8``) kappa 0.442, 5/8 pairs right and 3 position-inconsistent ties (smoke
7/8). Figures of older judge versions on the held-out part, not re-run: RQ over every
category kappa 0.437 (n 40); ear_kappa 0.750 (n 24). A baseline of the same run: a judge
that always answers "pass"/"A"/"answer"/"correct" (kappa 0 by construction), so every kappa
prints beside what agreement by a constant answer gives. Answers are cached under
``--workdir``: an interrupted run resumes. Imports only the package.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

from bargein.scorers.ear_rules import RepairJudgment
from bargein.scorers.ihbench_judges import CriterionVerdict, LLMJudge, RQJudgment, TFVerdict
from bargein.scorers.control_set import PARAPHRASES
from bargein.scorers.judge_validation import ValidationReport, validate_judge

DEFAULT_GGUF = Path(os.environ.get("BARGEIN_JUDGE_GGUF",
                                   "/work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))


class ConstantJudge:
    """Always the same verdict: the floor every kappa is read against."""

    id = "constant (always pass / A / answer / correct)"
    smoke = False

    async def compare(self, item, a, b, *, sample):
        return TFVerdict("A", "constant judge")

    async def assess(self, item, response, *, sample):
        return RQJudgment(criteria=[CriterionVerdict(criterion="c", met=True)], verdict="pass")

    async def judge(self, item, response, *, sample=0):
        return RepairJudgment(category="answer", correct=True, reason="constant judge")


def _f(x) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def report(name: str, rep, wall_s: float) -> None:
    ih, ear = rep.scorer("ihbench"), rep.scorer("ear")
    t, p = rep.template_fail_rate(), rep.paraphrase_pass_rate()
    print(f"[{name}] judge: {rep.judge}; {rep.control_set}; {len(rep.verdicts)} control judgments "
          f"in {wall_s:.1f} s")
    print(f"[{name}] judge_kappa {_f(ih['kappa'])} (accuracy {_f(ih['accuracy'])}, n {ih['n']}, "
          f"unscorable {ih['unscorable']})")
    for a in ("tf", "rq", "ear_r", "ear_c"):
        d = rep.axis(a)
        if d["n"]:
            print(f"[{name}]   {a}: accuracy {_f(d['accuracy'])}, kappa {_f(d['kappa'])}, "
                  f"n {d['n']}, unscorable {d['unscorable']}")
    if ear["n"]:
        print(f"[{name}] ear_kappa {_f(ear['kappa'])} (accuracy {_f(ear['accuracy'])}, n {ear['n']})")
    print(f"[{name}] template_fail_rate {_f(t['rate'])} (n {t['n']})")
    print(f"[{name}] paraphrase_pass_rate {_f(p['rate'])} (n {p['n']})")
    conf = rep.confusion()
    tf = {k: v for k, v in conf.items() if k.startswith("tf/")}
    if tf:
        ties = sum(n for c in tf.values() for e, n in c.items() if e.endswith("->tie"))
        print(f"[{name}]   tf position-inconsistent (tie) judgments: {ties}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_GGUF, help="GGUF for the local model judge")
    ap.add_argument("--limit", type=int, default=16, help="control judgments for the model judge's kappa")
    ap.add_argument("--gate-limit", type=int, default=12,
                    help="RQ judgments on good paraphrases, and as many on content-free "
                         "templates, for the gates")
    ap.add_argument("--tf-limit", type=int, default=16,
                    help="extra TF judgments (the pairwise judge, both orders) for its own kappa")
    ap.add_argument("--part", default="heldout2",
                    choices=("heldout2", "heldout", "dev", "dev+heldout", "all"),
                    help="control-set part the model judge is reported on")
    ap.add_argument("--rq-limit", type=int, default=0,
                    help="RQ judgments over every category (not only the gates') for RQ's kappa")
    ap.add_argument("--ear-limit", type=int, default=0,
                    help="EAR judgments (repair category and correctness) for their own kappa")
    ap.add_argument("--scorer", default="ihbench", choices=("ihbench", "ear", "all"))
    ap.add_argument("--rq-mode", default="split", choices=("split", "criteria", "all"))
    ap.add_argument("--minutes", type=float, default=None,
                    help="time budget of the gates: stop judging when spent and report on the "
                         "stratified prefix judged so far")
    ap.add_argument("--paraphrase-share", type=float, default=0.75,
                    help="under --minutes, the share of the time the paraphrases may take before "
                         "the templates are judged (a paraphrase that passes needs every criterion "
                         "asked; a template usually fails on the first); the templates get "
                         "the rest")
    ap.add_argument("--step", type=int, default=6,
                    help="gate judgments per round under --minutes (a round is judged grouped by "
                         "case, so a local model reuses the shared prompt prefix)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (n_threads)")
    ap.add_argument("--workdir", type=Path, default=Path("work/bench-judge"))
    ap.add_argument("--skip-model", action="store_true")
    ap.add_argument("--no-ungrounded", action="store_true",
                    help="do not also report the gates without the checks on the quotes (with the "
                         "first unmet criterion deciding, that judge asks criteria the other did "
                         "not: more model calls)")
    args = ap.parse_args()

    t = time.perf_counter()
    const = validate_judge(None, ih_judge=ConstantJudge(), ear_judge=ConstantJudge(), save=False)
    report("constant", const, time.perf_counter() - t)
    t = time.perf_counter()
    smoke = validate_judge("smoke", save=False)
    report("smoke", smoke, time.perf_counter() - t)
    if args.skip_model:
        return
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print("[model] skipped: llama-cpp-python is not installed (pip install 'bargein[llamacpp]')")
        return
    if not args.model.is_file():
        print(f"[model] skipped: no GGUF at {args.model} (set BARGEIN_JUDGE_GGUF or --model)")
        return
    from bargein.llm import get_llm

    spec = f"llamacpp:{args.model}"
    from bargein.scorers.ear import LLMRepairJudge

    llm = get_llm(spec, workdir=args.workdir, n_threads=args.threads)   # loads on first use
    # RQ is all-criteria: the first unmet criterion decides, the rest are not asked (same verdicts)
    judge = LLMJudge(spec, workdir=args.workdir, llm=llm, rq_mode=args.rq_mode, stop_at_fail=True)
    ear = LLMRepairJudge(spec, workdir=args.workdir, llm=llm)           # one model in memory
    # in this order, so a run stopped for time has the gates first
    if args.gate_limit and args.scorer != "ear":
        # paraphrases first, then templates, each printed when done; judged a few at a time in
        # the stratified order, so a run that hits --minutes (or is stopped and run again: the
        # answers are cached) is reported on a stratified prefix; the gates' kappa over both
        def gates(who, label: str, limits: dict[str, int], ih_judge=None, budget: float | None = None):
            parts = {}
            start = time.time()
            for name, cats in (("paraphrases", PARAPHRASES), ("templates", ("template",))):
                t, k, g = time.perf_counter(), 0, None
                if budget and name == "paraphrases":
                    # the paraphrases' share of the time, so the templates are judged too
                    budget_all, budget = budget, start + (budget - start) * args.paraphrase_share
                elif budget:
                    budget = budget_all
                kw = dict(workdir=args.workdir, scorer="ihbench", concurrency=1, ih_judge=ih_judge,
                          save=False, part=args.part, axes=("rq",), categories=cats)
                while k < limits[name] and not (budget and time.time() > budget):
                    k = min(k + (args.step if budget else limits[name]), limits[name])
                    g = validate_judge(who, limit=k, **kw)
                    if budget:
                        print(f"[{label}-{name}] {len(g.verdicts)} judged, "
                              f"{time.perf_counter() - t:.0f} s", flush=True)
                    if len(g.verdicts) < k:
                        break
                if g is None:
                    g = validate_judge(who, limit=0, **kw)
                report(f"{label}-{name}", g, time.perf_counter() - t)
                parts[name] = g
            p, tm = parts["paraphrases"], parts["templates"]
            both = ValidationReport(judge=p.judge, control_set=p.control_set, smoke=p.smoke,
                                    limit=len(p.verdicts) + len(tm.verdicts),
                                    verdicts=p.verdicts + tm.verdicts)
            report(label, both, 0.0)
            return {"paraphrases": len(p.verdicts), "templates": len(tm.verdicts)}, both

        budget = time.time() + 60 * args.minutes if args.minutes else None
        done, g = gates(spec, "model-gates", {"paraphrases": args.gate_limit,
                                              "templates": args.gate_limit}, judge, budget)
        print(f"[model-gates] RQ on content-free templates and good paraphrases only: the "
              f"{g.control_set}, stratified: {done['paraphrases']} paraphrases, "
              f"{done['templates']} templates")
        gates("smoke", "smoke-gates-same-items", done)
        if not args.no_ungrounded:
            # the same model answers (cached), judged without the checks on what the quotes say
            plain = LLMJudge(spec, workdir=args.workdir, llm=llm, rq_mode=args.rq_mode,
                             grounding=False, stop_at_fail=True)
            gates(spec, "model-gates-quotes-not-grounded", done, plain)
    if args.ear_limit:
        e = dict(part=args.part, limit=args.ear_limit)
        t = time.perf_counter()
        g = validate_judge(spec, workdir=args.workdir, scorer="ear", concurrency=1, ear_judge=ear, **e)
        report("model-ear", g, time.perf_counter() - t)
        print(f"[model-ear] EAR judgments only: the {g.control_set}, stratified subset of "
              f"{args.ear_limit} (saved for `score ear`)")
        report("smoke-ear-same-items", validate_judge("smoke", save=False, scorer="ear", **e), 0.0)
    if args.rq_limit and args.scorer != "ear":
        rq = dict(part=args.part, axes=("rq",), limit=args.rq_limit)
        t = time.perf_counter()
        g = validate_judge(spec, workdir=args.workdir, scorer="ihbench", concurrency=1,
                           ih_judge=judge, save=False, **rq)
        report("model-rq", g, time.perf_counter() - t)
        print(f"[model-rq] RQ over every category (echoes, restarts, wrong facts ... too): the "
              f"{g.control_set}, stratified subset of {args.rq_limit}")
        report("smoke-rq-same-items", validate_judge("smoke", save=False, scorer="ihbench", **rq), 0.0)
    if args.limit:
        t = time.perf_counter()
        rep = validate_judge(spec, workdir=args.workdir, scorer=args.scorer, limit=args.limit,
                             concurrency=1, part=args.part, ih_judge=judge,
                             ear_judge=ear if args.scorer != "ihbench" else None)
        report("model", rep, time.perf_counter() - t)
        print(f"[model] the {rep.control_set}, stratified subset of {args.limit} (round-robin over "
              "axis x type x category, stable hashed order; saved for `score`)")
        sub = validate_judge("smoke", save=False, scorer=args.scorer, limit=args.limit, part=args.part)
        report("smoke-on-the-same-subset", sub, 0.0)
    if args.tf_limit and args.scorer != "ear":
        tf = dict(part=args.part, axes=("tf",), limit=args.tf_limit)
        t = time.perf_counter()
        g = validate_judge(spec, workdir=args.workdir, scorer="ihbench", concurrency=1,
                           ih_judge=judge, save=False, **tf)
        report("model-tf", g, time.perf_counter() - t)
        print(f"[model-tf] TF pairs only: the {g.control_set}, stratified subset of {args.tf_limit}")
        report("smoke-tf-same-items", validate_judge("smoke", save=False, scorer="ihbench", **tf), 0.0)

if __name__ == "__main__":
    main()
