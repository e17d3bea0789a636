"""User simulator: a normal branch and an interrupting branch, rule-based and LLM forms.

The user simulator gets a :class:`UserPlan` (what the round planner decided for the user, with
the persona already folded in) and the conversation as the user heard it; it never receives the
:class:`~bargein.records.UserIntent` (no interruption probabilities, no hidden-fact list).

The interrupting branch sees the full assistant message and returns the heard prefix (exactly
the first ``k`` words, char-exact) and an interjection that reacts only to the heard part::

    message  "I'm setting the change to take effect on June 3. Your next bill will show"
    heard    "I'm setting the change to take effect"              k = 7
    pushback "Wait, the change? That's not what I was told before."   (anchor from the heard part)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from bargein.errors import GenerationFailed
from bargein.generators import grounded as G
from bargein.generators import phrases as P
from bargein.generators.facts import find_placeholders
from bargein.generators.plan_state import question_kind
from bargein.generators.planner import EDGE_WORDS, RoundPlan, place_cut
from bargein.generators.planner_cut import impatient_cuts  # noqa: F401  (re-exported)
from bargein.records import InterruptionType
from bargein.verify.text import STOPWORDS as V_STOP
from bargein.verify.text import contains_phrase, content_words, is_backchannel

_VERBS = frozenset("""goes takes means needs comes gets shows runs stays works applies arrives
looks starts ends covers includes lets keeps makes gives helps sounds seems becomes moves replaces
changes expires renews qualifies happens usually typically also still then clears carries opens
closes reopens remains ships processes posts appears reflects matches lasts follows refunds
updates counts adds drops goes pays owes""".split())
_UNITS = frozenset("""dollars dollar cents percent days day weeks week months month years year
hours hour minutes minute gigabytes gb lines line credits miles points business nights""".split())
_DETS = {"the", "a", "an", "your", "this", "that", "our", "any", "my", "its", "their", "every"}
_SWAP = {"your": "my", "our": "your", "yours": "mine", "my": "your"}
_WEAK = frozenset("""confirm check looking speaking calling apply applies printed usually
mention mentioned sounds sound first also still help helps quick quickly moment ahead
hear heard start started starts going okay fine just want wants detail details information
thing things step steps part moment questions question minute""".split())


_GREETING = re.compile(r"(?:thank you|thanks) for (?:calling|ringing)[^.?!]*[.?!]\s+|"
                       r"good (?:morning|afternoon|evening)[^.?!]*[.?!]\s+", re.I)

class UserPlan(BaseModel):
    """The user's part of a round plan: everything the user simulator may see."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    action: str
    facts: dict[str, str] = {}
    style: str = "neutral"
    persona: str = ""
    interrupt: bool = False
    type: InterruptionType | None = None
    detail: dict[str, str] = {}
    cut_fraction: float | None = None
    overlap_ms: int | None = None
    goal: str = ""


def user_plan(plan: RoundPlan) -> UserPlan:
    return UserPlan(action=plan.user_action, facts=plan.user_facts, style=plan.user_style,
                    persona=plan.user_profile, interrupt=plan.interrupt, type=plan.type,
                    detail=plan.detail, cut_fraction=plan.cut_fraction,
                    overlap_ms=plan.overlap_ms, goal=plan.user_goal)


class UserReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    utterance: str


class UserInterjection(BaseModel):
    """LLM output of the interrupting branch."""

    model_config = ConfigDict(extra="forbid")
    heard_prefix: str
    interjection: str


@dataclass(frozen=True)
class Interjected:
    heard: str
    cut_word_index: int
    interjection: str
    overlap_ms: int
    detail: dict[str, str]


class PlanBroken(GenerationFailed):
    """An agent's answer breaks the round plan (evidence: attempts and errors)."""


