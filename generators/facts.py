"""Concrete fictional user facts: Faker-seeded, consistent within a scenario, never placeholders.

One :class:`FactMaker` per scenario. It draws a persona once (name, home city, birth date) so
that the email, address and phone of the same person agree, then makes each fact from a
:class:`FactSpec` declared in the catalogue::

    maker = FactMaker(seed=stable_int("facts", item_seed), today=date(2025, 6, 2))
    maker.make("account_number", FactSpec.parse({"kind": "code", "format": "#### #### ##"}))
    # UserFact(key='account_number', value='4471 0932 58', kind='code',
    #          spoken='four four seven one, zero nine three two, five eight')

Every value also has a spoken form (digits read in groups, amounts and dates in words) for
TTS. :func:`find_placeholders` flags template slots and stock dummy values in any text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

from faker import Faker

from bargein.errors import ConfigError
from bargein.generators.speech_forms import (
    amount_spoken, code_spoken, date_spoken, email_spoken, int_words, time_spoken,
)
from bargein.records import UserFact

# ---- placeholder scan ----------------------------------------------------------------------

_PLACEHOLDER_WORDS = (r"name|number|date|address|amount|email|phone|account|id|customer|user|"
                      r"insert|value|placeholder|company|city|zip|plan|order|here")
_PLACEHOLDER_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.I if i >= 4 else 0)
                                                           for i, p in enumerate((
    r"\[[A-Z][A-Z0-9_ .\-]*\]",                         # [NAME], [ACCOUNT_NUMBER]
    r"\{\{?[^{}\n]{0,60}\}?\}",                         # {slot}, {{ var }}, {}
    r"\bX{2,}\b|\bX{3,}|\$X+(?:\.X+)?\b",                # XXX, XXXX-1234, $XX.XX
    r"#{3,}",                                            # unfilled digit pattern
    r"\[[^\[\]\n]{0,40}\b(?:" + _PLACEHOLDER_WORDS + r")\b[^\[\]\n]{0,40}\]",   # [your name]
    r"<\s{0,8}[a-z_ ]{0,40}\b(?:" + _PLACEHOLDER_WORDS + r")\b[a-z_ ]{0,40}\s{0,8}>",  # <account>
    r"\bx{3,}\b",
    r"\b(?:john|jane|joe|richard|baby) (?:q\. )?(?:doe|roe|bloggs)\b",
    r"\b(?:john|jane) smith\b",
    r"\b1234? main (?:st|street)\b|\b123 (?:any|some|fake)\w* (?:st|street|road|rd)\b",
    r"\(?\b555\)?[-. ]\d{3}[-. ]?\d{4}\b|\b555[-. ]\d{4}\b",
    r"\b123[-. ]?456[-. ]?7890\b|\b0{3}[-. ]?0{3}[-. ]?0{4}\b|\b1234[- ]?5678\b",
    r"\blorem ipsum\b|\bTBD\b|\bTODO\b|\bFIXME\b|\bN/A\b",
    r"\b(?:acme|example) (?:corp|corporation|inc|co|company)\b",
    r"(?<![\w.+-])[\w.+-]+@(?:example|test|domain|email)\.(?:com|org|net)\b",  # one try per run
    r"\b(?:MM/DD/YYYY|DD/MM/YYYY|YYYY-MM-DD|MM/YY)\b",
)))


def find_placeholders(text: str) -> list[str]:
    """Every placeholder-looking span in ``text`` (slots, ``[NAME]``, ``XXX``, "John Doe", …).

    Linear in ``len(text)``: every repeat is bounded or anchored to the start of a run, so a
    100k-character token from a hostile answer costs milliseconds, not minutes."""
    found: list[str] = []
    for pat in _PLACEHOLDER_PATTERNS:
        for m in pat.finditer(text):
            if m.group(0) not in found:
                found.append(m.group(0))
    return found


def iter_strings(obj: Any, path: str = ""):
    """Yield ``(path, string)`` for every string inside a record/dict/list (keys included)."""
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{path}.{k}#key", str(k)
            yield from iter_strings(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from iter_strings(v, f"{path}[{i}]")


def placeholders_in(obj: Any) -> list[str]:
    """``path: span`` for every placeholder in every string of a record (empty when clean)."""
    first_path: dict[str, str] = {}
    for path, text in iter_strings(obj):        # each distinct string is scanned once
        first_path.setdefault(text, path)
    return [f"{p}: {s!r}" for t, p in first_path.items() for s in find_placeholders(t)]


# ---- fact specs ----------------------------------------------------------------------------

# kind -> allowed params (a spec is a kind name or {kind: ..., **params})
FACT_KINDS: dict[str, frozenset[str]] = {
    "name": frozenset(), "first_name": frozenset(), "last_name": frozenset(),
    "person": frozenset({"same_last_name"}),         # another person: dependant, beneficiary
    "email": frozenset(), "work_email": frozenset(), "phone": frozenset(),
    "address": frozenset(), "city": frozenset(), "date_of_birth": frozenset(),
    "date": frozenset({"min_days", "max_days", "weekdays_only"}),   # relative to "today"
    "time": frozenset({"start_hour", "end_hour", "step_min"}),
    "amount": frozenset({"min", "max", "cents", "step", "below"}),   # below: an amount fact listed
                                                     # earlier it stays under (72-95% of it)
    "integer": frozenset({"min", "max", "unit", "step"}),
    "code": frozenset({"format"}),                   # '#' digit, '?' capital letter
    "choice": frozenset({"options"}),
    "year": frozenset({"offset"}),                   # the scenario's year plus offset ("the 2024
                                                     # return" when "today" is in 2025)
    "company": frozenset(),
}


@dataclass(frozen=True)
class FactSpec:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Any, where: str = "fact") -> FactSpec:
        if isinstance(raw, str):
            raw = {"kind": raw}
        if not isinstance(raw, dict) or "kind" not in raw:
            raise ConfigError(f"{where}: a fact spec is a kind name or a mapping with 'kind'; "
                              f"got {raw!r}. Kinds: {', '.join(sorted(FACT_KINDS))}")
        kind = raw["kind"]
        if kind not in FACT_KINDS:
            raise ConfigError(f"{where}: unknown fact kind {kind!r}; valid kinds: "
                              f"{', '.join(sorted(FACT_KINDS))}")
        params = {k: v for k, v in raw.items() if k != "kind"}
        extra = set(params) - FACT_KINDS[kind]
        if extra:
            raise ConfigError(f"{where}: fact kind {kind!r} does not take {sorted(extra)}; "
                              f"it takes {sorted(FACT_KINDS[kind]) or 'no parameters'}")
        if kind == "code" and "#" not in str(params.get("format", "#")) and \
                "?" not in str(params.get("format", "?")):
            raise ConfigError(f"{where}: code format {params.get('format')!r} has no '#' or '?'")
        if kind == "choice" and not (isinstance(params.get("options"), list) and params["options"]):
            raise ConfigError(f"{where}: choice needs a non-empty 'options' list")
        return cls(kind=kind, params=params)


@lru_cache(maxsize=1)
def _common() -> dict[str, Any]:
    from bargein.generators.catalogue_loader import load_common

    return load_common()


_IRISH_O = {"obrien": "O'Brien", "oconnor": "O'Connor", "odonnell": "O'Donnell", "oneal": "O'Neal",
            "oneill": "O'Neill", "oconnell": "O'Connell", "okeefe": "O'Keefe", "ohara": "O'Hara",
            "orourke": "O'Rourke", "odell": "O'Dell"}


def surname(name: str) -> str:
    """A surname as it is written: Faker's en_US list has "Mccarthy" and "Obrien" (two hand
    reads flagged them in read-backs and rubrics)."""
    if name.lower() in _IRISH_O:
        return _IRISH_O[name.lower()]
    if len(name) > 3 and name.startswith("Mc") and name[2].islower():
        return "Mc" + name[2].upper() + name[3:]
    return name


@lru_cache(maxsize=1)
def _faker() -> Faker:
    return Faker("en_US")


_BANNED_NAMES = {("john", "doe"), ("jane", "doe"), ("john", "smith"), ("jane", "smith")}


class FactMaker:
    """Makes the facts of one scenario from one seed; the persona is shared by all facts."""

    def __init__(self, seed: int, today: date):
        self.fake = _faker()
        self.fake.seed_instance(seed)
        self.rng = self.fake.random
        self.today = today
        self.common = _common()
        self._persona: dict[str, Any] | None = None
        self._company_name: str | None = None
        self._amounts: dict[str, float] = {}        # amount facts made so far (for ``below``)

    # -- persona -------------------------------------------------------------------------
    @property
    def persona(self) -> dict[str, Any]:
        if self._persona is None:
            while True:
                first, last = self.fake.first_name(), surname(self.fake.last_name())
                if (first.lower(), last.lower()) not in _BANNED_NAMES:
                    break
            city = self.rng.choice(self.common["cities"])
            age_days = self.rng.randint(23 * 365, 76 * 365)
            self._persona = {"first_name": first, "last_name": last, "city": city,
                             "birth": self.today - timedelta(days=age_days),
                             "email_style": self.rng.randint(0, 3),
                             "email_num": self.rng.randint(2, 98)}
        return self._persona

    @property
    def company(self) -> str:
        if self._company_name is None:
            while True:
                c = self.fake.company()
                if not find_placeholders(c):
                    break
            self._company_name = c
        return self._company_name

    def slots(self) -> dict[str, str]:
        """Slot values every template may use besides the fact keys."""
        p = self.persona
        return {"first_name": p["first_name"], "last_name": p["last_name"],
                "today": self.today.strftime("%A, %B %-d, %Y")}

    # -- facts ---------------------------------------------------------------------------
    def make(self, key: str, spec: FactSpec) -> UserFact:
        params = dict(spec.params)
        below = params.pop("below", None)
        if below is not None:       # an owner's estimate under the assessed value it disputes
            if below not in self._amounts:
                raise ConfigError(f"fact {key!r}: 'below: {below}' names no amount fact listed "
                                  f"before it; list {below!r} first, as an amount")
            ref, step = self._amounts[below], float(params.get("step") or 1)
            params["min"], params["max"] = -(-ref * 0.72 // step) * step, ref * 0.95 // step * step
        value, spoken = getattr(self, f"_{spec.kind}")(**params)
        if spec.kind == "amount":
            self._amounts[key] = float(re.sub(r"[^\d.]", "", value))
        return UserFact(key=key, value=value, kind=spec.kind,
                        spoken=spoken if spoken != value else "")

    def alternative(self, fact: UserFact, spec: FactSpec) -> UserFact:
        """A different, realistic value of the same kind (for corrections)."""
        if spec.kind == "code":
            return self._slip(fact)
        if spec.kind in ("email", "work_email"):
            other = "work_email" if spec.kind == "email" else "email"
            value, spoken = getattr(self, f"_{other}")()
            return fact.with_(value=value, spoken=spoken, id="")
        if spec.kind == "phone":
            return self._slip(fact)
        if spec.kind == "date":     # "actually it's the 14th, not the 12th"
            d = datetime.strptime(fact.value, "%A, %B %d, %Y").date()
            d += timedelta(days=self.rng.choice((-3, -2, -1, 1, 2, 3, 7)))
            return fact.with_(value=d.strftime("%A, %B %-d, %Y"),
                              spoken=date_spoken(d, weekday=True), id="")
        if spec.kind == "year":     # "sorry, the 2023 return"
            y = str(int(fact.value) - 1)
            return fact.with_(value=y, spoken="", id="")
        if spec.kind == "choice" and len(spec.params["options"]) < 2:
            raise ConfigError(f"fact {fact.key!r}: a choice with one option has no alternative")
        for _ in range(50):
            alt = self.make(fact.key, spec)
            if alt.value != fact.value:
                return alt
        raise ConfigError(f"fact {fact.key!r} ({spec.kind}): could not draw a different value")

    def _slip(self, fact: UserFact) -> UserFact:
        """The same code with two adjacent characters swapped: a plausible misremembering."""
        chars = list(fact.value)
        pos = [i for i in range(len(chars) - 1) if chars[i].isalnum() and chars[i + 1].isalnum()
               and chars[i].isdigit() == chars[i + 1].isdigit() and chars[i] != chars[i + 1]]
        if not pos:                 # e.g. "7777": change one character instead
            i = next(i for i, c in enumerate(chars) if c.isalnum())
            similar = {"B": "D", "D": "B", "M": "N", "N": "M", "E": "F"}
            chars[i] = str((int(chars[i]) + 3) % 10) if chars[i].isdigit() else \
                similar.get(chars[i], "E")
        else:
            i = self.rng.choice(pos)
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        value = "".join(chars)
        spoken = code_spoken(value) if fact.kind == "code" else _phone_spoken(value)
        return fact.with_(value=value, spoken=spoken, id="")

    def _name(self):
        p = self.persona
        return f"{p['first_name']} {p['last_name']}", f"{p['first_name']} {p['last_name']}"

    def _first_name(self):
        return self.persona["first_name"], self.persona["first_name"]

    def _last_name(self):
        return self.persona["last_name"], self.persona["last_name"]

    def _person(self, same_last_name: bool = False):
        while True:
            first = self.fake.first_name()
            last = self.persona["last_name"] if same_last_name else surname(self.fake.last_name())
            if first != self.persona["first_name"] and (first.lower(), last.lower()) not in \
                    _BANNED_NAMES:
                return f"{first} {last}", f"{first} {last}"

    def _email(self):
        p = self.persona
        f, l, n = p["first_name"].lower(), p["last_name"].lower(), p["email_num"]
        f, l = re.sub(r"[^a-z]", "", f), re.sub(r"[^a-z]", "", l)
        local = [f"{f}.{l}", f"{f[0]}{l}{n}", f"{f}{l[0]}{n}", f"{f}_{l}"][p["email_style"]]
        domain = self.rng.choice(self.common["email_domains"])
        value = f"{local}@{domain}"
        return value, email_spoken(value)

    def _work_email(self):
        p = self.persona
        f = re.sub(r"[^a-z]", "", p["first_name"].lower())
        l = re.sub(r"[^a-z]", "", p["last_name"].lower())
        words = re.findall(r"[a-z]+", self.company.lower())
        stop = {"and", "inc", "llc", "ltd", "group", "plc", "the", "sons"}
        words = [w for w in words if w not in stop] or ["office"]
        value = f"{f[0]}{l}@{words[0]}{'-' + words[1] if len(words) > 1 else ''}.com"
        return value, email_spoken(value)

    def _phone(self):
        area = self.rng.choice(self.persona["city"]["area_codes"])
        exch = self.rng.randint(201, 989)
        while exch == 555 or exch % 100 == 11:
            exch = self.rng.randint(201, 989)
        value = f"({area}) {exch}-{self.rng.randint(0, 9999):04d}"
        return value, _phone_spoken(value)

    def _address(self):
        c = self.persona["city"]
        number = self.rng.randint(12, 9870)
        street = self.rng.choice(self.common["street_names"])
        suffix, suffix_long = self.rng.choice(self.common["street_suffixes"])
        unit = f" Apt {self.rng.randint(2, 48)}{self.rng.choice('ABCD')}" \
            if self.rng.random() < 0.25 else ""
        zipc = f"{c['zip3']}{self.rng.randint(1, 99):02d}"
        value = f"{number} {street} {suffix}{unit}, {c['city']}, {c['state']} {zipc}"
        num_spoken = _house_number_spoken(number)
        unit_spoken = f", apartment {int_words(int(unit.split()[1][:-1]))} {unit[-1]}" \
            if unit else ""
        spoken = (f"{num_spoken} {street} {suffix_long}{unit_spoken}, {c['city']}, "
                  f"{c['state_name']}, {code_spoken(zipc)}")
        return value, spoken

    def _city(self):
        c = self.persona["city"]
        return f"{c['city']}, {c['state']}", f"{c['city']}, {c['state_name']}"

    def _date_of_birth(self):
        d = self.persona["birth"]
        return d.strftime("%B %-d, %Y"), date_spoken(d)

    def _date(self, min_days: int = 1, max_days: int = 30, weekdays_only: bool = False):
        for _ in range(20):
            d = self.today + timedelta(days=self.rng.randint(int(min_days), int(max_days)))
            if not weekdays_only or d.weekday() < 5:
                break
        return d.strftime("%A, %B %-d, %Y"), date_spoken(d, weekday=True)

    def _year(self, offset: int = 0):
        y = str(self.today.year + int(offset))
        return y, y

    def _time(self, start_hour: int = 9, end_hour: int = 17, step_min: int = 15):
        slots = [(h, m) for h in range(int(start_hour), int(end_hour))
                 for m in range(0, 60, int(step_min))]
        h, m = self.rng.choice(slots)
        value = f"{(h - 1) % 12 + 1}:{m:02d} {'AM' if h < 12 else 'PM'}"
        return value, time_spoken(h, m)

    def _amount(self, min: float = 10, max: float = 500, cents: bool = True, step: float = 0):
        if step:
            steps = int((float(max) - float(min)) // float(step))
            amount = float(min) + self.rng.randint(0, steps) * float(step)
        elif cents:
            amount = self.rng.randint(int(float(min) * 100), int(float(max) * 100)) / 100
        else:
            amount = float(self.rng.randint(int(min), int(max)))
        value = f"${amount:,.2f}" if cents and amount != int(amount) or cents and not step \
            else f"${amount:,.0f}"
        return value, amount_spoken(amount)

    def _integer(self, min: int = 1, max: int = 10, unit: str = "", step: int = 1):
        n = int(min) + self.rng.randint(0, (int(max) - int(min)) // int(step)) * int(step)
        u = ""
        if unit:
            u = " " + (unit if n == 1 else _plural(unit))
        return f"{n:,}{u}", f"{int_words(n)}{u}"      # "50,000 miles", as an agent writes it

    def _code(self, format: str = "########"):
        out = []
        for ch in format:
            if ch == "#":
                out.append(str(self.rng.randint(1 if not out else 0, 9)))
            elif ch == "?":
                out.append(self.rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ"))
            else:
                out.append(ch)
        value = "".join(out)
        if find_placeholders(value):            # e.g. a 1234 5678 run: draw again
            return self._code(format)
        return value, code_spoken(value)

    def _choice(self, options: list[Any]):
        v = str(self.rng.choice(options))
        return v, v

    def _company(self):
        return self.company, self.company


def _plural(unit: str) -> str:
    if unit in ("person", "child"):
        return {"person": "people", "child": "children"}[unit]
    if unit.endswith("y") and unit[-2:-1] not in "aeiou":
        return unit[:-1] + "ies"
    if unit.endswith(("s", "x", "ch", "sh")):
        return unit + "es"
    return unit + "s"


def _phone_spoken(value: str) -> str:
    digits = re.sub(r"\D", "", value)
    return code_spoken(f"{digits[:3]} {digits[3:6]} {digits[6:]}")


def _house_number_spoken(n: int) -> str:
    if n < 100 or n % 1000 < 10 or (1000 <= n and n % 100 == 0):
        return int_words(n)
    hi, lo = divmod(n, 100)
    return f"{int_words(hi)} {int_words(lo) if lo >= 10 else 'oh ' + int_words(lo)}"
