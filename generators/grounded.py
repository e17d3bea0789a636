"""Interjections and recoveries about the objects a turn really holds (offline agents).

A pushback objects to a fee, a requirement or a policy the caller just heard; a clarification
asks about an amount, a duration or a date they may have misheard; the gold recovery answers
that object by its kind (a fee is explained or waived, a requirement justified or replaced, a
policy stated with what can be done) — never by echoing a window of the heard words::

    heard   "... rebooking carries a $75 change fee, and the new"
    user    "Hold on, a $75 change fee? Nobody told me about that when I booked."
    gold    "I understand, nobody likes a surprise charge. The $75 change fee comes with the fare
             rules of your ticket, but I can check whether you qualify for a waiver. ..."

Wording is composed from an opener, a core by object kind and an optional tail (banks in
``phrases_user.yaml`` / ``phrases_assistant.yaml``), so two pushbacks rarely read the same.
"""

from __future__ import annotations

import random
import re

from bargein.generators import phrases as P
from bargein.verify.objects import AMOUNT_WORDS, Obj, find_objects

PUSHBACK_KINDS = ("fee", "requirement", "policy")
CLARIFY_KINDS = ("fee", "policy", "value")
_SWAP = {"your": "my", "you": "me", "yours": "mine"}
_BACK = {"my": "your", "me": "you", "mine": "yours", "I": "you"}


def as_user(phrase: str) -> str:
    """How the caller says the assistant's phrase ("your date of birth" -> "my date of birth")."""
    phrase = re.sub(r"^(The|A|An|Your|This|That|Any)\b", lambda m: m.group(1).lower(), phrase)
    return re.sub(r"\b(your|you|yours)\b", lambda m: _SWAP[m.group(1).lower()], phrase)


def as_assistant(phrase: str) -> str:
    return re.sub(r"\b(my|me|mine)\b", lambda m: _BACK[m.group(1)], phrase)


def objects_in(content: str, kinds: tuple[str, ...]) -> list[Obj]:
    """The objects of ``kinds`` in the content, the longest phrase per head, in order."""
    found = [o for o in find_objects(content) if o.kind in kinds and _fits(o, content)
             and (2 <= len(o.phrase.split()) <= 7 or o.phrase[:1] in "$€£0123456789")]
    best: dict[int, Obj] = {}
    for o in found:                       # keep the widest phrase ending at each position
        if o.end not in best or len(o.phrase) > len(best[o.end].phrase):
            best[o.end] = o
    return sorted(best.values(), key=lambda o: o.start)


_REQUEST_CUE = re.compile(r"\?|\b(need|needs|required|require|must|bring|send|upload|provide|"
                          r"show|sign|submit|verify|confirm)\b", re.I)
_RULE_CUE = re.compile(r"\b(must|within|(?<!-)only|have to|has to|need to|deadline|no later|at least|up to|"
                       r"policy|required|can't|cannot|won't|before|after|expires?|limit|minimum|"
                       r"notice|by law|rules?)\b", re.I)
_BURDEN_CUE = re.compile(r"\b(must|(?<!-)only|have to|has to|need to|needs to|required|can't|cannot|won't|"
                         r"no later|deadline|at least|minimum|expires?|non-?refundable|not|no longer|"
                         r"takes?|wait|until|lose|forfeit|penalt\w*|fee|charge|notice)\b|n't\b", re.I)
_NUMBERS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve",
            "fourteen", "fifteen", "twenty", "thirty", "forty-five", "sixty", "ninety"}
_LEADS = {"a", "an", "the", "your", "my", "any", "some", "this", "two", "three", "four"}
_IDENTITY = re.compile(r"\b(birth|digits|social|security|account|card|pin|password|passport|licen[cs]e|"
                       r"client|loyalty|student|case|confirmation code|"
                       r"member|patient|id|identification|photo|signature|ssn|verification|"
                       r"proof|statement|document|documents|receipt|receipts|letter)\b", re.I)
