"""``prompt_wording``: a line of the call says the words of a writer's instructions instead of
a person's ("Please provide me with the exact words I heard", a caller quoting its own task).

Seen on an LLM-written call the verifier accepted: the caller asked the agent twice for "the
exact words I heard", the wording of the cut-in instruction. The rule reads each message and
gold recovery for the vocabulary of writing instructions and of the records' field names, which
no caller or agent on a real call says; it reads no writer's banks or prompts.
"""

from __future__ import annotations

import re

from bargein.records.conversation import Conversation, Verdict
from bargein.verify.base import _verdict, check

_INSTRUCTION = re.compile(
    r"\bexact words (?:I|you|they) (?:heard|said)\b|\bthe words (?:I|you) heard\b|"
    r"\bheard[_ ]prefix\b|\btalking points?\b|\b(?:tf|rq)_criteri\w*\b|\bJSON\b|"
    r"\bas an AI\b|\b(?:an AI|a) language model\b|\binterruption type\b|"
    r"\b(?:the|your) (?:caller|user|assistant)(?:'s)? (?:role|persona|instructions?)\b|"
    r"\b(?:user|caller)_(?:goal|facts?|action)\b|\bassistant_(?:goal|action)\b", re.I)


def instruction_words(text: str) -> list[str]:
    """The instruction wording ``text`` says, as found."""
    return [m.group(0) for m in _INSTRUCTION.finditer(text)]


@check("prompt_wording")
def prompt_wording(conv: Conversation) -> list[Verdict]:
    out = []
    texts = [(i, m.text) for i, m in enumerate(conv.messages)]
    texts += [(int(k), v) for k, v in conv.gold_recoveries.items()]
    for i, text in texts:
        for found in instruction_words(text):
            out.append(_verdict("prompt_wording", i, f"says the instruction wording {found!r}, "
                                "not what a person on the call would say", fixable=False,
                                evidence=text[:200]))
    return out
