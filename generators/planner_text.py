"""What a talking point says, read by the round planner: the rules and filters on its text.

Classifiers of an assistant turn's text (it asks the caller to do something now, reports the
work done, quotes a price, lays out options, makes an offer the caller took or turned down) and
the filters the planner runs on a talking point before it is said (no attribution of a value the
caller never gave, no offer of what they declined), plus the trimming rules of fast mode
(:func:`_essential`, :func:`_trimmed`). Used by :mod:`bargein.generators.planner` and
:mod:`bargein.generators.planner_caller`.
"""

from __future__ import annotations

import random
import re
from collections import deque

from bargein.generators import phrases as P
from bargein.generators import rewordings as R
from bargein.generators.plan_state import ConversationState, RoundPlan, Unit, question_kind
from bargein.spoken import DIGIT_WORDS
from bargein.verify.text import content_words


def alternative_step(text: str, side: str = "alternative") -> dict[str, str] | None:
    """The step that carries out the identity alternative ``text`` offers (``side``
    "alternative": an offer's wording; "assistant": the step's own question), from the pairs
    bank ``alternative_steps``; None when ``text`` offers none of them."""
    low = text.lower()
    for step in P.bank("pairs", "alternative_steps"):
        probe = step[side].lower()
        if side == "alternative":
            probe = re.sub(r",? instead$", "", probe)
        if probe and probe in low:
            return step
    return None


_TASK_CODE = re.compile(r"\bread (?:it|them|the code|that|the digits) (?:out |back )?(?:to me )?(?:when|once|as soon as)\b|"
                        r"\b(?:read|tell) me the code\b|\bread me the (?:six|four)-digit code\b|"
                        # "When it lands, which can take up to a minute, just read it out to me."
                        r"\b(?:when|once|as soon as) (?:it|the code) (?:lands|arrives|comes through|shows up)\b"
                        r"[^.?!]*\bread (?:it|them|the code) (?:out |back )?to me\b", re.I)
_TASK_SIGN = re.compile(r"\b(?:let me know|tell me) (?:once|when|as soon as) you've (?:signed|e-signed)\b|"
                        # "Once you've signed, let me know ...", "When it's signed, give me a shout"
                        r"\b(?:once|when|as soon as) (?:you've (?:signed|e-signed)|it's signed)\b[^.?!]*"
                        r"\b(?:let me know|tell me|give me a shout)\b", re.I)
_TASK_DONE = re.compile(r"\b(?:let me know|tell me) (?:once|when) (?:you've|you have|it's) "
                        r"(?:entered|added|saved|approved|clicked|opened|done|submitted|uploaded|sent|"
                        r"finished|restarted|signed in)\b", re.I)


# the agent sends the caller something the next steps rely on (a form, a code, a link)
_SENDS = re.compile(r"\bI(?:'m| am) (?:now |just )?(?:sending|texting|emailing)\b|"
                    r"\bI(?:'ve| have) (?:just )?(?:sent|texted|emailed)\b", re.I)


_TASK_REPORT = re.compile(r"\b(?:tell me|let me know) what (?:you see|it says|comes up|happens)\b", re.I)


def _task_asked(text: str) -> str:
    """What the turn's last sentence asks the caller to do now and report back ("read it to
    me when you see it": ``code``; "let me know once you've signed": ``sign``; "tell me once
    you've entered it": ``done``), or '' (a question is answered as a question)."""
    sents = [x.strip() for x in re.findall(r"[^.?!]+[.?!]*", text) if x.strip()]
    last = sents[-1] if sents else ""
    if _TASK_REPORT.search(last):      # "run a speed test and tell me what you see?": the
        return "report"                # caller does it and says what they saw, not "yes, it is"
    if not last or last.endswith("?"):
        return ""
    if _TASK_CODE.search(last):
        return "code"
    if _TASK_SIGN.search(last):
        return "sign"
    return "done" if _TASK_DONE.search(last) else ""


