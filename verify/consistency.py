"""Checks that a turn fits what the conversation already holds (the lead's reading at seed 311):

- ``pushback_on_cost``: a pushback objects to a cost, requirement or condition the caller bears,
  not to the transaction the caller is disputing ("I see a charge of $498.77 from Skyline") nor
  to the subject of a question put to them ("have you noticed any other charges?").
- ``impatient_at_readback``: an impatient cut-in does not fall in a read-back: what was left of
  the turn is the caller's own value and a confirmation question — nothing to skip.
- ``reasks_given_value``: the assistant (or a gold) does not ask for a value the caller already
  gave in an earlier turn (a read-back that names the value, or an explicit "again", is fine).
- ``reasks_after_verified``: once the assistant has said the caller is verified, it does not ask
  for an identity detail the caller never gave (the one they declined).

Each judges the conversation as written, from rules over its text and the scenario's fact labels
(never the writer's plan); each verdict names the message, the span and the rule.
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check
from bargein.verify.objects import FEE_NOUNS, label, said_before
from bargein.verify.text import content_words, normalise, sentences, tokens


def _sentence_at(text: str, pos: int) -> tuple[int, int]:
    for s, e in sentences(text):
        if s <= pos < max(e, s + 1):
            return s, e
    return 0, len(text)


# ---- pushback_on_cost -----------------------------------------------------------------------
# a charge that is a record of a purchase, not a cost the company sets: "a charge of $498.77 from
# Skyline Electronics", "the transaction at Bestmart", "a purchase on your card"
_THIRD_PARTY = re.compile(r"\b(?:from|at|by|to)\s+(?:[A-Z][\w&'.-]*)(?:\s+[A-Z][\w&'.-]*)*|"
                          r"\b(?:transaction|purchase|merchant|payee|retailer|vendor|store)s?\b")
# a question about what the caller saw or recognises, not one asking them to pay or give something
_ABOUT_QUESTION = re.compile(r"\b(?:have|did|do|are|is|were)\s+(?:you|there)\b[^?]*?"
                             r"\b(?:notic\w*|recogni[sz]\w*|see|seen|spot\w*|made|make|expect\w*|"
                             r"remember|any|other|else|unusual)\b", re.I)
_BURDEN = re.compile(r"\b(?:pay|paid|owe|cost\w*|charg(?:e|ed) you|bill(?:ed)? you|we charge|"
                     r"fee|there'?s a|will be|would be|comes to|applies|apply)\b|[$\u20ac\u00a3]\d",
                     re.I)


# the records of the caller's own spending: never a cost the business sets
RECORD_NOUNS = frozenset("transaction transactions purchase purchases debit debits withdrawal "
                         "withdrawals".split())


def _fee_words(text: str) -> set[str]:
    return {t for t in tokens(text) if t in FEE_NOUNS or t in RECORD_NOUNS}


@check("pushback_on_cost")
def pushback_on_cost(conv: Conversation) -> list[Verdict]:
    """A pushback on a charge or fee objects to a cost the caller bears. Not grounded: a charge
    the heard words give as a purchase record (from/at a merchant, a transaction) and a charge
    that is only the subject of a question asked of the caller ("any other charges?")."""
    out = []
    for m, u in conv.interruptions:
        if m.interruption.type != "pushback" or u.role != "user":
            continue
        heard = m.heard_text or ""
        named = _fee_words(u.text) & _fee_words(heard)
        if not named:
            continue
        # the planned sentence that holds the last fee noun the caller names
        pos = max(mm.start() for mm in re.finditer(r"[\w'-]+", heard)
                  if mm.group(0).lower() in named)
        s, e = _sentence_at(m.text, pos)
        sent = m.text[s:e]
        rule = None
        if sent.rstrip().endswith("?") and _ABOUT_QUESTION.search(sent) \
                and not re.search(r"[$\u20ac\u00a3]\d|\b(?:pay|owe)\b", sent, re.I):
            rule = "the charge is the subject of a question put to the caller, not a cost they bear"
        elif (tp := _THIRD_PARTY.search(sent[pos - s:])) and not re.search(
                r"\b(?:our|we|us)\b", sent, re.I):
            rule = (f"the charge is a purchase record ({tp.group(0).strip()!r}), the thing the "
                    "caller disputes, not a cost they bear")
        if rule:
            out.append(_verdict("pushback_on_cost", u.index, f"the pushback objects to "
                                f"{sorted(named)}: {rule}", fixable=False,
                                evidence=f"planned {sent.strip()!r}; interjection {u.text!r}"))
    return out


# ---- impatient_at_readback ------------------------------------------------------------------
_SKIP_MIN_WORDS = 4
_CONFIRM = re.compile(r"\b(?:right|correct|accurate|that's it|got that|heard that|have that|"
                      r"match|matches)\b", re.I)


@check("impatient_at_readback")
def impatient_at_readback(conv: Conversation) -> list[Verdict]:
    """An impatient cut-in skips an explanation. At a read-back there is none: the rest of the
    turn is the caller's own value and a question to confirm it."""
    out = []
    for m, u in conv.interruptions:
        if m.interruption.type != "impatient" or u.role != "user":
            continue
        cut = len(m.heard_text or "")
        rest = m.text[cut:]
        parts = [rest[a:b] for a, b in sentences(rest)]
        questions = [p for p in parts if p.rstrip().endswith("?")]
        if not questions or not any(_CONFIRM.search(q) for q in questions):
            continue
        told = " ".join(p for p in parts if not p.rstrip().endswith("?"))
        # the value being confirmed: what the caller said, or a value of the scenario's facts
        known = content_words(" ".join(x.text for x in conv.messages[: m.index] if x.role == "user")
                              + " " + " ".join(v for f in conv.scenario.kb.user_facts
                                               for v in (f.value, f.spoken) if v))
        value = content_words(told) & known
        new = content_words(told) - known
        if value and len(new) < _SKIP_MIN_WORDS:
            out.append(_verdict("impatient_at_readback", u.index, "an impatient cut-in inside a "
                                "read-back: what was left is the value being confirmed and a "
                                "confirmation question, nothing to skip", fixable=False,
                                evidence=f"unheard {rest.strip()!r}"))
    return out


