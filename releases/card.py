"""The dataset card: README.md with the YAML header the Hub reads, and a body for people.

The header lists each config's data files (so ``load_dataset(repo, "ihbench")`` works), license,
task categories and size category. The body gives the statistics table, how the data was
generated, how to load and score it, provenance and the changelog. Everything is a pure
function of its inputs: the same release gives the same bytes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

CONFIG_DESCRIPTIONS: dict[str, str] = {
    "conversations": "one row per conversation: scenario, messages with interruptions, rubrics, "
                     "stereo audio (ch0 user, ch1 assistant) with segments and word timings",
    "ihbench": "the public IHBench wide per-turn layout (planned and heard assistant turns, user "
               "transcripts and audio, interruption types, TF and RQ rubrics)",
    "eval_items": "one row per interruption point: system prompt, history up to the cut, "
                  "interjection (+ audio), rubric, gold recovery, baseline",
    "baseline": "the baseline response per eval item (TF win rates are measured against it)",
    "repair": "Pardon?/EAR masked-audio repair items: answerable vs unanswerable masks",
    "timing": "TurnNat natural / perturbed stereo pairs with exact edit positions",
    "sft": "SFT chat records for recovery post-training (history -> gold recovery)",
    "dpo": "DPO pairs: chosen = gold recovery, rejected = a realistic failure of the type",
}
CHANGELOG_START = "<!-- changelog:start -->"
CHANGELOG_END = "<!-- changelog:end -->"
_SIZE = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"))


def size_category(n: int) -> str:
    for limit, label in _SIZE:
        if n < limit:
            return label
    return "10M<n<100M"


def card_header(*, pretty_name: str, license: str, splits: dict[str, dict[str, int]],
                tags: list[str]) -> dict[str, Any]:
    """The YAML metadata. ``splits`` maps config -> split -> rows (configs in release order)."""
    largest = max((n for s in splits.values() for n in s.values()), default=0)
    configs = []
    for i, (config, per_split) in enumerate(splits.items()):
        entry: dict[str, Any] = {
            "config_name": config,
            "data_files": [{"split": s, "path": f"{config}/{s}-*.parquet"} for s in per_split],
        }
        if i == 0:
            entry["default"] = True
        configs.append(entry)
    return {
        "pretty_name": pretty_name, "license": license, "language": ["en"],
        "task_categories": ["text-generation", "audio-to-audio", "automatic-speech-recognition"],
        "tags": tags, "size_categories": [size_category(largest)], "configs": configs,
    }


def _table(rows: list[tuple[Any, ...]], head: tuple[str, ...]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _pct(n: int, total: int) -> str:
    return f"{n} ({100.0 * n / total:.1f}%)" if total else str(n)


def stats_table(stats: dict[str, Any]) -> str:
    total = stats.get("interruption_points", 0)
    mpc = stats.get("messages_per_conversation", {})
    rows: list[tuple[Any, ...]] = [
        ("Conversations", stats.get("conversations", 0)),
        ("Domains", len(stats.get("domains", {}))),
        ("Total interruption points", total),
        ("Avg. messages per conversation", mpc.get("mean", 0)),
        ("Min / max messages", f"{mpc.get('min')} / {mpc.get('max')}"),
        ("Discarded by the verifier", stats.get("discarded", 0)),
        ("Audio (hours)", stats.get("audio_hours", 0)),
        ("**Interruption type distribution**", ""),
    ]
    rows += [(t.replace("_", " ").capitalize(), _pct(n, total))
             for t, n in sorted(stats.get("types", {}).items(), key=lambda kv: (-kv[1], kv[0]))]
    rows.append(("**Interruptions by depth (user turn index)**", ""))
    rows += [(b, _pct(n, total)) for b, n in stats.get("depth_bins", {}).items()]
    return _table(rows, ("Statistic", "Value"))


def _agents_sentence(agents: dict[str, int]) -> str:
    if not agents:
        return "No conversations in this release."
    offline = agents.get("offline", 0)
    llm = {k: v for k, v in agents.items() if k != "offline"}
    parts = []
    if offline:
        parts.append(f"{offline} conversation(s) were written by bargein's **offline rule-based "
                     "agents** (deterministic, seeded, built from a curated domain catalogue and "
                     "phrase banks): structurally faithful but formulaic, no LLM involved")
    for spec, n in sorted(llm.items()):
        parts.append(f"{n} conversation(s) were written by **LLM agents** (`{spec}`)")
    return "; ".join(parts) + "."


def _kv_lines(d: dict[str, Any]) -> str:
    if not d:
        return "- (none)"
    return "\n".join(f"- `{k}`: {v}" for k, v in d.items())


_AUDIO_EXAMPLE = {"ihbench": "user_turn_0_audio", "conversations": "audio",
                  "eval_items": "interjection_audio", "repair": "audio", "timing": "natural_audio"}


def _load_snippet(repo: str, version: str, splits: dict[str, dict[str, int]]) -> list[str]:
    config = next((c for c in _AUDIO_EXAMPLE if c in splits), next(iter(splits)))
    split = next(iter(splits[config]))
    lines = ["```python", "from datasets import load_dataset, Audio",
             f'ds = load_dataset("{repo}", "{config}", split="{split}", revision="v{version}")']
    col = _AUDIO_EXAMPLE.get(config)
    if col:
        lines += ["# audio without torch: keep the bytes, decode with soundfile",
                  f'ds = ds.cast_column("{col}", Audio(decode=False))',
                  "import io, soundfile as sf",
                  f'samples, sr = sf.read(io.BytesIO(ds[0]["{col}"]["bytes"]))']
    return lines + ["```", ""]


def card_markdown(*, name: str, version: str, pretty_name: str, license: str,
                  splits: dict[str, dict[str, int]], stats: dict[str, Any],
                  provenance: dict[str, Any], changelog: list[tuple[str, str]],
                  plots: dict[str, str], repo_hint: str | None = None) -> str:
    """The whole README.md. ``changelog`` is [(version, text)] newest first; ``plots`` maps a
    caption to a release-relative PNG path."""
    header = card_header(pretty_name=pretty_name, license=license, splits=splits,
                         tags=["bargein", "interruptions", "voice-agents", "spoken-dialogue",
                               "synthetic"])
    repo = repo_hint or f"ORG/{name}"
    prov = dict(provenance)
    config_rows = [(f"`{c}`", ", ".join(f"{s}: {n}" for s, n in per.items()),
                    CONFIG_DESCRIPTIONS.get(c, "")) for c, per in splits.items()]
    prompt_rows = [(f"`{p}`", f"`{h[:16]}`") for p, h in sorted(prov.get("prompts", {}).items())]
    discards = stats.get("discard_reasons", {})
    lines = [
        "---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
        f"# {pretty_name} — v{version}", "",
        f"A spoken-interaction benchmark built by [bargein](https://pypi.org/project/bargein/) "
        f"{prov.get('bargein_version', '')}: workflow-grounded conversations with scripted "
        "interruptions (IHBench method), two-channel audio with real cut-ins, masked-audio repair "
        "items and turn-taking timing perturbations.", "",
        f"**Agents.** {_agents_sentence(stats.get('agents', {}))}", "",
        "## Configs", "", _table(config_rows, ("config", "rows", "what it holds")), "",
        "## Statistics", "", stats_table(stats), "",
        *quality_section(stats),
    ]
    for caption, path in plots.items():
        lines += [f"![{caption}]({path})", ""]
    lines += fidelity_section(stats.get("fidelity"))
    lines += [
        "## How it was generated", "",
        "1. Scenarios: (domain, goal, user intent) with a knowledge base whose workflow is a "
        "validated state machine, concrete fictional user facts and a system prompt.",
        "2. Conversations: a round planner decides per round whether and how the user interrupts "
        "(normal, impatient, correction, topic switch, filler, pushback) and where the cut falls "
        "inside the assistant's utterance; branched assistant and user simulators write the turns; "
        "the user reacts only to the heard prefix. A rubric (1 task-fulfillment criterion, 2–4 "
        "recovery-quality criteria) is fixed at each interruption before any model response exists.",
        "3. Verification: a verifier checks every message (state-machine leakage, undelivered "
        "content, naturalness, rule breaks); fixable issues go to a minimal-edit modifier, "
        "unfixable conversations are discarded with their reasons (counts below).",
        "4. Audio: TTS per message with word timings, truncation at the cut time, a two-channel "
        "timeline (ch0 user, ch1 assistant); the heard prefix is exactly the words whose audio "
        "ends before the cut.",
        "5. Derived sets: one eval item per interruption point, masked repair items, TurnNat "
        "perturbation pairs and SFT/DPO training exports.", "",
        "## How to load", "", *_load_snippet(repo, version, splits),
        "or with bargein (checks the manifest checksums):",
        "",
        "```bash",
        f"bargein release pull {repo}@v{version} --out ./release",
        "```", "",
        "## How to score", "",
        "```bash",
        f"bargein respond --release {repo}@v{version} --llm openai:gpt-4o-audio-preview "
        "--epochs 3 --out responses.jsonl",
        f"bargein score ihbench --release {repo}@v{version} --responses responses.jsonl "
        "--judge openai:gpt-4o-mini --epochs 3 --out scores/",
        "```", "",
        "`respond` sends every user turn as audio (`input_audio` parts, so the model must take "
        "audio input; `--text-only` sends transcripts, the text-only ablation). "
        "Task fulfillment (TF) is a win rate against the `baseline` config by a comparative LLM "
        "judge (randomised, seeded, balanced order; the judge must name a concrete deficiency of "
        "the loser, or the judgment is reported unscorable). Recovery quality (RQ) is the share of "
        "items where an absolute LLM judge finds every rubric criterion met. Validate the judge "
        "first on bargein's hand-labelled control set (`bargein score validate-judge --judge "
        "MODEL`); every score table then names the judge, its validation kappa and the epochs, "
        "with the scored and unscorable item counts beside each figure, and the score's "
        "`report.json` records them as fields (`judge_card`: judge, kappa, accuracy, template "
        "fail rate, paraphrase pass rate, control-set judgments, epochs). 3 epochs; 95% CIs by a 1000-iteration percentile "
        "bootstrap over per-item epoch means; per-type tables and a depth logistic regression.", "",
        "## Provenance", "",
        f"- bargein version: `{prov.get('bargein_version')}`",
        f"- git commit: `{prov.get('git_commit')}`",
        f"- seed: `{prov.get('seed')}`",
        f"- LLM / agents: `{prov.get('llm', 'offline')}`",
        *([f"- per-agent models: " + ", ".join(f"{a} `{m}`" for a, m in sorted(prov["llm_agents"].items()))]
          if prov.get("llm_agents") else []),
        f"- writer: pyarrow `{prov.get('pyarrow_version')}`, datasets "
        f"`{prov.get('datasets_version')}`",
        *([f"- layout profile: {prov['profile']}"] if prov.get("profile") else []),
        *([f"- TurnNat perturbation protocol: `{prov['perturbation_protocol']}` (docs/protocols.md)"]
          if prov.get("perturbation_protocol") else []),
        "", "Models:", "", _kv_lines(prov.get("models", {})), "",
        "Voices (role=voice: conversations):", "", _kv_lines(stats.get("voices", {})), "",
        "TTS engines:", "", _kv_lines(stats.get("tts_engines", {})), "",
        "Verifier discards by reason:", "", _kv_lines(discards), "",
        "Verifier issues by check (fixed or discarded):", "",
        _kv_lines(stats.get("verifier_issues_by_check", {})), "",
        "Prompt templates (sha256):", "",
        _table(prompt_rows, ("prompt", "sha256")) if prompt_rows else "- (none)", "",
        "Build configuration:", "", "```yaml",
        yaml.safe_dump(prov.get("config", {}), sort_keys=True).rstrip() or "{}", "```", "",
        "## Changelog", "", CHANGELOG_START,
    ]
    for v, text in changelog:
        lines += [f"### v{v}", "", text.strip(), ""]
    lines += [CHANGELOG_END, "", "## License", "",
              f"{license}. Synthetic data: every name, number and address is fictional.", ""]
    return "\n".join(lines)


def _fmt(v: Any, suffix: str = "") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") + suffix if abs(v) < 1 else f"{v:.1f}{suffix}"
    return f"{v}{suffix}"


def fidelity_section(fid: dict[str, Any] | None) -> list[str]:
    """The card's "Audio fidelity" section: the labels measured again on the released audio
    (``bargein.audio.fidelity_report``). Empty when the build measured nothing."""
    if not fid:
        return []
    voices = fid.get("voices", {})
    rows = [(f"`{v}`", _fmt(x.get("word_end_within_30ms")), x.get("pauses", 0),
             _fmt(x.get("word_end_error_ms_p95"), " ms"), x.get("words_shorter_than_30ms", 0),
             x.get("words_in_silence", 0)) for v, x in sorted(voices.items())]
    cuts, rep, frames = fid.get("cuts", {}), fid.get("repair", {}), fid.get("frames", {})
    side = fid.get("sidecars", {}).get("sidecar_error_ms_p95", "n/a")
    out = ["## Audio fidelity", "",
           "Every label is a claim about the audio; these figures measure it again on the released "
           "audio with instruments that did not make the labels (an energy detector, Whisper tiny.en, "
           "VAP classes recomputed from measured activity).", ""]
    if rows:
        out += ["Word boundaries per voice (word ends before pauses >= 150 ms against the end of sound):",
                "", _table(rows, ("voice", "within 30 ms", "pauses", "error p95", "words < 30 ms",
                                  "words in silence")), ""]
    out += _table([
        ("cuts whose heard text agrees with ASR on the prefix",
         f"{_fmt(cuts.get('heard_text_asr_agreement'))} (of {cuts.get('asr_checked', 0)}"
         + (f"; in {cuts.get('disagreements_asr_only_adds_words')} of the {len(cuts['disagreements'])} "
            "disagreements ASR only adds words after the heard ones" if cuts.get("disagreements") else "")
         + ")"),
        ("stop error p95 (last sound vs `stop_s`)", _fmt(cuts.get("stop_error_ms_p95"), " ms")),
        ("cut onset error p95 / overlap error p95",
         f"{_fmt(cuts.get('cut_error_ms_p95'), ' ms')} / {_fmt(cuts.get('overlap_error_ms_p95'), ' ms')}"),
        ("VAP frame-label agreement with measured activity", _fmt(frames.get("frame_label_agreement"))),
        ("unanswerable repair items whose value ASR still recovers",
         f"{_fmt(rep.get('unanswerable_asr_recovery'))} (of {rep.get('unanswerable_items', 0)})"),
        ("answerable repair items whose value ASR hears",
         f"{_fmt(rep.get('answerable_asr_recovery'))} (of {rep.get('answerable_items', 0)}; "
         f"{_fmt(rep.get('answerable_asr_kept_given_original'))} of the "
         f"{rep.get('answerable_heard_in_original', 0)} whose original it hears)"),
        ("masked time, answerable / unanswerable (ratio of medians; AUC of length alone telling "
         "them apart, 0.5 = not at all)",
         f"{_fmt((rep.get('mask_len') or {}).get('ratio_of_medians'))}; "
         f"AUC {_fmt((rep.get('mask_len') or {}).get('length_auc'))}"),
        ("perturbation sidecar error p95", _fmt(side, " ms") if isinstance(side, (int, float)) else str(side)),
    ], ("measurement", "value")).splitlines() + [""]
    return out


# ---- quality report (owned with bargein.verify.report) -------------------------------------
def _q(v: Any, pct: bool = False) -> str:
    if not isinstance(v, (int, float)):
        return "-"
    return f"{100 * v:.1f}%" if pct else (f"{v:.3f}" if isinstance(v, float) else str(v))


def quality_section(stats: dict[str, Any]) -> list[str]:
    """The measured quality table: per-check defect and discard rates, variety per role,
    templating, type and depth beside IHBench Appendix A, DPO separability, the train/test
    split. Empty when the generation statistics carry no quality report."""
    q = (stats.get("generation") or {}).get("quality") or stats.get("quality")
    if not q:
        return []
    from bargein.verify.report import IHBENCH_DEPTHS, IHBENCH_POINTS, IHBENCH_TYPES

    checks = sorted({k.split(".", 1)[1] for k in q if k.startswith("defect_rate.")})
    check_rows = [(f"`{c}`", _q(q.get(f"defect_rate.{c}"), True),
                   _q(q.get(f"flagged_conversation_rate.{c}"), True),
                   _q(q.get(f"discard_rate.{c}"), True)) for c in checks]
    check_rows.append(("**any check**", _q(q.get("flagged_defect_rate_before_loop"), True), "-",
                       _q(q.get("discard_rate"), True)))
    variety = [
        ("distinct-1 / distinct-2, user", f"{_q(q.get('user_distinct1'))} / {_q(q.get('user_distinct2'))}"),
        ("distinct-1 / distinct-2, assistant",
         f"{_q(q.get('assistant_distinct1'))} / {_q(q.get('assistant_distinct2'))}"),
        ("distinct-2, assistant, over what was said (a cut turn up to the cut)",
         _q(q.get("assistant_distinct2_spoken"))),
        ("recoveries that say 6+ words the caller already heard again, word for word",
         _q(q.get("recovery_repeat_rate"), True)),
        ("assistant sentences made of phrase-bank entries or talking points, however filled",
         _q(q.get("templated_sentence_share"), True)),
        ("assistant sentences whose skeleton recurs in 3+ conversations (reads no bank)",
         _q(q.get("recurring_sentence_share"), True)),
        ("phrase-bank entries covering the interjections",
         f"{q.get('interjection_templates', '-')} for {q.get('interjections', '-')} interjections"),
        ("flagged points after the verifier-modifier loop", _q(q.get("flagged_defect_rate_after_loop"), True)),
    ]
    dist = [(t.replace("_", " "), f"{q.get('types', {}).get(t, 0):.1f}%",
             f"{100 * n / IHBENCH_POINTS:.1f}%") for t, n in IHBENCH_TYPES.items()]
    dist += [(f"depth {b}", f"{q.get('depths', {}).get(b, 0):.1f}%", f"{100 * n / IHBENCH_POINTS:.1f}%")
             for b, n in IHBENCH_DEPTHS.items()]
    dpo = [("first word", _q(q.get("dpo_first_word_accuracy"))),
           ("first two words", _q(q.get("dpo_first2_accuracy"))),
           ("length", _q(q.get("dpo_length_accuracy")))]
    split = q.get("split") or {}
    lines = [
        "## Quality report", "",
        "Measured on this release's own generation run by bargein's deterministic checks "
        "(`bargein.verify`); the checks' recall on seeded defects is measured by "
        "`bench/verify_recall.py`. A rate is over interruption points (defects, before repair) "
        "or conversations (discards).", "",
        _table(check_rows, ("check", "points flagged", "conversations flagged",
                            "conversations discarded")), "",
        _table(variety, ("variety and templating", "value")), "",
        _table(dist, ("interruption type / depth", "this release (test pool)",
                      "IHBench Appendix A")), "",
        "DPO separability — accuracy of a trivial classifier telling chosen from rejected, "
        "5-fold cross-validated by conversation (0.5 = chance):", "",
        _table(dpo, ("classifier", "accuracy")), "",
    ]
    src = q.get("dpo_rejected_sources") or {}
    if src:
        total = sum(src.values())
        model = q.get("dpo_rejected_model")
        fb = q.get("dpo_rejected_fallbacks") or {}
        text = (f"DPO rejected responses: {src.get('model', 0)} of {total} are the configured "
                f"model's own failing answers (on-policy; {model})" if model else
                f"DPO rejected responses: all {total} are offline anti-patterns (no LLM "
                "configured; with one, the model's own failing answers are used)")
        if model:
            text += (f", {src.get('anti_pattern', 0)} offline anti-patterns where it had none"
                     + (" (" + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in fb.items()) + ")"
                        if fb else ""))
        lines += [text + ".", ""]
    if split:
        lines += [f"Train/test split by {split.get('by', 'goal')}: SFT/DPO come from "
                  f"{split.get('train_goals', 0)} goals ({split.get('train_conversations', 0)} "
                  f"conversations), the benchmark from {split.get('test_goals', 0)} others "
                  f"({split.get('test_conversations', 0)} conversations); goals in both: "
                  f"{split.get('goal_overlap', 0)}; training rows from the test pool: "
                  f"{q.get('train_test_overlap', 0)}.", ""]
    return lines


def read_changelog(card_text: str) -> list[tuple[str, str]]:
    """[(version, text)] from a card written by :func:`card_markdown` (newest first)."""
    if CHANGELOG_START not in card_text or CHANGELOG_END not in card_text:
        return []
    body = card_text.split(CHANGELOG_START, 1)[1].split(CHANGELOG_END, 1)[0]
    out = []
    for m in re.finditer(r"^### v(\S+)\n(.*?)(?=^### v|\Z)", body, re.S | re.M):
        out.append((m.group(1), m.group(2).strip()))
    return out


def read_header(card_text: str) -> dict[str, Any]:
    if not card_text.startswith("---\n"):
        return {}
    head = card_text[4:].split("\n---", 1)[0]
    return yaml.safe_load(head) or {}
