"""Seeded defects of the second reading (and clean look-alikes) for the verifier-recall bench.

Kinds: a value presented as the caller's that they never gave, an interruption cut inside a
multi-word value, a yes/no question left unanswered, grammar slips in a gold recovery. Each
injector returns ``(conversation, index)`` or ``None`` when the conversation has no site; its
wording lists are written as the error appears in conversation, not from the checks' patterns
(several frames and replies here are deliberately absent from the checks' word lists).
"""

from __future__ import annotations

import random
import re

from bargein.records import Conversation

WORD = re.compile(r"\S+")


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


def _said_by_user(conv: Conversation, upto: int, forms: list[str]) -> bool:
    txt = " " + " ".join(_norm(m.text) for m in conv.messages[:upto] if m.role == "user") + " "
    return any(_norm(v) and f" {_norm(v)} " in txt for v in forms)


def _plain_assistant(conv: Conversation) -> list[int]:
    ms = conv.messages
    return [i for i in range(2, len(ms)) if ms[i].role == "assistant" and ms[i].interruption is None
            and ms[i - 1].interruption is None and ms[i].text[:1].isupper()]


def _facts(conv: Conversation):
    return [f for f in conv.scenario.kb.user_facts if f.value and len(f.value) >= 4]


# ---- 1. a value framed as the caller's that they never gave -----------------------------------
FRAMES = ["You mentioned your {label} is {value}.", "Let me read that back: your {label} is {value}.",
          "I've noted {value} as your {label}.", "As you told me, the {label} is {value}.",
          "So, going by what you said, the {label} is {value}.", "You said {value}, right, for the {label}.",
          "I have {value} written down for your {label}.", "From what you told me, it's {value}.",
          "So that's {value} for the {label}. Is that right?", "To confirm, you'd like {value} for the {label}."]
STATEMENTS = ["Our records show the {label} as {value}.", "On file, the {label} is {value}.",
              "The system lists {value} for the {label}."]


def _framed(conv: Conversation, rng: random.Random, said: bool, frames: list[str]):
    from bargein.verify.objects import system_keys

    sites = _plain_assistant(conv)
    rng.shuffle(sites)
    for i in sites:
        cands = [f for f in _facts(conv)
                 if _said_by_user(conv, i, [f.value, f.spoken] if f.spoken else [f.value]) == said]
        if not cands:
            continue
        f = rng.choice(cands)
        value = f.spoken if said and f.spoken and _said_by_user(conv, i, [f.spoken]) else f.value
        # a "So that's X" read-back of a value the records hold is the records said back, not
        # the caller's words: that frame is drawn only for the caller's own values
        own = [fr for fr in frames if not fr.startswith(("So ", "To confirm"))]
        usable = own if f.key in system_keys(conv.scenario) else frames
        sent = rng.choice(usable).format(label=f.key.replace("_", " "), value=value)
        msgs = list(conv.messages)
        msgs[i] = msgs[i].with_(text=f"{sent} {msgs[i].text}")
        return conv.with_(messages=tuple(msgs)), i
    return None


def presupposed(conv: Conversation, rng: random.Random):
    return _framed(conv, rng, False, FRAMES)


def clean_presupposed(conv: Conversation, rng: random.Random):
    if rng.random() < 0.5:                      # the caller did say it
        return _framed(conv, rng, True, FRAMES)
    return _framed(conv, rng, False, STATEMENTS)    # the records say it, not the caller


# ---- 2. a cut inside a multi-word value ---------------------------------------------------------
DATES = ["Tuesday, March 4, 2025", "Friday, October 17, 2025", "Monday, June 2, 2025 at 10:30 AM",
         "Thursday, January 15, 2026"]
NAMES = ["Northgate Medical Centre", "Los Angeles", "Pine Hollow Road", "Dr. Anita Brooks",
         "Silver Line Express", "New York"]
QUANT = ["14 business days", "six weeks", "45 minutes", "three months"]
CARRIERS = ["The next opening is {v}.", "That goes through {v} first.", "It usually takes {v}.",
            "I'll note {v} on the file."]