# ---- reasks_given_value ---------------------------------------------------------------------
# a request for a value: a wh-question, "could you tell me", "may I have", "please", "I need";
# a yes/no question ("does that name ring a bell?") asks about a value, not for it
_REQUEST = re.compile(r"^\W*(?:[^,.?!]{0,40},\s+)?(?:(?:so|and|next|now|then|okay|also|great|lovely|"
                      r"perfect|thanks),?\s+)*(?:what|which|when|where|who|how)\b|\b(?:could|can|would|will) you (?:\w+ )?"
                      r"(?:tell|give|share|provide|read|let me know|spell|say)\b|\b(?:can|could|may) I "
                      r"(?:get|have|take|grab|ask for)\b|"
                      # "please" asks for something in a question or of "your ..." -- "Please use
                      # our portal, and never email it" asks for no email (a false re-ask found
                      # once unmade corrections left the intent)
                      r"\bplease\b(?=[^.!]*(?:\?|\byour\b))|\byour\b[^.!?]*\bplease\b|"
                      r"\bI(?:'ll| will)? need\b", re.I)
_REASK_OK = re.compile(r"\b(?:again|repeat|spell|confirm|double-check|still|correct|right|"
                       r"once more|instead|new|other|another|different)\b", re.I)
_LABEL_STOP = frozenset("of the a an your my for to in on".split())


def _stem(w: str) -> str:
    return w[:-1] if w.endswith("s") and len(w) > 3 else w


def asks_for(sent: str, key: str) -> bool:
    """Whether ``sent`` requests the fact ``key``: a request naming every word of its label (a
    participle of a long label, "created", may be said otherwise: "the year the account was
    opened")."""
    if not _REQUEST.search(sent):
        return False
    lab = {_stem(w) for w in tokens(label(key)) if w not in _LABEL_STOP}
    have = {_stem(w) for w in tokens(sent)}
    missing = lab - have
    named = bool(lab) and (not missing or (len(lab) >= 3 and len(missing) == 1
                                           and next(iter(missing)).endswith("ed")))
    if not named:
        return False
    # "your account number with them", "their account number": another party's value
    words = [w for w in tokens(label(key)) if w not in _LABEL_STOP]
    head, first = re.escape(words[-1]), re.escape(words[0])
    return not re.search(rf"\b{head}s?\s+(?:with|from|at)\s+(?:them|[A-Z])|\b(?:their|the other|"
                         rf"old|previous|former)\s+(?:\w+\s+)?{first}", sent, re.I)


def said_by_caller(conv: Conversation, upto: int, value: str) -> bool:
    """Whether the caller said ``value`` before message ``upto`` as itself (not inside an email
    or a web address: "alfred_cain@proton.me" does not give the name "Alfred Cain"), and before
    the assistant said it (a value the records gave is not the caller's)."""
    pat = re.compile(r"(?<![\w@._-])" + r"[\s_.-]+".join(map(re.escape, value.split()))
                     + r"(?![\w@_-]|\.\w)", re.I)
    for m in conv.messages[:upto]:
        if pat.search(m.text):
            return m.role == "user"
    return False


def _asking_texts(conv: Conversation) -> list[tuple[int, int, str, str]]:
    """(message index, position in the conversation, text, what) of assistant turns and golds."""
    out = [(m.index, m.index, m.text, "") for m in conv.messages if m.role == "assistant"]
    out += [(k, k + 1, g, "gold recovery: ") for k, g in sorted(conv.gold_recoveries.items())]
    return out


