"""Checks for the defects a reader of the data finds (issue: interjections on fragments, golds
that echo them, grammar, false attributions, ignored facts, impossible corrections, wrong
outcomes, criteria that make no sense).

Each check is named, deterministic, and judges the conversation as written (messages, scenario,
rubrics, outcome) — never the plan of the writer, so offline and LLM conversations are judged
alike. Every verdict carries the message index and the offending span as evidence; a verdict
that a minimal edit repairs carries that edit.
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Message, Verdict
from bargein.verify.base import _verdict, check
from bargein.verify.edits import delete_edit, replace_edit, rewrite_edit
from bargein.verify.objects import (
    FEE_NOUNS, PERSONAL_KEYS, POLICY_NOUNS, REQUIREMENT_NOUNS, find_objects, label, object_words,
    said_before, system_keys,
)
from bargein.verify.text import (
    STOPWORDS, content_words, is_backchannel, normalise, sentences, tokens,
)


def _pairs(conv: Conversation) -> list[tuple[Message, Message]]:
    return [(m, u) for m, u in conv.interruptions if u.role == "user"]


def _content_start(m: Message) -> str:
    return m.heard_text or ""


# ---- interjection_grounded ------------------------------------------------------------------
_OBJECTION = re.compile(r"n't\b|\boff\b|\bsit right\b|\b(why|not|no|never|n't|too|unfair|rather|uncomfortable|wrong|can't|"
                        r"cannot|won't|refuse|problem|worried|concern\w*|seriously|ridiculous|"
                        r"steep|expensive|much|really|suppose[d]?|said|told|thought|long|"
                        r"unreasonable|odd|strange|weird|sure|safe|hold|wait|hang|nobody|expect\w*|necessary|"
                        r"a lot|comfortable|nervous|warned|frustrat\w*|agree\w*|more than|quoted|okay with|"
                        r"bother\w*|sticking point|deal-breaker|stuck with|unhappy|happy about|"
                        r"other options?|supervisor|way around)\b|"
                        r"for, exactly", re.I)
_GENERIC_REF = re.compile(r"\b(that|this|it|those|these|all that|any of that)\b", re.I)
_PUSHBACK_KINDS = frozenset({"fee", "requirement", "policy", "value", "fact"})


def grounding(conv: Conversation, m: Message, text: str) -> tuple[set[str], set[str]]:
    """(words the interjection shares with the heard part, of which those on an object)."""
    heard = m.heard_text or ""
    shared = set(content_words(text) & content_words(heard))
    objs = find_objects(heard, conv.scenario)
    on_obj = shared & object_words(objs, _PUSHBACK_KINDS)
    return shared, on_obj


_REACTION = frozenset("wait why what really seriously sorry pardon excuse me huh hang on hold um uh "
                      "oh hmm whoa no".split())
_DEICTIC = frozenset({"that", "this", "it", "those", "these", "the", "a", "an", "is", "was"})


def echoed_fragment(text: str, heard: str, conv: Conversation) -> str:
    """A span the caller echoes as a question ("Wait, arrive?") that is in the heard words but
    does not end on the head of an object there ('' when there is none)."""
    objs = [o for o in find_objects(heard, conv.scenario) if o.kind in _PUSHBACK_KINDS]
    heads = {tokens(o.phrase)[-1] for o in objs if tokens(o.phrase)}
    for clause in re.findall(r"[^,.;:!?]+\?", text):     # a short echo question: "arrive?"
        words = [w for w in tokens(clause) if w not in _REACTION]
        if not words or len(words) > 3:
            continue
        for n in range(len(words), 0, -1):
            span = " ".join(words[-n:])
            if f" {span} " in f" {normalise(heard)} " and span not in _DEICTIC:
                if words[-1] in heads or any(c.isdigit() for c in span):
                    return ""
                return span
    return ""


@check("interjection_grounded")
def interjection_grounded(conv: Conversation) -> list[Verdict]:
    """A pushback or clarification refers to a real object of the heard part (a fee, amount,
    requirement, policy, fact or the question asked), not an arbitrary fragment, and reads as
    its type: a pushback objects, a clarification asks."""
    out = []
    for m, u in _pairs(conv):
        t = m.interruption.type
        if t not in ("pushback", "normal"):
            continue
        shared, on_obj = grounding(conv, m, u.text)
        earlier = " ".join(e.spoken_text for e in conv.messages[: m.index])
        if t == "pushback":
            if not _OBJECTION.search(u.text):
                out.append(_verdict("interjection_grounded", u.index, "a pushback that does not "
                                    "object to anything", evidence=repr(u.text), fixable=False))
                continue
            echo = echoed_fragment(u.text, m.heard_text or "", conv)
            if echo:
                out.append(_verdict(
                    "interjection_grounded", u.index, f"the pushback echoes {echo!r}, a fragment "
                    "of the heard words that is no fee, requirement, policy or fact",
                    evidence=f"heard {m.heard_text!r}; interjection {u.text!r}", fixable=False))
                continue
            prior = content_words(u.text) & content_words(earlier)   # a concern kept up
            prior_obj = prior & object_words(find_objects(earlier, conv.scenario), _PUSHBACK_KINDS)
            if shared and not on_obj and not prior_obj:
                out.append(_verdict(
                    "interjection_grounded", u.index, f"the pushback hangs on {sorted(shared)}, "
                    "which is no fee, requirement, policy, fact or question of the heard part",
                    evidence=f"heard {m.heard_text!r}; interjection {u.text!r}", fixable=False))
            elif not shared and not prior_obj and not _GENERIC_REF.search(u.text):
                out.append(_verdict(
                    "interjection_grounded", u.index, "the pushback names nothing the assistant "
                    "said", evidence=f"heard {m.heard_text!r}; interjection {u.text!r}",
                    fixable=False))
        elif shared and "?" in u.text and not on_obj:
            # a clarification question about the heard words: it must be about an object
            asked = content_words(u.text) - content_words(earlier)
            if shared & asked or not (content_words(u.text) - shared):
                out.append(_verdict(
                    "interjection_grounded", u.index, f"the clarification asks about "
                    f"{sorted(shared)}, a fragment that is no object of the heard part",
                    evidence=f"heard {m.heard_text!r}; interjection {u.text!r}", fixable=False))
    return out


# ---- impatient_has_rest ---------------------------------------------------------------------
_SKIP_MIN_WORDS = 4


def _cut_sentence(text: str, cut: int) -> tuple[int, int]:
    for s, e in sentences(text):
        if s <= cut <= e + 1:
            return s, e
    return cut, len(text)


@check("impatient_has_rest")
def impatient_has_rest(conv: Conversation) -> list[Verdict]:
    """An impatient cut-in skips an explanation: the cut is not inside a question (the caller
    cannot skip a question put to them) and an explanation of some length was still to come."""
    out = []
    for m, u in _pairs(conv):
        if m.interruption.type != "impatient":
            continue
        heard = m.heard_text or ""
        cut = len(heard)
        s, e = _cut_sentence(m.text, cut)
        sent = m.text[s:e]
        rest = m.text[cut:]
        told = [rest[a:b] for a, b in sentences(rest) if not rest[a:b].rstrip().endswith("?")]
        explanation = sum(len(content_words(x)) for x in told)
        if sent.rstrip().endswith("?") and cut > s:
            out.append(_verdict("impatient_has_rest", u.index, "an impatient cut-in inside a "
                                "question: there is nothing to skip, the caller was being asked",
                                evidence=f"cut in {sent!r} after {heard[s:]!r}", fixable=False))
        elif explanation < _SKIP_MIN_WORDS and not sent.rstrip().endswith("?"):
            out.append(_verdict("impatient_has_rest", u.index, "an impatient cut-in with no "
                                "explanation left to skip", evidence=f"unheard {rest.strip()!r}",
                                fixable=False))
    return out


# ---- grammar_casing -------------------------------------------------------------------------
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|a\.m|p\.m|etc|vs|approx|dr|mr|mrs|ms)\.|\.\.\.|…)$", re.I)
_THIRD = ("is has does doesn't shares needs wants lives works owns rents goes pays uses gets makes "
          "keeps takes travels helps runs tries knows thinks likes sends manages plans cares "
          "handles visits studies teaches drives hopes expects prefers").split()
_BASE = {"is": "am", "has": "have", "does": "do", "doesn't": "don't", "goes": "go", "tries": "try",
         "studies": "study", "teaches": "teach"}
_I_AGREE = re.compile(r"\bI((?:\s+(?:also|still|just|already|usually|currently|really|only|"
                      r"now|always|never|often))?)\s+(%s)\b" % "|".join(map(re.escape, _THIRD)))
_PLURAL_SUBJ = re.compile(r"\b(you|we|they)\s+(has|is|was|doesn't)\b", re.I)
# a question with a plural subject after a singular verb: "is the last four digits really needed?"
_INVERTED_PLURAL = re.compile(r"(?:^|[,.?!:]\s+|\b(?:what|why|where|how|when|so|and|but)\s+)"
                              r"(is|was|does)\s+((?:the|my|your|these|those)\s+(?:last\s+(?:two|three|"
                              r"four)\s+)?(?:digits|details|documents|records|receipts|charges|fees))\b"
                              # "is the records office open": a noun before a noun, not the subject
                              r"(?!\s+(?:office|department|team|desk|section|page|portal|request|"
                              r"clerk|unit|room|system|form)\b)", re.I)
_I_VERB_S = re.compile(r"\bI((?:\s+(?:also|still|just|already|usually|currently|really|only|now|"
                       r"always|never|often))?)\s+([a-z]{2,}[^su'\W]s)\b")
# words after "I" that end in s and are no verb in the third person
_NOT_VERB_S = frozenset("""always sometimes perhaps nowadays afterwards besides towards regardless
nonetheless nevertheless was has is does goes""".split())
_QUESTION_AUX = frozenset("do did can if how who what why where when will would could should must "
                          "might may does are were have had".split())
_A_AN = re.compile(r"\b([Aa])\s+([aeiouAEIOU][a-z]+)\b")
_AN_A = re.compile(r"\b([Aa]n)\s+([b-df-hj-np-tv-z][a-z]+)\b")
_A_OK = re.compile(r"^(uni|use|usu|uti|ure|uro|eu|one|once|ewe)", re.I)
_AN_OK = re.compile(r"^(hour|honest|honou?r|heir|herb)", re.I)
# a hyphenated word's tail is no word of its own: "sign-on on the plan" is right; "that that" can
# be too ("I know that that works")
_DOUBLE = re.compile(r"(?<![\w'-])(the|a|an|to|and|of|is|you|your|it|in|for|on|my|we)\s+\1\b", re.I)
_LOWER_NAME = re.compile(r"(?<![\w@.'-])(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
                         r"january|february|april|june|july|august|september|october|november|"
                         r"december)(?![\w@'-])")
_LOWER_I = re.compile(r"(?<![\w'])i(?=\s|'m|'ve|'ll|'d)(?![\w])")
# a singular head with a prepositional phrase before the verb: "a confirmation with all the
# details are going", "each of the forms were"; quantifier heads ("a couple of") are plural
_SING_HEAD_PP = re.compile(r"\b(?:[Aa]n?|[Ee]ach|[Ee]very|[Oo]ne|[Tt]he only)\s+(?:[a-z-]+\s+){0,2}?"
                           r"([a-z]+)\s+(?:with|of|for|from|on|about)\s+([^,.;:?!]{1,50}?)\s+"
                           r"(are|were)\b")
_PLURAL_QUANT = frozenset("""couple number lot lots few bunch variety range majority handful pair
set series total host number plenty all both none most some kind kinds sort sorts type types""".split())
# a gerund subject: "Checking the last four digits are routine"
_GERUND_SUBJ = re.compile(r"(?:^|(?<=[.!?] ))([A-Z][a-z]+ing)\s+(?:the|your|a|an|this|that|these|those|"
                          r"my|our|their|its|his|her|all|each)\s+([^,.;:?!]{1,40}?)\s+(are|were)\s+"
                          r"(?!\w+ing\b)")
_NOT_GERUND = frozenset("""Nothing Something Everything Anything During According Morning Evening
Bring Thing Things King Spring String Ring Wedding Building Meeting Booking Setting Billing
Pricing Shipping Funding Housing Parking Training Listing Clothing Ceiling Rating Heading
Including Regarding Concerning Considering Following Excluding""".split())
_AGREE_FIX = {"are": "is", "were": "was", "have": "has"}
# a pronoun head with a partitive: "one of the charges were", "each of the forms have"
_PARTITIVE = re.compile(r"\b(?:[Oo]ne|[Ee]ach|[Nn]either|[Ee]very one)\s+of\s+([^,.;:?!]{1,40}?)\s+"
                        r"(are|were|have)\b")


# "You return is confirmed.", "You plan review is scheduled": a sentence opening "You", one or
# two plain words and a singular verb is a possessive that lost its "r" (no subject "you" takes
# "is"); "What you need is" does not open a sentence
_NOT_NOUN = frozenset("it that this there he she they we what which who one all both each "
                      "said say know knew think thought mean meant see saw heard told asked".split())
_YOU_NOUN = re.compile(r"(?:^|(?<=[.!?]\s))(You) ([a-z]+(?: [a-z]+)?) (is|was|has|isn't|wasn't|hasn't)\b")


def grammar_issues(text: str, *, continuation: bool = False) -> list[tuple[int, int, str, str]]:
    """(start, end, replacement, rule) for casing and agreement errors in ``text``."""
    found: list[tuple[int, int, str, str]] = []
    starts = [0] if not continuation else []
    starts += [mm.end() for mm in re.finditer(r"[.!?][\"')\]]?\s+", text)
               if not _ABBREV.search(text[: mm.start() + 1])]
    for s in starts:
        mm = re.match(r"[\"'(]?([a-z])", text[s:])
        if mm is None:
            continue
        i = s + mm.start(1)
        word = re.match(r"[\w'-]+", text[i:]).group(0)
        if any(c.isupper() for c in word[1:]) or re.match(r"[a-z]\.[a-z]\.", text[i:]):
            continue                                  # iPhone, e.g. a.m.
        found.append((i, i + 1, text[i].upper(), "sentence starts with a lower-case letter"))
    for mm in _LOWER_NAME.finditer(text):
        if mm.start() == 0 and continuation:
            continue
        found.append((mm.start(), mm.start() + 1, mm.group(0)[0].upper(),
                      f"the day or month {mm.group(0)!r} in lower case"))
    for mm in _LOWER_I.finditer(text):
        found.append((mm.start(), mm.end(), "I", "the pronoun 'I' in lower case"))
    for mm in _I_VERB_S.finditer(text):       # any other "I <verb>s": "I wants", "I calls"
        verb = mm.group(2)
        if verb.lower() in _NOT_VERB_S or verb in _THIRD:
            continue
        base = verb[:-3] + "y" if verb.endswith("ies") else verb[:-2] \
            if re.search(r"(?:sh|ch|x|z|ss|o)es$", verb) else verb[:-1]
        found.append((mm.start(2), mm.end(2), base, f"'I {verb}': the verb does not agree"))
    for mm in _I_AGREE.finditer(text):
        verb = mm.group(2)
        base = _BASE.get(verb, verb[:-1] if not verb.endswith("ies") else verb[:-3] + "y")
        found.append((mm.start(2), mm.end(2), base, f"'I {verb}': the verb does not agree"))
    for mm in _PLURAL_SUBJ.finditer(text):
        fix = {"has": "have", "is": "are", "was": "were", "doesn't": "don't"}[mm.group(2).lower()]
        found.append((mm.start(2), mm.end(2), fix, f"'{mm.group(1)} {mm.group(2)}': the verb "
                      "does not agree"))
    for mm in _INVERTED_PLURAL.finditer(text):
        verb = mm.group(1)
        fix = {"is": "are", "was": "were", "does": "do"}[verb.lower()]
        fix = fix.capitalize() if verb[0].isupper() else fix
        found.append((mm.start(1), mm.end(1), fix, f"'{verb} {mm.group(2)}': the verb does not agree"))
    for mm in _SING_HEAD_PP.finditer(text):
        head, between = mm.group(1), mm.group(2)
        if head in _PLURAL_QUANT or (head.endswith("s") and not head.endswith("ss")) \
                or re.search(r"\b(?:you|we|they|I|that|which|who|and|or)\b", between):
            continue
        found.append((mm.start(3), mm.end(3), _AGREE_FIX[mm.group(3)], f"'a {head} ... "
                      f"{mm.group(3)}': the verb does not agree with its singular subject"))
    for mm in _PARTITIVE.finditer(text):
        if re.search(r"\b(?:you|we|they|I|that|which|who|and|or)\b", mm.group(1)):
            continue
        found.append((mm.start(2), mm.end(2), _AGREE_FIX[mm.group(2)], f"'{mm.group(0).split()[0]} "
                      f"of ... {mm.group(2)}': the verb agrees with the singular head"))
    for mm in _GERUND_SUBJ.finditer(text):
        if mm.group(1) in _NOT_GERUND or re.search(r"\b(?:you|we|they|I|that|which|who|and|or)\b",
                                                   mm.group(2)):
            continue
        found.append((mm.start(3), mm.end(3), _AGREE_FIX[mm.group(3)], f"'{mm.group(1)} ... "
                      f"{mm.group(3)}': a gerund subject takes a singular verb"))
    for mm in _YOU_NOUN.finditer(text):        # "You return is confirmed": "Your"
        if set(mm.group(2).split()) & _NOT_NOUN:
            continue                              # "You said it was", "You know that is"
        found.append((mm.start(1), mm.end(1), "Your", f"'You {mm.group(2)} {mm.group(3)}': "
                      "'Your' before a noun"))
    for mm in _A_AN.finditer(text):
        if mm.group(1) == "A" and re.search(r"(?:^|\s)[A-Z]\s+$", text[:mm.start()]):
            continue                                  # spelled letters: "M A and is"
        if not _A_OK.match(mm.group(2)):
            found.append((mm.start(1), mm.end(1), mm.group(1) + "n",
                          f"'a {mm.group(2)}': 'an' before a vowel sound"))
    for mm in _AN_A.finditer(text):
        if not _AN_OK.match(mm.group(2)):
            found.append((mm.start(1), mm.end(1), mm.group(1)[0],
                          f"'an {mm.group(2)}': 'a' before a consonant sound"))
    for mm in _DOUBLE.finditer(text):
        if mm.group(1) == "A" and mm.group(0).split()[-1] == "A":
            continue                    # spelled letters: "D Y A A F A" (the repair made it DYAFA)
        found.append((mm.start(), mm.end(), mm.group(1), f"doubled word {mm.group(1)!r}"))
    return sorted(found)


@check("grammar_casing")
def grammar_casing(conv: Conversation) -> list[Verdict]:
    """Sentences start with a capital, 'I' is upper case, subject and verb agree, a/an fit,
    no doubled words. Each is repaired by a minimal replace of the offending span."""
    out = []
    msgs = conv.messages
    for pos, m in enumerate(msgs):
        # an assistant turn right after a backchannel continues the cut sentence mid-way
        prev_cut = pos >= 2 and msgs[pos - 2].interruption is not None \
            and msgs[pos - 2].interruption.type == "filler"
        cut = len(m.heard_text) if m.interruption is not None else None
        # a backchannel is conventionally written in lower case ("mm-hm")
        cont = (m.role == "assistant" and prev_cut) or is_backchannel(m.text)
        for s, e, new, rule in reversed(grammar_issues(m.text, continuation=cont)):
            if cut is not None and s < cut < e:
                out.append(_verdict("grammar_casing", m.index, rule, fixable=False,
                                    evidence=f"{m.text[max(0, s - 30):e + 30]!r}"))
                continue
            out.append(_verdict("grammar_casing", m.index, rule,
                                evidence=f"{m.text[max(0, s - 30):e + 30]!r}",
                                edit=replace_edit(m, s, e, new)))
    return out


# ---- attribution_grounded -------------------------------------------------------------------
_ATTR = re.compile(r"(?<!\bif )(?<!\bunless )\b(?:as )?you(?:'ve| have)? (?:said|mentioned|told (?:me|us)|described|"
                   r"believe|noted|indicated|explained|reported)\b(?: that)?[,:]?\s*", re.I)


@check("attribution_grounded")
def attribution_grounded(conv: Conversation) -> list[Verdict]:
    """"You said ...", "you mentioned ...": the assistant attributes to the caller only what
    the caller said in an earlier message."""
    out = []
    for m in conv.messages:
        if m.role != "assistant":
            continue
        spoken = m.spoken_text
        for mm in _ATTR.finditer(spoken):
            tail = re.split(r"[.?!;]", spoken[mm.end():], maxsplit=1)[0]
            tail = re.split(r",\s+(?:so|and|but|which)\b", tail, maxsplit=1)[0]
            said = content_words(tail) - {"you", "your"}
            if not said:
                continue
            user_words = content_words(" ".join(e.text for e in conv.messages[: m.index]
                                                if e.role == "user"))
            missing = said - user_words
            if len(missing) * 3 <= len(said):
                continue
            s, e = next(((a, b) for a, b in sentences(m.text) if a <= mm.start() < b),
                        (mm.start(), mm.end() + len(tail)))
            issue = (f"attributes {tail.strip()!r} to the caller, who never said it "
                     f"(unsaid words {sorted(missing)[:6]})")
            multi = len(sentences(m.text)) > 1
            crosses = m.interruption is not None and s < len(m.heard_text or "") < e
            out.append(_verdict("attribution_grounded", m.index, issue,
                                evidence=m.text[s:e],
                                edit=delete_edit(m, s, e) if multi and not crosses else
                                rewrite_edit(m, f"remove the claim that the caller said "
                                                f"{tail.strip()!r}; they never did")))
    return out


# ---- hidden_fact_addressed ------------------------------------------------------------------
def _volunteered(conv: Conversation, u: Message) -> list[tuple[str, frozenset[str]]]:
    out = []
    said = content_words(u.text)
    for f in conv.scenario.intent.hidden_facts:
        w = content_words(f.value)
        if len(w) >= 2 and len(w & said) * 5 >= len(w) * 3:
            out.append((f.key, w))
    return out


_EVERYDAY = frozenset("part thing time way lot bit one day week today now".split())


@check("hidden_fact_addressed")
def hidden_fact_addressed(conv: Conversation) -> list[Verdict]:
    """When the caller volunteers one of their hidden facts, the next assistant turn takes it
    up (names something of it), rather than a generic "noted" or nothing. Only the first time
    the fact comes up: a caller saying again what was already said (and taken up) brings no
    news to take up."""
    out = []
    msgs = conv.messages
    for pos, u in enumerate(msgs):
        if u.role != "user" or pos + 1 >= len(msgs) or msgs[pos + 1].role != "assistant":
            continue
        nxt = msgs[pos + 1]
        before = content_words(msgs[pos - 1].spoken_text) if pos else frozenset()
        earlier = content_words(" ".join(m.spoken_text for m in msgs[:pos]))
        for key, w in _volunteered(conv, u):
            if len(w & earlier) * 5 >= len(w) * 3:
                continue         # said before: a repeat of a fact already on the table, not news
            used = (content_words(nxt.spoken_text) & w) - before
            # one number ("2025" of another date) or one everyday word ("the next part") in
            # common is no take-up: a word of the fact's own, or two in common, are
            if not any(not x.isdigit() and x not in _EVERYDAY for x in used) and len(used) < 2:
                out.append(_verdict(
                    "hidden_fact_addressed", nxt.index, f"the caller volunteered {key!r} in "
                    f"message {u.index} and this turn ignores it",
                    evidence=f"caller {u.text!r}; reply {nxt.spoken_text[:160]!r}",
                    edit=rewrite_edit(nxt, "take up what the caller just told you "
                                           f"({u.text!r}) in one short clause"), fixable=False))
    return out


# ---- user_states_system_value ---------------------------------------------------------------
_STATE = (r"(?:(?:my|the|our)\s+{label}\s+(?:is|was|should be|'s|it's|shows|said)\b|"
          r"\b(?:is|was)\s+(?:my|the|our)\s+{label}\b)")
_VALUEISH = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten)\b|"
                       r"(?<!^)(?<![.?!] )\b[A-Z][a-z]+")
PRICE_NOUNS = frozenset("""fee fees price prices cost costs charge charges premium premiums
deductible fare fares rate rates copay surcharge penalty""".split())
_CORRECTS = re.compile(r"\b(actually|not|wrong|correct|change|should be|instead|mistake|misspoke|"
                       r"something else)\b")


def held_keys(conv: Conversation) -> frozenset[str]:
    """Keys only the system holds: by the scenario (:func:`system_keys`), or in this conversation
    (the assistant stated the value first, in a turn that asked nothing, and never asked the
    caller for it)."""
    out = set(system_keys(conv.scenario))
    # a price the business sets (a consult fee, a deductible, a fare) is the system's whatever
    # the scenario says the caller provides, unless the assistant asked the caller for it
    for f in conv.scenario.kb.user_facts:
        words = label(f.key).lower().split()
        if words and words[-1] in PRICE_NOUNS and f.key not in PERSONAL_KEYS:
            forms = [v for v in (f.value, f.spoken) if v and len(v) >= 2]
            asked = any(m.role == "assistant" and s_.rstrip().endswith("?")
                        and label(f.key).lower() in s_.lower()
                        for m in conv.messages for s_ in (m.spoken_text[a:b]
                                                          for a, b in sentences(m.spoken_text)))
            money = any(re.search(r"[$\u20ac\u00a3]|\d|\b(?:dollars?|euros?|pounds?|cents?)\b", v)
                        for v in forms)              # a price is an amount, not a description
            if forms and money and not asked:
                out.add(f.key)
    # a planned correction does not make a value the caller's: a correction of a value the
    # records stated first (the carrier's last scan) is itself the defect
    user_side = set(conv.scenario.intent.provides)
    for f in conv.scenario.kb.user_facts:
        if f.key in user_side or f.key in PERSONAL_KEYS or f.kind in ("name", "email", "phone",
                                                                         "address"):
            continue
        forms = [v for v in (f.value, f.spoken) if v and len(v) > 3]
        lab = label(f.key).lower()
        first = _first_mention(conv, forms, lab)
        if first is not None and first[0] == "assistant" and not first[1].rstrip().endswith("?"):
            out.add(f.key)
    return frozenset(out)


def _first_mention(conv: Conversation, forms: list[str], lab: str) -> tuple[str, str] | None:
    """(role, sentence) of the first sentence that says one of ``forms``; None when the caller
    was asked for it (a question naming ``lab``) before or when nobody says it."""
    for m in conv.messages:
        if m.role == "assistant" and m.heard_text is not None and lab in m.heard_text.lower() and any(
                m.text[a:b].rstrip().endswith("?") and lab in m.text[a:b].lower()
                for a, b in sentences(m.text)):
            return None         # asked for, though the caller cut in before the question mark
        for a, b in sentences(m.spoken_text):
            sent = m.spoken_text[a:b]
            if m.role == "assistant" and sent.rstrip().endswith("?") and lab in sent.lower():
                return None
            if any(v in sent for v in forms):
                return m.role, sent
    return None


@check("user_states_system_value")
def user_states_system_value(conv: Conversation) -> list[Verdict]:
    """The caller states or corrects a value only the system holds (a carrier's last scan, a
    balance on the books): values the assistant reads from its records."""
    out = []
    keys = held_keys(conv)
    scenario_held = system_keys(conv.scenario)
    for m in conv.messages:
        if m.role != "user" or not keys:
            continue
        low = m.text.lower()
        for k in sorted(keys):
            lab = label(k).lower()
            f = conv.scenario.kb.fact(k)
            forms = [v for v in (f.value, f.spoken) if v] if f else []
            st = re.search(_STATE.format(label=re.escape(lab)), low)
            if st and low[st.start():].startswith(("is ", "was ")):   # "<value> is the plan"
                head = m.text[:st.start()]
                head = head[max(head.rfind(". "), head.rfind("? "), head.rfind("! ")) + 1:]
                stated = _VALUEISH.search(head)
            else:
                stated = st and _VALUEISH.search(m.text[st.end():])
            new_value = k in scenario_held and any(
                normalise(v) and f" {normalise(v)} " in f" {normalise(m.text)} "
                and (len(v.split()) > 1 or v in m.text)      # "Team" the plan, not "our team"
                and not (len(v.split()) == 1 and _in_spelled_run(m.text, v))
                and not said_before(conv, m.index, v, role="assistant") for v in forms)
            told = [v for v in forms + [c.corrected_value for c in conv.scenario.intent.corrections
                                        if c.key == k] if v and len(normalise(v)) >= 3]
            stated = stated or (st and any(f" {normalise(v)} " in f" {normalise(m.text)} "
                                           for v in told))
            # the label's own words ("change reason") are no correction
            # the label as a word ("damage" is not in "another damaged order")
            corrects = re.search(rf"\b{re.escape(lab)}\b", low) and _CORRECTS.search(low.replace(lab, " ")) and (
                _VALUEISH.search(m.text) or re.search(r"should be|not what you have|wrong", low))
            if stated or new_value or corrects:
                why = ("states the value before the system gave it" if new_value else
                       "corrects it" if corrects else "states it")
                out.append(_verdict(
                    "user_states_system_value", m.index, f"the caller {why}: {lab!r} is a value "
                    "only the system holds", evidence=m.text, fixable=False))
                break
    flagged = {v.message_index for v in out}
    return out + [v for v in _told_back(conv) if v.message_index not in flagged]


_DIGIT_WORDS = frozenset("zero oh one two three four five six seven eight nine".split())


def _in_spelled_run(text: str, value: str) -> bool:
    """Whether a one-word value ("six") occurs only inside a spelled code ("R F, eight five nine
    nine one six"): next to a digit word or a single letter."""
    toks = tokens(text)
    v = value.lower()
    hits = [i for i, t in enumerate(toks) if t == v]
    def spelled(t: str) -> bool:
        return t in _DIGIT_WORDS or len(t) == 1 or t.isdigit()
    return bool(hits) and all(any(0 <= j < len(toks) and spelled(toks[j]) for j in (i - 1, i + 1))
                              for i in hits)


def _told_back(conv: Conversation) -> list[Verdict]:
    """"And the provider is Steven Morse": the caller tells, as news, a value the assistant
    stated in an earlier turn and the caller never said (no correction, no confirmation asked).
    The minimal repair deletes that sentence when the message says something else too."""
    out = []
    # a value specific enough to be the same value: two words or more, or three digits ("four"
    # alone is also in "the last four digits")
    facts = [(f.key, [v for v in (f.value, f.spoken) if v and (len(normalise(v).split()) >= 2
                                                             or len(re.sub(r"\D", "", v)) >= 3)])
             for f in conv.scenario.kb.user_facts      # a caller may always say their own name
             if f.key not in PERSONAL_KEYS and f.kind not in ("name", "email", "phone", "address")]
    for m in conv.messages:
        if m.role != "user":
            continue
        sents = sentences(m.text)
        for a, b in sents:
            sent = m.text[a:b]
            low = sent.lower()
            if _CORRECTS.search(low) or "?" in sent:
                continue
            hit = next((k for k, forms in facts if forms and re.search(
                rf"\b(?:the|my|our)\s+{re.escape(label(k).lower())}\s+(?:is|was|'s)\b", low)
                and any(f" {normalise(v)} " in f" {normalise(sent)} " for v in forms)
                and any(said_before(conv, m.index, v, role="assistant") for v in forms)
                and not any(said_before(conv, m.index, v, role="user") for v in forms)), None)
            if hit is None:
                continue
            edit = delete_edit(m, a, b) if len(sents) > 1 else None
            out.append(_verdict("user_states_system_value", m.index, f"the caller tells back the "
                                f"{label(hit).lower()} the assistant stated earlier, as if it were "
                                "news", evidence=sent, edit=edit))
            break
    return out


# ---- resolved_goal_reached ------------------------------------------------------------------
def final_stages(conv: Conversation) -> set[str]:
    wf = conv.scenario.kb.workflow
    done = {"resolved"} & set(wf.terminals) or set(wf.terminals[:1])
    last = {t.source for t in wf.transitions if t.kind == "next" and t.target in done}
    return last or {wf.stages[-1].name}


@check("resolved_goal_reached")
def resolved_goal_reached(conv: Conversation) -> list[Verdict]:
    """An outcome of ``resolved`` needs the goal's final stage done: an assistant turn of that
    stage, delivered in full or answered, before the goodbye."""
    if conv.outcome != "resolved":
        return []
    finals = final_stages(conv)
    reached = [m for m in conv.messages if m.role == "assistant" and m.stage in finals]
    if reached:
        return []
    seen = list(dict.fromkeys(m.stage for m in conv.messages if m.stage))
    return [_verdict("resolved_goal_reached", None, f"outcome 'resolved' but the final stage "
                     f"{sorted(finals)} never happens", evidence=f"stages reached: {seen}",
                     fixable=False)]


# ---- tf_not_given ---------------------------------------------------------------------------
_REQUEST = re.compile(r"\b(?:asks?|asking|requests?|requesting|collects?|collecting|obtains?)\s+"
                      r"(?:the caller\s+|them\s+)?(?:for\s+|to\s+\w+\s+)?(?:their|the|your|a|an|"
                      r"caller's)\b|\bto (?:provide|give|confirm|share|tell|state)\b", re.I)


_ADDRESS = re.compile(r"\S+@\S+|\b(?:https?://|www\.)\S+", re.I)


def _said_as_itself(conv: Conversation, upto: int, value: str) -> bool:
    """Whether ``value`` was said before message ``upto`` as itself, not only inside an email
    or web address ("shawn_murphy@fastmail.com" does not give the full name "Shawn Murphy")."""
    p = normalise(value)
    if not p:
        return False
    return any(f" {p} " in f" {normalise(_ADDRESS.sub(' ', m.spoken_text))} "
               for m in conv.messages[:upto]) or (
        bool(_ADDRESS.fullmatch(value.strip())) and said_before(conv, upto, value))


@check("tf_not_given")
def tf_not_given(conv: Conversation) -> list[Verdict]:
    """A task-fulfilment criterion does not ask for information already given (by the caller,
    or by the assistant from its records) before the interjection."""
    out = []
    facts = list(conv.scenario.kb.user_facts)
    for r in conv.rubrics:
        tf = re.sub(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d", " ", r.tf_criterion)   # quotes aside
        if not _REQUEST.search(tf):
            continue
        wl = normalise(tf)
        named = {}
        for f in facts:
            labs = {normalise(label(f.key)), normalise(f.key.replace("_", " "))} - {""}
            hit = [lab for lab in labs if f" {lab} " in f" {wl} "]      # "card last4" too
            if hit:
                named[f.key] = (f, max(hit, key=len))
        for key, (f, lab) in named.items():
            # "old carrier account" names the account, not the old carrier: a longer label
            # of another fact that contains this one is what the criterion asks for
            if any(o != key and len(ol) > len(lab) and f" {lab} " in f" {ol} "
                   for o, (_, ol) in named.items()):
                continue
            forms = [v for v in (f.value, f.spoken) if v]
            if any(_said_as_itself(conv, r.message_index + 1, v) for v in forms):
                out.append(_verdict(
                    "tf_not_given", r.message_index, f"the TF criterion asks for the "
                    f"{label(f.key)}, given before the interjection", fixable=False,
                    evidence=r.tf_criterion))
                break
    return out


# ---- rq_whole_phrase ------------------------------------------------------------------------
_QUOTE = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|\(([^()\"]+)\)")
_POSITIONAL = re.compile(r"(?:after|starting with|with the words|ending with|no)\s*[(\"\u201c]?$",
                         re.I)
_FUNCTION = frozenset("""a an the to of and or but with for from by at in on into as is are was
were be been it its that this these those which who than then so if my your our their his her
me you we they i not can will would could should has have had do does did""".split())
_DEMONSTRATIVE = frozenset({"that", "this"})
_SUBJECT = frozenset("i i'm i've i'd we we're my you you're it's there's".split())
_DET = frozenset("a an the my your our their his her this these those some any each every one two "
                 "three four five six seven eight nine ten eleven twelve fifteen twenty thirty "
                 "forty sixty ninety".split())


def whole_phrase(span: str, conv: Conversation) -> bool:
    """Whether a quoted span is a whole phrase: a whole message, sentence or clause of the
    conversation, a fact value or label, or a noun phrase said there (a determiner or number,
    then words, ending on a content word)."""
    toks = tokens(span)
    if not toks:
        return True
    p = " ".join(toks)
    texts = [m.spoken_text for m in conv.messages]
    for t in texts:
        titled = re.sub(r"\b(Dr|Mr|Mrs|Ms|St)\. ", r"\1 ", t)     # "Dr. Morse" is one clause
        pieces = [t] + [t[a:b] for a, b in sentences(t)] + re.split(r"[.,;:!?\u2014]+(?!\d)", titled)
        for clause in pieces:
            if " ".join(tokens(clause)) == p:
                return True
    for f in (*conv.scenario.kb.user_facts, *conv.scenario.intent.hidden_facts):
        if p in {" ".join(tokens(v)) for v in (f.value, f.spoken, label(f.key)) if v}:
            return True
    for c in conv.scenario.intent.corrections:
        if p in {" ".join(tokens(v)) for v in (c.first_value, c.corrected_value, label(c.key))}:
            return True
    if not any(f" {p} " in f" {normalise(t)} " for t in texts):
        return True                       # an example wording, not a quote of the conversation
    if toks[0] in _SUBJECT and len(toks) >= 3:     # a whole clause said inside a longer one
        for t in texts:
            for clause in re.split(r"[.;:!?\u2014]+(?!\d)", t):
                if f" {' '.join(tokens(clause))}".endswith(" " + p):
                    return True
    first, last = toks[0], toks[-1]
    if last in _FUNCTION or last in STOPWORDS or last.endswith("ly"):
        return False
    head_ok = first in _DET or first in _DEMONSTRATIVE and len(toks) == 2 or first[0].isdigit() or span.lstrip().startswith(("$", "€", "£"))
    if not head_ok and (first in _FUNCTION or first in STOPWORDS):
        return False
    if len(toks) >= 2 and (first in _DET or first in _DEMONSTRATIVE) and (
            last.endswith("ed") or toks[1] in _FUNCTION):
        return False
    if not head_ok:   # a bare word run: only a single noun-like word, or object words
        nouns = FEE_NOUNS | REQUIREMENT_NOUNS | POLICY_NOUNS
        return len(toks) == 1 or last in nouns
    return True


@check("rq_whole_phrase")
def rq_whole_phrase(conv: Conversation) -> list[Verdict]:
    """A recovery-quality criterion that quotes the conversation quotes a whole phrase, not a
    truncated fragment ("Engages with the caller's concern (that noted)")."""
    out = []
    for r in conv.rubrics:
        for c in r.rq_criteria:
            for mm in _QUOTE.finditer(c):
                span = next(g for g in mm.groups() if g is not None)
                if _POSITIONAL.search(c[: mm.start()]) and mm.group(3) is None:
                    continue                 # "after '...'" marks the cut position on purpose
                if not whole_phrase(span, conv):
                    out.append(_verdict("rq_whole_phrase", r.message_index,
                                        f"the RQ criterion quotes {span!r}, which is not a "
                                        "whole phrase of the conversation", evidence=c,
                                        fixable=False))
    return out
