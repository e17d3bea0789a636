"""Real-model benchmark (slow): the LLM conversation path on a local GGUF model, in-process
through llama-cpp-python, with the same gates as offline output (verifier + quality checks).

    python bench/llm_real.py [--model PATH.gguf] [--scenarios 4] [--replay 8] [--minutes 60]

Scenarios come from the offline scenario generator (their KBs are checked by code); the
shortest ones (fewest rounds when simulated offline) are taken so a run fits the time given.
Every conversation agent (planner, assistant, caller, rubric writer, verifier, modifier) is the
model. Scenarios run one at a time until ``--minutes`` is spent; the figures say how many ran.
It prints::

    schema_failure_rate=     first answers that failed the schema / structured asks   (goal <= 0.02)
    verified_rate=           conversations accepted by the verifier and the quality gates
                             / conversations attempted                                (goal >= 0.5)
    prefix_reuse_speedup=    wall of the first --replay calls of conversation 1 re-sent with
                             prefix reuse off / the same calls with it on, in this run (goal >= 1.5)
    reasks_per_call=         re-asks (schema and plan) / first asks                  (for the record)
    tokens_per_s=            output tokens / seconds inside the model               (for the record)
    conversations_per_hour=  conversations attempted / wall hours of the pipeline   (for the record)

and the discard reasons, the per-check defect counts and each conversation's outcome. A goal not
met is printed as not met; the exit status is 0 unless the run itself broke. ``--replay 0`` skips
the prefix-reuse measurement.

Measured here (Qwen2.5-Coder-1.5B Q4_K_M, 1 thread, nice 10, 2 cores shared at load 3-5;
``--scenarios 4 --replay 3 --minutes 48 --probe no --goals no``, commit a1acd21, run
2026-11-25 01:15-02:24 UTC): 3 of the 4 scenarios ran in the 48 minutes (1803 s, 390 s,
1622 s); the fourth (professional_services) was not attempted:

    government             ACCEPTED (23 messages; 4 rubrics rule-based) - read by hand: an
                           impatient cut-in that says "I didn't hear what you just said" (15),
                           answered by "let's move on" (16); "Sorry, I misunderstood your
                           question" after a side request (6); "I have that." / "You plan
                           review" (18), "Thanks, I have that." after "Got it." (20)
    saas                   round 1: a caller planned to volunteer their name said "I didn't
                           catch that, could you repeat?"; the assistant said it back in 6 of
                           its 9 answers, the other 3 refused for a take-up of the unsaid name
    ecommerce              ACCEPTED (29 messages; 2 rubrics rule-based) - read by hand: an
                           opening that assumes the order number (0), "anything else?" before
                           the task (2), the caller's sentence said back (10), the photo request
                           said again instead of answering (18, 20: the gift-card payment not
                           taken up), "Please provide me with the exact words I heard" in the
                           caller's mouth (17, 23), "You return is confirmed" (24); the
                           deterministic checks and the LLM verifier found nothing

    schema_failure_rate= 0.006 (goal <= 0.02: met)
    verified_rate= 0.667 (goal >= 0.5: met)   (2 of 3 attempted; of the 4 asked 0.500)
    prefix_reuse_speedup= 2.188 (goal >= 1.5: met)   (132.8 s without, 60.7 s with, 3 calls)
    reasks_per_call= 0.331, tokens_per_s= 2.261, conversations_per_hour= 2.831
    rubrics: 11, of which 6 rule-based after the writer's answers were refused; accepted with
    model rubrics only: 0 of 3

(173 model calls, 311,749 prompt and 8,619 output tokens, 3813 s in the model.) The verified
rate is of what the checks find: both accepted calls read as weak, so it overstates quality.
Two of the defects read above are now checks (74d2eda: ``prompt_wording``, and "You <noun>
is" in ``grammar_casing``). Run over the run's saved output, they flag both accepted calls:
the ecommerce call unfixably (its caller says "the exact words I heard" twice), the government
call with a fixable casing edit ("You plan review"). With today's gates the same output would
give about 1 accepted of 3 attempted (0.333; of the 4 asked 0.25), below the goal: an estimate
from the saved conversations, not a new run.
Fixes after a1acd21, not measured: a volunteered detail missing from the caller's cut-in and
an impatient "I didn't hear that" are re-asked (08066ef). Variety on the 2 accepted calls
(bargein.verify.report's functions): user_distinct2 0.892, assistant_distinct2 0.696,
templated_sentence_share 0.835 (the offline agents on the same 2 scenarios: 0.963, 0.692,
0.970); the LLM turns say the planned talking points word for word, so the share stays far
above 0.6. Earlier, commit 9cfb7cd (22:44-00:00, 3 of 4 in 70 minutes): schema_failure_rate
0.000, verified_rate 0.333, prefix_reuse_speedup 2.469, reasks_per_call 0.230, tokens_per_s
2.179; commit a156641 (2 of 4 in 30 minutes): verified_rate 0.000; prefix_reuse_speedup
2.030, 1.760, 2.409 on a156641, ce37f3f, ca66656.
Re-simulation of discarded scenarios is off here (``resamples=0``): the rate is per simulated
conversation.

Latest (2026-11-25, second session). ``--scenarios 4 --replay 3 --minutes 60 --probe no --goals
no`` on a frozen copy of 6de9323, 1 thread, 04:14-05:20 UTC, 4 of 4 attempted:
schema_failure_rate 0.011, verified_rate 0.250 (the one accepted call, professional_services,
read by hand as a reject: a cut-in answered by "I have your name and the legal name of the
business?", facts the caller never gave, a "restocking fee" copied from the prompt's example,
a volunteered circumstance answered by the cut turn word for word), prefix_reuse_speedup
0.981 (46.5 s without, 47.4 s with: the first 3 calls were a planner, an assistant and a
caller call, each its agent's first, so there was nothing to reuse), reasks_per_call 0.329,
tokens_per_s 3.430, conversations_per_hour 3.753; rubrics 19, 1 rule-based. Then
``--scenarios 1 --replay 10 --minutes 20 --probe no --goals no --threads 2`` on 2af6a1a,
05:22-05:30 UTC: the 10 calls replayed in 190.6 s without prefix reuse and 94.6 s with it
(prefix_reuse_speedup 2.014); that saas conversation broke its plan in round 5. ``--replay``
must cover calls of an agent that calls again for the figure to mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bargein.errors import GenerationFailed
from bargein.generators.llm_rubric import RULE_FALLBACK
from bargein.generators.conversation import RuleAgents, _run_sync, generate_conversations, simulate
from bargein.generators.scenarios import generate_scenarios
from bargein.llm import get_llm
from bargein.llm.llamacpp_provider import LlamaCppProvider
from bargein.verify.checks import run_checks
from bargein.verify.llm_checks import llm_checks
from doubles.conversation_examples import EXAMPLE_TURNS, build_conversation, example_scenario

RULE_MARK = RULE_FALLBACK.split(" {")[0]           # "rule rubric at message"
DEFAULT_MODEL = "/work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GOALS = {"schema_failure_rate": ("<=", 0.02), "verified_rate": (">=", 0.5),
         "prefix_reuse_speedup": (">=", 1.5)}


class Recorder:
    """The client's provider, recording each request (messages and settings), its wall time
    and usage, so the same calls can be re-sent later."""

    def __init__(self, inner: Any, trace: bool = False):
        self._inner = inner
        self.trace = trace
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, messages, **kw):
        t = time.perf_counter()
        comp = await self._inner.complete(messages, **kw)
        self.calls.append({"messages": messages, "kw": kw, "seconds": time.perf_counter() - t,
                           "input_tokens": comp.usage.input_tokens,
                           "output_tokens": comp.usage.output_tokens})
        if self.trace:          # one line per call, to follow a long run as it goes
            print(f"  call {len(self.calls)}: {self.calls[-1]['seconds']:.0f} s, "
                  f"{comp.usage.input_tokens}+{comp.usage.output_tokens} tokens: "
                  f"{comp.text[:160]!r}", file=sys.stderr, flush=True)
        return comp


class Counting:
    """The LLM client as the stages see it, counting plan re-asks (answers that were valid
    JSON but broke the round plan, or a modifier edit that could not be applied)."""

    def __init__(self, client: Any):
        self._client = client
        self.plan_reasks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def structured(self, messages, schema, **kw):
        last = messages[-1]["content"] if messages else ""
        if "Your answer breaks the plan:" in last or last.startswith("Your answer cannot be applied"):
            self.plan_reasks += 1
        return await self._client.structured(messages, schema, **kw)


def shortest_scenarios(n: int, seed: int, pool: int, workdir: Path) -> list:
    res = generate_scenarios(pool, seed, workdir=workdir, progress=False)
    sized = []
    for s in res.outputs:
        try:
            conv = _run_sync(simulate(s, random.Random(seed), RuleAgents(s)))
        except GenerationFailed:         # no offline size: last in the order, still a scenario
            sized.append((10 ** 6, True, s.id, s))
            continue
        sized.append((len(conv.messages), len(conv.interruptions) == 0, s.id, s))
    sized.sort(key=lambda x: x[:3])
    return [s for *_, s in sized[:n]]


# hand-made corruptions of the hand-written clean call (bench/doubles/conversation_examples.py),
# each with the message(s) it breaks: the control must pass, each corruption must be rejected by
# an unfixable verdict that names a broken message
SEAT = ("user", "I'd like the aisle seat on the morning flight, please.")
FRIDAY = ("assistant", "Done. You're booked for Friday between 2 and 4 pm and on the cancellation "
                       "list. Is there anything else?", {"stage": "wrap_up"})
PROBES = {"control": ({}, set()),
          "swapped": ({5: EXAMPLE_TURNS[9], 9: EXAMPLE_TURNS[5]}, {5, 9}),
          "contradicted_fact": ({20: FRIDAY}, {20}),
          "unasked_answer": ({5: SEAT}, {5})}


def probe_verifier(client: Any) -> dict[str, Any]:
    """The LLM verifier alone on the control and the three corruptions."""
    scn = example_scenario()
    out: dict[str, Any] = {}
    for name, (changes, broken) in PROBES.items():
        conv = build_conversation(scn, [changes.get(i, t) for i, t in enumerate(EXAMPLE_TURNS)])
        t = time.perf_counter()
        try:
            verdicts = asyncio.run(llm_checks(conv, client))
        except Exception as e:          # a failed verifier is a result here, not a crash
            out[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            print(f"verifier probe {name}: failed: {out[name]['error']}", flush=True)
            continue
        unfixable = [v for v in verdicts if not v.fixable]
        hit = [v for v in unfixable if v.message_index in broken]
        out[name] = {"rejected": bool(unfixable), "names_broken_message": bool(hit),
                     "deterministic_checks": sorted({v.check for v in run_checks(conv)}),
                     "verdicts": [f"{v.check}@{v.message_index} fixable={v.fixable}: {v.issue}"
                                  for v in verdicts], "seconds": round(time.perf_counter() - t)}
        print(f"verifier probe {name}: {json.dumps(out[name])}", flush=True)
    return out


GOAL_DOMAINS = ("saas", "healthcare", "travel")


def write_goal_sample(client: Any, seed: int, workdir: Path, per_domain: int = 2) -> dict[str, Any]:
    """The goal writer on three domains: every answer the model gave (first attempts and
    re-asks), the goals kept, and how alike they are across domains (openings, word overlap)."""
    from bargein.generators.catalogue_loader import load_catalogue
    from bargein.generators.scenarios_llm import GOALS_STAGE, _config, write_goals
    from bargein.records import Goal
    from bargein.runner import Stage, run_stage
    from bargein.verify.text import content_words

    answers: list[dict[str, Any]] = []

    class Seen:
        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        async def structured(self, messages, schema, **kw):
            obj = await client.structured(messages, schema, **kw)
            answers.append({"attempt": sum(1 for m in messages if m["role"] == "assistant"),
                            "goals": [g.model_dump() for g in obj.goals]})
            return obj

    cat = load_catalogue()
    stage = Stage(name=GOALS_STAGE, fn=write_goals, output=Goal,
                  config=_config("llamacpp:bench", ("goal_writer",), n_goals=per_domain, max_reasks=2),
                  kind="io", concurrency=1)
    t = time.perf_counter()
    res = run_stage(stage, [cat.domain(d).domain for d in GOAL_DOMAINS], workdir=workdir, seed=seed,
                    resources={"llm": Seen()}, progress=False)
    kept = list(res.outputs)
    words = [content_words(g.description) for g in kept]
    overlap = max((len(a & b) / max(1, len(a | b)) for i, a in enumerate(words) for b in words[:i]),
                  default=0.0)
    openings = [" ".join(g.description.lower().split()[:3]) for g in kept]
    out = {"kept": [f"{g.domain}/{g.name}: {g.description}" for g in kept],
           "failed_domains": [f.item_id for f in res.failures],
           "answers": answers, "max_word_overlap": round(overlap, 3),
           "distinct_openings": f"{len(set(openings))} of {len(openings)}",
           "formula": sum("authenticat" in g.description.lower() for g in kept),
           "seconds": round(time.perf_counter() - t)}
    print("goal writer sample:", json.dumps(out, indent=1), flush=True)
    return out


def replay(model: str, calls: list[dict[str, Any]], *, prefix_cache: bool, ctx: int,
           threads: int) -> float:
    """Seconds to send ``calls`` again, in order, to a fresh model (load time excluded)."""
    prov = LlamaCppProvider(model, context_tokens=ctx, n_threads=threads, prefix_cache=prefix_cache)
    prov._load()
    t = time.perf_counter()
    for c in calls:
        asyncio.run(prov.complete(c["messages"], **c["kw"]))
    took = time.perf_counter() - t
    del prov
    gc.collect()
    return took


def _figures(rec: Recorder, client: Any, counting: Counting, totals: Counter, pipeline_s: float) -> dict[str, float]:
    model_s = sum(c["seconds"] for c in rec.calls)
    out_tokens = sum(c["output_tokens"] for c in rec.calls)
    sc = client.structured_counts
    return {
        "schema_failure_rate": sc["invalid_first"] / max(1, sc["asks"]),
        "verified_rate": totals["accepted"] / max(1, totals["attempted"]),
        "reasks_per_call": (sc["reasks"] + counting.plan_reasks) / max(1, sc["asks"] - counting.plan_reasks),
        "tokens_per_s": out_tokens / max(1e-9, model_s),
        "conversations_per_hour": totals["attempted"] / max(1e-9, pipeline_s / 3600),
    }


def verdict(name: str, value: float) -> str:
    if name not in GOALS:
        return "(for the record)"
    op, goal = GOALS[name]
    ok = value <= goal if op == "<=" else value >= goal
    return f"(goal {op} {goal}: {'met' if ok else 'NOT met'})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--scenarios", type=int, default=4)
    ap.add_argument("--pool", type=int, default=12, help="offline scenarios to pick the shortest from")
    ap.add_argument("--replay", type=int, default=8, help="calls of conversation 1 re-sent per mode")
    ap.add_argument("--minutes", type=float, default=60.0, help="no new scenario after this")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=384)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--probe", choices=("yes", "no", "only"), default="yes",
                    help="the LLM verifier on a clean call and three corrupted copies")
    ap.add_argument("--goals", choices=("yes", "no", "only"), default="yes",
                    help=f"the goal writer, 2 goals in each of {', '.join(GOAL_DOMAINS)}")
    ap.add_argument("--trace", action="store_true", help="a line per model call on stderr")
    a = ap.parse_args()
    if not Path(a.model).is_file():
        print(f"bench/llm_real.py: no GGUF model at {a.model}. Fix: --model PATH.gguf", file=sys.stderr)
        return 2
    work = Path(a.workdir or tempfile.mkdtemp(prefix="llm_real_"))
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    scenarios = shortest_scenarios(a.scenarios, a.seed, max(a.pool, a.scenarios), work / "scenarios")
    spec = f"llamacpp:{a.model}"
    client = get_llm(spec, workdir=work, cache=False, context_tokens=a.ctx, max_tokens=a.max_tokens,
                     frequency_penalty=0.3, agents={})
    rec = Recorder(client.provider, trace=a.trace)
    client.provider = rec
    client.provider._inner.n_threads = a.threads
    counting = Counting(client)
    goals = write_goal_sample(client, a.seed, work / "goals") if a.goals != "no" else {}
    if a.goals == "only":
        return 0
    probe = probe_verifier(client) if a.probe != "no" else {}
    if a.probe == "only":
        return 0
    per_conv: list[dict[str, Any]] = []
    totals: Counter[str] = Counter()
    discards: Counter[str] = Counter()
    defects: Counter[str] = Counter()
    pipeline_s = 0.0
    first_calls: list[dict[str, Any]] = []
    for i, scn in enumerate(scenarios):
        if i and (time.perf_counter() - t_start) / 60 > a.minutes:
            break
        t = time.perf_counter()
        n0 = len(rec.calls)
        run = generate_conversations([scn], seed=a.seed, workdir=work / f"conv{i}", llm=spec,
                                     verify_rounds=1, sft=False, dpo=False, resamples=0,
                                     resources={"llm": counting}, progress=False)
        took = time.perf_counter() - t
        pipeline_s += took
        if i == 0:
            first_calls = rec.calls[n0:n0 + a.replay]
        accepted = sum(1 for v in run.verified if v.accepted)
        # rubrics the writer failed and the rule rubric replaced (recorded in Conversation.agents)
        fallbacks = sum(c.agents.count(RULE_MARK) for c in run.results["conversations"].outputs)
        totals["rule_rubrics"] += fallbacks
        totals["rubrics"] += sum(len(c.rubrics) for c in run.results["conversations"].outputs)
        totals["accepted_model_rubrics"] += sum(1 for v in run.verified
                                                if v.accepted and RULE_MARK not in v.conversation.agents)
        for name, res in run.results.items():
            for f in res.failures:
                discards[f"{name}: {f.reason[:140]}"] += 1
        for v in run.verified:
            for r in v.discard_reasons:
                discards[f"verify: {r[:140]}"] += 1
            for verdict_ in v.verdicts:
                defects[verdict_.check] += 1
        calls = rec.calls[n0:]
        per_conv.append({"scenario": scn.id, "domain": scn.domain.name, "seconds": round(took),
                         "calls": len(calls), "messages": [len(v.conversation.messages) for v in run.verified],
                         "accepted": accepted, "simulated": len(run.results["simulate"].outputs),
                         "rule_rubrics": fallbacks})
        totals["attempted"] += 1
        totals["accepted"] += accepted
        print(f"conversation {i}: {json.dumps(per_conv[-1])}", flush=True)
        for v in run.verified:          # to read, as a buyer would (all of an accepted one)
            print(f"  {'ACCEPTED' if v.accepted else 'discarded'}: {'; '.join(v.discard_reasons)[:300]}")
            for m in v.conversation.messages[:None if v.accepted else 8]:
                cut = f"  [cut: heard {m.heard_text!r}]" if m.interruption else ""
                print(f"    {m.role}: {m.text}{cut}")
        # the figures so far (a run stopped later still leaves them)
        print("so far: " + ", ".join(f"{k}={v:.3f}" for k, v in
                                     _figures(rec, client, counting, totals, pipeline_s).items()), flush=True)
    model_s = sum(c["seconds"] for c in rec.calls)
    out_tokens = sum(c["output_tokens"] for c in rec.calls)
    in_tokens = sum(c["input_tokens"] for c in rec.calls)
    sc = client.structured_counts
    figures = _figures(rec, client, counting, totals, pipeline_s)
    print(f"model calls: {len(rec.calls)}; prompt tokens {in_tokens}, output tokens {out_tokens}; "
          f"{model_s:.0f} s in the model of {pipeline_s:.0f} s of pipeline; structured {dict(sc)}, "
          f"plan re-asks {counting.plan_reasks}", flush=True)
    # prefix reuse: the same calls of conversation 1, re-sent to a fresh model both ways
    rec._inner._llm = None
    del client, rec, counting
    gc.collect()
    if first_calls:
        off = replay(a.model, first_calls, prefix_cache=False, ctx=a.ctx, threads=a.threads)
        on = replay(a.model, first_calls, prefix_cache=True, ctx=a.ctx, threads=a.threads)
        figures["prefix_reuse_speedup"] = off / on
        print(f"replay of {len(first_calls)} calls of conversation 1: {off:.1f} s without prefix "
              f"reuse, {on:.1f} s with it", flush=True)
    if probe:
        caught = [n for n in PROBES if n != "control" and probe[n].get("names_broken_message")]
        print(f"verifier probe: corruptions rejected naming the broken message: {len(caught)} of "
              f"{len(PROBES) - 1} ({', '.join(caught) or 'none'}); clean control "
              f"{'rejected (false alarm)' if probe['control'].get('rejected') else 'passed'}"
              + ("" if "error" not in probe["control"] else " (verifier failed)"))
    print(f"scenarios run: {totals['attempted']} of {len(scenarios)} asked ({a.model}, "
          f"{a.threads} threads, context {a.ctx})")
    if totals["attempted"] < len(scenarios):    # the goal's denominator is "attempted": say so
        print(f"not attempted in the {a.minutes:g} minutes: {len(scenarios) - totals['attempted']} "
              f"scenario(s); counted as not verified: verified_of_asked= "
              f"{totals['accepted'] / max(1, len(scenarios)):.3f}")
    print(f"rubrics: {totals['rubrics']}, of which {totals['rule_rubrics']} rule-based after the "
          f"writer's answers were refused; accepted with model rubrics only: "
          f"{totals['accepted_model_rubrics']} of {totals['attempted']}")
    print("discard reasons:", json.dumps(dict(discards.most_common(12)), indent=1))
    print("verifier verdicts by check:", json.dumps(dict(defects.most_common())))
    for name in ("schema_failure_rate", "verified_rate", "prefix_reuse_speedup", "reasks_per_call",
                 "tokens_per_s", "conversations_per_hour"):
        if name in figures:
            print(f"{name}= {figures[name]:.3f} {verdict(name, figures[name])}")
        else:
            print(f"{name}= not measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
