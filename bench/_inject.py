"""Seeded defects for the verifier-recall benchmark (and clean look-alikes for false positives).

Each injector takes a verified conversation and a seeded RNG and returns ``(conversation, message
index or None)`` with one defect of its kind written as a person would make it — its own wording
lists, not the verifier's patterns — or ``None`` when the conversation has no site for it. Each
``clean_*`` twin makes a similar-looking edit that is *not* a defect (a pushback on a real fee, a
"you said" the caller did say), so the false-positive rate is measured on hard cases.
"""

from __future__ import annotations

import random
import re

from bargein.records import Conversation, Interruption, Message, Rubric

WORD = re.compile(r"\S+")
VERBISH = re.compile(r"^[a-z]+(?:ed|ing|ly)$")
_COMMON_VERBS = {"take", "takes", "arrive", "explain", "check", "send", "keep", "make", "help", "start",
                 "move", "look", "need", "sure", "able", "quick", "really", "first", "also", "just"}


def _msgs(conv: Conversation) -> list[Message]:
    return list(conv.messages)


def _with(conv: Conversation, msgs: list[Message], **kw) -> Conversation:
    return conv.with_(messages=tuple(msgs), **kw)


def _set_user(msgs: list[Message], i: int, text: str) -> None:
    msgs[i] = msgs[i].with_(text=text)
    prev = msgs[i - 1]
    if prev.interruption is not None:
        msgs[i - 1] = prev.with_(interruption=prev.interruption.with_(interjection=text))


def _cut(m: Message, k: int, itype: str | None = None, interjection: str | None = None) -> Message:
    spans = [x.span() for x in WORD.finditer(m.text)]
    heard = m.text[: spans[k - 1][1]]
    itr = m.interruption
    itr = itr.with_(cut_word_index=k, cut_char_offset=len(heard), heard_text=heard,
                    type=itype or itr.type, interjection=interjection or itr.interjection)
    return m.with_(heard_text=heard, interruption=itr)


def _pairs(conv: Conversation, itype: str | None = None) -> list[int]:
    return [u.index for m, u in conv.interruptions if itype is None or m.interruption.type == itype]


# ---- 1. pushback on a fragment / not objecting ------------------------------------------------
FRAGMENT_PUSHBACK = [
    "Hang on, why {frag}? I never asked for that.",
    "{Frag}?? What do you mean {frag}, that's not okay.",
    "Wait wait, {frag}, no, I don't think so.",
    "Sorry but {frag} doesn't sound right to me at all.",
    "Um, {frag}? Nobody said anything about {frag} before.",
    "Excuse me, {frag}? I'm not comfortable with that.",
]
AGREEABLE = ["Oh great, go ahead then.", "Perfect, that's exactly what I wanted.",
             "Okay good, please carry on with that.", "Lovely, thanks for explaining."]


def pushback_fragment(conv: Conversation, rng: random.Random):
    sites = _pairs(conv, "pushback")
    if not sites:
        return None
    i = rng.choice(sites)
    msgs = _msgs(conv)
    heard = msgs[i - 1].heard_text or ""
    words = [w.strip(".,;:?!").lower() for w in heard.split()[-14:]]
    cands = [w for w in words if (VERBISH.match(w) or w in _COMMON_VERBS) and len(w) > 3]
    if rng.random() < 0.25 or not cands:
        text = rng.choice(AGREEABLE)
    else:
        w = rng.choice(cands)
        frag = w if rng.random() < 0.5 else f"that {w}"
        text = rng.choice(FRAGMENT_PUSHBACK).format(frag=frag, Frag=frag[:1].upper() + frag[1:])
    _set_user(msgs, i, text)
    return _with(conv, msgs), i


def clean_pushback(conv: Conversation, rng: random.Random):
    for i in rng.sample(_pairs(conv), len(_pairs(conv))):
        msgs = _msgs(conv)
        heard = msgs[i - 1].heard_text or ""
        money = re.findall(r"\$\d[\d,.]*\d|\$\d", heard)
        labels = [f.key.replace("_", " ") for f in conv.scenario.kb.user_facts
                  if re.search(rf"\b{re.escape(f.key.replace('_', ' '))}\b", heard.lower())]
        if money:
            text = rng.choice(["Excuse me, {x}? I'm not okay with that.", "{x}? That's way more "
                               "than I was quoted.", "Sorry, I won't pay {x} for this."]).format(
                x=money[-1])
        elif labels:
            text = rng.choice(["Why do you need my {x}?", "I'd rather not give my {x} out.",
                               "Hold on, I don't want to share my {x}."]).format(x=labels[-1])
        else:
            continue
        msgs[i - 1] = msgs[i - 1].with_(interruption=msgs[i - 1].interruption.with_(type="pushback"))
        _set_user(msgs, i, text[:1].upper() + text[1:])
        return _fix_rubric(_with(conv, msgs), i, "pushback"), i
    return None


