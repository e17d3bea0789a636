"""Judge validation figures on the hand-labelled control set (slow with a local model).

    python bench/judge_validation.py                          # smoke judge, then the local model
    python bench/judge_validation.py --limit 60 --model PATH  # a stratified subset for the model

Prints, per judge: ``judge_kappa`` (IHBench TF+RQ, judgment-weighted), ``ear_kappa``,
accuracy, ``template_fail_rate`` (content-free templates judged RQ fail; goal >= 0.95 for any
shipped judge) and ``paraphrase_pass_rate`` (good answers in other words judged RQ pass; goal
>= 0.80 for the model judge), each with its count. The smoke judge runs on the whole control set;
the local model (Qwen2.5-Coder GGUF through llama.cpp, JSON-schema constrained) on a stratified
subset, since each judgment takes seconds on 2 cores. A baseline of the same run: a judge that
always answers "pass"/"A"/"answer"/"correct" (kappa 0 by construction), so every kappa prints
beside what agreement by a constant answer gives. Imports only the package.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from bargein.scorers.ihbench_judges import CriterionVerdict, RQJudgment, TFVerdict
from bargein.scorers.ear_rules import RepairJudgment
from bargein.scorers.judge_validation import validate_judge

DEFAULT_GGUF = Path(__file__).resolve().parents[1] / "tests" / "llm" / "models" / \
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


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
    print(f"[{name}] judge: {rep.judge}; {len(rep.verdicts)} control judgments in {wall_s:.1f} s")
    print(f"[{name}] judge_kappa {_f(ih['kappa'])} (accuracy {_f(ih['accuracy'])}, n {ih['n']}, "
          f"unscorable {ih['unscorable']})")
    for a in ("tf", "rq", "ear_r", "ear_c"):
        d = rep.axis(a)
        if d["n"]:
            print(f"[{name}]   {a}: accuracy {_f(d['accuracy'])}, kappa {_f(d['kappa'])}, "
                  f"n {d['n']}, unscorable {d['unscorable']}")
    print(f"[{name}] ear_kappa {_f(ear['kappa'])} (accuracy {_f(ear['accuracy'])}, n {ear['n']})")
    print(f"[{name}] template_fail_rate {_f(t['rate'])} (n {t['n']})")
    print(f"[{name}] paraphrase_pass_rate {_f(p['rate'])} (n {p['n']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_GGUF, help="GGUF for the local model judge")
    ap.add_argument("--limit", type=int, default=40, help="control judgments for the model judge")
    ap.add_argument("--workdir", type=Path, default=Path("work/bench-judge"))
    ap.add_argument("--skip-model", action="store_true")
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
        print("[model] skipped: llama-cpp-python is not installed (bash tests/llm/setup_llamacpp.sh)")
        return
    if not args.model.is_file():
        print(f"[model] skipped: no GGUF at {args.model} (bash tests/llm/setup_llamacpp.sh)")
        return
    spec = f"llamacpp:{args.model}"
    t = time.perf_counter()
    rep = validate_judge(spec, workdir=args.workdir, limit=args.limit, concurrency=1)
    report("model", rep, time.perf_counter() - t)
    sub = validate_judge("smoke", save=False, limit=args.limit)
    report("smoke-on-the-same-subset", sub, 0.0)


if __name__ == "__main__":
    main()
