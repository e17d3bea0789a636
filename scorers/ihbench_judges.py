"""IHBench judges: an LLM through the prompt files (the default), or the smoke judge.

    judge = get_judge("openai:gpt-4o-mini", workdir=Path("work"))   # or anthropic:…, llamacpp:…
    tf = await judge.compare(item, response_a, response_b, sample=0)    # TFVerdict
    rq = await judge.assess(item, response, sample=0)                   # RQJudgment | Unscorable

The judge model comes from ``--judge PROVIDER:MODEL`` or the ``BARGEIN_JUDGE`` environment
variable; with neither, :func:`resolve_judge_spec` stops with a message naming both. ``smoke``
is the rule-based judge of :mod:`bargein.scorers.ihbench_smoke`, for pipeline tests only: its
figures are stamped "smoke test, not a score".

``compare`` must name a concrete deficiency of the loser. A length/detail-only reason ("longer",
"more detail") is re-asked with the reason; after ``reasks`` failed attempts the judgment is
unscorable (reported with the judge's answers as evidence), never a silent tie.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from bargein.errors import ConfigError, GenerationFailed
from bargein.records import EvalItem
from bargein.spoken import DIGIT_WORDS, ONES, int_words, ordinal_words

JUDGE_ENV = "BARGEIN_JUDGE"
SMOKE = "smoke"
SMOKE_STAMP = "smoke test, not a score"
JUDGE_MAX_TOKENS = 512

TYPE_DEFINITIONS = {
    "normal": "a relevant cut-in with a new detail or a quick clarification; recover by "
              "addressing it, then resuming the workflow with a fresh start",
    "impatient": "the user wants to skip ahead; recover by skipping the interrupted content "
                 "without re-explaining what was asked to skip",
    "correction": "the user corrects something they said in an earlier turn; recover by "
                  "accepting it without pushback, integrating the corrected value, continuing",
    "topic_switch": "an unrelated request; recover by addressing it, then steering back to the "
                    "workflow without blending the two",
    "filler": "a backchannel like 'mm-hm'; recover by continuing the interrupted utterance "
              "exactly where it was cut, without repeating, restarting or acknowledging it",
    "pushback": "resistance or dispute grounded in what the assistant said; recover by "
                "de-escalating with empathy and offering alternatives",
}
_VAGUE = frozenset("""longer shorter length lengthy long short brief briefer concise verbose wordy
more less detail details detailed elaborate elaborated comprehensive thorough thoroughly complete
completeness extensive information info content context explanation explanations response
answer it is was the a an and too very much not enough lacks lacking has have provides provide
gives give includes include contains contain fewer""".split())


class TFJudgment(BaseModel):
    """The comparative judge's answer (prompt ``judge_tf``)."""

    reasoning: str = ""
    winner: Literal["A", "B"]
    loser_deficiency: str = Field(min_length=1, max_length=240)


class CriterionVerdict(BaseModel):
    criterion: str
    met: bool
    reason: str = ""
    evidence: str = ""             # the judge's quote of the response (per-criterion RQ)


class RQJudgment(BaseModel):
    """The absolute judge's answer (prompt ``judge_rq``)."""

    criteria: list[CriterionVerdict] = Field(min_length=1)
    verdict: Literal["pass", "fail"]


@dataclass(frozen=True)
class TFVerdict:
    """One comparative judgment: winner "A"/"B", "tie" (smoke only) or None when unscorable."""

    winner: str | None
    deficiency: str = ""
    status: Literal["ok", "tie", "unscorable"] = "ok"
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Unscorable:
    """A judgment the judge could not give; ``evidence`` carries its raw answers and errors."""

    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)


def vague_deficiency(text: str) -> str | None:
    """Why ``text`` is not a concrete deficiency, or None when it names one."""
    ws = re.findall(r"[a-z]+", (text or "").lower())
    if len(ws) < 3:
        return "too short to name a concrete deficiency"
    if all(w in _VAGUE for w in ws):
        return "only about length or amount of detail"
    return None


class Judge(Protocol):
    id: str
    smoke: bool

    async def compare(self, item: EvalItem, a: str, b: str, *, sample: int) -> TFVerdict: ...

    async def assess(self, item: EvalItem, response: str, *, sample: int) -> RQJudgment | Unscorable: ...