def _fill_step(template: str, rng: random.Random) -> str:
    """The caller's answer to an alternative's step, its values drawn from ``rng``."""
    months = ("January February March April May June July August September October November "
              "December").split()
    values = {
        "code6": ", ".join(" ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(3))
                           for _ in range(2)),
        "digits4": " ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(4)),
        "digits5": " ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(5)),
        "digits13": " ".join(DIGIT_WORDS[rng.randrange(10)] for _ in range(13)),
        "amount": f"{rng.randrange(25, 180)} dollars",
        "month": rng.choice(months),
        "pet": rng.choice(("Biscuit", "Max", "Luna", "Pepper", "Rocky", "Daisy", "Oscar",
                           "Willow", "Buster", "Mittens")),
        "street": rng.choice(("Maple Avenue", "Hollis Street", "Cedar Lane", "Orchard Road",
                              "Beacon Street", "Linden Drive", "Fairview Road")),
    }
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


_ATTR = re.compile(r"\b(?:as )?you(?:'ve| have)? (?:said|mentioned|told (?:me|us)|described|believe|"
                   r"noted|indicated|explained|reported)\b", re.I)


_READBACK = re.compile(r"\bread(?:ing)? (?:that|it|this|those|them|everything) back\b|\bread back\b|"
                       r"\bjust to (?:double-)?check\b|\bI have .{1,80}?\b(?:written down|down here|noted)\b",
                       re.I)


def _unnamed(text: str, st: ConversationState) -> str:
    """The talking point without the caller's first name as a form of address ("Thanks,
    Katherine.") while the caller has not said their name yet: the agent cannot know it."""
    for k, f in st.facts.items():
        if f.kind != "name" or k in st.uttered or k in st.read_back or not f.value.split():
            continue
        first = re.escape(f.value.split()[0])
        text = re.sub(rf",\s+{first}(?=[.,!?])", "", text)
        text = re.sub(rf"^{first},\s+(\w)", lambda m: m.group(1).upper(), text)
    return text


def drop_unfounded(text: str, st: ConversationState) -> str:
    """The talking point without sentences that attribute to the caller a value they never
    said ("You said it's a grey spinner case" before they described it)."""
    facts = st.facts
    text = _unnamed(text, st)
    out = []
    dropped = readback = False
    for sent in re.split(r"(?<=[.?!])\s+", text):
        if dropped and sent.rstrip().endswith("?") and P.n_words(sent) <= 5:
            dropped = False
            continue                        # "Is that right?" about the attribution just dropped
        dropped = False
        if readback or _READBACK.search(sent):
            # a read-back ("Let me read that back. The account number is X") repeats what the
            # caller said: of a value they never said, it is dropped with its lead-in
            said = [k for k, f in facts.items() if f.value in sent or (f.spoken and f.spoken in sent)]
            if not said and not readback and not sent.rstrip().endswith("?"):
                readback = True             # the values follow in the next sentence
                out.append(sent)
                continue
            readback = False
            if any(k not in st.uttered for k in said):
                if out and _READBACK.search(out[-1]):
                    out.pop()
                dropped = True
                continue
            out.append(sent)
            continue
        if _ATTR.search(sent):
            said = [k for k, f in facts.items() if f.value in sent or (f.spoken and f.spoken in sent)]
            rest = sent
            for k in said:
                rest = rest.replace(facts[k].value, " ").replace(facts[k].spoken or "\0", " ")
            extra = content_words(_ATTR.sub(" ", rest))   # words beyond the values themselves
            if not said or any(k not in st.uttered for k in said) or len(extra) > 1:
                dropped = True
                continue
        out.append(sent)
    return " ".join(out).strip()


# (not a name: a caller who rang to be helped gives it; "why do you need my full name?" and "I
# can use the security questions instead" is no call anyone has)
# (nor a reference code: "why do you need my order number?" is no objection a caller makes)
_SENSITIVE_KINDS = {"date_of_birth", "account", "pin", "phone", "email", "address",
                    "card", "ssn", "work_email"}
_SENSITIVE_WORDS = ("birth", "ssn", "social", "card", "account", "pin", "password", "phone",
                    "email", "address", "member", "policy_number", "passport", "licen")


# a key naming someone else ("family_member", "joint_owner"): their name is no identity detail
# of the caller's ("I'm not comfortable giving out my family member")
_OTHER_PERSON = frozenset("family joint parent child partner recipient dependent other spouse".split())