_CHARGE_CUE = re.compile(r"\b(fee|fees|charge|charges|charged|penalty|surcharge|deposit|copay|"
                         r"premium|price|fare difference|you'll pay|you pay|costs? you|due|"
                         r"costs?\s+(?:about\s+|around\s+|roughly\s+|just\s+)?(?:[$€£]|\d|"
                         + AMOUNT_WORDS + r")|"
                         r"more (?:per|a|each))\b", re.I)
_IN_WORDS = re.compile(r"\b(?:dollars|euros|pounds)\b", re.I)     # "thirty dollars", "200 dollars"
_NOT_CHARGE = re.compile(r"\b(worth|income|estimate|estimated|value|bring(?:ing)? home|salary|"
                         r"budget|package|grant|award|limit)\b", re.I)
_CHARGE = {"fee", "fees", "charge", "charges", "penalty", "surcharge", "deposit", "interest",
           "fine", "copay"}


_SERVICE_SPANS = frozenset({"window", "windows", "slot", "slots", "timeslot", "timeframe"})


def _sentence_of(content: str, o: Obj) -> str:
    start = max(content.rfind(". ", 0, o.start), content.rfind("? ", 0, o.start)) + 1
    ends = [i for i in (content.find(". ", o.end), content.find("? ", o.end)) if i >= 0]
    return content[start:min(ends) + 1 if ends else len(content)]


_MET = re.compile(r"\b(?:since|because|as long as|so)\b[^.?!;]*$|"
                  r"\b(?:you're|you are|you were|it's|it is|that's|that is|still|we're|you)\s+"
                  r"(?:well\s+|still\s+|comfortably\s+)?(?:within|under|inside|meet|meets|qualify|"
                  r"eligible|entitled|in time|before)\b[^.?!;]*$", re.I)
_GAIN = re.compile(r"\b(?:qualif\w*|eligible|entitled|free|no (?:extra )?(?:fee|charge|cost)s?|"
                   r"full refund|refund\w*|waive\w*|at no (?:extra )?(?:cost|charge)|covered|"
                   r"good news|in luck|without (?:a |any )?(?:fee|charge|penalty))\b", re.I)


def _met_with_benefit(content: str, o: Obj) -> bool:
    """Whether ``o`` is a condition the caller meets, with a benefit in its sentence or the
    next ("since it's within seven days, you qualify for a full refund"): a favour, no burden
    to push back on or to dispute."""
    start = max(content.rfind(". ", 0, o.start), content.rfind("? ", 0, o.start),
                content.rfind("! ", 0, o.start)) + 1
    if not _MET.search(content[start:o.start]):
        return False
    ends = [i for i in (content.find(". ", o.end), content.find("? ", o.end)) if i >= 0]
    stop = min(ends) + 1 if ends else len(content)
    nxt = [i for i in (content.find(". ", stop + 1), content.find("? ", stop + 1)) if i >= 0]
    return bool(_GAIN.search(content[start:min(nxt) + 1 if nxt else len(content)]))


_MERCHANT = re.compile(r"^(?:[^.?!]|\.(?=\d)){0,40}?\b(?:from|at|by)\s+[A-Z]")
_RECORD = re.compile(r"\b(?:transactions?|purchases?|merchants?|payees?|retailers?|vendors?|"
                     r"stores?|recogni[sz]\w*|dispute\w*|unauthori[sz]ed)\b", re.I)
_OURS = re.compile(r"\b(?:our|we|us)\b", re.I)
_PAY = re.compile(r"\b(?:pay|owe|you'll be charged|we charge|costs? you)\b", re.I)


def _purchase_record(sent: str, o: Obj) -> bool:
    """A charge that is a record of the caller's own spending ("a charge of $498.77 from Skyline
    Electronics", "the transaction you're calling about"): the thing they dispute or report, not a
    cost the business sets."""
    if _OURS.search(sent):
        return False
    tail = sent[sent.find(o.phrase) + len(o.phrase):] if o.phrase in sent else sent
    return bool(_MERCHANT.search(tail)) or bool(_RECORD.search(sent))


