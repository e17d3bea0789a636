"""The smoke judge for IHBench: type-driven surface checks, for pipeline tests only.

    judge = SmokeJudge()              # `bargein score ihbench --judge smoke`
    rq = await judge.assess(item, response, sample=0)

It is NOT a score. Every table and file it writes is stamped "smoke test, not a score"; its
accuracy against the hand-labelled control set is printed beside its figures.

What it looks at (and nothing else): the item's type, the planned and heard assistant text, the
interjection, the TF criterion's content words, and the response. It never reads the RQ
criteria's wording (it cannot know how a rubric is phrased), never imports the generator's phrase
banks, and uses only :mod:`bargein.lexicon` and the small lists below, written from the type
definitions in IHBench (seeds/ihbench.txt §3.2).

Checks (each a pass/fail with a reason; RQ passes only if every check passes)::

    every type     not empty; carries content (>= 2 content words), not a content-free template
                   (shares content with the context); not an echo of the interjection
    filler         opens by continuing the unheard remainder; does not acknowledge the
                   backchannel; does not repeat what was heard
    impatient      does not re-deliver the remainder the user skipped, nor repeat what was heard
    correction     carries the corrected value(s) of the interjection (numbers in any spoken or
                   written form); does not argue
    topic_switch   addresses the new request; returns to the workflow
    normal         addresses the interjection; does not restart what was heard; resumes the task
    pushback       acknowledges the concern; gives a reason or an alternative; does not argue

The categories it is meant to catch (``SMOKE_CATEGORIES``) are the ones the control-set gates
hold it to. It cannot tell a wrong fact from a right one, nor judge tone.
"""

from __future__ import annotations

import re

from bargein.lexicon import BACKCHANNEL_WORDS, FILLERS, STOP_WORDS, normalize
from bargein.records import EvalItem

# control-set categories the smoke judge claims to catch (its tests gate on these only)
SMOKE_CATEGORIES = ("template", "echo", "restart", "empty", "ignore")

# Words that carry no task content in a reply: politeness, discourse glue, generic verbs.
# Written here from general English, not from any generated text.
GENERIC = frozenset("""
okay ok sure yes yeah right alright fine great good perfect thanks thank please sorry certainly
absolutely definitely glad happy help helping assist let lets get got go going continue continuing
next step steps thing things something anything everything else now then just really also still
need needs want wants like know see look looking able way time moment bit little one
question questions ask asking answer tell say said mean meant understand understood noted sounds
course anyway well hmm um uh oh ah hey hi hello there today shall move moving proceed proceeding
else fine done follow following along point things
""".split())
ARGUING = ("are you sure", "but you said", "you told me", "that's not what", "that is not what",
           "you're wrong", "you are wrong", "you must", "you have to", "no, you", "i already",
           "as i said", "as i already", "that's incorrect", "that is incorrect")
CONCERN = ("understand", "hear you", "fair", "concern", "worry", "worried", "frustrat", "sorry",
           "apolog", "appreciate", "makes sense", "valid", "reasonable", "of course", "no problem",
           "totally", "completely")
REASON_OR_OPTION = ("because", "so that", "to make sure", "to protect", "to confirm", "to verify",
                    "required", "only", "instead", "alternative", "option", "or we", "or i",
                    "or you", "either", "if you prefer", "if you'd prefer", "if you would prefer",
                    "if you'd rather", "if you would rather", "another way", "you could", "you can",
                    "we can", "i can", "skip", "later", "without")
