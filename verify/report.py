"""The quality report of a run: what the release card prints and ``release build`` gates on.

    report = quality_report(verified, test_items, dpo_rows, split=stats["split"])
    failures = check_thresholds(report, {"assistant_distinct2": 0.45, "dpo_first2_accuracy": 0.65})

Figures (every one a number, so a threshold can name it):

* ``defect_rate.<check>``: interruption points with a verdict of ``<check>`` (on the cut turn,
  the interjection or the recovery), before the verifier-modifier loop, over all points;
  ``discard_rate.<check>``: conversations discarded for ``<check>``, over all conversations;
  ``flagged_defect_rate_after_loop`` over the accepted conversations;
  ``flagged_conversation_rate.<check>``: conversations with a verdict of ``<check>`` before the
  loop (a check on turns away from the cut, like an unanswered yes/no question, shows here);
* ``user_distinct1/2``, ``assistant_distinct1/2``: distinct n-grams over n-grams, per role (a cut
  message with its planned text); ``assistant_distinct2_spoken``: over what was said;
* ``recovery_repeat_rate``: recoveries that say 6+ heard words again, word for word;
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


_WILD = "\0"                     # one slot: stands for one or more words
_MAX_FILL = 24                   # ... at most this many (a spoken address, a hidden-fact clause)


def _pattern(text: str, values: tuple[tuple[str, ...], ...] = ()) -> tuple[str, ...]:
    """Tokens of a template sentence with every ``{slot}`` (and every token run equal to one of
    ``values``) replaced by a wildcard."""
    toks: list[str] = []
    for i, part in enumerate(re.split(r"\{\w+\}", text)):
        if i:
            toks.append(_WILD)
        toks += tokens(part)
    for v in sorted(values, key=len, reverse=True):
        n, i, out = len(v), 0, []
        while i < len(toks):
            if n and tuple(toks[i:i + n]) == v:
                out.append(_WILD)
                i += n
            else:
                out.append(toks[i])
                i += 1
        toks = out
    collapsed: list[str] = []
    for t in toks:                     # two wildcards in a row are one
        if not (t == _WILD and collapsed and collapsed[-1] == _WILD):
            collapsed.append(t)
    return tuple(collapsed)


def _sentence_patterns(text: str, values=()) -> list[tuple[str, ...]]:
    return [p for a, b in sentences(text) if set(p := _pattern(text[a:b], values)) - {_WILD}]


_MAX_VARIANTS = 256                 # rewordings of one talking point the instrument follows


@lru_cache(maxsize=4096)
def _reworded(text: str) -> tuple[str, ...]:
    """``text`` and every rewording the phrase bank's ``paraphrase`` rules can make of it (the
    offline agent says a talking point in one of these wordings, and a restarted sentence in
    another): each rule's pattern, or any of its whole-sentence wordings, replaced by each of
    its wordings, rule after rule, up to ``_MAX_VARIANTS`` texts."""
    from bargein.generators import phrases as P

    out = [text]
    for rule in sorted(P.bank("assistant", "paraphrase"), key=lambda r: -len(r["match"])):
        pattern = P._any_wording(rule["match"], tuple(rule["say"]))
        grown = []
        for t in out:
            if not pattern.search(t):
                continue
            for say in rule["say"]:
                try:
                    v = pattern.sub(say, t)
                except (re.error, IndexError):   # a wording with a group the match lacks
                    continue
                if v != t:
                    grown.append(v)
        for v in grown:
            if len(out) >= _MAX_VARIANTS:
                break
            if v not in out:
                out.append(v)
    return tuple(out)


@lru_cache(maxsize=1)
def _templates() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(name, token pattern) of every phrase-bank entry, and of each sentence of a longer one
    (a ``paraphrase`` rule counts with each of its wordings, and a talking-point sentence with
    each of its wordings in the rewordings files)."""
    from bargein.generators import phrases as P

    out = []
    for file in P.BANK_FILES:
        for key, items in P._load(file).items():
            for j, t in enumerate(items):
                if key == "paraphrase" and isinstance(t, dict):
                    texts = [w for w in t.get("say", ()) if "\\" not in w and len(w.split()) >= 4]
                else:
                    texts = [t] if isinstance(t, str) else [v for v in t.values() if isinstance(v, str)]
                for x in texts:
                    if not x.strip():
                        continue
                    pats = {_pattern(x), *_sentence_patterns(x)}
                    out += [(f"{file}.{key}[{j}]", p) for p in pats if set(p) - {_WILD}]
    from bargein.generators import rewordings as R

    for j, g in enumerate(R.groups()):      # a talking point said in another of its wordings
        for x in g.wordings[1:]:
            if set(p := _pattern(x)) - {_WILD}:
                out.append((f"rewordings_{g.domain}[{j}]", p))
    return tuple(out)


