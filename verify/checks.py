"""Deterministic conversation checks (always on). Each returns the issues it finds as verdicts.

Every check has a stable name; a fixable verdict carries one minimal edit command (JSON in
``Verdict.edit``, see :mod:`bargein.verify.edits`); an unfixable one discards the conversation.
"""

from __future__ import annotations

from collections import defaultdict

from bargein.generators.facts import find_placeholders
from bargein.records.conversation import Conversation, Message, Verdict
from bargein.verify.base import CHECKS, CheckFn, check, _verdict
from bargein.verify.edits import delete_edit, rewrite_edit, set_edit
from bargein.verify.leakage import find_leaks, leak_edit
from bargein.verify.text import (
    content_words, extract_values, is_backchannel, prefix_at_word, sentences,
    tokens, word_ends, words,
)

FILLER_FIX = "mm-hm"


def _pairs(conv: Conversation) -> list[tuple[Message, Message]]:
    """(interrupted assistant message, following user message) pairs."""
    return [(m, u) for m, u in conv.interruptions if u.role == "user"]


def _facts_text(conv: Conversation) -> str:
    sc = conv.scenario
    facts = list(sc.kb.user_facts) + list(sc.intent.hidden_facts)
    return " ".join([f"{f.value} {f.spoken}" for f in facts]
                    + [f"{c.first_value} {c.corrected_value}" for c in sc.intent.corrections])


# ---- turn_alternation ---------------------------------------------------------------------
@check("turn_alternation")
def turn_alternation(conv: Conversation) -> list[Verdict]:
    """Assistant first, roles alternate, indices 0..n-1, an interjection after each cut."""
    out, msgs = [], conv.messages
    if not msgs:
        return [_verdict("turn_alternation", None, "the conversation has no messages")]
    if msgs[0].role != "assistant":
        out.append(_verdict("turn_alternation", msgs[0].index, "the user speaks first; the "
                            "assistant must initiate"))
    for pos, m in enumerate(msgs):
        if m.index != pos:
            out.append(_verdict("turn_alternation", m.index,
                                f"message at position {pos} has index {m.index}"))
        if not m.text.strip():
            out.append(_verdict("turn_alternation", m.index, "empty message"))
        if pos and m.role == msgs[pos - 1].role:
            out.append(_verdict("turn_alternation", m.index,
                                f"two {m.role} messages in a row ({pos - 1}, {pos})"))
        if m.interruption is not None:
            nxt = msgs[pos + 1] if pos + 1 < len(msgs) else None
            if nxt is None or nxt.role != "user":
                out.append(_verdict("turn_alternation", m.index,
                                    "an interrupted message is not followed by the interjection"))
            elif m.interruption.interjection != nxt.text:
                out.append(_verdict(
                    "turn_alternation", m.index, "interruption.interjection differs from the "
                    "user message that follows", evidence=f"{m.interruption.interjection!r} vs "
                    f"{nxt.text!r}", edit=set_edit(m, "interjection", nxt.text)))
    return out


# ---- heard_prefix -------------------------------------------------------------------------
@check("heard_prefix")
def heard_prefix(conv: Conversation) -> list[Verdict]:
    """Heard text is a word-boundary prefix strictly inside the message; cut indices agree."""
    out = []
    for m in conv.messages:
        if m.interruption is None:
            if m.heard_text is not None:
                out.append(_verdict("heard_prefix", m.index, "heard_text set on a message "
                                    "that was not interrupted", edit=set_edit(m, "heard_text", None)))
            continue
        itr, heard, text = m.interruption, m.heard_text or "", m.text
        ends = word_ends(text)
        if not heard.strip():
            out.append(_verdict("heard_prefix", m.index, "cut at word 0: nothing was heard",
                                fixable=False))
            continue
        if len(heard.rstrip()) >= len(text.rstrip()):
            out.append(_verdict("heard_prefix", m.index, "cut after the last word: the whole "
                                "message was heard, nothing was interrupted", fixable=False))
            continue
        if len(heard) in ends:
            k = ends.index(len(heard)) + 1
            if itr.cut_word_index != k or itr.cut_char_offset != len(heard):
                out.append(_verdict(
                    "heard_prefix", m.index, "cut indices disagree with the heard text",
                    evidence=f"heard has {k} words / {len(heard)} chars; cut_word_index="
                             f"{itr.cut_word_index}, cut_char_offset={itr.cut_char_offset}",
                    edit=set_edit(m, "cut_word_index", k)))
            continue
        k = sum(1 for e in ends if e <= len(heard))
        where = "trailing whitespace" if heard.rstrip() != heard else \
            f"cut inside the word {words(text)[k]!r}" if k < len(ends) else "cut at no word boundary"
        if 1 <= k < len(ends):
            out.append(_verdict("heard_prefix", m.index, f"heard text is not a word-boundary "
                                f"prefix ({where})", evidence=repr(heard),
                                edit=set_edit(m, "heard_text", prefix_at_word(text, k))))
        else:
            out.append(_verdict("heard_prefix", m.index, f"heard text is not a word-boundary "
                                f"prefix ({where}) and no word survives", fixable=False))
    return out