# ---- anchors: short phrases the user heard and can react to -----------------------------
def anchors(heard_content: str) -> list[str]:
    """Noun-phrase-like spans of the heard content, latest last ('the account number')."""
    raw = heard_content.split()
    toks = [P.norm(w) for w in raw]
    out = []
    for i, t in enumerate(toks):
        if t in _DETS and i + 1 < len(toks):
            words = [t]
            for j in range(i + 1, min(i + 4, len(toks))):
                w = toks[j]
                if not w.isalpha() or w in V_STOP or w in _DETS or w in _VERBS:
                    break
                words.append(w)
                if raw[j][-1] in ".,;:!?":
                    break
            head = words[-1]
            if len(words) >= 2 and len(head) >= 3 and head not in _WEAK and not head.endswith(("ing", "ly")):
                out.append((i, " ".join(_SWAP.get(w, w) for w in words)))
        elif raw[i].startswith("$") and any(c.isdigit() for c in raw[i]):
            out.append((i, raw[i].rstrip(".,;:")))
        elif t.isdigit() and i + 1 < len(toks) and toks[i + 1] in _UNITS:
            out.append((i, f"{raw[i].strip('.,;:')} {toks[i + 1]}"))
    if not out:
        for i, t in enumerate(toks):
            if t.isalpha() and len(t) >= 6 and t not in V_STOP and t not in _WEAK and t not in _VERBS \
                    and not t.endswith(("ly", "ing", "ed")):
                out.append((i, t))
    return [a for _, a in sorted(out)]


_CONTESTABLE = frozenset("""fee fees charge charges cost costs price prices credit deposit penalty
balance dollars payment deadline code number address digits document documents photo id
verification security refund interest rate rates month monthly annual cancellation renewal
upgrade plan policy hold limit minimum late""".split())


def pick_anchor(found: list[str], rng: random.Random) -> str:
    """One of the latest anchors, favouring what callers dispute (fees, codes, deadlines)."""
    if not found:
        return "that"
    recent = found[-4:]
    weights = [3 if (set(a.split()) & _CONTESTABLE or any(c.isdigit() for c in a)) else 1
               for a in recent]
    return rng.choices(recent, weights=weights)[0]


def _slots(up: UserPlan) -> dict[str, str]:
    return {k: v for k, v in up.detail.items() if isinstance(v, str)}


