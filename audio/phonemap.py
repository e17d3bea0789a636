"""Which phonemes of a synthesised sentence belong to which word of the text.

Engines that time phonemes (Piper's alignment output, hibari's predicted durations) phonemise a
whole sentence, which merges, splits and re-stresses words ("the" ðə/ði, numbers read out). Each
text word is phonemised on its own; the sentence phonemes are aligned to the concatenated
per-word phonemes (difflib on phoneme characters), so a word owns the sentence phonemes from its
first match up to the next word's first phoneme::

    sentence   h ə l ˈO   ð ˈɛ ɹ ,   k æ n ...
    per word   h ə l ˈO | ð ˈɛ ɹ   | k æ n ...
    owner      0 0 0 0    1 1  1 -   2 2 2       ("," and spaces are pauses: nobody's)
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

NOT_PHONEME = frozenset(" !'(),-.:;?\"ˈˌ…—“”")


def is_phoneme(c: str) -> bool:
    return c not in NOT_PHONEME and not c.isspace()


def word_phoneme_starts(phone_chars: Sequence[str], ref: Sequence[Sequence[str]]) -> list[int | None]:
    """Index into ``phone_chars`` of each word's first phoneme (``None``: not found).

    ``ref[w]`` is word ``w`` phonemised alone (a sequence of phoneme characters). A word starts
    at its first matched phoneme, moved back over the word's unmatched leading phonemes (context
    changes them) but never into the previous word, then back over a stress mark that belongs
    to it.
    """
    a_idx = [i for i, c in enumerate(phone_chars) if is_phoneme(c)]
    a = [phone_chars[i] for i in a_idx]
    b, owner, pos_in_word = [], [], []
    for w, chars in enumerate(ref):
        k = 0
        for c in chars:
            if is_phoneme(c):
                b.append(c)
                owner.append(w)
                pos_in_word.append(k)
                k += 1
    first: list[tuple[int, int] | None] = [None] * len(ref)   # (a index, leading unmatched)
    last: list[int | None] = [None] * len(ref)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for block in sm.get_matching_blocks():
        for j in range(block.size):
            w, ai = owner[block.b + j], block.a + j
            if first[w] is None or ai < first[w][0]:
                first[w] = (ai, pos_in_word[block.b + j])
            last[w] = ai if last[w] is None else max(last[w], ai)
    start_ci: list[int | None] = [None] * len(ref)
    last_ci: list[int | None] = [None] * len(ref)
    prev_last = -1
    for w in range(len(ref)):
        if first[w] is None or first[w][0] <= prev_last:
            continue                          # unmatched, or matched out of order
        ai = max(prev_last + 1, first[w][0] - first[w][1])
        ci = a_idx[ai]
        while ci > 0 and phone_chars[ci - 1] in "ˈˌ":
            ci -= 1
        start_ci[w], last_ci[w] = ci, a_idx[last[w]]
        prev_last = last[w]
    _fill_from_groups(phone_chars, start_ci, last_ci)
    return start_ci


def _fill_from_groups(phone_chars: Sequence[str], start_ci: list[int | None], last_ci: list[int | None]) -> None:
    """Give unmatched words the unclaimed space-separated phoneme groups between their neighbours
    (a alone is "eI", in context "@": nothing matches, but its group sits between its neighbours)."""
    groups = [i for i, c in enumerate(phone_chars)
              if is_phoneme(c) and (i == 0 or phone_chars[i - 1].isspace())]
    w = 0
    while w < len(start_ci):
        if start_ci[w] is not None:
            w += 1
            continue
        run_end = w
        while run_end < len(start_ci) and start_ci[run_end] is None:
            run_end += 1
        lo = next((last_ci[k] for k in range(w - 1, -1, -1) if last_ci[k] is not None), -1)
        hi = start_ci[run_end] if run_end < len(start_ci) else len(phone_chars)
        free = [g for g in groups if lo < g < hi]
        if len(free) == run_end - w:          # exactly one group per unmatched word
            for k, g in zip(range(w, run_end), free):
                start_ci[k] = g
        w = run_end


def word_phoneme_ends(phone_chars: Sequence[str], start_ci: Sequence[int | None]) -> list[int | None]:
    """Index of each word's last phoneme: the last phoneme character before the next known
    word start (pauses, spaces and punctuation between them belong to nobody)."""
    out: list[int | None] = []
    for w, s in enumerate(start_ci):
        if s is None:
            out.append(None)
            continue
        nxt = start_ci[w + 1] if w + 1 < len(start_ci) else len(phone_chars)
        if nxt is None:                       # the next word is untimed: no end of our own
            out.append(None)
            continue
        j = nxt - 1
        while j >= s and not is_phoneme(phone_chars[j]):
            j -= 1
        out.append(j if j >= s else None)
    return out
