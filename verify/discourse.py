"""Checks on what the conversation establishes, turn by turn (issue 12, second reading).

A hand reading of the offline output found defects the other checks do not see:

- ``presupposed_value``: an assistant turn or gold recovery frames a value as the caller's
  ("you believe the home is worth $254,000", "let me read that back: the PIN is 942914",
  "I've noted 3822") when the caller never said it;
- ``cut_inside_value``: the interruption cut lands inside a proper name or a multi-word value
  (between "New" and "York", inside a date, an address, "4 | days");
- ``yes_no_answered``: the caller's next turn neither answers a yes/no question put to them
  nor gives an equivalent, and the assistant moves on without asking again;
- ``grammar_gold``: the casing and agreement rules of ``grammar_casing`` on the gold
  recoveries and rubric criteria (text a model is trained or judged on, not only messages).

Each rule reads the conversation's own content (messages, the scenario's facts and which side
said which value first), never the writer's phrase banks or plan, so offline and LLM
conversations are judged alike.
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Message, Verdict
from bargein.verify.base import _verdict, check, replies_to
from bargein.verify.edits import set_edit
from bargein.verify.objects import system_keys
from bargein.verify.quality import grammar_issues
from bargein.verify.text import is_backchannel, normalise, sentences, tokens, word_ends


# ---- shared -----------------------------------------------------------------------------------
def _digits(s: str) -> str:
    return re.sub(r"\D", "", s)


def _fact_forms(conv: Conversation) -> list[tuple[str, tuple[str, ...]]]:
    """(key, forms) for every value of the scenario a turn can say: the KB facts (value and
    spoken form), hidden facts, and both sides of each planned correction."""
    sc = conv.scenario
    out = [(f.key, tuple(v for v in (f.value, f.spoken) if v)) for f in sc.kb.user_facts]
    out += [(c.key, (c.first_value,)) for c in sc.intent.corrections]
    out += [(c.key, (c.corrected_value,)) for c in sc.intent.corrections]
    return [(k, fs) for k, fs in out if fs]


def _mentions(text: str, form: str) -> bool:
    """Whether ``form`` occurs in ``text``: token-folded, or as the same digit string (a number
    read with other grouping, '1244 9864 39' vs '1244986439')."""
    p = normalise(form)
    if p and f" {p} " in f" {normalise(text)} ":
        return True
    d = _digits(form)
    return len(d) >= 3 and len(d) * 2 >= len(re.sub(r"\W", "", form)) and d in _digits(text)


# ---- presupposed_value ------------------------------------------------------------------------
# Frames in which the assistant presents a value as coming from the caller: an attribution, a
# read-back, an acknowledgement of what was given. (General English, not the writer's banks.)
_FRAME = re.compile(
    r"\byou(?:'ve| have)?\s+(?:said|mentioned|told (?:me|us)|believe|think|estimated?|reported|"
    r"gave( me)?|quoted|stated|expect)\b|"
    r"\byou(?:'re| are)\s+(?:planning|expecting|saying|telling me)\b|"
    r"\bread(?:ing)? (?:that|it|this|those|them|everything) back\b|\bread back\b|"
    r"\b(?:what )?I(?:'ve| have)? (?:wrote|written|got|taken|put) (?:it |that |this )?down\b|"
    r"\bI have .{1,80}?\b(?:written down|down here|noted)\b|"
    r"\bI(?:'ve| have) (?:noted|added|updated|changed|recorded|saved|corrected)\b|"
    r"\bI'll use\b|\byour [\w' ]{1,40}? (?:is|are) now\b|\bjust to (?:double-)?check\b|\bto confirm what\b",
    re.I)


# a read-back that gives the caller's answers back for a yes ("So that's Canada, leaving Tuesday
# and returning Monday. Is that right?", "To confirm, you'd like the records sent to ...")
# (at the sentence's start, after at most two short openers: "Anyway, as I was saying, so ...";
# not "You booked at seven, so you're within the window", a record and its consequence)
_SO_FRAME = re.compile(r"^\s*(?:[\w' ]{1,24},\s+){0,2}(?:so|just to confirm|to confirm),?\s+"
                       r"(?:that's|that is|you'd like|you want|you're|you are)\b", re.I)


def _framed_spans(text: str) -> list[tuple[int, int]]:
    """Sentences whose content a frame attributes to the caller: the frame's sentence, and for
    a read-back ("let me read that back.") the sentence after it."""
    sents = sentences(text)
    out = []
    for i, (s, e) in enumerate(sents):
        mm = _FRAME.search(text[s:e]) or _SO_FRAME.search(text[s:e])
        if not mm:
            continue
        out.append((s, e))
        if re.search(r"read|back|down", mm.group(0), re.I) and i + 1 < len(sents) \
                and not text[s:e].rstrip().endswith("?") \
                and not re.search(r"\d|:\s*\S", text[mm.end() + s:e]) \
                and len(re.findall(r"[\w@.']+", text[mm.end() + s:e])) <= 3:
            # (not "I've put down ann@x.com as your email.", whose value is its own either)
            # "Let me read that back." with the values in the next sentence (not "I have X
            # written down." whose value is its own)
            out.append(sents[i + 1])
    return out


def unsaid_values(conv: Conversation, text: str, upto: int) -> list[tuple[str, str, str]]:
    """(key, value, sentence) for values framed as the caller's in ``text`` that no user
    message before index ``upto`` said (in any form of the same fact)."""
    user_text = " \n ".join(m.text for m in conv.messages[:upto] if m.role == "user")
    said_by_any = " \n ".join(m.spoken_text for m in conv.messages[:upto])
    forms = _fact_forms(conv)
    held = system_keys(conv.scenario)
    out = []
    for s, e in _framed_spans(text):
        sent = text[s:e]
        # "So you're on the Starter plan" may be the records' value said back: of a "So that's"
        # read-back only the caller's own values count
        so_frame = not _FRAME.search(sent) and bool(_SO_FRAME.search(sent))
        for key, fs in forms:
            if so_frame and key in held:
                continue
            hit = next((v for v in fs if len(normalise(v)) >= 3 and _mentions(sent, v)), None)
            if hit is None:
                continue
            same_fact = [v for k2, fs2 in forms if k2 == key for v in fs2]
            if any(_mentions(user_text, v) for v in same_fact):
                continue
            # "I've updated X" of a value the records gave and the caller took up is fine only
            # when the caller said it; a value nobody said before is framed from nowhere.
            if not _FRAME.search(sent) and not so_frame and _mentions(said_by_any, hit):
                continue                  # read-back sentence repeating what was on the table
            # "So that's X. Is that right?" gives X back as the caller's answer: an attribution
            if not _ATTRIBUTION.search(sent) and not so_frame and _mentions(said_by_any, hit):
                continue                  # "your code X is now closed": a state, not a quote
            out.append((key, hit, sent))
    return out


# Frames that say the caller spoke the value (as opposed to an update or a state the assistant
# reports): only these are wrong for a value that was on the table but that the caller never said.
_ATTRIBUTION = re.compile(
    r"\byou(?:'ve| have)?\s+(?:said|mentioned|told (?:me|us)|believe|think|estimated?|reported|"
    r"gave( me)?|quoted|stated|expect)\b|"
    r"\byou(?:'re| are)\s+(?:planning|expecting|saying|telling me)\b|"
    r"\bI(?:'ve| have) (?:got|taken|put|written) (?:it |that |this )?down\b|"
    # a value "written down" or "noted" as the caller's ("I have Joel Hale written down for
    # your full name", "I've noted 4 as your ...") is a read-back of what the caller gave
    r"\bI have .{1,80}?\b(?:written down|down here|noted)\b|\bI(?:'ve| have) noted\b.{0,80}\byour\b|"
    r"\byour [\w' ]{1,40}? (?:is|are) now\s+\S*\d", re.I)


@check("presupposed_value")
def presupposed_value(conv: Conversation) -> list[Verdict]:
    """An assistant turn or a gold recovery presents a value as the caller's (an attribution,
    a read-back, an acknowledgement) when the caller never said that value."""
    out = []
    for m in conv.messages:
        if m.role != "assistant":
            continue
        for key, v, sent in unsaid_values(conv, m.spoken_text, m.index):
            out.append(_verdict("presupposed_value", m.index, f"presents {key}={v!r} as the "
                                "caller's, but the caller never said it", evidence=sent,
                                fixable=False))
            break
    for k, gold in sorted(conv.gold_recoveries.items()):
        for key, v, sent in unsaid_values(conv, gold, k + 1):
            out.append(_verdict("presupposed_value", k, f"the gold recovery presents "
                                f"{key}={v!r} as the caller's, but the caller never said it",
                                evidence=sent, fixable=False))
            break
    return out


# ---- cut_inside_value -------------------------------------------------------------------------
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|"
          r"December)")
_NUMW = (r"(?:\d(?:[\d,.]*\d)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
         r"fifteen|twenty|thirty|forty|fifty|sixty|ninety|a hundred)")
_MULTI = [
    ("date", re.compile(rf"(?:{_WEEKDAY},?\s+)?{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?"
                        rf"(?:,?\s+at\s+\d{{1,2}}(?::\d{{2}})?\s?(?:AM|PM|am|pm|a\.m\.|p\.m\.))?")),
    ("time", re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:AM|PM|am|pm|a\.m\.|p\.m\.)")),
    ("quantity", re.compile(rf"\b{_NUMW}(?:[- ](?:business|working|calendar))?[- ]"
                            r"(?:minutes?|hours?|days?|weeks?|months?|years?|dollars?|euros?|"
                            r"pounds?|percent|titles|profiles|payments|seats?|nights?|lines?)\b",
                            re.I)),
    ("money", re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?\s(?:a|per|each)\s(?:month|year|week|day|"
                         r"seat|night|person)\b")),
]
_CAP = r"(?:Dr\.|Mr\.|Mrs\.|Ms\.|St\.|[A-Z][\w'’&-]*)"
_NAME_RUN = re.compile(rf"{_CAP}(?:,?\s+(?:(?:and|of|de|la|&)\s+)?{_CAP})+")
_NOT_NAME = frozenset("""I I'm I'll I've I'd Okay OK Yes No Oh Actually Sorry Wait Hi Hello Thanks
Thank The A An And But So Now Then Your My Our Is Are Do Does Did Can Could Would Will Let Let's
Just Please Before After Once If When While Great Good Perfect Right Alright Sure Got Understood
Of Next First That This It It's There Here We You He She They Hang Hold Um Uh Mm Hmm Yeah
Anyway Also What Which Who How Where Why When To For In On At From""".split())


def value_spans(conv: Conversation, text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the multi-word values in ``text``: the scenario's fact values,
    dates, times, quantities with their unit, and runs of capitalised words (names)."""
    out: list[tuple[int, int, str]] = []
    for key, fs in _fact_forms(conv):
        for v in fs:
            if len(v.split()) < 2:
                continue
            art = re.match(r"(?:the|a|an)\s+", v, re.I)
            skip = art.end() if art else 0       # "the | Millbrook Creek flood" is before it
            i = text.find(v)
            while i >= 0:
                out.append((i + skip, i + len(v), f"fact:{key}"))
                i = text.find(v, i + 1)
    for kind, pat in _MULTI:
        out += [(m.start(), m.end(), kind) for m in pat.finditer(text)]
    for m in _NAME_RUN.finditer(text):
        parts = list(re.finditer(r"\S+", m.group(0)))
        lead = 0
        while lead < len(parts) and parts[lead].group(0).rstrip(",.") in _NOT_NAME:
            lead += 1
        tail = len(parts)
        while tail > lead and (parts[tail - 1].group(0).rstrip(",.") in _NOT_NAME
                               or parts[tail - 1].group(0) in ("and", "of", "de", "la", "&")):
            tail -= 1       # "Crosscountry Freight, and I've ...": the name ends at "Freight"
        parts = parts[:tail]
        if tail <= lead:
            continue
        caps = [p for p in parts[lead:] if p.group(0)[:1].isupper()]
        if len(caps) >= 2:
            out.append((m.start() + parts[lead].start(), m.start() + parts[-1].end(), "name"))
    return out


