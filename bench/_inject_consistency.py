"""Seeded defects of the lead's reading at seed 311 (and clean look-alikes) for the verifier-recall
bench: a pushback on the disputed purchase or on a question's subject, an impatient cut in a
read-back, a singular subject with a plural verb, a value asked again after the caller gave it, an
identity detail asked after the caller was verified, the caller quoting a business's price.

Each injector returns ``(conversation, index)`` or ``None`` when the conversation has no site. The
wording lists are written as the error appears in conversation (several on purpose outside the
checks' word lists); the sites are chosen from the conversation, not from the checks.
"""

from __future__ import annotations

import random
import re

from bargein.records import Conversation
from bargein.records.scenario import UserFact

WORD = re.compile(r"\S+")

AMOUNTS = ["$498.77", "$23.10", "$1,204.00", "$59.99", "$312.45", "$8.50"]
MERCHANTS = ["Skyline Electronics", "Harbor Grill", "QuickMart Online", "Nova Streaming",
             "Peak Outdoor Supply", "Lumen Books"]
DAYS = ["June 14", "last Tuesday", "March 3", "the 21st", "yesterday"]
RECORDS = ["I'm looking at the card now. I can see a {noun} of {amt} from {merchant} on {day}.",
           "There's a {noun} for {amt} to {merchant}, dated {day}.",
           "The account shows a {noun} of {amt} at {merchant} on {day}.",
           "On {day} there's a {amt} {noun} by {merchant}.",
           "I've found it: a {noun} of {amt} from {merchant} on {day}."]
ASKED = ["Have you spotted any other {noun} on the card this month that you don't know?",
         "Did you notice any other {noun} you weren't expecting?",
         "Are there any other {noun} on the statement you don't recognise?",
         "Have you seen any unusual {noun} since {day}?"]
COSTS = ["There's a {amt} replacement {noun} for the new card, added to your next statement.",
         "We add a {amt} late {noun} once the due date has passed.",
         "Sending it overnight carries a {amt} {noun} on top of the order.",
         "The early cancellation {noun} on your plan comes to {amt}."]
PUSHBACK = ["Hang on, why is there a {noun}? I never agreed to that.",
            "Wait, what {noun}? Nobody told me about any {noun}.",
            "A {noun}? I'm not paying for that.",
            "Sorry, where does this {noun} come from? That's not fair.",
            "Hold on, a {noun}? That's news to me and I don't like it."]
PUSHBACK_PL = ["Hang on, what {noun}? I never agreed to any {noun}.",
               "Wait, other {noun}? Where do they come from? That's not on.",
               "Why would there be {noun}? I didn't sign up for that."]


def _cut_text(m, text: str, k: int, itype: str, said: str):
    spans = [x.span() for x in WORD.finditer(text)]
    heard = text[: spans[k - 1][1]]
    itr = m.interruption.with_(cut_word_index=k, cut_char_offset=len(heard), heard_text=heard,
                               type=itype, interjection=said)
    return m.with_(text=text, heard_text=heard, interruption=itr)


def _word_index_after(text: str, word: str) -> int | None:
    for k, x in enumerate(WORD.finditer(text), 1):
        if re.sub(r"\W", "", x.group(0).lower()) == word:
            return k
    return None


def _pushback_site(conv: Conversation, rng: random.Random):
    sites = [(m, u) for m, u in conv.interruptions if u.role == "user"]
    return rng.choice(sites) if sites else None


def _with_pushback(conv, rng, sent: str, noun: str, plural: bool):
    site = _pushback_site(conv, rng)
    if site is None:
        return None
    m, u = site
    text = f"{sent} {m.text}"
    k = _word_index_after(text, noun)
    if k is None:
        return None
    said = rng.choice(PUSHBACK_PL if plural else PUSHBACK).format(noun=noun)
    msgs = list(conv.messages)
    msgs[m.index] = _cut_text(m, text, k, "pushback", said)
    msgs[u.index] = u.with_(text=said)
    rs = tuple(r.with_(type="pushback") if r.message_index == u.index else r for r in conv.rubrics)
    return conv.with_(messages=tuple(msgs), rubrics=rs), u.index


def pushback_not_cost(conv: Conversation, rng: random.Random):
    """A pushback on the disputed purchase record, or on the subject of a question."""
    amt, merchant, day = rng.choice(AMOUNTS), rng.choice(MERCHANTS), rng.choice(DAYS)
    if rng.random() < 0.5:
        noun = rng.choice(["charge", "payment", "transaction", "purchase"])
        sent = rng.choice(RECORDS).format(noun=noun, amt=amt, merchant=merchant, day=day)
        return _with_pushback(conv, rng, sent, noun, False)
    noun = rng.choice(["charges", "payments", "transactions", "fees"])
    sent = rng.choice(ASKED).format(noun=noun, day=day)
    return _with_pushback(conv, rng, sent, noun, True)


def clean_pushback_cost(conv: Conversation, rng: random.Random):
    """The same objections, to a fee the business charges the caller."""
    noun = rng.choice(["fee", "charge"])
    sent = rng.choice(COSTS).format(noun=noun, amt=rng.choice(AMOUNTS))
    return _with_pushback(conv, rng, sent, noun, False)


