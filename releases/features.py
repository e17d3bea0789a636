"""The explicit ``datasets.Features`` of every release config, and which column keys each row.

Configs and splits::

    conversations  test         one row per conversation, long form, stereo audio
    ihbench        test         the public IHBench wide layout (one row per conversation)
    eval_items     test         one row per interruption point (history up to the cut)
    baseline       test         the baseline response per eval item
    repair         test         masked-audio repair items (Pardon?/EAR), mono audio
    timing         test         TurnNat natural / perturbed stereo pairs with their edits
    sft            train, test  chat messages -> gold recovery
    dpo            train, test  prompt, chosen (gold recovery), rejected (a realistic failure)

Audio columns hold ``{"bytes": <FLAC/WAV file bytes>, "path": <file name>}``; read them without
torch through ``Audio(decode=False)`` and soundfile (see :mod:`bargein.releases.hub`).

The ``ihbench`` config keeps exactly the public release's column names. ``k`` is the 0-based turn
index: turn k is the k-th assistant message and the user message that follows it (the user turn
index of the paper's depth), so ``user_turn_k_interruption_type`` says how user turn k cut
assistant turn k (null when it did not interrupt)::

    turn 0   assistant_turn_0_original   "Welcome to ... first I need your | account number"
             assistant_turn_0_transcript "Welcome to ... first I need your"        (heard)
             user_turn_0_transcript      "It's 4471 0932."  user_turn_0_interruption_type "impatient"
    turn 1   ...
"""

from __future__ import annotations

from datasets import Audio, Features, List, Value

CONFIG_ORDER: tuple[str, ...] = (
    "conversations", "ihbench", "eval_items", "baseline", "repair", "timing", "sft", "dpo",
)
# the column whose value identifies a row (unique within a config and split)
KEY_COLUMN: dict[str, str] = {
    "conversations": "conversation_id", "ihbench": "conversation_id", "eval_items": "item_id",
    "baseline": "item_id", "repair": "id", "timing": "id", "sft": "id", "dpo": "id",
}
# rows per Parquet row group: small for audio configs so readers stream, fixed for determinism
ROW_GROUP_SIZE: dict[str, int] = {
    "conversations": 16, "ihbench": 16, "eval_items": 100, "baseline": 1000, "repair": 100,
    "timing": 50, "sft": 1000, "dpo": 1000,
}
IHBENCH_FIXED: tuple[str, ...] = (
    "conversation_id", "domain", "goal", "system_message", "knowledge_base", "user_intent",
    "num_turns",
)
IHBENCH_PER_TURN: tuple[str, ...] = (
    "assistant_turn_{k}_original", "assistant_turn_{k}_transcript", "user_turn_{k}_transcript",
    "user_turn_{k}_audio", "user_turn_{k}_interruption_type", "turn_{k}_tf_rubric",
    "turn_{k}_rq_rubrics",
)

_S = Value("string")
_I = Value("int32")
_F = Value("float32")

_WORD = {"word": _S, "start_s": _F, "end_s": _F}
_CHAT = List({"role": _S, "content": _S})


def ihbench_columns(max_turns: int) -> list[str]:
    """The public IHBench column names for a release whose longest conversation has ``max_turns``."""
    cols = list(IHBENCH_FIXED)
    for k in range(max_turns):
        cols += [c.format(k=k) for c in IHBENCH_PER_TURN]
    return cols


def ihbench_features(max_turns: int) -> Features:
    f: dict = {
        "conversation_id": _S, "domain": _S, "goal": _S, "system_message": _S,
        "knowledge_base": _S, "user_intent": _S, "num_turns": _I,
    }
    for k in range(max_turns):
        f[f"assistant_turn_{k}_original"] = _S
        f[f"assistant_turn_{k}_transcript"] = _S
        f[f"user_turn_{k}_transcript"] = _S
        f[f"user_turn_{k}_audio"] = Audio()
        f[f"user_turn_{k}_interruption_type"] = _S
        f[f"turn_{k}_tf_rubric"] = _S
        f[f"turn_{k}_rq_rubrics"] = List(_S)
    return Features(f)


# ----------------------------------------------------------- the ``ihbench-public`` profile
# The public release (Hub ``bosonai/IHBench``, dataset card and viewer schema): configs
# ``conversations`` (default, the wide layout) and ``baseline``, split ``test``; turns numbered
# from 1; per turn the heard transcript comes before the planned original; ``domain``,
# ``knowledge_base`` and ``user_intent`` are structs. The card does not list the structs' inner
# fields: those below are bargein's records (an assumption, documented in the card).
IHBENCH_PUBLIC_PER_TURN: tuple[str, ...] = (
    "assistant_turn_{k}_transcript", "assistant_turn_{k}_original", "user_turn_{k}_transcript",
    "user_turn_{k}_audio", "user_turn_{k}_interruption_type", "turn_{k}_tf_rubric",
    "turn_{k}_rq_rubrics",
)
_FACT = {"key": _S, "value": _S, "kind": _S, "spoken": _S}
PUBLIC_DOMAIN = {"name": _S, "title": _S, "description": _S, "guidelines": List(_S)}
PUBLIC_KB = {
    "domain": _S, "goal": _S, "start": _S, "terminals": List(_S),
    "stages": List({"name": _S, "description": _S, "required_info": List(_S),
                    "skip_conditions": List(_S), "failure_handling": List(_S),
                    "termination_conditions": List(_S)}),
    "transitions": List({"source": _S, "target": _S, "kind": _S, "condition": _S}),
    "guidelines": List(_S), "user_facts": List(_FACT),
}
PUBLIC_INTENT = {
    "profile": _S, "interruption_rate": _F,
    "interruption_probs": {t: _F for t in ("normal", "impatient", "correction", "topic_switch",
                                           "filler", "pushback")},
    "hidden_facts": List(_FACT), "provides": List(_S),
    "corrections": List({"key": _S, "first_value": _S, "corrected_value": _S}),
}