def _value_sites(conv: Conversation, text: str) -> list[tuple[int, int]]:
    """Spans of multi-word values in ``text`` by the injector's own reading: fact values of the
    scenario said there, and written dates."""
    out = []
    for f in conv.scenario.kb.user_facts:
        for v in (f.value, f.spoken):
            if v and len(v.split()) >= 2 and not re.match(r"(the|a|an) ", v):
                i = text.find(v)
                if i >= 0:
                    out.append((i, i + len(v)))
    # a date with the time said with it is one value ("Tuesday, April 8, 2025 at 1:20 PM")
    for m in re.finditer(r"\b[A-Z][a-z]+day, [A-Z][a-z]+ \d{1,2}, \d{4}(?: at \d{1,2}:\d{2} [AP]M)?",
                         text):
        out.append(m.span())
    return out


def _cut_at(m, k: int, text: str):
    spans = [x.span() for x in WORD.finditer(text)]
    heard = text[: spans[k - 1][1]]
    itr = m.interruption.with_(cut_word_index=k, cut_char_offset=len(heard), heard_text=heard)
    return m.with_(text=text, heard_text=heard, interruption=itr)


def _cut_value(conv: Conversation, rng: random.Random, inside: bool):
    sites = [u.index for m, u in conv.interruptions]
    rng.shuffle(sites)
    for i in sites:
        msgs = list(conv.messages)
        m = msgs[i - 1]
        text = m.text
        vals = _value_sites(conv, text)
        if not vals or rng.random() < 0.3:      # put one in: a sentence with a value, cut there
            v = rng.choice(DATES + NAMES + QUANT)
            text = f"{rng.choice(CARRIERS).format(v=v)} {text}"
            vals = [(text.find(v), text.find(v) + len(v))]
        s, e = rng.choice(vals)
        spans = [x.span() for x in WORD.finditer(text)]
        words_in = [k for k, (a, b) in enumerate(spans, 1) if s <= a and b <= e + 1]
        if len(words_in) < 2:
            continue
        if inside:
            k = rng.choice(words_in[:-1])
        else:
            k = words_in[-1] if rng.random() < 0.5 or words_in[0] < 2 else words_in[0] - 1
        if k >= len(spans) or k < 1:
            continue
        if not inside and any(s2 < spans[k - 1][1] < e2 - 1 for s2, e2 in vals):
            continue                         # a clean cut may not fall inside another value
        msgs[i - 1] = _cut_at(m, k, text)
        return conv.with_(messages=tuple(msgs)), i
    return None


def cut_inside(conv: Conversation, rng: random.Random):
    return _cut_value(conv, rng, True)


def clean_cut(conv: Conversation, rng: random.Random):
    return _cut_value(conv, rng, False)


# ---- 3. a yes/no question left unanswered -------------------------------------------------------
QUESTIONS = ["Does that work for you?", "Would you like me to go ahead?", "Is that okay?",
             "Shall I send that over now?", "Can I put you down for that?",
             "Have you had our email about it?", "Are you happy with that?",
             "Do you want the text reminder as well?"]
NON_ANSWERS = ["Oh, by the way, my daughter might ring later about this.",
               "I'm calling from the car park, sorry about the noise.",
               "What time do you close today?", "My neighbour had the same thing last month.",
               "Hang on, the dog is barking.", "Is it raining where you are?",
               "I was on hold for twenty minutes before this.",
               "Let me just grab a pen."]
ANSWERS = ["Yes please, go ahead.", "No, not yet.", "Sure thing.", "Nah, leave it for now.",
           "That's fine by me.", "Not right now, thanks.", "I'd rather not.", "Go for it.",
           "Yep, that's great.", "Absolutely.", "Mm, no.", "Please do."]


def _yes_no(conv: Conversation, rng: random.Random, replies: list[str]):
    ms = conv.messages
    sites = [i for i in range(1, len(ms) - 2) if ms[i].role == "assistant" and ms[i].interruption
             is None and ms[i + 1].role == "user" and ms[i + 2].role == "assistant"
             and not ms[i].text.rstrip().endswith("?") and ms[i - 1].interruption is None]
    if not sites:
        return None
    i = rng.choice(sites)
    msgs = list(ms)
    msgs[i] = msgs[i].with_(text=f"{msgs[i].text} {rng.choice(QUESTIONS)}")
    msgs[i + 1] = msgs[i + 1].with_(text=rng.choice(replies))
    return conv.with_(messages=tuple(msgs)), i + 1


def unanswered(conv: Conversation, rng: random.Random):
    return _yes_no(conv, rng, NON_ANSWERS)


def clean_answered(conv: Conversation, rng: random.Random):
    return _yes_no(conv, rng, ANSWERS)


