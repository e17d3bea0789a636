"""The objects a conversation holds, that an interjection can be about.

An interjection is grounded when it refers to something the assistant really put on the table
in the heard words: a fee or amount, a requirement (a piece of information, a document, a
check), a policy (a deadline, a limit, a rule), a fact value of the scenario, or the question
just asked. A two-word window of the heard text ("that noted", "the memory") is not an object::

    "Changing the date costs a $75 change fee, and the new fare must be paid within 24 hours."
     fee      "a $75 change fee"           (money + fee noun)
     policy   "24 hours"                   (a duration: a deadline)

Objects are found with rules over the text and the scenario (labels of the required info, fact
values) — never from the generator's plan, so a conversation from any writer is judged alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bargein.lexicon import KEY_PHRASES
from bargein.records.conversation import Conversation
from bargein.records.scenario import Scenario
from bargein.verify.text import content_words, normalise, tokens

FEE_NOUNS = frozenset("""fee fees charge charges cost costs price prices deposit deposits penalty
penalties premium premiums interest rate rates balance refund refunds credit credits payment payments
copay copays surcharge surcharges fine fines fare fares bill amount amounts discount discounts
subscription instalment instalments installment installments tax taxes""".split())
REQUIREMENT_NOUNS = frozenset("""id identification document documents receipt receipts proof photo
photos signature form forms letter letters statement statements inspection verification code codes
password pin passport licence license certificate certificates number digits birth address email
details information consent authorisation authorization appointment referral record records
evidence copy copies report""".split())
POLICY_NOUNS = frozenset("""policy policies rule rules deadline deadlines limit limits minimum maximum
contract contracts terms term agreement notice period window requirement requirements condition
conditions eligibility cap cancellation renewal hold holds restriction restrictions""".split())
_DURATION = re.compile(r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen|"
                       r"fifteen|twenty|thirty|forty-five|sixty|ninety)[- ](?:business |working |"
                       r"calendar )?(?:minutes?|hours?|days?|weeks?|months?|years?)\b", re.I)
# an amount with its currency sign, or said in words as the talking points write it for speech
# ("a stop payment costs thirty dollars", "about 200 dollars more per semester")
AMOUNT_WORDS = ("ten|fifteen|twenty|twenty-five|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                "a hundred")       # a round amount as spoken ("thirty dollars", "costs forty")
_MONEY = re.compile(r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?|\b(?:\d[\d,]*(?:\.\d+)?|" + AMOUNT_WORDS + r")\s"
                    r"(?:dollars|euros|pounds)\b)"
                    r"(?:\s?(?:a|per|each)\s(?:month|year|week|day|seat|night|person|line|semester))?")
_MONTH = ("January|February|March|April|May|June|July|August|September|October|November|"
          "December")
_DATE = re.compile(r"\b(?:(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday),?\s+)?"
                   r"(?:%s)\s+\d{1,2}(?:st|nd|rd|th)?(?:,\s+\d{4})?" % _MONTH)
_DAY = re.compile(r"\b(?:(?:this|next|on)\s+)?(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|"
                  r"Sunday|tomorrow|tonight|next week|next month|end of the month)\b")
_NP_LEAD = {"a", "an", "the", "your", "my", "our", "this", "that", "any", "each", "every", "one",
            "two", "three", "four"}
_NUMBER_WORDS = frozenset("one two three four five six seven eight nine ten".split())
_PRONOUNS = frozenset("i me we us you he she they them it".split())
_ADJ_STOP = frozenset("""and or but to of in on at for with from by is are was were be been it this
that which who you your i we they can will would should could may might must have has had do
does did not no so if than then also just only please""".split())


@dataclass(frozen=True)
class Obj:
    """One object: its kind, its words as said, and the character span in the text."""

    kind: str           # fee | requirement | policy | value | fact | question
    phrase: str
    start: int
    end: int

    @property
    def words(self) -> frozenset[str]:
        return content_words(self.phrase)


def _np_around(text: str, start: int, end: int) -> tuple[int, int]:
    """Extend a head noun at ``[start, end)`` left over up to three modifiers and a determiner."""
    left = text[:start]
    toks = list(re.finditer(r"[\w$€£.,'-]+", left))
    s = start
    taken = 0
    for m in reversed(toks):
        w = m.group(0).lower().strip(".,")
        if w == "of" and taken == 0 and not m.group(0).endswith((",", ".")):
            s = m.start()               # "date of birth", "proof of address"
            continue
        if m.group(0).endswith((",", ".")) or w in _ADJ_STOP and w not in _NP_LEAD \
                or w in _PRONOUNS or ("'" in w and not w.endswith("'s")):
            break
        s = m.start()
        taken += 1
        if w in _NP_LEAD and not w in _NUMBER_WORDS or taken >= 4:
            break
    return s, end


def find_objects(text: str, scenario: Scenario | None = None) -> list[Obj]:
    """Every object said in ``text`` (sorted by position; overlapping kinds kept)."""
    out: list[Obj] = []
    for m in _MONEY.finditer(text):
        s, e = m.span()
        nxt = re.match(r"\s+([\w-]+)(?:\s+([\w-]+))?", text[e:])
        if nxt:
            for g in (2, 1):
                w = nxt.group(g)
                if w and (w.lower() in FEE_NOUNS):
                    e = e + nxt.end(g)
                    break
        out.append(Obj("fee", text[s:e], s, e))
    for m in _DURATION.finditer(text):
        out.append(Obj("policy", m.group(0), *m.span()))
    for m in _DAY.finditer(text):
        out.append(Obj("value", m.group(0), *m.span()))
    for m in _DATE.finditer(text):
        out.append(Obj("value", m.group(0).rstrip(", "), m.start(), m.start() + len(m.group(0).rstrip(", "))))
    for m in re.finditer(r"[A-Za-z][\w'-]*", text):
        w = m.group(0).lower()
        kind = ("fee" if w in FEE_NOUNS else "policy" if w in POLICY_NOUNS
                else "requirement" if w in REQUIREMENT_NOUNS else None)
        if kind is None:
            continue
        after = re.match(r"\s+([\w$€£]+)", text[m.end():])
        if w.endswith("s") and after and (after.group(1).lower() in _NP_LEAD
                                          or after.group(1)[0] in "$€£0123456789"):
            continue                    # "the date costs a $75 fee": a verb here
        s, e = _np_around(text, *m.span())
        out.append(Obj(kind, text[s:e], s, e))
    if scenario is not None:
        low = text.lower()
        for label, value_forms in _scenario_terms(scenario):
            for form in (label, *value_forms):
                if not form or len(form) < 3:
                    continue
                i = low.find(form.lower())
                if i >= 0 and _on_boundary(low, i, len(form)):
                    out.append(Obj("fact" if form != label else "requirement",
                                   text[i:i + len(form)], i, i + len(form)))
    for m in _QUESTION.finditer(text):
        q = m.group(0).strip()
        if len(q.split()) >= 3:
            s = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
            out.append(Obj("question", q, s, m.end()))
    return sorted(out, key=lambda o: (o.start, o.end))


# a question runs from the start or the last . ? ! to a '?': anchored there, each character is
# scanned once (an unanchored [^.?!]*\? rescans a long run from every start: quadratic)
_QUESTION = re.compile(r"(?:^|(?<=[.?!]))[^.?!]*\?")


def _on_boundary(low: str, i: int, n: int) -> bool:
    before = low[i - 1] if i > 0 else " "
    after = low[i + n: i + n + 2] if i + n < len(low) else " "
    plural = after[:1] == "s" and not after[1:2].isalnum()      # "insurers" names "insurer"
    return not before.isalnum() and (not after[:1].isalnum() or plural)


_TERMS: dict[str, tuple] = {}


def _scenario_terms(scenario: Scenario) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(label of a fact key, its value forms) for every fact of the scenario."""
    if scenario.id in _TERMS:
        return _TERMS[scenario.id]
    out = []
    for f in (*scenario.kb.user_facts, *scenario.intent.hidden_facts):
        out.append((label(f.key), tuple(v for v in (f.value, f.spoken) if v)))
    if len(_TERMS) > 512:
        _TERMS.clear()
    _TERMS[scenario.id] = tuple(out)
    return _TERMS[scenario.id]