RETURN = ("back to", "now", "let's", "let us", "meanwhile", "in the meantime", "as for", "returning",
          "continue", "pick up", "where we were", "resume", "to finish", "finish", "first")


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:['-][a-z0-9]+)*", (text or "").lower())


def stem(w: str) -> str:
    return w[:5]


def content(text: str) -> set[str]:
    """Content stems: not a stop word, backchannel, filler or generic reply word."""
    return {stem(w) for w in words(text)
            if len(w) > 2 and w not in STOP_WORDS and w not in GENERIC
            and w not in BACKCHANNEL_WORDS and w not in FILLERS}


def ngrams(ws: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def remainder(item: EvalItem) -> str:
    """The unheard part of the interrupted assistant message."""
    if item.heard_text and item.planned_text.startswith(item.heard_text):
        return item.planned_text[len(item.heard_text):].strip()
    return " ".join(words(item.planned_text)[len(words(item.heard_text)):])


def _has(text: str, markers: tuple[str, ...]) -> str | None:
    low = " " + " ".join((text or "").lower().replace("\u2019", "'").split())
    return next((m for m in markers if m in low), None)


def _context(item: EvalItem) -> set[str]:
    recent = " ".join(m.content for m in item.history[-4:])
    return content(" ".join((item.planned_text, item.interjection, recent,
                             item.rubric.tf_criterion)))


# ---- checks: (item, response) -> (ok, reason) ----------------------------------------------
def has_content(item: EvalItem, resp: str) -> tuple[bool, str]:
    mine = content(resp)
    shared = mine & _context(item)
    if len(mine) < 2:
        return False, f"content-free reply ({len(mine)} content word(s))"
    if len(shared) < 2:
        return False, f"says nothing tied to this conversation (shares {sorted(shared) or 'nothing'})"
    return True, f"carries task content ({', '.join(sorted(shared)[:4])})"


def not_echo(item: EvalItem, resp: str) -> tuple[bool, str]:
    mine = content(resp)
    said = content(item.interjection)
    new = mine - said
    if said and len(mine & said) >= max(1, len(said) // 2) and len(new) < 2:
        return False, "only echoes the interjection back"
    return True, "adds more than an echo"


def no_repeat_heard(item: EvalItem, resp: str) -> tuple[bool, str]:
    heard = words(item.heard_text)
    if len(heard) < 4:
        return True, "heard part too short to repeat"
    hit = ngrams(heard, 4) & ngrams(words(resp), 4)
    if hit:
        return False, f"repeats what the user already heard ('{' '.join(sorted(hit)[0])} ...')"
    return True, "does not repeat the heard part"


def continues_remainder(item: EvalItem, resp: str) -> tuple[bool, str]:
    rem = [stem(w) for w in words(remainder(item)) if w not in STOP_WORDS]
    if not rem:
        return True, "nothing was left unsaid"
    opening = {stem(w) for w in words(resp)[:max(8, len(rem[:4]) * 3)]}
    want = set(rem[:4])
    share = len(want & opening) / len(want)
    if share >= 0.5:
        return True, "picks up the unheard remainder"
    return False, f"does not pick up where it was cut (expected '{' '.join(words(remainder(item))[:5])} ...')"


def no_acknowledgement(item: EvalItem, resp: str) -> tuple[bool, str]:
    first = normalize(" ".join(words(resp)[:3])).split()
    acks = BACKCHANNEL_WORDS | {"great", "thanks", "thank", "glad", "good", "perfect", "sorry",
                                "wonderful", "excellent"}
    if first and first[0] in acks:
        return False, f"acknowledges the backchannel ('{' '.join(first)}')"
    return True, "no acknowledgement of the backchannel"


def skips_remainder(item: EvalItem, resp: str) -> tuple[bool, str]:
    rem = words(remainder(item))
    if len(rem) < 4:
        return True, "little was left to skip"
    grams = ngrams(rem, 3)
    share = len(grams & ngrams(words(resp), 3)) / max(1, len(grams))
    if share >= 0.3:
        return False, f"re-delivers what the user asked to skip ({share:.0%} of it)"
    return True, "skips the interrupted explanation"


def _numbers(text: str) -> list[str]:
    from bargein.masking.spans import canonical_pieces

    return [p.text for p in canonical_pieces((text or "").split()) if p.text.isdigit()]


def _corrected_part(text: str) -> str:
    """The interjection without its negated old value ("46 thousand, not 42" -> "46 thousand,")."""
    return re.split(r"\b(?:not|instead of|rather than|no longer)\b", text or "", maxsplit=1, flags=re.I)[0]


def carries_correction(item: EvalItem, resp: str) -> tuple[bool, str]:
    nums = _numbers(_corrected_part(item.interjection))
    if nums:
        said = "".join(_numbers(resp))
        missing = [n for n in nums if n not in said]
        if missing:
            return False, f"does not use the corrected value ({' '.join(nums)})"
        return True, f"uses the corrected value ({' '.join(nums)})"
    key = content(item.interjection) - {"actua", "sorry", "meant", "wait", "mista", "wrong",
                                        "corre", "misspo"}
    hit = key & content(resp)
    if hit:
        return True, f"integrates the correction ({', '.join(sorted(hit))})"
    return False, "does not integrate what the user corrected"


def no_arguing(item: EvalItem, resp: str) -> tuple[bool, str]:
    m = _has(resp, ARGUING)
    return (False, f"argues with the user ('{m.strip()}')") if m else (True, "does not argue")


def addresses_interjection(item: EvalItem, resp: str) -> tuple[bool, str]:
    key = content(item.interjection) - content(item.heard_text)
    if not key:
        return True, "the interjection has no new content to address"
    hit = key & content(resp)
    if hit:
        return True, f"addresses the interjection ({', '.join(sorted(hit))})"
    return False, f"ignores what the user said ('{item.interjection[:60]}')"


def returns_to_task(item: EvalItem, resp: str) -> tuple[bool, str]:
    flow = content(item.planned_text + " " + item.rubric.tf_criterion) - content(item.interjection)
    if len(flow & content(resp)) >= 1 and _has(resp, RETURN):
        return True, "returns to the workflow"
    if len(flow & content(resp)) >= 2:
        return True, "returns to the workflow content"
    return False, "never returns to the workflow"


def acknowledges_concern(item: EvalItem, resp: str) -> tuple[bool, str]:
    m = _has(resp, CONCERN)
    return (True, f"acknowledges the concern ('{m}')") if m else (False, "does not acknowledge the concern")


def reason_or_option(item: EvalItem, resp: str) -> tuple[bool, str]:
    m = _has(resp, REASON_OR_OPTION)
    return (True, f"gives a reason or an option ('{m}')") if m else (False, "gives no reason and no option")


COMMON = (has_content, not_echo)
TYPE_CHECKS = {
    "filler": (continues_remainder, no_acknowledgement, no_repeat_heard),
    "impatient": (skips_remainder, no_repeat_heard),
    "correction": (carries_correction, no_arguing),
    "topic_switch": (addresses_interjection, returns_to_task),
    "normal": (addresses_interjection, no_repeat_heard, returns_to_task),
    "pushback": (acknowledges_concern, reason_or_option, no_arguing),
}


def assess(item: EvalItem, resp: str) -> list[tuple[str, bool, str]]:
    """[(check name, met, reason)] — the smoke judge's own checks (not the rubric's criteria)."""
    if not words(resp):
        return [("not empty", False, "empty response")]
    out = []
    for check in (*COMMON, *TYPE_CHECKS[item.type]):
        ok, why = check(item, resp)
        out.append((check.__name__.replace("_", " "), ok, why))
    return out


def tf_score(item: EvalItem, resp: str) -> tuple[float, list[str]]:
    """Checks passed plus the share of the TF criterion's content; the failed checks' reasons."""
    checks = assess(item, resp)
    if len(checks) == 1 and not checks[0][1]:
        return -1.0, ["is empty"]
    score = float(sum(ok for _, ok, _ in checks))
    bad = [why for _, ok, why in checks if not ok]
    crit = content(item.rubric.tf_criterion)
    if crit:
        score += min(1.0, 2 * len(crit & content(resp)) / len(crit))
    return score, bad


def compare(item: EvalItem, a: str, b: str) -> tuple[str, str]:
    """("A" | "B" | "tie", a concrete deficiency of the loser)."""
    sa, da = tf_score(item, a)
    sb, db = tf_score(item, b)
    if abs(sa - sb) < 1e-9:
        return "tie", ""
    if sa > sb:
        return "A", (db[0] if db else "does less of what the task criterion asks for next")
    return "B", (da[0] if da else "does less of what the task criterion asks for next")