# ---- 4. grammar slips in a gold recovery --------------------------------------------------------
SLIPS = ["I needs to check one thing first.", "I has that on the file now.",
         "I wants to make sure this is right.", "I sees the note here.",
         "We was going to send it today.", "They has the details already.",
         "I calls the depot every morning.", "I finds it on the account now."]
FINE = ["I need to check one thing first.", "I have that on the file now.",
        "She wants to make sure this is right.", "It makes sense to check.",
        "We were going to send it today.", "Dr. Patel has the details already.",
        "The team calls the depot every morning.", "I always find it on the account."]


def _gold_sites(conv: Conversation) -> list[int]:
    itype = {u.index: m.interruption.type for m, u in conv.interruptions}
    return [k for k in sorted(conv.gold_recoveries) if itype.get(k) != "filler"]


def gold_slip(conv: Conversation, rng: random.Random):
    sites = _gold_sites(conv)
    if not sites:
        return None
    k = rng.choice(sites)
    gold = conv.gold_recoveries[k]
    if rng.random() < 0.4:                      # a sentence after a period in lower case
        ms = list(re.finditer(r"(?<=[.?!] )([A-Z])(?=[a-z]+ )", gold))
        ms = [m for m in ms if m.group(1) != "I"]
        if ms:
            m = rng.choice(ms)
            new = gold[:m.start()] + m.group(1).lower() + gold[m.end():]
            return conv.with_(gold_recoveries={**conv.gold_recoveries, k: new}), k
    new = f"{gold} {rng.choice(SLIPS)}"
    return conv.with_(gold_recoveries={**conv.gold_recoveries, k: new}), k


def clean_gold(conv: Conversation, rng: random.Random):
    sites = _gold_sites(conv)
    if not sites:
        return None
    k = rng.choice(sites)
    new = f"{conv.gold_recoveries[k]} {rng.choice(FINE)}"
    return conv.with_(gold_recoveries={**conv.gold_recoveries, k: new}), k


# ---- 5. a request for a supervisor that the next turn passes over --------------------------------
ESCALATE = ["Honestly, put me through to your manager.", "I want a supervisor on the line.",
            "Could I speak with someone senior, please?", "Can you get me a real person?",
            "I need a manager for this.", "I'd like to talk to a supervisor, please."]
TAKEN_UP = ["My team leader can ring you back this afternoon about that.",
            "I'll ask a supervisor to call you back today.",
            "I can transfer you once I've noted the details.",
            "A manager isn't free right now, but I've logged your request for one.",
            "Let me escalate that for you.", "Of course, I'll get my supervisor on the line."]


def _escalation(conv: Conversation, rng: random.Random, taken_up: bool):
    ms = conv.messages
    sites = [i for i in range(1, len(ms) - 1) if ms[i].role == "user" and ms[i - 1].interruption
             is None and ms[i + 1].role == "assistant" and ms[i + 1].interruption is None
             and ms[i + 1].text[:1].isupper()]
    if not sites:
        return None
    i = rng.choice(sites)
    msgs = list(ms)
    msgs[i] = msgs[i].with_(text=f"{msgs[i].text} {rng.choice(ESCALATE)}")
    if taken_up:
        msgs[i + 1] = msgs[i + 1].with_(text=f"{rng.choice(TAKEN_UP)} {msgs[i + 1].text}")
    return conv.with_(messages=tuple(msgs)), i


def escalation_ignored(conv: Conversation, rng: random.Random):
    return _escalation(conv, rng, False)


def clean_escalation(conv: Conversation, rng: random.Random):
    return _escalation(conv, rng, True)


# ---- 6. "Is that right?" with nothing to confirm ------------------------------------------------
TAGS = ["Is that right?", "Did I get that right?", "Is that correct?", "Have I got that right?"]
EMPTY = ["Let's move on to the next part.", "Now for the next step.", "Okay, let's see here.",
         "What's the reason for the call today?", "Which of these suits you best?",
         "Bear with me a moment."]


def _tag(conv: Conversation, rng: random.Random, clean: bool):
    sites = _plain_assistant(conv)
    if not sites:
        return None
    i = rng.choice(sites)
    if clean:
        facts = _facts(conv)
        if not facts:
            return None
        f = rng.choice(facts)
        lead = rng.choice(["I have {v} for the {l}.", "So the {l} is {v}.",
                           "That's {v} for the {l}."]).format(v=f.value, l=f.key.replace("_", " "))
    else:
        lead = rng.choice(EMPTY)
    msgs = list(conv.messages)
    msgs[i] = msgs[i].with_(text=f"{msgs[i].text} {lead} {rng.choice(TAGS)}")
    return conv.with_(messages=tuple(msgs)), i


