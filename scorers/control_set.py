"""The judge control set: hand-labelled judgments a judge must reproduce (package data).

    items = control_items()                  # list[ControlItem], IHBench TF/RQ and EAR R/C
    len(items), {i.axis for i in items}      # ~700, {"tf", "rq", "ear_r", "ear_c"}

Cases are written by hand in ``scorers/control/*.yaml`` (independent of the generator's
catalogue, phrase banks and rubric wording): ``ihbench_cases.yaml`` (split into dev and
held-out parts by a stable hash, :func:`dev_cases`) and ``ihbench_dev_cases.yaml`` (development
cases added later, always in the dev part; who wrote them and how is in the file's header
fields, :func:`control_metadata`) and ``ihbench_heldout2_cases.yaml`` (a second held-out part,
written before judge v6, with its own compositions of failing answers; :func:`heldout2_cases`). Per IHBench case, each labelled response is one RQ
item (good answers pass; everything else fails) and each failing response is paired with a good
one as a TF item whose expected winner is the good answer, shown first or second by a stable
hash so positions are balanced. Failing answers are also composed from the case's own fields
(content-free templates, echoes of the interjection, restarts, carrying on as if nothing was
said, over-apologies). Per EAR source utterance there is an unanswerable variant (expected
repair category per reply) and an answerable one (expected correctness per reply).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml

from bargein.records import ChatMessage, EvalItem, MaskedItem, Rubric, WordTiming
from bargein.seeding import stable_int

CONTROL_VERSION = "control-v3"     # v2: + ihbench_dev_cases.yaml (dev part only); v3: + heldout2
GOOD = ("good_paraphrase", "good_spoken", "good_reordered", "good_exact")
PARAPHRASES = ("good_paraphrase", "good_spoken", "good_reordered")
Axis = Literal["tf", "rq", "ear_r", "ear_c"]


@dataclass(frozen=True)
class ControlItem:
    """One labelled judgment. ``expected``: "pass"/"fail" (rq), "A"/"B" (tf), a repair category
    (ear_r), "correct"/"incorrect" (ear_c)."""

    id: str
    axis: Axis
    kind: str                      # interruption type, or "ear"
    category: str                  # what the (failing or good) response is
    expected: str
    item: Any                      # EvalItem (tf, rq) or MaskedItem (ear_r, ear_c)
    response: str = ""
    response_b: str = ""           # tf: the second response shown


def _load(name: str) -> dict:
    return yaml.safe_load((resources.files("bargein.scorers") / "control" / name).read_text("utf-8"))


def _eval_item(case: dict) -> EvalItem:
    history = tuple(ChatMessage(role=r, content=t) for r, t in case["history"]) + (
        ChatMessage(role="assistant", content=case["heard"]),
        ChatMessage(role="user", content=case["interjection"]))
    return EvalItem(
        id=f"ctl-{case['id']}", conversation_id=f"ctl-{case['id']}", domain="control",
        message_index=len(history) - 1, system_prompt=case["system_prompt"], history=history,
        interjection=case["interjection"], type=case["type"], depth=sum(1 for r, _ in case["history"]
                                                                        if r == "user"),
        rubric=Rubric(message_index=len(history) - 1, type=case["type"], tf_criterion=case["tf"],
                      rq_criteria=tuple(case["rq"])),
        gold_recovery="", planned_text=case["planned"], heard_text=case["heard"],
        baseline=None)


def _remainder(case: dict) -> str:
    planned, heard = case["planned"], case["heard"]
    return planned[len(heard):].strip() if planned.startswith(heard) else planned


def _pick(options: list[str], n: int, *salt: Any) -> list[str]:
    start = stable_int("control", *salt) % len(options)
    return [options[(start + k) % len(options)] for k in range(min(n, len(options)))]


def _composed(case: dict, tpl: dict) -> dict[str, list[str]]:
    """Failing answers composed from the case's fields and ``tpl`` (templates.yaml, or the
    ``compose`` block of the file the case comes from)."""
    inter = case["interjection"].strip()
    fields = {"i": inter, "il": inter[0].lower() + inter[1:], "planned": case["planned"],
              "remainder": _remainder(case)}
    out = {
        "template": _pick(tpl["template"], 2, case["id"], "template"),
        "echo": [t.format(**fields) for t in _pick(tpl["echo"], 1, case["id"], "echo")],
        "restart": [t.format(**fields) for t in _pick(tpl["restart"], 1, case["id"], "restart")],
        "over_apology": _pick(tpl["over_apology"], 1, case["id"], "apology"),
    }
    ignore = [t.format(**fields) for t in tpl["ignore"]]
    out["good_exact" if case["type"] == "filler" else "ignore"] = ignore
    return out


DEV_ONLY_FILE = "ihbench_dev_cases.yaml"
HELDOUT2_FILE = "ihbench_heldout2_cases.yaml"


def control_metadata() -> dict[str, dict]:
    """Per control-set file, its header fields (version, and for the added dev cases who wrote
    them, when and from what)."""
    names = ("ihbench_cases.yaml", DEV_ONLY_FILE, HELDOUT2_FILE, "templates.yaml", "ear_cases.yaml")
    return {n: {k: v for k, v in _load(n).items() if not isinstance(v, (list, dict))} for n in names}


def _ihbench_cases() -> list[tuple[dict, dict]]:
    """Every IHBench case with the compositions its failing answers are made from."""
    tpl = _load("templates.yaml")
    h2 = _load(HELDOUT2_FILE)
    return ([(c, tpl) for c in _load("ihbench_cases.yaml")["cases"] + _load(DEV_ONLY_FILE)["cases"]]
            + [(c, h2["compose"]) for c in h2["cases"]])


def dev_only_cases() -> frozenset[str]:
    """The cases of ``ihbench_dev_cases.yaml``: development cases, never held out."""
    return frozenset(c["id"] for c in _load(DEV_ONLY_FILE)["cases"])


@lru_cache(maxsize=1)
def heldout2_cases() -> frozenset[str]:
    """The cases of ``ihbench_heldout2_cases.yaml``: the second held-out part, written by hand
    before judge v6 and never used to work on a judge. They take no part in the hashed dev
    choice, so the dev and (first) held-out parts are the same as before them."""
    return frozenset(c["id"] for c in _load(HELDOUT2_FILE)["cases"])


def ihbench_control() -> list[ControlItem]:
    out: list[ControlItem] = []
    for case, tpl in _ihbench_cases():
        item = _eval_item(case)
        responses = {k: list(v) for k, v in case["responses"].items()}
        for k, v in _composed(case, tpl).items():      # hand-written ones first, then composed
            responses.setdefault(k, []).extend(v)
        goods = [(c, t) for c in GOOD for t in responses.get(c, [])]
        bads = [(c, t) for c, ts in responses.items() if c not in GOOD for t in ts]
        for c, ts in responses.items():
            for n, t in enumerate(ts):
                out.append(ControlItem(id=f"{case['id']}/rq/{c}/{n}", axis="rq", kind=case["type"],
                                       category=c, expected="pass" if c in GOOD else "fail",
                                       item=item, response=t))
        for n, (c, bad) in enumerate(bads):
            good = goods[n % len(goods)][1]
            good_first = stable_int("control-tf", case["id"], n) % 2 == 0
            a, b = (good, bad) if good_first else (bad, good)
            out.append(ControlItem(id=f"{case['id']}/tf/{c}/{n}", axis="tf", kind=case["type"],
                                   category=c, expected="A" if good_first else "B", item=item,
                                   response=a, response_b=b))
    return out


def _words(text: str) -> tuple[WordTiming, ...]:
    return tuple(WordTiming(word=w, start_s=round(0.3 * k, 3), end_s=round(0.3 * k + 0.25, 3))
                 for k, w in enumerate(text.split()))


def _masked_item(src: dict, condition: str) -> MaskedItem:
    masked = src[f"masked_{condition}"]
    return MaskedItem(
        id=f"ctl-{src['id']}-{condition}", source_id=f"ctl-{src['id']}", source_kind="conversation",
        message_index=len(src["context"]), audio_path=f"control/{src['id']}-{condition}.wav",
        transcript=src["transcript"], words=_words(src["transcript"]), spans=(),
        condition=condition, signal="white_noise", answer=src["answer"], slot=src["slot"],
        expected_behaviour="answer" if condition == "answerable" else
        f"slot-aware repair asking for the {src['slot'].replace('_', ' ')}",
        context=tuple({"role": r, "content": t} for r, t in src["context"]),
        masked_transcript=masked)


def ear_control() -> list[ControlItem]:
    data = _load("ear_cases.yaml")
    out: list[ControlItem] = []
    for src in data["sources"]:
        un, an = _masked_item(src, "unanswerable"), _masked_item(src, "answerable")
        slot_words = src["slot"].replace("_", " ")
        r_cases = ([("explicit_repair", "explicit_repair", t) for t in src["explicit_repair"]]
                   + [("generic_refusal", "generic_refusal", t)
                      for t in _pick(data["generic_refusal"], 1, src["id"], "generic")]
                   + [("hallucination", "answer", src["hallucination"])]
                   + [("unaware", "answer", t) for t in _pick(data["unaware"], 1, src["id"], "unaware")])
        for n, (cat, want, text) in enumerate(r_cases):
            out.append(ControlItem(id=f"{src['id']}/ear_r/{cat}/{n}", axis="ear_r", kind="ear",
                                   category=cat, expected=want, item=un, response=text))
        c_cases = ([("good_answer", "correct", t) for t in src["correct"]]
                   + [("wrong_value", "incorrect", src["wrong_value"])]
                   + [("content_free", "incorrect", t)
                      for t in _pick(data["content_free"], 1, src["id"], "okay")]
                   + [("needless_repair", "incorrect", t.format(slot_words=slot_words))
                      for t in _pick(data["needless_repair"], 1, src["id"], "needless")])
        for n, (cat, want, text) in enumerate(c_cases):
            out.append(ControlItem(id=f"{src['id']}/ear_c/{cat}/{n}", axis="ear_c", kind="ear",
                                   category=cat, expected=want, item=an, response=text))
    return out


@lru_cache(maxsize=1)
def _all() -> tuple[ControlItem, ...]:
    return tuple(ihbench_control() + ear_control())


def control_items(scorer: str = "all") -> list[ControlItem]:
    """The control set: ``scorer`` "ihbench" (tf, rq), "ear" (ear_r, ear_c) or "all"."""
    axes = {"ihbench": ("tf", "rq"), "ear": ("ear_r", "ear_c")}.get(scorer, ("tf", "rq", "ear_r", "ear_c"))
    return [i for i in _all() if i.axis in axes]


def case_of(item: ControlItem) -> str:
    """The hand-written case (IHBench) or source utterance (EAR) a judgment comes from."""
    return item.id.split("/", 1)[0]


@lru_cache(maxsize=1)
def dev_cases() -> frozenset[str]:
    """The development part of the control set: per interruption type one IHBench case of
    ``ihbench_cases.yaml`` in four, and one EAR source in four, chosen by a stable hash (never by
    looking at a judge's answers), plus every case of ``ihbench_dev_cases.yaml``. The added dev
    cases take no part in the hashed choice, so the held-out part is the same as before them.

    Judge prompts may be worked on against these cases only; figures are reported on the
    held-out rest (:func:`split`), so no prompt is tuned on the judgments it is measured on."""
    by_group: dict[str, list[str]] = {}
    for i in _all():
        key = i.kind if i.axis in ("tf", "rq") else "ear"
        case = case_of(i)
        if case not in by_group.setdefault(key, []):
            by_group[key].append(case)
    extra, h2 = dev_only_cases(), heldout2_cases()
    dev: set[str] = set(extra)
    for key, cases in by_group.items():
        cases = [c for c in cases if c not in extra and c not in h2]
        ranked = sorted(cases, key=lambda c: stable_int("control-dev", c))
        dev.update(ranked[: max(1, len(cases) // 4)])
    return frozenset(dev)


SPLITS = ("all", "dev", "heldout", "heldout2", "dev+heldout")


def split(items: list[ControlItem], part: str = "all") -> list[ControlItem]:
    """``part`` "dev" (prompt work), "heldout" (the first held-out part: judged by judge v3 to v5,
    development material since judge v6), "heldout2" (the second held-out part, written before
    judge v6: report these), "dev+heldout" (everything but heldout2) or "all"."""
    if part not in SPLITS:
        from bargein.errors import ConfigError

        raise ConfigError(f"control-set split {part!r}: valid splits are {', '.join(SPLITS)}")
    if part == "all":
        return list(items)
    dev, h2 = dev_cases(), heldout2_cases()
    if part == "heldout2":
        return [i for i in items if case_of(i) in h2]
    if part == "dev+heldout":
        return [i for i in items if case_of(i) not in h2]
    return [i for i in items if case_of(i) not in h2 and (case_of(i) in dev) == (part == "dev")]


def stratified(items: list[ControlItem], limit: int | None) -> list[ControlItem]:
    """At most ``limit`` items, round-robin over (axis, kind, category) groups (axes interleaved,
    groups in a stable hashed order), so a small subset still spans axes, types and categories.
    A smaller ``limit`` gives a prefix of a larger one's order (a run stopped for time can be
    reported on the judgments it finished)."""
    if limit is None:
        return list(items)
    limit = min(limit, len(items))
    groups: dict[tuple[str, str, str], list[ControlItem]] = {}
    for i in sorted(items, key=lambda i: stable_int("control-order", i.id)):
        groups.setdefault((i.axis, i.kind, i.category), []).append(i)
    out: list[ControlItem] = []
    by_axis: dict[str, list[tuple[str, str, str]]] = {}
    for k in sorted(groups, key=lambda k: stable_int("control-group", *k)):
        by_axis.setdefault(k[0], []).append(k)
    keys = [k for row in zip(*(by_axis[a] + [None] * (max(map(len, by_axis.values())) - len(by_axis[a]))
                               for a in sorted(by_axis))) for k in row if k is not None]
    while len(out) < limit:
        for k in keys:
            if groups[k] and len(out) < limit:
                out.append(groups[k].pop(0))
    return out