def _fix_rubric(conv: Conversation, i: int, itype: str) -> Conversation:
    rs = tuple(r.with_(type=itype) if r.message_index == i else r for r in conv.rubrics)
    return conv.with_(rubrics=rs)


# ---- 2. impatient with nothing to skip -----------------------------------------------------
IMPATIENT = ["Yeah yeah, skip it.", "Okay I know, just move on please.", "Can you hurry up a bit?",
             "Alright, alright, get to the point.", "I don't need all this, next.",
             "Please, faster, I'm in the car."]


def impatient_in_question(conv: Conversation, rng: random.Random):
    sites = [u.index for m, u in conv.interruptions if m.interruption.type != "filler"]
    rng.shuffle(sites)
    for i in sites:
        msgs = _msgs(conv)
        m = msgs[i - 1]
        qs = [x for x in re.finditer(r"[^.?!]*\?", m.text) if len(x.group(0).split()) >= 5]
        if not qs:
            continue
        q = qs[-1]
        spans = [x.span() for x in WORD.finditer(m.text)]
        inside = [k for k, (s, e) in enumerate(spans, 1)
                  if q.start() + 4 < e < q.end() - 3 and k >= 3]
        if not inside:
            continue
        k = rng.choice(inside)
        text = rng.choice(IMPATIENT)
        msgs[i - 1] = _cut(m, k, "impatient", text)
        msgs[i] = msgs[i].with_(text=text)
        return _fix_rubric(_with(conv, msgs), i, "impatient"), i
    return None


def clean_impatient(conv: Conversation, rng: random.Random):
    for i in rng.sample(_pairs(conv), len(_pairs(conv))):
        msgs = _msgs(conv)
        m = msgs[i - 1]
        spans = [x.span() for x in WORD.finditer(m.text)]
        first_q = m.text.find("?")
        # early in a long statement: at least 12 words of statement still to come
        cands = [k for k, (s, e) in enumerate(spans, 1) if k >= 3 and m.text[e - 1] not in ".?!,"
                 and (first_q < 0 or e < first_q) and
                 len(re.sub(r"[^.?!]*\?", "", m.text[e:]).split()) >= 12]
        if not cands:
            continue
        sentence_q = [x for x in re.finditer(r"[^.?!]*[.?!]", m.text)]
        cands = [k for k in cands if not any(x.group(0).endswith("?") and x.start() <= spans[k - 1][1]
                                             <= x.end() for x in sentence_q)]
        if not cands:
            continue
        k = cands[0]
        text = rng.choice(IMPATIENT)
        msgs[i - 1] = _cut(m, k, "impatient", text)
        msgs[i] = msgs[i].with_(text=text)
        return _fix_rubric(_with(conv, msgs), i, "impatient"), i
    return None


# ---- 3. casing and agreement ---------------------------------------------------------------
def _grammar_edit(text: str, rng: random.Random) -> str | None:
    ops = ["lower_sentence", "lower_i", "i_has", "i_needs", "you_is", "a_an", "double"]
    rng.shuffle(ops)
    for op in ops:
        if op == "lower_sentence":
            ms = [m for m in re.finditer(r"(?<=[.?!] )([A-Z])(?=[a-z])", text)]
            if ms:
                m = rng.choice(ms)
                return text[:m.start()] + m.group(1).lower() + text[m.end():]
        elif op == "lower_i":
            ms = list(re.finditer(r"\bI(?=('m|'ve|'ll| ))", text))
            if ms:
                m = rng.choice(ms)
                return text[:m.start()] + "i" + text[m.end():]
        elif op == "i_has" and re.search(r"\bI have\b", text):
            return re.sub(r"\bI have\b", "I has", text, count=1)
        elif op == "i_needs":
            m = re.search(r"\bI (need|want|work|live|share|use)\b", text)
            if m:
                return text[:m.start(1)] + m.group(1) + "s" + text[m.end(1):]
        elif op == "you_is":
            m = re.search(r"\b(you|we|they) (are|have)\b", text)
            if m:
                return text[:m.start(2)] + {"are": "is", "have": "has"}[m.group(2)] + text[m.end(2):]
        elif op == "a_an":
            m = re.search(r"\ban ([aeiou]\w+)", text)
            if m:
                return text[:m.start()] + "a " + m.group(1) + text[m.end():]
            m = re.search(r"\ba ([bcdfgjklmnpqrstvwz]\w+)", text)
            if m:
                return text[:m.start()] + "an " + m.group(1) + text[m.end():]
        elif op == "double":
            m = re.search(r"\b(the|to|your) ", text)
            if m:
                return text[:m.end()] + m.group(1) + " " + text[m.end():]
    return None