def _ends(pat: tuple[str, ...], toks: list[str], i: int) -> set[int]:
    """Every ``j`` such that ``toks[i:j]`` matches ``pat`` (a wildcard takes 1+ tokens)."""
    if not pat:
        return {i}
    head, rest = pat[0], pat[1:]
    if head != _WILD:
        return _ends(rest, toks, i + 1) if i < len(toks) and toks[i] == head else set()
    out: set[int] = set()
    for k in range(i + 1, min(len(toks), i + _MAX_FILL) + 1):
        out |= _ends(rest, toks, k)
    return out


def _index(pats, suffixes: bool = False) -> dict[str | None, list[tuple[str, ...]]]:
    """Patterns by first token (None: a wildcard first); ``suffixes``: every proper tail."""
    out: dict[str | None, list[tuple[str, ...]]] = defaultdict(list)
    for p in pats:
        for s in (range(1, len(p)) if suffixes else (0,)):
            q = p[s:]
            out[None if q[0] == _WILD else q[0]].append(q)
    return out


@lru_cache(maxsize=1)
def _bank_index() -> tuple[dict, dict]:
    pats = [p for _, p in _templates()]
    return _index(pats), _index(pats, suffixes=True)


class _Pieces:
    """Template pieces indexed by first token; a sentence is templated when it is a sequence of
    pieces (an opener, a core, a tail; a lead and a talking point), however the slots are filled.
    A message's first sentence may also open with the tail of a piece (the rest of a cut one)."""

    def __init__(self, kb_pats):
        bank, bank_tails = _bank_index()
        kb, kb_tails = _index(kb_pats), _index(kb_pats, suffixes=True)
        self.whole = (bank, kb)
        self.tails = (bank_tails, kb_tails)

    @staticmethod
    def _cands(indexes, tok: str):
        for ix in indexes:
            yield from ix.get(tok, ())
            yield from ix.get(None, ())

    def covers(self, toks: list[str], first_sentence: bool) -> bool:
        n = len(toks)
        if not n:
            return False
        reach = [False] * (n + 1)
        reach[0] = True
        if first_sentence:
            for p in self._cands(self.tails, toks[0]):
                for j in _ends(p, toks, 0):
                    reach[j] = True
        for i in range(n):
            if reach[n]:
                return True
            if not reach[i]:
                continue
            for p in self._cands(self.whole, toks[i]):
                for j in _ends(p, toks, i):
                    reach[j] = True
        return reach[n]


def _scenario_values(c: Conversation) -> tuple[tuple[str, ...], ...]:
    sc = c.scenario
    vals = set()
    for f in (*sc.kb.user_facts, *sc.intent.hidden_facts):
        vals |= {tuple(tokens(f.value)), tuple(tokens(f.spoken))}
    for corr in sc.intent.corrections:
        vals |= {tuple(tokens(corr.first_value)), tuple(tokens(corr.corrected_value))}
    return tuple(v for v in vals if v)


def templating(convs: list[Conversation]) -> tuple[float, int, int]:
    """(share of assistant sentences made of templates, distinct user templates covering the
    interjections, interjections).

    A sentence counts as templated when it is a sequence of template pieces: phrase-bank entries
    (and each sentence of a longer entry) with any slot fill, talking-point sentences and other
    knowledge-base text of the scenario with any value in the places of its facts, and, first in
    a message, the tail of such a sentence (the rest of a cut one). So an opener + core + tail,
    a resume lead + a talking point, or a talking point re-filled with corrected values all count.
    """
    bank = _templates()
    hit = total = n_inter = 0
    used: set[str] = set()
    for c in convs:
        vals = _scenario_values(c)
        kb = []
        for s in c.scenario.kb.workflow.stages:
            kb += _sentence_patterns(s.description, vals)
            for tp in (*s.talking_points, *s.failure_handling):
                for variant in _reworded(tp):   # the same talking point in a bank's wording
                    kb += _sentence_patterns(variant, vals)
        for g in c.scenario.kb.guidelines:
            kb += _sentence_patterns(g, vals)
        pieces = _Pieces(kb)
        for m in c.messages:
            if m.role == "assistant":
                for n, (a, b) in enumerate(sentences(m.text)):
                    total += 1
                    hit += pieces.covers(tokens(m.text[a:b]), first_sentence=n == 0)
        for _, u in c.interruptions:
            n_inter += 1
            toks = tokens(u.text)
            name = next((nm for nm, p in bank if nm.startswith("user.") and len(toks) in _ends(p, toks, 0)),
                        " ".join(toks))
            used.add(name)
    return (round(hit / total, 4) if total else 0.0), len(used), n_inter