# ---- an impatient cut in a read-back ----------------------------------------------------------
FRAMES = ["Let me just read that back to you: {v}.", "So I have it written down as {v}.",
          "Just to be sure I heard you, that's {v}.", "I've put that down as {v}.",
          "Okay, reading it back, {v}."]
CONFIRM = ["Is that right?", "Have I got that correct?", "Does that match what you have?",
           "Is that all correct?", "Did I get that right?"]
IMPATIENT = ["Yeah yeah, skip it.", "Okay I know, just move on please.", "Can you hurry up a bit?",
             "Alright, alright, get to the point.", "I don't need all this, next.",
             "Please, faster, I'm in the car."]
EXPLAIN = ["The technician calls half an hour before arriving, and the visit normally takes about "
           "an hour including a full line test and a speed check.",
           "Processing usually takes three business days, after which a confirmation letter "
           "arrives by post with the reference and the next steps listed.",
           "Our team reviews every request by hand, checks the paperwork against the records, and "
           "emails a summary of the decision within a week."]


def _user_value(conv: Conversation, upto: int) -> str | None:
    said = " ".join(m.text.lower() for m in conv.messages[:upto] if m.role == "user")
    vals = [v for f in conv.scenario.kb.user_facts for v in (f.spoken, f.value)
            if v and len(v) >= 5 and v.lower() in said]
    return vals[0] if vals else None


def _readback(conv: Conversation, rng: random.Random, explain: bool):
    sites = [(m, u) for m, u in conv.interruptions if u.role == "user"]
    rng.shuffle(sites)
    for m, u in sites:
        v = _user_value(conv, m.index)
        if v is None:
            continue
        tmpl = rng.choice(FRAMES)
        frame = tmpl.format(v=v)
        text = f"Thanks. {frame} {rng.choice(EXPLAIN) + ' ' if explain else ''}{rng.choice(CONFIRM)}"
        before = len(WORD.findall("Thanks. " + tmpl.split("{v}")[0]))     # words before the value
        k = rng.randint(2, max(2, before))
        said = rng.choice(IMPATIENT)
        msgs = list(conv.messages)
        msgs[m.index] = _cut_text(m, text, k, "impatient", said)
        msgs[u.index] = u.with_(text=said)
        rs = tuple(r.with_(type="impatient") if r.message_index == u.index else r
                   for r in conv.rubrics)
        return conv.with_(messages=tuple(msgs), rubrics=rs), u.index
    return None


def impatient_readback(conv: Conversation, rng: random.Random):
    return _readback(conv, rng, False)


def clean_impatient_explain(conv: Conversation, rng: random.Random):
    """A read-back with an explanation after it: something to skip."""
    return _readback(conv, rng, True)


# ---- a singular subject with a plural verb ----------------------------------------------------
AGREE_BAD = ["Checking your details are standard on every call.",
             "Updating the address are quick on our side.",
             "A copy of the documents are on its way to you.",
             "A summary with all the next steps are in your email.",
             "Each of the forms were checked this morning.",
             "Confirming the last four digits are routine for us.",
             "One of the charges were reversed already.",
             "Reviewing the payments are part of the process."]
AGREE_OK = ["Checking your details is standard on every call.",
            "Updating the address is quick on our side.",
            "A copy of the documents is on its way to you.",
            "A summary with all the next steps is in your email.",
            "Both of the forms were checked this morning.",
            "The details of the plan are in your email.",
            "A couple of the charges were reversed already.",
            "Reviewing the payments is part of the process."]


def _plain(conv: Conversation) -> list[int]:
    ms = conv.messages
    return [i for i in range(2, len(ms)) if ms[i].role == "assistant" and ms[i].interruption is None
            and ms[i - 1].interruption is None and ms[i].text[:1].isupper()]


def _prepend(conv: Conversation, i: int, sent: str) -> Conversation:
    msgs = list(conv.messages)
    msgs[i] = msgs[i].with_(text=f"{sent} {msgs[i].text}")
    return conv.with_(messages=tuple(msgs))


def agreement(conv: Conversation, rng: random.Random):
    sites = _plain(conv)
    if not sites:
        return None
    i = rng.choice(sites)
    return _prepend(conv, i, rng.choice(AGREE_BAD)), i


def clean_agreement(conv: Conversation, rng: random.Random):
    sites = _plain(conv)
    if not sites:
        return None
    i = rng.choice(sites)
    return _prepend(conv, i, rng.choice(AGREE_OK)), i


# ---- a value asked again ----------------------------------------------------------------------
ASK = ["Before we go on, what's your {l}?", "Could I take your {l}, please?",
       "And your {l} is what, please?", "Can you tell me the {l}?",
       "I'll need your {l} to continue.", "Which {l} should I put down?"]
LABELS = {"ssn": "Social Security number", "dob": "date of birth", "last4": "last four digits",
          "id": "ID", "zip": "zip code", "pin": "PIN"}