_LABEL_WORDS = {"ssn": "Social Security number", "dob": "date of birth", "id": "ID", "url": "URL",
                "zip": "ZIP code", "pin": "PIN", "addon": "add-on"}


def label(key: str) -> str:
    """How people say a fact key (``card_last4`` -> ``last four digits of the card``)."""
    words = [w for w in key.split("_") if w]
    if words and words[-1] == "last4":
        rest = " ".join(_LABEL_WORDS.get(w, w) for w in words[:-1])
        return f"last four digits of the {rest}" if rest else "last four digits"
    return " ".join(_LABEL_WORDS.get(w, w) for w in words)


def object_words(objs: list[Obj], kinds: frozenset[str] | None = None) -> frozenset[str]:
    out: set[str] = set()
    for o in objs:
        if kinds is None or o.kind in kinds:
            out |= o.words
            out |= {t for t in tokens(o.phrase) if any(c.isdigit() for c in t)}
    return frozenset(out)


# ---- who holds a value ----------------------------------------------------------------------
_ATTRIBUTED = re.compile(r"\byou(?:'ve)? (?:said|mentioned|told|described|believe|noted|indicated)\b|"
                         # "So you'd like the records sent to ...": what the caller wants, theirs
                         r"(?:^|[,.]\s+)so,?\s+you(?:'d like| would like| want| need)\b|"
                         r"\byou're asking for\b|"
                         r"^so,?\s+that's\b", re.I)      # "So that's 2 copies by PDF." (a read-back)
