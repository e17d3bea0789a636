"""The bad-input corpus walked through the real CLI (``bargein.cli:main``, or the installed
``bargein`` script where a fresh interpreter is needed): every case must end with its expected
outcome — a one-line error naming the input and the fix and a non-zero exit, or success — and
no traceback, no runaway, nothing written outside the sandbox's working folder, no partial
output, no surviving child process. See ``corpus.py`` for the cases; the summary line
(``bad_inputs_total= … bad_inputs_clean= …``) is printed at the end of the run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from corpus import CASES
from harness import RESULTS, Case, changed, judge, leftovers, run_forked, run_subprocess, snapshot, snapshot_one
from inputs import CANARY_KEY

from bargein.testing.loopback import LoopbackLLMServer


def _huge(req: dict) -> str:
    """A 100k-character token wherever the schema wants a string."""
    return json.dumps({"text": "z" * 100_000, "name": "z" * 100_000})


def _template(req: dict) -> str:
    return json.dumps({"text": "{{ 7*7 }} {% include '/etc/passwd' %}", "name": "{{ self }}"})


RESPONDERS = {"huge": _huge, "template": _template}


def _fill(s: str, subs: dict[str, str]) -> str:
    for k, v in subs.items():
        s = s.replace("{" + k + "}", v)
    return s


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, corpus_inputs: Path, tmp_path: Path, request):
    sb = tmp_path / "sandbox"
    cwd, outside = sb / "cwd", sb / "outside"
    cwd.mkdir(parents=True)
    outside.mkdir()
    (outside / "victim.txt").write_text("victim\n")
    subs = {"in": str(corpus_inputs), "good": str(corpus_inputs / "good"),
            "rel": str(corpus_inputs / "rel"), "outside": str(outside), "cwd": str(cwd),
            "canary": CANARY_KEY}
    if case.setup is not None:
        case.setup(sb, corpus_inputs)
    server = None
    if case.hub:
        subs["hub"] = request.getfixturevalue("loopback_hub").endpoint
    if case.llm is not None:
        kw = dict(case.llm)
        if "responder" in kw:
            kw["responder"] = RESPONDERS[kw["responder"]]
        server = LoopbackLLMServer(seed=16, **kw).start()
        subs["llm"] = server.openai_base_url
        subs["llm_root"] = server.openai_base_url.removesuffix("/v1")
    argv = [_fill(a, subs) for a in case.argv]
    env = {k: _fill(v, subs) for k, v in case.env}
    before_sb = snapshot(sb, skip=cwd)
    before_in = snapshot(corpus_inputs)
    outputs_before = {rel: snapshot_one(cwd / rel) for rel in case.outputs}
    try:
        run = run_subprocess if case.subprocess else run_forked
        res = run(argv, cwd, env, case.timeout_s)
    finally:
        if server is not None:
            server.stop()
    res.outside = changed(before_sb, snapshot(sb, skip=cwd)) + [
        f"inputs/{p}" for p in changed(before_in, snapshot(corpus_inputs))]
    res.outside = [p for p in res.outside if p not in ("stdout.txt", "stderr.txt")]
    res.leftovers = leftovers(cwd)
    problems = judge(case, res, cwd, outputs_before)
    if case.check is not None and not res.runaway:
        problems += case.check(sb, res)
    RESULTS[case.id] = {
        "command": case.command, "kind": case.kind, "pending": case.pending,
        "clean": not problems, "traceback": res.traceback, "runaway": res.runaway,
        "outside": bool(res.outside), "leftovers": bool(res.leftovers), "orphans": res.orphans,
        "code": res.code, "seconds": round(res.seconds, 2), "problems": problems,
        "error": next((x for x in res.stderr.splitlines() if x.lower().startswith("error")), ""),
    }
    shutil.rmtree(sb / "cwd" / "hf", ignore_errors=True)
    if problems and case.pending:
        pytest.xfail(f"pending on {case.pending}: " + "; ".join(problems)[:400])
    assert not problems, f"{case.id}: {' '.join(argv)}\n" + "\n".join(problems)


def test_corpus_covers_every_command_and_input_kind():
    from bargein.cli import COMMANDS, SCORE_COMMANDS

    commands = {c.command.split()[0] for c in CASES} | {
        c.command.split()[1] for c in CASES if c.command.startswith("score ")}
    missing = [c for c in [*COMMANDS, *SCORE_COMMANDS] if c not in commands and c != "backends"]
    assert not missing, f"commands without a bad-input case: {missing}"
    kinds = {c.kind for c in CASES}
    assert {"config", "jsonl", "json", "audio", "parquet", "release", "hub", "provider", "text",
            "cli"} <= kinds
    assert len(CASES) >= 150