def grammar(conv: Conversation, rng: random.Random):
    idx = list(range(len(conv.messages)))
    rng.shuffle(idx)
    for i in idx:
        m = conv.messages[i]
        if m.interruption is not None:
            continue
        new = _grammar_edit(m.text, rng)
        if new and new != m.text:
            msgs = _msgs(conv)
            if m.role == "user":
                _set_user(msgs, i, new)
            else:
                msgs[i] = m.with_(text=new)
            return _with(conv, msgs), i
    return None


NEAR_MISS = ["That takes about an hour, e.g. for a one-time setup on an iPhone.",
             "It's a unique code, and a user can reset it in an hour.",
             "Do they have a copy? If so, we can use it.",
             "You can do it at 9 a.m. tomorrow, or we can call an hour later."]


def clean_grammar(conv: Conversation, rng: random.Random):
    idx = [i for i, m in enumerate(conv.messages) if m.role == "assistant" and m.interruption is None
           and i > 0]
    if not idx:
        return None
    i = rng.choice(idx)
    msgs = _msgs(conv)
    msgs[i] = msgs[i].with_(text=f"{msgs[i].text} {rng.choice(NEAR_MISS)}")
    return _with(conv, msgs), i


# ---- 4. "you said" about things never said -------------------------------------------------
NEVER_SAID = ["you were moving abroad next month", "the payment had already gone through twice",
              "your neighbour had the same problem", "you'd prefer a paper copy by post",
              "the technician never showed up last week", "your sister handles the billing",
              "it started after the last software update", "you were charged a late fee in March"]
ATTR_FORMS = ["You mentioned {x}.", "As you said, {x}.", "Since you told me {x}, I'll note that.",
              "And you said {x}, right?", "Earlier you mentioned that {x}."]


def attribution(conv: Conversation, rng: random.Random):
    idx = [i for i, m in enumerate(conv.messages) if m.role == "assistant" and i >= 4
           and m.interruption is None]
    if not idx:
        return None
    i = rng.choice(idx)
    said = " ".join(m.text.lower() for m in conv.messages[:i] if m.role == "user")
    options = [x for x in NEVER_SAID if not any(w in said for w in x.split()[-2:])]
    x = rng.choice(options or NEVER_SAID)
    msgs = _msgs(conv)
    msgs[i] = msgs[i].with_(text=f"{rng.choice(ATTR_FORMS).format(x=x)} {msgs[i].text}")
    return _with(conv, msgs), i


def clean_attribution(conv: Conversation, rng: random.Random):
    idx = [i for i, m in enumerate(conv.messages) if m.role == "assistant" and i >= 4
           and m.interruption is None]
    rng.shuffle(idx)
    for i in idx:
        clauses = [c.strip() for m in conv.messages[:i] if m.role == "user"
                   for c in re.split(r"[.?!,]", m.text) if len(c.split()) >= 5]
        clauses = [c for c in clauses if re.match(r"^(I|my|I'm|I've)\b", c)]
        if not clauses:
            continue
        c = rng.choice(clauses)
        c = re.sub(r"^I'm\b", "you're", c)
        c = re.sub(r"^I've\b", "you've", c)
        c = re.sub(r"^I\b", "you", c)
        c = re.sub(r"\bmy\b", "your", c)
        msgs = _msgs(conv)
        msgs[i] = msgs[i].with_(text=f"You mentioned that {c}. {msgs[i].text}")
        return _with(conv, msgs), i
    return None


# ---- 5. a volunteered hidden fact the next turn ignores -------------------------------------
def _mine(value: str) -> str:
    v = value.rstrip(".")
    v = re.sub(r"\btheir\b", "my", v)
    v = re.sub(r"^is\b", "I'm", v)
    v = re.sub(r"^has\b", "I have", v)
    v = re.sub(r"\band is\b", "and I'm", v)
    if not v.startswith("I"):
        v = "I " + re.sub(r"^(\w+?)s\b", r"\1", v)
    return v


