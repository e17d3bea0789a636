"""Anti-pattern simulator: realistic *bad* recoveries, the rejected side of DPO pairs.

Each type has the failures IHBench's rubrics check for::

    filler        acknowledge the backchannel / restart the cut sentence (re-deliver heard words)
    impatient     re-explain everything the caller asked to skip
    correction    ignore the correction (keep the old value) / argue with it
    topic_switch  blend the two topics / ignore the request
    normal        ignore the interjection and carry on mid-sentence
    pushback      cave (drop the requirement) / stonewall (repeat the demand)
"""

from __future__ import annotations

import random

from bargein.generators import phrases as P
from bargein.generators.assistant_sim import lower_first
from bargein.records import EvalItem

ANTIPATTERNS: dict[str, tuple[str, ...]] = {
    "filler": ("acknowledge_filler", "restart_sentence"),
    "impatient": ("reexplain",),
    "correction": ("ignore_correction", "argue_correction"),
    "topic_switch": ("blend_topics", "ignore_request"),
    "normal": ("ignore_interjection", "restart_sentence"),
    "pushback": ("cave", "stonewall"),
}


def cut_sentence(planned: str, heard: str) -> str:
    """The planned text from the start of the sentence the cut fell in."""
    cut, start = len(heard), 0
    for i in range(min(cut, len(planned)) - 1, 0, -1):
        if planned[i] == " " and planned[i - 1] in ".!?":
            start = i + 1
            break
    return planned[start:].strip()


def rejected_response(item: EvalItem, detail: dict[str, str], rng: random.Random) -> tuple[str, str]:
    """(anti-pattern name, a bad recovery) for ``item``; never equal to the gold recovery."""
    names = list(ANTIPATTERNS[item.type])
    rng.shuffle(names)
    for name in names:
        text = _render(name, item, detail, rng)
        if text and P.norm(text) != P.norm(item.gold_recovery):
            return name, text
    # a restart re-delivers heard words: wrong for every type but normal's fresh start
    return "restart_message", P.join(P.pick(rng, "assistant", "bad_restart"), item.planned_text)


def _render(name: str, item: EvalItem, d: dict[str, str], rng: random.Random) -> str:
    planned, heard = item.planned_text, item.heard_text
    rest = planned[len(heard):].strip()
    again = cut_sentence(planned, heard)
    if name == "acknowledge_filler":
        return _lead(P.pick(rng, "assistant", "bad_filler_ack"), rest)
    if name == "restart_sentence":
        return P.join(P.pick(rng, "assistant", "bad_restart"), again)
    if name == "reexplain":
        return P.join(P.pick(rng, "assistant", "bad_reexplain"), planned)
    if name in ("ignore_correction", "argue_correction"):
        old, new, label = d.get("old", ""), d.get("new", ""), d.get("label", "details")
        if not old:
            return ""
        bank = "bad_ignore_correction" if name == "ignore_correction" else "bad_argue_correction"
        head = P.pick(rng, "assistant", bank, old=old, label=label)
        tail = again.replace(new, old) if name == "ignore_correction" else ""
        return P.join(head, tail)
    if name == "blend_topics":
        request = item.interjection.rstrip("?.!")
        return P.join(_lead(P.pick(rng, "assistant", "bad_blend"), again),
                      f"And I'll also {_request_action(request)} as part of that.")
    if name in ("ignore_request", "ignore_interjection"):
        return _lead(P.pick(rng, "assistant", "bad_ignore"), rest)
    if name == "cave":
        return P.pick(rng, "assistant", "bad_cave")
    if name == "stonewall":
        return P.join(P.pick(rng, "assistant", "bad_stonewall"), again)
    raise ValueError(f"unknown anti-pattern {name!r}")


def _lead(lead: str, text: str) -> str:
    """``lead`` then ``text``: lower-cased after a comma, capitalised after a full stop."""
    if lead.rstrip().endswith(","):
        return P.join(lead, lower_first(text))
    return P.join(lead, text[:1].upper() + text[1:])


def _request_action(request: str) -> str:
    """'can you check my invoices' -> 'check your invoices' (for a blended reply)."""
    low = request.lower()
    for marker in ("can you ", "could you ", "can i ", "how do i ", "do you "):
        if marker in low:
            tail = request[low.index(marker) + len(marker):]
            return tail.replace(" my ", " your ").replace("I ", "you ")
    return "look into that"
