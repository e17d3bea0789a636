"""The quality report of a run: what the release card prints and ``release build`` gates on.

    report = quality_report(verified, test_items, dpo_rows, split=stats["split"])
    failures = check_thresholds(report, {"assistant_distinct2": 0.45, "dpo_first2_accuracy": 0.65})

Figures (every one a number, so a threshold can name it):

* ``defect_rate.<check>``: interruption points with a verdict of ``<check>`` (on the cut turn,
  the interjection or the recovery), before the verifier-modifier loop, over all points;
  ``discard_rate.<check>``: conversations discarded for ``<check>``, over all conversations;
  ``flagged_defect_rate_after_loop`` over the accepted conversations;
* ``user_distinct1/2``, ``assistant_distinct1/2``: distinct n-grams over n-grams, per role;
* ``templated_sentence_share``: assistant sentences that are verbatim one talking point sentence
  or one phrase-bank entry filled; ``interjection_templates``: bank entries covering interjections;
* ``dpo_first_word_accuracy``, ``dpo_first2_accuracy``, ``dpo_length_accuracy``: trivial
  classifiers telling chosen from rejected, 5-fold cross-validated by conversation;
* ``train_test_overlap``: training rows whose conversation or goal is in the test pool.

Type and depth distributions are reported beside IHBench Appendix A (45 conversations, 428
points; REFERENCE.md).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from bargein.errors import ConfigError
from bargein.records import Conversation, EvalItem, VerifiedConversation
from bargein.seeding import stable_int
from bargein.verify.text import sentences, tokens

# IHBench Appendix A (REFERENCE.md): counts of its 428 interruption points by type and depth
IHBENCH_POINTS = 428
IHBENCH_TYPES = {"pushback": 105, "impatient": 84, "normal": 81, "topic_switch": 73, "filler": 60,
                 "correction": 25}
IHBENCH_DEPTHS = {"0-4": 169, "5-9": 130, "10-14": 80, "15-19": 49, "20+": 0}
# the publishing thresholds: (figure, comparison, value)
DEFAULT_THRESHOLDS: dict[str, tuple[str, float]] = {
    "flagged_defect_rate_after_loop": ("<=", 0.05),
    "dpo_first2_accuracy": ("<=", 0.65),
    "dpo_length_accuracy": ("<=", 0.65),
    "train_test_overlap": ("<=", 0.0),
}


def distinct(texts: Iterable[str], n: int) -> float:
    grams, total = set(), 0
    for t in texts:
        toks = tokens(t)
        for i in range(len(toks) - n + 1):
            grams.add(tuple(toks[i:i + n]))
            total += 1
    return round(len(grams) / total, 4) if total else 0.0


@lru_cache(maxsize=1)
def _templates() -> tuple[tuple[str, re.Pattern[str]], ...]:
    from bargein.generators import phrases as P

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
    return tuple(out)


def templating(convs: list[Conversation]) -> tuple[float, int, int]:
    """(share of assistant sentences that are one template or talking-point sentence, distinct
    user templates covering the interjections, interjections)."""
    regs = _templates()
    hit = total = n_inter = 0
    used: set[str] = set()
    for c in convs:
        tps = set()
        for s in c.scenario.kb.workflow.stages:
            tps.add(" ".join(tokens(s.description)))
            for tp in s.talking_points:
                tps |= {" ".join(tokens(tp[a:b])) for a, b in sentences(tp)}
        for m in c.messages:
            if m.role == "assistant":
                for a, b in sentences(m.text):
                    sent = " ".join(tokens(m.text[a:b]))
                    total += 1
                    hit += sent in tps or any(r.match(sent) for _, r in regs)
        for _, u in c.interruptions:
            n_inter += 1
            norm = " ".join(tokens(u.text))
            used.add(next((n for n, r in regs if n.startswith("user.") and r.match(norm)), norm))
    return (round(hit / total, 4) if total else 0.0), len(used), n_inter


def _feat(text: str) -> tuple[str, str, int]:
    toks = tokens(text)
    return (toks[0] if toks else "", " ".join(toks[:2]), len(toks))


def dpo_separability(rows: list[dict], folds: int = 5) -> dict[str, float]:
    """Accuracy of first-word, first-two-words and length classifiers (chosen = 1, rejected =
    0), cross-validated by conversation; 0.5 is chance."""
    data = []
    for r in rows:
        g = stable_int("fold", r["conversation_id"]) % folds
        data.append((g, _feat(r["chosen"][0]["content"]), 1))
        data.append((g, _feat(r["rejected"][0]["content"]), 0))
    acc = {"dpo_first_word_accuracy": 0.0, "dpo_first2_accuracy": 0.0, "dpo_length_accuracy": 0.0}
    n = 0
    for f in range(folds):
        train = [d for d in data if d[0] != f]
        test = [d for d in data if d[0] == f]
        if not train or not test:
            continue
        for name, i in (("dpo_first_word_accuracy", 0), ("dpo_first2_accuracy", 1)):
            votes: dict[str, Counter] = defaultdict(Counter)
            for _, feat, y in train:
                votes[feat[i]][y] += 1
            for _, feat, y in test:
                v = votes.get(feat[i])
                acc[name] += 0.5 if not v or v[0] == v[1] else float((v[1] > v[0]) == (y == 1))
        best = (-1.0, 0, True)
        for t in sorted({feat[2] for _, feat, _ in train}):
            for longer in (True, False):
                ok = sum(((feat[2] > t) == longer) == (y == 1) for _, feat, y in train) / len(train)
                if ok > best[0]:
                    best = (ok, t, longer)
        acc["dpo_length_accuracy"] += sum(((feat[2] > best[1]) == best[2]) == (y == 1)
                                          for _, feat, y in test)
        n += len(test)
    return {k: round(v / n, 4) if n else 0.0 for k, v in acc.items()}


def _point_checks(conv: Conversation, verdicts) -> tuple[int, dict[str, int], int]:
    """(points, points flagged per check, points flagged by any check)."""
    pts = [(m.index, u.index) for m, u in conv.interruptions]
    per: Counter[str] = Counter()
    anyflag = set()
    for v in verdicts:
        for a, b in pts:
            if v.message_index is None or v.message_index in (a, b, b + 1):
                per[v.check] += 1
                anyflag.add((a, b))
    return len(pts), dict(per), len(anyflag)


def quality_report(verified: list[VerifiedConversation], test_items: list[EvalItem] | None = None,
                   dpo_rows: list[dict] | None = None, *, sft_rows: list[dict] | None = None,
                   split: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every figure of the quality report (see the module docstring)."""
    from bargein.verify.checks import CHECKS

    accepted = [v.conversation for v in verified if v.accepted]
    points = flagged_any = 0
    per_check: Counter[str] = Counter()
    for v in verified:
        first = [x for x in v.verdicts if x.round == 0]
        n, per, anyn = _point_checks(v.conversation, first)
        points += n
        flagged_any += anyn
        per_check.update(per)
    discards: Counter[str] = Counter()
    for v in verified:
        for c in {r.split(":", 1)[0] for r in v.discard_reasons}:
            discards[c] += 1
    after_pts = after_bad = 0
    for v in verified:
        if v.accepted:
            last = [x for x in v.verdicts if x.round == v.rounds]
            n, _, anyn = _point_checks(v.conversation, last)
            after_pts += n
            after_bad += anyn
    out: dict[str, Any] = {
        "conversations": len(verified), "accepted": len(accepted), "interruption_points": points,
        "flagged_defect_rate_before_loop": round(flagged_any / points, 4) if points else 0.0,
        "flagged_defect_rate_after_loop": round(after_bad / after_pts, 4) if after_pts else 0.0,
        "discard_rate": round(1 - len(accepted) / len(verified), 4) if verified else 0.0,
    }
    for c in CHECKS:
        out[f"defect_rate.{c}"] = round(per_check[c] / points, 4) if points else 0.0
        out[f"discard_rate.{c}"] = round(discards[c] / len(verified), 4) if verified else 0.0
    for role in ("user", "assistant"):
        texts = [m.text for c in accepted for m in c.messages if m.role == role]
        out[f"{role}_distinct1"] = distinct(texts, 1)
        out[f"{role}_distinct2"] = distinct(texts, 2)
    share, n_templates, n_inter = templating(accepted)
    out["templated_sentence_share"] = share
    out["interjection_templates"] = n_templates
    out["interjections"] = n_inter
    items = list(test_items or [])
    types = Counter(i.type for i in items)
    depths = Counter(_depth_bin(i.depth) for i in items)
    out["types"] = {t: round(100 * types[t] / len(items), 1) if items else 0.0 for t in IHBENCH_TYPES}
    out["depths"] = {b: round(100 * depths[b] / len(items), 1) if items else 0.0
                     for b in IHBENCH_DEPTHS}
    if dpo_rows is not None:
        out.update(dpo_separability(dpo_rows))
    if split is not None:
        out["split"] = dict(split)
    goal = {c.id: f"{c.scenario.domain.name}/{c.scenario.goal.name}" for c in accepted}
    test_convs = {i.conversation_id for i in items}
    test_goals = {goal.get(c) for c in test_convs}
    train = list(sft_rows or []) + list(dpo_rows or [])
    out["train_test_overlap"] = sum(1 for r in train if r.get("conversation_id") in test_convs
                                    or goal.get(r.get("conversation_id")) in test_goals)
    return out


