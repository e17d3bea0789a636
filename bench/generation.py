"""Conversation generation throughput: rule-based agents vs LLM agents over the loopback server.

    python bench/generation.py [--scenarios 50] [--latency 0.2]

50 scenarios go through planning, simulation, rubrics and verification twice, in the same run:
with the rule-based agents, and with every agent an LLM call (OpenAI SDK -> loopback server at
200 ms per request, a scripted model producing schema-valid answers). Prints conversations per
minute for both, their ratio, and ``llm_efficiency=`` = ideal critical path / wall, where the
ideal critical path is the longest chain of sequential LLM calls (a conversation's rounds are
sequential; rubrics and verification of different conversations are not) times the latency.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bargein.generators.conversation import simulate_stage  # noqa: E402
from bargein.generators.rubric import rubric_stage  # noqa: E402
from bargein.generators.scenarios import generate_scenarios  # noqa: E402
from doubles.scripted_llm import ScriptedLLM  # noqa: E402
from bargein.llm import get_llm  # noqa: E402
from bargein.runner import run_stage  # noqa: E402
from bargein.testing.loopback import LoopbackLLMServer  # noqa: E402
from bargein.verify.loop import verify_stage  # noqa: E402


def pipeline(scenarios, workdir: Path, llm_spec: str, resources=None) -> tuple[float, list]:
    """Planning + simulation, rubrics, verification; (wall seconds, per-stage results)."""
    kw = dict(workdir=workdir, seed=7, resources=resources, progress=False)
    t0 = time.perf_counter()
    sim = run_stage(simulate_stage(llm_spec), scenarios, **kw)
    rub = run_stage(rubric_stage(llm_spec), sim.outputs, **kw)
    ver = run_stage(verify_stage(llm_spec, max_rounds=3), rub.outputs, write_outputs=False, **kw)
    return time.perf_counter() - t0, [sim, rub, ver]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scenarios = generate_scenarios(args.scenarios, args.seed, workdir=tmp / "scn",
                                       progress=False).outputs
        n = len(scenarios)

        wall_off, res_off = pipeline(scenarios, tmp / "offline", "offline")
        ok_off = sum(v.accepted for v in res_off[2].outputs)

        spec = "openai:scripted-bench"
        model = ScriptedLLM(scenarios)
        with LoopbackLLMServer(responder=model, latency_s=args.latency) as srv:
            llm = get_llm(spec, workdir=tmp / "llm", base_url=srv.openai_base_url,
                          concurrency=max(64, n))
            wall_llm, res_llm = pipeline(scenarios, tmp / "llm", spec, resources={"llm": llm})
            requests = srv.request_count
        sim, rub, ver = res_llm
        ok_llm = sum(v.accepted for v in ver.outputs)
        # sequential calls per conversation: planner + assistant + user per round, no user
        # call after the farewell; rubrics are one parallel level; the verifier one call per round
        chain = max((3 * (sum(m.role == "assistant" for m in c.messages)) - 1 for c in sim.outputs),
                    default=0)
        ver_chain = max((2 * v.rounds + 1 for v in ver.outputs), default=0)
        ideal = (chain + 1 + ver_chain) * args.latency

    cpm_off = 60.0 * n / wall_off
    cpm_llm = 60.0 * n / wall_llm
    print(f"scenarios={n}")
    print(f"offline: wall={wall_off:.2f}s conversations/min={cpm_off:.0f} accepted={ok_off} "
          f"failed={len(res_off[0].failures)}")
    print(f"llm: latency={args.latency * 1000:.0f}ms wall={wall_llm:.2f}s conversations/min={cpm_llm:.1f} "
          f"accepted={ok_llm} failed={len(sim.failures)} requests={requests} "
          f"requests/s={requests / wall_llm:.0f}")
    print(f"offline_vs_llm_speed_ratio={cpm_off / cpm_llm:.1f}")
    print(f"ideal_critical_path={ideal:.2f}s (longest conversation: {chain} sequential calls)")
    print(f"llm_efficiency={ideal / wall_llm:.2f}")


if __name__ == "__main__":
    main()
