"""Phrase banks (YAML package data) and the word-level text helpers the simulators share.

Banks live in ``generators/catalogue/phrases_{user,assistant,pairs}.yaml``; ``bank("user",
"filler")`` returns the alternatives, ``pick(rng, "user", "filler")`` draws one, ``fill`` fills
``{slots}`` strictly (a missing slot raises :class:`ConfigError` naming bank and slot).

Words are whitespace tokens. The heard prefix of a message is the char-exact prefix ending at the
end of word ``k``::

    text  "Your claim needs three documents: a photo of the damage"
    k=6   "Your claim needs three documents: a"   cut_char_offset = 35
"""

from __future__ import annotations

import random
import re
import string
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from bargein import lexicon
from bargein.generators import rewordings as R

from bargein.errors import ConfigError

BANK_FILES = ("user", "assistant", "pairs")
_SLOT = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"\S+")

# the one lexicon (bargein.lexicon): backchannels and the words that carry no content
BACKCHANNELS = lexicon.BACKCHANNELS
STOPWORDS = lexicon.CONTENT_STOP_WORDS


@lru_cache(maxsize=None)
def _load(name: str) -> dict[str, Any]:
    if name not in BANK_FILES:
        raise ConfigError(f"unknown phrase bank file {name!r}; valid: {', '.join(BANK_FILES)}")
    path = resources.files("bargein.generators.catalogue") / f"phrases_{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ConfigError(f"phrase bank {path} must be a YAML mapping of lists")
    for key, items in data.items():
        if not isinstance(items, list) or not items or (
                not key.endswith(("_open", "_tail")) and not any(items)):
            raise ConfigError(f"phrase bank phrases_{name}.yaml: {key!r} must be a non-empty list")
    return data


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """SHA-256 over every phrase bank: editing one invalidates cached offline conversations."""
    import hashlib

    h = hashlib.sha256(R.fingerprint().encode())
    for name in BANK_FILES:
        path = resources.files("bargein.generators.catalogue") / f"phrases_{name}.yaml"
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def bank(file: str, key: str) -> tuple[Any, ...]:
    """All alternatives of one phrase bank entry (strings, or dicts for ``pairs``)."""
    data = _load(file)
    if key not in data:
        raise ConfigError(f"phrase bank phrases_{file}.yaml has no entry {key!r}; "
                          f"entries: {', '.join(sorted(data))}")
    return tuple(data[key])


def bank_keys(file: str) -> frozenset[str]:
    return frozenset(_load(file))


def pair(detail: dict[str, str], kind: str) -> dict[str, str]:
    """The paired lines a plan detail names: ``{"pair": "topic_switch.travel#3"}`` (a bare
    index, as older plans have it, names the generic list ``kind``)."""
    key, _, i = detail["pair"].rpartition("#")
    return bank("pairs", key or kind)[int(i)]


def answers(paired: dict[str, Any]) -> tuple[str, ...]:
    """Every wording of a pair's answer: ``assistant`` is one line or a list of lines that say
    the same thing (the first is the pair's own)."""
    a = paired.get("assistant") or ()
    return (a,) if isinstance(a, str) else tuple(a)


def answer(detail: dict[str, str], kind: str, rng: random.Random) -> str:
    """The agent's answer to the paired remark a plan detail names, in one of its wordings."""
    return rng.choice(answers(pair(detail, kind)))


def pick(rng: random.Random, file: str, key: str, **slots: str) -> str:
    """Draw one alternative and fill its slots."""
    return fill(rng.choice(bank(file, key)), where=f"{file}.{key}", **slots)


def _words(text: str) -> set[str]:
    """Lower-case words, 'thanks' and 'thank' one word (for "Thanks, thank you.")."""
    return {"thank" if w == "thanks" else w for w in re.findall(r"[a-z']+", text.lower())}