def _user_reply_sites(conv: Conversation) -> list[int]:
    ms = conv.messages
    return [i for i, m in enumerate(ms) if m.role == "user" and i + 1 < len(ms)
            and ms[i + 1].role == "assistant" and ms[i - 1].interruption is None and i > 2]


def _fresh(conv: Conversation, f, i: int) -> bool:
    """The fact was not talked about up to the reply at ``i + 1`` (a second volunteering of a
    fact already taken up is no site: its acknowledgement came before)."""
    words = set(re.findall(r"[a-z]{4,}", f.value.lower()))
    said = set(re.findall(r"[a-z]{4,}", " ".join(m.text for m in conv.messages[: i + 2]).lower()))
    return not words or len(words & said) * 2 < len(words)


def hidden_ignored(conv: Conversation, rng: random.Random):
    facts = list(conv.scenario.intent.hidden_facts)
    sites = [i for i in _user_reply_sites(conv) if conv.messages[i + 1].interruption is None]
    if not facts or not sites:
        return None
    f, i = rng.choice(facts), rng.choice(sites)
    if not _fresh(conv, f, i):
        return None
    msgs = _msgs(conv)
    lead = rng.choice(["Oh, and one more thing,", "Also, just so you're aware,", "By the by,",
                       "Oh, I should say,"])
    _set_user(msgs, i, f"{msgs[i].text} {lead} {_mine(f.value)}.")
    nxt = msgs[i + 1]
    drop = {w for w in re.findall(r"[a-z]{4,}", f.value.lower())}
    kept = [s for s in re.split(r"(?<=[.?!])\s+", nxt.text)
            if not drop & set(re.findall(r"[a-z]{4,}", s.lower()))]
    if not kept:
        return None
    msgs[i + 1] = nxt.with_(text=" ".join([rng.choice(["Okay.", "Alright, noted.", "Sure."]),
                                            *kept]))
    return _with(conv, msgs), i + 1


def clean_hidden(conv: Conversation, rng: random.Random):
    facts = list(conv.scenario.intent.hidden_facts)
    sites = [i for i in _user_reply_sites(conv) if conv.messages[i + 1].interruption is None]
    if not facts or not sites:
        return None
    f, i = rng.choice(facts), rng.choice(sites)
    if not _fresh(conv, f, i):
        return None
    msgs = _msgs(conv)
    _set_user(msgs, i, f"{msgs[i].text} Oh, and {_mine(f.value)}.")
    you = _mine(f.value).replace("I'm", "you're").replace("I ", "you ").replace(" my ", " your ")
    msgs[i + 1] = msgs[i + 1].with_(text=f"Thanks, I've noted that {you}. {msgs[i + 1].text}")
    return _with(conv, msgs), i + 1


# ---- 6. the caller states a value only the system holds -------------------------------------
def system_value(conv: Conversation, rng: random.Random, keys: frozenset[str]):
    facts = [f for f in conv.scenario.kb.user_facts if f.key in keys]
    sites = _user_reply_sites(conv)
    if not facts or not sites:
        return None
    f, i = rng.choice(facts), rng.choice(sites)
    lab = f.key.replace("_", " ")
    msgs = _msgs(conv)
    form = rng.choice(["Also the {l} is {v}, by the way.", "Oh and I think my {l} was {v}.",
                       "Actually, the {l} should be something else, not what you have.",
                       "For what it's worth, {v} is the {l}."])
    _set_user(msgs, i, f"{msgs[i].text} {form.format(l=lab, v=f.spoken or f.value)}")
    return _with(conv, msgs), i


# ---- 7. resolved without the final stage ----------------------------------------------------
def resolved_early(conv: Conversation, rng: random.Random, finals: set[str]):
    ms = conv.messages
    first_final = next((i for i, m in enumerate(ms) if m.stage in finals), None)
    stop = first_final if first_final is not None else len(ms) - 2
    if stop < 8:
        return None
    stop = rng.randint(max(6, stop - 6), stop)
    if ms[stop - 1].role != "user":
        stop -= 1
    msgs = [m for m in ms[:stop] if True]
    if msgs[-1].interruption is not None or (len(msgs) > 1 and msgs[-2].interruption is not None):
        msgs = msgs[:-2]
    msgs.append(Message(index=len(msgs), role="assistant", text=rng.choice(
        ["All sorted then, have a good day.", "Great, you're all set. Goodbye!",
         "That's everything, thanks for calling."])))
    keep = {u.index for m, u in Conversation.model_construct(messages=tuple(msgs)).interruptions} \
        if False else None
    idx = {m.index for m in msgs}
    conv2 = conv.with_(messages=tuple(msgs), outcome="resolved",
                       rubrics=tuple(r for r in conv.rubrics if r.message_index in idx),
                       gold_recoveries={k: v for k, v in conv.gold_recoveries.items() if k in idx})
    del keep
    return conv2, None


