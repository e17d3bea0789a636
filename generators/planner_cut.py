"""Where a cut-in falls in an assistant turn, and how the cut turn starts again.

:func:`place_cut` picks the word the caller cuts in at (inside the content, away from both
ends, never splitting a value unless nothing else fits); :func:`resume_text` is the content
said afresh from the start of the sentence that was cut; :func:`unheard_question` is the last
question the caller did not hear.
"""

from __future__ import annotations

import random
import re

from bargein.generators import phrases as P
from bargein.generators.plan_state import EDGE_WORDS, Recovery


# a request put to the caller as a statement: "Please let me know now if anything about your
# insurance has changed." asks as a question does (a hand read of seed 7070: skipped past)
_ASKS = re.compile(r"^\W*(?:and\s+)?(?:please\s+)?(?:let me know|tell me|confirm|read me|give me)\b", re.I)


def asks_caller(sentence: str) -> bool:
    """A question, or a request the caller answers ("Please let me know if ...")."""
    return sentence.rstrip().endswith("?") or bool(_ASKS.match(sentence))


def unheard_question(text: str, heard_chars: int) -> str:
    """The last question (or request put to the caller) of ``text`` that starts after the first
    ``heard_chars`` characters; '' when every question was heard or there is none."""
    sents = [(m.start(), m.end()) for m in re.finditer(r"[^.?!]+[.?!]+", text)]
    qs = [text[a:b].strip() for a, b in sents if asks_caller(text[a:b].strip()) and a >= heard_chars]
    return qs[-1] if qs else ""



# a sentence whose first clause points back ("When those match, ...", "Once that's done, ...",
# "If they don't arrive, ..."): its antecedent is in the sentence before, so a resumption starts there
_ANAPHOR_LEAD = re.compile(r"(?:[A-Za-z']+,?\s+){0,3}?(?:those|these|they|them|it|it's|its|that's|"
                           r"this|both|either|each)\b(?![- ](?:way|time|point|means|one of))", re.I)
_GREETING_SENT = re.compile(r"(?:hi|hello|good (?:morning|afternoon|evening)|thanks?(?: you)? for "
                            r"(?:calling|ringing|reaching out|contacting)|you've reached|welcome)\b"
                            r"[^.!?]*[.!?](?:\s+|$)", re.I)
# a clause boundary a resumption can start at: the joined clause stands alone without its
# conjunction ("..., so | we can add a profile" -> "We can add a profile"): a subject and its
# verb follow, never a noun phrase of a list ("bank access, and | last year's return") nor a
# clause that points back ("and it's ...") or hangs on the one before ("which", "because")
_CLAUSE_JOIN = re.compile(r",\s+(?:and|so|but)\s+(?=(?:I|I'll|I've|I'm|I'd|we|we'll|we've|we're|"
                          r"you|you'll|you've|you're|he|she|(?:the|your|our) \w+(?: \w+)? (?:is|are|"
                          r"will|has|have|was|can|goes|comes|stays|takes))\b)")
_ABBREV_END = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|St|No|Ave|Blvd|Apt|Inc|Ltd|Co|Jr|Sr|vs|etc|[A-Z])\.$")


def _sentence_end_before(text: str, pos: int) -> int:
    """Index of the last ". ", "? " or "! " before ``pos`` that ends a sentence ("Dr. Taylor"
    does not), or -1."""
    i = pos
    while True:
        i = max(text.rfind(". ", 0, i), text.rfind("? ", 0, i), text.rfind("! ", 0, i))
        if i < 0 or text[i] != "." or not _ABBREV_END.search(text[:i + 1]):
            return i


def resume_text(text: str, rec: Recovery) -> str:
    """A fresh start: the cut content again from the start of the sentence that was cut."""
    local = max(0, len(rec.heard_text) - rec.content_start)
    start = 0
    # from ``local`` itself: a cut right after a full stop leaves the sentence it ends heard whole
    # ("... at 3:00 PM. | After the meeting ..." resumes at "After"; a hand read of seed 8585)
    for i in range(min(local, len(text) - 1), 0, -1):
        if text[i] == " " and text[i - 1] in ".!?" and not _ABBREV_END.search(text[:i]):
            start = i + 1
            break
    clause = False
    end = re.search(r"[.!?](?:\s|$)", text[local:])
    sent_end = local + end.end() if end else len(text)
    if not text[start:sent_end].rstrip().endswith("?"):
        # the cut fell in a later clause of a statement ("Your plan allows five profiles, and
        # you have room for one more, so we can | add ..."): the clause that was cut is said
        # again, not the whole sentence the caller heard most of (a hand read of seed 7373)
        joins = [m for m in _CLAUSE_JOIN.finditer(text, start, max(start, local - 1))
                 if P.n_words(text[start:m.start()]) >= 5]
        if joins:
            start, clause = joins[-1].end(), True
    q = text[start:]
    if start and q.rstrip().endswith("?") and (P.n_words(q) < 6 or (
            P.n_words(q) < 9 and re.match(r"\W*(?:does|is|did|have|are|was|do|can you confirm)\b"
                                          r"[^?]*\b(?:that|this|it|everything|all)\b", q, re.I))):
        # "Did I get that right?" alone after a recovery: say what it asks about again
        prev = _sentence_end_before(text, start - 1)   # not a colon: "what I wrote down: 12 Elm
        start = prev + 2 if prev >= 0 else 0           # St" starts with its lead-in
    if "?" not in text[start:] and "?" in text[:start]:
        # the question was heard but the cut fell after it (in a reason): ask it again
        q = text.rfind("?", 0, start)
        prev = max(text.rfind(". ", 0, q), text.rfind("? ", 0, q), text.rfind("! ", 0, q))
        start = prev + 2 if prev >= 0 else 0
    if start and (re.match(r"(?:It|It's|That|That's|This|They|They'll|They're|Keep it|Keep them)\b",
                           text[start:]) or _ANAPHOR_LEAD.match(text[start:])):
        # "Keep it until ..." needs the sentence that says what "it" is ("Dr. Payne" is no end)
        prev = 0
        for i in range(start - 2, 0, -1):
            if text[i] == " " and text[i - 1] in ".!?" and not _ABBREV_END.search(text[:i]):
                prev = i + 1
                break
        start = prev
    out = text[start:].strip() or text
    if clause:
        out = out[:1].upper() + out[1:]
    while True:                             # the greeting is not said twice ("Thank you for
        m = _GREETING_SENT.match(out)       # calling ..." again after a side question)
        if not m or not out[m.end():].strip():
            break
        out = out[m.end():].strip()
    if re.match(r"(?:Alternatively|Instead|Otherwise|Also),\s+\S", out) and start:
        out = out.split(",", 1)[1].strip()  # its contrast was in the sentence before
        out = out[:1].upper() + out[1:]
    return out