class SmokeJudge:
    """The rule-based smoke judge (:mod:`bargein.scorers.ihbench_smoke`): deterministic."""

    id = "smoke-rules@2"
    smoke = True

    async def compare(self, item: EvalItem, a: str, b: str, *, sample: int) -> TFVerdict:
        from bargein.scorers import ihbench_smoke as rules

        winner, deficiency = rules.compare(item, a, b)
        if winner == "tie":
            return TFVerdict(winner="tie", status="tie")
        return TFVerdict(winner=winner, deficiency=deficiency)

    async def assess(self, item: EvalItem, response: str, *, sample: int) -> RQJudgment:
        from bargein.scorers import ihbench_smoke as rules

        crit = [CriterionVerdict(criterion=c, met=ok, reason=why)
                for c, ok, why in rules.assess(item, response)]
        return RQJudgment(criteria=crit, verdict="pass" if all(c.met for c in crit) else "fail")


def judge_context(item: EvalItem) -> dict:
    return {"system_prompt": item.system_prompt,
            "history": [{"role": m.role, "content": m.content} for m in item.history],
            "planned_text": item.planned_text, "heard_text": item.heard_text,
            "interjection": item.interjection, "type": item.type,
            "type_definition": TYPE_DEFINITIONS[item.type]}


def _messages(name: str, **variables: Any) -> list[dict[str, str]]:
    """A judge prompt as a conversation: the instructions in the system role, the case as the
    user message (the template's ``## Case`` marker splits the two)."""
    from bargein.prompts import render

    text = render(name, **variables)
    head, sep, case = text.partition("\n## Case\n")
    if not sep:
        return [{"role": "user", "content": text}]
    return [{"role": "system", "content": head.strip()}, {"role": "user", "content": case.strip()}]


class CriterionCheck(BaseModel):
    """The answer to one rubric criterion asked alone (prompt ``judge_rq_criterion``): the words
    of the response that meet it, then the verdict. The evidence is checked in code."""

    evidence: str = Field(max_length=400)
    met: bool


class AvoidCheck(BaseModel):
    """The answer to one "avoid" criterion (prompt ``judge_rq_avoid``): the words of the
    response that do the forbidden thing ("" when none do), then whether they do it. A
    violation counts only when those words are in the response and say again what the
    criterion forbids (:func:`shows_violation`)."""

    forbidden: str = Field(default="", max_length=160)
    evidence: str = Field(max_length=400)
    does_it: bool


def _number_words(digits: str, suffix: str = "") -> str:
    """One written number as it is said: a code (a leading zero, five or more digits) digit by
    digit, a year-like 1100-1999 / 2010-2099 in pairs, else the cardinal; with "st"/"nd"/"rd"/
    "th" the ordinal."""
    if (len(digits) > 1 and digits[0] == "0") or len(digits) >= 5:
        return " ".join(DIGIT_WORDS[int(d)] for d in digits)
    n = int(digits)
    if len(digits) == 4 and (1100 <= n < 2000 or 2010 <= n < 2100):
        words = f"{int_words(n // 100)} {int_words(n % 100)}" if n % 100 else f"{int_words(n // 100)} hundred"
    else:
        words = ordinal_words(n) if suffix else int_words(n)
    return words.replace("-", " ")


def spoken_numbers(text: str) -> str:
    """``text`` with its written numbers as words ("30" -> "thirty", "12th" -> "twelfth",
    "04771" -> "zero four seven seven one", "9:30" -> "nine thirty"), so a quote or a reply that
    says a number one way matches the conversation saying it the other. Applied alike to every
    response, quote and conversation the code checks compare."""
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", (text or "").lower())   # 1,200 -> 1200
    return re.sub(r"(?<![a-z0-9])(\d{1,7})(st|nd|rd|th)?(?![0-9])",
                  lambda m: f" {_number_words(m.group(1), m.group(2) or '')} ", text)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", spoken_numbers(text)))


def quoted_in(evidence: str, response: str) -> bool:
    """Whether ``evidence`` is words of ``response``, as written (case, punctuation and spacing
    aside). Empty evidence is not."""
    q = _norm(evidence)
    return bool(q) and f" {q} " in f" {_norm(response)} "


_CARDINALS = frozenset([*ONES, *(int_words(10 * t) for t in range(2, 10)), "hundred", "thousand",
                        "million", "billion"])
_TO_CARDINAL = {ordinal_words(int(n)) if n.isdigit() else n + "th": c
                for c, n in [(int_words(k), str(k)) for k in range(1, 20)]
                + [(int_words(10 * t), str(10 * t)) for t in range(2, 10)]
                + [(w, w) for w in ("hundred", "thousand", "million", "billion")]}


def _number_runs(words: list[str]) -> list[str | list[str]]:
    """``words`` with each run of number words (an "and" inside a run allowed) as one list,
    other words as they are."""
    def num(w: str) -> bool:
        return w in _TO_CARDINAL or w in _CARDINALS

    out: list[str | list[str]] = []
    run: list[str] = []
    for k, w in enumerate(words):
        if num(w) or (w == "and" and run and k + 1 < len(words) and num(words[k + 1])):
            if w != "and":
                run.append(w)
            continue
        if run:
            out.append(run)
            run = []
        out.append(w)
    if run:
        out.append(run)
    return out


