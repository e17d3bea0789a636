"""Data quality of the offline conversations: variety, templating, DPO separability, split.

    python bench/data_quality.py [--scenarios 50] [--seed 7] [--workdir DIR]

Generates ``generate conversations --scenarios 50 --seed 7`` (offline) into a temporary work
directory (or reads ``--workdir`` if it holds the outputs) and prints, one ``name=value`` a line:

* ``user_distinct2`` / ``assistant_distinct2`` (and ``*_distinct1``): distinct n-grams over all
  n-grams of that role's messages, corpus-wide;
* ``templated_sentence_share``: share of assistant sentences that are, verbatim, one talking point
  sentence of the scenario or one phrase-bank entry with its slots filled (a whole-sentence match);
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
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]   # bench/inspect.py

from bargein.generators import phrases as P  # noqa: E402,F401
from bargein.records import Conversation, VerifiedConversation  # noqa: E402
from bargein.seeding import stable_int  # noqa: E402
from bargein.verify.checks import run_checks  # noqa: E402
from bargein.verify.text import sentences, tokens  # noqa: E402


def distinct(texts: list[str], n: int) -> float:
    grams, total = set(), 0
    for t in texts:
        toks = tokens(t)
        for i in range(len(toks) - n + 1):
            grams.add(tuple(toks[i:i + n]))
            total += 1
    return len(grams) / total if total else 0.0


def _template_regexes() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for file in P.BANK_FILES:
        for key, items in P._load(file).items():
            for j, t in enumerate(items):
                texts = [t] if isinstance(t, str) else [v for v in t.values() if isinstance(v, str)]
                for x in texts:
                    if not x.strip():
                        continue
                    parts = re.split(r"\{\w+\}", " ".join(tokens(x)))
                    pat = r"(?:.+?)".join(re.escape(p.strip()).replace(r"\ ", r"\s*") for p in parts)
                    out.append((f"{file}.{key}[{j}]", re.compile(rf"^\s*{pat}\s*$")))
    return out


def templated(convs: list[Conversation]) -> tuple[float, int, int]:
    """(share of assistant sentences that are one template or talking point sentence,
    distinct templates covering the interjections, interjections)."""
    regs = _template_regexes()
    hit = total = 0
    used: Counter[str] = Counter()
    n_inter = 0
    for c in convs:
        tps = {" ".join(tokens(c.scenario.kb.workflow.stage(s.name).description))
               for s in c.scenario.kb.workflow.stages}
        for s in c.scenario.kb.workflow.stages:
            for tp in s.talking_points:
                tps |= {" ".join(tokens(tp[a:b])) for a, b in sentences(tp)}
        for m in c.messages:
            if m.role == "assistant":
                for a, b in sentences(m.text):
                    sent = " ".join(tokens(m.text[a:b]))
                    total += 1
                    if sent in tps or any(r.match(sent) for _, r in regs):
                        hit += 1
        for _, u in c.interruptions:
            n_inter += 1
            norm = " ".join(tokens(u.text))
            name = next((n for n, r in regs if n.startswith("user.") and r.match(norm)), None)
            if name is None:    # composed from pieces: count the piece it ends with
                name = next((n for n, r in regs if n.startswith("user.")
                             and r.pattern.endswith("$") and re.search(r.pattern[1:], norm)), norm)
            used[name] += 1
    return (hit / total if total else 0.0), len(used), n_inter


def _features(text: str) -> tuple[str, str, int]:
    toks = tokens(text)
    return (toks[0] if toks else "", " ".join(toks[:2]), len(toks))


def dpo_separability(rows: list[dict], folds: int = 5) -> dict[str, float]:
    """Accuracy of first-word, first-two-words and length classifiers, cross-validated by
    conversation (each response is one example: chosen = 1, rejected = 0)."""
    data = []
    for r in rows:
        g = stable_int("fold", r["conversation_id"]) % folds
        data.append((g, _features(r["chosen"][0]["content"]), 1))
        data.append((g, _features(r["rejected"][0]["content"]), 0))
    acc = {"first_word": 0.0, "first2": 0.0, "length": 0.0}
    n = 0
    for f in range(folds):
        train = [d for d in data if d[0] != f]
        test = [d for d in data if d[0] == f]
        if not train or not test:
            continue
        for name, i in (("first_word", 0), ("first2", 1)):
            votes: dict[str, Counter] = defaultdict(Counter)
            for _, feat, y in train:
                votes[feat[i]][y] += 1
            for _, feat, y in test:
                v = votes.get(feat[i])
                if not v or v[0] == v[1]:
                    acc[name] += 0.5
                else:
                    acc[name] += 1.0 if (v[1] > v[0]) == (y == 1) else 0.0
        lens = sorted({feat[2] for _, feat, _ in train})
        best = (0.0, 0, True)
        for t in lens:
            for longer_is_chosen in (True, False):
                ok = sum(1 for _, feat, y in train if ((feat[2] > t) == longer_is_chosen) == (y == 1))
                if ok / len(train) > best[0]:
                    best = (ok / len(train), t, longer_is_chosen)
        _, t, lc = best
        acc["length"] += sum(1 for _, feat, y in test if ((feat[2] > t) == lc) == (y == 1))
        n += len(test)
    return {k: v / n if n else 0.0 for k, v in acc.items()}


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
    share, n_templates, n_inter = templated(accepted)
    print(f"templated_sentence_share={share:.3f}")
    print(f"interjection_templates={n_templates} interjections={n_inter}")
    sep = dpo_separability(dpo)
    print(f"dpo_first_word_accuracy={sep['first_word']:.3f}")
    print(f"dpo_first2_accuracy={sep['first2']:.3f}")
    print(f"dpo_length_accuracy={sep['length']:.3f}")
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
