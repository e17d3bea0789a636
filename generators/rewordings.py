"""Other wordings of talking-point sentences (``catalogue/rewordings_<domain>.yaml``).

A person who starts a point afresh after being cut off says it another way, not word for word
(IHBench: a recovery does not repeat what the caller already heard). Each entry of a rewordings
file is one sentence of a talking point exactly as the domain catalogue has it (``say``) and
other wordings of it (``also``) with the same ``{slots}``, values and ending::

    - say: "I have the record for {full_name}."
      also: ["I've pulled up {full_name}'s record.", "{full_name}'s record is open in front of me."]

``reword`` finds any wording of any entry in a text (slots match their filled values) and says
it in one of the entry's wordings: at random when a talking point is first delivered, in a
wording other than the one said when ``fresh`` (a restart)::

    reword("Thanks. I have the record for Ann Lee.", rng, fresh=True)
    -> [("Thanks. ", False), ("I've pulled up Ann Lee's record.", True), ("", False)]

The reworded pieces come back marked so that word-level rewording leaves them alone (a later
restart must still recognise the wording it said).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from bargein.errors import ConfigError

_SLOT = re.compile(r"\{(\w+)\}")
# a slot's filled value: no question or exclamation mark, and no sentence end inside it (a
# title like "Dr. Ruiz" or "St. Louis" is no sentence end)
_VALUE = (r"(?:(?!(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bMrs)(?<!\bSt)(?<!\bJr)(?<!\bNo)[.]\s)[^?!])+?"
          r"(?<!\bDr)(?<!\bMr)(?<!\bMs)(?<!\bMrs)")      # and no value ends in a title


@dataclass(frozen=True)
class Group:
    """The wordings of one sentence; ``wordings[0]`` is the catalogue's own."""

    domain: str
    wordings: tuple[str, ...]

    @property
    def slots(self) -> list[str]:
        return sorted(_SLOT.findall(self.wordings[0]))


def _files() -> list[tuple[str, str]]:
    root = resources.files("bargein.generators.catalogue")
    return sorted((p.name[len("rewordings_"):-len(".yaml")], p.read_text(encoding="utf-8"))
                  for p in root.iterdir() if p.name.startswith("rewordings_")
                  and p.name.endswith(".yaml"))


def fingerprint() -> str:
    """SHA-256 over every rewordings file (editing one invalidates cached conversations)."""
    h = hashlib.sha256()
    for name, text in _files():
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def _problems(say: str, other: str) -> list[str]:
    out = []
    if sorted(_SLOT.findall(other)) != sorted(_SLOT.findall(say)):
        out.append("its {slots} differ from the sentence's")
    if other.count("?") != say.count("?") or other.rstrip()[-1:] != say.rstrip()[-1:]:
        out.append("it does not end the way the sentence ends (question or statement)")
    return out


@lru_cache(maxsize=1)
def groups() -> tuple[Group, ...]:
    """Every entry of every rewordings file, checked: a wording with other slots or another
    ending is refused with the file, the entry and the fix."""
    out = []
    for domain, text in _files():
        where = f"rewordings_{domain}.yaml"
        try:
            rows = yaml.safe_load(text) or []
        except yaml.YAMLError as e:
            raise ConfigError(f"{where}: not valid YAML ({e})") from e
        if not isinstance(rows, list):
            raise ConfigError(f"{where}: must be a list of {{say, also}} entries")
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("say"), str) or \
                    not isinstance(row.get("also"), list):
                raise ConfigError(f"{where}[{i}]: an entry is {{say: <sentence>, also: [<wordings>]}}")
            say = " ".join(row["say"].split())
            also = []
            for w in row["also"]:
                w = " ".join(str(w).split())
                if probs := _problems(say, w):
                    raise ConfigError(f"{where}[{i}] wording {w!r} of {say!r}: {'; '.join(probs)}; "
                                      "keep the same slots and the same ending")
                if w and w != say and w not in also:
                    also.append(w)
            if also:
                out.append(Group(domain, (say, *also)))
    return tuple(out)


def _compile(wording: str) -> tuple[str, re.Pattern]:
    """(the longest literal run, lower-cased, to test before the pattern; the pattern)."""
    parts, seen = [], set()
    for i, part in enumerate(_SLOT.split(wording)):
        if i % 2:
            parts.append(f"(?P={part})" if part in seen else f"(?P<{part}>{_VALUE})")
            seen.add(part)
        else:
            parts.append(r"\s+".join(re.escape(w) for w in part.split(" ")))
    literal = max(_SLOT.split(wording)[::2], key=len).strip().lower()
    # a whole sentence: at the start of the text or after a sentence end (or a comma), and
    # followed by a space or the end
    return literal, re.compile(r"(?:^|(?<=[.?!,:] ))" + "".join(parts) + r"(?=\s|$)")


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[Group, tuple[tuple[str, re.Pattern], ...]], ...]:
    """The entries, the most specific first (most words outside slots): "You told me it's
    going to {recipient}." is its own entry's, not taken by "You mentioned {topic}."."""
    def words(g: Group) -> int:
        return min(len(re.findall(r"[A-Za-z']+", _SLOT.sub("", w))) for w in g.wordings)
    return tuple((g, tuple(_compile(w) for w in g.wordings))
                 for g in sorted(groups(), key=lambda g: -words(g)))


def _fill(wording: str, m: re.Match) -> str:
    return _SLOT.sub(lambda s: m.group(s.group(1)), wording)


def reword(text: str, rng: random.Random, rate: float = 0.75,
           fresh: bool = False) -> list[tuple[str, bool]]:
    """``text`` as pieces ``(piece, reworded)``: each sentence that is one wording of an entry
    is said in one of the entry's wordings (with probability ``rate``; always in another one
    when ``fresh``) and marked; the rest comes back unmarked."""
    if not text:
        return [(text, False)]
    low = text.lower()
    spans: list[tuple[int, int, str]] = []
    for group, pats in _compiled():
        for k, (literal, pat) in enumerate(pats):
            if literal not in low:
                continue
            m = pat.search(text)
            if not m or any(a < m.end() and m.start() < b for a, b, _ in spans):
                continue
            if fresh:
                choice = rng.choice([w for j, w in enumerate(group.wordings) if j != k])
            elif rng.random() < rate:
                choice = rng.choice(group.wordings)
            else:
                choice = group.wordings[k]
            spans.append((m.start(), m.end(), _fill(choice, m)))
            break
    out, at = [], 0
    for a, b, said in sorted(spans):
        out += [(text[at:a], False), (said, True)]
        at = b
    out.append((text[at:], False))
    return out


def canonical(text: str) -> str:
    """``text`` with every sentence that is a wording of an entry said the catalogue's way
    (the entry's ``say``), so that a reading of the sentence ("does it quote a price?") does
    not change with the wording drawn."""
    if not text:
        return text
    low = text.lower()
    spans: list[tuple[int, int, str]] = []
    for group, pats in _compiled():
        for literal, pat in pats:
            if literal not in low:
                continue
            m = pat.search(text)
            if not m or any(a < m.end() and m.start() < b for a, b, _ in spans):
                continue
            spans.append((m.start(), m.end(), _fill(group.wordings[0], m)))
            break
    out, at = [], 0
    for a, b, said in sorted(spans):
        out += [text[at:a], said]
        at = b
    return "".join(out + [text[at:]])
