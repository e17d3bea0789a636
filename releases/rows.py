"""Records -> release rows, one function per config. Audio is embedded as file bytes.

Paths inside records are relative to the work directory that wrote them; :class:`AudioResolver`
finds them (absolute paths are used as they are) and cuts a per-message clip out of the stereo
dialogue when the renderer kept no mono clip.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bargein.errors import AudioError, ReleaseError
from bargein.records import (
    ChatMessage, Conversation, EvalItem, MaskedItem, PerturbationPair, RenderedDialogue,
    VerifiedConversation,
)
from bargein.releases.writer import audio_value
from bargein.seeding import canonical_json, stable_hash


class AudioResolver:
    """Finds audio files named by records (relative to one of ``roots``)."""

    def __init__(self, roots: list[str | os.PathLike] | None = None):
        self.roots = [Path(r) for r in (roots or [])] or [Path.cwd()]

    def path(self, rel: str | None) -> Path | None:
        if not rel:
            return None
        p = Path(rel)
        if p.is_absolute():
            if p.exists():
                return p
        else:
            for root in self.roots:
                if (root / p).exists():
                    return root / p
        raise AudioError(f"audio file {rel!r} not found under {[str(r) for r in self.roots]}. "
                         "Fix: pass the work directory that rendered it as the audio root "
                         "(ReleaseSources.audio_roots / --audio-root).")

    def value(self, rel: str | None) -> dict | None:
        p = self.path(rel)
        return audio_value(p) if p is not None else None

    def message_clip(self, rd: RenderedDialogue | None, message_index: int) -> dict | None:
        """The mono clip of one message: the renderer's own clip, else cut from its channel."""
        if rd is None:
            return None
        seg = next((s for s in rd.segments
                    if s.message_index == message_index and s.kind == "message"), None)
        if seg is None:
            return None
        if seg.clip_path:
            return self.value(seg.clip_path)
        from bargein.audio.io import encode_audio, read_audio

        data, sr = read_audio(self.path(rd.audio_path))
        chan = data[:, seg.channel] if data.ndim == 2 else data
        a, b = int(round(seg.start_s * sr)), int(round(seg.end_s * sr))
        clip = np.asarray(chan[max(0, a):max(a + 1, b)], dtype=np.float32)
        return audio_value(encode_audio(clip, sr, "FLAC"),
                           f"{rd.conversation_id}_m{message_index:03d}.flac")


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _chat(messages: Any) -> list[dict[str, str]]:
    """Chat messages from a list of dicts/records, or a bare string (one assistant message)."""
    if messages is None:
        return []
    if isinstance(messages, str):
        return [{"role": "assistant", "content": messages}]
    out = []
    for m in messages:
        if isinstance(m, ChatMessage):
            out.append({"role": m.role, "content": m.content})
        elif isinstance(m, dict) and "role" in m and "content" in m:
            out.append({"role": str(m["role"]), "content": str(m["content"])})
        else:
            raise ReleaseError(f"chat message {m!r} lacks 'role'/'content'. Fix: export SFT/DPO "
                               "rows in the chat format TRL reads ({'role': ..., 'content': ...}).")
    return out


def _goal_text(conv: Conversation) -> str:
    g = conv.scenario.goal
    return g.description or g.name


def _heard(conv: Conversation, rd: RenderedDialogue | None) -> Conversation:
    """The conversation as its audio says it (heard text, realised overlap), when rendered."""
    if rd is None:
        return conv
    from bargein.audio.render import as_rendered

    return as_rendered(conv, rd)


def conversation_row(conv: Conversation, verified: VerifiedConversation | None,
                     rd: RenderedDialogue | None, audio: AudioResolver) -> dict[str, Any]:
    conv = _heard(conv, rd)
    sc = conv.scenario
    return {
        "conversation_id": conv.id, "scenario_id": sc.id, "domain": sc.domain.name,
        "goal": _goal_text(conv), "system_message": sc.system_prompt,
        "knowledge_base": sc.kb.model_dump_json(), "user_intent": sc.intent.model_dump_json(),
        "agents": conv.agents, "outcome": conv.outcome, "seed": sc.seed,
        "num_messages": len(conv.messages), "num_interruptions": len(conv.interruptions),
        "messages": [{
            "index": m.index, "role": m.role, "text": m.text, "heard_text": m.heard_text,
            "stage": m.stage,
            "interruption_type": m.interruption.type if m.interruption else None,
            "cut_word_index": m.interruption.cut_word_index if m.interruption else None,
            "cut_char_offset": m.interruption.cut_char_offset if m.interruption else None,
            "overlap_ms": m.interruption.overlap_ms if m.interruption else None,
        } for m in conv.messages],
        "rubrics": [{"message_index": r.message_index, "type": r.type,
                     "tf_criterion": r.tf_criterion, "rq_criteria": list(r.rq_criteria)}
                    for r in conv.rubrics],
        "gold_recoveries": [{"message_index": int(k), "text": v}
                            for k, v in sorted(conv.gold_recoveries.items())],
        "verifier_rounds": verified.rounds if verified else None,
        "verifier_issues": len(verified.verdicts) if verified else None,
        "audio": audio.value(rd.audio_path) if rd else None,
        "sampling_rate": rd.sample_rate if rd else None,
        "duration_s": rd.duration_s if rd else None,
        "segments": [{
            "message_index": s.message_index, "channel": s.channel, "kind": s.kind,
            "start_s": s.start_s, "end_s": s.end_s, "cut_s": s.cut_s, "stop_s": s.stop_s,
            "text": s.text, "heard_text": s.heard_text,
            "words": [{"word": w.word, "start_s": w.start_s, "end_s": w.end_s} for w in s.words],
        } for s in rd.segments] if rd else [],
        "voices": canonical_json(rd.voices) if rd else None,
    }