def empty_confirmation(conv: Conversation, rng: random.Random):
    return _tag(conv, rng, False)


def clean_confirmation(conv: Conversation, rng: random.Random):
    return _tag(conv, rng, True)


# ---- 7. clean twin of "the caller states a value only the system holds" --------------------------
def clean_own_value(conv: Conversation, rng: random.Random):
    """The caller gives a value that is theirs to give (the scenario's intent provides it) and
    that nobody said before: not a system value."""
    ms = conv.messages
    provided = set(conv.scenario.intent.provides) - {c.key for c in conv.scenario.intent.corrections}
    facts = [f for f in conv.scenario.kb.user_facts if f.key in provided and f.value]
    sites = [i for i in range(1, len(ms)) if ms[i].role == "user" and ms[i - 1].interruption is None]
    rng.shuffle(sites)
    for i in sites:
        fresh = [f for f in facts if not any(_norm(v) and _norm(v) in _norm(m.text)
                                             for m in ms[:i] for v in (f.value, f.spoken) if v)]
        if not fresh:
            continue
        f = rng.choice(fresh)
        form = rng.choice(["And my {l} is {v}.", "Oh, the {l} is {v}, by the way.",
                           "For the {l}, it's {v}."])
        msgs = list(ms)
        msgs[i] = msgs[i].with_(text=f"{msgs[i].text} {form.format(l=f.key.replace('_', ' '), v=f.value)}")
        return conv.with_(messages=tuple(msgs)), i
    return None


# ---- 7. a gold that restates the span its own criterion says not to repeat ----------------------
NO_REPEAT = ["Does not re-explain or repeat what the caller already heard (\"{q}\").",
             "Avoids going back over \"{q}\", which the caller has already heard.",
             "Doesn't restate \"{q}\" since the caller heard it before cutting in.",
             "Never repeats the part already heard (\"{q}\")."]
RESTATE = ["{q}", "As I said, {ql}", "Just to recap, {ql}", "So again, {ql}", "Like I mentioned, {ql}"]
MOVE_ON = ["Let's move on.", "Right, on to the next bit.", "Skipping ahead, then.",
           "Here's the next step."]


def _cw(s: str) -> list[str]:
    return [w for w in _norm(s).split() if len(w) > 3]


def _quote_site(conv: Conversation, rng: random.Random):
    """(rubric position, quoted heard sentence) for a rubric with a gold, by the injector's
    own reading of the cut message's heard text."""
    rubs = [(j, r) for j, r in enumerate(conv.rubrics) if r.message_index in conv.gold_recoveries
            and conv.messages[r.message_index - 1].heard_text]
    rng.shuffle(rubs)
    for j, r in rubs:
        heard = conv.messages[r.message_index - 1].heard_text
        sents = [s.strip() for s in re.split(r"(?<=[.?!])\s+", heard)
                 if len(_cw(s)) >= 3 and s.strip()[-1:] in ".?!" and '"' not in s]
        if sents:
            return j, r, rng.choice(sents)
    return None


def _with_criterion(conv, j, r, q, rng):
    crit = rng.choice(NO_REPEAT).format(q=q)
    rq = list(r.rq_criteria)
    rq[min(1, len(rq) - 1)] = crit
    rubs = list(conv.rubrics)
    rubs[j] = r.with_(rq_criteria=tuple(rq))
    return rubs


def gold_restates(conv: Conversation, rng: random.Random):
    site = _quote_site(conv, rng)
    if site is None:
        return None
    j, r, q = site
    rubs = _with_criterion(conv, j, r, q, rng)
    form = rng.choice(RESTATE)
    again = form.format(q=q, ql=q[:1].lower() + q[1:] if not re.match(r"I\b|I'", q) else q)
    gold = conv.gold_recoveries[r.message_index]
    golds = dict(conv.gold_recoveries)
    golds[r.message_index] = f"{again} {gold}" if rng.random() < 0.5 else f"{gold} {again}"
    return conv.with_(rubrics=tuple(rubs), gold_recoveries=golds), r.message_index