def compose(rng: random.Random, file: str, key: str, **slots: str) -> str:
    """An opener, a core and a tail (entries ``key_open``, ``key``, ``key_tail``; any of the
    outer two may be missing or hold ""), so a few dozen entries give hundreds of wordings."""
    data = _load(file)
    core = fill(rng.choice(bank(file, key)), where=f"{file}.{key}", **slots)
    opener = rng.choice(data.get(f"{key}_open", [""]))
    if opener and _words(opener) & _words(core):
        opener = ""                 # not "Thanks, thanks for that.", "Great, that's great."
    if opener and key == "turn_ack" and len(core.split()) == 1 and _words(core) != {"thank"}:
        opener = ""                 # "Perfect, appreciated.", "Lovely, wonderful." read as two
                                    # acknowledgements stacked (a hand read); "Great, thanks." not
    tail = fill(rng.choice(data[f"{key}_tail"]), where=f"{file}.{key}_tail", **slots) \
        if data.get(f"{key}_tail") else ""
    slot_first = {str(v).split()[0] for v in slots.values() if str(v).split()}
    if opener and not opener.rstrip().endswith((".", "!", "?")) and not core.startswith(("I ", "I'")) \
            and core.split()[0].strip(",.?!") not in {s.strip(",.?!") for s in slot_first}:
        core = core[:1].lower() + core[1:]      # never a value's own casing ("Sunday, ...")
    return tidy(join(opener, core, tail))


def pick_filled(rng: random.Random, file: str, key: str, **slots: str) -> str:
    """Draw among the alternatives whose slots are all given (falls back to any)."""
    options = [t for t in bank(file, key) if set(_SLOT.findall(t)) <= set(slots)]
    return fill(rng.choice(options or list(bank(file, key))), where=f"{file}.{key}", **slots)


def fill(template: str, *, where: str = "phrase", **slots: str) -> str:
    missing = [s for s in _SLOT.findall(template) if s not in slots]
    if missing:
        raise ConfigError(f"{where}: template {template!r} needs slots {missing}")
    return tidy(template.format(**slots))


def be_for(label: str) -> str:
    """"is" or "are" for a label as a subject: "the record types are", "the email address is"."""
    last = label.split()[-1].lower() if label.split() else ""
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is", "ics")) \
        and last not in ("news", "series", "species", "means")
    return "are" if plural else "is"


# the noun is the object of a gerund, which is the subject: "asking for the last four digits is
# what would stop them" (a hand read of seed 7070: repaired to "are")
_GERUND_LEAD = re.compile(r"(?:^|[.!?,]\s+)(?:[A-Z]?[a-z]+ing|(?:All|What) (?:I|we) (?:do|need|use) "
                          r"(?:with|is))\b[^.!?,]*$")   # "Giving you the ...", "All I do with the ..."
_GERUND_BEFORE = re.compile(r"\b[a-z]+ing (?:for|about|with|of|to|on|in)\b(?:\s+[a-z]+){0,3}\s*$|"
                            r"(?:^|[.!?,]\s+)[A-Z]?[a-z]+ing\s*$")