PERSONAL_KEYS = frozenset("""full_name date_of_birth ssn_last4 home_address phone_number email
mailing_address work_email account_email""".split())


def system_keys(scenario: Scenario) -> frozenset[str]:
    """Fact keys whose value only the system holds: the assistant states them from its records
    (in a statement, not a question or a read-back of what the caller said), and no stage asks
    the caller for them. A caller cannot know, state or correct these."""
    facts = {f.key: f for f in scenario.kb.user_facts}
    stated: set[str] = set()
    asked: set[str] = set()
    for st in scenario.kb.workflow.stages:
        for tp in st.talking_points:
            for sent in re.split(r"(?<=[.?!])\s+", tp):
                for k, f in facts.items():
                    forms = [v for v in (f.value, f.spoken) if v]
                    if not any(v in sent for v in forms):
                        if "?" in sent and any(a in sent.lower() for a in (
                                label(k).lower(), *KEY_PHRASES.get(k, ()))):
                            asked.add(k)
                        continue
                    if "?" in sent or _ATTRIBUTED.search(sent):
                        asked.add(k)
                    else:
                        stated.add(k)
    provided = set(scenario.intent.provides) | {c.key for c in scenario.intent.corrections}
    out = frozenset(k for k in stated - asked - provided - PERSONAL_KEYS
                    if facts[k].kind not in ("name", "email", "phone", "address", "date_of_birth"))
    return out


def value_forms(conv: Conversation, key: str) -> tuple[str, ...]:
    f = conv.scenario.kb.fact(key)
    return tuple(v for v in ((f.value, f.spoken) if f else ()) if v)


def said_before(conv: Conversation, upto: int, phrase: str, role: str | None = None) -> bool:
    """Whether ``phrase`` occurs (token-folded) in a message before index ``upto``."""
    p = normalise(phrase)
    if not p:
        return False
    for m in conv.messages[:upto]:
        if role is None or m.role == role:
            if f" {p} " in f" {normalise(m.spoken_text)} ":
                return True
    return False