@check("cut_inside_value")
def cut_inside_value(conv: Conversation) -> list[Verdict]:
    """The interruption cut does not split a proper name or a multi-word value (a date, an
    address, a quantity and its unit, a fact value of the scenario)."""
    out = []
    for m, u in conv.interruptions:
        heard = m.heard_text or ""
        cut = len(heard.rstrip())
        if not heard or cut >= len(m.text.rstrip()):
            continue
        for s, e, kind in sorted(value_spans(conv, m.text)):
            inner = m.text[s:e].rstrip(" ,.;:")
            if s < cut < s + len(inner) and not m.text[s:cut].rstrip().endswith((".", "?", "!")):
                # the minimal repair: the cut moves to the end of the value, when words remain
                # after it and the next turn does not continue the cut sentence (a backchannel)
                k_end = sum(1 for w in re.finditer(r"\S+", m.text) if w.start() < s + len(inner))
                edit = set_edit(m, "cut_word_index", k_end) \
                    if m.interruption.type != "filler" and k_end < len(word_ends(m.text)) else None
                out.append(_verdict(
                    "cut_inside_value", u.index,
                    f"the {m.interruption.type} cut splits the {kind} value {inner!r} after "
                    f"{m.text[s:cut].strip()!r}", edit=edit,
                    evidence=f"message {m.index}: ...{heard[-40:]!r} | {m.text[cut:cut + 30]!r}"))
                break
    return out