# ---- filler_backchannel -------------------------------------------------------------------
@check("filler_backchannel")
def filler_backchannel(conv: Conversation) -> list[Verdict]:
    """A filler interjection is a short backchannel; a backchannel is not another type."""
    out = []
    for m, u in _pairs(conv):
        t = m.interruption.type
        if t == "filler" and not is_backchannel(u.text):
            out.append(_verdict("filler_backchannel", u.index, "filler interjection is not a "
                                "short backchannel", evidence=repr(u.text),
                                edit=set_edit(u, "text", FILLER_FIX)))
        elif t != "filler" and is_backchannel(u.text):
            out.append(_verdict("filler_backchannel", u.index, f"a {t} interjection that is only "
                                "a backchannel: the type and its rubric do not fit",
                                evidence=repr(u.text), fixable=False))
    return out


# ---- correction_grounded ------------------------------------------------------------------
def _values(text: str, facts: list[tuple[str, str]]) -> dict[str, set[str]]:
    vals: dict[str, set[str]] = defaultdict(set)
    for kind, v in extract_values(text):
        vals[kind].add(v)
    folded = f" {' '.join(tokens(text))} "
    for kind, v in facts:
        if f" {' '.join(tokens(v))} " in folded:
            vals[kind].add(" ".join(tokens(v)))
    return vals


@check("correction_grounded")
def correction_grounded(conv: Conversation) -> list[Verdict]:
    """A correction replaces a value the user really gave in an earlier message."""
    out = []
    sc = conv.scenario
    facts = [(f"fact:{c.key}", v) for c in sc.intent.corrections
             for v in (c.first_value, c.corrected_value)]
    facts += [(f"fact:{f.key}", v) for f in list(sc.kb.user_facts) + list(sc.intent.hidden_facts)
              for v in (f.value, f.spoken) if v]
    for m, u in _pairs(conv):
        if m.interruption.type != "correction":
            continue
        earlier: dict[str, set[str]] = defaultdict(set)
        for e in conv.messages[: m.index]:
            if e.role == "user":
                for kind, vs in _values(e.text, facts).items():
                    earlier[kind] |= vs
        new = _values(u.text, facts)
        # a new value of a kind the user gave before; when the interjection also names the old
        # value ("Sunday, not Monday"), that old value must be one the user gave
        grounded = [(kind, v) for kind, vs in new.items() for v in vs - earlier.get(kind, set())
                    if earlier.get(kind) and (len(vs) == 1 or vs & earlier[kind])]
        if not grounded:
            given = sorted(f"{k}={v}" for k, vs in earlier.items() for v in vs)[:8]
            out.append(_verdict(
                "correction_grounded", u.index, "the correction does not change a value the user "
                "gave in an earlier message", fixable=False,
                evidence=f"interjection values {sorted(f'{k}={v}' for k, vs in new.items() for v in vs)}; "
                         f"earlier user values {given}"))
    return out


# ---- rubric_counts ------------------------------------------------------------------------
@check("rubric_counts")
def rubric_counts(conv: Conversation) -> list[Verdict]:
    """One rubric per interjection: its type, one TF criterion, 2-4 distinct RQ criteria."""
    out = []
    by_index = defaultdict(list)
    for r in conv.rubrics:
        by_index[r.message_index].append(r)
    wanted = {u.index: m.interruption.type for m, u in _pairs(conv)}
    for idx, itype in sorted(wanted.items()):
        rs = by_index.get(idx, [])
        if len(rs) != 1:
            out.append(_verdict("rubric_counts", idx, f"{len(rs)} rubrics for the interjection "
                                "(need exactly 1)", fixable=False))
            continue
        r = rs[0]
        rq = [c for c in r.rq_criteria if c.strip()]
        problems = []
        if r.type != itype:
            problems.append(f"rubric type {r.type!r} but interruption type {itype!r}")
        if not r.tf_criterion.strip():
            problems.append("empty task-fulfillment criterion")
        if not 2 <= len(rq) <= 4 or len(set(rq)) != len(rq):
            problems.append(f"{len(rq)} non-empty distinct RQ criteria of {len(r.rq_criteria)} "
                            "(need 2-4 distinct)")
        for p in problems:
            out.append(_verdict("rubric_counts", idx, p, fixable=False))
    for idx in sorted(set(by_index) - set(wanted)):
        out.append(_verdict("rubric_counts", idx, "a rubric at a message that is not an "
                            "interjection", fixable=False))
    return out


