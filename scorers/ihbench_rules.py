"""Offline, rule-based IHBench judges and responder: real heuristics over the rubric and type.

Each recovery-quality criterion is mapped (by its wording) to a check over the response and the
item; the type decides the default check when the wording says nothing recognisable::

    filler        continues the cut utterance from the unheard remainder, no repeat, no "great!"
    impatient     skips the unheard remainder, does not re-explain heard content
    correction    contains the corrected value from the interjection, no pushback
    topic_switch  addresses the new topic, steers back, keeps the two apart
    normal        addresses the interjection, fresh start, no repeat
    pushback      empathy, an alternative, not argumentative

Deterministic: the same item and response always give the same verdict. Formulaic by design:
it is the offline stand-in for the LLM judges (``--judge PROVIDER:MODEL``), not a replacement.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from bargein.records import EvalItem

STOP = frozenset("""a an the and or but if then so to of in on at for with by from as is are was
were be been being it its this that these those i you he she we they me my your our their them us
do does did have has had will would can could should shall may might must not no yes just also
about into over than too very what which who whom when where why how all any some there here up
out off again please okay ok oh um uh well let lets let's i'm i'll i've you're it's that's""".split())
ACK = ("great", "glad", "thanks", "thank", "okay", "ok", "sure", "yes", "yeah", "right", "mm",
       "mm-hm", "mhm", "uh-huh", "got", "good", "alright", "perfect", "absolutely", "wonderful",
       "excellent", "awesome", "understood", "noted", "cool")
ARGUE = ("are you sure", "you said", "but you", "can't change", "cannot change", "not possible",
         "i need that", "you must", "you have to", "that's not", "that is not", "incorrect",
         "i already told", "as i said", "you're wrong", "you are wrong", "no, ")
EMPATHY = ("understand", "sorry", "apolog", "appreciate", "fair", "hear you", "makes sense",
           "concern", "completely", "totally", "valid", "no problem", "of course", "i get it")
ALTERNATIVE = ("alternativ", "instead", "another option", "other option", "option", "you can also",
               "you could", "if you prefer", "or i can", "or we can", "either", "another way",
               "different way", "if you'd rather", "if you would rather", "if you'd prefer",
               "would you prefer", "can also", "could also", "set this step aside",
               "come back to it", "secure link")
BLEND = ("both at once", "at the same time", "as part of that", "while we're at it",
         "while we are at it", "together with")
DISCOURSE = frozenset("""sorry actual actually wait mentio mention know way just quick questi
random unrela hold hey also really think should said saying tell""".split())
NOTED = ("thanks for telling me", "thanks for letting me know", "keep that in mind", "noted",
         "take that into account", "good to know", "i'll note", "i will note", "makes sense")