def say_label(key: str) -> str:
    w = [LABELS.get(x, x) for x in key.split("_")]
    if w and w[-1] == "last four digits":
        return "last four digits of the " + " ".join(w[:-1]) if len(w) > 1 else w[-1]
    return " ".join(w)


def _given(conv: Conversation, f) -> int | None:
    """Index of the first message saying f's value, when it is the caller's."""
    for m in conv.messages:
        if any(v and len(v) >= 4 and v.lower() in m.text.lower() for v in (f.value, f.spoken)):
            return m.index if m.role == "user" else None
    return None


def _reask(conv: Conversation, rng: random.Random, after: bool):
    corrected = {c.key for c in conv.scenario.intent.corrections}
    cands = []
    for f in conv.scenario.kb.user_facts:
        j = _given(conv, f)
        if j is None or f.key in corrected:
            continue
        for i in _plain(conv):
            before_any = all(not (v and v.lower() in m.text.lower()) for m in conv.messages[:i + 1]
                             for v in (f.value, f.spoken))
            if (after and i > j + 1) or (not after and before_any):
                cands.append((f, i))
    if not cands:
        return None
    f, i = rng.choice(cands)
    return _prepend(conv, i, rng.choice(ASK).format(l=say_label(f.key))), i


def reask(conv: Conversation, rng: random.Random):
    return _reask(conv, rng, True)


def clean_first_ask(conv: Conversation, rng: random.Random):
    """The same request before anyone said the value."""
    return _reask(conv, rng, False)


# ---- an identity detail asked after verification ----------------------------------------------
VERIFIED = ["Great, that's you verified.", "Thank you, you're verified now.",
            "Perfect, you've been verified.", "Okay, your identity is confirmed.",
            "Thanks, I've verified you."]
NOT_YET = ["Once you're verified, I can make the change.",
           "Before you're verified I can't share details.",
           "After you're verified we'll look at the account."]
ID_FACTS = [("ssn_last4", "5521"), ("date_of_birth", "March 3, 1980"), ("security_pin", "4417")]


def _verified(conv: Conversation, rng: random.Random, bad: bool):
    key, val = rng.choice(ID_FACTS)
    if conv.scenario.kb.fact(key) is not None and _given(conv, conv.scenario.kb.fact(key)) is not None:
        return None
    sites = _plain(conv)
    if len(sites) < 2:
        return None
    if not bad:          # a look-alike: before any verification the conversation itself states
        said = [m.index for m in conv.messages if m.role == "assistant" and "verified" in m.text
                and not re.search(r"\b(?:once|before|after|to get)\b[^.]*verified", m.text)]
        sites = [i for i in sites if not said or i < said[0]]
        if len(sites) < 2:
            return None
    a, b = sorted(rng.sample(sites, 2))
    facts = tuple(f for f in conv.scenario.kb.user_facts if f.key != key)
    scn = conv.scenario.with_(kb=conv.scenario.kb.with_(
        user_facts=(*facts, UserFact(key=key, value=val, kind="code"))))
    c = conv.with_(scenario=scn)
    c = _prepend(c, a, rng.choice(VERIFIED if bad else NOT_YET))
    return _prepend(c, b, rng.choice(ASK).format(l=say_label(key))), b


def verified_reask(conv: Conversation, rng: random.Random):
    return _verified(conv, rng, True)


def clean_not_yet_verified(conv: Conversation, rng: random.Random):
    return _verified(conv, rng, False)


# ---- the caller quotes a business's price -----------------------------------------------------
PRICES = [("consult_fee", "175 dollars for 45 minutes"), ("change_fee", "$75"),
          ("monthly_price", "49 dollars a month"), ("visit_charge", "$120"),
          ("plan_cost", "30 dollars a month")]
QUOTES = ["If it helps, the {l} is {v}.", "Oh, and the {l} is {v}, by the way.",
          "Just so you know, the {l} is {v}.", "And the {l} should be {v}."]
OWN = [("budget", "500 dollars"), ("deposit_offer", "200 dollars"), ("income", "4,000 dollars a month")]


def _quote(conv: Conversation, rng: random.Random, price: bool):
    key, val = rng.choice(PRICES if price else OWN)
    users = [m.index for m in conv.messages if m.role == "user" and m.index >= 1
             and conv.messages[m.index - 1].interruption is None and len(m.text.split()) > 2]
    if not users:
        return None
    i = rng.choice(users)
    kb = conv.scenario.kb
    scn = conv.scenario.with_(
        kb=kb.with_(user_facts=(*kb.user_facts, UserFact(key=key, value=val, kind="choice"))),
        intent=conv.scenario.intent.with_(provides=(*conv.scenario.intent.provides, key)))
    msgs = list(conv.messages)
    msgs[i] = msgs[i].with_(text=f"{msgs[i].text} {rng.choice(QUOTES).format(l=say_label(key), v=val)}")
    return conv.with_(scenario=scn, messages=tuple(msgs)), i


def price_stated(conv: Conversation, rng: random.Random):
    return _quote(conv, rng, True)


def clean_own_amount(conv: Conversation, rng: random.Random):
    """The caller states an amount of their own (a budget, an income)."""
    return _quote(conv, rng, False)