# a counterfactual or a case that may never arise: the fee or rule in it does not bind this caller
# ("If you've changed insurers recently, ... the new policy has to show up": a condition the
# caller has not said holds)
_HYPOTHETICAL = re.compile(r"\b(?:if you(?:'d| had| were| ever| happen|'ve| have)|had you|would have|would've|"
                           r"otherwise|in case|should you|if it ever|if that ever|"
                           r"if (?:you )?(?:later|ever))\b", re.I)


# a detail another company holds ("read me two things from Veridian Wireless: your account number
# with them and the transfer PIN"): the agent needs it to move the service, not to know who is
# calling, so the identity reasons ("only matched against what's on file") would not be true of it
_OTHER_ORG = re.compile(r"\b(?:from|with|at) (?:your )?(?:old|previous|former|other|current) "
                        r"(?:carrier|provider|company|bank|insurer|school)\b|\bwith them\b|"
                        r"\bfrom (?!us\b|our\b)[A-Z][\w&'-]+ [A-Z]")


_BRING = re.compile(r"\b(?:bring|have with you|show (?:us|at|them)|carry|hand in|upload|send us|"
                    r"mail us|post us|at check-in|on the day)\b", re.I)


def _asked_about(sent: str) -> bool:
    """A charge that is only the subject of a question put to the caller ("have you noticed any
    other charges?"), not one they are asked to pay."""
    return sent.rstrip().endswith("?") and not _PAY.search(sent) \
        and not re.search(r"[$\u20ac\u00a3]\d", sent)