# a detail another company issued for a transfer ("old_carrier_account", "transfer_pin", the
# "port_number" being moved): the agent needs it to move the service, not to know who is calling,
# so "I'm only matching it against what's on file" would be no true answer to a caller's worry
_OTHER_ORG = ("old", "carrier", "transfer", "port")


def sensitive_key(st: ConversationState, key: str) -> bool:
    """An identity or account detail a careful caller may not want to give on a call."""
    f = st.facts.get(key)
    if not f or key.split("_")[0] in _OTHER_PERSON or key.split("_")[0] in _OTHER_ORG:
        return False
    return f.kind in _SENSITIVE_KINDS or any(w in key for w in _SENSITIVE_WORDS)


def _unheard_price(text: str, heard_chars: int) -> str:
    """The first sentence the caller did not hear in full that states an amount they will pay
    ("The fare difference is $195.24 per passenger, including taxes."), or ''. An amount paid
    back to them (a refund, a credit) is no price to agree to. A sentence is
    read in its catalogue wording, so every wording of it reads the same."""
    if heard_chars == 0:
        text = R.canonical(text)
    for m in re.finditer(r"\S(?:.*?)(?:[.?!](?=\s|$)|$)", text):
        sent = m.group(0).strip()
        amount = _AMOUNT.search(m.group(0))
        if sent and amount and m.start() + amount.start() >= heard_chars and not sent.endswith("?") \
                and not re.search(r"\b(?:refund(?:ed|s)?|credit(?:ed|s)?|back to you)\b", sent, re.I) \
                and re.search(r"\b(?:fee|cost|costs|charge|difference|price|total|pay|due|is|comes? to|"
                              r"works? out|runs|would be|will be|amounts? to|adds up)\b", sent, re.I):
            return sent
    return ""


def _question(text: str) -> str:
    """The last question sentence of a talking point ('' when it has none worth keeping)."""
    qs = [q.strip() for q in re.findall(r"[^.?!]*\?", text)]
    return qs[-1] if qs and P.n_words(qs[-1]) >= 4 else ""

# the turn asks the caller to do something now: skipping it would skip the step's own work
_CALLER_TASK = re.compile(r"\bif you (?:haven't|have not|don't|do not) [^.?!]{0,60}, (?:file|call|send|contact|"
                          r"reply|bring|submit|ask)\b|"    # what the caller must do if ... ("If you
                          # haven't heard back by then, file the formal appeal anyway")
                          r"\bread (?:it|them|the code|that) (?:out|back|to me)\b|\bread me (?:the|your|that) "
                          r"(?:code|digits|number)\b|\bwhen it (?:arrives|comes "
                          r"through)\b|\b(?:try|open|restart|unplug|plug|reboot|sign in|log in|tap|"
                          r"press|hold down|go to|check|lock|turn off|turn on|switch off) (?:the|your|it|that|again|in|out|back)\b|"
                          r"\blet me know (?:when|if|once)\b|\btell me (?:when|once|what you see)\b|"
                          # an approval, a signature or a reply the caller owes before anything
                          # happens ("Once you approve it there, ...", "sign the form we emailed")
                          r"\b(?:once|when|after|as soon as) you(?:'ve)? (?:approve|sign|confirm|reply|"
                          r"accept|click|upload|return|send)\b|\b(?:please|you'll need to|you need to|"
                          r"you'll have to) (?:approve|sign|confirm|reply|accept|click|upload|return|"
                          r"send|complete|fill)\b|\bapproval request\b|\bfor you to (?:approve|sign)\b|"
                          r"\byou can sign\b|\bsigned (?:authori[sz]ation|form|consent|release)\b|"
                          r"\byour signature\b|\b(?:please )?(?:don't|do not) (?:cancel|close|switch off|"
                          r"reset|delete|throw)\b|"
                          # a check only the caller can make ("can you confirm you're signed in?")
                          r"\bcan you (?:confirm|check|see) (?:you|that you|whether)\b|"
                          # a payment the caller makes through a link: no change goes through
                          # without it ("For the fare difference, I'll text you a secure link")
                          r"\b(?:secure|payment) link\b", re.I)
