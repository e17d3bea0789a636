"""Named scoring protocols: which definition produced a number, recorded with every output.

``turnnat-ref``, ``fdbench-v1``, ``fdb-v1`` and ``fdb-v1.5`` reproduce the public reference code
(file named in ``reference``); ``turnnat-bargein`` and ``fdbench-bargein`` are bargein's own
refinements. ``docs/protocols.md`` tabulates the differences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bargein.errors import ConfigError


@dataclass(frozen=True)
class Protocol:
    name: str
    family: str                     # "turnnat", "fdbench" or "fdb"
    reference: str                  # repository and file the definition comes from
    settings: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """What goes into every output and card."""
        return {"protocol": self.name, "family": self.family, "reference": self.reference,
                "settings": dict(self.settings)}


_TN = "TedZhangHao/turn-taking-naturalness turnnat/scripts/score_fvad_checkpoint.py"
_FD = "pengyizhou/FD-Bench benchmark/benchmarking.py (analyze_VAD_interruption_new2, analyze_VAD_marks)"
_FDB = "DanielLin94144/Full-Duplex-Bench v1_v1.5/evaluation/"

PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol("turnnat-ref", "turnnat", _TN, {
        "vad": "silero threshold 0.5, min speech 100 ms, min silence 50 ms, pad 30 ms",
        "frames": "50 Hz, frame = sample // 320", "clean": "speech < 150 ms dropped, silence < 150 ms filled",
        "units": "merge same speaker across pauses <= 1.0 s with other speaker <= 20 % active; "
                 "utterances >= 0.2 s; [t - 2 s, t] at start and end",
        "context_s": 3.0, "min_unit_frames": 5, "fallback": "VAD-change frames, then all frames",
        "tail": 0.25, "lambda": 0.5,
        "perturbation": "turnnat/scripts/build_perturbations.py (public revision): silero 0.5/120/120/40 ms "
                        "read at 0.1 s, pieces < 250 ms dropped (40 ms for excessive backchannel and "
                        "shift-instead-of-hold), 80 ms frames, same-speaker gaps <= 3 frames merged; proper "
                        "shift/hold: 13 frames (1.04 s) of one speaker alone before and after, >= 2 silent "
                        "frames, turns >= 12 frames; edit the whole dialogue, then crop 20-25 s with >= 350 ms "
                        "stereo RMS silence at both ends, the event at 18-82 %, 5 s of context before; 60 ms "
                        "splices; 2 backchannels added at 80 ms onsets >= 0.8 s apart; early entry cuts the "
                        "same length of silence from both channels; hold-instead-of-shift replaces the "
                        "responder with room tone (no compaction); whole-file stereo RMS -20 dBFS / peak "
                        "-1 dBFS per clip"}),
    Protocol("turnnat-bargein", "turnnat", "bargein", {
        "vad": "the perturbation VAD (silero 0.5, 120/120 ms, pad 40 ms, merge < 180 ms)",
        "units": "every VAD segment >= 0.2 s; [t - 2 s, t] at onset and offset", "context_s": 0.0,
        "min_unit_frames": 1, "tail": 0.25, "lambda": 0.5,
        "perturbation": "early entry cuts the silence from both channels (everything after moves)"}),
    Protocol("fdbench-v1", "fdbench", _FD, {
        "vad": "silero threshold 0.5, min silence 1500 ms, min speech 250 ms, pad 30 ms; 16 kHz samples",
        "rounds": "one per user VAD span", "early_s": 0.5, "noise": "system span ends >= 2.5 s before "
        "the next user onset and lasts < 5.5 s, counted per span",
        "denominators": "SRR, EIR / rounds; SIR / interruptions; SRIR / successes; NIR / (rounds - 1)",
        "scale": "rates x100 (%)", "times": "median of int(samples / 16) ms over positive values; 0 if none",
        "drop_first_system": False}),
    Protocol("fdbench-bargein", "fdbench", "bargein", {
        "vad": "the perturbation VAD", "rounds": "scripted user turns when known, else user VAD",
        "scale": "fractions 0-1", "times": "medians (ms), NaN if none",
        "SIR": "success only when the system stops before the user ends"}),
    Protocol("fdb-v1", "fdb", _FDB + "eval_smooth_turn_taking.py, eval_pause_handling.py, "
             "eval_backchannel.py, eval_user_interruption.py", {
        "take_turn": "no words -> 0; span < 1 s and <= 3 words -> 0; else 1",
        "latency": "first word start - user end; mean over TOR = 1, negatives as 0",
        "backchannel": "silero defaults in 0.1 s; segments <= 3 s before the first longer one; "
                       "0.2 s bins; scipy jensenshannon (distance, natural log)",
        "interruption_rating": "not computed (an LLM judge in the reference)"}),
    Protocol("fdb-v1.5", "fdb", _FDB + "get_timing.py", {
        "vad": "silero defaults (16 kHz samples)", "user_merge_s": 0.6, "system_merge_s": 0.5,
        "stop_latency": "user/system overlap intervals, shortest per end",
        "response_latency": "user end -> next system onset, latest user end per onset",
        "behavior_and_features": "not computed (LLM judge, UTMOS in the reference)"}),
)}


def get_protocol(name: str, family: str | None = None) -> Protocol:
    """A protocol by name; ``family`` restricts the choice (a clear error names the options)."""
    valid = [p for p in PROTOCOLS.values() if family is None or p.family == family]
    for p in valid:
        if p.name == name:
            return p
    raise ConfigError(f"--protocol {name!r} is not a {family or 'known'} protocol; valid: "
                      f"{', '.join(p.name for p in valid)}")


__all__ = ["Protocol", "PROTOCOLS", "get_protocol"]