# ---- 8. TF criterion asking for what was given ----------------------------------------------
TF_FORMS = ["The response asks the caller for their {l} so the request can continue.",
            "Next, the assistant should ask the caller to provide their {l}.",
            "The reply requests the caller's {l} before moving on.",
            "The response asks for the {l} to continue.",
            "The assistant asks the caller to confirm the {l} again."]


def tf_given(conv: Conversation, rng: random.Random):
    rubrics = list(conv.rubrics)
    rng.shuffle(rubrics)
    for r in rubrics:
        said = " ".join(m.spoken_text.lower() for m in conv.messages[: r.message_index + 1])
        given = [f for f in conv.scenario.kb.user_facts
                 if any(v and v.lower() in said for v in (f.value, f.spoken))]
        if not given:
            continue
        f = rng.choice(given)
        tf = rng.choice(TF_FORMS).format(l=f.key.replace("_", " "))
        rs = tuple(x.with_(tf_criterion=tf) if x.message_index == r.message_index else x
                   for x in conv.rubrics)
        return conv.with_(rubrics=rs), r.message_index
    return None


def clean_tf(conv: Conversation, rng: random.Random):
    rubrics = list(conv.rubrics)
    rng.shuffle(rubrics)
    for r in rubrics:
        said = " ".join(m.spoken_text.lower() for m in conv.messages)
        new = [f for f in conv.scenario.kb.user_facts
               if not any(v and v.lower() in said for v in (f.value, f.spoken))]
        if not new:
            continue
        f = rng.choice(new)
        tf = rng.choice(TF_FORMS).format(l=f.key.replace("_", " "))
        rs = tuple(x.with_(tf_criterion=tf) if x.message_index == r.message_index else x
                   for x in conv.rubrics)
        return conv.with_(rubrics=rs), r.message_index
    return None


# ---- 9. RQ criterion quoting a fragment -----------------------------------------------------
RQ_FORMS = ["Addresses the caller's worry about \"{f}\".", "Engages with the concern ({f}).",
            "Responds to what the caller said (\"{f}\").", "Picks up the caller's point about {f}, "
            "quoted as \"{f}\"."]
_FN = {"the", "a", "to", "of", "and", "with", "for", "your", "my", "is", "that", "on", "in", "at"}


def rq_fragment(conv: Conversation, rng: random.Random):
    rubrics = list(conv.rubrics)
    rng.shuffle(rubrics)
    for r in rubrics:
        src = conv.messages[r.message_index - 1].heard_text or conv.messages[r.message_index].text
        toks = src.split()
        # a window that stops inside a phrase: it ends on a function word, or begins mid-phrase
        ends = [j for j in range(2, len(toks)) if toks[j - 1].lower().strip(",.") in _FN
                and not toks[j - 1].endswith((",", "."))]
        if not ends:
            continue
        j = rng.choice(ends)
        n = rng.randint(2, 4)
        frag = " ".join(toks[max(0, j - n):j]).strip(",.?!")
        if len(frag.split()) < 2:
            continue
        crit = list(r.rq_criteria)
        crit[rng.randrange(len(crit))] = rng.choice(RQ_FORMS).format(f=frag)
        rs = tuple(x.with_(rq_criteria=tuple(crit)) if x.message_index == r.message_index else x
                   for x in conv.rubrics)
        return conv.with_(rubrics=rs), r.message_index
    return None


def clean_rq(conv: Conversation, rng: random.Random):
    rubrics = list(conv.rubrics)
    rng.shuffle(rubrics)
    for r in rubrics:
        text = conv.messages[r.message_index].text.strip()
        crit = list(r.rq_criteria)
        crit[rng.randrange(len(crit))] = f"Responds to what the caller said (\"{text}\")."
        rs = tuple(x.with_(rq_criteria=tuple(crit)) if x.message_index == r.message_index else x
                   for x in conv.rubrics)
        return conv.with_(rubrics=rs), r.message_index
    return None


__all__ = ["Rubric", "Interruption"]