def ihbench_turns(conv: Conversation) -> list[dict[str, Any]]:
    """Pair messages into turns: turn k = assistant message k + the user message after it.

    A user message with no assistant message before it (or two user messages in a row) opens a
    turn with no assistant side; two assistant messages in a row leave the first turn's user
    side empty.
    """
    turns: list[dict[str, Any]] = []
    for m in conv.messages:
        if m.role == "assistant":
            turns.append({"assistant": m, "user": None})
        elif not turns or turns[-1]["user"] is not None:
            turns.append({"assistant": None, "user": m})
        else:
            turns[-1]["user"] = m
    return turns


def ihbench_row(conv: Conversation, rd: RenderedDialogue | None, audio: AudioResolver,
                max_turns: int) -> dict[str, Any]:
    conv = _heard(conv, rd)
    sc = conv.scenario
    turns = ihbench_turns(conv)
    if len(turns) > max_turns:
        raise ReleaseError(f"conversation {conv.id} has {len(turns)} turns > max_turns {max_turns}")
    rubrics = {r.message_index: r for r in conv.rubrics}
    row: dict[str, Any] = {
        "conversation_id": conv.id, "domain": sc.domain.name, "goal": _goal_text(conv),
        "system_message": sc.system_prompt, "knowledge_base": sc.kb.model_dump_json(),
        "user_intent": sc.intent.model_dump_json(), "num_turns": len(turns),
    }
    for k in range(max_turns):
        t = turns[k] if k < len(turns) else {"assistant": None, "user": None}
        a, u = t["assistant"], t["user"]
        cut = a is not None and u is not None and a.interruption is not None
        rub = rubrics.get(u.index) if u is not None else None
        row[f"assistant_turn_{k}_original"] = a.text if a else None
        row[f"assistant_turn_{k}_transcript"] = a.spoken_text if a else None
        row[f"user_turn_{k}_transcript"] = u.text if u else None
        row[f"user_turn_{k}_audio"] = audio.message_clip(rd, u.index) if u else None
        row[f"user_turn_{k}_interruption_type"] = a.interruption.type if cut else None
        row[f"turn_{k}_tf_rubric"] = rub.tf_criterion if rub else None
        row[f"turn_{k}_rq_rubrics"] = list(rub.rq_criteria) if rub else None
    return row


def _public_structs(conv: Conversation) -> dict[str, Any]:
    """``domain``, ``knowledge_base`` and ``user_intent`` as the public release's structs."""
    sc = conv.scenario
    d, kb, it = sc.domain, sc.kb, sc.intent

    def fact(f):
        return {"key": f.key, "value": f.value, "kind": f.kind, "spoken": f.spoken}

    return {
        "domain": {"name": d.name, "title": d.title, "description": d.description,
                   "guidelines": list(d.guidelines)},
        "knowledge_base": {
            "domain": kb.domain, "goal": kb.goal, "start": kb.workflow.start,
            "terminals": list(kb.workflow.terminals),
            "stages": [{"name": st.name, "description": st.description,
                        "required_info": list(st.required_info), "skip_conditions": list(st.skip_conditions),
                        "failure_handling": list(st.failure_handling),
                        "termination_conditions": list(st.termination_conditions)} for st in kb.workflow.stages],
            "transitions": [{"source": t.source, "target": t.target, "kind": str(t.kind),
                             "condition": t.condition} for t in kb.workflow.transitions],
            "guidelines": list(kb.guidelines), "user_facts": [fact(f) for f in kb.user_facts]},
        "user_intent": {
            "profile": it.profile, "interruption_rate": it.interruption_rate,
            "interruption_probs": {k: float(v) for k, v in it.interruption_probs.items()},
            "hidden_facts": [fact(f) for f in it.hidden_facts], "provides": list(it.provides),
            "corrections": [{"key": c.key, "first_value": c.first_value,
                             "corrected_value": c.corrected_value} for c in it.corrections]},
    }