def _content(text: str) -> set[str]:
    """The content words of ``text``, crudely stemmed ("booked" ~ "booking"); a number, written
    or said, is one word "#<its words>", ordinals as cardinals ("9,080" = "nine thousand
    eighty", "the 31st" = "thirty-first" = "31" = "#thirty one"), so two numbers that share a
    digit word are not the same content; a code of letters and digits is one word, unstemmed. A lone "one", "first" or "second" is no number ("one
    of them", "first, ...", "a second time")."""
    from bargein.lexicon import BACKCHANNEL_WORDS, CONTENT_STOP_WORDS, FILLERS

    words = [w.strip("'") for w in re.findall(r"[a-z0-9']+", spoken_numbers(text).replace("\u2019", "'"))]
    out = set()
    for w in _number_runs([w for w in words if w]):
        if isinstance(w, list):
            if len(w) > 1 or w[0] not in ("one", "first", "second"):
                out.add("#" + " ".join(_TO_CARDINAL.get(x, x) for x in w))
                continue
            w = w[0]
        if (len(w) >= 3 or w.isdigit()) and w not in CONTENT_STOP_WORDS and w not in FILLERS \
                and w not in BACKCHANNEL_WORDS:
            # a crude stem ("booked" ~ "booking"); a code of letters and digits is kept whole
            # ("KL79QB" is not "KL79QD")
            out.add(w if re.search(r"\d", w) and re.search(r"[a-z]", w) else w[:5])
    return out


def user_content(item: EvalItem) -> set[str]:
    """The content words of what the user said: every user turn and the interjection."""
    return _content(" ".join([item.interjection] + [m.content for m in item.history if m.role == "user"]))


def case_content(item: EvalItem) -> set[str]:
    """The content words that make this conversation specific: what the user said (every user
    turn and the interjection), what the assistant was saying when it was cut (the planned
    message) and the business it speaks for (the system prompt: its hours, policies and
    alternatives are what a good answer to a side question or a pushback draws on). The
    assistant's earlier turns are left out: their politeness ("happy to help", "of course") is
    what a reply that fits any conversation is made of."""
    return user_content(item) | _content(item.planned_text) | _content(item.system_prompt)


_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b([A-Z][A-Za-z]+|[A-Z]{2,})\b")


def specific_content(item: EvalItem) -> set[str]:
    """The content words of the case that no other conversation would share by chance: names
    (a capitalised word inside a sentence, an all-capitals code) and numbers (written or said,
    one word each) of what the user said, the interrupted message and the system prompt."""
    out: set[str] = set()
    for t in ([item.interjection, item.planned_text, item.system_prompt]
              + [m.content for m in item.history if m.role == "user"]):
        out |= _content(" ".join(_NAME.findall(t or "")))
        out |= {w for w in _content(t) if w.startswith("#")}
    return out


def grounded_in(evidence: str, item: EvalItem) -> bool:
    """Whether the quote carries content specific to this conversation: two different content
    words of the case (:func:`case_content`: the user's turns, the interjection, the
    interrupted message and the system prompt; stop words and backchannels from
    :mod:`bargein.lexicon` do not count), or one that is a name or a number of the case
    (:func:`specific_content`). A criterion asks for something specific to the case; a quote
    that would fit any conversation cannot show it is met, and one common word shared by chance
    ("What's next for you?" beside "your next bill") does not make it specific.

    Chosen on the dev part of the control set (51 good answers in other words, 34 content-free
    templates, judged by the packaged 1.5B): one shared word passed 47/51 and failed 33/34
    templates; two words or a name/number of the user's turns and the interrupted message
    42/51 and 34/34; with the system prompt's words and names too, 45/51 and 34/34."""
    shared = _content(evidence) & case_content(item)
    return len(shared) >= 2 or bool(shared & specific_content(item))


_ABSENCE = re.compile(r"\b(not|no|never|nor|none|nothing|neither|dropped|skipped|omitted|"
                      r"leaves out|left out|leave out)\b|n't\b", re.I)


# "the caller's wish not to give the number", "asks not to be called": a negated infinitive after
# a word of wanting is what someone wants, the criterion's object, not what the reply must not do
_NOT_TO = re.compile(r"\b(wish|wishes|want|wants|wanted|ask|asks|asked|request|requests|prefer|"
                     r"prefers|preference|choice|choose|chooses|decision|decided|decides|right)"
                     r"\s+(not|never) to\b", re.I)


