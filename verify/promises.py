"""``promise_kept``: what the agent promises while answering a cut-in is done, or offered again,
before the call ends.

Seen in an independent hand read (seed 9191, 11 of 52 interruption points): "I'll send you how
to book one", "I can book one after this", "right after this, let's add wheelchair assistance",
and the call then closed with none of it done or mentioned again. The rule reads the
conversation only (never a writer's banks or plan), so offline and LLM calls are judged alike.

A promise is a sentence of the agent's reply to a side request or an added detail (the turn
right after a topic-switch or normal cut-in) that either says it will send something ("I'll
email you the range") or puts something off until the main request is done ("after this", "at
the end of this call"); a sentence under a condition ("if we get cut off, I'll call you back")
promises nothing. It is kept when a later agent turn reports it done in words that name it
("I've emailed you the range"), says it is following it up ("as promised", "your other question
from earlier"), or the call ends unresolved (a hand-over or a caller who hung up takes the rest
with it).
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check
from bargein.verify.text import content_words, sentences

_WILL_SEND = re.compile(r"\bI(?:'ll| will) (?:also |then )?(?:send|email|e-mail|text|message|forward|"
                        r"mail|give you|pass you)\b|\b(?:in|with) my follow-up\b|\bmy follow-up "
                        r"(?:email |message )?will\b", re.I)
_DEFERRED = re.compile(r"\b(?:after (?:this|that|we(?:'ve)? finish(?:ed)?(?: this)?|we're done)|"
                       r"once we(?:'re| are) done|once we've (?:finished|wrapped up)|at the end of "
                       r"(?:this|the) call|when we wrap up|right after (?:this|that|we finish)|"
                       r"before we hang up|as soon as we(?:'re| are) (?:done|finished)|when we(?:'re| are) "
                       r"(?:done|finished)|once we(?:'re| are) finished|afterwards|at the end\b(?! of "
                       r"(?:the|this) (?:month|year|week|term|period|day)))\b", re.I)
_CONDITION = re.compile(r"^\s*(?:\w+,\s*)?(?:if|unless|in case|should)\b|\bif (?:we|you|the line)\b|"
                        # a standing arrangement, not a thing to do on this call
                        r"\b(?:instead|from now on|going forward|in (?:the )?future|while you're away)\b|"
                        # "I'll send any updates by email": a way of keeping in touch
                        r"\b(?:send|email|text|message) (?:you )?(?:any |all )?(?:updates|news|"
                        r"anything|everything (?:by|through|via))\b|"
                        # "I'll send letters only to the address we confirm today": a rule for
                        # what gets sent, not a thing to send
                        r"\b(?:send|email|text|mail|message) \w+ only (?:to|by|via)\b",
                        re.I)
# "The moment they come back with an answer, I'll send you an email.": after the call
_LATER_EVENT = re.compile(r"^\s*(?:the moment|when|once|as soon as|whenever)\b", re.I)
_DONE_VERB = re.compile(r"\bI(?:'ve| have)? (?:just |also |now )?(?:sent|emailed|e-mailed|texted|"
                        r"messaged|forwarded|mailed|booked|added|set up|noted|updated|passed|put|"
                        r"scheduled|arranged|requested|submitted|made)\b|\b(?:is|are|has been|have "
                        r"been) (?:on (?:its|their) way|sent|booked|added|set up|noted)\b", re.I)
_FOLLOW_UP = re.compile(r"\bas promised\b|\bas I said I would\b|\b(?:your|that) other "
                        r"(?:question|request)\b|\bfrom earlier\b|\byou (?:also )?asked (?:earlier )?about\b|"
                        r"\bbefore I forget\b|\blike I said earlier\b|\bhaven't forgotten\b|"
                        r"\byour question (?:about|on)\b", re.I)
# words that name no particular thing promised
_GENERIC = content_words("send email text message you your the details link info information "
                         "steps after this call once done finish finished right now today end")


def _promises(text: str) -> list[str]:
    out = []
    for a, b in sentences(text):
        s = text[a:b].strip()
        if (_WILL_SEND.search(s) or _DEFERRED.search(s)) and not _CONDITION.search(s) and not (
                _LATER_EVENT.search(s) and not _DEFERRED.search(s)):
            out.append(s)
    return out


def _kept(promise: str, later: list[str]) -> bool:
    named = content_words(promise) - _GENERIC
    for text in later:
        for a, b in sentences(text):
            s = text[a:b]
            if _FOLLOW_UP.search(s):
                return True
            if _DONE_VERB.search(s) and (not named or content_words(s) & named):
                return True
    return False


@check("promise_kept")
def promise_kept(conv: Conversation) -> list[Verdict]:
    if conv.outcome not in (None, "resolved"):
        return []               # handed over or cut short: the rest goes with it
    out = []
    msgs = conv.messages
    for pos, a in enumerate(msgs[:-2]):
        it = a.interruption
        if it is None or it.type not in ("topic_switch", "normal"):
            continue
        reply = msgs[pos + 2] if msgs[pos + 1].role == "user" and msgs[pos + 2].role == "assistant" \
            else None
        if reply is None:
            continue
        text = reply.spoken_text
        later = [m.spoken_text for m in msgs[pos + 3:] if m.role == "assistant"]
        cut = content_words(a.text)             # the interrupted turn, resumed in the reply:
        for p in _promises(text):               # its own promises are the workflow's, not
            own = content_words(p)              # an answer to the cut-in
            if own and 2 * len(own & cut) >= len(own):
                continue
            if not _kept(p, later):
                out.append(_verdict("promise_kept", reply.index,
                                    f"the agent promises {p[:90]!r} and the call ends without it "
                                    "done or offered again",
                                    evidence=f"message {reply.index}: {p!r}", fixable=False))
                break
    return out