# ---- rule-based -----------------------------------------------------------------------------
class RuleUser:
    """The offline user: phrase banks, the plan's facts, the heard words. ``values``: the
    scenario's values, which a cut never splits (with names, dates and amounts)."""

    def __init__(self, values: tuple[str, ...] = (), spoken: dict[str, str] | None = None):
        self.values = tuple(values)
        self.spoken = dict(spoken or {})       # a value -> how the caller says it aloud
        self.context: tuple[str, ...] = ()     # what was said before the turn being cut

    def reply(self, up: UserPlan, rng: random.Random, last: str = "") -> str:
        """``last``: the assistant turn as heard (a plain reply may pick up one of its objects)."""
        style = up.style
        if up.action in ("answer", "confirm") and up.facts:
            if up.action == "confirm":
                qs = re.findall(r"[^.?!]*\?", last)
                if qs and question_kind(qs[-1]) == "offer":   # "Would that suit you?" is not
                    return P.compose(rng, "user", "qa_offer")  # answered "yes, that's mine"
                return P.compose(rng, "user", "reply_confirm")
            parts = []
            for n, (key, value) in enumerate(up.facts.items()):
                bank = {"terse": "answer_fact_terse", "polite": "answer_fact_polite"}.get(style, "answer_fact")
                said = P.clause(value)
                wordings = fact_wordings(key)
                if n and wordings:            # "And the check was for ...", not "the check amount is"
                    parts.append(P.sentence("And " + rng.choice(wordings).format(value=value) + "."))
                elif said:
                    parts.append(P.sentence(("And " if n else "") + said + "."))
                elif n and (key == "age" or key.endswith("_age")) and re.search(r"\byears?$", value):
                    parts.append(f"And they're {value} old.")      # not "the age is eight years"
                elif n:
                    label = re.sub(r" (?:description|details)$", "", P.label(key))  # "the damage is"
                    last_word = label.split()[-1] if label.split() else ""
                    be = "are" if last_word.endswith("s") and not last_word.endswith(("ss", "us")) \
                        else "is"                       # "the copies are", "the email is"
                    parts.append(f"And my {label} {be} {value}.")
                else:
                    part = pick_fact_line(rng, bank, key, wh=asks_wh(last), value=value,
                                          label=P.label(key))
                    if "@" in value and part[:1].isupper() and part.lower().startswith(value.lower()):
                        part = f"It's {value}{part[len(value):]}"   # an address keeps its case
                    parts.append(part)
            lead = _yes_first(last, [P.label(k) for k in up.facts], rng)
            return P.tidy(_possessive(P.join(lead, *parts), [P.label(k) for k in up.facts]))
        if up.action == "unknown":
            key = next(iter(up.facts), "details")
            return P.pick(rng, "user", "answer_unknown", label=P.label(key))
        if up.action == "choose" and up.facts.get("reply"):
            return up.facts["reply"]
        if up.action == "choose" and up.facts.get("option"):
            opt = up.facts["option"]
            return P.sentence(rng.choice([f"{opt}, I'd say.", f"Probably {opt}.",
                                          f"Mostly {opt}, I think.", f"{opt} matters most to me."]))
        if up.action == "volunteer" and up.facts:
            key, value = next(iter(up.facts.items()))
            if up.detail.get("variant") == "reason":
                return P.pick(rng, "user", "qa_because", value=P.clause(value) or value)
            if up.detail.get("hidden") or P.clause(value):
                return P.join(P.pick(rng, "user", "ack_info"),
                              P.pick(rng, "user", "volunteer_hidden", value=P.clause(value) or value))
            return P.join(P.pick(rng, "user", "ack_info"), _possessive(
                pick_fact_line(rng, "volunteer", key, label=P.label(key), value=value), [P.label(key)]))
        if up.action == "accept":
            return P.compose(rng, "user", "reply_accept")
        if up.action == "close":
            return P.compose(rng, "user", "reply_close")
        # a fee or a policy is something to take on board; a value is not ("Oh, on Saturday, I
        # can do that." of a past order date, "Friday, February 21, 2025. Fine by me.": a hand read)
        objs = G.objects_in(last, ("fee", "policy")) if last else []
        if objs and rng.random() < 0.4:
            return P.compose(rng, "user", "reply_grounded", obj=G.as_user(rng.choice(objs[-2:]).phrase))
        bank = {"terse": "ack_info_terse", "polite": "ack_info_polite",
                "skeptical": "ack_info_skeptical"}.get(style)
        if bank and rng.random() < 0.4:
            return P.pick(rng, "user", bank)
        return P.compose(rng, "user", "reply_ack")

    def interject(self, up: UserPlan, message: str, content_start: int, context: tuple[str, ...],
                  rng: random.Random, attempts: int = 8) -> Interjected:
        """Cut ``message`` and react to the heard part only; raises :class:`PlanBroken`."""
        errors: list[dict] = []
        self.context = context
        fraction = up.cut_fraction if up.cut_fraction is not None else 0.5
        for attempt in range(attempts):
            min_word = 0
            label = up.detail.get("label", "")
            variant = up.detail.get("variant", "")
            if up.type == "pushback" and variant == "sensitive":
                end = _phrase_end_word(message, content_start, label)
                if end is None or end > P.n_words(message) - EDGE_WORDS:
                    variant = rng.choice(["suspicion", "resistance", "dispute", "disagreement"])
                else:
                    min_word = end
            obj = None
            if variant == "persist":           # the objection stays on what was disputed before
                end = _phrase_end_word(message, content_start, _yours(up.detail.get("anchor", "")))
                if end is not None and end <= P.n_words(message) - EDGE_WORDS:
                    min_word = end
            elif (up.type == "pushback" and variant != "sensitive") or variant == "clarify":
                kinds = G.PUSHBACK_KINDS if up.type == "pushback" else G.CLARIFY_KINDS
                own = " ".join(context[1::2]).lower()    # the caller's own turns (the agent opens)
                protected = P.protected_cuts(message, self.values)   # "on Friday, | April 11"
                objs = [o for o in G.objects_in(message[content_start:], kinds)
                        if G.end_word(message, content_start, o) not in protected
                        and G.end_word(message, content_start, o) <= P.n_words(message) - EDGE_WORDS
                        and G.end_word(message, content_start, o) >= P.n_words(message[:content_start]) + EDGE_WORDS
                        # "October 31st? I want to be sure I heard it right" -- of a date the
                        # caller gave themselves: nobody asks to hear their own value again
                        # and a charge or rule the caller already took up, disputed afresh later
                        # ("why do I have to pay the $1,549.12 charge? I wasn't told about any
                        # charge") after it was settled, is a loop, not a caller
                        and not ((variant == "clarify" or up.type == "pushback")
                                 and (o.phrase.lower() in own or G.as_user(o.phrase).lower() in own
                                      # said aloud ("October fifth, twenty twenty-five"): the
                                      # caller's own date too (a hand read of seed 6161, #29)
                                      or self.spoken.get(o.phrase, "\0").lower() in own))]
                if not objs:
                    errors.append({"attempt": attempt, "error": f"no {'/'.join(kinds)} in the content "
                                   "to react to"})
                    break
                obj = rng.choice(objs[-3:])
                min_word = G.end_word(message, content_start, obj)
                fraction = 0.0                  # react right after hearing it
            if up.type == "impatient":
                ks = impatient_cuts(message, content_start, self.values)
                if not ks:
                    errors.append({"attempt": attempt, "error": "no explanation left to skip"})
                    break
                first = P.n_words(message[:content_start])
                target = first + fraction * (P.n_words(message) - first)
                k = sorted(ks, key=lambda k: (abs(k - target), k))[0 if rng.random() < 0.7 else min(1, len(ks) - 1)]
            else:
                greeting = _GREETING.match(message[content_start:])
                if greeting:                    # nobody cuts in on "Thank you for calling |":
                    min_word = max(min_word, P.n_words(          # the caller hears the greeting
                        message[:content_start + greeting.end()]) + 2)   # and the first words after
                k = place_cut(message, content_start, fraction, rng, min_word=min_word,
                              at_boundary=up.type == "filler",
                              protected=P.protected_cuts(message, self.values),
                              max_word=_before_value(message, content_start, up)
                              if up.type == "correction" else None)
            if k is None:
                errors.append({"attempt": attempt, "error": "no cut point inside the content"})
                break
            heard = P.prefix_words(message, k)
            detail = dict(_slots(up))
            if obj is not None:
                own = message[content_start:]
                detail["anchor"], detail["object_kind"] = G.as_user(obj.phrase), G.object_kind(obj, own)
                text = G.pushback(rng, obj, own) if up.type == "pushback" else G.clarify(rng, obj)
            else:
                text = self._say(up, variant, heard[content_start:], detail, rng)
            errs = check_interjection(up, message, content_start, heard, text, context)
            if not errs:
                if variant and "variant" not in detail:
                    detail["variant"] = variant
                return Interjected(heard=heard, cut_word_index=k, interjection=text,
                                   overlap_ms=up.overlap_ms or 300, detail=detail)
            errors.append({"attempt": attempt, "heard": heard, "interjection": text, "errors": errs})
            fraction = rng.uniform(0.15, 0.85)
        raise PlanBroken(f"user simulator could not interrupt with {up.type} inside the heard part",
                         evidence={"attempts": errors, "message": message})

    def _say(self, up: UserPlan, variant: str, heard_content: str, detail: dict[str, str],
             rng: random.Random) -> str:
        t, d = up.type, up.detail
        if t == "filler":
            return rng.choice(P.bank("user", "filler"))
        if t == "impatient":
            return impatient_line(heard_content, self.context, rng, persona=up.persona)
        if t == "correction":
            # "Hang on, the phone number is wrong" only of a value the caller heard the agent say
            # (a hand read of seed 8585: said before the agent got to the number)
            unheard = None if d["old"] and d["old"] in heard_content else _SAID_WRONG
            return re.sub(r"\b([Tt]he last four digits of) the\b", r"\1 my",
                          pick_fact_line(rng, "correction", d.get("key", ""), unless=unheard,
                                         label=d["label"], old=d["old"], new=d["new"]))
        if t == "topic_switch":
            return reopen(P.pair(d, "topic_switch")["user"], rng)
        if t == "normal" and variant == "hidden":
            return P.pick(rng, "user", "normal_hidden", value=d["value"])
        if t == "normal" and variant == "volunteer":
            if P.clause(d["value"]):
                return P.pick(rng, "user", "normal_hidden", value=P.clause(d["value"]))
            return _possessive(pick_fact_line(rng, "normal_volunteer", d.get("key", ""),
                                              label=d["label"], value=d["value"]), [d["label"]])
        if t == "normal" and variant == "constraint":
            return reopen(P.pair(d, "normal_constraint")["user"], rng)
        if t == "pushback" and variant == "sensitive":
            return P.pick(rng, "user", "pushback_sensitive", label=d["label"])
        if t == "pushback" and variant == "persist":
            anchor = d["anchor"]
            if d.get("object_kind") == "requirement" and anchor.startswith("my "):
                anchor = "giving you " + anchor      # not "my email is still a problem for me"
            return P.compose(rng, "user", "persist_core", anchor=anchor)
        if t == "normal":      # nothing to clarify: an unsolicited detail instead, never a fragment
            i = rng.randrange(len(P.bank("pairs", "normal_constraint")))
            detail["variant"], detail["pair"] = "constraint", str(i)
            return reopen(P.bank("pairs", "normal_constraint")[i]["user"], rng)
        anchor = pick_anchor(anchors(heard_content), rng)
        detail["anchor"] = anchor
        return P.pick(rng, "user", f"pushback_{variant or 'suspicion'}", anchor=anchor)


