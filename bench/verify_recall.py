"""Verifier recall on a seeded-defect corpus, and false positives on clean look-alikes.

    python bench/verify_recall.py [--scenarios 50] [--seed 7] [--per-kind 60]

Generates the offline conversations (``generate conversations --scenarios 50 --seed 7``), keeps
the accepted ones, and injects one defect of each kind at a known place (``bench/_inject.py``:
wording lists of its own, written as the error would appear, not from the checks' patterns),
at least ``--per-kind`` times per kind. A defect is found when the verifier reports the kind's
check at the injected message. Each kind also has clean look-alike edits (a pushback on a real
fee, a "you mentioned" the caller did say, "an hour", a quote of a whole message...): any
verdict of the kind's check there is a false positive.

Prints per kind ``recall`` and ``fp``, then ``verifier_recall_min`` (weakest kind) and
``verifier_false_positive_rate`` (flagged clean look-alikes plus flagged untouched accepted
conversations, over both).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from pathlib import Path

# bench/ holds a module named like a stdlib one (inspect.py): load our helper by path instead
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]


def _load_helper(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


I = _load_helper("_inject")  # noqa: E741
D = _load_helper("_inject_discourse")
C = _load_helper("_inject_consistency")

from bargein.generators.conversation import generate_conversations  # noqa: E402
from bargein.generators.scenarios import generate_scenarios  # noqa: E402
from bargein.seeding import stable_int  # noqa: E402
from bargein.verify.checks import run_checks  # noqa: E402

PERSONAL = {"full_name", "date_of_birth", "email", "phone_number", "home_address"}


def disclosed_keys(conv) -> frozenset[str]:
    """Fact keys only the system holds in this conversation, by the injector's own reading: the
    scenario does not give them to the caller (not in what the intent provides or corrects, no
    personal detail), nobody asked the caller for them, and the first sentence that says the
    value is an assistant statement."""
    out = set()
    user_side = set(conv.scenario.intent.provides) | {c.key for c in conv.scenario.intent.corrections}
    for f in conv.scenario.kb.user_facts:
        if f.key in PERSONAL or f.key in user_side or f.kind in ("name", "email", "phone", "address"):
            continue
        forms = [v for v in (f.value, f.spoken) if v and len(v) > 3]
        name = f.key.replace("_", " ")
        said = []
        for m in conv.messages:
            for sent in re.split(r"(?<=[.?!])\s+", m.spoken_text):
                if m.role == "assistant" and sent.endswith("?") and name in sent.lower():
                    said.append(("asked", sent))
                if any(v in sent for v in forms):
                    said.append((m.role, sent))
        if said and said[0][0] == "assistant" and not said[0][1].endswith("?"):
            out.add(f.key)
    return frozenset(out)


# ---- tone after bad news, repeated markers (verify/tone.py): injected here, own wording ------
BAD_NEWS = ["Sorry, it's been a rough week, the flat flooded on Sunday.",
            "My wallet was stolen on the bus yesterday, so I'm a bit all over the place.",
            "I was laid off last month, so money is tight.",
            "My dad passed away on Friday and I'm sorting out his things.",
            "Honestly our kitchen ceiling caved in after the storm.",
            "I've just come out of hospital, so bear with me.",
            "Someone used my card for purchases I never made, it's fraud.",
            "The car was damaged in an accident last week."]
CHEER = ["Oh, wonderful!", "Great, great.", "Perfect, that's great.", "Fantastic.",
         "Oh lovely, thanks.", "Excellent, good to know."]
KIND = ["Oh no, I'm sorry about that.", "I'm so sorry to hear it.", "That sounds awful, I'm sorry.",
        "Thank you for telling me, that must be hard."]


def _tone_sites(conv) -> list[int]:
    ms = conv.messages
    return [i for i in range(2, len(ms)) if ms[i].role == "assistant" and ms[i - 1].role == "user"
            and ms[i].interruption is None and ms[i - 2].interruption is None
            and not ms[i].text[:1].islower()]


def _tone_edit(conv, rng, opener_list, news: bool):
    sites = _tone_sites(conv)
    if not sites:
        return None
    i = rng.choice(sites)
    msgs = list(conv.messages)
    if news:
        msgs[i - 1] = msgs[i - 1].with_(text=f"{msgs[i - 1].text} {rng.choice(BAD_NEWS)}")
    msgs[i] = msgs[i].with_(text=f"{rng.choice(opener_list)} {msgs[i].text}")
    return conv.with_(messages=tuple(msgs)), i


def cheer_after_bad_news(conv, rng):
    return _tone_edit(conv, rng, CHEER, news=True)


def clean_tone(conv, rng):
    if rng.random() < 0.5:                  # sympathy after bad news
        return _tone_edit(conv, rng, KIND, news=True)
    return _tone_edit(conv, rng, CHEER, news=False)     # cheer after ordinary news


DOUBLED = ["Okay, right. Okay, {rest}", "Now, moving on, now {rest}", "So, as I said, so {rest}",
           "Right, thanks. Right, {rest}", "Alright, good. Alright, {rest}",
           "Okay, so, okay, {rest}"]
SINGLE = ["Okay, right. {Rest}", "Now, moving on, {rest}", "So, as I said, {rest}",
          "Right, thanks. Now, {rest}", "Alright. Okay, {rest}", "Good. So, {rest}"]


def _marker_edit(conv, rng, forms):
    sites = [i for i, m in enumerate(conv.messages) if m.role == "assistant" and i > 0
             and m.interruption is None and m.text[:1].isupper()
             and conv.messages[i - 1].interruption is None]
    if not sites:
        return None
    i = rng.choice(sites)
    msgs = list(conv.messages)
    t = msgs[i].text
    form = rng.choice(forms)
    if forms is SINGLE:
        # a clean look-alike must stay clean: "Okay, right. {Rest}" before a turn that opens
        # with "Okay, noted." says the marker twice in a row (a real defect, not a look-alike)
        lead = {w.lower() for w in re.findall(r"[A-Za-z]+", form.split("{")[0])}
        first = re.match(r"\W*([A-Za-z]+)", t)
        # ... or whose next sentence opens with it ("So, as I said, X. So, going back ...")
        opens = [w.lower() for w in re.findall(r"(?:^|[.!?]\s+)([A-Za-z]+),", t)[:2]]
        if (first and first.group(1).lower() in lead) or lead & set(opens):
            return None
    msgs[i] = msgs[i].with_(text=form.format(rest=t[:1].lower() + t[1:], Rest=t))
    return conv.with_(messages=tuple(msgs)), i


def marker_twice(conv, rng):
    return _marker_edit(conv, rng, DOUBLED)


def clean_marker(conv, rng):
    return _marker_edit(conv, rng, SINGLE)


def last_stage(conv) -> set[str]:
    return {conv.scenario.kb.workflow.stages[-1].name}


KINDS = {
    "interjection_grounded": (I.pushback_fragment, I.clean_pushback),
    "impatient_has_rest": (I.impatient_in_question, I.clean_impatient),
    "grammar_casing": (I.grammar, I.clean_grammar),
    "attribution_grounded": (I.attribution, I.clean_attribution),
    "hidden_fact_addressed": (I.hidden_ignored, I.clean_hidden),
    "user_states_system_value": (lambda c, r: I.system_value(c, r, disclosed_keys(c)),
                                 D.clean_own_value),
    "resolved_goal_reached": (lambda c, r: I.resolved_early(c, r, last_stage(c)), None),
    "tf_not_given": (I.tf_given, I.clean_tf),
    "rq_whole_phrase": (I.rq_fragment, I.clean_rq),
    "tone_after_bad_news": (cheer_after_bad_news, clean_tone),
    "repeated_marker": (marker_twice, clean_marker),
    "presupposed_value": (D.presupposed, D.clean_presupposed),
    "cut_inside_value": (D.cut_inside, D.clean_cut),
    "yes_no_answered": (D.unanswered, D.clean_answered),
    "grammar_gold": (D.gold_slip, D.clean_gold),
    "escalation_addressed": (D.escalation_ignored, D.clean_escalation),
    "confirmation_has_object": (D.empty_confirmation, D.clean_confirmation),
    "gold_meets_own_rubric": (D.gold_restates, D.clean_gold_rubric),
    "doubled_phrase": (D.doubled_clause, D.clean_doubled),
    "task_abandoned_on_skip": (D.abandoned, D.clean_abandoned),
    "pushback_on_benefit": (D.pushback_benefit, D.clean_pushback_burden),
    "pushback_on_cost": (C.pushback_not_cost, C.clean_pushback_cost),
    "impatient_at_readback": (C.impatient_readback, C.clean_impatient_explain),
    "grammar_agreement": (C.agreement, C.clean_agreement),
    "reasks_given_value": (C.reask, C.clean_first_ask),
    "reasks_after_verified": (C.verified_reask, C.clean_not_yet_verified),
    "system_price_stated": (C.price_stated, C.clean_own_amount),
}
# kinds measured through a check of another name
CHECK_OF = {"grammar_agreement": "grammar_casing", "system_price_stated": "user_states_system_value"}


def hits(conv, check: str, index) -> bool:
    return any(v.check == check and (index is None or v.message_index == index)
               for v in run_checks(conv))


def measure(convs, kind: str, fn, n: int, seed: int) -> tuple[int, int, list]:
    found = total = 0
    misses = []
    attempt = 0
    while total < n and attempt < n * 20:
        conv = convs[attempt % len(convs)]
        rng = random.Random(stable_int("inject", kind, seed, attempt))
        attempt += 1
        out = fn(conv, rng)
        if out is None:
            continue
        bad, idx = out
        total += 1
        if hits(bad, CHECK_OF.get(kind, kind), idx):
            found += 1
        elif len(misses) < 3:
            misses.append((conv.id, idx, bad.messages[idx].text[:160] if idx is not None else ""))
    return found, total, misses


def measure_fp(convs, kind: str, fn, n: int, seed: int) -> tuple[int, int, list]:
    flagged = total = 0
    shown = []
    attempt = 0
    while total < n and attempt < n * 20:
        conv = convs[attempt % len(convs)]
        rng = random.Random(stable_int("clean", kind, seed, attempt))
        attempt += 1
        out = fn(conv, rng)
        if out is None:
            continue
        ok, idx = out
        total += 1
        vs = [v for v in run_checks(ok) if v.check == CHECK_OF.get(kind, kind)]
        if vs:
            flagged += 1
            if len(shown) < 3:
                shown.append((conv.id, idx, vs[0].issue[:120], vs[0].evidence[:160]))
    return flagged, total, shown


def print_flag_rates(verified) -> None:
    """What the checks flag on the generated data itself (before the verifier-modifier loop):
    per check, verdicts per 100 interruption points, conversations flagged, conversations
    repaired (all its verdicts fixed) and discarded for it."""
    from collections import Counter

    points = sum(len(v.conversation.interruptions) for v in verified)
    n = len(verified)
    verdicts, flagged, discarded = Counter(), Counter(), Counter()
    for v in verified:
        first = [x for x in v.verdicts if x.round == 0]
        verdicts.update(x.check for x in first)
        flagged.update({x.check for x in first})
        discarded.update({r.split(":", 1)[0] for r in v.discard_reasons})
    print(f"data: conversations={n} interruption_points={points} "
          f"accepted={sum(v.accepted for v in verified)}")
    from bargein.verify.checks import CHECKS
    for c in CHECKS:
        if verdicts[c] or discarded[c]:
            print(f"  flagged {c:26s} per100points={100 * verdicts[c] / points:5.1f} "
                  f"conversations={flagged[c]:3d} ({flagged[c] / n:.3f}) "
                  f"discarded={discarded[c]:3d} ({discarded[c] / n:.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-kind", type=int, default=60)
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--kinds", default="", help="comma-separated kinds to measure (default all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scn = generate_scenarios(args.scenarios, args.seed, workdir=tmp, progress=False).outputs
        run = generate_conversations(scn, seed=args.seed, workdir=tmp, progress=False,
                                     sft=False, dpo=False)
    convs = [v.conversation for v in run.verified if v.accepted]
    print_flag_rates(run.verified)
    clean_flagged = sum(1 for c in convs if run_checks(c))
    print(f"accepted_conversations={len(convs)} flagged_untouched={clean_flagged}")
    recalls, fp_num, fp_den = [], clean_flagged, len(convs)
    for kind, (bad_fn, clean_fn) in KINDS.items():
        if args.kinds and kind not in args.kinds.split(","):
            continue
        found, total, misses = measure(convs, kind, bad_fn, args.per_kind, args.seed)
        rec = found / total if total else 0.0
        recalls.append(rec)
        line = f"{kind:26s} injected={total:3d} found={found:3d} recall={rec:.3f}"
        if clean_fn is not None:
            f2, t2, fps = measure_fp(convs, kind, clean_fn, args.per_kind, args.seed + 1)
            fp_num += f2
            fp_den += t2
            line += f" clean={t2:3d} fp={f2 / t2 if t2 else 0:.3f}"
        print(line)
        if args.show_misses:
            for m in misses:
                print("    miss:", m)
            for m in (fps if clean_fn is not None else []):
                print("    false positive:", m)
        if total < 50:
            print(f"    (only {total} sites for {kind})")
    print(f"verifier_recall_min={min(recalls):.3f}")
    print(f"verifier_false_positive_rate={fp_num / fp_den if fp_den else 0:.3f}")


if __name__ == "__main__":
    main()
