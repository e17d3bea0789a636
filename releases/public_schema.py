"""Does a release read like the public IHBench (Hub ``bosonai/IHBench``)? A check users can run.

The expected layout is transcribed from the public dataset card (YAML ``configs``) and the
viewer's schema, not from bargein's own writer::

    configs   conversations (default), baseline          split  test
    columns   conversation_id string, domain struct, goal string, system_message string,
              knowledge_base struct, user_intent struct, num_turns int32, then for k = 1, 2, ...
              assistant_turn_k_transcript string, assistant_turn_k_original string,
              user_turn_k_transcript string, user_turn_k_audio audio,
              user_turn_k_interruption_type string, turn_k_tf_rubric string,
              turn_k_rq_rubrics list

The card does not give the structs' inner fields or the ``baseline`` columns; they are not checked.
Re-checked against the stored public sources (the card README of commit ``54b35fb`` "Add dataset
(#2)", 147 lines: YAML configs, prose, quick start; and the dataset viewer's column header, which
lists ``domain dict``, ``knowledge_base dict``, ``user_intent dict`` and no inner fields): neither
names the inner fields, and the evaluation toolkit ``boson-ai/ihbench`` that reads them is not
available here. The inner fields bargein writes are therefore its own (``releases.rows``
``_public_structs``: domain name/title/description/guidelines; knowledge_base domain, goal, start,
terminals, stages, transitions, guidelines, user_facts; user_intent profile, interruption rate and
probabilities, hidden_facts, provides, corrections) and are documented as such in docs/protocols.md.
"""

from __future__ import annotations

from pathlib import Path

PUBLIC_CONFIGS = ("conversations", "baseline")
PUBLIC_SPLIT = "test"
PUBLIC_FIXED = (("conversation_id", "string"), ("domain", "struct"), ("goal", "string"),
                ("system_message", "string"), ("knowledge_base", "struct"), ("user_intent", "struct"),
                ("num_turns", "int32"))
PUBLIC_PER_TURN = (("assistant_turn_{k}_transcript", "string"), ("assistant_turn_{k}_original", "string"),
                   ("user_turn_{k}_transcript", "string"), ("user_turn_{k}_audio", "audio"),
                   ("user_turn_{k}_interruption_type", "string"), ("turn_{k}_tf_rubric", "string"),
                   ("turn_{k}_rq_rubrics", "list"))


def _kind(feature) -> str:
    from datasets import Audio, LargeList, List, Sequence, Value

    if isinstance(feature, Audio):
        return "audio"
    if isinstance(feature, Value):
        return feature.dtype
    if isinstance(feature, (List, LargeList, Sequence, list)):
        return "list"
    if isinstance(feature, dict):
        return "struct"
    return type(feature).__name__


def check_public_schema(release: str | Path) -> list[str]:
    """Every difference between the release's layout and the public card's (empty = match)."""
    from bargein.releases.card import read_header

    release = Path(release)
    header = read_header((release / "README.md").read_text(encoding="utf-8"))
    problems = []
    configs = [c["config_name"] for c in header.get("configs", [])]
    if tuple(configs) != PUBLIC_CONFIGS:
        problems.append(f"configs {configs} != {list(PUBLIC_CONFIGS)}")
    default = [c["config_name"] for c in header.get("configs", []) if c.get("default")]
    if default != ["conversations"]:
        problems.append(f"default config {default} != ['conversations']")
    for c in header.get("configs", []):
        splits = [d["split"] for d in c.get("data_files", [])]
        if splits != [PUBLIC_SPLIT]:
            problems.append(f"{c['config_name']}: splits {splits} != ['test']")
    if "conversations" not in configs:
        return problems
    from bargein.releases.reader import load_config

    feats = load_config(release, "conversations", PUBLIC_SPLIT).features
    names = list(feats)
    n = int(feats and max((int(x.split("_")[2]) for x in names if x.startswith("assistant_turn_")), default=0))
    want = list(PUBLIC_FIXED) + [(c.format(k=k), t) for k in range(1, n + 1) for c, t in PUBLIC_PER_TURN]
    if names != [c for c, _ in want]:
        extra = sorted(set(names) - {c for c, _ in want})
        missing = [c for c, _ in want if c not in names]
        problems.append(f"columns differ (order or names): extra {extra[:5]}, missing {missing[:5]}")
    for col, kind in want:
        if col in feats and _kind(feats[col]) != kind:
            problems.append(f"{col}: {_kind(feats[col])} != {kind}")
    return problems


__all__ = ["check_public_schema", "PUBLIC_CONFIGS", "PUBLIC_FIXED", "PUBLIC_PER_TURN"]