_OPENING = re.compile(r"^(?:(?:oh|sorry|wait|hmm|quick thing|random question|random thing|by the way|"
                      r"just so you know|unrelated|off topic|totally different question|"
                      r"while i have you|before i forget|i should (?:say|mention)|one more thing|"
                      r"and|actually|off the top of my head|while i think of it|"
                      r"different subject|totally separate question|can i ask|quick one|"
                      r"while i'm on|but),?\s+)+", re.I)


# impatience that claims the caller heard it before, or read it somewhere: only where true
_REPEAT_CLAIM = re.compile(r"twice|the first time|heard this already|heard all this|heard this before",
                           re.I)
# a claim of experience ("I've done this before") from a caller whose profile says they are new
# to it or careful (a hand read of seed 4242: an "anxious first-timer" who has "done this before")
_EXPERT_CLAIM = re.compile(r"done this before|familiar with|know all that|got the gist|heard this before|"
                           r"know how this works", re.I)
_NOVICE = re.compile(r"first-timer|unsure of the process|careful and thorough|anxious", re.I)
# a claim to know it already: said of an explanation, never of a status read from the record
# ("Robert Osborne's record is up on my screen. | Right, right, I know all that"; seed 2929)
_READ_CLAIM = re.compile(r"\bemail\b|website|read all|know all that|heard this|familiar with|"
                         r"got the gist|done this before|been through this", re.I)