# ---- yes_no_answered --------------------------------------------------------------------------
_LEAD = re.compile(r"^(?:(?:so|and|now|okay|ok|alright|right|great|also|then|first|lastly|finally|"
                   r"before (?:we|I) (?:go on|do|continue)|to verify|just to (?:double-)?check|"
                   r"for security|one more thing|last thing|sorry|quickly),?\s+)+", re.I)
_AUX = frozenset("""is are was were am do does did can could would will shall should have has had
may might isn't aren't don't doesn't didn't can't won't wouldn't shouldn't haven't hasn't""".split())
_TAG = re.compile(r",\s*(?:is that|was that|does that|did I|right|correct|okay|ok|yes|no)\b[^,]*\?$"
                  r"|\b(?:is that|does that|did I get that|was that|would that|will that)\s+"
                  r"(?:right|correct|okay|ok|work|help|sound \w+|suit you|be \w+|all)\b.{0,20}\?$",
                  re.I)
_REQUEST = re.compile(r"^(?:can|could|would|will|may)\s+(?:you|I)\s+(?:(?:please|also|just|now|quickly)\s+)*(?:tell|give|"
                      r"confirm|read|spell|provide|share|let me know|send|have|get|check)\b",
                      re.I)
_YES_NO = re.compile(
    r"\b(?:yes|yeah|yep|yup|yea|sure|certainly|absolutely|definitely|correct|right|exactly|"
    r"indeed|okay|ok|alright|fine|please|no|nope|nah|not|never|nothing|none|neither|"
    r"uh-huh|mm-hm|mhm|mm-hmm|of course|go ahead|sounds good|that works|works for me|"
    r"that would|that'd|do that|do it|let's|i'd like|i would like|i'd rather|i'd prefer|"
    r"i'll take|i'll go|i want|i don't|i do|i am|i'm not|i did|i have|i haven't|that's all|"
    r"that's it|that's everything|all set|i'm good|i'm set|got what i needed|perfect|great|"
    r"lovely|good|agreed|deal|go with|should be|actually|instead|rather|prefer|problem|"
    r"wrong|changed|spot on|covered|the lot|takes care|sorts it|all i needed|that was all|"
    r"i'm fine|we're done|nothing else|that's everything|too|rather not|can't|won't|go for it|"
    r"go on|why not|by all means|be my guest|i guess so|i suppose|i think so|probably|maybe|"
    r"perhaps|not sure|depends|sounds|reasonable|fair|"
    # no preference is an answer ("Do you have a preferred time?" - "Whatever is soonest.")
    r"whatever|either|anything|any time|anytime|flexible|soonest|earliest)\b|n't\b", re.I)