def criterion_kind(criterion: str) -> Literal["do", "avoid"]:
    """Whether a rubric criterion asks the reply to do something ("do") or not to do something
    ("avoid"), from its grammar: a negation ("does not", "no ... again", "never") or a verb of
    leaving out ("is dropped", "is skipped", "leaves out") makes it "avoid". "without ..." or
    "instead of ..." only qualifies an action the criterion asks for, so it stays "do". What is
    in parentheses or double quotes is content the criterion names, not its grammar ("The Sunday
    question is answered (no phone support on Sundays)" asks for something), and so is a negated
    infinitive, what someone wants ("shows understanding of the caller's wish not to give the
    order number" asks for something)."""
    grammar = re.sub(r"\([^)]*\)|\"[^\"]*\"|\u201c[^\u201d]*\u201d", " ", criterion or "")
    grammar = _NOT_TO.sub(" ", grammar)
    return "avoid" if _ABSENCE.search(grammar) else "do"


_ABOUT_USER_WORDS = re.compile(
    r"\b(echo\w*|parrot\w*|(say|says|saying|read|reads|reading|repeat|repeats|repeating|give|gives)"
    r" (it |them |that |those words |the words )?back|interjection|back-?channel|react\w*|"
    r"comment\w*|thank\w*|acknowledg\w*|nothing about|aimed at|"
    r"what the (user|caller|customer|member|client|patient) (just )?said|"
    r"(user|caller|customer|member|client|patient)'s (own )?words)\b", re.I)


def about_user_words(criterion: str) -> bool:
    """Whether an "avoid" criterion forbids something done with the user's own words: saying
    them back, reacting to, commenting on, thanking for or acknowledging the interjection. Only
    then are the interjection's words forbidden content (:func:`forbidden_content`)."""
    return bool(_ABOUT_USER_WORDS.search(criterion or ""))


_SKIPPED = re.compile(r"\b(skip\w*|drop\w*|left out|leaves? out|leave out|omit\w*|rest of|"
                      r"remaining|not read out)\b", re.I)


def unsaid_part(item: EvalItem) -> str:
    """What the assistant had still to say when it was cut (the planned message after the heard
    part), less its closing question: the question that moves the task on is what a good reply
    to "skip ahead" asks, the rest is what it skips."""
    planned, heard = item.planned_text or "", item.heard_text or ""
    rest = planned[len(heard):] if planned.startswith(heard) else planned
    sentences = re.split(r"(?<=[.!?])\s+", rest.strip())
    if sentences and sentences[-1].endswith("?"):
        sentences = sentences[:-1]
    return " ".join(sentences)


def forbidden_content(item: EvalItem, criterion: str) -> set[str]:
    """The content words whose saying-again breaks an "avoid" criterion: what the criterion
    names itself ("the photo of the damage", "no 'great'"), and what the user already heard (a
    rule against repeating, restarting or going on with the interrupted content is broken by its
    words) less the words the user has just said. The interjection's words are forbidden only
    when the criterion is about the user's words (:func:`about_user_words`). A word the user
    said ("check" in "just check where it is", "Business" in "it's Business Plus, not
    Business") is not forbidden by a rule that an explanation is skipped or that the caller is
    not doubted: a good reply takes the user's words up, also where the criterion names them
    ("The description of the full service is skipped" after "just book the full one": "Full
    service it is" takes the user's choice up, it does not describe it). The values the rule
    names (a number, a code, a name) stay forbidden ("KL79QD is no longer used" after "it's
    KL79QB, not KL79QD").
    A rule that the rest of the message is skipped or dropped forbids that rest too
    (:func:`unsaid_part`), less its closing question.
    """
    said = _content(item.interjection)
    if about_user_words(criterion):
        return _content(criterion) | _content(item.heard_text) | said
    out = _content(criterion) | _content(item.heard_text)
    if _SKIPPED.search(criterion or ""):
        out |= _content(unsaid_part(item))
    return (out - said) | _rule_values(criterion)


