"""Round-plan records and the planner's conversation state (used by ``bargein.generators.planner``).

A :class:`RoundPlan` is what one round does; a :class:`Unit` is a piece of stage content (a
talking point, a question for required info, a closing); :class:`ConversationState` is what the
planner tracks between rounds (stage, queued units, facts the user stated, a pending recovery).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from collections import deque

from bargein.generators import phrases as P
from bargein.generators.intents import contradicts_times
from bargein.generators.workflow import BY_TEXT, check_stages, phone_gone
from bargein.lexicon import KEY_PHRASES
from bargein.records import InterruptionType, Scenario, UserFact
from bargein.records.plan import Recovery, RoundPlan, Unit, UnitKind, UserAction  # noqa: F401 - re-exported


MIN_MESSAGES, MAX_MESSAGES = 19, 40
# a slip is made only while the call has room to put it right: one made at message 27 of 40 was
# never corrected (the last rounds belong to the goal) and the call was discarded (seed 11)
SLIP_ROOM = 16
EDGE_WORDS = 3                      # a cut keeps >= 3 content words heard and >= 3 words unheard
MIN_CUT_WORDS = 10                  # shorter content is not interrupted
EXPLANATION_WORDS = 12              # impatience needs something to skip
UNIT_OVERHEAD = 0.6                 # a unit costs 1 / (1 - this * rate) rounds
# (0.72 before a goal's last rounds, go-ahead questions and accepted-alternative steps became
# uncuttable; at 0.66 the realised cut rate on seed 7 is 0.42 against a profile mean of 0.49;
# 0.52 since a fresh cut drawn where its type cannot be made is owed to a later turn: 0.41)
ELIGIBLE_SHARE = 0.52               # share of assistant turns that can be cut (not the farewell,
                                    # not too short, not a third cut in a row on re-said content,
                                    # a cut the agents can realise): the per-turn chance is rate /
                                    # this share, so the realised share of cut turns matches
                                    # interruption_rate (measured: 0.35-0.40 against a mean 0.47)
OVERLAP_MS = {"filler": (100, 350), "default": (150, 600)}
CLOSING_TYPES = ("filler", "normal")   # a side question cut into "anything else?" answers it, and
                                        # the steer-back asks it again: a loop (a hand read)
_SYNONYMS = {"phone": ("mobile", "cell", "phone"), "email": ("email", "e-mail")}
_PHRASES = KEY_PHRASES
READBACK_KINDS = {"email", "work_email", "date", "address", "name", "choice", "time", "amount"}
_CLOSING = re.compile(r"\banything else (?:i|we) can\b", re.I)
_GENERIC = {"number", "name", "date", "code", "info", "details", "detail", "id", "type", "time"}


# ---- helpers over the scenario --------------------------------------------------------------
def user_style(profile: str) -> str:
    p = profile.lower()
    if any(w in p for w in ("rushed", "impatien", "time-pressed", "short on patience", "hurry")):
        return "terse"
    if any(w in p for w in ("skeptic", "suspic", "privacy", "argument", "disput", "frustrat")):
        return "skeptical"
    if any(w in p for w in ("polite", "anxious", "first-timer", "friendly")):
        return "polite"
    return "neutral"


def spoken(fact: UserFact, value: str | None = None) -> str:
    """How the user says a fact's value (its spoken form when it is the KB value)."""
    v = fact.value if value is None else value
    return fact.spoken if (v == fact.value and fact.spoken) else v


