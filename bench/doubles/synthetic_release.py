"""Small synthetic stage outputs for release benchmarks and tests.

Not the generation pipeline: a fixed phrase bank arranged into valid records (scenario,
conversation with all six interruption types, verification, eval items with baselines, a
rendered two-channel dialogue with real audio, SFT/DPO rows), so release building, diffing and
scoring can be exercised without the other stages. Audio is espeak-ng speech when the ``espeak``
extra is installed, else deterministic tone bursts (one per word); ``audio_kind`` says which.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bargein.audio.io import write_audio
from bargein.records import (
    INTERRUPTION_TYPES, Conversation, Domain, Edit, EvalItem, Goal, Interruption, KnowledgeBase,
    MaskedItem, MaskSpan, Message, PerturbationPair, RenderedDialogue, Rubric, Scenario, Segment,
    Transition, UserFact, UserIntent, Verdict, VerifiedConversation, WordTiming, Workflow,
    WorkflowStage,
)
from bargein.records.conversation import ChatMessage
from bargein.seeding import item_rng
from bargein.store import atomic_write_text

SR = 16000
DOMAINS = (("telecom", "Telecommunications", "upgrade a mobile plan"),
           ("healthcare", "Healthcare", "reschedule a clinic appointment"),
           ("travel", "Travel", "change a flight booking"),
           ("e_commerce", "E-commerce", "return a damaged order"))
ASSISTANT = (
    "Thanks for calling, first I need to confirm your account number and the name on the account.",
    "Your current plan includes ten gigabytes of data and unlimited calls within the country.",
    "The upgrade adds twenty gigabytes, international roaming and a new handset credit of fifty dollars.",
    "To finish the change I will send a confirmation code to the email address on your file.",
    "The new plan starts on the first day of next month and your bill will show the prorated amount.",
    "Is there anything else about your account or the new plan that I can help you with today?",
)
INTERJECTIONS = {
    "normal": "By the way, I need this done before Friday.",
    "impatient": "Yeah, I know all that, just skip to the next step.",
    "correction": "Sorry, I misspoke earlier, my account number is 4471 0933.",
    "topic_switch": "Oh, can you also check my outstanding invoices?",
    "filler": "mm-hm",
    "pushback": "I'm not comfortable giving that out over the phone.",
}
RUBRICS = {
    "normal": ("Acknowledge the Friday deadline and continue the plan upgrade.",
               ("Addresses the user's Friday deadline.", "Resumes the workflow with a fresh start.",
                "Does not repeat what the user already heard.")),
    "impatient": ("Skip the explanation and move to the next workflow step.",
                  ("Skips the interrupted explanation.", "Does not re-explain heard content.")),
    "correction": ("Accept the corrected account number and continue verification.",
                   ("Accepts the correction without pushback.",
                    "Uses the corrected value 4471 0933.", "Continues the workflow.")),
    "topic_switch": ("Answer the invoice question, then steer back to the upgrade.",
                     ("Addresses the invoice question.", "Steers back to the original workflow.",
                      "Does not blend the two topics.")),
    "filler": ("Continue the interrupted sentence exactly where it stopped.",
               ("Continues from where the utterance was cut.",
                "Does not repeat the heard part.", "Does not acknowledge the filler.")),
    "pushback": ("De-escalate and offer another way to verify.",
                 ("Shows empathy for the user's concern.", "Offers an alternative.")),
}
USER_REPLIES = ("My account number is 4471 0932 and the name is Dana Whitfield.",
                "Okay, that sounds fine to me.", "Sure, go ahead.", "Alright.", "Thanks.")


def _gold(kind: str, remainder: str) -> str:
    return {
        "normal": "Noted, we will have it done before Friday. Now, the upgrade itself is next.",
        "impatient": "Sure, moving on. Which email should receive the confirmation code?",
        "correction": "Thanks, I have updated your account number to 4471 0933. Let's continue.",
        "topic_switch": "You have one open invoice of 42 dollars 10. Now, back to your upgrade.",
        "filler": remainder,
        "pushback": "I completely understand your concern. Alternatively, I can text a one-time "
                    "code to your phone instead.",
    }[kind]


def _baseline(kind: str, planned: str) -> str:
    return {
        "normal": "Okay. " + planned,
        "impatient": "Of course. " + planned,
        "correction": "Are you sure? You said 4471 0932 before. Let's continue.",
        "topic_switch": "Let's finish the upgrade first and then look at invoices and the upgrade.",
        "filler": "Great, glad you're following along! " + planned,
        "pushback": "I need that information to continue.",
    }[kind]


def scenario(n: int, seed: int) -> Scenario:
    name, title, goal_text = DOMAINS[n % len(DOMAINS)]
    stages = tuple(WorkflowStage(name=s, description=f"{s.replace('_', ' ')} step")
                   for s in ("verify_identity", "explain_options", "confirm_change"))
    wf = Workflow(stages=stages, start="verify_identity", terminals=("resolved",),
                  transitions=(Transition(source="verify_identity", target="explain_options", kind="next"),
                               Transition(source="explain_options", target="confirm_change", kind="next"),
                               Transition(source="confirm_change", target="resolved", kind="terminate")))
    kb = KnowledgeBase(domain=name, goal=f"goal_{n % 5}", workflow=wf,
                       guidelines=("Never read back full card numbers.",),
                       user_facts=(UserFact(key="account_number", value="4471 0932", kind="account"),))
    probs = {t: 1.0 / len(INTERRUPTION_TYPES) for t in INTERRUPTION_TYPES}
    return Scenario(domain=Domain(name=name, title=title),
                    goal=Goal(domain=name, name=f"goal_{n % 5}", description=goal_text), kb=kb,
                    system_prompt=f"You are a {title.lower()} support agent. Help the user {goal_text}.",
                    intent=UserIntent(profile="cooperative but rushed", interruption_probs=probs),
                    seed=seed * 100_003 + n)


def conversation(n: int, seed: int) -> Conversation:
    """A conversation of 10–12 messages; the interruption types rotate with ``n``."""
    rng = item_rng(seed, "synthetic", f"conv{n}")
    sc = scenario(n, seed)
    n_rounds = 5 + rng.randint(0, 1)
    kinds = [INTERRUPTION_TYPES[(n + j) % len(INTERRUPTION_TYPES)] for j in range(n_rounds)]
    msgs, rubrics, gold = [], [], {}
    for r in range(n_rounds):
        text = ASSISTANT[(n + r) % len(ASSISTANT)]
        interrupt = r > 0 and r % 2 == 1 or (r == n_rounds - 1)
        a_idx, u_idx = 2 * r, 2 * r + 1
        if interrupt:
            kind = kinds[r]
            words = text.split()
            cut = rng.randint(3, len(words) - 3)
            heard = " ".join(words[:cut])
            inter = Interruption(type=kind, cut_word_index=cut, cut_char_offset=len(heard),
                                 heard_text=heard, overlap_ms=rng.randint(80, 400),
                                 interjection=INTERJECTIONS[kind])
            msgs.append(Message(index=a_idx, role="assistant", text=text, heard_text=heard,
                                stage=sc.kb.workflow.stages[min(r // 2, 2)].name, interruption=inter))
            msgs.append(Message(index=u_idx, role="user", text=INTERJECTIONS[kind]))
            tf, rq = RUBRICS[kind]
            rubrics.append(Rubric(message_index=u_idx, type=kind, tf_criterion=tf, rq_criteria=rq))
            gold[u_idx] = _gold(kind, " ".join(words[cut:]))
        else:
            msgs.append(Message(index=a_idx, role="assistant", text=text,
                                stage=sc.kb.workflow.stages[min(r // 2, 2)].name))
            msgs.append(Message(index=u_idx, role="user", text=USER_REPLIES[r % len(USER_REPLIES)]))
    return Conversation(scenario=sc, messages=tuple(msgs), rubrics=tuple(rubrics),
                        gold_recoveries=gold, outcome="resolved")


def eval_items(conv: Conversation, *, baseline_model: str | None = "synthetic-baseline") -> list[EvalItem]:
    out = []
    for cut_msg, user in conv.interruptions:
        rub = next(r for r in conv.rubrics if r.message_index == user.index)
        hist = tuple(ChatMessage(role=m.role, content=m.spoken_text)
                     for m in conv.messages[: user.index + 1])
        depth = sum(1 for m in conv.messages[: user.index] if m.role == "user")
        out.append(EvalItem(
            id=f"{conv.id}_ev{user.index}", conversation_id=conv.id,
            domain=conv.scenario.domain.name, message_index=user.index,
            system_prompt=conv.scenario.system_prompt, history=hist, interjection=user.text,
            type=rub.type, depth=depth, rubric=rub, gold_recovery=conv.gold_recoveries[user.index],
            planned_text=cut_msg.text, heard_text=cut_msg.heard_text or "",
            baseline=_baseline(rub.type, cut_msg.text) if baseline_model else None,
            baseline_model=baseline_model))
    return out


class _Voice:
    """espeak speech (cached per text) or, without the extra, one tone burst per word."""

    def __init__(self, prefer: str = "espeak"):
        self.kind = "tone"
        self._cache: dict[tuple[str, int], tuple[np.ndarray, tuple[WordTiming, ...]]] = {}
        if prefer == "espeak":
            try:
                from bargein.audio.tts import synthesize

                synthesize("test", "espeak:en-us")
                self._synth, self.kind = synthesize, "espeak"
            except Exception:  # noqa: BLE001 - the extra is optional; tones stand in
                self.kind = "tone"

    def speak(self, text: str, channel: int) -> tuple[np.ndarray, tuple[WordTiming, ...]]:
        key = (text, channel)
        if key not in self._cache:
            self._cache[key] = self._espeak(text, channel) if self.kind == "espeak" else self._tone(text, channel)
        return self._cache[key]

    def _espeak(self, text: str, channel: int):
        from bargein.audio.io import resample

        sp = self._synth(text, "espeak:en-us" if channel else "espeak:en-gb")
        return resample(sp.samples, sp.sample_rate, SR), sp.words

    @staticmethod
    def _tone(text: str, channel: int):
        parts, words, t = [], [], 0.0
        pos = 0
        for i, w in enumerate(text.split()):
            dur = 0.12 + 0.04 * len(w)
            n = int(dur * SR)
            f = 180.0 + 40.0 * channel + 15.0 * (len(w) % 7)
            x = 0.3 * np.sin(2 * np.pi * f * np.arange(n) / SR) * np.hanning(n)
            parts += [x.astype(np.float32), np.zeros(int(0.05 * SR), np.float32)]
            char = text.index(w, pos)
            pos = char + len(w)
            words.append(WordTiming(word=w, start_s=round(t, 6), end_s=round(t + dur, 6), char_start=char))
            t += dur + 0.05
        return np.concatenate(parts) if parts else np.zeros(1, np.float32), tuple(words)


def render(conv: Conversation, voice: _Voice, root: Path, sub: str = "audio") -> RenderedDialogue:
    """Sequential two-channel timeline; an interrupted message stops ``overlap_ms`` after the cut."""
    segs, chans, t = [], [[], []], 0.0
    layout = []
    for m in conv.messages:
        ch = 0 if m.role == "user" else 1
        x, words = voice.speak(m.text, ch)
        start = t
        stop = None
        cut_s = None
        if m.interruption is not None:
            k = m.interruption.cut_word_index
            cut_s = start + (words[k - 1].end_s if len(words) >= k else len(x) / SR)
            stop = cut_s + m.interruption.overlap_ms / 1000.0
            x = x[: int((stop - start) * SR)]
        end = start + len(x) / SR
        layout.append((ch, start, x))
        clip_rel = f"{sub}/{conv.id}_m{m.index:03d}.flac"
        write_audio(root / clip_rel, x, SR)
        segs.append(Segment(message_index=m.index, channel=ch, start_s=round(start, 6),
                            end_s=round(end, 6), text=m.text, heard_text=m.heard_text,
                            cut_s=round(cut_s, 6) if cut_s else None,
                            stop_s=round(stop, 6) if stop else None, clip_path=clip_rel,
                            words=tuple(w.with_(start_s=round(start + w.start_s, 6),
                                                end_s=round(start + w.end_s, 6)) for w in words
                                        if start + w.start_s < end)))
        t = cut_s if cut_s is not None else end + 0.3
    total = max(s + len(x) / SR for _, s, x in layout) + 0.2
    stereo = np.zeros((int(total * SR) + 1, 2), np.float32)
    for ch, s, x in layout:
        a = int(s * SR)
        stereo[a:a + len(x), ch] += x
    rel = f"{sub}/{conv.id}.flac"
    write_audio(root / rel, stereo, SR)
    return RenderedDialogue(conversation_id=conv.id, audio_path=rel, sample_rate=SR,
                            duration_s=round(total, 6), segments=tuple(segs),
                            voices={"assistant": f"{voice.kind}:en-us", "user": f"{voice.kind}:en-gb"},
                            engines=(voice.kind,))


def derived(rd: RenderedDialogue, root: Path, n: int) -> tuple[MaskedItem | None, PerturbationPair]:
    """A masked repair item (one user word span under white noise at matched RMS) and a
    late-response timing pair (1.5 s of silence inserted before the first reply)."""
    from bargein.audio.io import read_audio, rms

    stereo, sr = read_audio(root / rd.audio_path)
    masked = None
    seg = next((s for s in rd.segments if s.channel == 0 and len(s.words) >= 3), None)
    if seg is not None:
        clip, _ = read_audio(root / seg.clip_path)
        w = seg.words[1]
        a, b = int((w.start_s - seg.start_s) * sr), int((w.end_s - seg.start_s) * sr)
        noise = np.random.default_rng(n).standard_normal(max(1, b - a)).astype(np.float32)
        out = clip.copy()
        out[a:b] = noise[: len(out[a:b])] * (rms(clip[a:b]) or 0.01)
        rel = f"masked/{rd.conversation_id}_m{seg.message_index:03d}.flac"
        write_audio(root / rel, out, sr)
        cond = "answerable" if n % 2 == 0 else "unanswerable"
        masked = MaskedItem(
            source_id=rd.id, message_index=seg.message_index, audio_path=rel,
            original_audio_path=seg.clip_path, sample_rate=sr, transcript=seg.text,
            words=tuple(x.with_(start_s=round(x.start_s - seg.start_s, 6),
                                end_s=round(x.end_s - seg.start_s, 6)) for x in seg.words),
            spans=(MaskSpan(word_start=1, word_end=2, start_s=round(w.start_s - seg.start_s, 6),
                            end_s=round(w.end_s - seg.start_s, 6), text=w.word),),
            condition=cond, signal="white_noise", answer=w.word,
            expected_behaviour="answer" if cond == "answerable" else f"ask again for '{w.word}'")
    end = min(len(stereo), int(8.0 * sr))
    natural = stereo[:end]
    at = int(rd.segments[1].start_s * sr) if len(rd.segments) > 1 else end // 2
    gap = np.zeros((int(1.5 * sr), 2), np.float32)
    perturbed = np.concatenate([natural[:at], gap, natural[at:]])[:end]
    nat_rel, per_rel = f"timing/{rd.conversation_id}_nat.flac", f"timing/{rd.conversation_id}_late.flac"
    write_audio(root / nat_rel, natural, sr)
    write_audio(root / per_rel, perturbed, sr)
    pair = PerturbationPair(source_id=rd.id, type="late_response", natural_path=nat_rel,
                            perturbed_path=per_rel, sample_rate=sr, crop_start_s=0.0,
                            crop_end_s=round(end / sr, 6),
                            edits=(Edit(op="insert_silence", channel=0, at_s=round(at / sr, 6),
                                        duration_s=1.5, note="delay the first reply"),),
                            measured={"delay_s": 1.5})
    return masked, pair


@dataclass(frozen=True)
class SyntheticRun:
    conversations: Path
    rendered: Path
    eval_items: Path
    sft: Path
    dpo: Path
    repair: Path
    timing: Path
    root: Path
    audio_kind: str


def write_synthetic(root: Path, n: int, *, seed: int = 7, audio: str = "espeak",
                    discard_every: int = 0, derived_items: int = 4) -> SyntheticRun:
    """Write JSONL stage outputs + audio for ``n`` conversations under ``root``.

    Streams: one conversation in memory at a time. ``discard_every`` marks every k-th one as
    discarded by the verifier (to exercise discard counts); the first ``derived_items``
    rendered ones also give a repair item and a timing pair.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    voice = _Voice(audio)
    paths = {k: root / f"{k}.jsonl"
             for k in ("verify", "render", "eval_items", "sft", "dpo", "repair", "timing")}
    files = {k: open(p.with_suffix(".jsonl.tmp"), "w", encoding="utf-8") for k, p in paths.items()}
    try:
        for i in range(n):
            conv = conversation(i, seed)
            discarded = bool(discard_every) and i % discard_every == discard_every - 1
            verdicts = (Verdict(check="state_machine_leakage", message_index=1, issue="names a stage",
                                fixable=not discarded),)
            v = VerifiedConversation(conversation=conv, verdicts=verdicts, rounds=1,
                                     accepted=not discarded,
                                     discard_reasons=("state_machine_leakage",) if discarded else ())
            files["verify"].write(v.model_dump_json() + "\n")
            if discarded:
                continue
            rd = render(conv, voice, root)
            files["render"].write(rd.model_dump_json() + "\n")
            if i < derived_items:
                masked, pair = derived(rd, root, i)
                if masked is not None:
                    files["repair"].write(masked.model_dump_json() + "\n")
                files["timing"].write(pair.model_dump_json() + "\n")
            for item in eval_items(conv):
                files["eval_items"].write(item.model_dump_json() + "\n")
                prompt = [{"role": "system", "content": item.system_prompt}] + [
                    {"role": m.role, "content": m.content} for m in item.history]
                files["sft"].write(json.dumps({"id": f"{item.id}_sft",
                                               "conversation_id": conv.id, "messages": prompt + [
                    {"role": "assistant", "content": item.gold_recovery}], "type": item.type}) + "\n")
                files["dpo"].write(json.dumps({
                    "id": f"{item.id}_dpo", "conversation_id": conv.id, "prompt": prompt,
                    "type": item.type,
                    "chosen": [{"role": "assistant", "content": item.gold_recovery}],
                    "rejected": [{"role": "assistant", "content": item.baseline}]}) + "\n")
    finally:
        for f in files.values():
            f.close()
    for k, p in paths.items():
        p.with_suffix(".jsonl.tmp").replace(p)
    atomic_write_text(root / "audio_kind.txt", voice.kind + "\n")
    return SyntheticRun(conversations=paths["verify"], rendered=paths["render"],
                        eval_items=paths["eval_items"], sft=paths["sft"], dpo=paths["dpo"],
                        repair=paths["repair"], timing=paths["timing"],
                        root=root, audio_kind=voice.kind)