def recurring_sentence_share(convs: list[Conversation], role: str = "assistant",
                             min_conversations: int = 3) -> float:
    """A second instrument that never reads the banks: the share of ``role`` sentences whose
    skeleton (digits and capitalised words after the first masked) occurs in at least
    ``min_conversations`` conversations of the corpus."""
    def skeleton(text: str) -> str:
        words = text.split()
        out = [w if i == 0 or not w[:1].isupper() else "X" for i, w in enumerate(words)]
        return re.sub(r"\d+", "#", " ".join(tokens(" ".join(out))))

    where: dict[str, set[str]] = defaultdict(set)
    sents: list[str] = []
    for c in convs:
        for m in c.messages:
            if m.role == role:
                for a, b in sentences(m.text):
                    sk = skeleton(m.text[a:b])
                    where[sk].add(c.id)
                    sents.append(sk)
    if not sents:
        return 0.0
    return round(sum(len(where[s]) >= min_conversations for s in sents) / len(sents), 4)


def recovery_repeat_rate(convs: list[Conversation], run: int = 6) -> float:
    """Share of recoveries (the assistant turn after an interjection other than a backchannel)
    that say again a run of ``run``+ words the caller heard in the cut turn, word for word
    (IHBench: a recovery does not repeat what was already heard; a restart is a fresh start,
    in other words). Reads no bank; a long value said again (an address) counts too::

        cut       "Are you the patient, or are you calling on | their behalf? ..."
        recovery  "Sure. Are you the patient, or are you calling for them?"   -> a repeat (8 words)
    """
    hits = total = 0
    for c in convs:
        for m, u in c.interruptions:
            if m.interruption.type == "filler" or u.index + 1 >= len(c.messages):
                continue
            rec = c.messages[u.index + 1]
            if rec.role != "assistant":
                continue
            total += 1
            heard = tokens(m.heard_text or "")
            grams = {tuple(heard[i:i + run]) for i in range(len(heard) - run + 1)}
            said = tokens(rec.text)
            hits += any(tuple(said[i:i + run]) in grams for i in range(len(said) - run + 1))
    return round(hits / total, 4) if total else 0.0


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


def rejected_sources(rows: list[dict]) -> dict[str, Any]:
    """Where the DPO rejected sides come from: rows per ``rejected_source`` (``model``: the
    configured model's own failure; ``anti_pattern``: the offline simulator), the offline rows'
    fallback reasons when a model was configured, and the model with its settings."""
    src = Counter(r.get("rejected_source", "anti_pattern") for r in rows)
    fallback = Counter(r["rejected_fallback"] for r in rows if r.get("rejected_fallback"))
    models = sorted({r["rejected_model"] for r in rows if r.get("rejected_model")})
    out: dict[str, Any] = {"dpo_rejected_sources": dict(sorted(src.items()))}
    if fallback:
        out["dpo_rejected_fallbacks"] = dict(sorted(fallback.items()))
    if models:
        out["dpo_rejected_model"] = "; ".join(models) if len(models) > 1 else models[0]
    return out


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
    conv_flagged: Counter[str] = Counter()
    for v in verified:
        conv_flagged.update({x.check for x in v.verdicts if x.round == 0})
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
        out[f"flagged_conversation_rate.{c}"] = (round(conv_flagged[c] / len(verified), 4)
                                                 if verified else 0.0)
    for role in ("user", "assistant"):
        texts = [m.text for c in accepted for m in c.messages if m.role == role]
        out[f"{role}_distinct1"] = distinct(texts, 1)
        out[f"{role}_distinct2"] = distinct(texts, 2)
    # the same over what was said: a cut turn up to the cut (its unsaid rest is said, if at
    # all, by the recovery, and would otherwise count twice)
    out["assistant_distinct2_spoken"] = distinct(
        [m.spoken_text for c in accepted for m in c.messages if m.role == "assistant"], 2)
    out["recovery_repeat_rate"] = recovery_repeat_rate(accepted)
    share, n_templates, n_inter = templating(accepted)
    out["templated_sentence_share"] = share
    out["recurring_sentence_share"] = recurring_sentence_share(accepted)
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
        out.update(rejected_sources(dpo_rows))
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