_RECORDS = re.compile(r"\b(?:I have|I see|I've found|I'm looking at|our records|on file|it shows|"
                      r"shows|there's a|registered to|your account has|record is|is up on|"
                      r"on my screen|pulled up|I've got your|I've|now in place|is active|is done|"
                      r"is set up|has been)\b", re.I)      # nor of work just reported done
_ACTION_TAIL = re.compile(r"just do it", re.I)
_PENDING = re.compile(r"\b(?:I can|we can|I could|we could|I'll|I'm going to|I'd like to|shall I|"
                      r"let me)\b", re.I)


_SAID_WRONG = re.compile(r"\bis wrong\b")


def _before_value(message: str, content_start: int, up: UserPlan) -> int | None:
    """For a correction: the last word before the turn says the corrected value itself (the
    caller catches their slip before the agent reads out the right form, never after it: "I'm
    checking whether (716) 527-8218 | -- the port number is wrong, it's (716) 527-8218")."""
    new = up.detail.get("new", "")
    at = message.find(new, content_start) if new else -1
    return P.n_words(message[:at]) if at >= 0 else None


_MANNER = frozenset("please skip short shorter quick quickly speed move just".split())


def impatient_line(heard_content: str, context: tuple[str, ...], rng: random.Random,
                   persona: str = "") -> str:
    """An impatient cut-in that fits what was heard: "I understood the first time" only about
    something said before, "I read that in the email" never about a records check, "let's just
    do it" only while something is still to be done."""
    words = heard_content.lower().split()
    grams = {" ".join(words[i:i + 5]) for i in range(len(words) - 4)}
    said_before = any(g in " ".join(c.lower().split()) for c in context[-6:] for g in grams)
    cores = [c for c in P.bank("user", "impatient_core")
             if (said_before or not _REPEAT_CLAIM.search(c))
             and not (_READ_CLAIM.search(c) and _RECORDS.search(heard_content))
             and not (_EXPERT_CLAIM.search(c) and _NOVICE.search(persona))]
    tails = [t for t in P.bank("user", "impatient_core_tail")
             if not (_ACTION_TAIL.search(t) and not _PENDING.search(heard_content))]
    before = " ".join(context).lower()      # a caller does not repeat their own words ("What's
    cores = [c for c in cores if c.lower() not in before] or cores      # the bottom line?" twice)
    tails = [t for t in tails if not t or t.lower() not in before] or tails
    opener = rng.choice(P.bank("user", "impatient_open"))
    core = rng.choice(cores)
    said = set(re.findall(r"[a-z']+", f"{opener} {core}".lower()))
    # "just the short version, please. Move on, please.": a tail repeats no word of the cut-in's
    # manner ("please", "skip", "short") already said
    tail = rng.choice([t for t in tails if not (set(re.findall(r"[a-z']+", t.lower()))
                                                & said & _MANNER)] or [""])
    if opener and not opener.rstrip().endswith((".", "!", "?")) and not core.startswith(("I ", "I'")):
        core = core[:1].lower() + core[1:]
    return P.tidy(P.join(opener, core, tail))