_JOINERS = frozenset("and but so because which then or if when while since though although".split())


def place_cut(text: str, content_start: int, fraction: float, rng: random.Random,
              min_word: int = 0, protected: set[int] | frozenset[int] = frozenset(),
              at_boundary: bool = False, max_word: int | None = None) -> int | None:
    """A word index ``k`` inside the content: >= 3 content words heard, >= 3 words unheard.

    Prefers cuts inside a sentence (the heard part does not end with punctuation), nearest to
    ``fraction`` of the content; ``min_word`` forces the heard part to include a given word;
    ``protected``: cuts that would split a name, a date or a value (unless nothing else fits).
    """
    spans = P.word_spans(text)
    first = next((i for i, (s, _) in enumerate(spans) if s >= content_start), len(spans))
    lo = max(first + EDGE_WORDS, min_word, EDGE_WORDS)
    hi = len(spans) - EDGE_WORDS
    if max_word is not None:            # ``max_word``: the heard part must end by that word
        hi = min(hi, max_word)
    if lo > hi:
        return None
    cands = [k for k in range(lo, hi + 1) if k not in protected] or list(range(lo, hi + 1))
    if at_boundary:
        # a question heard whole is answered, never nodded at: "Could I get the student ID
        # number? It's on the card | Yep." leaves it unanswered (the nod comes before it)
        cands = [k for k in cands if "?" not in text[content_start:spans[k - 1][1]]]
        # a backchannel lands where a listener nods: after a clause or a sentence ("..., |" or
        # "| and ..."), never between a determiner and its noun or a verb and its particle
        edge = [k for k in cands if (text[spans[k - 1][1] - 1] in ".!,:;"
                or text[spans[k][0]:spans[k][1]].lower().strip(",.") in _JOINERS)
                and text[spans[k - 1][1] - 1] != "?"   # a question heard whole is answered,
                and len(spans) - k >= 6     # not nodded at; the rest is more than a stock "Shall I do that?"
                and not _in_question(text, spans[k - 1][1])]
        if not edge:                    # a clause edge with a short rest, else no cut inside
            edge = [k for k in cands if text[spans[k - 1][1] - 1] in ".!,:;"   # a noun phrase
                    and not _in_question(text, spans[k - 1][1])]
        if not edge:                    # no clause edge: no nod in the middle of a clause
            return None
        cands = edge
    else:
        inner = [k for k in cands if text[spans[k - 1][1] - 1] not in ".!?,:;"]
        cands = inner or cands
    target = first + fraction * (len(spans) - first)
    cands.sort(key=lambda k: (abs(k - target), k))
    return cands[0] if rng.random() < 0.7 or len(cands) == 1 else cands[1]


def _in_question(text: str, cut: int) -> bool:
    """The cut at ``cut`` falls inside a question: "Are you the patient, | or ..." -- a nod
    there ("Sure.") reads as the answer (a hand read of seed 8585)."""
    if text[:cut].rstrip()[-1:] in (".", "!", "?"):
        return False
    end = re.search(r"[.?!](?=\s|$)", text[cut:])
    return bool(end) and end.group() == "?"


def impatient_cuts(message: str, content_start: int, values: tuple[str, ...] = ()) -> list[int]:
    """Cut points where an impatient caller has something to skip: not inside a question, and
    at least five content words of explanation (not questions) still to come; never inside a
    name, a date, an amount or one of ``values``."""
    from bargein.verify.text import content_words as v_content_words
    from bargein.verify.text import sentences

    spans = P.word_spans(message)
    first = P.n_words(message[:content_start])
    # something must have been said already: the content's first sentence, or 10 of its words
    opening = sentences(message[content_start:])
    heard_from = content_start + opening[0][1] if opening else 0
    out = []
    protected = P.protected_cuts(message, values)
    for k in range(max(first + EDGE_WORDS, EDGE_WORDS), len(spans) - EDGE_WORDS + 1):
        if k in protected:
            continue
        cut = spans[k - 1][1]
        if not ((cut >= heard_from and k - first >= 6) or k - first >= 10):
            continue                    # "I can help you cancel. | I get it. Next step?" (a hand
                                        # read): a first sentence of 6+ words heard, or 10 words
        if "?" in message[content_start:cut]:
            continue                    # a question heard whole is answered, not skipped ("do
                                        # you have a preferred time? | Skip the explanation")
        sent = next((message[a:b] for a, b in sentences(message) if a <= cut <= b), "")
        if sent.rstrip().endswith("?"):
            continue
        rest = message[cut:]
        told = [rest[a:b] for a, b in sentences(rest) if not asks_caller(rest[a:b].strip())]
        if sum(len(v_content_words(x)) for x in told) >= 5:
            out.append(k)
    return out
