"""User intents: a behaviour profile, interruption-type probabilities, hidden and corrected facts.

Profiles come from ``catalogue/_profiles.yaml``; intent ``i`` of a goal uses the ``i``-th
profile of a permutation fixed per (domain, goal), so ten intents of one goal are ten different
people. Type probabilities are the profile's weights with a seeded log-normal jitter; across
profiles they favour challenging types (pushback, impatient) over correction, as IHBench did.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping

from bargein.errors import ConfigError, GenerationFailed
from bargein.generators.catalogue_loader import SLOT, Catalogue, GoalEntry
from bargein.generators import phrases as P
from bargein.generators.facts import FactMaker, FactSpec, find_placeholders
from bargein.generators.workflow import check_stages
from bargein.records import INTERRUPTION_TYPES, Correction, UserFact, UserIntent
from bargein.seeding import stable_int

# facts whose first mention is a slip the user fixes (the record holds the true value);
# for other kinds the user changes their mind to a new value ("use my work email instead")
_SLIP_KINDS = frozenset({"code", "phone"})


def fill_slots(template: str, values: Mapping[str, str], where: str = "template") -> str:
    """Replace every ``{key}`` with ``values[key]``; an unknown key raises naming it."""
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in values:
            raise GenerationFailed(f"{where}: slot {{{key}}} has no value; known: "
                                   f"{', '.join(sorted(values))}")
        return values[key]

    return SLOT.sub(sub, template)


def fact_values(facts: list[UserFact], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Slot values: each fact's value plus ``<key>_last4`` (its last four digits, if any)."""
    values = dict(extra or {})
    for f in facts:
        values[f.key] = f.value
        digits = re.sub(r"\D", "", f.value)
        if len(digits) >= 4:
            values[f"{f.key}_last4"] = digits[-4:]
    return values


def profile_for(cat: Catalogue, domain: str, goal: str, intent_index: int) -> dict:
    """The profile of intent ``intent_index`` of a goal (a fixed per-goal permutation)."""
    order = list(range(len(cat.profiles)))
    random.Random(stable_int("profiles", domain, goal)).shuffle(order)
    return cat.profiles[order[intent_index % len(order)]]


def interruption_probs(weights: Mapping[str, float], rng: random.Random,
                       jitter: float = 0.25) -> dict[str, float]:
    """Jittered, normalised probabilities rounded to 3 decimals that sum to exactly 1."""
    missing = set(INTERRUPTION_TYPES) - set(weights)
    if missing:
        raise ConfigError(f"profile weights lack interruption types {sorted(missing)}")
    raw = {t: max(1e-3, float(weights[t])) * math.exp(rng.gauss(0.0, jitter))
           for t in INTERRUPTION_TYPES}
    total = sum(raw.values())
    probs = {t: round(raw[t] / total, 3) for t in INTERRUPTION_TYPES}
    top = max(probs, key=lambda t: probs[t])
    probs[top] = round(1.0 - sum(p for t, p in probs.items() if t != top), 3)
    return probs


_PRICE_KEY = re.compile(r"(?:^|_)(?:fee|fees|surcharge|premium|cost|price)$")


def business_prices(entry: GoalEntry) -> tuple[str, ...]:
    """Fee and price facts the talking points state and no question asks the caller for: the
    business sets them ("The consultation is {consult_fee}"); ``project_cost`` asked in "what's
    the estimated project cost?" is the caller's."""
    read_out, asked = set(), set()
    for st in entry.workflow.stages:
        for tp in st.talking_points:
            for sent in re.split(r"(?<=[.?!])\s+", tp):
                named = set(re.findall(r"\{(\w+)\}", sent))
                if sent.rstrip().endswith("?"):
                    asked |= named | {k for k in entry.facts if k.replace("_", " ") in sent.lower()}
                else:
                    read_out |= named
    return tuple(k for k in entry.facts if _PRICE_KEY.search(k) and k in read_out - asked)