def _depth_bin(d: int) -> str:
    for lo, hi in ((0, 4), (5, 9), (10, 14), (15, 19)):
        if d <= hi:
            return f"{lo}-{hi}"
    return "20+"


def known_figures(report: Mapping[str, Any]) -> list[str]:
    return sorted(k for k, v in report.items() if isinstance(v, (int, float)))


def parse_thresholds(raw: Mapping[str, Any], known: Iterable[str]) -> dict[str, tuple[str, float]]:
    """``{"figure": "<= 0.05" | 0.05 | {"max": 0.05} | {"min": 0.45}}`` -> figure -> (op, value).
    A bare number is a maximum for rates and accuracies, a minimum for distinct-n. An unknown
    figure raises :class:`ConfigError` listing the known ones."""
    known = sorted(set(known))
    out = {}
    for name, spec in raw.items():
        if name not in known:
            raise ConfigError(f"quality threshold names an unknown figure {name!r}. Fix: use one "
                              f"of {', '.join(known)}")
        if isinstance(spec, Mapping):
            if set(spec) - {"min", "max"} or len(spec) != 1:
                raise ConfigError(f"quality threshold {name!r}: give exactly one of min or max, "
                                  f"got {dict(spec)}")
            op, val = ("<=", spec["max"]) if "max" in spec else (">=", spec["min"])
        elif isinstance(spec, str):
            m = re.fullmatch(r"\s*(<=|>=)\s*([0-9.]+)\s*", spec)
            if not m:
                raise ConfigError(f"quality threshold {name!r}: {spec!r} is not '<= X' or '>= X'")
            op, val = m.group(1), m.group(2)
        else:
            op, val = (">=" if "distinct" in name else "<="), spec
        try:
            out[name] = (op, float(val))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"quality threshold {name!r}: {val!r} is not a number") from e
    return out


def check_thresholds(report: Mapping[str, Any],
                     thresholds: Mapping[str, Any] | None = None) -> list[str]:
    """The figures that miss their threshold, each as one sentence (empty = all met)."""
    raw = DEFAULT_THRESHOLDS if thresholds is None else thresholds
    parsed = {k: v for k, v in raw.items()} if thresholds is None else \
        parse_thresholds(thresholds, known_figures(report))
    out = []
    for name, (op, val) in parsed.items():
        got = report.get(name)
        if not isinstance(got, (int, float)):
            continue
        ok = got <= val if op == "<=" else got >= val
        if not ok:
            out.append(f"{name} = {got} misses the threshold {op} {val}")
    return out