@check("reasks_given_value")
def reasks_given_value(conv: Conversation) -> list[Verdict]:
    """The assistant asks for a value the caller already gave in an earlier turn."""
    out = []
    corrected = {c.key for c in conv.scenario.intent.corrections}
    facts = [f for f in conv.scenario.kb.user_facts if f.key not in corrected]
    for idx, upto, text, what in _asking_texts(conv):
        for a, b in sentences(text):
            sent = text[a:b]
            if _REASK_OK.search(sent):
                continue
            for f in facts:
                forms = [v for v in (f.value, f.spoken) if v and len(normalise(v)) >= 3]
                if not forms or not asks_for(sent, f.key):
                    continue
                if any(normalise(v) in normalise(sent) for v in forms):
                    continue                     # a read-back names the value
                given = next((v for v in forms if said_by_caller(conv, upto, v)), None)
                if given:
                    out.append(_verdict("reasks_given_value", idx, f"{what}asks for the "
                                        f"{label(f.key)}, which the caller already gave "
                                        f"({given!r})", fixable=False, evidence=sent.strip()))
                    break
    return out


# ---- reasks_after_verified ------------------------------------------------------------------
_VERIFIED = re.compile(r"\b(?:you're|you are|you've been|you have been|you're now|that's you)\s+"
                       r"(?:now\s+|all\s+|fully\s+)?verified\b|\b(?:I've|I have)\s+verified you\b|"
                       r"\byour identity (?:is|has been) (?:confirmed|verified)\b", re.I)
_NOT_YET = re.compile(r"\b(?:once|when|after|before|if|until|to get|unless|not)\b[^.?!]*$", re.I)
_ID_KEY = re.compile(r"ssn|social|date_of_birth|dob|birth|pin\b|passcode|password|security|"
                     r"maiden|member_id|last4", re.I)


@check("reasks_after_verified")
def reasks_after_verified(conv: Conversation) -> list[Verdict]:
    """After the assistant told the caller they are verified, it asks for an identity detail
    (a Social Security number, a date of birth, a PIN) the caller never gave."""
    verified_at = None
    out = []
    for m in conv.messages:
        if m.role != "assistant":
            continue
        text = m.text                      # the planned turn: what the assistant set out to ask
        if verified_at is None:
            for mm in _VERIFIED.finditer(text):
                if not _NOT_YET.search(text[_sentence_at(text, mm.start())[0]:mm.start()]):
                    verified_at = m.index
                    break
            continue
        for a, b in sentences(text):
            sent = text[a:b]
            for f in conv.scenario.kb.user_facts:
                if not _ID_KEY.search(f.key) or not asks_for(sent, f.key):
                    continue
                forms = [v for v in (f.value, f.spoken) if v]
                if any(said_before(conv, m.index, v, role="user") for v in forms):
                    continue                     # given: reasks_given_value's business
                out.append(_verdict("reasks_after_verified", m.index, f"asks for the "
                                    f"{label(f.key)} after telling the caller they were verified "
                                    f"(message {verified_at})", fixable=False,
                                    evidence=sent.strip()))
                break                              # one verdict per sentence; every turn is read
    return out



# ---- slip_corrected -------------------------------------------------------------------------
@check("slip_corrected")
def slip_corrected(conv: Conversation) -> list[Verdict]:
    """A value the caller misstated is put right before the call ends. The scenario labels it: a
    planned correction whose corrected value is the one on record (the first value a slip, "2908"
    for a card ending 9208). When the caller says the slip and never the right value after it,
    the call goes on with a wrong value its own labels contradict (seen in an independent hand
    read of seed 5151: card digits and a patient ID accepted wrong, the correction never made).
    A change of mind (the first value the one on record) needs no correction to be true."""
    from bargein.generators.llm_values import said

    on_record = {f.key: f.value for f in (*conv.scenario.kb.user_facts,
                                          *conv.scenario.intent.hidden_facts)}
    out = []
    for c in conv.scenario.intent.corrections:
        if on_record.get(c.key) != c.corrected_value or said(c.first_value, c.corrected_value):
            continue
        first = next((m for m in conv.messages if m.role == "user" and said(m.text, c.first_value)
                      and not said(m.text, c.corrected_value)), None)
        if first is None:
            continue
        if any(m.role == "user" and said(m.text, c.corrected_value) for m in conv.messages[first.index + 1:]):
            continue
        out.append(_verdict("slip_corrected", first.index,
                            f"the caller gives the {label(c.key)} as {c.first_value!r}, a slip the "
                            f"scenario corrects to {c.corrected_value!r}, and never puts it right",
                            evidence=f"message {first.index}: {first.text[:160]!r}", fixable=False))
    return out