def make_intent(cat: Catalogue, entry: GoalEntry, intent_index: int, facts: list[UserFact],
                maker: FactMaker, slots: Mapping[str, str]) -> UserIntent:
    """The ``intent_index``-th user intent of a goal for one scenario's facts."""
    rng = maker.rng
    prof = profile_for(cat, entry.domain, entry.name, intent_index)
    probs = interruption_probs(prof["weights"], rng)
    lo, hi = prof.get("rate", [0.35, 0.55])
    rate = round(rng.uniform(float(lo), float(hi)), 2)

    by_key = {f.key: f for f in facts}
    values = fact_values(facts, slots)
    hidden = []
    goal_text = " ".join([entry.goal.name, entry.goal.description,
                          *(tp for st in entry.workflow.stages for tp in st.talking_points)])
    fitting = [h for h in entry.hidden if not h.when or re.search(h.when, goal_text, re.I)]
    n_hidden = min(len(fitting), 1 + (rng.random() < 0.5))
    for h in rng.sample(fitting, n_hidden):
        own = {k: maker.make(k, spec).value for k, spec in h.facts.items()}
        if any(v == f.value for v in own.values() for f in facts):
            continue                # "travelling on <the plan change date>": a value of the call's
                                    # own, said by the caller before the system gives it
        value = fill_slots(h.value, {**values, **own}, f"hidden fact {h.key!r}")
        hidden.append(UserFact(key=h.key, value=value, kind="text"))

    # a price the business sets and reads out ("The consultation is 175 dollars for 45
    # minutes"), never asked of the caller: theirs neither to volunteer nor to correct
    priced = set(business_prices(entry)) & set(by_key)
    held = records_keys(entry) & set(by_key)    # the records state them: the caller never
    # corrects them, nor volunteers a date from the records ("the last watched is ...")
    keys = [k for k in by_key if k not in priced
            and not (k in held and entry.facts[k].kind in ("date", "time"))]
    n_vol = round(float(prof.get("volunteers", 0.3)) * len(keys))
    chosen = set(rng.sample(keys, min(n_vol, len(keys))))
    provides = tuple(k for k in keys if k in chosen)

    corrections = []
    # never a reference the assistant reads out from its records ("I've found order HH-...")
    # that the caller first gave differently: nobody on the call would let that mismatch pass
    read_out = {k for st in entry.workflow.stages for tp in st.talking_points
                for sent in re.split(r"(?<=[.?!])\s+", tp)
                for k in re.findall(r"\{(\w+)\}", sent) if not sent.rstrip().endswith("?")}
    asked = {k for st in entry.workflow.stages for tp in st.talking_points
             for sent in re.split(r"(?<=[.?!])\s+", tp) if sent.rstrip().endswith("?")
             for k in by_key if k.replace("_", " ") in sent.lower() or f"{{{k}}}" in sent}
    asked |= {k for st in entry.workflow.stages for k in st.required_info}
    # a circumstance ("a parent had major medical expenses") is told, not corrected like a value:
    # the correction frames ("it's actually {new}", "the {label} is {new} now") read wrong with it
    # nor a detail an identity check takes: the check passes with what the caller says, so a
    # planned change there never happens and the intent would promise a correction the call
    # never has (a hand read of seed 7373: "corrects themselves", and no correction in the call)
    checked = {k for st in check_stages(entry.workflow) for k in st.required_info}
    candidates = [k for k in entry.correctable if k in by_key and k not in priced and k not in held
                  and k not in checked
                  and not (k in read_out and (entry.facts[k].kind == "code" or k not in asked))
                  and P.clause(by_key[k].value) is None]
    n_corr = min(int(prof.get("corrections", 0)), len(candidates))
    if n_corr:
        n_corr = rng.randint(1, n_corr)
    for key in sorted(rng.sample(candidates, n_corr), key=keys.index):
        corrections.append(_correction(by_key[key], entry.facts[key], maker))
    # a constraint the caller keeps to ("can only do appointments after 2:30 PM") never
    # contradicts a time they give or correct to in the same call ("the new time is 10:15 AM")
    times = [v for f in facts if f.kind == "time" for v in (f.value,)]
    times += [v for c in corrections for v in (c.first_value, c.corrected_value)]
    hidden = [h for h in hidden if not contradicts_times(h.value, times)]
    intent = UserIntent(profile=prof["profile"], interruption_probs=probs, interruption_rate=rate,
                        hidden_facts=tuple(hidden), provides=provides,
                        corrections=tuple(corrections))
    return intent