def ihbench_public_row(conv: Conversation, rd: RenderedDialogue | None, audio: AudioResolver,
                       max_turns: int) -> dict[str, Any]:
    """One row of the public ``conversations`` config: the wide layout with turns numbered
    from 1 and structs (same content as :func:`ihbench_row`, whose turn k is public turn k + 1)."""
    row = ihbench_row(conv, rd, audio, max_turns)
    out = {"conversation_id": row["conversation_id"], **_public_structs(conv), "goal": row["goal"],
           "system_message": row["system_message"], "num_turns": row["num_turns"]}
    for k in range(max_turns):
        for col in ("assistant_turn_{k}_transcript", "assistant_turn_{k}_original", "user_turn_{k}_transcript",
                    "user_turn_{k}_audio", "user_turn_{k}_interruption_type", "turn_{k}_tf_rubric",
                    "turn_{k}_rq_rubrics"):
            out[col.format(k=k + 1)] = row[col.format(k=k)]
    return out


def eval_item_row(item: EvalItem, rd: RenderedDialogue | None,
                  audio: AudioResolver) -> dict[str, Any]:
    return {
        "item_id": item.id, "conversation_id": item.conversation_id, "domain": item.domain,
        "message_index": item.message_index, "type": item.type, "depth": item.depth,
        "system_prompt": item.system_prompt, "history": _chat(item.history),
        "interjection": item.interjection,
        "interjection_audio": audio.message_clip(rd, item.message_index),
        "planned_text": item.planned_text, "heard_text": item.heard_text,
        "tf_rubric": item.rubric.tf_criterion, "rq_rubrics": list(item.rubric.rq_criteria),
        "gold_recovery": item.gold_recovery, "baseline": item.baseline,
        "baseline_model": item.baseline_model,
    }


def baseline_row(item: EvalItem) -> dict[str, Any]:
    return {"item_id": item.id, "conversation_id": item.conversation_id,
            "message_index": item.message_index, "type": item.type, "depth": item.depth,
            "baseline_model": item.baseline_model, "response": item.baseline}


def repair_row(m: MaskedItem, audio: AudioResolver) -> dict[str, Any]:
    return {
        "id": m.id, "source_id": m.source_id, "source_kind": m.source_kind,
        "message_index": _opt_int(m.message_index), "condition": m.condition,
        "signal": m.signal, "window_ms": m.window_ms, "level": m.level,
        "transcript": m.transcript,
        "words": [{"word": w.word, "start_s": w.start_s, "end_s": w.end_s} for w in m.words],
        "spans": [{"word_start": s.word_start, "word_end": s.word_end, "start_s": s.start_s,
                   "end_s": s.end_s, "text": s.text} for s in m.spans],
        "question": m.question, "answer": m.answer, "slot": m.slot,
        "expected_behaviour": m.expected_behaviour, "context": canonical_json(list(m.context)),
        "audio": audio.value(m.audio_path), "original_audio": audio.value(m.original_audio_path),
        "sampling_rate": m.sample_rate,
    }


def timing_row(p: PerturbationPair, audio: AudioResolver) -> dict[str, Any]:
    return {
        "id": p.id, "source_id": p.source_id, "type": p.type,
        "crop_start_s": p.crop_start_s, "crop_end_s": p.crop_end_s,
        "natural_audio": audio.value(p.natural_path),
        "perturbed_audio": audio.value(p.perturbed_path), "sampling_rate": p.sample_rate,
        "edits": json.dumps([e.model_dump(mode="json", exclude={"id"}) for e in p.edits],
                            sort_keys=True),
        "measured": canonical_json(p.measured),
    }


def _meta(obj: dict[str, Any], used: set[str]) -> str:
    return canonical_json({k: v for k, v in obj.items() if k not in used})


def _row_id(obj: dict[str, Any], kind: str) -> str:
    rid = obj.get("id") or obj.get("item_id")
    return str(rid) if rid else f"{kind}-{stable_hash(kind, obj)[:16]}"


def sft_row(obj: dict[str, Any]) -> dict[str, Any]:
    """An SFT row in chat format: ``messages`` (system/user/assistant ... -> gold recovery)."""
    if "messages" not in obj:
        raise ReleaseError(f"SFT row {str(obj)[:80]!r} has no 'messages'. Fix: export SFT rows "
                           "as {'messages': [{'role', 'content'}, ...]}.")
    return {"id": _row_id(obj, "sft"), "messages": _chat(obj["messages"]),
            "meta": _meta(obj, {"id", "messages"})}


def dpo_row(obj: dict[str, Any]) -> dict[str, Any]:
    """A DPO row in TRL's conversational preference format (prompt, chosen, rejected)."""
    missing = [k for k in ("prompt", "chosen", "rejected") if k not in obj]
    if missing:
        raise ReleaseError(f"DPO row {str(obj)[:80]!r} lacks {missing}. Fix: export DPO rows as "
                           "{'prompt': [...], 'chosen': [...], 'rejected': [...]}.")
    prompt = obj["prompt"]
    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    return {"id": _row_id(obj, "dpo"), "prompt": _chat(prompt), "chosen": _chat(obj["chosen"]),
            "rejected": _chat(obj["rejected"]),
            "meta": _meta(obj, {"id", "prompt", "chosen", "rejected"})}
