"""``side_request_answered``: a topic-switch cut-in (the caller breaks in with a side request)
is not answered by the cut turn said again.

Seen on an LLM-written call the verifier accepted: "can I save a second delivery address for my
office?" and "do you deliver to PO boxes?", each followed by the interrupted turn word for word.
The rule reads the conversation only (the caller's words, the interrupted turn, the reply),
never a writer's banks or plan, so offline and LLM conversations are judged alike. A reply (the
next assistant turn, and the gold recovery) is flagged when both hold:

- it names none of the request's own words: the caller's content words less the glue of a
  cut-in ("oh, quick one, while I have you") and less what they had just heard;
- none of its sentences says anything new: every sentence has fewer than two content words
  outside the interrupted turn's planned text (an acknowledgement, then the turn again).

The second condition is what keeps an answer in other words ("why did my bill go up?" -
"That increase is the annual equipment fee.") from being flagged: word overlap alone cannot
tell a paraphrased answer from none.
"""

from __future__ import annotations

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check, replies_to
from bargein.verify.text import content_words, sentences

# how a side request opens and asks, naming no topic ("Oh, totally different question, can I
# ... while I'm here?"): not a subject the reply has to name
_ASKING = content_words("quick one question different totally unrelated random another thing "
                        "while have you I'm here on line also actually ask wondering wonder "
                        "change switch topic off before forget something else")


def _says_something_new(text: str, planned: frozenset[str]) -> bool:
    return any(len(content_words(text[s:e]) - planned) >= 2 for s, e in sentences(text))


@check("side_request_answered")
def side_request_answered(conv: Conversation) -> list[Verdict]:
    out = []
    msgs = conv.messages
    for pos, a in enumerate(msgs[:-1]):
        it = a.interruption
        if it is None or it.type != "topic_switch" or msgs[pos + 1].role != "user":
            continue
        u = msgs[pos + 1]
        asked = content_words(u.text) - content_words(a.heard_text or "") - _ASKING
        if not asked:           # nothing nameable to take up: no judgement
            continue
        planned = content_words(a.text)
        for where, text in replies_to(conv, pos + 1):
            if not content_words(text) & asked and not _says_something_new(text, planned):
                out.append(_verdict("side_request_answered", u.index,
                                    "the caller's side request is answered by the cut turn said "
                                    f"again ({where})",
                                    evidence=f"caller {u.text!r}; {where} {text[:160]!r}",
                                    fixable=False))
                break
    return out