def asked_keys(text: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The required-info keys a question mentions, in the order it mentions them.

    A key matches by its label ("account number", "last four digits of the card"); a label
    ending in a generic word matches with a synonym in front ("mobile number" for
    ``phone_number``); a label of distinctive words matches when they all occur close together
    ("the email address on your account" asks for ``account_email``).
    """
    low = text.lower()
    toks = re.findall(r"[a-z0-9]+", low)
    found = []
    for k in keys:
        lab = P.label(k).lower()
        alts = [lab, *_PHRASES.get(k, ())]
        words = re.findall(r"[a-z0-9]+", lab)
        if len(words) == 2 and words[-1] in _GENERIC:
            alts += [f"{syn} {words[-1]}" for syn in _SYNONYMS.get(words[0], ())]
        # a label's article is any determiner as said ("the last four digits of your Social
        # Security number" names "last four digits of the Social Security number")
        pats = [re.sub(r"\b(?:the|your|my)\b", r"(?:the|your|my|this)", re.escape(a))
                for a in alts]
        hits = [m.start() for a in pats for m in [re.search(rf"\b{a}\b", low)] if m]
        if not hits and words and not set(words) & _GENERIC:
            pos = [[i for i, t in enumerate(toks) if t in _SYNONYMS.get(w, (w,))] for w in words]
            if all(pos) and max(min(p) for p in pos) - min(min(p) for p in pos) <= 5:
                hits = [low.find(toks[min(pos[0])])]
        if hits:
            found.append((min(hits), k))
    return tuple(k for _, k in sorted(found))


_REQUEST = re.compile(r"\b(what(?:'s| is)|which|could you (?:give|tell|read|confirm|share)|"
                      r"can you (?:give|tell|read|confirm|share)|may i (?:have|get)|"
                      r"can i (?:have|get)|could i (?:have|get))\b", re.I)


_NEED = re.compile(r"\b(?:I(?:'ll| will)? need|I'd need|please (?:read|give|tell|share)|"
                   r"(?:read|give|tell) me)\b", re.I)


_READ_BACK = re.compile(r"\bread(?:ing)? (?:that|it|this|those|them|everything) back\b|\bread back\b|"
                        r"\bjust to (?:double-)?check\b|\bI have .{1,80}?\b(?:written down|down here|noted)\b|"
                        r"\byou(?:'ve| have)?\s+(?:said|mentioned|told (?:me|us)|gave( me)?|quoted|stated)\b|"
                        r"\byou(?:'re| are)\s+(?:planning|expecting)\b|"
                        # "So that's Canada, leaving ...", "So you'd like the records sent to ..."
                        r"(?:^|[,.]\s+)so,?\s+(?:that's|that is|you'd like|you want|you're|you are)\b",
                        re.I)


def readback_keys(text: str, keys, facts: dict) -> tuple[str, ...]:
    """Keys among ``keys`` whose value ``text`` presents as the caller's: in a read-back or an
    attribution ("Let me read that back. The account number is X", "You're planning X"),
    which presupposes the caller said it."""
    out: list[str] = []
    lead = False
    for sent in re.split(r"(?<=[.?!])\s+", text):
        framed = lead or bool(_READ_BACK.search(sent))
        hits = [k for k in keys if k in facts and (facts[k].value in sent or (
            facts[k].spoken and facts[k].spoken in sent))]
        lead = bool(_READ_BACK.search(sent)) and not hits and not sent.rstrip().endswith("?")
        if framed:
            out += [k for k in hits if k not in out]
    return tuple(out)


def _partial_keys(text: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    """Keys with a distinctive label word in a request that names no full label."""
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    hits = []
    for k in keys:
        toks = [t for t in re.findall(r"[a-z0-9]+", P.label(k).lower()) if t not in _GENERIC
                and t not in ("the", "of", "four", "last", "digits", "account", "current", "new")]
        if any(t in words for t in toks):
            hits.append(k)
    return tuple(hits)


def _produced(scenario: Scenario) -> set[str]:
    return {k for s in scenario.kb.workflow.stages for k in getattr(s, "produces", ())}


# a turn that reports the step's work done ("I've put the redirect through", "your request is
# submitted"): the values that step took are acted on, and a change to them comes too late
ACTED = re.compile(r"\bI(?:'ve| have) (?:just |now )?(?:put|submitted|sent|booked|placed|cancelled|"
                   r"ordered|moved|changed|updated|set up|processed|filed|requested|issued|applied|"
                   r"scheduled|rebooked|redirected|blocked|stopped|enrolled|registered|added)\b|"
                   r"\b(?:is|are|has been|have been) (?:now )?(?:submitted|booked|placed|cancelled|"
                   r"redirected|scheduled|processed|filed|on (?:its|their) way)\b", re.I)


def stage_units(scenario: Scenario, stage_name: str) -> list[Unit]:
    """Talking points in order, questions for required info no talking point covers before a
    closing talking point. A key whose value a talking point reads out is covered by it."""
    st = scenario.kb.workflow.stage(stage_name)
    from bargein.verify.objects import system_keys

    held = system_keys(scenario)          # values only the system holds: never asked for
    askable = tuple(k for k in st.required_info if k not in _produced(scenario) and k not in held)
    facts = {f.key: f for f in scenario.kb.user_facts}
    wf = scenario.kb.workflow
    ends = any(t.source == stage_name and t.kind == "next" and t.target in wf.terminals
               for t in wf.transitions)
    units, covered, close = [], set(), []
    for tp in tuple(getattr(st, "talking_points", ()) or ()):
        said = tuple(k for k in askable if k in facts and (facts[k].value in tp or (
            facts[k].spoken and facts[k].spoken in tp)))
        if _CLOSING.search(tp) and ends:
            close.append(Unit(kind="close", stage=stage_name, text=tp))
        elif "?" in tp:
            question = " ".join(re.findall(r"[^.?!]*\?", tp))      # only what is asked counts
            asked = asked_keys(question, askable)
            # values the turn reads out are the caller's to confirm only when it asks a yes-no
            # question about them ("... 4 days left. Is that the one?"), not when it asks
            # something else ("What's the main reason, recent sales or ...?")
            last = re.findall(r"[^.?!]*\?", tp)[-1]
            confirm = () if asked or choose_option(tp, random.Random(0)) or \
                question_kind(last) not in ("fact", "offer") else said
            # a read-back before the question ("So that's {business}, and you're {name}. What's
            # the best email?") gives back what the caller said: what they have not said yet is
            # asked first
            before = tp[:tp.find(question.strip())] if question.strip() in tp else ""
            owed = tuple(k for k in readback_keys(before, said, facts) if k not in covered
                         and k not in asked)
            keys = tuple(dict.fromkeys(k for k in asked + confirm if k not in covered))
            if owed:                   # the stage's last question asked for them in words no
                prev = next((i for i in range(len(units) - 1, -1, -1)   # label matched ("the
                             if units[i].kind == "ask" and units[i].text), None)  # legal name of
                if prev is not None:                                   # the business")
                    units[prev] = units[prev].model_copy(
                        update={"keys": tuple(dict.fromkeys(units[prev].keys + owed))})
                else:
                    units.append(Unit(kind="ask", stage=stage_name, keys=owed))
                covered |= set(owed)
            if not keys and _REQUEST.search(question):  # "could you tell me ..." naming no label
                keys = _partial_keys(question, tuple(k for k in askable if k not in covered))
            covered |= set(keys) | set(said)
            units.append(Unit(kind="ask", stage=stage_name, text=tp, keys=keys))
        else:
            # a statement that uses a value the caller brings (a read-back, "I'm submitting it
            # with {plan}") needs the caller to have said it first: the request before it
            # ("I'll need your account number with them ...") is the question, or one is asked
            owed = tuple(k for k in readback_keys(tp, said, facts) if k not in covered)
            if owed:
                prev = units[-1] if units else None
                if prev is not None and prev.kind == "inform" and prev.text and _NEED.search(prev.text) \
                        and set(owed) <= set(asked_keys(prev.text, askable) + _partial_keys(prev.text, askable)):
                    units[-1] = prev.model_copy(update={"kind": "ask", "keys": owed})
                else:
                    units.append(Unit(kind="ask", stage=stage_name, keys=owed))
            covered |= set(said)
            units.append(Unit(kind="inform", stage=stage_name, text=tp))
    # a required value no talking point asks for is asked with the stage's questions, before
    # the statements that conclude them ("you're verified and I've opened your application")
    last_ask = max((i for i, u in enumerate(units) if u.kind == "ask"), default=-1)
    left = [Unit(kind="ask", stage=stage_name, keys=(k,)) for k in askable if k not in covered]
    units[last_ask + 1:last_ask + 1] = left
    units += close
    if not units:
        units.append(Unit(kind="inform", stage=stage_name, text=P.sentence(st.description)))
    return units


def choose_option(question: str, rng: random.Random) -> str | None:
    """One option of an 'A, B, or C?' question, as the user would name it."""
    qs = [q for q in re.findall(r"[^.?!]*\?", question) if " or " in q]
    if not qs:
        return None
    q = qs[-1]
    if re.search(r"\b(?<!would you )(?<!do you )(?<!you'd )like\b|\b(including|perhaps|such as|any)\b",
                 q, re.I):
        return None                         # examples of a yes-no question, not options
    yn = _YN.search(q)
    if yn and "," in q[:yn.start()]:        # "Just so I know, are you the patient, or ...?": the
        q = q[yn.start():]                  # lead-in is no option
    head, _, last = q.rstrip("?").strip().rpartition(" or ")
    parts = [p.strip() for p in head.split(",") if p.strip()] + [last.strip()]
    if len(parts) < 3:
        return None                         # "Is that correct, or has it changed?" is no choice
    lead = _EITHER.match(parts[0])          # "Would you like standard": its option is one too
    parts = [lead.group(2)] + parts[1:] if lead else parts[1:]
    opts = [re.sub(r"^(?:more|a|an|the|some)\s+", "", p) for p in parts if 0 < len(p.split()) <= 5]
    return rng.choice(opts) if opts else None


_YN = re.compile(r"\b(would|could|can|do|does|did|is|are|shall|should|will|may|have|has)\s+"
                 r"(you|i|we|that|this|it|the|there|anyone|your|everything)\b", re.I)
_WH = re.compile(r"(?:^|,\s*|\band\s+)(?:roughly\s+|about\s+)?(what|which|where|when|why|how|who)\b", re.I)
_EITHER = re.compile(r"^(are you|would you like|would you prefer|do you want|do you prefer|should i|shall i|"
                     r"do you want me to|would you like me to)\s+(.+)$", re.I)


def question_kind(question: str) -> str:
    """How a caller answers a question that asks for no fact of theirs: ``reason`` ("what's
    prompting the change?"), ``open`` (another wh-question), ``either`` ("are you the patient,
    or ...?"), ``no`` ("do you have any other cards?"), ``flexible`` ("a preferred time?"),
    ``offer`` / ``request`` / ``fact`` (a yes-no question offering, asking for an action, or
    checking something), ``done`` ("Anything else?")."""
    q = question.strip()
    low = q.lower()
    yn, wh = _YN.search(q), _WH.search(q)
    if re.search(r"\b(prompting|reason for|why)\b", low):
        return "reason"
    if wh and (not yn or wh.start() < yn.start()):
        return "which" if wh.group(1).lower() == "which" else "open"
    if re.search(r",\s*or\b", low) and _EITHER.match(q[yn.start():] if yn else q):
        return "either"
    if re.search(r"\b(preferred|preference)\b", low):
        return "flexible"
    if re.search(r"\binstead\b", low):
        return "keep"
    if re.search(r"\b(?:anything|something) (?:else|more|further)\b", low) and (
            re.match(r"\W*(?:is there )?(?:anything|something) (?:else|more|further)\b", low)
            or re.search(r"\b(?:help|assist|do for you|look into|sort out|(?:can|could|may) i|i can)\b", low)):
        return "done"                       # "Anything else?" closes: "No, that's everything", not
                                            # "No, that's not the case." (a hand read of seed 2929)
    if re.search(r"\banything else\b", low):
        return "no"
    if re.search(r"\bany(?:one|thing)?\b|\belse\b", low) and "go ahead" not in low:
        return "no"
    if not yn:
        return "fact"
    aux, subj = yn.group(1).lower(), yn.group(2).lower()
    if aux in ("can", "could", "may") and subj == "i" and re.search(r"\b(have|get|take|grab)\b", low):
        return "open"                       # "Could I have your name ...?" asks for information
    if subj == "i" and (aux in ("did", "have", "has") or (
            aux in ("can", "could", "may") and re.search(r"\b(?:just )?(?:check|confirm)\b", low)
            and re.search(r"\b(?:you're|you are|that|this|it's|it is)\b", low))):
        return "fact"                       # "Did I hear that correctly?", "Can I just check
                                            # you're the contact of record?": a check, no offer
    if re.search(r"\b(work for you|suit you|be okay|okay with you|sound good|sound better|help)\?", low):
        return "offer"
    if (aux in ("would", "do") and re.search(r"\b(like|want)\b", low)) or subj in ("i", "we") \
            or "go ahead" in low:
        return "offer"
    if aux in ("can", "could", "may") and subj == "i" and re.search(r"\b(have|get|take|grab)\b", low):
        return "open"                       # "Could I have your name ...?" asks for information
    if aux in ("can", "could") and subj == "you" and not re.search(r"\b(confirm|see)\b", low):
        return "request"
    return "fact"


def _either_option(question: str, rng: random.Random) -> str:
    """The caller's pick of an 'A, or B?' question, said in the first person."""
    yn = _YN.search(question)
    body = question[yn.start():] if yn else question
    first, _, second = body.rstrip("?").partition(", or ")
    m = _EITHER.match(first)
    lead, opt1 = (m.group(1).lower(), m.group(2)) if m else ("", first)
    opt2 = re.sub(r"^(are you|would you like|do you want)\s+", "", second.strip(), flags=re.I)
    # "Should I cancel the whole booking, or only some?": the workflow goes on with the first
    # "Are you the patient, or are you calling on their behalf?": the caller is who the scenario's
    # facts describe (they said "my date of birth"), never someone else half-way through the call
    opt = opt1 if rng.random() < 0.6 or lead in ("should i", "shall i", "are you") else opt2
    opt = re.sub(r"^(?:me|us) to\s+", "", opt)
    if lead == "are you":
        return f"I'm {opt}."
    if lead in ("should i", "shall i", "do you want me to", "would you like me to"):
        return P.sentence(f"{opt}, please.")      # "Cancel the whole booking, please."
    if lead in ("would you like", "do you want") and not re.match(r"^(a|an|the|to)\b", opt):
        return P.sentence(f"please {opt}.")
    return P.sentence(f"{opt}, please.")


def answer_question(text: str, rng: random.Random) -> tuple[str, str] | None:
    """(kind, reply) for the last question of a talking point that asks for no fact, so the
    caller answers it instead of acknowledging it; None when the text asks nothing. A
    ``reason`` question is answered by the planner (with a hidden fact when there is one)."""
    qs = [q.strip() for q in re.findall(r"[^.?!]*\?", text)]
    if not qs:
        return None
    kind = question_kind(qs[-1])
    opt = choose_option(text, rng) if kind not in ("keep", "offer", "request") else None
    if opt:
        return "which", P.sentence(rng.choice([f"{opt}, I'd say.", f"Probably {opt}.",
                                               f"Mostly {opt}, I think.", f"{opt} matters most to me."]))
    if kind == "either":
        return kind, _either_option(qs[-1], rng)
    if kind == "which":
        opt = choose_option(text, rng)
        return kind, (P.sentence(rng.choice([f"{opt}, I'd say.", f"Probably {opt}.",
                                             f"{opt}, please."])) if opt
                      else P.pick(rng, "user", "qa_which"))
    if kind == "reason":
        return kind, P.pick(rng, "user", "qa_reason")
    checked = _CHECK_WHETHER.search(qs[-1]) if kind == "request" else None
    if checked:     # "could you check whether other apps are streaming fine?": the caller
        found = re.sub(r"\byour\b", "my", checked.group(1).strip())   # looks, and says what
        return kind, P.sentence(rng.choice([f"Okay, I've checked. Yes, {found}.",  # they found
                                            f"Hang on. Yes, {found}.",
                                            f"Just looked, and yes, {found}."]))
    return kind, P.compose(rng, "user", f"qa_{kind}")


_PACE = re.compile(r"\b(?:slow(?:ly|er)?|simple|first language|hard of hearing|"
                   r"take (?:it|things) (?:slow|easy)|bear with me)\b", re.I)
_CHECK_WHETHER = re.compile(r"\b(?:check|see|look)\s+(?:whether|if)\s+([^?]{3,80})\?", re.I)


# words of the way a side request is brought in ("random question", "before I forget"), not its
# subject
_OPENER_WORDS = frozenset({"random", "question", "quick", "sorry", "unrelated", "way", "wait",
                           "topic", "forget", "one", "thing", "mind", "actually", "quickly",
                           "also", "hang", "while", "think"})


def _same_subject(line: str, other: str) -> bool:
    """Whether a caller's ``line`` says what ``other`` says: two content words or more in
    common (its opener's glue words aside), and half of the line's first four."""
    from bargein.verify.text import content_words
    mine = content_words(line) - _OPENER_WORDS
    common = mine & (content_words(other) - _OPENER_WORDS)
    return len(common) >= 2 and len(common) * 2 >= min(len(mine), 4)


# ---- state ----------------------------------------------------------------------------------
@dataclass
class ConversationState:
    """Everything the planner tracks between rounds (mutable; internal to one simulation)."""

    scenario: Scenario
    target_messages: int
    round: int = 0
    n_messages: int = 0
    stage: str | None = None
    units: deque = field(default_factory=deque)
    visits: dict[str, int] = field(default_factory=dict)
    phase: str = "workflow"          # workflow | closing | farewell | done
    outcome: str | None = None
    terminal_kind: str | None = None
    close_offered: bool = False
    recapped: bool = False
    stated: dict[str, str] = field(default_factory=dict)     # key -> words the user used
    read_back: set[str] = field(default_factory=set)         # keys the assistant said aloud
    confirmed: set[str] = field(default_factory=set)         # keys the caller said "yes, that's
                                                             # right" to at a read-back
    uttered: set[str] = field(default_factory=set)           # keys the user said in words
    corrected: set[str] = field(default_factory=set)
    acted: set[str] = field(default_factory=set)             # keys a reported action used ("I've
                                                             # put the redirect through")
    system_first: set[str] = field(default_factory=set)      # keys the assistant said first
    unknown_in_stage: bool = False
    used_pairs: dict[str, set[int]] = field(default_factory=dict)
    last_user: dict[str, str] = field(default_factory=dict)  # ack info for the next message
    pending: Recovery | None = None                          # an interruption to recover from
    pending_unit: Unit | None = None                         # the unit that was cut
    dispute: str = ""                                        # what the last pushback was about
    delivered: set[str] = field(default_factory=set)         # stages with a delivered turn
    dispute_kind: str = "policy"                             # fee | requirement | policy
    persisted: int = 0                                       # pushbacks kept up on that dispute
    disputed_ask: tuple[str, ...] = ()                       # what the disputed question asked for
    alt_verified: str = ""            # the check stage an accepted alternative (a code) passed
    chain: int = 0                                           # rounds cut in a row (so far)
    owed: int = 0                                            # cuts a run cap held back
    last_cut_round: int = -99                                # round of the last cut-in
    last_cut_type: str = ""                                  # and its type
    impatient_n: int = 0                                     # impatient cut-ins so far
    held: dict[str, int] = field(default_factory=dict)       # types drawn where they could not
                                                             # be, kept for a turn that can take
                                                             # them (pushback, impatient)
    fast: bool = False
    agreed: bool = True                                      # the caller said yes to the change
                                                             # since the last price was quoted
    said: str = ""                                           # what the assistant said so far
    clarified: int = 0                                       # "was that X?" questions asked
    current: str = ""                                        # what the turn being planned says
    promises: list[tuple[str, str]] = field(default_factory=list)   # ("send", "you the steps")
                                                             # or ("after", sentence): what an
                                                             # answer to a side remark promised
    followed: int = 0                                        # how many of them were taken up
    declined: set[str] = field(default_factory=set)          # words of offers the caller turned
                                                             # down ("monthly")

    @property
    def facts(self) -> dict[str, UserFact]:
        out = {f.key: f for f in self.scenario.kb.user_facts}
        out.update({f.key: f for f in self.scenario.intent.hidden_facts})
        return out

    def correction(self, key: str):
        return next((c for c in self.scenario.intent.corrections if c.key == key), None)

    def value_for(self, key: str) -> str | None:
        """The words the user uses for ``key`` now (the first value of a planned correction)."""
        if key in self.stated:
            return self.stated[key]
        fact = self.facts.get(key)
        if fact is None:
            return None
        corr = self.correction(key)
        if corr is not None and key not in self.corrected and key not in self.checked_keys() \
                and MAX_MESSAGES - self.n_messages >= SLIP_ROOM:
            return corr.first_value
        return spoken(fact)

    def checked_keys(self) -> frozenset[str]:
        """Details an identity check of the workflow takes: the caller gives them right. A slip
        there passes the check with a wrong value (or would have to fail it): an independent hand
        read of seed 5151 found card digits and a patient ID taken wrong and never put right, and
        the slip check found 9 such calls of 50 on seed 7."""
        return frozenset(k for st in check_stages(self.scenario.kb.workflow) for k in st.required_info)

    def correctable(self) -> list[str]:
        from bargein.verify.objects import system_keys

        held = system_keys(self.scenario)
        # an identity detail checked in a verification stage is not "corrected" once that stage
        # is over: the check passed with it, so the first value cannot have been wrong
        past = {k for st in check_stages(self.scenario.kb.workflow) if st.name != self.stage
                for k in st.required_info}
        return [c.key for c in self.scenario.intent.corrections
                if self.stated.get(c.key) == c.first_value and c.key not in self.corrected
                and c.key in self.uttered and c.key not in held and c.key not in self.system_first
                and c.key not in past and c.key not in self.confirmed and c.key not in self.acted]

    def correctable_in(self, unit) -> list[str]:
        """:meth:`correctable`, less the keys the turn ``unit`` reports an action done with: a
        new address given after "I've put the redirect through to the carrier" changes nothing
        already sent (a correction there, accepted with "I'll use it instead", was a hand-read
        defect class)."""
        keys = self.correctable()
        if unit is None or not unit.text or not ACTED.search(unit.text) or not unit.stage:
            return keys
        used = set(self.scenario.kb.workflow.stage(unit.stage).required_info)
        return [k for k in keys if k not in used]

    def in_text(self, key: str, text: str) -> bool:
        """Whether ``text`` says ``key``'s value (any form, a planned first value too)."""
        f, c = self.facts.get(key), self.correction(key)
        forms = [v for v in ((f.value, f.spoken) if f else ()) if v]
        forms += [c.first_value] if c is not None else []
        return any(v and v in text for v in forms)

    def free_pairs(self, bank: str) -> list[tuple[str, int]]:
        """Unused (bank key, index) pairs: the domain's own list (``bank.<domain>``) first,
        then the generic one; a draw takes the domain's three times as often."""
        out = []
        for key, weight in ((f"{bank}.{self.scenario.domain.name}", 3), (bank, 1)):
            if key not in P.bank_keys("pairs"):
                continue
            used = self.used_pairs.get(key, set())
            out += [(key, i) for i, pr in enumerate(P.bank("pairs", key))
                    if i not in used and self._fits_goal(pr) and not self._asked_before(pr)
                    and not (bank == "topic_switch" and self._answer_says_nothing_new(pr))] * weight
        return out

    def _answer_says_nothing_new(self, pair: dict) -> bool:
        """A side request whose answer names nothing of it that was not in the air already ("a
        wheelchair at the gate for my mother?" -- "Yes, wheelchair assistance can be added",
        after the agent said it adds wheelchair assistance for the caller): it would read as the
        request left unanswered."""
        if not isinstance(pair, dict) or not pair.get("user") or not pair.get("assistant"):
            return False
        from bargein.verify.text import content_words
        heard = f"{self.said} {self.current} {self.last_user.get('value', '')}"   # the turn
        asked = content_words(pair["user"]) - _OPENER_WORDS - content_words(heard)  # answers it
        return bool(content_words(pair["user"]) - _OPENER_WORDS) and not all(
            content_words(a) & asked for a in P.answers(pair))

    def _used_pair_lines(self) -> list[str]:
        """The caller's lines of the side remarks already used in this call."""
        out = []
        for key, idx in self.used_pairs.items():
            bank = P.bank("pairs", key)
            out += [bank[i]["user"] for i in idx
                    if i < len(bank) and isinstance(bank[i], dict) and bank[i].get("user")]
        return out

    def _asked_before(self, pair: dict) -> bool:
        """A side request on the subject of one already raised in this call ("when does the
        library close during exams?" after "... during exam week?"): a caller asks once. Nor
        does a side remark say what one of the caller's hidden facts says ("I'm an
        international student" when that is their hidden fact): said once, not twice."""
        if not isinstance(pair, dict) or not pair.get("user"):
            return False
        return any(_same_subject(pair["user"], other) for other in
                   self._used_pair_lines() + [f.value for f in self.scenario.intent.hidden_facts])

    def _pair_said_it(self, key: str) -> bool:
        """Whether a side remark already used in this call said hidden fact ``key``."""
        f = self.facts.get(key)
        return f is not None and any(_same_subject(line, f.value)
                                     for line in self._used_pair_lines())

    def _fits_goal(self, pair: dict) -> bool:
        """A pair with a ``when`` pattern fits only a goal whose description or talking points
        match it (an aisle seat needs a flight being chosen, step-free access a visit); one with
        an ``unless`` pattern only a goal that does not."""
        when = pair.get("when") if isinstance(pair, dict) else None
        unless = pair.get("unless") if isinstance(pair, dict) else None
        if isinstance(pair, dict) and phone_gone(self.scenario.goal.description):
            lines = pair.get("assistant", [])
            if any(BY_TEXT.search(x) for x in ([lines] if isinstance(lines, str) else lines)):
                return False        # nothing is texted to a phone that is lost
        if not when and not unless and not (isinstance(pair, dict) and pair.get("until")):
            return True
        wf = self.scenario.kb.workflow
        text = " ".join([self.scenario.goal.name, self.scenario.goal.description,
                         *(tp for st in wf.stages for tp in st.talking_points)])
        # ``unless``: the answer commits to something the call itself then breaks ("I'll
        # avoid links" in a call that sends a payment link, "everything by text" where the
        # confirmation is emailed)
        until = pair.get("until")
        if until and re.search(until, f"{self.said} {self.current}", re.I):
            return False        # "I'd rather not fly overnight" once the flight is already held
        if isinstance(pair, dict) and contradicts_times(pair.get("user", ""), self.call_times()):
            return False        # "I can only do late afternoons" in a call that books 10:15 AM
        return (not when or re.search(when, text, re.I) is not None) and \
            (not unless or re.search(unless, text, re.I) is None)

    def call_times(self) -> list[str]:
        """The clock times of this call: its time facts and every value a correction names."""
        times = [f.value for f in self.scenario.kb.user_facts if f.kind == "time"]
        return times + [v for c in self.scenario.intent.corrections
                        for v in (c.first_value, c.corrected_value)]

    def asked_for_patience(self) -> bool:
        """Whether the caller has asked the agent to slow down or keep it simple ("I'm hard of
        hearing, so please speak slowly"): after that they do not hurry it along."""
        for key, idx in self.used_pairs.items():
            bank = P.bank("pairs", key)
            if any(isinstance(bank[i], dict) and _PACE.search(bank[i].get("user", ""))
                   for i in idx if i < len(bank)):
                return True
        return any(f.key in self.stated and _PACE.search(f.value)
                   for f in self.scenario.intent.hidden_facts)

    def side_asked(self) -> int:
        """Side questions (topic-switch pairs) the caller has asked in this call."""
        return sum(len(v) for k, v in self.used_pairs.items() if k.split(".")[0] == "topic_switch")

    def take_pair(self, bank: str, rng) -> dict[str, str]:
        """Draw and mark one pair of ``bank``: the plan detail ``{"pair": "<key>#<i>"}``."""
        key, i = rng.choice(self.free_pairs(bank))
        self.used_pairs.setdefault(key, set()).add(i)
        return {"pair": f"{key}#{i}"}

    def volunteerable(self, relevant: set[str] | None = None) -> list[str]:
        """Facts the user may offer unasked: hidden facts, and ``provides`` keys that are
        ``relevant`` (needed soon), not yet given."""
        intent = self.scenario.intent
        hidden = [f.key for f in intent.hidden_facts]
        corrected = [c.key for c in intent.corrections]   # said early, so they can be corrected
        keys = corrected + [k for k in intent.provides if relevant is None or k in relevant] + hidden
        from bargein.verify.objects import system_keys

        facts, held = self.facts, system_keys(self.scenario)
        late = self._past_until()
        return [k for k in dict.fromkeys(keys) if k in facts and k not in self.stated
                and k not in held and k not in self.read_back   # not what the system read out
                and k not in late and not (k in hidden and self._pair_said_it(k))]

    def _past_until(self) -> set[str]:
        """Hidden facts whose catalogue ``until`` pattern the agent has already said (a wedding
        to reach once the new flight is held is news too late to act on)."""
        from bargein.generators.catalogue_loader import ConfigError, load_catalogue
        try:
            dom = load_catalogue().domains.get(self.scenario.domain.name)
        except ConfigError:
            return set()
        goal = dom.goals.get(self.scenario.goal.name) if dom is not None else None
        return {h.key for h in (goal.hidden if goal is not None else ())
                if h.until and re.search(h.until, f"{self.said} {self.current}", re.I)}

    def is_hidden(self, key: str) -> bool:
        return any(f.key == key for f in self.scenario.intent.hidden_facts)

    def say(self, key: str) -> str:
        """What the user says to volunteer ``key`` (hidden facts as a first-person clause)."""
        if self.is_hidden(key):
            return P.first_person(self.facts[key].value)
        value = self.value_for(key) or ""
        return P.clause(value) or value

    def fill_values(self, text: str) -> str:
        """Talking points say the values the user actually gave (after corrections)."""
        for key in sorted(self.corrected):
            c, fact = self.correction(key), self.facts.get(key)
            if c is None:
                continue
            olds = [c.first_value] + ([fact.spoken] if fact and fact.spoken and
                                      fact.value == c.first_value else [])
            for old in olds:
                text = text.replace(old, c.corrected_value)
        return text