def ihbench_public_columns(max_turns: int) -> list[str]:
    """Column order of the public ``conversations`` config (turns 1..max_turns)."""
    cols = list(IHBENCH_FIXED)
    for k in range(1, max_turns + 1):
        cols += [c.format(k=k) for c in IHBENCH_PUBLIC_PER_TURN]
    return cols


def ihbench_public_features(max_turns: int) -> Features:
    f: dict = {"conversation_id": _S, "domain": PUBLIC_DOMAIN, "goal": _S, "system_message": _S,
               "knowledge_base": PUBLIC_KB, "user_intent": PUBLIC_INTENT, "num_turns": _I}
    for k in range(1, max_turns + 1):
        f[f"assistant_turn_{k}_transcript"] = _S
        f[f"assistant_turn_{k}_original"] = _S
        f[f"user_turn_{k}_transcript"] = _S
        f[f"user_turn_{k}_audio"] = Audio()
        f[f"user_turn_{k}_interruption_type"] = _S
        f[f"turn_{k}_tf_rubric"] = _S
        f[f"turn_{k}_rq_rubrics"] = List(_S)
    return Features(f)


def conversations_features() -> Features:
    return Features({
        "conversation_id": _S, "scenario_id": _S, "domain": _S, "goal": _S,
        "system_message": _S, "knowledge_base": _S, "user_intent": _S, "agents": _S,
        "outcome": _S, "seed": Value("int64"), "num_messages": _I, "num_interruptions": _I,
        "messages": List({
            "index": _I, "role": _S, "text": _S, "heard_text": _S, "stage": _S,
            "interruption_type": _S, "cut_word_index": _I, "cut_char_offset": _I,
            "overlap_ms": _I,
        }),
        "rubrics": List({"message_index": _I, "type": _S, "tf_criterion": _S,
                         "rq_criteria": List(_S)}),
        "gold_recoveries": List({"message_index": _I, "text": _S}),
        "verifier_rounds": _I, "verifier_issues": _I,
        "audio": Audio(num_channels=2),
        "sampling_rate": _I, "duration_s": _F,
        "segments": List({
            "message_index": _I, "channel": _I, "kind": _S, "start_s": _F, "end_s": _F,
            "cut_s": _F, "stop_s": _F, "text": _S, "heard_text": _S, "words": List(_WORD),
        }),
        "voices": _S,
    })


def eval_items_features() -> Features:
    return Features({
        "item_id": _S, "conversation_id": _S, "domain": _S, "message_index": _I, "type": _S,
        "depth": _I, "system_prompt": _S, "history": _CHAT, "interjection": _S,
        "interjection_audio": Audio(), "planned_text": _S, "heard_text": _S,
        "tf_rubric": _S, "rq_rubrics": List(_S), "gold_recovery": _S,
        "baseline": _S, "baseline_model": _S,
    })


def baseline_features() -> Features:
    return Features({
        "item_id": _S, "conversation_id": _S, "message_index": _I, "type": _S, "depth": _I,
        "baseline_model": _S, "response": _S,
    })


def repair_features() -> Features:
    return Features({
        "id": _S, "source_id": _S, "source_kind": _S, "message_index": _I, "condition": _S,
        "signal": _S, "window_ms": _I, "level": _S, "transcript": _S, "words": List(_WORD),
        "spans": List({"word_start": _I, "word_end": _I, "start_s": _F, "end_s": _F,
                       "text": _S}),
        "question": _S, "answer": _S, "slot": _S, "expected_behaviour": _S, "context": _S,
        "audio": Audio(), "original_audio": Audio(), "sampling_rate": _I,
    })


def timing_features() -> Features:
    return Features({
        "id": _S, "source_id": _S, "type": _S, "crop_start_s": _F, "crop_end_s": _F,
        "natural_audio": Audio(num_channels=2), "perturbed_audio": Audio(num_channels=2),
        "sampling_rate": _I, "edits": _S, "measured": _S,
    })


def sft_features() -> Features:
    return Features({"id": _S, "messages": _CHAT, "meta": _S})


def dpo_features() -> Features:
    return Features({"id": _S, "prompt": _CHAT, "chosen": _CHAT, "rejected": _CHAT, "meta": _S})


def features_for(config: str, *, max_turns: int = 0, profile: str = "bargein") -> Features:
    if profile == "ihbench-public" and config == "conversations":
        return ihbench_public_features(max_turns)
    if config == "ihbench":
        return ihbench_features(max_turns)
    try:
        return _FIXED[config]()
    except KeyError:
        raise KeyError(f"unknown release config {config!r}; configs: {', '.join(CONFIG_ORDER)}") from None


def audio_columns(features: Features) -> list[str]:
    return [name for name, f in features.items() if isinstance(f, Audio)]


_FIXED = {
    "conversations": conversations_features, "eval_items": eval_items_features,
    "baseline": baseline_features, "repair": repair_features, "timing": timing_features,
    "sft": sft_features, "dpo": dpo_features,
}