def reopen(line: str, rng: random.Random) -> str:
    """A paired line with its opening swapped for another way of cutting in."""
    body = _OPENING.sub("", line)
    if body == line or len(body.split()) < 4:
        return line
    opener = rng.choice(P.bank("user", "cut_in_open_question" if body.rstrip().endswith("?")
                               else "cut_in_open"))
    first = body.split()[0].strip(",.?!")
    proper = first[:1].isupper() and first.lower() not in _SENTENCE_WORDS   # "English", a name
    return P.tidy(P.join(opener, body[:1].lower() + body[1:] if not (
        body.startswith(("I ", "I'")) or proper) else body))


# words that are capitalised only because they start the sentence (lower-cased after an opener)
_SENTENCE_WORDS = frozenset("can do does did is are was were will would could should how what what's "
                            "when where who why which my our the a an we we're we've this that "
                            "these those there it it's please half random any some your you".split())


def _yes_first(last: str, labels: list[str], rng: random.Random) -> str:
    """A yes-no question that names none of the facts given ("Is that the one you need
    refilled?") is answered before the facts are ("Yes, that's the one. I've got four days.")."""
    from bargein.generators.plan_state import question_kind

    qs = [q.strip() for q in re.findall(r"[^.?!]*\?", last)]
    if not qs or any(lab and lab.lower() in qs[-1].lower() for lab in labels):
        return ""
    kind = question_kind(qs[-1])
    if kind != "fact" or not re.match(r"^\W*(?:\w+,\s*)?(?:is|are|does|do|did|was|were|has|have)\b",
                                      qs[-1], re.I):
        return ""                       # only a real yes-no question ("Is that the one ...?")
    if re.search(r"\b(?:do|did) you (?:\w+ )?(?:remember|recall|know|have any idea)\b", qs[-1], re.I):
        return ""                       # "Do you remember the last place you used the card?" is
        #                                 answered by the place, not "Yeah, that's correct." first
    return P.compose(rng, "user", f"qa_{kind}")