def clean_gold_rubric(conv: Conversation, rng: random.Random):
    """The criterion quotes a heard sentence; the gold keeps only sentences sharing at most one
    word of four letters or more with it (and says so when it keeps none)."""
    site = _quote_site(conv, rng)
    if site is None:
        return None
    j, r, q = site
    rubs = _with_criterion(conv, j, r, q, rng)
    qw = set(_cw(q))
    gold = conv.gold_recoveries[r.message_index]
    kept = [s for s in re.split(r"(?<=[.?!])\s+", gold) if len(qw & set(_cw(s))) <= 1]
    golds = dict(conv.gold_recoveries)
    golds[r.message_index] = " ".join(kept) if kept else rng.choice(MOVE_ON)
    return conv.with_(rubrics=tuple(rubs), gold_recoveries=golds), r.message_index


# ---- 8. the same clause twice in adjacent sentences ----------------------------------------------
PHRASES = ["what I can do for you", "the best way to sort this out", "what we can offer today",
           "how the refund would work", "the next step on our side", "what I found on the account",
           "the options you have here"]
FIRST = ["So let me tell you {p}.", "I'll walk you through {p}.", "Let me explain {p}.",
         "Here's the thing, I want to go over {p}."]
SECOND = ["Here's {p}: {rest}", "So, {p}: {rest}", "Okay, {p} is this. {Rest}",
          "{P}, then: {rest}"]
SECOND_CLEAN = ["Here it is: {rest}", "In short: {rest}", "Okay. {Rest}", "It's simple. {Rest}"]


def _doubled(conv: Conversation, rng: random.Random, doubled: bool):
    sites = _plain_assistant(conv)
    gold_keys = sorted(conv.gold_recoveries)
    if not sites and not gold_keys:
        return None
    p = rng.choice(PHRASES)
    first = rng.choice(FIRST).format(p=p)

    def make(t: str) -> str:
        rest = t[:1].lower() + t[1:] if not re.match(r"I\b|I'", t) else t
        if doubled:
            second = rng.choice(SECOND).format(p=p, P=p[:1].upper() + p[1:], rest=rest, Rest=t)
        elif rng.random() < 0.5:
            second = rng.choice(SECOND_CLEAN).format(rest=rest, Rest=t)
        else:                                   # said twice, but not in adjacent sentences
            second = f"{t} That's {p}, in short."
            return f"{first} Bear with me a second. {second}"
        return f"{first} {second}"

    if gold_keys and (not sites or rng.random() < 0.4):
        k = rng.choice(gold_keys)
        golds = dict(conv.gold_recoveries)
        golds[k] = make(golds[k])
        return conv.with_(gold_recoveries=golds), k
    i = rng.choice(sites)
    msgs = list(conv.messages)
    msgs[i] = msgs[i].with_(text=make(msgs[i].text))
    return conv.with_(messages=tuple(msgs)), i


def doubled_clause(conv: Conversation, rng: random.Random):
    return _doubled(conv, rng, True)


def clean_doubled(conv: Conversation, rng: random.Random):
    return _doubled(conv, rng, False)


# ---- 9. a gold that closes the request while a later stage is never done -------------------------
CLOSINGS = ["That wraps things up for today. Anything else you need?",
            "You're all set now. Is there anything else?", "That's everything on my side.",
            "And that wraps up your request. Can I do anything else for you?",
            "We're all done here. Anything else I can help with?"]
ONWARD = ["Next, let's get that done.", "Let's keep going with the next step.",
          "I'll carry on with that now."]


