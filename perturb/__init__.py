"""bargein.perturb: TurnNat timing perturbations of two-channel dialogue.

``sources`` (inputs) -> ``stage`` (scan, plan, make pairs) using ``ops`` (the five edits),
``crops`` (20-25 s crops with silent ends), ``edits`` (sample-exact splices with room tone),
``measure`` (VAD re-measurement against the spec); the command is
:mod:`bargein.cli.perturb`.
"""