def echoes(evidence: str, item: EvalItem) -> bool:
    """Whether the quote says the interjection back: it holds a run of the interjection's words
    (as written, numbers spoken) of at least ``max(4, 60%)`` of them, or all of an interjection
    of four words or fewer. Taking up a word or two of what the user said is no echo."""
    inter, quote = _norm(item.interjection).split(), _norm(evidence).split()
    n = len(inter)
    if not n or not quote:
        return False
    need = n if n <= 4 else max(4, -(-3 * n // 5))
    joined = f" {' '.join(quote)} "
    return any(f" {' '.join(inter[k:k + need])} " in joined for k in range(n - need + 1))


def named_values(text: str) -> set[str]:
    """The values a text names, as :func:`_content` words: numbers (written or said), codes of
    letters and digits, all-capitals words, and names (a capitalised word inside a sentence)."""
    out = {w for w in _content(text) if w.startswith("#") or (re.search(r"\d", w) and re.search(r"[a-z]", w))}
    out |= _content(" ".join(re.findall(r"\b[A-Z]{2,}\b", text or "")))
    return out | _content(" ".join(_NAME.findall(text or "")))


def _rule_values(criterion: str) -> set[str]:
    """The values an "avoid" rule names outside quotes ("KL79QD is no longer used"): forbidden
    even when the user said them ("it's KL79QB, not KL79QD")."""
    return named_values(re.sub(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|'[^']*'", " ", criterion or ""))


def shows_violation(evidence: str, item: EvalItem, criterion: str) -> bool:
    """Whether the words quoted as breaking an "avoid" criterion really say again what the
    criterion forbids: they must be words of the response (checked by the caller) and either at
    least half of their content words are forbidden content (:func:`forbidden_content`: the
    criterion's own words, what the user already heard, and the interjection only for a rule
    about the user's words), or they echo the interjection back (:func:`echoes`; not for a
    correction, where saying the corrected value back is the recovery). A quote of new content,
    or one that takes up a word the user said, does not break a rule against repeating,
    restarting or going on. A rule that names a value (a number, a code, a name:
    :func:`named_values`) is broken only by a quote that says it
    ("KL79QD is no longer used" is not broken by "KL79QB"). One forbidden word in a quote with
    other content is not enough: the quote must be all forbidden words, or hold two of them
    that make at least half of it ("Full service it is" does not describe the service)."""
    if item.type != "correction" and echoes(evidence, item):
        return True
    words = _content(evidence)
    if not words:
        return False
    values = _rule_values(criterion)
    if values and not words & values:
        return False
    bad = words & forbidden_content(item, criterion)
    return bad == words or (len(bad) >= 2 and len(bad) * 2 >= len(words))


CUT_IN_CHECK = "(checked in code) the reply takes the cut-in up"
_TAKES_UP_TYPES = ("normal", "correction", "topic_switch", "pushback")


def carries_on_regardless(response: str, item: EvalItem) -> str:
    """Why the reply carries on as if the user had said nothing ("" when it does not): for a
    cut-in the reply must take up (a new detail, a correction, another request, an objection;
    not a backchannel, nor an impatient cut-in, whose good reply may be the planned message's
    own next question), a reply of three or more content words that says nothing but what the
    assistant was going to say anyway (at most one content word that is not in the planned
    message, and none of the user's new words) has not taken it up, whatever a judge says
    about its criteria: the interrupted message said on, or said again from its beginning.

    Chosen on the dev and first held-out parts of the control set (no model involved): it
    flagged 21/23 replies that carry on, 23/23 restarts, 5/25 wrong facts and none of 69 good
    answers of these types."""
    if item.type not in _TAKES_UP_TYPES:
        return ""
    said, planned = _content(response), _content(item.planned_text)
    new = said - planned
    if len(said) < 3 or len(new) > 1 or new & _content(item.interjection):
        return ""
    return ("the reply says nothing but the interrupted message's own words"
            + (f" (and {sorted(new)[0].lstrip('#')!r})" if new else "")
            + f", as if the user had not said {item.interjection!r}")


RQ_MODES = ("split", "criteria", "all")


class LLMJudge:
    """IHBench's LLM judge through the prompt files, with any provider's schema-checked answers.

    TF (``judge_tf``): pairwise, a named concrete deficiency of the loser required (re-asked
    when vague); with ``both_orders`` (the default) the pair is judged in both positions and a
    winner that changes with the position is a tie (``status="tie"``, both answers kept).

    RQ is asked one criterion at a time, and a verdict rests on words of the response that the
    judge quotes and the code checks:

    - ``rq_mode="split"`` (the default): a criterion that asks the reply to do something
      (:func:`criterion_kind` "do") is asked for the words of the response that meet it
      (``judge_rq_criterion``); it is met only when the judge says so AND its quote is words of
      the response AND, with ``grounding`` (the default), the quote names something of this
      conversation (:func:`grounded_in`). A criterion that forbids something ("avoid") is asked
      for the words that do the forbidden thing (``judge_rq_avoid``); it is broken only when
      the judge says so AND the quote is words of the response AND, with ``grounding``, the
      quote mostly says again what the user heard or the criterion names (the interjection only
      for a rule about the user's words), or echoes the interjection (:func:`shows_violation`). Small models answer "does it do X?" yes whatever the reply,
      so neither a "met" nor a "broken" is taken without its evidence. A "met" whose quote
      is not words of the response, or names nothing of the conversation, is asked once more
      with that reason. Quotes, responses and conversations are compared with their written
      numbers spoken (:func:`spoken_numbers`: "30" and "thirty" are the same words).
    - ``rq_mode="criteria"``: every criterion asked the first way (``judge_rq_criterion``).
    - ``rq_mode="all"``: the one-call form (``judge_rq``).

    The verdict is all-criteria, computed here, never taken from the judge.
    """

    smoke = False

    def __init__(self, spec: str, *, workdir: Path | None, reasks: int = 2, llm: Any = None,
                 temperature: float | None = 0.0, max_tokens: int = JUDGE_MAX_TOKENS,
                 rq_mode: str = "split", both_orders: bool = True, grounding: bool = True,
                 cut_in_check: bool = True, stop_at_fail: bool = False):
        from bargein.prompts import load

        if rq_mode not in RQ_MODES:
            raise ConfigError(f"rq_mode {rq_mode!r}: valid modes are {', '.join(RQ_MODES)}")
        self.spec = spec
        self.rq_mode, self.both_orders, self.grounding = rq_mode, both_orders, grounding
        self.cut_in_check, self.stop_at_fail = cut_in_check, stop_at_fail
        tf = f"judge_tf v{load('judge_tf').version}" + (" both orders" if both_orders else "")
        if rq_mode == "all":
            rq = f"judge_rq v{load('judge_rq').version}"
        else:
            rq = f"judge_rq_criterion v{load('judge_rq_criterion').version}"
            if rq_mode == "split":
                rq += f" + judge_rq_avoid v{load('judge_rq_avoid').version}"
            rq += " quotes grounded@6" if grounding else " quotes@6"   # checks v6 (see shows_violation)
            rq += " + cut-in taken up" if cut_in_check else ""
        self.id = f"{spec} ({tf}, {rq})"
        self.reasks = reasks
        self.temperature = judge_temperature(spec, temperature)
        self.max_tokens = max_tokens
        if llm is None:
            from bargein.llm import get_llm

            llm = get_llm(spec, workdir=workdir)
        self.llm = llm                    # anything with ``async structured(messages, Schema, ...)``

    async def _ask(self, chat, schema, agent: str, sample: int, max_tokens: int | None = None):
        return await self.llm.structured(chat, schema, agent=agent, sample=sample,
                                         temperature=self.temperature,
                                         max_tokens=max_tokens or self.max_tokens)

    # ---- TF ---------------------------------------------------------------------------------
    async def compare(self, item: EvalItem, a: str, b: str, *, sample: int) -> TFVerdict:
        first = await self._compare_once(item, a, b, sample)
        if not self.both_orders or first.status != "ok":
            return first
        second = await self._compare_once(item, b, a, sample)
        orders = {"orders": [{"shown": "as given", "winner": first.winner,
                              "loser_deficiency": first.deficiency},
                             {"shown": "swapped", "winner_as_shown": second.winner,
                              "loser_deficiency": second.deficiency}]}
        if second.status != "ok":
            return TFVerdict(None, first.deficiency, "unscorable",
                             {**second.evidence, **orders,
                              "reason": "the judgment in the swapped order failed: "
                                        + str(second.evidence.get("reason", ""))})
        again = {"A": "B", "B": "A"}[second.winner]
        if again != first.winner:
            return TFVerdict("tie", "", "tie", {**orders, "reason": "the winner changed with the "
                             "position of the two responses (position-inconsistent: a tie)"})
        return TFVerdict(first.winner, first.deficiency, "ok", orders)

    async def _compare_once(self, item: EvalItem, a: str, b: str, sample: int) -> TFVerdict:
        chat = _messages("judge_tf", **judge_context(item), tf_criterion=item.rubric.tf_criterion,
                         response_a=a, response_b=b)
        answers: list[dict] = []
        for _ in range(self.reasks + 1):
            try:
                ans = await self._ask(chat, TFJudgment, "judge_tf", sample)
            except GenerationFailed as e:
                return TFVerdict(None, status="unscorable", evidence={
                    "reason": "the judge gave no answer that fits the TFJudgment schema",
                    "error": str(e), "details": e.evidence, "answers": answers})
            ans = ans if isinstance(ans, TFJudgment) else TFJudgment.model_validate(ans)
            answers.append(ans.model_dump())
            why = vague_deficiency(ans.loser_deficiency)
            if why is None:
                return TFVerdict(ans.winner, ans.loser_deficiency)
            chat = chat + [
                {"role": "assistant", "content": json.dumps(ans.model_dump(), ensure_ascii=False)},
                {"role": "user", "content": f"'{ans.loser_deficiency}' is not accepted: it is {why}. "
                 "Name one concrete thing the losing response does wrong or fails to do in this "
                 "context, and answer again with the JSON object only."}]
        return TFVerdict(None, answers[-1]["loser_deficiency"] if answers else "", "unscorable",
                         {"reason": f"no concrete deficiency named after {len(answers)} answers",
                          "answers": answers})

    # ---- RQ ---------------------------------------------------------------------------------
    async def assess(self, item: EvalItem, response: str, *, sample: int) -> RQJudgment | Unscorable:
        if self.rq_mode == "all":
            return await self._assess_all(item, response, sample)
        ctx = judge_context(item)
        crit: list[CriterionVerdict] = []
        ignored = self.cut_in_check and carries_on_regardless(response, item)
        if ignored:
            crit.append(CriterionVerdict(criterion=CUT_IN_CHECK, met=False, reason=ignored))
        criteria = list(item.rubric.rq_criteria)
        if self.stop_at_fail:             # the verdict is all-criteria: the first unmet decides
            if ignored:
                return RQJudgment(criteria=crit, verdict="fail")
            criteria.sort(key=lambda c: self.rq_mode == "split" and criterion_kind(c) == "avoid")
        for c in criteria:
            if self.stop_at_fail and crit and not crit[-1].met:
                break
            avoid = self.rq_mode == "split" and criterion_kind(c) == "avoid"
            name, schema = ("judge_rq_avoid", AvoidCheck) if avoid else ("judge_rq_criterion", CriterionCheck)
            chat = _messages(name, **ctx, response=response, criterion=c)
            try:
                ans = await self._ask(chat, schema, name, sample, max_tokens=200)
            except GenerationFailed as e:
                return Unscorable(f"the judge gave no answer that fits the {schema.__name__} schema",
                                  {"criterion": c, "error": str(e), "details": e.evidence,
                                   "answers": [x.model_dump() for x in crit]})
            ans = ans if isinstance(ans, schema) else schema.model_validate(ans)
            why = self._unsupported(item, response, ans) if not avoid and ans.met else None
            if why and self.reasks:
                # a "met" must rest on the reply's own words that name something of this
                # conversation: asked once more with the reason (the answer is checked again)
                retry = chat + [
                    {"role": "assistant", "content": json.dumps(ans.model_dump(), ensure_ascii=False)},
                    {"role": "user", "content": why + " Copy the words of the reply between the "
                     "triple quotes that do what the criterion asks in THIS conversation, exactly "
                     "as written there; if no words of the reply do it, answer met false. Answer "
                     "with the JSON object only."}]
                try:
                    again = await self._ask(retry, schema, name, sample, max_tokens=200)
                    ans = again if isinstance(again, schema) else schema.model_validate(again)
                except GenerationFailed:
                    pass                          # the first answer stands (and fails the check)
            crit.append(self._avoid_verdict(item, response, c, ans) if avoid
                        else self._do_verdict(item, response, c, ans))
        order = {c: k for k, c in enumerate((CUT_IN_CHECK, *item.rubric.rq_criteria))}
        crit.sort(key=lambda v: order.get(v.criterion, len(order)))
        return RQJudgment(criteria=crit, verdict="pass" if all(c.met for c in crit) else "fail")

    def _unsupported(self, item: EvalItem, response: str, ans: CriterionCheck) -> str | None:
        """Why a "met" answer's quote does not support it (None when it does): the reason the
        judge is told when it is asked again."""
        if not quoted_in(ans.evidence, response):
            return "Your evidence is not words of the reply."
        if self.grounding and not grounded_in(ans.evidence, item):
            return ("The words you quoted would fit any conversation: they name nothing of this "
                    "one.")
        return None

    def _do_verdict(self, item: EvalItem, response: str, c: str, ans: CriterionCheck) -> CriterionVerdict:
        if ans.met and not quoted_in(ans.evidence, response):
            why = ("judged met, but its evidence is not words of the response: "
                   f"{ans.evidence!r}" if ans.evidence.strip() else
                   "judged met without quoting the response")
            return CriterionVerdict(criterion=c, met=False, reason=why, evidence=ans.evidence)
        if ans.met and self.grounding and not grounded_in(ans.evidence, item):
            return CriterionVerdict(criterion=c, met=False, evidence=ans.evidence, reason=(
                "judged met, but the quote names nothing of this conversation"))
        return CriterionVerdict(criterion=c, met=ans.met, evidence=ans.evidence,
                                reason="met, quoting the response" if ans.met else "not met")

    def _avoid_verdict(self, item: EvalItem, response: str, c: str, ans: AvoidCheck) -> CriterionVerdict:
        if not ans.does_it:
            return CriterionVerdict(criterion=c, met=True, evidence=ans.evidence,
                                    reason="met: the judge found nothing that breaks it")
        if not quoted_in(ans.evidence, response):
            return CriterionVerdict(criterion=c, met=True, evidence=ans.evidence, reason=(
                "met: judged broken, but the words quoted as breaking it are not words of the "
                f"response: {ans.evidence!r}" if ans.evidence.strip() else
                "met: judged broken without quoting the response"))
        if self.grounding and not shows_violation(ans.evidence, item, c):
            return CriterionVerdict(criterion=c, met=True, evidence=ans.evidence, reason=(
                "met: judged broken, but the quoted words are new content, not what the user "
                "already heard or the criterion forbids"))
        return CriterionVerdict(criterion=c, met=False, evidence=ans.evidence,
                                reason=f"broken ({ans.forbidden or 'the forbidden thing'}), quoting the response")

    async def _assess_all(self, item: EvalItem, response: str, sample: int) -> RQJudgment | Unscorable:
        chat = _messages("judge_rq", **judge_context(item),
                         rq_criteria=list(item.rubric.rq_criteria), response=response)
        answers: list[dict] = []
        want = len(item.rubric.rq_criteria)
        for _ in range(self.reasks + 1):
            try:
                ans = await self._ask(chat, RQJudgment, "judge_rq", sample)
            except GenerationFailed as e:
                return Unscorable("the judge gave no answer that fits the RQJudgment schema",
                                  {"error": str(e), "details": e.evidence, "answers": answers})
            ans = ans if isinstance(ans, RQJudgment) else RQJudgment.model_validate(ans)
            answers.append(ans.model_dump())
            if len(ans.criteria) == want:
                # the verdict is mechanical: recompute it from the criteria, never trust it
                crit = [CriterionVerdict(criterion=c, met=v.met, reason=v.reason)
                        for c, v in zip(item.rubric.rq_criteria, ans.criteria)]
                return RQJudgment(criteria=crit, verdict="pass" if all(c.met for c in crit) else "fail")
            chat = chat + [
                {"role": "assistant", "content": json.dumps(ans.model_dump(), ensure_ascii=False)},
                {"role": "user", "content": f"You assessed {len(ans.criteria)} criteria; there are "
                 f"{want}. Assess each one, in order, and answer again."}]
        return Unscorable(f"the judge never assessed all {want} criteria", {"answers": answers})


def judge_temperature(spec: str, temperature: float | None) -> float | None:
    """The sampling temperature a judge asks for: 0 (as deterministic as the provider allows),
    except Anthropic, whose current SDK's ``messages.create`` takes no temperature."""
    return None if spec.strip().lower().startswith("anthropic:") else temperature


def no_judge_message(what: str = "score ihbench") -> str:
    return (f"no judge model configured for `bargein {what}`. Fix: pass --judge PROVIDER:MODEL "
            "(e.g. openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, or "
            "llamacpp:/path/model.gguf; any OpenAI-compatible server through OPENAI_BASE_URL) or "
            f"set {JUDGE_ENV}=PROVIDER:MODEL. For pipeline smoke tests only, --judge smoke runs "
            f"the rule-based checks ({SMOKE_STAMP}).")


def resolve_judge_spec(spec: str | None, *, what: str = "score ihbench") -> str:
    """The judge to use: ``spec``, else ``$BARGEIN_JUDGE``; a clear error when neither is set."""
    spec = (spec or "").strip() or os.environ.get(JUDGE_ENV, "").strip()
    if not spec:
        raise ConfigError(no_judge_message(what))
    if spec.lower() in ("offline", "rule", "rules", "rule-based"):
        raise ConfigError(f"--judge {spec}: the rule-based judge is only a smoke test now; pass "
                          f"--judge smoke to run it ({SMOKE_STAMP}), or a model: "
                          + no_judge_message(what).split("Fix: ", 1)[1])
    if spec.lower() != SMOKE and ":" not in spec:
        raise ConfigError(f"--judge {spec}: not a judge. Fix: pass --judge PROVIDER:MODEL (e.g. "
                          "openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, or "
                          "llamacpp:/path/model.gguf), or --judge smoke for a pipeline smoke test")
    return spec


def get_judge(spec: str | None, *, workdir: Path | None, **options: Any) -> Judge:
    """The judge for ``spec``; ``options`` (``rq_mode``, ``both_orders``, ``grounding``) go to
    a model judge (:class:`LLMJudge`); the smoke judge has none."""
    spec = resolve_judge_spec(spec)
    if spec.lower() == SMOKE:
        return SmokeJudge()
    return LLMJudge(spec, workdir=workdir, **options)