# the turn reports the request done ("You're booked ...", "I've issued a refund ...")
_DONE = re.compile(r"^(?:(?:[^.?!]|\.(?=\w))*[,.]\s+(?:and\s+|so\s+)?)?(?:you're (?:all set|booked|renewed|confirmed|"
                   r"upgraded|enrolled|now)|I've (?:booked|rebooked|issued|processed|submitted|filed|"
                   r"cancelled|scheduled|renewed|set up|applied|placed|sent|moved|changed)|(?:that's|it's|everything is|all) (?:done|sorted|complete)|"
                   r"done(?=[.!])|"     # "Done. On flight MA 9288 you'll be in seat 3C" (seed 8585)
                   r"your [\w' -]{1,40}? (?:is|are|has been|have been) (?:confirmed|set for|set up|booked|"
                   r"submitted|filed|in place|cancelled|scheduled|done))\b", re.I)
_AMOUNT = re.compile(r"[$\u20ac\u00a3]\s?\d|\b\d[\d,.]*\s(?:dollars?|euros?|pounds?|miles|points|"
                     r"credits)\b", re.I)
# a question asking the caller to confirm what the turn reads out ("So that's Portugal and Spain,
# leaving Friday. Is that right, ...?")
_CONFIRM_Q = re.compile(r"\b(?:is|was) (?:that|this|all of that|everything) (?:right|correct|accurate)\b|"
                        r"\bdid I get that right\b|\bhave I got that right\b|"
                        r"\bis (?:that|this) the one\b", re.I)


# the agent makes the change now ("I'm applying the upgrade now", "The change is going through")
_ACTS = re.compile(r"^(?:[^.?!]*[,.]\s+)?(?:I'm (?:now )?(?:applying|setting|switching|upgrading|"
                   r"downgrading|changing|making|putting through|processing) |I'll (?:now )?(?:apply|"
                   r"switch|upgrade|downgrade|process) (?:the|your|it|that)\b|The change is going through\b)",
                   re.I)
_UNSURE = re.compile(r"\b(?:not (?:completely |entirely |totally |really |quite )?sure|"
                     r"(?:have|need) to check|don't (?:remember|recall|know)|can't (?:say|remember)|"
                     r"no idea|not certain)\b", re.I)
# a turn that lays out the options of a choice ("We can send a replacement, ..., or refund")
# (an amount's decimal point is no sentence end: "either refund the $201.39 ... or" is a choice)
_OPTIONS = re.compile(r"\b(?:two|three|both|a couple of) (?:options|ways)\b|"
                      r"\beither\b(?:[^.?!]|\.(?=\d)){3,90}\bor\b|"
                      r"\b(?:we|you|I) (?:can|could) (?:[^.?!]|\.(?=\d)){3,90}, or \w+", re.I)


def _offer_taken(plan: RoundPlan) -> bool:
    """The caller said yes to an offer or a go-ahead question of this round's unit."""
    qs = re.findall(r"[^.?!]*\?", plan.unit.text if plan.unit else "")
    reply = plan.user_facts.get("reply", "") or plan.user_facts.get("option", "")
    return bool(qs) and question_kind(qs[-1].strip()) in ("offer", "either", "keep") and not re.search(
        r"\b(?:no|not|don't|rather|instead|neither)\b", reply, re.I)


# words of an offer that name no option of its own ("do you want to keep the account on a
# monthly plan instead?" offers "monthly")
_OFFER_FRAME = frozenset("""want keep account instead like would prefer plan option rather stay
switch change move go ahead now today still just also your the a an on to of do you with for
is are it this that there than more less can could we i me my""".split())


def _offered_words(text: str) -> set[str]:
    """The distinctive words of the offer in the last question of ``text`` (an "instead" offer
    the caller answered); empty when that question is no offer."""
    qs = re.findall(r"[^.?!]*\?", text)
    if not qs or question_kind(qs[-1].strip()) not in ("keep", "offer"):
        return set()
    return {w for w in re.findall(r"[a-z]+", qs[-1].lower()) if w not in _OFFER_FRAME
            and w not in P.STOPWORDS and len(w) > 3}


def _drop_declined(text: str, declined: set[str]) -> str:
    """``text`` without the sentences that offer again what the caller turned down ("You can
    either close it, or switch to monthly billing" after "no" to a monthly plan)."""
    sents = re.findall(r"[^.?!]+[.?!]*\s*", text)
    keep = [x for x in sents if not (set(re.findall(r"[a-z]+", x.lower())) & declined)]
    return "".join(keep).strip() if len(keep) < len(sents) else text