def _fits(o: Obj, content: str) -> bool:
    """Whether the object is something a caller can dispute or mishear *as that kind*: a fee is
    an amount or a named charge, a requirement is asked for, a policy is stated as a rule."""
    sent = _sentence_of(content, o)
    before = content[o.start - 1] if o.start > 0 else " "
    after = content[o.end] if o.end < len(content) else " "
    if before.isalnum() or before in "-'’" or after.isalnum() or after == "-":
        return False                  # a piece of a word or of a compound ("twenty-| four hour")
    if _met_with_benefit(content, o):
        return False                  # "you're within our 24-hour window" (so a full refund)
    if o.kind in ("fee", "policy") and _HYPOTHETICAL.search(sent):
        return False                  # "If you'd missed the cutoff, ... a small fee": not this caller's
    head = o.phrase.split()[-1].lower().strip(".,?")
    first = o.phrase.split()[0].lower()
    if not (first in _LEADS or first in _NUMBERS or o.phrase[:1] in "$€£0123456789"
            or o.kind == "value" or _IN_WORDS.search(o.phrase)):
        return False                  # a noun phrase as said: "the late fee", not "raise grant ..."
    if o.kind == "fee":           # not a refund, waiver or credit: nobody disputes those
        if re.search(r"refund|waiv|credit|free|no charge|no fee|discount|off the|saving|no longer|"
                     r"\b(?:lower|cheaper|reduced|smaller)\b|"
                     r"\bhold\b|authori[sz]|releas|not (?:fully |yet |actually )?charged|"
                     r"(?:don't|doesn't|won't|not) (?:be )?charge|without (?:a|any) \w+ ?fee|no \w+ fees?\b",
                     sent, re.I):
            return False
        if _purchase_record(sent, o) or _asked_about(sent):
            return False
        if re.fullmatch(r"(?:the|this|that) charges?", o.phrase.strip(), re.I):
            return False              # the charge already on the table (the one disputed)
        if re.search(r"\b(?:current|existing|old|previous|usual|regular)\b", o.phrase, re.I):
            return False              # what they pay already ("replaces your current monthly
                                      # charge"), not a new cost to object to
        if head in _CHARGE:
            return True
        if re.search(r"\b(?:at least|a minimum of|minimum of|no less than|up to|at most|capped at|"
                     r"no more than)\s*$", content[:o.start], re.I):
            return False              # the floor or cap of a fee worked out otherwise ("roughly
                                      # one percent, at least 75 dollars" on an $18,500 job, a
                                      # hand read of seed 5151): not what this caller pays
        # a bare amount is a charge only where the sentence says so (not an estimate, a value,
        # an income or a balance the caller already knows)
        return (o.phrase[:1] in "$€£" or any(c.isdigit() for c in o.phrase)
                or bool(_IN_WORDS.search(o.phrase))) \
            and bool(_CHARGE_CUE.search(sent)) and not _NOT_CHARGE.search(sent)
    if o.kind == "requirement":   # an identity detail or document, asked for, named as such
        first = o.phrase.split()[0].lower()
        return (bool(_REQUEST_CUE.search(sent)) and first in _LEADS
                and bool(_IDENTITY.search(o.phrase))
                and not re.search(r"\berror\b|\bthat code\b", sent, re.I)
                and not _BRING.search(sent)    # "bring a photo ID" to a visit: no check on this call
                and not _OTHER_ORG.search(sent)
                # "the last four digits of your Social Security number": the digits are asked
                # for, not the number ("nobody asked me for my Social Security number")
                and not re.search(r"\bdigits of\s*$", content[:o.start]))
    if o.kind == "policy":           # the rule is stated around it, not just named by it
        if re.search(r"\b(?:offer|discount|half price|free|bonus|credit|refund|waive|match|"
                     r"guarantee|qualif|eligible|entitled|covered|protect|extend|extra time|grace|"
                     r"authori[sz]|releas|drop(?:s|ped)? off|not (?:fully |yet )?charged|"
                     r"so (?:that )?you (?:can|could|have time|still|won't|don't have to)\b|"
                     r"(?:gives?|give) you\b|won't be stuck|instead, so|"
                     r"new [\w ]{0,20}deadline|more time|extension (?:gives|means)|"
                     # how long what the caller was given lasts ("The referral stays valid for
                     # ninety days" -- "That doesn't work for me", a hand read of seed 6262)
                     r"(?:stays?|remains?|is|are|will be) valid\b|\bvalid for\b|\bgood for\b)",
                     sent, re.I):
            return False             # a benefit the caller is offered is nothing to object to
                                     # (a window "so you can export anything you need")
        if head in _SERVICE_SPANS and not re.search(r"\b(?:within|outside|after)\b", sent, re.I):
            return False             # a pickup or arrival window the business gives ("they'll
                                     # email a two-hour pickup window"): a courtesy, not a rule the
                                     # caller is held to (a "within a 30-day window" still is)
        rest = sent.replace(o.phrase, " ")
        # a rule that binds the caller ("must be returned within 30 days"), not one that only
        # bounds a service in their favour ("we match prices within fourteen days")
        return bool(_RULE_CUE.search(rest)) and bool(_BURDEN_CUE.search(rest))
    return True


def end_word(message: str, content_start: int, obj: Obj) -> int:
    """1-based index (in ``message``) of the last word of ``obj`` (found in the content)."""
    end = content_start + obj.end
    return sum(1 for s, _ in P.word_spans(message) if s < end)


def _compose(rng: random.Random, file: str, kind_key: str, skip: re.Pattern | None = None,
             **slots: str) -> str:
    opener = rng.choice(P.bank(file, f"{kind_key}_open"))
    cores = [c for c in P.bank(file, kind_key) if skip is None or not skip.search(c)]
    core = P.fill(rng.choice(cores or list(P.bank(file, kind_key))), where=f"{file}.{kind_key}",
                  **slots)
    tail = rng.choice(P.bank(file, f"{kind_key}_tail"))
    slot_first = {str(v).split()[0] for v in slots.values() if str(v).split()}
    if opener and core[:1].isupper() and not core.startswith(("I ", "I'")) \
            and not opener.rstrip().endswith((".", "!", "?")) and core.split()[0] not in slot_first:
        core = core[:1].lower() + core[1:]     # "Sorry, but where does ...", not "but Where"
    return P.tidy(P.join(opener, core, tail))


_DOCUMENT_HEADS = frozenset("""statement statements receipt receipts letter letters document documents
photo photos proof form forms return returns certificate certificates report invoice invoices
records signature authorisation authorization copy copies""".split())


