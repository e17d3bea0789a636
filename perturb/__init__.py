"""bargein.perturb: TurnNat timing perturbations of two-channel dialogue.

``sources`` (inputs) -> ``stage`` (scan, plan, make pairs) using ``ops`` (the five edits),
``crops`` (20-25 s crops with silent ends), ``edits`` (sample-exact splices with room tone),
``measure`` (VAD re-measurement against the spec); ``cli`` is ``bargein perturb``;
``synth`` builds synthetic dialogues for tests and benchmarks.
"""