_CLOCK = r"(\d{1,2})(?::(\d{2}))?\s*([AP])\.?M\.?"
_BOUND = re.compile(r"\b(after|before|from|until|by)\s+" + _CLOCK, re.I)
_HALF_DAY = re.compile(r"\b(mornings?|afternoons?|evenings?)\s+(?:only|are out|don't work)|"
                       r"\bonly (?:in the )?(mornings?|afternoons?|evenings?)\b", re.I)
_LATE_DAY = re.compile(r"\blate (?:in the )?afternoons?\b|\blate-afternoon\b", re.I)   # from 3 PM


def _minutes(h: str, m: str | None, ap: str) -> int:
    return (int(h) % 12 + (12 if ap.upper() == "P" else 0)) * 60 + int(m or 0)


def contradicts_times(value: str, times: list[str]) -> bool:
    """Whether a stated time bound ("after 2:30 PM", "only mornings", "late in the afternoon")
    excludes one of the call's own times."""
    said = [_minutes(*m.groups()) for t in times for m in re.finditer(_CLOCK, t, re.I)]
    for b in _BOUND.finditer(value):
        bound = _minutes(b.group(2), b.group(3), b.group(4))
        late = b.group(1).lower() in ("after", "from")
        if any((t < bound) if late else (t > bound) for t in said):
            return True
    if _LATE_DAY.search(value) and any(t < 15 * 60 for t in said):
        return True
    for m in _HALF_DAY.finditer(value):
        morning = (m.group(1) or m.group(2)).lower().startswith("morning")
        excluded = morning if m.group(1) else not morning      # "mornings are out" / "only mornings"
        if any((t < 12 * 60) == excluded for t in said):
            return True
    return False


def _correction(fact: UserFact, spec: FactSpec, maker: FactMaker) -> Correction:
    alt = maker.alternative(fact, spec)
    if spec.kind in _SLIP_KINDS:
        first, corrected = alt.value, fact.value      # misremembered, then the true value
    else:
        first, corrected = fact.value, alt.value      # changes their mind to a new value
    for v in (first, corrected):
        if find_placeholders(v):
            raise GenerationFailed(f"correction of {fact.key!r} produced placeholder {v!r}")
    return Correction(key=fact.key, first_value=first, corrected_value=corrected)


_ATTRIBUTED = re.compile(r"\b(?:you said|you mentioned|you told|you'd like|you would like|you're asking|"
                         r"so that's|so you'd|you want|you're looking|you're seeing|you believe|you think)\b", re.I)
_PERSONAL_KINDS = frozenset({"name", "email", "work_email", "phone", "address", "date_of_birth"})


def records_keys(entry: GoalEntry) -> set[str]:
    """Facts the business reads from its records: first mentioned (in workflow order) in a
    statement of a talking point ("The order ... is expected by {expected_delivery}", "The last
    time anything was watched ... was {last_watched}"), never asked in a question and never a
    read-back of what the caller said. A caller cannot volunteer or correct those."""
    from bargein.generators.plan_state import asked_keys, question_kind

    first: dict[str, str] = {}
    asked: set[str] = set()
    for st in entry.workflow.stages:
        for tp in st.talking_points:
            for sent in re.split(r"(?<=[.?!])\s+", tp):
                for k in re.findall(r"\{(\w+)\}", sent):
                    first.setdefault(k, sent)
                # "Would you like me to hold {new_date} at {new_time}?" offers the business's
                # slot: it asks the caller to accept it, not to say it
                if sent.rstrip().endswith("?") and question_kind(sent) != "offer":
                    asked |= set(re.findall(r"\{(\w+)\}", sent))
                    asked |= set(asked_keys(sent, tuple(entry.facts)))
    return {k for k, sent in first.items()
            if k in entry.facts and entry.facts[k].kind not in _PERSONAL_KINDS and k not in asked
            and not sent.rstrip().endswith("?") and not _ATTRIBUTED.search(sent)}