def _anchor_ends(message: str, content_start: int) -> list[int]:
    """Word indices (1-based, in the message) where an anchor phrase of the content ends."""
    first = P.n_words(message[:content_start])
    words = message.split()
    out = []
    for k in range(first + 1, len(words) + 1):
        found = anchors(" ".join(words[first:k]))
        if found and (not out or len(found) > out[-1][1]):
            out.append((k, len(found)))
    return [k for k, _ in out]


_MINE = re.compile(r"^(?:full name|name|email|email address|phone number|mobile number|home address|"
                   r"annual income|income|salary|"
                   r"address|date of birth|.*\b(?:number|id|plan|code|card|policy|account|pin|"
                   r"insurer|employer|bank|phone|device|email))$", re.I)


def _possessive(text: str, labels: list[str]) -> str:
    """'my {label}' only for what a caller owns ('my account number'), 'the {label}' for the
    rest ('the change type', not 'my change type')."""
    for lab in labels:
        if lab and not _MINE.match(lab) and not lab.startswith("last four digits"):
            text = re.sub(rf"\b([Mm])y {re.escape(lab)}\b",
                          lambda m: ("T" if m.group(1) == "M" else "t") + f"he {lab}", text)
    return text


# "my {label} is {value}" in a bank line: the one place a fact's own wording can replace it
_STATED = re.compile(r"\b(?:[Mm]y|[Tt]he) \{label\} (?:is|are|should be) \{(value|new)\}")


_OWN_DETAIL = re.compile(r"^(?:full_name|date_of_birth|(?:account_|contact_)?email|phone_number|"
                         r"home_address)$")
_HEDGE = re.compile(r"\bI (?:think|believe)\b|\bif I remember\b", re.I)


def fact_wordings(key: str) -> tuple[str, ...]:
    """How a caller says ``key`` when its label is no noun they would use of it ("the check was
    for {value}", not "the check amount is ..."): the bank ``state_<key>``, or ()."""
    name = f"state_{key}"
    return P.bank("user", name) if name in P.bank_keys("user") else ()


_WH = re.compile(r"^\s*(?:[\w']+,\s*)?(?:so,?\s*)?(?:what|which|when|where|how|who|whose)\b", re.I)
_YES = re.compile(r"^(?:yes|yeah|yep)\b", re.I)


def asks_wh(heard: str) -> bool:
    """Whether the last question of ``heard`` is a wh-question ("What's the order number?"),
    which "Yeah, it's ..." does not answer."""
    qs = re.findall(r"[^.?!]*\?", heard)
    return bool(qs) and bool(_WH.match(qs[-1]))


def pick_fact_line(rng: random.Random, bank: str, key: str, wh: bool = False,
                   unless: re.Pattern | None = None, **slots: str) -> str:
    """A line of ``bank`` that says fact ``key``. A key with its own wordings says it that way:
    a line's "my {label} is {value}" becomes the wording, and a line that names the label in
    any other way ("I gave you the wrong {label}") is not drawn. ``unless``: lines it finds
    are not drawn (while another line is left)."""
    lines = [t for t in P.bank("user", bank) if set(re.findall(r"\{(\w+)\}", t)) <= set(slots)] \
        or list(P.bank("user", bank))
    if unless is not None:
        lines = [t for t in lines if not unless.search(t)] or lines
    if _OWN_DETAIL.match(key):          # nobody is unsure of their own name ("Lance Wood, I believe.")
        lines = [t for t in lines if not _HEDGE.search(t)] or lines
    if wh:                              # "How many days are left?" - "Yeah, it's one day."
        lines = [t for t in lines if not _YES.match(t)] or lines
    line = rng.choice(lines)
    wordings = fact_wordings(key)
    if not wordings or "{label}" not in line:
        return P.fill(line, where=f"user.{bank}", **slots)
    fits = [t for t in lines if _STATED.search(t) and "{label}" not in _STATED.sub("", t)]
    plain = [t for t in lines if "{label}" not in t]
    line = rng.choice(fits or plain or [line])
    m = _STATED.search(line)
    if m and "{label}" not in _STATED.sub("", line):
        wording = rng.choice(wordings).replace("{value}", "{%s}" % m.group(1))
        line = line[:m.start()] + wording + line[m.end():]
    return P.fill(line, where=f"user.{bank}", **slots)


