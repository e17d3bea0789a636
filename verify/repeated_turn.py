"""``assistant_turn_repeated``: an assistant turn says a whole earlier assistant turn again, word
for word, when that earlier turn was heard in full.

Seen on an LLM-written call the verifier accepted: the caller cut in with "Hold on, a two-hour
pickup window?" and the assistant answered with its photo request of six messages earlier, every
word of it ("I understand that's required to assess the damage and provide your photos. Could
you please take two quick photos ..."), which answers nothing the caller said.

The rule reads the conversation only. The earlier turn must have been heard whole (not cut off):
restarting a cut sentence, or the rest a caller did not hear, is a recovery, not a repeat. It
must have at least :data:`MIN_WORDS` words, so a short formula ("Thanks, I have that.") said
twice is left to the tone checks. On 120 offline calls (40 scenarios, 3 seeds) it fires on none.
"""

from __future__ import annotations

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check
from bargein.verify.text import normalise

MIN_WORDS = 6


def repeated_turns(conv: Conversation) -> list[tuple[int, int]]:
    """(earlier, later) message indices: the later assistant turn holds the whole earlier one."""
    out = []
    msgs = conv.messages
    for j, later in enumerate(msgs):
        if later.role != "assistant":
            continue
        said = f" {normalise(later.text)} "
        for earlier in msgs[:j]:
            if earlier.role != "assistant" or earlier.interruption is not None:
                continue
            words = normalise(earlier.text)
            if len(words.split()) >= MIN_WORDS and f" {words} " in said:
                out.append((earlier.index, later.index))
                break
    return out


@check("assistant_turn_repeated")
def assistant_turn_repeated(conv: Conversation) -> list[Verdict]:
    text = {m.index: m.text for m in conv.messages}
    return [_verdict("assistant_turn_repeated", later,
                     f"the assistant says its whole turn {earlier} again word for word",
                     evidence=text[earlier][:200], fixable=False)
            for earlier, later in repeated_turns(conv)]
