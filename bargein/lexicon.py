"""One lexicon for every stage: backchannels, fillers, interruption openers, stop words.

The generator, the verifier, the renderer, the perturbations and the scorers all ask the same
questions ("is this a backchannel?", "is this a content word?"); they answer them here, so a
phrase is a backchannel everywhere or nowhere. Scorers may use this module (it is linguistic
knowledge, not the generator's phrase banks).

Phrases are compared after :func:`normalize` (lower case, letters, apostrophes and single
spaces; hyphens become spaces), so "Mm-hm." and "mm hm" are the same phrase.
"""

from __future__ import annotations

import re

__all__ = [
    "BACKCHANNELS", "BACKCHANNEL_WORDS", "FILLERS", "INTERRUPTION_OPENERS", "MAX_BACKCHANNEL_WORDS",
    "CONTENT_STOP_WORDS", "GLUE_WORDS", "KEY_PHRASES", "STOP_WORDS", "SWITCHBOARD_BACKCHANNELS", "is_backchannel",
    "is_filler", "normalize",
    "starts_with_opener",
]


def normalize(text: str) -> str:
    """Lower case, hyphens to spaces, only letters/apostrophes/spaces, single-spaced."""
    t = text.lower().replace("-", " ").replace("\u2019", "'")
    t = re.sub(r"[^a-z' ]+", " ", t)
    return re.sub(r"\s+", " ", t).strip()


# REFERENCE.md (TurnNat): Switchboard-derived backchannels, in their canonical spelling.
SWITCHBOARD_BACKCHANNELS: tuple[str, ...] = (
    "yeah", "um-hum", "uh-huh", "right", "oh", "oh yeah", "yeah yeah", "right right", "oh really",
)

# Everything a listener says to signal "go on" without taking the turn. Acknowledgements that
# claim the floor ("got it, so ...", "okay so") are not backchannels: only the bare phrase is.
BACKCHANNELS: frozenset[str] = frozenset(normalize(p) for p in (
    *SWITCHBOARD_BACKCHANNELS,
    "mm", "mhm", "mm-hm", "mm-hmm", "mmhm", "mhmm", "hmm", "um hum", "uh huh", "umhum", "uhhuh",
    "okay", "ok", "sure", "yep", "yup", "yes", "exactly", "wow", "i see", "got it", "alright",
    "ah", "gotcha", "sure sure", "okay okay",
))
BACKCHANNEL_WORDS: frozenset[str] = frozenset(w for p in BACKCHANNELS for w in p.split())
MAX_BACKCHANNEL_WORDS = 3

# Hesitation fillers: sounds that hold or fill time and carry no content.
FILLERS: frozenset[str] = frozenset({"um", "uh", "er", "erm", "hmm", "mm", "ah", "uhm"})

# How a real barge-in opens. A phrase starting with one of these takes the floor and must never
# be used (or inserted) as a backchannel.
INTERRUPTION_OPENERS: tuple[str, ...] = tuple(normalize(p) for p in (
    "wait", "hold on", "hang on", "sorry", "excuse me", "actually", "no", "but", "one second",
    "just a second", "stop", "can i", "could i", "let me", "before you", "quick question",
))

STOP_WORDS: frozenset[str] = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
is isn't it it's its itself let's me more most mustn't my myself no nor not now of off on once
only or other ought our ours ourselves out over own same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's these
they they'd they'll they're they've this those through to too under until up very was wasn't we
we'd we'll we're we've were weren't what what's when when's where where's which while who who's
whom why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself
yourselves
""".split())


# Conversational glue every turn shares ("okay", "need", "actually"): not function words, but no
# more telling of what a turn is about. With STOP_WORDS they make CONTENT_STOP_WORDS, what the
# generator and the verifier skip when they ask "which content words does this turn share?".
GLUE_WORDS: frozenset[str] = frozenset("""
yeah yes yep yup okay ok oh um uh hmm mm mhm ah well sure right alright actually really just like
wait sorry please thanks thank hello hi hey so now then still even maybe kind sort know think want
need get got go going gonna wanna let lets make say said tell told see look give thing things
something anything everything one ones way lot bit much many will shall may might must us hold on
hang work sound fine good great perfect nice help call also
""".split())
CONTENT_STOP_WORDS: frozenset[str] = STOP_WORDS | GLUE_WORDS


def is_backchannel(text: str) -> bool:
    """A short reflexive backchannel: at most 3 words, the phrase or every word in the lexicon,
    and not opening like an interruption ("wait", "hold on", ...)."""
    t = normalize(text)
    toks = t.split()
    if not toks or len(toks) > MAX_BACKCHANNEL_WORDS:
        return False
    if starts_with_opener(t):
        return False
    return t in BACKCHANNELS or all(w in BACKCHANNEL_WORDS for w in toks)


def is_filler(text: str) -> bool:
    toks = normalize(text).split()
    return bool(toks) and all(w in FILLERS for w in toks)


def starts_with_opener(text: str) -> bool:
    t = normalize(text)
    return any(t == o or t.startswith(o + " ") for o in INTERRUPTION_OPENERS)


# How a call asks for a fact besides its key's label ("full_name" is asked as "your name"): the
# planner finds what a question asks for with these, and the verifier tells a fact the caller is
# asked for from one only the system holds ("the email you sign in with" asks for admin_email).
KEY_PHRASES: dict[str, tuple[str, ...]] = {
    "full_name": ("your name", "the name on"), "date_of_birth": ("birth date",),
    "home_address": ("your address",), "email": ("email address",),
    "old_carrier_account": ("account number with them",),
    "last_login_date": ("last sign in", "last signed in", "last sign-in"),
    "account_created_year": ("year was the workspace", "workspace first created"),
    "admin_email": ("email you sign in with", "email you normally sign in with"),
    "workspace_url": ("workspace address",),
    "payment_plan_months": ("how many months",), "new_plan": ("which plan",),
    "entity_type": ("type of entity",), "error_since": ("since when",),
    "monthly_transactions": ("transactions a month", "how many transactions"),
    # (a reason the caller already gave is not asked for again: seed 7070, call 1)
    "cancel_reason": ("prompting the change", "reason for cancelling", "why you're cancelling"),
}