def _readable(value: str) -> bool:
    """A value a read-back can say after "it's" / "your X is": a name, a date, an amount,
    not a clause about the caller ("is renting and has renter's insurance")."""
    return bool(value) and P.clause(value) is None and not re.match(
        r"(?:is|are|was|has|have|had|lost|needs?|wants?|got|since|until|because|I|we|my|our|"
        r"did|do|does|didn't|don't|doesn't|not|never|can|cannot|can't|will|won't|would|could|"
        r"should|must)\b",
        value, re.I)


def _trimmed(st: ConversationState, keep) -> deque:
    """The stage's queued units that ``keep`` accepts; a stage not delivered yet keeps its
    first statement when nothing else of its own is left (skipping ahead skips explanation,
    never the step itself: "That wraps up your request" with the step never done)."""
    units = list(st.units)
    out = [u for u in units if keep(u)]
    if st.stage not in st.delivered and units and not any(u.kind != "close" for u in out):
        first = next((u for u in units if u.kind != "close"), None)
        if first is not None:
            out.insert(0, first)
    return deque(out)


_DOING = re.compile(r"\bI(?:'m| am) (?:now |just |also )?(?:blocking|cancell?ing|freezing|locking|ordering|"
                    r"suspending|pausing|deactivating|disabling|unlocking|transferring|porting|"
                    r"issuing|reissuing|booking|refunding|reversing|submitting|filing|opening|"
                    r"closing|placing|redirecting|restoring|resetting|removing|reinstating|"
                    r"scheduling|releasing|waiving|crediting)\b|"
                    # "Understood, I'll refund the unused ticket in full", not "Once it's signed,
                    # I'll submit the petition" (a step after the caller's own)
                    r"^(?!(?:Once|When|If|After|As soon as)\b)[^.?!]*\bI'll (?:now )?(?:block|"
                    r"cancel|freeze|refund|reverse|reissue|issue|waive|credit)\b", re.I)


def _essential(u: Unit) -> bool:
    """Questions for required info, the closing and what the caller will pay ("Business is 24
    dollars per seat per month") are never trimmed for length."""
    if u.kind == "close" or (u.kind == "ask" and bool(u.keys)) or bool(
            u.text and (_unheard_price(u.text, 0) or _DONE.search(u.text) or _ACTS.match(u.text))):
        return True                 # a price, or the report of the work done ("I've issued ...")
    if u.text and _DOING.search(u.text):
        return True                 # the step's own action ("I'm blocking the card ending in 4421
        #                             right now"): trimmed, the lost card was never blocked (a
        #                             hand read of seed 5151)
    if u.text and (_SENDS.search(u.text) or _task_asked(u.text)):
        return True                 # what the caller is sent or asked to do is the step's work:
    #                                 skipping "I'm sending the release form to you" left "The
    #                                 form lists ... Let me know once you've signed" about nothing
    # a choice that decides the path ("close it, or switch to monthly?", "shall I apply it?"):
    # skipping it would act without the caller's say
    qs = re.findall(r"[^.?!]*\?", u.text or "")
    return u.kind == "ask" and bool(qs) and question_kind(qs[-1].strip()) in ("either", "offer", "keep")


_IF_DECLINED = re.compile(r"(?:If (?:that|this|it|none of those) (?:doesn't|does not|won't|isn't|don't) "
                          r"(?:suit|work|fit)|If not\b)", re.I)
# a talking point that only makes sense after the one before it ("If that doesn't suit, ...")
# a first sentence that points back into the one before: "You can upload them ...", "pickup is
# free either way", "before then" (a hand read of seed 6161: kept while the sentence they point
# to was trimmed for length)
_REFERS_BACK = re.compile(r"^[^.?!]*\b(?:them|either way|either one|both of them|the first one|"
                          r"before then|by then|until then|that date|those)\b", re.I)


def leans_back(text: str) -> bool:
    """``text`` needs the unit before it: it opens on a link ("Otherwise", "If not") or its first
    sentence points back ("You can upload them")."""
    return bool(_LEANS_BACK.match(text) or _REFERS_BACK.match(text))


