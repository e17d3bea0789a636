"""The bad-input corpus: every CLI command × every input kind, each with its expected outcome.

Placeholders in ``argv``: ``{in}`` the shared inputs folder (see ``inputs.py``), ``{good}`` a
real offline work dir, ``{rel}`` a real release folder, ``{outside}`` the sandbox folder no
command may touch, ``{hub}`` the loopback Hub endpoint. The command runs in ``sandbox/cwd``
(work dir ``work``). ``says[0]`` must be on the error line (it names the input); the rest
anywhere in the output ("fix" = the message tells the fix).

``pending`` marks a case whose outcome waits on a change another engineer is making (issue 16
items #3 #4 #6 #9 #10); it is run and reported apart until that lands.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from harness import Case

FIX = "fix"
EXIT_CODES = "compose: 16 #6 (exit codes)"
CONFIG_CHECKS = "compose: 16 #9 (config and option validation)"


CASES: list[Case] = []


def case(id: str, command: str, kind: str, argv, **kw) -> None:
    CASES.append(Case(id=id, command=command, kind=kind, argv=tuple(argv), **kw))


LLM_ENV = (("OPENAI_API_KEY", "{canary}"), ("OPENAI_BASE_URL", "{llm}"),
           ("ANTHROPIC_API_KEY", "{canary}"), ("ANTHROPIC_BASE_URL", "{llm_root}"))

# ---- 1. damaged text files × every command that reads JSONL ---------------------------------

F = "{in}/%s"
BAD_TEXT = {                 # file -> what the error must say besides the file name
    "latin1.jsonl": "utf-8", "binary.jsonl": "utf-8", "notjson.jsonl": "json", "deep.jsonl": "",
}
SOME_TEXT = {"utf16.jsonl": "utf-8", "array.jsonl": "", "wrong.jsonl": ""}
EXTRA_TEXT = {"nul.jsonl": "", "number.jsonl": "", "huge_line.jsonl": ""}

JSONL_CONSUMERS = [
    # (command, argv with {f}, outputs that must not appear/change after the error)
    ("verify", ["verify", "--conversations", "{f}"], ("work/verified.jsonl",)),
    ("baseline", ["baseline", "--llm", "smoke", "--items", "{f}"], ("work/baseline.jsonl",)),
    ("generate conversations", ["generate", "conversations", "--scenarios-file", "{f}",
                                "--no-exports"], ("work/conversations.jsonl",)),
    ("render", ["render", "--conversations", "{f}", "--workers", "1"], ("work/render.jsonl",)),
    ("mask", ["mask", "--rendered", "{f}", "--conversations", "{good}/verified.jsonl",
              "--workers", "1"], ("work/mask.jsonl",)),
    ("perturb", ["perturb", "--input", "{f}", "--out", "pt", "--vad", "energy"], ("pt",)),
    ("score ear", ["score", "ear", "--judge", "smoke", "--items", "{f}", "--responses", "{f}", "--out", "sc"], ("sc",)),
    ("score ihbench", ["score", "ihbench", "--judge", "smoke", "--release", "{rel}", "--responses", "{f}",
                       "--out", "sc"], ("sc",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--conversations", "{f}"], ("out",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--eval-items", "{f}"], ("out",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--sft", "{f}"], ("out",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--dpo", "train={f}"], ("out",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--timing", "{f}"], ("out",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--repair", "{f}"], ("out",)),
    ("release build", ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
                       "--conversations", "{good}/verified.jsonl", "--rendered", "{f}"], ("out",)),
    ("turnnat train", ["turnnat", "train", "--dialogues", "{f}", "--out", "m.npz",
                       "--vad", "energy"], ("m.npz",)),
]


def _slug(argv: list[str]) -> str:
    opts = [a.lstrip("-") for a in argv if a.startswith("--")]
    return "-".join(argv[:2] if argv[0] in ("release", "score", "generate", "turnnat")
                    else argv[:1]) + ("." + opts[0] if opts else "")


for name, must in {**BAD_TEXT, **SOME_TEXT, **EXTRA_TEXT}.items():
    consumers = (JSONL_CONSUMERS if name in BAD_TEXT else JSONL_CONSUMERS[:8] + [JSONL_CONSUMERS[10]]
                 if name in SOME_TEXT else JSONL_CONSUMERS[:3] + [JSONL_CONSUMERS[10]])
    for i, (cmd, argv, outs) in enumerate(consumers):
        f = F % name
        opt = next(a for a, b in zip(argv, argv[1:]) if "{f}" in b)
        args = [a.replace("{f}", f) for a in argv]
        says = (name, FIX) + ((must,) if must else ())
        # render and verify read line by line: a bad line is a failure with evidence and the
        # batch goes on; when every line failed the command ends in one error naming the file
        per_item = (cmd == "render" and not must.startswith("utf")) or cmd == "verify"
        if per_item:
            says = ({"render": "no dialogue was rendered", "verify": "every conversation failed"
                     }[cmd], f"{cmd}.failures.jsonl")
        case(f"text-{name.split('.')[0]}-{cmd.replace(' ', '_')}{opt}", cmd, "jsonl", args,
             says=says, outputs=() if per_item else outs)

case("score-turnnat-no-predictor", "score turnnat", "jsonl",
     ["score", "turnnat", "--pairs", "{in}/latin1.jsonl", "--out", "sc"],
     says=("predictor", FIX), outputs=("sc",))

# a folder, a missing file and an empty path where a JSONL file is expected
for cmd, argv, outs in (JSONL_CONSUMERS[0], JSONL_CONSUMERS[1], JSONL_CONSUMERS[9],
                        JSONL_CONSUMERS[11]):
    for what, path, must in (("folder", "{in}/a_folder", "a_folder"),
                             ("missing", "{in}/no_such_file.jsonl", "no_such_file.jsonl")):
        args = [a.replace("{f}", path) for a in argv]
        opt = next(a for a, b in zip(argv, argv[1:]) if "{f}" in b)
        case(f"{what}-{cmd.replace(' ', '_')}{opt}", cmd, "jsonl", args, says=(must, FIX),
             outputs=outs)

# empty and blank inputs: nothing to do is an error, not a silent success
for name in ("empty.jsonl", "blank.jsonl"):
    for cmd, argv, outs in (JSONL_CONSUMERS[0], JSONL_CONSUMERS[1], JSONL_CONSUMERS[2],
                            JSONL_CONSUMERS[9]):
        args = [a.replace("{f}", F % name) for a in argv]
        opt = next(a for a, b in zip(argv, argv[1:]) if "{f}" in b)
        case(f"{name.split('.')[0]}-{cmd.replace(' ', '_')}{opt}", cmd, "jsonl", args,
             outputs=() if cmd in ("verify", "baseline") else outs)

# ---- 2. hostile but valid records: must succeed, in time, with the text kept literal -------

case("hostile-verify-100k-token", "verify", "text",
     ["verify", "--conversations", "{good}/hostile/conv_huge_token.jsonl"], expect="ok",
     timeout_s=60)
case("hostile-verify-template-code", "verify", "text",
     ["verify", "--conversations", "{good}/hostile/conv_template.jsonl"], expect="ok")
case("hostile-verify-unicode-controls", "verify", "text",
     ["verify", "--conversations", "{good}/hostile/conv_unicode.jsonl"], expect="ok")
case("hostile-verify-crlf", "verify", "text",
     ["verify", "--conversations", "{good}/hostile/conv_crlf.jsonl"], expect="ok")
case("hostile-verify-bom", "verify", "text",
     ["verify", "--conversations", "{good}/hostile/conv_bom.jsonl"], expect="ok")
case("truncated-verify", "verify", "jsonl",            # line 1 is good: it is verified
     ["verify", "--conversations", "{good}/hostile/conv_truncated.jsonl"], expect="ok",
     says=("conv_truncated.jsonl:2: not JSON", FIX))
case("bad-role-verify", "verify", "jsonl",
     ["verify", "--conversations", "{good}/hostile/conv_bad_role.jsonl"],
     says=("every conversation failed", "conv_bad_role.jsonl:1", "role", FIX))
case("scenarios-as-conversations-verify", "verify", "jsonl",
     ["verify", "--conversations", "{good}/scenarios.jsonl"],
     says=("every conversation failed", "scenarios.jsonl:1", FIX))
case("conversations-as-scenarios-generate", "generate conversations", "jsonl",
     ["generate", "conversations", "--scenarios-file", "{good}/conversations.jsonl",
      "--no-exports"], says=("conversations.jsonl", FIX), outputs=("work/conversations.jsonl",))
def _template_literal(sb: Path, r) -> list[str]:
    """Template code in a scenario reaches the outputs as text, never evaluated."""
    text = "".join(p.read_text(errors="replace") for p in (sb / "cwd" / "work").glob("*.jsonl"))
    return [] if "{{ config.__class__" in text else ["template code did not reach the output "
                                                     "literally"]


case("hostile-generate-template-scenario", "generate conversations", "text",
     ["generate", "conversations", "--scenarios-file", "{good}/hostile/scn_template.jsonl",
      "--no-exports"], expect="any", check=_template_literal)
case("hostile-generate-100k-token-scenario", "generate conversations", "text",
     ["generate", "conversations", "--scenarios-file", "{good}/hostile/scn_huge_token.jsonl",
      "--no-exports"], expect="ok", timeout_s=60)
case("hostile-baseline-truncated", "baseline", "jsonl",
     ["baseline", "--llm", "smoke", "--items", "{good}/hostile/conv_truncated.jsonl"],
     says=("conv_truncated.jsonl", FIX), outputs=("work/baseline.jsonl",))
case("release-build-sft-no-messages", "release build", "jsonl",
     ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
      "--sft", "{good}/hostile/sft_no_messages.jsonl"], says=("sft", "messages", FIX),
     outputs=("out",))
case("release-build-sft-bad-messages", "release build", "jsonl",
     ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
      "--sft", "{good}/hostile/sft_bad_messages.jsonl"], says=("sft", FIX), outputs=("out",))
case("release-build-dpo-missing", "release build", "jsonl",
     ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0",
      "--dpo", "{good}/hostile/dpo_missing.jsonl"], says=("dpo", FIX), outputs=("out",))
case("score-ihbench-unknown-ids", "score ihbench", "jsonl",
     ["score", "ihbench", "--judge", "smoke", "--release", "{rel}", "--responses", "{good}/hostile/resp_wrong_id.jsonl",
      "--out", "sc"], says=("resp", FIX), outputs=("sc",))
case("score-ihbench-response-not-text", "score ihbench", "jsonl",
     ["score", "ihbench", "--judge", "smoke", "--release", "{rel}", "--responses",
      "{good}/hostile/resp_not_str.jsonl", "--out", "sc"], says=("resp", FIX), outputs=("sc",))

# ---- 3. configs --------------------------------------------------------------------------

CONFIG_ERRORS = {
    "latin1.yaml": ("utf-8",), "utf16.yaml": ("utf-8",), "binary.yaml": ("utf-8",),
    "list.yaml": ("mapping",), "scalar.yaml": ("mapping",), "unknown_key.yaml": ("nn",),
    "wrong_type.yaml": ("scenarios.n",), "negative_n.yaml": ("scenarios.n",),
    "python_tag.yaml": ("yaml",), "python_name.yaml": ("yaml",), "laughs.yaml": ("alias",),
    "huge.yaml": ("mb",), "deep.yaml": (), "syntax.yaml": ("yaml",), "tabs.yaml": ("yaml",),
    "name_traversal.yaml": ("name",), "name_space.yaml": ("name",),
    "version_bad.yaml": ("version",), "sample_rate.yaml": ("sample_rate",),
    "noise_bogus.yaml": ("noise",), "budget_negative.yaml": ("budget_usd",),
    "workers_zero.yaml": ("workers",), "types_bogus.yaml": ("types",),
    "signals_bogus.yaml": ("signals",), "verify_rounds.yaml": ("verify_rounds",),
    "dup_keys.yaml": ("scenarios.n",), "null_section.yaml": ("audio",),
}
for name, must in CONFIG_ERRORS.items():
    case(f"config-{name.split('.')[0]}", "build", "config",
         ["build", "--config", f"{{in}}/configs/{name}", "--out", "rel_out"],
         says=(name,) + must, outputs=("rel_out", "work"))
case("config-print-python-tag", "build", "config",
     ["build", "--config", "{in}/configs/python_tag.yaml", "--print-config"],
     says=("python_tag.yaml", "yaml"))
for name, must in {"empty.yaml": "empty", "llm_bogus.yaml": "llm", "snr_nan.yaml": "snr_db",
                   "domains_bogus.yaml": "moon_base"}.items():
    case(f"config-{name.split('.')[0]}", "build", "config",
         ["build", "--config", f"{{in}}/configs/{name}", "--out", "rel_out"],
         says=(name, must), outputs=("rel_out",), pending=CONFIG_CHECKS)
case("config-missing", "build", "config", ["build", "--config", "{in}/configs/nope.yaml"],
     says=("nope.yaml", FIX))
case("config-folder", "build", "config", ["build", "--config", "{in}/configs"],
     says=("configs", FIX))
case("config-preset-traversal", "build", "config", ["build", "--preset", "../../etc/passwd"],
     says=("preset", "demo"))
case("config-none", "build", "config", ["build"], says=("--config", "--preset"))
case("config-print-demo-readme", "build", "config", ["build", "--print-config", "demo"],
     expect="ok", says=("scenarios",), pending=CONFIG_CHECKS)

# ---- 4. output folders: never replace what bargein did not make ------------------------------


def _precious(sb: Path, inp: Path) -> None:
    (sb / "cwd" / "d").mkdir(parents=True)
    (sb / "cwd" / "d" / "precious.txt").write_text("x\n")


def _precious_kept(sb: Path, r) -> list[str]:
    p = sb / "cwd" / "d" / "precious.txt"
    return [] if p.is_file() and p.read_text() == "x\n" else ["precious.txt was lost"]


def _a_file(sb: Path, inp: Path) -> None:
    (sb / "cwd").mkdir(parents=True, exist_ok=True)
    (sb / "cwd" / "f").write_text("x\n")


RB = ["release", "build", "--name", "t", "--version", "1.0.0", "--sft", "{good}/sft.jsonl"]
case("out-precious-release-build", "release build", "cli", [*RB, "--out", "d"],
     setup=_precious, check=_precious_kept, says=("d", "not a bargein", FIX))
case("out-dot-release-build", "release build", "cli", [*RB, "--out", "."],
     says=("--out", "current folder", FIX))
case("out-dotdot-release-build", "release build", "cli", [*RB, "--out", ".."],
     says=("--out", FIX))
case("out-root-release-build", "release build", "cli", [*RB, "--out", "/"], says=("--out", FIX))
case("out-home-release-build", "release build", "cli", [*RB, "--out", "h"],
     env=(("HOME", "{cwd}/h"),), says=("--out", "home", FIX))
case("out-file-release-build", "release build", "cli", [*RB, "--out", "f"], setup=_a_file,
     says=("f", "file", FIX), outputs=("f",))
case("out-workdir-release-build", "release build", "cli",
     ["--workdir", "w", *RB, "--out", "w"],
     setup=lambda sb, inp: ((sb / "cwd" / "w").mkdir(parents=True),
                            (sb / "cwd" / "w" / "stats.json").write_text("{}")),
     says=("--out", FIX), outputs=("w",))
case("out-empty-string-release-build", "release build", "cli", [*RB, "--out", ""],
     says=("--out", FIX))
case("out-precious-build", "build", "cli",
     ["build", "--preset", "demo", "--out", "d"], setup=_precious, check=_precious_kept,
     says=("d", "not a bargein", FIX), timeout_s=60)
case("out-dot-build", "build", "cli", ["build", "--preset", "demo", "--out", "."],
     says=("--out", FIX), timeout_s=60)
case("out-rebuild-own-release", "release build", "cli", [*RB, "--out", "r2"],
     setup=lambda sb, inp: shutil.copytree(inp / "rel", sb / "cwd" / "r2"), expect="ok",
     says=("built t 1.0.0",))
case("name-traversal-release-build", "release build", "cli",
     ["release", "build", "--out", "out", "--name", "../x y", "--version", "1.0.0",
      "--sft", "{good}/sft.jsonl"], says=("name", FIX), outputs=("out",))
case("name-slash-release-build", "release build", "cli",
     ["release", "build", "--out", "out", "--name", "a/b", "--version", "1.0.0",
      "--sft", "{good}/sft.jsonl"], says=("name", FIX), outputs=("out",))
case("version-bad-release-build", "release build", "cli",
     ["release", "build", "--out", "out", "--name", "t", "--version", "1.0",
      "--sft", "{good}/sft.jsonl"], says=("version", FIX), outputs=("out",))
case("version-traversal-release-build", "release build", "cli",
     ["release", "build", "--out", "out", "--name", "t", "--version", "../../1.0.0",
      "--sft", "{good}/sft.jsonl"], says=("version", FIX), outputs=("out",))
case("nothing-release-build", "release build", "cli",
     ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0"],
     says=("nothing to release", FIX), outputs=("out",))
case("previous-not-release", "release build", "release",
     [*RB, "--out", "out", "--previous", "{in}/a_folder"], says=("a_folder",), outputs=("out",))
case("schema-out-file", "schema", "cli", ["schema", "--out", "f"], setup=_a_file,
     says=("f", FIX), outputs=("f",))
case("perturb-out-file", "perturb", "cli",
     ["perturb", "--input", "{in}/audio/stereo", "--out", "f", "--vad", "energy"],
     setup=_a_file, says=("f", FIX), outputs=("f",))


# ---- 5. provenance, stats, voice maps (JSON side inputs) -----------------------------------

for name, must in {"latin1.json": "utf-8", "list.json": "object", "broken.json": "json",
                   "deep.json": "json", "binary.jsonl": "utf-8"}.items():
    case(f"provenance-{name.split('.')[0]}", "release build", "json",
         [*RB, "--out", "out", "--provenance", F % name], says=(name, FIX, must),
         outputs=("out",))
    case(f"stats-{name.split('.')[0]}", "release build", "json",
         [*RB, "--out", "out", "--stats", F % name], says=(name, FIX), outputs=("out",))
    case(f"voice-map-{name.split('.')[0]}", "render", "json",
         ["render", "--conversations", "{good}/verified.jsonl", "--voice-map", F % name,
          "--workers", "1"], says=(name,), outputs=("work/render.jsonl",))
case("schedule-latin1", "score timing", "json",
     ["score", "timing", "--recordings", "{in}/audio/stereo", "--schedule", "{in}/latin1.json",
      "--vad", "energy", "--out", "sc"], says=("latin1.json", FIX), outputs=("sc",))
case("schedule-list", "score timing", "json",
     ["score", "timing", "--recordings", "{in}/audio/stereo", "--schedule", "{in}/list.json",
      "--vad", "energy", "--out", "sc"], says=("list.json",), outputs=("sc",))

# ---- 6. option values ------------------------------------------------------------------------

GOOD_V = "{good}/verified.jsonl"
OPTS = [
    ("mask-snr-nan", "mask", ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl",
                              "--conversations", GOOD_V, "--snr", "nan"], ("snr",), None),
    ("mask-snr-neg-inf", "mask", ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl",
                                  "--conversations", GOOD_V, "--snr", "-inf"], ("snr",), None),
    ("mask-snr-inf", "mask", ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl",
                              "--conversations", GOOD_V, "--snr", "inf"], ("snr",), None),
    ("mask-fade-negative", "mask", ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl",
                                    "--conversations", GOOD_V, "--fade-ms", "-5"],
     ("fade",), None),
    ("mask-signals-bogus", "mask", ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl",
                                    "--conversations", GOOD_V, "--signals", "laser"],
     ("laser",), None),
    ("mask-windows-bogus", "mask", ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl",
                                    "--conversations", GOOD_V, "--windows", "wide"],
     ("wide",), None),
    ("mask-no-source", "mask", ["mask"], ("--rendered",), None),
    ("mask-qa-bad-parquet", "mask", ["mask", "--qa-dataset", "{in}/parquet/bad.parquet"],
     ("bad.parquet",), None),
    ("mask-qa-missing", "mask", ["mask", "--qa-dataset", "{in}/nope_dataset"], ("nope_dataset",),
     None),
    ("perturb-workers-negative", "perturb", ["perturb", "--input", "{in}/audio/stereo",
                                             "--workers", "-2", "--out", "pt"], ("--workers",),
     CONFIG_CHECKS),
    ("perturb-workers-zero", "perturb", ["perturb", "--input", "{in}/audio/stereo",
                                         "--workers", "0", "--out", "pt"], ("--workers",),
     CONFIG_CHECKS),
    ("perturb-types-bogus", "perturb", ["perturb", "--input", "{in}/audio/stereo", "--types",
                                        "very_late", "--out", "pt"], ("very_late",), None),
    ("perturb-per-type-zero", "perturb", ["perturb", "--input", "{in}/audio/stereo",
                                          "--per-type", "0", "--out", "pt"], ("--per-type",),
     None),
    ("perturb-vad-bogus", "perturb", ["perturb", "--input", "{in}/audio/stereo", "--vad",
                                      "psychic", "--out", "pt"], ("psychic",), None),
    ("perturb-sample-rate-zero", "perturb", ["perturb", "--input", "{in}/audio/stereo",
                                             "--sample-rate", "0", "--out", "pt"],
     ("--sample-rate",), None),
    ("render-sample-rate-7", "render", ["render", "--conversations", GOOD_V, "--sample-rate",
                                        "7"], ("sample_rate",), None),
    ("render-snr-nan", "render", ["render", "--conversations", GOOD_V, "--noise", "white",
                                  "--snr", "nan"], ("snr",), None),
    ("render-workers-zero", "render", ["render", "--conversations", GOOD_V, "--workers", "0"],
     ("--workers",), None),
    ("render-voices-bogus", "render", ["render", "--conversations", GOOD_V, "--voices",
                                       "user=nobody:nothing", "--workers", "1"],
     ("nobody",), None),
    ("render-voices-no-equals", "render", ["render", "--conversations", GOOD_V, "--voices",
                                           "piper:joe"], ("--voices",), None),
    ("generate-n-zero", "generate scenarios", ["generate", "scenarios", "--n", "0"], ("--n",),
     CONFIG_CHECKS),
    ("generate-n-negative", "generate scenarios", ["generate", "scenarios", "--n", "-5"],
     ("--n",), None),
    ("generate-domains-bogus", "generate scenarios", ["generate", "scenarios", "--n", "2",
                                                      "--domains", "moon_base"],
     ("moon_base",), None),
    ("generate-llm-bogus", "generate scenarios", ["generate", "scenarios", "--n", "2", "--llm",
                                                  "bogus"], ("bogus",), None),
    ("generate-llm-empty-model", "generate scenarios", ["generate", "scenarios", "--n", "2",
                                                        "--llm", "openai:"], ("openai:",), None),
    ("generate-budget-negative", "generate scenarios", ["generate", "scenarios", "--n", "2",
                                                        "--budget", "-1"], ("--budget",),
     CONFIG_CHECKS),
    ("generate-budget-nan", "generate scenarios", ["generate", "scenarios", "--n", "2",
                                                   "--budget", "nan"], ("--budget",),
     CONFIG_CHECKS),
    ("generate-no-key", "generate scenarios", ["generate", "scenarios", "--n", "2", "--llm",
                                               "openai:gpt-4o-mini"], ("OPENAI_API_KEY",), None),
    ("conversations-scenarios-zero", "generate conversations",
     ["generate", "conversations", "--scenarios", "0"], ("--scenarios",), None),
    ("verify-rounds-negative", "verify", ["verify", "--conversations", GOOD_V, "--max-rounds",
                                          "-1"], ("--max-rounds",), None),
    ("baseline-llm-bogus", "baseline", ["baseline", "--items", "{good}/eval_items.jsonl",
                                        "--llm", "nope:x"], ("nope",), EXIT_CODES),
    ("respond-epochs-zero", "respond", ["respond", "--release", "{rel}", "--llm",
                                        "openai:gpt-4o-mini", "--epochs", "0", "--out",
                                        "r.jsonl"], ("--epochs",), None),
    ("respond-concurrency-zero", "respond", ["respond", "--release", "{rel}", "--llm",
                                             "openai:gpt-4o-mini", "--concurrency", "0",
                                             "--out", "r.jsonl"], ("--concurrency",),
     CONFIG_CHECKS),
    ("respond-temperature-nan", "respond", ["respond", "--release", "{rel}", "--llm",
                                            "openai:gpt-4o-mini", "--temperature", "nan",
                                            "--out", "r.jsonl"], ("--temperature",),
     CONFIG_CHECKS),
    ("respond-out-folder", "respond", ["respond", "--release", "{rel}", "--llm",
                                       "openai:gpt-4o-mini", "--out", "{in}/a_folder"],
     ("ihbench",), None),
    ("ihbench-bootstrap-negative", "score ihbench",
     ["score", "ihbench", "--judge", "smoke", "--release", "{rel}", "--responses", "{in}/responses.jsonl", "--epochs", "1",
      "--bootstrap", "-1"], ("--bootstrap",), None),
    ("ihbench-judge-bogus", "score ihbench", ["score", "ihbench", "--release", "{rel}", "--judge",
                                              "nope:x", "--responses", "{in}/responses.jsonl", "--epochs", "1"],
     ("nope",), None),
    ("ihbench-epochs-zero", "score ihbench", ["score", "ihbench", "--judge", "smoke", "--release", "{rel}",
                                              "--responses", "{in}/responses.jsonl",
                                              "--epochs", "0"], ("--epochs",), CONFIG_CHECKS),
    ("turnnat-predictor-bogus", "score turnnat", ["score", "turnnat", "--pairs",
                                                  "{good}/sft.jsonl", "--predictor", "x:y"],
     ("predictor",), None),
    ("turnnat-tbu-nan", "turnnat train", ["turnnat", "train", "--dialogues", "{in}/audio/stereo",
                                          "--tbu-weight", "nan", "--out", "m.npz"],
     ("--tbu-weight",), CONFIG_CHECKS),
    ("timing-recordings-missing", "score timing", ["score", "timing", "--recordings",
                                                   "{in}/nowhere"], ("nowhere",), None),
    ("release-test-percent-101", "release build", [*RB, "--out", "out", "--test-percent", "101"],
     ("--test-percent",), None),
    ("release-sft-kv-bad", "release build",
     ["release", "build", "--out", "out", "--name", "t", "--version", "1.0.0", "--sft",
      "train=a=b", "--sft", "x"], ("--sft",), None),
    ("release-config-bogus", "release build", [*RB, "--out", "out", "--config", "nonsense"],
     ("nonsense",), None),
    ("prompts-show-traversal", "prompts show", ["prompts", "show", "../../../etc/passwd"],
     ("passwd",), None),
    ("prompts-show-missing", "prompts show", ["prompts", "show", "no_such_prompt"],
     ("no_such_prompt",), None),
    ("workdir-is-file", "generate scenarios", ["--workdir", "f", "generate", "scenarios", "--n",
                                               "2"], ("f",), None),
    ("unknown-command", "cli", ["frobnicate"], ("frobnicate",), None),
    ("unknown-option", "cli", ["verify", "--conversatoins", GOOD_V], ("--conversatoins",), None),
]
for id_, cmd, argv, says, pending in OPTS:
    setup = _a_file if id_ == "workdir-is-file" else None
    llm = {} if id_.startswith("respond-") else None
    case(id_, cmd, "cli", argv, says=says, pending=pending, setup=setup,
         outputs=("work/mask.jsonl", "pt", "work/render.jsonl"), llm=llm,
         env=LLM_ENV if llm is not None else ())
case("mask-snr-neg-inf-no-noise-files", "mask", "cli",
     ["mask", "--rendered", "{in}/audio/rendered_nosegs.jsonl", "--conversations", GOOD_V,
      "--snr", "-inf"], says=("snr",),
     check=lambda sb, r: [f"noise files left: {p}" for p in (sb / "cwd").rglob("*.flac")])

# ---- 7. audio and Parquet inputs ----------------------------------------------------------------

for folder, must in {"mono": "mono.wav", "empty": "empty.wav", "garbage": "garbage.wav",
                     "textflac": "notes.flac", "nan": "nan.wav", "short": "short.wav",
                     "eight": "eight.wav"}.items():
    case(f"perturb-audio-{folder}", "perturb", "audio",
         ["perturb", "--input", f"{{in}}/audio/{folder}", "--out", "pt", "--vad", "energy",
          "--per-type", "1"], says=("no perturbation pair", "skipped.jsonl"), timeout_s=60)
    case(f"turnnat-train-audio-{folder}", "turnnat train", "audio",
         ["turnnat", "train", "--dialogues", f"{{in}}/audio/{folder}", "--out", "m.npz",
          "--vad", "energy"], outputs=("m.npz",), timeout_s=60)
case("perturb-audio-none", "perturb", "audio",
     ["perturb", "--input", "{in}/audio/noaudio", "--out", "pt"], says=("noaudio",),
     outputs=("pt",))
for folder in ("collide", "nonascii"):
    case(f"perturb-ids-{folder}", "perturb", "audio",
         ["perturb", "--input", f"{{in}}/audio/{folder}", "--out", "pt", "--vad", "energy",
          "--per-type", "1", "--types", "late_response"], expect="any", timeout_s=90,
         check=lambda sb, r: ["input ids collided"] if "duplicate" in r.stderr.lower() else [])
case("perturb-rendered-missing-audio", "perturb", "audio",
     ["perturb", "--input", "{in}/audio/rendered_missing.jsonl", "--out", "pt", "--vad", "energy"],
     says=("no perturbation pair", "skipped.jsonl"))
case("timing-audio-garbage", "score timing", "audio",
     ["score", "timing", "--recordings", "{in}/audio/garbage", "--vad", "energy", "--out", "sc"],
     says=("no recording", "failures.jsonl"))
case("mask-rendered-missing-audio", "mask", "audio",
     ["mask", "--rendered", "{in}/audio/rendered_missing.jsonl", "--conversations", GOOD_V,
      "--workers", "1"], says=("mask",))
for name, must in {"bad.parquet": "bad.parquet", "truncated.parquet": "truncated.parquet",
                   "noaudio.parquet": "audio", "nullaudio.parquet": "audio",
                   "norows.parquet": "norows"}.items():
    case(f"perturb-parquet-{name.split('.')[0]}", "perturb", "parquet",
         ["perturb", "--input", f"{{in}}/parquet/{name}", "--out", "pt", "--vad", "energy"],
         says=(must,), outputs=("pt",))
case("perturb-parquet-traversal-id", "perturb", "parquet",
     ["perturb", "--input", "{in}/parquet/traversal_id.parquet", "--out", "pt", "--vad", "energy",
      "--per-type", "1"], expect="any")
case("timing-parquet-bad", "score timing", "parquet",
     ["score", "timing", "--recordings", "{in}/parquet/bad.parquet", "--out", "sc"],
     says=("bad.parquet",), outputs=("sc",))
case("perturb-audio-column-bogus", "perturb", "parquet",
     ["perturb", "--input", "{in}/parquet/traversal_id.parquet", "--audio-column", "nope",
      "--out", "pt"], says=("nope",), outputs=("pt",))

# ---- 8. release folders -------------------------------------------------------------------------

REL_BAD = {"no_manifest": "manifest", "tampered": "checksum", "extra_file": "sneaky.txt",
           "manifest_notjson": "manifest", "manifest_latin1": "manifest",
           "manifest_array": "manifest", "manifest_dotdot": "outside",
           "card_outside": "outside", "empty": "manifest", "a_file": "a_file"}
for name, must in REL_BAD.items():
    case(f"release-verify-{name}", "release verify", "release",
         ["release", "verify", f"{{in}}/releases/{name}"], says=(name, must))
    if name in ("tampered", "card_outside", "manifest_dotdot", "no_manifest"):
        case(f"release-pull-folder-{name}", "release pull", "release",
             ["release", "pull", f"{{in}}/releases/{name}"], says=(name, must))
        case(f"score-ihbench-release-{name}", "score ihbench", "release",
             ["score", "ihbench", "--judge", "smoke", "--release", f"{{in}}/releases/{name}", "--out", "sc",
              "--responses", "{in}/responses.jsonl", "--epochs", "1"],
             says=(name, must), outputs=("sc",))
        case(f"respond-release-{name}", "respond", "release",
             ["respond", "--release", f"{{in}}/releases/{name}", "--llm", "openai:gpt-4o-mini",
              "--out", "r.jsonl"], says=(name, must), outputs=("r.jsonl",))
        case(f"release-diff-{name}", "release diff", "release",
             ["release", "diff", "{rel}", f"{{in}}/releases/{name}"], says=(name, must))
case("release-verify-dot", "release verify", "release", ["release", "verify", "."],
     says=("manifest", FIX))
case("release-push-tampered", "release push", "release",
     ["release", "push", "{in}/releases/tampered", "--repo", "org/x", "--dry-run"],
     says=("tampered", "checksum"))
case("release-push-card-outside", "release push", "release",
     ["release", "push", "{in}/releases/card_outside", "--repo", "org/x", "--dry-run"],
     says=("card_outside", "outside"))

# ---- 9. Hub names and revisions (refused before any request) ----------------------------------

HUB_REFS = {
    "org/..@v1": "org/..", "org/name@../../../../outside/victim.txt": "revision",
    "org/name@": "org/name@", "org/name@a/b": "revision", "../x@v1": "../x",
    "org/name/extra@v1": "org/name/extra", "org/na me@v1": "org/na me",
    "org/name@v1 ; rm -rf": "revision", "/etc/passwd": "/etc/passwd",
    "org/name@..": "revision", "org/name@v1\\..\\x": "revision", "org/--x@v1": "org/--x",
    "org/name@.hidden": "revision", "org/" + "n" * 200 + "@v1": "org/nnn",
}
for i, (ref, must) in enumerate(HUB_REFS.items()):
    case(f"release-pull-ref-{i:02d}", "release pull", "hub", ["release", "pull", ref, "--out", "p"],
         says=(must, FIX), outputs=("p",))
for i, ref in enumerate(("org/..@v1", "evil/rel@../../../../outside/victim.txt")):
    case(f"release-diff-ref-{i}", "release diff", "hub", ["release", "diff", ref, "{rel}"],
         says=("..", FIX))
    case(f"respond-ref-{i}", "respond", "hub", ["respond", "--release", ref, "--llm",
                                                 "openai:gpt-4o-mini", "--out", "r.jsonl"],
         says=("..", FIX), outputs=("r.jsonl",))
    case(f"score-ihbench-ref-{i}", "score ihbench", "hub",
         ["score", "ihbench", "--judge", "smoke", "--release", ref, "--responses", "{in}/responses.jsonl", "--epochs", "1"],
         says=("..", FIX))
for i, repo in enumerate(("org/..", "a/b/c", "../x", "org/na me", "org", "org/x@v1")):
    case(f"release-push-repo-{i}", "release push", "hub",
         ["release", "push", "{rel}", "--repo", repo, "--dry-run"], says=(repo, FIX))
case("release-push-no-token", "release push", "hub",
     ["release", "push", "{rel}", "--repo", "org/x"], says=("token", FIX))

# ---- 10. a hostile Hub (loopback, real huggingface_hub client in a fresh process) -------------

HUB_ENV = (("HF_HUB_OFFLINE", "0"), ("HF_HUB_DISABLE_XET", "1"), ("HF_HOME", "{cwd}/hf"))


def _victim_kept(sb: Path, r) -> list[str]:
    v = sb / "outside" / "victim.txt"
    return [] if v.read_text() == "victim\n" else ["victim.txt outside was overwritten"]


case("hub-pull-revision-traversal", "release pull", "hub",
     ["release", "pull", "evil/rel@../../../../../outside/victim.txt", "--endpoint", "{hub}"],
     hub="release", env=HUB_ENV, subprocess=True, says=("revision", FIX), check=_victim_kept)
case("hub-pull-dotdot-file", "release pull", "hub",
     ["release", "pull", "evil/dots@v1.0.0", "--endpoint", "{hub}", "--out", "p"],
     hub="dots", env=HUB_ENV, subprocess=True, says=("..", FIX), outputs=("p",))
case("hub-pull-card-outside", "release pull", "hub",
     ["release", "pull", "evil/card@v1.0.0", "--endpoint", "{hub}", "--out", "p"],
     hub="card", env=HUB_ENV, subprocess=True, says=("outside",), outputs=("p",))
case("hub-pull-missing-revision", "release pull", "hub",
     ["release", "pull", "evil/rel@v9.9.9", "--endpoint", "{hub}", "--out", "p"],
     hub="release", env=HUB_ENV, subprocess=True, says=("v9.9.9", FIX), outputs=("p",))
case("hub-pull-missing-repo", "release pull", "hub",
     ["release", "pull", "evil/none@v1.0.0", "--endpoint", "{hub}", "--out", "p"],
     hub="release", env=HUB_ENV, subprocess=True, says=("evil/none", FIX), outputs=("p",))
case("hub-pull-into-precious", "release pull", "hub",
     ["release", "pull", "evil/rel@v1.0.0", "--endpoint", "{hub}", "--out", "d"],
     hub="release", env=HUB_ENV, subprocess=True, setup=_precious, check=_precious_kept,
     says=("d", FIX))
case("hub-pull-ok", "release pull", "hub",
     ["release", "pull", "evil/rel@v1.0.0", "--endpoint", "{hub}", "--out", "p", "--no-check"],
     hub="release", env=HUB_ENV, subprocess=True, expect="ok", says=("checksums ok",))
case("hub-pull-dead-endpoint", "release pull", "hub",
     ["release", "pull", "evil/rel@v1.0.0", "--endpoint", "http://127.0.0.1:9", "--out", "p"],
     env=HUB_ENV, subprocess=True, says=("evil/rel", FIX), outputs=("p",), timeout_s=120)

# ---- 11. provider answers (loopback OpenAI server, official SDK) -------------------------------


def _no_canary(sb: Path, r) -> list[str]:
    from inputs import CANARY_KEY

    hits = [str(p.relative_to(sb)) for p in (sb / "cwd").rglob("*")
            if p.is_file() and CANARY_KEY.encode() in p.read_bytes()]
    if CANARY_KEY in r.stdout or CANARY_KEY in r.stderr:
        hits.append("<console>")
    return [f"API key leaked into {hits}"] if hits else []


GEN = ["generate", "scenarios", "--n", "2", "--seed", "5", "--domains", "telecom",
       "--llm", "openai:gpt-4o-mini"]
for kind in ("invalid_json", "schema_invalid", "truncated", "malformed_json"):
    case(f"llm-all-{kind}", "generate scenarios", "provider", GEN,
         llm={"fault_rate": 1.0, "fault_kinds": [kind]}, env=LLM_ENV, check=_no_canary,
         says=("scenario",), pending=EXIT_CODES, timeout_s=120)
case("llm-401", "generate scenarios", "provider", GEN, llm={"api_key": "sk-other"},
     env=LLM_ENV, check=_no_canary, says=("401",), pending=EXIT_CODES, timeout_s=120)
case("llm-401-anthropic", "generate scenarios", "provider",
     [*GEN[:-1], "anthropic:claude-3-5-haiku-latest"], llm={"api_key": "sk-other"}, env=LLM_ENV,
     check=_no_canary, says=("401",), pending=EXIT_CODES, timeout_s=120)
case("llm-huge-answers", "generate scenarios", "provider", GEN,
     llm={"responder": "huge"}, env=LLM_ENV, check=_no_canary, expect="any", timeout_s=120)
case("llm-template-answers", "generate scenarios", "provider", GEN,
     llm={"responder": "template"}, env=LLM_ENV, check=_no_canary, expect="any", timeout_s=120)
case("llm-verify-invalid", "verify", "provider",
     ["verify", "--conversations", "{good}/hostile/conv_template.jsonl", "--llm",
      "openai:gpt-4o-mini"], llm={"fault_rate": 1.0, "fault_kinds": ["invalid_json"]},
     env=LLM_ENV, check=_no_canary, expect="any", timeout_s=120)
case("llm-baseline-invalid", "baseline", "provider",
     ["baseline", "--items", "{good}/eval_items.jsonl", "--llm", "openai:gpt-4o-mini"],
     llm={"fault_rate": 1.0, "fault_kinds": ["truncated"]}, env=LLM_ENV, check=_no_canary,
     expect="any", timeout_s=120)
case("llm-respond-huge", "respond", "provider",
     ["respond", "--release", "{rel}", "--llm", "openai:gpt-4o-mini", "--epochs", "1",
      "--out", "r.jsonl"], llm={"responder": "huge"}, env=LLM_ENV, check=_no_canary,
     expect="any", timeout_s=120)
case("llm-judge-invalid", "score ihbench", "provider",
     ["score", "ihbench", "--release", "{rel}", "--judge", "openai:gpt-4o-mini",
      "--responses", "{in}/responses.jsonl", "--epochs", "1", "--bootstrap", "10"],
     llm={"fault_rate": 1.0, "fault_kinds": ["schema_invalid"]}, env=LLM_ENV, check=_no_canary,
     expect="any", timeout_s=120)

# ---- 12. inspect and score fdb ---------------------------------------------------------------

# the inspector is a viewer: it shows a damaged release (its audit) rather than refusing it
for name in ("tampered", "card_outside", "no_manifest"):
    case(f"inspect-release-{name}", "inspect", "release",
         ["inspect", f"{{in}}/releases/{name}", "--out", "site"], expect="any")
case("inspect-release-a_file", "inspect", "release",
     ["inspect", "{in}/releases/a_file", "--out", "site"], says=("a_file",), outputs=("site",))
case("inspect-out-precious", "inspect", "cli", ["inspect", "{rel}", "--out", "d"],
     setup=_precious, check=_precious_kept, says=("d", "not a bargein", FIX))
case("inspect-out-dot", "inspect", "cli", ["inspect", "{rel}", "--out", "."],
     says=("--out", FIX))
case("inspect-responses-latin1", "inspect", "jsonl",
     ["inspect", "{rel}", "--out", "site", "--responses", "{in}/latin1.jsonl"],
     says=("latin1.jsonl", FIX), outputs=("site",))
case("inspect-ref-traversal", "inspect", "hub", ["inspect", "org/..@v1", "--out", "site"],
     says=("org/..", FIX), outputs=("site",))
for folder in ("garbage", "mono", "noaudio"):
    case(f"fdb-audio-{folder}", "score fdb", "audio",
         ["score", "fdb", "--recordings", f"{{in}}/audio/{folder}", "--out", "sc", "--no-asr"],
         says=(), timeout_s=60)
case("fdb-gt-latin1", "score fdb", "json",
     ["score", "fdb", "--recordings", "{in}/audio/stereo", "--gt", "{in}/latin1.json",
      "--out", "sc", "--no-asr"], says=("latin1.json",), outputs=("sc",))
case("fdb-recordings-parquet-bad", "score fdb", "parquet",
     ["score", "fdb", "--recordings", "{in}/parquet/bad.parquet", "--out", "sc", "--no-asr"],
     says=("bad.parquet",), outputs=("sc",))

case("validate-judge-bogus", "score validate-judge", "cli",
     ["score", "validate-judge", "--judge", "nope:x", "--limit", "2"], says=("nope",))
case("validate-judge-limit-zero", "score validate-judge", "cli",
     ["score", "validate-judge", "--judge", "smoke", "--limit", "0"], says=("--limit",))
case("validate-judge-401", "score validate-judge", "provider",
     ["score", "validate-judge", "--judge", "openai:gpt-4o-mini", "--limit", "2"],
     llm={"api_key": "sk-other"}, env=LLM_ENV, check=_no_canary, says=("401",), timeout_s=120)

IDS = [c.id for c in CASES]
assert len(IDS) == len(set(IDS)), sorted({i for i in IDS if IDS.count(i) > 1})