_REFUSAL = re.compile(r"\b(?:no|not|rather|why|prefer|uncomfortable|comfortable|wait|hold on|"
                      r"hang on|don't|can't|won't|later|moment|second|sec)\b|n't\b", re.I)


def yes_no_question(text: str) -> str:
    """The last sentence of ``text`` when it is a yes/no question put to the caller ('' when
    it is not: a wh-question, a statement)."""
    sents = sentences(text)
    if not sents:
        return ""
    s, e = sents[-1]
    q = text[s:e].strip()
    if not q.endswith("?"):
        return ""
    body = _LEAD.sub("", q)
    if re.search(r",? or\b|\b(?:ask|know|tell me|say|see)\s+(?:what|why|how|which|when|where|"
                 r"who|whether)\b", body, re.I):
        return ""                    # "..., or ...?", "Can I ask what's prompting it?"
    first = (tokens(body) or [""])[0]
    if _TAG.search(q) or first in _AUX:
        return q
    return ""


_SPOKEN_DIGITS = re.compile(r"(?:\b(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)\b"
                            r"[\s,-]*){3,}", re.I)
# a reply that turns to something else instead of answering (general discourse markers)
_SHIFT = re.compile(r"\b(?:by the way|just so you know|before I forget|I should (?:say|mention)|"
                    r"while I have you|unrelated|random question|off topic|one more thing|"
                    r"quick question|also,|oh, and|in case you need)\b", re.I)