# ---- placeholders -------------------------------------------------------------------------
@check("placeholders")
def placeholders(conv: Conversation) -> list[Verdict]:
    """No ``[NAME]``, ``XXX``, ``<account>``, ``{x}``, "John Doe" anywhere."""
    fields: list[tuple[int | None, str, str]] = [(m.index, "message", m.text) for m in conv.messages]
    fields += [(m.index, "interjection", m.interruption.interjection)
               for m in conv.messages if m.interruption is not None]
    for r in conv.rubrics:
        fields += [(r.message_index, "rubric", c) for c in (r.tf_criterion, *r.rq_criteria)]
    fields += [(k, "gold recovery", v) for k, v in sorted(conv.gold_recoveries.items())]
    fields.append((None, "system prompt", conv.scenario.system_prompt))
    fields += [(None, f"user fact {f.key}", f"{f.value} {f.spoken}")
               for f in conv.scenario.kb.user_facts]
    if not find_placeholders("\n".join(t for _, _, t in fields)):     # the common case
        return []
    out = []
    for idx, where, text in fields:
        found = find_placeholders(text)
        if found:
            out.append(_verdict("placeholders", idx, f"placeholder in the {where}: {found[:3]}",
                                evidence=text[:200], fixable=False))
    return out


# ---- undelivered_content ------------------------------------------------------------------
@check("undelivered_content")
def undelivered_content(conv: Conversation) -> list[Verdict]:
    """The interjection reacts only to the heard part, not to the unheard remainder."""
    out = []
    facts = content_words(_facts_text(conv))
    for m, u in _pairs(conv):
        heard = m.heard_text or ""
        rest = m.text[len(heard):]
        before = " ".join(e.spoken_text for e in conv.messages[: m.index])
        leaked = (content_words(u.text) & content_words(rest)) - content_words(heard) \
            - content_words(before) - facts
        if not leaked:
            continue
        leaked_s = sorted(leaked)
        issue = f"the user reacts to {leaked_s} which occur only in the unheard remainder"
        evidence = f"heard {heard!r}; unheard {rest.strip()!r}; interjection {u.text!r}"
        if m.interruption.type == "filler":
            out.append(_verdict("undelivered_content", u.index, issue, evidence=evidence,
                                edit=set_edit(u, "text", FILLER_FIX)))
            continue
        sents = sentences(u.text)
        bad = [(s, e) for s, e in sents if content_words(u.text[s:e]) & leaked]
        if 0 < len(bad) < len(sents):
            for s, e in reversed(bad):
                out.append(_verdict("undelivered_content", u.index, issue, evidence=evidence,
                                    edit=delete_edit(u, s, e)))
        else:
            out.append(_verdict("undelivered_content", u.index, issue, evidence=evidence,
                                edit=rewrite_edit(u, f"the user never heard {leaked_s} (it "
                                                  f"comes after the cut in message {m.index}); "
                                                  "make the interjection react only to what "
                                                  f"was heard: {heard!r}")))
    return out


# ---- state_machine_leakage ----------------------------------------------------------------
@check("state_machine_leakage")
def state_machine_leakage(conv: Conversation) -> list[Verdict]:
    """The user names stages, stage order or KB internals the assistant never told them."""
    out, cache, heard_so_far = [], {}, []
    for m in conv.messages:
        if m.role == "assistant":
            heard_so_far.append(m.spoken_text)
            continue
        for leak in reversed(find_leaks(m, " ".join(heard_so_far), conv, _cache=cache)):
            out.append(_verdict("state_machine_leakage", m.index, f"the user {leak.what}",
                                evidence=m.text[leak.start:leak.end], edit=leak_edit(m, leak)))
    return out


from bargein.verify import quality as _quality  # noqa: E402,F401  (registers the quality checks)
from bargein.verify import tone as _tone  # noqa: E402,F401  (registers the tone checks)
from bargein.verify import discourse as _discourse  # noqa: E402,F401  (registers the discourse checks)
from bargein.verify import coherence as _coherence  # noqa: E402,F401  (registers the coherence checks)
from bargein.verify import consistency as _consistency  # noqa: E402,F401  (registers the consistency checks)
from bargein.verify import side_request as _side_request  # noqa: E402,F401  (registers side_request_answered)
from bargein.verify import promises as _promises  # noqa: E402,F401  (registers promise_kept)
from bargein.verify import wording as _wording  # noqa: E402,F401  (registers prompt_wording)


def run_checks(conv: Conversation) -> list[Verdict]:
    """Every deterministic check, in a fixed order; the issues found (empty = clean)."""
    out: list[Verdict] = []
    for fn in CHECKS.values():
        out.extend(fn(conv))
    return out
from bargein.verify import repeated_turn as _repeated_turn  # noqa: E402,F401  (registers assistant_turn_repeated)