def object_kind(obj: Obj, content: str = "") -> str:
    """The kind a pushback is about: a required document (a statement, a signed form, a photo
    ID to bring along) is its own kind, answered with why the request needs it and a way to
    send it later, not as an identity check on the call."""
    head = obj.phrase.split()[-1].lower().strip(".,?;:") if obj.phrase.split() else ""
    if obj.kind == "requirement" and content and _BRING.search(_sentence_of(content, obj)):
        return "document"             # "Please bring ... a photo ID": a thing to bring, not a check
    return "document" if obj.kind == "requirement" and head in _DOCUMENT_HEADS else obj.kind


# how big a charge is, judged: only of one whose amount was heard ("The permit fee |" -- "the
# permit fee? That's a lot more than I expected" judges a number nobody has said yet)
_SIZE_JUDGED = re.compile(r"\b(?:a lot more|more than I expected|steep|too much|expensive)\b", re.I)


def pushback(rng: random.Random, obj: Obj, content: str = "") -> str:
    kind = object_kind(obj, content)
    amount = re.search(r"\d|[$\u20ac\u00a3]", obj.phrase)
    return _compose(rng, "user", f"pushback_{kind}", skip=None if kind != "fee" or amount
                    else _SIZE_JUDGED, obj=as_user(obj.phrase), head=_head(obj))


def clarify(rng: random.Random, obj: Obj) -> str:
    return _compose(rng, "user", "clarify_value", obj=as_user(obj.phrase), head=_head(obj))


def _head(obj: Obj) -> str:
    words = re.sub(r"^(?:a|an|the|your|my|this|that|any)\s+", "", obj.phrase, flags=re.I)
    return words


_ASKING = re.compile(r"\b(?:ask|asked|asking|question)\b", re.I)