_LEANS_BACK = re.compile(r"(?:If (?:that|not|this|so|none|neither)|Otherwise|Or|Alternatively|Instead|"
                         r"Also|That|This|Those|These|It|They|Then|Had you|After that|Before that|"
                         r"With that|By then|From then on|Once that's done|"
                         r"If you(?:'d| had) (?!like|prefer|rather)\w+ed)\b")


_DOUBLE_END = frozenset("get set reset put stop plan shop".split())


def _ing(verb: str) -> str:
    v = verb.lower()
    if v in _DOUBLE_END:
        return v + v[-1] + "ing"
    if v.endswith("e") and not v.endswith(("ee", "ye", "oe")):
        return v[:-1] + "ing"
    return v + "ing"


def _yours(text: str) -> str:
    """The caller's words as the agent says them back: "my bill" -> "your bill"."""
    swaps = {"my": "your", "i": "you", "i'm": "you're", "me": "you", "our": "your", "we": "you",
             "mine": "yours", "us": "you"}
    return re.sub(r"\b(?:my|I|I'm|me|our|we|mine|us)\b", lambda m: swaps[m.group(0).lower()], text)


def request_topic(question: str) -> str:
    """A side question put off until after the main request, as the agent names it when it
    comes back to it ("can I get a paper copy of my bill each month?" -> "getting a paper copy
    of your bill each month"); '' when it has no plain form (a hand read: two put-off requests
    collapsed into "your other question")."""
    parts = [re.sub(r"^(?:but|and|so)\s+", "", x.strip(), flags=re.I)
             for x in re.split(r",\s+", question.strip().rstrip("?").strip())]
    core = next((x for x in reversed(parts) if re.match(
        r"(?:can|could|may|how|who|do|does|is|when)\b", x, re.I)), "")
    core = re.sub(r"\s+(?:while I'm (?:here|on the phone)|right now)$", "", core)
    rules = (
        (r"(?:can|could|may) (?:I|we) (\w+) (.+)", lambda m: f"{_ing(m[1])} {m[2]}"),
        (r"(?:can|could|may) my (.+?) (get|have) (.+)", lambda m: f"your {m[1]} {_ing(m[2])} {m[3]}"),
        (r"how do I (\w+) (.+)", lambda m: f"{_ing(m[1])} {m[2]}"),
        (r"who do I talk to about (.+)", lambda m: f"who to talk to about {m[1]}"),
        (r"do you (\w+) (.+)", lambda m: f"whether we {m[1]} {m[2]}"),
        (r"is there (.+)", lambda m: f"whether there's {m[1]}"),
        (r"when does (.+) (close|open|end|start)", lambda m: f"when {m[1]} {m[2]}s"),
    )
    for pat, make in rules:
        m = re.fullmatch(pat, core, re.I)
        if m:                       # the caller's words said back: "my bill" -> "your bill"
            return make([m.group(0)] + [_yours(g) for g in m.groups()])
    return ""


# a sentence that only explains why ("Morning flights on this route fill up quickly, so knowing
# that helps me find the best option", "Since a single wrong digit can send it back to the
# depot, ..."): what an impatient caller asked to skip (hand reads of seeds 6161 and 7070)
_WHY_ONLY = re.compile(r"^\W*(?:since|because|that way|this way)\b|\b(?:so knowing|helps me|tend to|"
                       r"tends to|fill up|which means|that's why|so that|so there are no|just so)\b", re.I)
_KEEPS = re.compile(r"\?|\d|[$\u20ac\u00a3]|\bI(?:'ve| have|'m| am|'ll| will)\b|\byou(?:'ll| will) "
                    r"(?:need|have|get|pay|receive)\b|\bplease\b", re.I)


def short_version(text: str) -> str:
    """``text`` without its sentences that only explain why, for a caller who asked to skip
    ahead; the questions, amounts, actions and requests stay (and the whole text, if nothing
    else would)."""
    sents = re.split(r"(?<=[.!?])\s+", text.strip())
    kept = [x for x in sents if _KEEPS.search(x) or not _WHY_ONLY.search(x)]
    return " ".join(kept) if kept else text
