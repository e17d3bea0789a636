"""Data quality of the offline conversations: variety, templating, DPO separability, split.

    python bench/data_quality.py [--scenarios 50] [--seed 7] [--workdir DIR]

Generates ``generate conversations --scenarios 50 --seed 7`` (offline) into a temporary work
directory (or reads ``--workdir`` if it holds the outputs) and prints, one ``name=value`` a line:

* ``user_distinct2`` / ``assistant_distinct2`` (and ``*_distinct1``): distinct n-grams over all
  n-grams of that role's messages, corpus-wide (the figure the release card shows: a cut
  message counts with its planned text, so the unsaid remainder counts here and again in the
  turn that says it); ``assistant_distinct2_spoken``: the same over what was said (a cut
  message up to the cut), for comparison; ``recovery_repeat_rate``: recoveries (other than
  after a backchannel) that say 6+ words the caller already heard again, word for word;
* ``templated_sentence_share``: share of assistant sentences made of templates: a sequence of
  phrase-bank entries and talking-point / knowledge-base sentences, however their slots are
  filled (an opener + core + tail, a resume lead + a talking point, a re-filled talking point
  all count); ``recurring_sentence_share``: a second instrument that never reads the banks, the
  share of assistant sentences whose skeleton (numbers and names masked) recurs in 3+
  conversations;
  ``interjection_templates``: distinct bank entries that cover the interjections;
* ``dpo_first_word_accuracy``, ``dpo_first2_accuracy``, ``dpo_length_accuracy``: trivial
  classifiers telling chosen from rejected, 5-fold cross-validated by conversation (0.5 = chance);
* ``train_test_overlap``: SFT/DPO rows whose conversation or goal is also in the test pool
  (``eval_items``), plus rows whose target equals a test gold;
* ``flagged_defect_rate_before_loop`` / ``flagged_defect_rate_after_loop``: interruption points
  with a verdict of the deterministic checks, before the verifier-modifier loop and in the
  accepted conversations after it; ``discard_rate``: conversations the loop discarded.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bargein.records import Conversation, VerifiedConversation  # noqa: E402
from bargein.verify.checks import run_checks  # noqa: E402
# the figures are defined once, in the package (the release card shows the same numbers)
from bargein.verify.report import (  # noqa: E402
    distinct, dpo_separability, recovery_repeat_rate, recurring_sentence_share, templating,
)


def point_flags(conv: Conversation) -> tuple[int, int]:
    """(interruption points, points with a verdict on their cut, interjection or gold message)."""
    vs = run_checks(conv)
    whole = any(v.message_index is None for v in vs)
    idx = {v.message_index for v in vs}
    pts = [(m.index, u.index) for m, u in conv.interruptions]
    bad = sum(1 for a, b in pts if whole or {a, b, b + 1} & idx)
    return len(pts), bad


def load(path: Path, rtype):
    return [rtype.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    tmp = None
    wd = args.workdir
    if wd is None or not (wd / "verified.jsonl").exists():
        from bargein.generators.conversation import generate_conversations
        from bargein.generators.scenarios import generate_scenarios

        if wd is None:
            tmp = tempfile.TemporaryDirectory()
            wd = Path(tmp.name)
        scn = generate_scenarios(args.scenarios, args.seed, workdir=wd, progress=False).outputs
        generate_conversations(scn, seed=args.seed, workdir=wd, progress=False)
    raw = load(wd / "conversations.jsonl", Conversation)
    verified = load(wd / "verified.jsonl", VerifiedConversation)
    accepted = [v.conversation for v in verified if v.accepted]
    items = [json.loads(x) for x in (wd / "eval_items.jsonl").read_text().splitlines() if x.strip()]
    sft = [json.loads(x) for x in (wd / "sft.jsonl").read_text().splitlines() if x.strip()]
    dpo = [json.loads(x) for x in (wd / "dpo.jsonl").read_text().splitlines() if x.strip()]

    for role in ("user", "assistant"):
        texts = [m.text for c in accepted for m in c.messages if m.role == role]
        print(f"{role}_distinct1={distinct(texts, 1):.3f}")
        print(f"{role}_distinct2={distinct(texts, 2):.3f}")
    spoken = [m.spoken_text for c in accepted for m in c.messages if m.role == "assistant"]
    print(f"assistant_distinct2_spoken={distinct(spoken, 2):.3f}")
    print(f"recovery_repeat_rate={recovery_repeat_rate(accepted):.3f}")
    share, n_templates, n_inter = templating(accepted)
    print(f"templated_sentence_share={share:.3f}")
    print(f"recurring_sentence_share={recurring_sentence_share(accepted):.3f}")
    print(f"interjection_templates={n_templates} interjections={n_inter}")
    sep = dpo_separability(dpo)
    for k in ("dpo_first_word_accuracy", "dpo_first2_accuracy", "dpo_length_accuracy"):
        print(f"{k}={sep[k]:.3f}")
    conv_goal = {c.id: f"{c.scenario.domain.name}/{c.scenario.goal.name}" for c in accepted}
    test_convs = {i["conversation_id"] for i in items}
    test_goals = {conv_goal.get(c) for c in test_convs}
    test_golds = {i["gold_recovery"] for i in items}
    train = sft + dpo
    overlap = sum(1 for r in train if r["conversation_id"] in test_convs
                  or conv_goal.get(r["conversation_id"]) in test_goals)
    overlap += sum(1 for r in sft if r["messages"][-1]["content"] in test_golds)
    print(f"train_rows={len(train)} test_items={len(items)}")
    print(f"train_test_overlap={overlap}")
    pts = bad = 0
    for c in raw:
        a, b = point_flags(c)
        pts, bad = pts + a, bad + b
    print(f"flagged_defect_rate_before_loop={bad / pts if pts else 0:.3f} (points={pts})")
    pts = bad = 0
    for c in accepted:
        a, b = point_flags(c)
        pts, bad = pts + a, bad + b
    print(f"flagged_defect_rate_after_loop={bad / pts if pts else 0:.3f} (points={pts})")
    print(f"discard_rate={1 - len(accepted) / len(verified) if verified else 0:.3f}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