def _yours(phrase: str) -> str:
    return re.sub(r"\bmy\b", "your", phrase)


def _phrase_end_word(message: str, content_start: int, label: str) -> int | None:
    """The 1-based index of the last word of ``label`` in the content, if it is said there."""
    if not label:
        return None
    m = re.search(rf"\b{re.escape(label)}\b", message[content_start:], re.I)
    if not m:
        return None
    end = content_start + m.end()
    return sum(1 for s, _ in P.word_spans(message) if s < end)


# ---- plan checks (both forms) ---------------------------------------------------------------
def check_interjection(up: UserPlan, message: str, content_start: int, heard: str,
                       interjection: str, context: tuple[str, ...]) -> list[str]:
    """Ways an interruption breaks its plan: the cut, the heard words, the type (empty = fine)."""
    errs = []
    k = P.word_index_of_prefix(message, heard)
    n = P.n_words(message)
    first = P.n_words(message[:content_start])
    if k is None:
        errs.append("heard_prefix is not exactly the first words of the assistant message")
    elif not (max(first + EDGE_WORDS, EDGE_WORDS) <= k <= n - EDGE_WORDS):
        errs.append(f"the cut after word {k} is outside words {first + EDGE_WORDS}..{n - EDGE_WORDS} "
                    f"(inside the stage content, >= {EDGE_WORDS} words from either end)")
    if not interjection.strip():
        errs.append("the interjection is empty")
    if find_placeholders(interjection):
        errs.append(f"placeholders in the interjection: {find_placeholders(interjection)[:3]}")
    if k is not None:
        rest = message[len(heard):]
        known = content_words(heard) | content_words(" ".join(context))
        said = [up.detail.get(k, "") for k in ("value", "old", "new")]   # values, never labels
        known |= content_words(" ".join([*up.facts.values(), *said]))
        leaked = sorted((content_words(interjection) & content_words(rest)) - known)
        if leaked:
            errs.append(f"the interjection uses {leaked}, which the user never heard")
    if up.type == "impatient" and k is not None and k not in impatient_cuts(message, content_start):
        errs.append("an impatient cut-in needs something left to skip: cut outside any question, "
                    "with at least a short explanation still to come after the cut")
    if up.type == "filler" and not is_backchannel(interjection):
        errs.append("a filler interjection must be a short backchannel like 'mm-hm' or 'yeah'")
    if up.type != "filler" and is_backchannel(interjection):
        errs.append(f"a {up.type} interjection must say more than a backchannel")
    if up.type == "correction" and not contains_phrase(interjection, up.detail.get("new", "")):
        errs.append(f"the correction must give the corrected value {up.detail.get('new')!r}")
    if up.type == "pushback" and k is not None:
        heard_words = content_words(heard[content_start:])
        if up.detail.get("variant") == "persist":       # the same concern as before still counts
            heard_words |= content_words(" ".join(context))
        label = up.detail.get("label", "")
        if not (content_words(interjection) & heard_words) and not (
                label and contains_phrase(heard, label) and contains_phrase(interjection, label)):
            errs.append("pushback must refer to something the assistant said in the heard part")
    return errs


def check_reply(up: UserPlan, utterance: str) -> list[str]:
    errs = []
    if not utterance.strip():
        errs.append("the reply is empty")
    if find_placeholders(utterance):
        errs.append(f"placeholders in the reply: {find_placeholders(utterance)[:3]}")
    if up.action == "answer":
        said = content_words(utterance)
        missing = [v for v in up.facts.values() if v and not contains_phrase(utterance, v)
                   and not content_words(v) <= said]
        if missing:
            errs.append(f"the plan says the user gives {missing}, which the reply lacks")
    return errs