def recover_pushback(rng: random.Random, kind: str, phrase: str, said: str = "",
                     domain: str = "", asked: bool = True, heard: str = "",
                     unfit: re.Pattern | None = None) -> str:
    """Empathy, the object explained by its kind, one alternative of that kind, a question;
    ``said``: what the assistant already said about it (a persisting caller gets another reason
    and another alternative, not the same ones again); ``domain``: its own alternatives join the
    generic ones; ``unfit``: alternatives this call cannot use (a code by text to a lost phone)."""
    alts = list(P.bank("assistant", f"alternatives_{kind}"))
    own = f"alternatives_{kind}.{domain}"
    if own in P.bank_keys("assistant"):       # the domain's own ways, drawn twice as often
        alts += list(P.bank("assistant", own)) * 2
    if unfit is not None:
        alts = [a for a in alts if not unfit.search(a)] or alts
    unfit_key = f"alternatives_unfit.{domain}"    # generic ways the business has not got (an
    pats = []                                     # airline sends no monthly bill)
    if unfit_key in P.bank_keys("assistant"):
        pats = [re.compile(x, re.I) for x in P.bank("assistant", unfit_key)]
        alts = [a for a in alts if not any(p.search(a) for p in pats)] or alts
    obj = re.sub(r"^an?\s+(?=\S+\s)", "the ", as_assistant(phrase))   # the caller heard it:
    obj = re.sub(r"^(?=[$\u20ac\u00a3]\d[\d,.]*\s+[a-z])", "the ", obj)   # "the $32.37 charge"
    # "the breakdown of the 40 dollar enrolment fee", not "of a 40 dollar enrolment fee"
    head = re.sub(r"^(?:a|an|the|your|my|this|that|any)\s+", "", obj, flags=re.I)
    noun = re.split(r"\s+of\s+", head)[0]            # "last four digits of the card": digits
    last = noun.split()[-1].lower() if noun.split() else ""
    counted = re.search(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|"
                        r"twenty|thirty|forty|sixty|ninety)\b", head, re.I) and kind != "requirement"
    be = "are" if last.endswith("s") and not last.endswith(("ss", "us")) and not counted else "is"
    wait = kind == "policy" and counted and re.search(
        r"\b(?:minutes?|hours?|days?|weeks?|months?)$", head, re.I) and not _WINDOW.search(
        _sentence_with(heard, head))        # "valid for ninety days" is a window, not a wait;
    why_bank = P.bank("assistant", "recover_pb_why_wait" if wait    # not a rule "I can't change"
                      else f"recover_pb_why_{kind}")
    own_why = f"recover_pb_why_{kind}.{domain}"
    if not wait and own_why in P.bank_keys("assistant"):   # the line of business's own reasons
        why_bank = tuple(why_bank) + tuple(P.bank("assistant", own_why))
    if unfit is not None:           # "only checked against what we have on file" of a new client
        why_bank = [w for w in why_bank if not unfit.search(w)] or why_bank
    why_bank = [w for w in why_bank if not any(p.search(w) for p in pats)] or why_bank  # (a county
    # fee is set by no "pricing rules")
    fresh = [w for w in why_bank if P.fill(w, obj=obj, head=head)[:40].lower() not in said.lower()]
    why = P.fill(rng.choice(fresh or list(why_bank)), where=f"assistant.recover_pb_why_{kind}",
                 obj=obj, head=head)
    why = re.sub(rf"^((?:The )?{re.escape(head if why.startswith('The ') else obj)}) is\b",
                 rf"\1 {be}", why, flags=re.I)
    cores = P.bank("assistant", f"pb_empathy_{kind}")
    if not asked:       # "I'd rather not give that out." is met with no "fair question" or "I
        cores = [c for c in cores if not _ASKING.search(c)] or cores   # appreciate you asking"
    fresh_cores = [c for c in cores if c[:30].lower() not in said.lower()]   # a persisting caller
    opens = list(P.bank("assistant", "pb_empathy_open"))
    parts = [P.tidy(P.join(rng.choice(opens),                                       # is not told
                           rng.choice(fresh_cores or list(cores)))),                # the same again
             why,
             P.compose(rng, "assistant", "pb_offer", alternative=rng.choice(
                 [a for a in alts if a not in said and not _shares_tail(a, why)]
                 or [a for a in alts if not _shares_tail(a, why)] or alts))]
    text = P.tidy(P.join(*parts))
    # "Instead, we could ... instead." says it twice
    return re.sub(r"\b(?:Instead,|Alternatively,|Another option:|If you'd prefer,) ([A-Za-z][^.?!]*?) instead\.",
                  lambda m: m.group(1)[:1].upper() + m.group(1)[1:] + " instead.", text)


# a span of time the caller has (a validity, a deadline, notice), not a wait they sit out
_WINDOW = re.compile(r"\b(?:valid|expires?|within|window|deadline|notice|up to|at least|no later|"
                     r"before|grace|(?:only )?works? for|good for|lasts?|stays? (?:open|active)|"
                     r"active for)\b", re.I)     # "it only works for fifteen minutes": a link's life


def _sentence_with(text: str, phrase: str) -> str:
    """The sentence of ``text`` that says ``phrase`` ('' when none does)."""
    low = phrase.lower()
    return next((s for s in re.split(r"(?<=[.?!])\s+", text) if low in s.lower()), "")


def _shares_tail(a: str, b: str, n: int = 3) -> bool:
    """Whether ``a`` repeats a run of ``n`` words of ``b`` ("... before anything is charged" in
    the reason and in the alternative)."""
    wa = re.findall(r"[a-z']+", a.lower())
    grams = {tuple(wa[i:i + n]) for i in range(len(wa) - n + 1)}
    wb = re.findall(r"[a-z']+", b.lower())
    stop = {"the", "a", "to", "you", "i", "it", "of", "and", "for", "is", "can", "we", "this", "that"}
    return any(tuple(wb[i:i + n]) in grams and not set(wb[i:i + n]) <= stop
               for i in range(len(wb) - n + 1))


def recover_clarify(rng: random.Random, phrase: str) -> str:
    return P.pick(rng, "assistant", "recover_clarify_value", obj=as_assistant(phrase))