def _abandon(conv: Conversation, rng: random.Random, mode: str):
    """mode 'drop': a later stage's messages are relabelled to the stage after it (as if it
    was never done) and the gold closes; 'closing': the gold closes, nothing dropped;
    'onward': a stage dropped but the gold does not close; 'skip': a stage dropped, a skip
    transition of the workflow allows it, and the gold closes."""
    wf = conv.scenario.kb.workflow
    names = [s.name for s in wf.stages]
    sites = [(m, u) for m, u in conv.interruptions if m.interruption.type == "impatient"
             and m.stage in names and u.index in conv.gold_recoveries]
    rng.shuffle(sites)
    # the injector's reading of the workflow: a stage is required when it has no skip of its
    # own, no skip passes over it, and a 'next' transition leads into it
    nxt_in = {t.target for t in wf.transitions if t.kind == "next"}
    optional = {t.source for t in wf.transitions if t.kind == "skip"}
    for t in wf.transitions:
        if t.kind == "skip" and t.source in names and t.target in names:
            optional |= set(names[names.index(t.source) + 1:names.index(t.target)])
    required = [k for k, n in enumerate(names) if n in nxt_in and n not in optional]
    seen = {x.stage for x in conv.messages}
    for m, u in sites:
        at = names.index(m.stage)
        if any(names[k] not in seen for k in required if k > at):
            continue                    # the conversation already leaves a stage undone
        later = [k for k in required if at < k < len(names) - 1 and names[k] in seen]
        if mode != "closing" and not later:
            continue
        out = conv
        if mode != "closing":
            k = rng.choice(later)
            gone, into = names[k], names[k + 1]
            msgs = tuple(x.with_(stage=into) if x.stage == gone else x for x in conv.messages)
            out = out.with_(messages=msgs)
            if mode == "skip":
                from bargein.records.scenario import Transition
                t = Transition(source=names[k - 1], target=into, kind="skip",
                               condition="the caller already did this step online")
                sc = out.scenario
                out = out.with_(scenario=sc.with_(kb=sc.kb.with_(workflow=wf.with_(
                    transitions=(*wf.transitions, t)))))
        golds = dict(out.gold_recoveries)
        tail = rng.choice(ONWARD if mode == "onward" else CLOSINGS)
        golds[u.index] = f"{golds[u.index]} {tail}"
        return out.with_(gold_recoveries=golds), u.index
    return None


def abandoned(conv: Conversation, rng: random.Random):
    return _abandon(conv, rng, "drop")


def clean_abandoned(conv: Conversation, rng: random.Random):
    return _abandon(conv, rng, rng.choice(["closing", "onward", "skip"]))


# ---- 10. a pushback on a value the turn gives as a condition the caller meets --------------------
SPANS = ["seven days", "thirty days", "fourteen days", "24 hours", "90 days", "two weeks",
         "48 hours", "sixty days"]
BENEFITS = ["Since it's within {v}, you qualify for a full refund.",
            "Because you're still within {v} of purchase, there's no fee to cancel.",
            "As you booked less than {v} ago, you're eligible for a free change.",
            "You're within {v} of delivery, so the return is free.",
            "Since the order is under {v} old, we'll waive the restocking fee.",
            "Because it's been less than {v}, you're entitled to a replacement at no cost.",
            "Given that it's only been {v}, cancelling costs you nothing.",
            "Since you're inside the {v} window, shipping back is covered."]
BURDENS = ["Refunds take {v} to reach your card.", "There's a {v} waiting period before we can reissue it.",
           "Because of the backlog, processing takes {v}.", "You'll need to wait {v} before the account unlocks.",
           "Since the claim has to be reviewed, expect {v} before a decision.",
           "The hold stays on for {v} after the payment."]
PUSHBACKS = ["{V}? That seems unreasonable.", "Hold on, {v} is a problem for me.",
             "Wait, why {v}? Nobody told me that.", "I can't accept {v}, honestly.",
             "Sorry, {v}? That's not what I expected."]


def _pushback_value(conv: Conversation, rng: random.Random, benefit: bool):
    sites = [(m, u) for m, u in conv.interruptions if m.interruption.type == "pushback"]
    if not sites:
        return None
    m, u = rng.choice(sites)
    v = rng.choice(SPANS)
    sent = rng.choice(BENEFITS if benefit else BURDENS).format(v=v)
    if not benefit and rng.random() < 0.5:      # a benefit said too, on another value
        other = rng.choice([x for x in SPANS if x != v])
        sent = f"{rng.choice(BENEFITS).format(v=other)} {sent}"
    text = f"{sent} {m.text}"
    k = len(WORD.findall(sent))
    msgs = list(conv.messages)
    said = rng.choice(PUSHBACKS).format(v=v, V=v[:1].upper() + v[1:])
    cut = _cut_at(m, k, text)
    msgs[m.index] = cut.with_(interruption=cut.interruption.with_(interjection=said))
    msgs[u.index] = msgs[u.index].with_(text=said)
    return conv.with_(messages=tuple(msgs)), u.index


def pushback_benefit(conv: Conversation, rng: random.Random):
    return _pushback_value(conv, rng, True)


def clean_pushback_burden(conv: Conversation, rng: random.Random):
    return _pushback_value(conv, rng, False)