# acknowledgements that accept what was put to the caller when nothing else follows
_ACK = re.compile(r"\b(?:makes sense|carry on|go on|covers it|that's the one|that's it|"
                  r"i'm listening|got it|understood|noted|fair enough|i see|alright|all right|"
                  r"that's all|sounds? (?:good|fine|right|fair))\b", re.I)


def _gives_value(conv: Conversation, text: str) -> bool:
    if re.search(r"\d|@|\bdot\b", text) or _SPOKEN_DIGITS.search(text):
        return True
    return any(_mentions(text, v) for _, fs in _fact_forms(conv) for v in fs
               if len(normalise(v)) >= 3)


@check("yes_no_answered")
def yes_no_answered(conv: Conversation) -> list[Verdict]:
    """A yes/no question the caller heard in full gets an answer: yes, no or an equivalent
    (or, for a request, the value asked for), unless the assistant asks it again next."""
    out = []
    msgs = conv.messages
    for pos in range(len(msgs) - 1):
        a, u = msgs[pos], msgs[pos + 1]
        if a.role != "assistant" or u.role != "user" or a.interruption is not None:
            continue
        q = yes_no_question(a.text)
        if not q:
            continue
        first = " ".join(re.split(r"(?<=[.!?])\s+", u.text.strip())[:2])   # "Thursday? No."
        if _REQUEST.match(_LEAD.sub("", q)) and re.search(r"\b(?:give|tell|read|spell|provide|"
                                                          r"share|have)\b", q, re.I):
            # "Could you give me your name?" -> "Yep." and nothing: a bare yes is no answer
            bare = is_backchannel(u.text) or len(tokens(u.text)) <= 2
            if not bare or _gives_value(conv, u.text) or _REFUSAL.search(first):
                continue
        elif _YES_NO.search(first.split(". ")[0]) or is_backchannel(u.text):
            continue                          # a yes or no first, whatever follows
        elif _SHIFT.search(u.text):
            pass                              # "Got it, thanks. Oh, and by the way, ..."
        elif _YES_NO.search(first) or _gives_value(conv, u.text) or (
                "?" not in u.text and _ACK.search(first)):
            continue                          # "Makes sense to me. Carry on."
        nxt = msgs[pos + 2] if pos + 2 < len(msgs) else None
        core = normalise(_LEAD.sub("", q))
        sents = sentences(a.text)
        if len(tokens(core)) < 6 and len(sents) > 1:      # "Is that right?": what is confirmed
            s0, e0 = sents[-2]
            core = normalise(a.text[s0:e0]) + " " + core
        if nxt is not None and core and core in normalise(nxt.text):
            continue                          # asked again: the question is still open
        out.append(_verdict("yes_no_answered", u.index, "the caller's reply neither answers "
                            "the yes/no question nor gives an equivalent, and the assistant "
                            "moves on", evidence=f"asked {q!r}; reply {u.text!r}",
                            fixable=False))
    return out


# ---- grammar_gold ----------------------------------------------------------------------------
_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|\([^()]*\)")


@check("grammar_gold")
def grammar_gold(conv: Conversation) -> list[Verdict]:
    """Casing and agreement in the gold recoveries and the rubric criteria (the rules of
    ``grammar_casing``): a gold that continues a sentence cut by a backchannel may start in
    lower case; quoted spans of a criterion are judged where they were said."""
    out = []
    itype = {u.index: m.interruption.type for m, u in conv.interruptions}
    for k, gold in sorted(conv.gold_recoveries.items()):
        cont = itype.get(k) == "filler"
        for s, e, _new, rule in grammar_issues(gold, continuation=cont)[:1]:
            out.append(_verdict("grammar_gold", k, f"gold recovery: {rule}", fixable=False,
                                evidence=repr(gold[max(0, s - 30):e + 30])))
    for r in conv.rubrics:
        for c in (r.tf_criterion, *r.rq_criteria):
            bare = _QUOTED.sub(lambda mm: " " * len(mm.group(0)), c)
            for s, e, _new, rule in grammar_issues(bare)[:1]:
                out.append(_verdict("grammar_gold", r.message_index, f"rubric criterion: {rule}",
                                    fixable=False, evidence=repr(c[max(0, s - 30):e + 30])))
    return out