def tidy(text: str) -> str:
    """Capitalise every sentence start and repair the casing and agreement slips that filling
    slots can make ("Thanks. {new} it is." with a lower-case value, "I shares ...")."""
    from bargein.verify.quality import grammar_issues

    text = " ".join(text.split())
    # "my last four digits of the card" -> "the last four digits of my card"
    text = re.sub(r"\b([Mm]y|[Yy]our) (last four digits) of the\b",
                  lambda m: f"{'T' if m.group(1)[0].isupper() else 't'}he {m.group(2)} of "
                            f"{m.group(1).lower()}", text)
    text = re.sub(r"\b(last four digits of (?:my|your|the|their)(?: [A-Za-z]+){1,4}) is\b",
                  lambda m: m.group(0) if _GERUND_LEAD.search(m.string[:m.start()])
                  else f"{m.group(1)} are", text)
    text = re.sub(r"\b(last four digits of (?:my|your|the|their) [A-Za-z]+(?: still)?) (bothers|is still|seems)\b",
                  lambda m: m.group(0) if _GERUND_LEAD.search(m.string[:m.start()]) else
                  f"{m.group(1)} " + {"bothers": "bother", "is still": "are still",
                                                "seems": "seem"}[m.group(2)], text)
    text = re.sub(r"\b([Ww])hat's (the last four digits)\b", r"\1hat are \2", text)
    text = re.sub(r"\b([Tt]he (?:last four )?digits(?: still)?) (is|doesn't|was|has)\b",
                  lambda m: m.group(0) if _GERUND_BEFORE.search(m.string[:m.start()]) else
                  f"{m.group(1)} " + {"is": "are", "doesn't": "don't", "was": "were",
                                      "has": "have"}[m.group(2)], text)
    # a plural subject and a singular verb ("why the last four digits matters")
    text = re.sub(r"\b((?:the |my |your |these |those )?(?:[a-z]+ )?(?:digits|details|documents|records|"
                  r"photos|receipts|charges|fees|dates|numbers|payments|statements))"
                  r" (?:still )?(matters|seems|looks|is needed|is required|is|bothers)\b",
                  lambda m: m.group(0) if re.search(r"\bof\s*$", m.string[:m.start()])
                  or _GERUND_BEFORE.search(m.string[:m.start()])
                  or " of " in f" {m.group(1)}" else f"{m.group(1)} " + {
                      "matters": "matter", "seems": "seem", "looks": "look", "is needed": "are needed",
                      "is required": "are required", "is": "are", "bothers": "bother"}[m.group(2)], text)
    # "a thirty dollars fee" (a spoken amount before a noun; seed 4242): "a thirty-dollar fee"
    num = (r"(?:\d[\d,.]*|(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
           r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
           r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|and)(?:[- ](?:one|two|three|four|"
           r"five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
           r"hundred|thousand|and))*)")
    text = re.sub(r"\b([Aa]n?) (" + num + r") dollars (fee|charge|deductible|credit|"
                  r"discount|penalty|deposit|surcharge|difference|refund)\b",
                  lambda m: f"{m.group(1)} {m.group(2)}-dollar {m.group(3)}", text)
    for _ in range(3):       # edits that overlap ("is" at a sentence start: its capital and its
        issues = grammar_issues(text)     # agreement, once made "Ire") are made one pass apart
        if not issues:
            break
        left = len(text) + 1
        for s, e, new, _ in sorted(issues, key=lambda x: x[0], reverse=True):
            if e <= left:
                text = text[:s] + new + text[e:]
                left = s
    return text


def sentence(text: str) -> str:
    """Collapse whitespace and capitalise the first letter."""
    text = " ".join(text.split())
    return text[:1].upper() + text[1:] if text else text


def join(*parts: str) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


_LABEL_WORDS = {"ssn": "Social Security number", "dob": "date of birth", "id": "ID", "url": "URL",
                "zip": "ZIP code", "pin": "PIN", "addon": "add-on"}


_LABEL_KEYS = {"account_created_year": "year the account was opened",
               "lost_device": "reason for the reset",
               "project_cost": "estimated cost", "needed_by": "deadline",
               "lost_date": "date it went missing", "last_used": "last place the card was used"}


def label(key: str) -> str:
    """How people say a fact key: ``account_number`` -> ``account number``,
    ``card_last4`` -> ``last four digits of the card``, ``student_id`` -> ``student ID``."""
    if key in _LABEL_KEYS:
        return _LABEL_KEYS[key]
    words = [w for w in key.split("_") if w]
    if words and words[-1] == "last4":
        rest = " ".join(_LABEL_WORDS.get(w, w) for w in words[:-1])
        return f"last four digits of the {rest}" if rest else "last four digits"
    return " ".join(_LABEL_WORDS.get(w, w) for w in words)


# --- words -----------------------------------------------------------------------------------
def word_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def n_words(text: str) -> int:
    return len(word_spans(text))


def prefix_words(text: str, k: int) -> str:
    """The char-exact prefix of ``text`` that ends with its ``k``-th word."""
    spans = word_spans(text)
    if not 1 <= k <= len(spans):
        raise ValueError(f"word index {k} outside 1..{len(spans)}")
    return text[: spans[k - 1][1]]


def remainder_after(text: str, k: int) -> str:
    """What was not heard: the words after the ``k``-th, without leading space."""
    spans = word_spans(text)
    return text[spans[k][0]:] if k < len(spans) else ""


def word_index_of_prefix(text: str, prefix: str) -> int | None:
    """``k`` when ``prefix`` is exactly the first ``k`` words of ``text`` (word boundary), else None."""
    p = prefix.rstrip()
    if not p or not text.startswith(p):
        return None
    for k, (_, end) in enumerate(word_spans(text), 1):
        if end == len(p):
            return k
        if end > len(p):
            return None
    return None


def norm(token: str) -> str:
    return token.lower().strip(string.punctuation + "\u2014\u2013\u2019\u201c\u201d")


def tokens(text: str) -> list[str]:
    return [t for t in (norm(w) for w in text.split()) if t]


def content_words(text: str) -> set[str]:
    """Lower-case words that carry content (not stopwords, at least 3 letters)."""
    out = set()
    for t in tokens(text):
        for part in re.split(r"[-/]", t):
            if len(part) >= 3 and part not in STOPWORDS and not part.isdigit():
                out.add(part)
    return out


def unheard_words(utterance: str, heard: str, remainder: str, context: tuple[str, ...] = ()) -> list[str]:
    """Content words of ``utterance`` that occur only in the unheard remainder.

    A word counts as leaked when it is in the remainder but neither in the heard prefix nor in
    any ``context`` text (earlier messages, the user's own facts).
    """
    known = content_words(heard)
    for c in context:
        known |= content_words(c)
    return sorted((content_words(utterance) & content_words(remainder)) - known)


def is_backchannel(text: str) -> bool:
    return lexicon.is_backchannel(text)


def has_placeholder(text: str) -> bool:
    """Template slots or bracketed placeholders left in generated text."""
    return bool(re.search(r"\{\w+\}|\[[A-Z_ ]{3,}\]|<[a-z_]+>|\bXXX+\b|\bTBD\b", text))


_BE = {"I": ("I'm", "I was"), "you": ("you're", "you were")}
_IRREGULAR = {"has": "have", "does": "do", "goes": "go", "is": "", "was": ""}


def _base(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("shes", "ches", "sses", "xes", "zes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb


def _as_subject(value: str, subject: str) -> str:
    """A predicate about the caller ("shares the account with X and needs Y") with ``subject``
    ("I" or "you") in front and the verbs agreeing ("I share ... and need ...")."""
    out = value.strip().rstrip(".")
    possessive = "my" if subject == "I" else "your"
    out = re.sub(r"\btheir\b", possessive, out)
    out = re.sub(r"\bthemselves\b", "myself" if subject == "I" else "yourself", out)

    def verb(m: re.Match) -> str:
        lead, w = m.group(1), m.group(2)
        if w in ("is", "was"):
            if not lead:
                return _BE[subject][0 if w == "is" else 1]
            return lead + {("I", "is"): "am", ("you", "is"): "are", ("I", "was"): "was",
                           ("you", "was"): "were"}[(subject, w)]
        return lead + _base(w)

    ok = lambda m: verb(m) if _verbish(m.group(2)) else m.group(0)  # noqa: E731
    first = out.split(" ", 1)[0]
    if first.endswith("ing") and len(first) > 4:
        return f"{_BE[subject][0]} {out}"
    out = re.sub(r"^()([a-z]+)\b", ok, out)
    out = re.sub(r"(\band )([a-z]+)\b", ok, out)
    if out.startswith(("I'm", "you're", "I was", "you were")):
        return out
    return f"{subject} {out}"


_NOT_VERBS = frozenset("its this was his hers ours yours always perhaps sometimes news series "
                       "analysis less unless plus across business".split())


def _verbish(word: str) -> bool:
    return word in ("is", "was", "has", "does") or (
        word.endswith("s") and word not in _NOT_VERBS and len(word) > 3 and not word.endswith("ss"))


_SPELLED = re.compile(r"[A-Z](?:[ ,]+[A-Z]\b){2,}")   # a code spelled out: "I N V, eight ..."


def first_person(value: str) -> str:
    """A hidden fact written about the caller ("is travelling to Reno and needs ...") as the
    caller says it ("I'm travelling to Reno and need ...")."""
    out = value.strip().rstrip(".")
    if re.match(r"^[A-Z]", out) and not re.match(r"^(Is|Was|Has|Had|Needs|Wants)\b", out):
        return out
    if re.match(r"^(I\b|I'|my\b|we\b|our\b)", out) or _SPELLED.match(out):
        return out
    return _as_subject(out[:1].lower() + out[1:], "I")


def second_person(value: str) -> str:
    """The same fact as the assistant says it back ("you're travelling to Reno and need ...")."""
    return re.sub(r"\b(and|but) am\b", r"\1 are", _second_person(value))


def _second_person(value: str) -> str:
    out = value.strip().rstrip(".")
    if _SPELLED.match(out):
        return out                      # a code spelled out: the letter I of "I N V, eight ..."
    if re.match(r"^(?:I\b|I'm)", out):
        out = re.sub(r"^I'm\b", "you're", out)
        out = re.sub(r"^I\b", "you", out)
        return re.sub(r"\bmy\b", "your", out)
    return _as_subject(out[:1].lower() + out[1:], "you")


_PREDICATE = re.compile(r"^(is|was|has|had|needs|wants|does|lives|works|owns|rents|can't|cannot|"
                        r"will|would|recently|already|never|just)\b", re.I)


def clause(value: str) -> str | None:
    """A value that reads as something about the caller ("has a flood policy", "staying with a
    sister") as the caller says it ("I have a flood policy"); None for plain values."""
    v = value.strip()
    first = v.split(" ", 1)[0].lower() if v else ""
    if _SPELLED.match(v):
        return None                             # a code spelled out ("I N V, eight eight ..."):
                                                # the letter I is not the caller speaking
    if re.match(r"(?:I|I'm|I've|my|we|we're|our)\b", v):
        return v.rstrip(".")                    # said as the caller says it already
    if re.match(r"(?:(?:a|the|my|our|their)\s+)?\w+(?:\s\w+)?\s(?:lost|separated|had|dropped|got|"
                r"moved|closed|went|is|are|was|were)\b", v):
        return v.rstrip(".")                    # a whole clause ("parents separated this year")
    if _PREDICATE.match(v):
        return first_person(v)
    if re.match(r"(?:found|bought|got|paid|sent|saw|don't|didn't|did not|never)\b", v):
        return "I " + v.rstrip(".")            # "found it cheaper elsewhere": "I found ..."
    if first.endswith("ing") and first.isalpha() and len(first) > 4 and v[:1].islower():
        return "I'm " + v.rstrip(".")
    if (first.endswith("ed") and first.isalpha() and len(first) > 4 and v[:1].islower()
            and len(v.split()) >= 3):               # "ordered the wrong size": "I ordered ..."
        return "I " + v.rstrip(".")
    return None


# --- where a cut must not fall ---------------------------------------------------------------
_NUMBER_WORDS = frozenset("""zero oh one two three four five six seven eight nine ten eleven twelve
thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty
seventy eighty ninety hundred thousand million double triple""".split())
_UNIT_WORDS = frozenset("""am pm a.m. p.m. percent dollars dollar cents days day weeks week months
month years year hours hour minutes minute gigabytes gb mb lines line credits miles points nights
seats seat business working calendar per""".split())
_ACRONYM_NOUNS = frozenset({"ID", "IDs", "PIN", "SIM", "PDF", "APR", "SSN", "VIN", "IRA", "ZIP"})
_NAME_LINKS = frozenset({"and", "of", "&", "de", "the"})
_SPELL_LINKS = frozenset({"at", "dot", "dash", "underscore", "hyphen"})


_HONORIFICS = frozenset({"Dr.", "Mr.", "Mrs.", "Ms.", "Mx.", "Prof.", "St."})


def protected_cuts(text: str, values: tuple[str, ...] = ()) -> set[int]:
    """Word indices ``k`` after which a cut would split one thing that is said as a whole: a
    proper name or title ("Premium | Select", "Rice, Duncan | and Mitchell"), a date or time
    ("12:00 | PM", "June 12, | 2025"), an amount with its unit ("two | business days"), a
    spelled-out code or address ("kscott three | two at proton dot me"), or any of ``values``
    (the scenario's facts, as written and as spoken: "a wired | ethernet connection")."""
    spans = word_spans(text)
    words = [text[a:b] for a, b in spans]
    n = len(words)
    out: set[int] = set()

    def protect(i: int, j: int) -> None:          # words i..j (0-based, inclusive) stay whole
        out.update(range(i + 1, j + 1))

    low = text.lower()
    for v in values:
        v = " ".join(str(v).split())
        if len(v.split()) < 2:
            continue
        for m in re.finditer(re.escape(v.lower()), low):
            i = sum(1 for a, _ in spans if a < m.start() + 1) - 1
            j = sum(1 for a, _ in spans if a < m.end()) - 1
            if 0 <= i < j:
                protect(i, j)

    def capital(w: str) -> bool:
        core = w.strip("\"'()[],;:")
        return bool(core) and (core[0].isupper() or core[0].isdigit() or core[0] in "$€£#") \
            and core not in ("I", "I'm", "I'll", "I've", "I'd")

    i = 0
    while i < n:                                   # runs of capitalised words and numbers
        if not capital(words[i]):
            i += 1
            continue
        j = i
        while j + 1 < n and (not words[j].endswith((".", "?", "!", ":", ";"))
                             or words[j] in _HONORIFICS):      # "Dr. | Joe Roy" is one name
            nxt = words[j + 1]
            if capital(nxt):
                j += 1
            elif (nxt.lower() in _NAME_LINKS and j + 2 < n and capital(words[j + 2])
                  and not words[j + 1].endswith((",", "."))):
                j += 2
            else:
                break
        if j > i:
            protect(i, j)
        i = j + 1

    for i in range(1, n):                          # "a photo | ID", "your student | ID": an acronym
        core = words[i].strip("\"'()[],;:.?!")       # head noun stays with its modifier
        if core in _ACRONYM_NOUNS and not words[i - 1].endswith((".", ",", "?", "!", ":", ";")):
            protect(i - 1, i)

    def numeric(w: str) -> bool:
        core = norm(w)
        return bool(core) and (any(c.isdigit() for c in core) or core in _NUMBER_WORDS)

    for i in range(n - 1):                         # an amount, a time or a duration and its unit
        if numeric(words[i]) and not words[i].endswith((".", ",", "?", "!", ";", ":")):
            for j in (i + 1, i + 2):
                if j < n and norm(words[j]) in _UNIT_WORDS:
                    protect(i, j)
                    if norm(words[j]) == "per" and j + 1 < n:
                        protect(i, j + 1)
                if j < n and words[j - 1].endswith((",", ".", "?", "!")):
                    break

    def spelled(w: str) -> bool:
        core = norm(w)
        return core in _NUMBER_WORDS or (len(w.strip(",.")) == 1 and w.strip(",.").isalpha()
                                         and w.strip(",.").isupper())

    i = 0
    while i < n:                                   # "L S U two eight", "three two at proton dot me"
        if not spelled(words[i]):
            i += 1
            continue
        j = i
        while j + 1 < n and not words[j].endswith((".", "?", "!", ",")):
            nxt = norm(words[j + 1])
            if spelled(words[j + 1]):
                j += 1
            elif nxt in _SPELL_LINKS and j + 2 < n:
                j += 2
            else:
                break
        if j > i and sum(1 for w in words[i:j + 1] if spelled(w)) >= 2:
            protect(max(0, i - 1) if i and norm(words[i - 1]).isalnum() and not
                    words[i - 1].endswith(",") and not norm(words[i - 1]) in STOPWORDS else i, j)
        i = j + 1
    return {k for k in out if 0 < k < n}


def vary(text: str, rng: random.Random, rate: float = 0.75, fresh: bool = False) -> str:
    """A talking point as one agent says it: a sentence with other wordings in the catalogue's
    rewordings files is said in one of them (``bargein.generators.rewordings``), and in the rest
    each ``paraphrase`` rule that matches is applied with probability ``rate``, choosing one of
    its wordings (the script's own among them).

    ``fresh``: the text was said before (a sentence started again after an interruption), so a
    wording it already has is said another way, as people do when they restart a sentence."""
    return "".join(piece if done else _vary_words(piece, rng, rate, fresh)
                   for piece, done in R.reword(text, rng, rate, fresh))


def _vary_words(text: str, rng: random.Random, rate: float, fresh: bool) -> str:
    if not text.strip():
        return text
    # whole-sentence rewordings first (a word-level rule would stop them matching)
    for rule in sorted(bank("assistant", "paraphrase"), key=lambda r: -len(r["match"])):
        pattern = _rule(rule["match"])
        if fresh:
            pattern = _any_wording(rule["match"], tuple(rule["say"]))
        m = pattern.search(text)
        if not m or rng.random() >= rate:
            continue
        say = [w for w in rule["say"] if not fresh or m.expand(w) != m.group(0)] or list(rule["say"])
        text = pattern.sub(rng.choice(say), text)
    return text


@lru_cache(maxsize=None)
def _any_wording(pattern: str, says: tuple[str, ...]) -> re.Pattern:
    """The rule's pattern or any of its sentence-long wordings said literally (a short wording
    like "I have" would match inside other sentences)."""
    alts = [pattern] + [(r"\b" if w[:1].isalnum() else "") + re.escape(w)
                        + (r"\b" if w[-1:].isalnum() else "") for w in says
                        if "\\" not in w and len(w.split()) >= 5]   # whole sentences only
    return re.compile("|".join(f"(?:{a})" for a in alts))


@lru_cache(maxsize=None)
def _rule(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ConfigError(f"phrases_assistant.yaml paraphrase: bad pattern {pattern!r}: {e}") from e