RETURN = ("back to", "now,", "now let", "let's continue", "continuing", "returning", "as for",
          "get back", "meanwhile", "in the meantime", "to continue", "moving on", "where we were",
          "let's pick up", "now for", "now, ")


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:['-][a-z0-9]+)*", (text or "").lower())


def content(text: str) -> set[str]:
    return {w[:6] for w in words(text) if w not in STOP and len(w) > 2}


def ngrams(ws: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def remainder(item: EvalItem) -> str:
    """The unheard part of the interrupted assistant message."""
    if item.planned_text.startswith(item.heard_text):
        return item.planned_text[len(item.heard_text):].strip()
    return " ".join(words(item.planned_text)[len(words(item.heard_text)):])


def _has(text: str, markers: tuple[str, ...]) -> str | None:
    low = " " + (text or "").lower()
    return next((m for m in markers if m in low), None)


Check = Callable[[EvalItem, str, str], tuple[bool, str]]      # (item, response, criterion)


def quoted(criterion: str) -> list[str]:
    """Values a rubric criterion quotes: "..." first, then (...) groups (quotes stripped)."""
    q = re.findall(r'"([^"]+)"', criterion or "")
    parens = [re.sub(r'"', "", p).strip() for p in re.findall(r"\(([^()]+)\)", criterion or "")]
    return q + [p for p in parens if p and not any(p in x or x in p for x in q)]


def _norm(text: str) -> str:
    return " ".join(words(text))


def continues_cut(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    m = re.search(r'starting with "([^"]+)"', crit or "")
    rem = words(m.group(1) if m else remainder(item))
    if not rem:
        return True, "nothing was left unsaid"
    k = min(4, len(rem))
    got = words(resp)[:k]
    if got == rem[:k]:
        return True, "picks up exactly at the cut"
    return False, (f"does not continue from the cut: should start with '{' '.join(rem[:k])}', "
                   f"starts with '{' '.join(got)}'")


def delivers_remainder(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    rem = content(remainder(item))
    share = len(rem & content(resp)) / len(rem) if rem else 1.0
    if share >= 0.6:
        return True, f"delivers the rest of the cut content ({share:.0%})"
    return False, f"drops part of the interrupted content (only {share:.0%} delivered)"


def no_repeat_heard(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    heard = words(item.heard_text)
    for q in quoted(crit):
        if len(words(q)) >= 2 and _norm(q) in _norm(resp):
            return False, f"repeats what the user already heard ('{q}')"
    if len(heard) < 4:
        return True, "heard part too short to repeat"
    hit = ngrams(heard, 4) & ngrams(words(resp), 4)
    if hit:
        return False, f"repeats what the user already heard ('{' '.join(sorted(hit)[0])} …')"
    return True, "no heard content repeated"


def no_ack(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    first = words(resp)[:2]
    if any(w in ACK for w in first) or _has(resp[:80], ("following along", "glad you",
                                                        "great to hear", "as i was saying")):
        return False, f"acknowledges the backchannel ('{' '.join(words(resp)[:3])} …')"
    return True, "no acknowledgement of the backchannel"


def skips_remainder(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    rem = words(remainder(item))
    if len(rem) < 4:
        return True, "little was left to skip"
    grams = ngrams(rem, 3)
    share = len(grams & ngrams(words(resp), 3)) / max(1, len(grams))
    if share >= 0.3:
        return False, f"re-delivers the explanation the user asked to skip ({share:.0%} of it)"
    return True, "skips the interrupted explanation"


def brief(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    n = len(words(resp))
    return (True, f"brief ({n} words)") if n <= 45 else (False, f"long-winded ({n} words)")


def _values(text: str) -> list[str]:
    nums = ["".join(re.findall(r"\d", m)) for m in re.findall(r"\d[\d ,./-]*\d|\d", text)]
    emails = re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text.lower())
    return [v for v in nums if v] + emails


def _mentions(value: str, resp: str) -> bool:
    """Whether ``resp`` carries ``value``: digits, an email, or most of its content words."""
    digits, low = "".join(re.findall(r"\d", resp)), resp.lower()
    vals = _values(value)
    if vals:
        return all(("@" in v and v in low) or ("@" not in v and v in digits) for v in vals)
    want = content(value)
    return bool(want) and len(want & content(resp)) / len(want) >= 0.6


def contains_corrected_value(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    q = quoted(crit)
    if q:
        new, old = q[0], (q[1] if len(q) > 1 and "no longer" in crit.lower() else None)
        if not _mentions(new, resp):
            return False, f"does not use the corrected value ({new})"
        if old and _norm(old) in _norm(resp):
            return False, f"still uses the earlier value ({old})"
        return True, f"uses the corrected value {new}"
    vals = _values(item.interjection)
    if vals:
        for v in vals:
            if _mentions(v, resp):
                return True, f"uses the corrected value {v}"
        return False, f"does not use the corrected value ({' / '.join(vals)})"
    key = content(item.interjection) - {"actual", "sorry", "misspo", "meant", "wait", "correc",
                                        "mistak", "oops"}
    hit = key & content(resp)
    if hit:
        return True, f"integrates the correction ({', '.join(sorted(hit))})"
    return False, "ignores what the user corrected"


def no_pushback(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    m = _has(resp, ARGUE)
    return (False, f"argues with the user ('{m.strip()}')") if m else (True, "no pushback")


def addresses_interjection(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    q = [x for x in quoted(crit) if content(x)]
    key = (content(q[0]) if q else content(item.interjection)) - DISCOURSE
    hit = key & content(resp)
    if hit or not key:
        return True, f"addresses the interjection ({', '.join(sorted(hit)) or 'no content words'})"
    noted = _has(resp, NOTED) if item.type == "normal" else None
    if noted:             # a volunteered detail can be acknowledged without repeating it
        return True, f"acknowledges the added detail ('{noted}')"
    return False, f"ignores what the user said ('{(q[0] if q else item.interjection)[:60]}')"


def steers_back(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    if _has(resp, RETURN):
        return True, "steers back to the workflow"
    flow = content(item.planned_text) - content(item.interjection)
    if len(flow & content(resp)) >= 2:
        return True, "returns to the workflow content"
    return False, "never steers back to the original workflow"


def no_blend(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    m = _has(resp, BLEND)
    if m:
        return False, f"blends the new topic into the workflow ('{m}')"
    topic = content(item.interjection) - DISCOURSE
    flow = content(item.planned_text) - topic
    for sent in re.split(r"(?<=[.!?;])\s+", resp):
        c = content(sent)
        if c & topic and len(c & flow) >= 2:
            return False, f"blends the new topic with the workflow in one sentence ('{sent[:60]}')"
    return True, "keeps the topics apart"


def empathy(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    m = _has(resp, EMPATHY)
    return (True, f"shows empathy ('{m}')") if m else (False, "no empathy or de-escalation")


def offers_alternative(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    m = _has(resp, ALTERNATIVE)
    return (True, f"offers an alternative ('{m}')") if m else (False, "offers no alternative")


def holds_requirement(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    """Neither caves (drops the step) nor stonewalls (argues, or restates it verbatim)."""
    ok, why = no_pushback(item, resp)
    if not ok:
        return False, f"stonewalls: {why}"
    grams = ngrams(words(item.heard_text), 4)
    share = len(grams & ngrams(words(resp), 4)) / len(grams) if grams else 0.0
    if share >= 0.5:
        return False, f"stonewalls: restates {share:.0%} of what the user pushed back on"
    if _has(resp, ALTERNATIVE) or content(item.planned_text) & content(resp):
        return True, "keeps the requirement while bending on how"
    return False, "caves: drops the step the workflow needs"


def fresh_start(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    rem = words(remainder(item))
    if len(rem) >= 3 and words(resp)[:3] == rem[:3]:
        return False, "continues mid-sentence instead of starting fresh"
    return True, "starts fresh"


def advances(item: EvalItem, resp: str, crit: str = "") -> tuple[bool, str]:
    if len(words(resp)) < 4:
        return False, "too short to move the workflow forward"
    return no_repeat_heard(item, resp)


# (pattern over the criterion text, check) — first match wins
CRITERION_CHECKS: tuple[tuple[re.Pattern, Check], ...] = tuple((re.compile(p, re.I), c) for p, c in (
    (r"(without|not|no|never|avoid\w*)\s+(\w+\s+){0,2}acknowledg|ignor\w* the (filler|backchannel)",
     no_ack),
    (r"fresh start|start\w* fresh|anew|from the beginning of (a|the) (new )?sentence", fresh_start),
    (r"continu\w* (exactly )?(the |its )?(interrupted|cut)|where (it|the \w+|they) (was |were )?"
     r"(cut|left|stopped)|pick\w* up where|exactly where|from the cut", continues_cut),
    (r"deliver\w* the rest|without dropping|rest of the interrupted content", delivers_remainder),
    (r"cave|stonewall", holds_requirement),
    (r"repeat|re-?deliver|re-?explain|already heard|restat|restart", no_repeat_heard),
    (r"skip", skips_remainder),
    (r"without (pushback|arguing|questioning|disput)|no pushback|not argu|accept", no_pushback),
    (r"correct\w* value|updated value|new value|corrected|integrat|uses the correct",
     contains_corrected_value),
    (r"engag\w* with|address|answer|respond\w* to|ignor\w* the interjection|as if nothing"
     r"|into account|new information|what the (caller|user) (added|said)", addresses_interjection),
    (r"empath|de-?escalat|reassur|(concern|frustration|worry)|validat", empathy),
    (r"blend|mix|conflat|separate", no_blend),
    (r"alternativ|option|another way|instead", offers_alternative),
    (r"steer|return|back to|resum\w* (the )?(workflow|original|task)|original (task|workflow|topic)"
     r"|drop\w* the interrupted|interrupted task", steers_back),
    (r"\bbrief and\b|concise|to the point|\bshort\b", brief),
    (r"continu|proceed|advanc|next (\w+ )?step|mov\w* (directly|on|ahead|forward)", advances),
))
TYPE_CHECKS: dict[str, tuple[Check, ...]] = {
    "filler": (continues_cut, no_repeat_heard, no_ack),
    "impatient": (skips_remainder, no_repeat_heard, advances),
    "correction": (contains_corrected_value, no_pushback, advances),
    "topic_switch": (addresses_interjection, steers_back, no_blend),
    "normal": (addresses_interjection, fresh_start, no_repeat_heard),
    "pushback": (empathy, offers_alternative, no_pushback),
}


def check_for(criterion: str, kind: str) -> Check:
    for rx, check in CRITERION_CHECKS:
        if rx.search(criterion):
            return check
    return TYPE_CHECKS[kind][0]


def assess(item: EvalItem, resp: str) -> list[tuple[str, bool, str]]:
    """[(criterion, met, reason)] over the item's RQ criteria."""
    out = []
    for crit in item.rubric.rq_criteria:
        ok, why = check_for(crit, item.type)(item, resp, crit)
        out.append((crit, ok, why))
    return out


def tf_score(item: EvalItem, resp: str) -> tuple[float, list[str]]:
    """Task-fulfilment score of one response and the concrete deficiencies found."""
    score, bad = 0.0, []
    if not words(resp):
        return -1.0, ["is empty"]
    for check in TYPE_CHECKS[item.type]:
        ok, why = check(item, resp, "")
        score += ok
        if not ok:
            bad.append(why)
    crit = content(item.rubric.tf_criterion)
    if crit:
        share = len(crit & content(resp + " " + item.interjection)) / len(crit)
        score += min(1.0, share * 2)
        if share < 0.2:
            bad.append(f"does not do what the task needs next ('{item.rubric.tf_criterion[:60]}')")
    return score, bad


def compare(item: EvalItem, a: str, b: str) -> tuple[str, str]:
    """("A" | "B" | "tie", concrete deficiency of the loser)."""
    sa, da = tf_score(item, a)
    sb, db = tf_score(item, b)
    if abs(sa - sb) < 1e-9:
        return "tie", ""
    if sa > sb:
        return "A", (db[0] if db else "fulfils less of the task criterion")
    return "B", (da[0] if da else "fulfils less of the task criterion")


def respond(item: EvalItem, rng: random.Random) -> str:
    """The offline responder: a plausible recovery per type, sometimes with a typical flaw."""
    rem = remainder(item)
    flaw = rng.random() < 0.25
    kind = item.type
    topic = " ".join([w for w in words(item.interjection) if w not in STOP and len(w) > 2][:4]) or "that"
    if kind == "filler":
        return ("Great! " + item.planned_text) if flaw else (rem or "Let's continue.")
    if kind == "impatient":
        return ("Of course. " + rem) if flaw else rng.choice(
            ("Sure, let's skip ahead.", "Understood, moving on to the next step.")) + " What would you like to do next?"
    if kind == "correction":
        m = re.search(r"\b(?:is|to|was|it's)\s+(.+?)[.!?]*$", item.interjection.strip(), re.I)
        value = m.group(1) if m else (_values(item.interjection) or [""])[0]
        if flaw:
            return "Are you sure? Let's keep what we have and continue."
        return f"Thanks for the correction, I've updated it{' to ' + value if value else ''}. Let's continue."
    if kind == "topic_switch":
        if flaw:
            return f"Let's finish this first. {rem}"
        return f"About {topic}: I can look into that for you. Now, back to where we were. {rem}"
    if kind == "normal":
        return (item.heard_text + " " + rem) if flaw else f"Thanks for letting me know about {topic}. {rem}"
    if flaw:
        return "I need that information to continue."
    return ("I completely understand your concern. Alternatively, we can do this another way "
            "that you are more comfortable with.")
