"""bargein.masking — Pardon?-style semantic masking for conversational repair.

    from bargein.masking.stage import mask_rendered, mask_sources
    from bargein.masking.qa import qa_sources

Modules: :mod:`~bargein.masking.spans` (what to mask), :mod:`~bargein.masking.signals` (how),
:mod:`~bargein.masking.items` (paired variants, conversation sources),
:mod:`~bargein.masking.qa` (spoken QA datasets, LLM span picker),
:mod:`~bargein.masking.stage` (the runner stage, Whisper check), :mod:`~bargein.cli.mask` (the command).

The paper does not publish its aligner setup, span rules, mask level or fades. bargein's choices:

* **Alignment**: rendered conversations use the synthesiser's own word timings (exact; carried by
  the render). QA audio is force-aligned with Whisper tiny.en (``bargein.audio.align``; a mean word
  probability below 0.12 fails the item as low-confidence); without a transcript Whisper
  transcribes and its word times are used. MFA is available with ``--aligner mfa``.
* **Critical span** (unanswerable): conversations: a user fact (required by a workflow stage
  first) at the first user turn that speaks it, only if no earlier message said it (else the
  value would be answerable from context). QA: the answer in the transcript by normalised match
  (case, punctuation, accents, number words = digits, leading article optional), else the
  optional LLM span picker, else the item fails.
* **Function words** (answerable): determiners, prepositions, auxiliaries, conjunctions; never a
  negation, never a word of the critical span or next to it, and (with the window) never within
  ``guard_ms`` (20 ms) of it. Seeded choice until their duration reaches the critical span's, so
  both variants hide about as much speech.
* **Level**: the mask's steady part has the RMS of the speech it replaces (floored 30 dB below
  the utterance's active speech level), or ``--snr S``: S dB below that level.
* **Fades**: 8 ms equal-power (sin/cos) fades, both inside the masked region, so every sample
  outside is the input sample. Window expansion ± ms is clipped to the utterance; a region longer
  than the utterance fails the source, so every window is built on the same utterances.
"""