# ---- escalation_addressed ---------------------------------------------------------------------
_ASK_ESCALATION = re.compile(
    r"\b(?:speak|talk|put me through|transfer me|escalate|get me|want|like|need|ask for)\b"
    r"[^.?!]{0,30}?\b(supervisor|manager|team lead|someone senior|a human|a real person)\b", re.I)
_ANSWERS_ESCALATION = re.compile(
    r"\b(?:supervisors?|managers?|team lead\w*|senior|boss|head of \w+|escalat\w*|transfer\w*|"
    r"put you through|"
    r"connect you|hand (?:you|this) over)\b", re.I)


@check("escalation_addressed")
def escalation_addressed(conv: Conversation) -> list[Verdict]:
    """When the caller asks for a supervisor (a manager, a human), the next assistant turn and
    the gold recovery take that request up (grant it, refuse it, offer a transfer or a
    callback from one), rather than repeating the same offer as if it was not said."""
    out = []
    msgs = conv.messages
    for pos, u in enumerate(msgs):
        if u.role != "user":
            continue
        mm = _ASK_ESCALATION.search(u.text)
        if not mm:
            continue
        for where, text in replies_to(conv, pos):
            if not _ANSWERS_ESCALATION.search(text):
                out.append(_verdict("escalation_addressed", u.index, f"the caller asks for a "
                                    f"{mm.group(1)} and the {where} does not take it up",
                                    evidence=f"caller {u.text!r}; {where} {text[:160]!r}",
                                    fixable=False))
                break
    return out


# ---- confirmation_has_object ------------------------------------------------------------------
_CONFIRM_TAG = re.compile(r"^(?:(?:so|and|okay|ok|just),?\s+)?(?:is that (?:right|correct)|"
                          r"is that all (?:right|correct)|did I get that (?:right|correct)|"
                          r"have I got that right|does that (?:sound|look) right|"
                          r"is all of that (?:right|correct))\??$", re.I)


def _states_something(conv: Conversation, sent: str) -> bool:
    """Whether a sentence puts something up for confirmation: a value of the scenario, a
    number, a name, an email, or a claim about the caller ("you're ...", "your ...")."""
    if re.search(r"\d|@|\b(?:you|you're|your|you've)\b", sent, re.I):
        return True
    if any(_mentions(sent, v) for _, fs in _fact_forms(conv) for v in fs if len(normalise(v)) >= 3):
        return True
    return any(kind == "name" for *_, kind in value_spans(conv, sent))


@check("confirmation_has_object")
def confirmation_has_object(conv: Conversation) -> list[Verdict]:
    """"Is that right?" asks the caller to confirm something just said: it follows a statement
    of a value or a claim about the caller, not a question ("Which employee is this for? Is
    that right?") or a sentence that states nothing ("Let's find the check. Is that right?")."""
    out = []
    for m in conv.messages:
        if m.role != "assistant":
            continue
        text = m.text
        cut = conv.messages[m.index - 2] if m.index >= 2 else None
        if cut is not None and cut.interruption is not None and cut.interruption.type == "filler":
            text = f"{cut.heard_text} {text}"     # a continuation: the sentence began before
        sents = sentences(text)
        for j, (s, e) in enumerate(sents):
            if not _CONFIRM_TAG.match(text[s:e].strip()):
                continue
            prev = text[sents[j - 1][0]:sents[j - 1][1]] if j else ""
            if not prev and m.index > 0:
                continue                          # a tag opening a turn confirms the caller's
            if prev.rstrip().endswith("?") or not _states_something(conv, prev):
                out.append(_verdict("confirmation_has_object", m.index, "a confirmation "
                                    "question after a sentence that puts nothing up to confirm",
                                    evidence=f"{prev} {text[s:e]}".strip(), fixable=False))
                break
    return out
