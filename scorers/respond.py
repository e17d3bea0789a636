"""Model responses for every eval item of a release and every epoch (input of the scorer).

    n = generate_responses("org/bargein-ihbench@v1.0.0", llm="openai:gpt-4o-audio-preview",
                           epochs=3, out=Path("responses.jsonl"))

The model sees the item's system prompt and the history up to the interruption, as IHBench
evaluates it: every user turn as **audio** (the release's recorded user clips, sent as OpenAI
``input_audio`` content parts, WAV) and every assistant turn as text, the cut turn as the user
actually heard it. ``text_only=True`` sends the user transcripts instead (the paper's text-only
ablation). Anthropic's messages API takes no audio input, so ``anthropic:`` and the in-process
``llamacpp:`` models are always text-only, and the output records that.

Answers go through the pipeline runner: one cached record per (item, epochs, model, settings,
audio hash), so an interrupted run resumes where it stopped and a finished one re-runs for free;
failures go to ``<workdir>/respond.failures.jsonl`` with their evidence.

Two stand-ins need no model, for pipeline tests only: ``oracle`` (the gold recovery) and
``smoke`` (a seeded mix of the gold, a restart of the interrupted message, and a content-free
reply; labelled as such in every line).
"""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path
from typing import Any, Literal

from bargein.errors import ConfigError, GenerationFailed
from bargein.records import EvalItem, Record
from bargein.seeding import item_rng, stable_hash
from bargein.store import atomic_write_text

RESPOND_VERSION = "2"
STAND_INS = ("oracle", "smoke")
AUDIO_PROVIDERS = ("openai",)          # providers whose chat API takes input_audio parts


class AudioTurn(Record):
    """One user turn's audio as sent to the model (WAV bytes live in the runner's resources)."""

    id_prefix = "aud"
    message_index: int
    sha256: str


class RespondInput(Record):
    id_prefix = "rin"
    item: EvalItem
    audio: tuple[AudioTurn, ...] = ()


class ModelResponse(Record):
    """A model's answer to one eval item in one epoch (one line of responses.jsonl)."""

    id_prefix = "resp"
    item_id: str
    epoch: int
    model: str
    modality: Literal["audio", "text", "stand-in"]
    settings: dict[str, Any] = {}
    response: str


# ---- audio from the release --------------------------------------------------------------
def _wav_bytes(cell: dict) -> bytes:
    import soundfile as sf

    from bargein.releases.reader import decode_audio

    data, sr = decode_audio(cell)
    buf = io.BytesIO()
    sf.write(buf, data, sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def user_turn_audio(release: Path, items: list[EvalItem]) -> tuple[dict[str, tuple[AudioTurn, ...]],
                                                                    dict[str, bytes], list[str]]:
    """Per item, the audio of every user turn in its history (from the ``ihbench`` config, whose
    k-th non-empty user turn is the k-th user message); the WAV bytes by sha256; problems."""
    from bargein.releases.reader import iter_rows

    rows: dict[str, dict] = {}
    for r in iter_rows(release, "ihbench", "test"):
        rows[r["conversation_id"]] = r
    out: dict[str, tuple[AudioTurn, ...]] = {}
    blobs: dict[str, bytes] = {}
    problems: list[str] = []
    for item in items:
        row = rows.get(item.conversation_id)
        if row is None:
            problems.append(f"{item.id}: conversation {item.conversation_id} is not in the ihbench config")
            continue
        cells = [row[f"user_turn_{k}_audio"] for k in range(row["num_turns"])
                 if row.get(f"user_turn_{k}_transcript") is not None]
        user_idx = [n for n, m in enumerate(item.history) if m.role == "user"]
        if len(cells) < len(user_idx) or any(not (c and c.get("bytes")) for c in cells[:len(user_idx)]):
            problems.append(f"{item.id}: {len(user_idx)} user turns in the history but the release "
                            f"has audio for {sum(1 for c in cells if c and c.get('bytes'))}")
            continue
        turns = []
        for n, cell in zip(user_idx, cells):
            wav = _wav_bytes(cell)
            sha = stable_hash("wav", base64.b64encode(wav).decode("ascii"))
            blobs[sha] = wav
            turns.append(AudioTurn(message_index=n, sha256=sha))
        out[item.id] = tuple(turns)
    return out, blobs, problems


def chat_messages(item: EvalItem, audio: tuple[AudioTurn, ...] = (),
                  blobs: dict[str, bytes] | None = None) -> list[dict[str, Any]]:
    """System prompt + history; user turns with audio become ``input_audio`` content parts."""
    by_idx = {a.message_index: a for a in audio}
    msgs: list[dict[str, Any]] = [{"role": "system", "content": item.system_prompt}]
    for n, m in enumerate(item.history):
        if m.role == "user" and n in by_idx:
            data = base64.b64encode((blobs or {})[by_idx[n].sha256]).decode("ascii")
            msgs.append({"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}]})
        else:
            msgs.append({"role": m.role, "content": m.content})
    return msgs


# ---- the stage ------------------------------------------------------------------------------
def _stand_in(inp: RespondInput, ctx) -> list[ModelResponse]:
    item, cfg = inp.item, ctx.config
    out = []
    for e in range(cfg["epochs"]):
        if cfg["llm"] == "oracle":
            text = item.gold_recovery
        else:
            rng = item_rng(ctx.seed, f"respond-smoke{e}", item.id)
            text = rng.choice([item.gold_recovery, item.gold_recovery, item.planned_text,
                               "Okay, sure. What would you like to do next?"])
        out.append(ModelResponse(item_id=item.id, epoch=e, model=cfg["llm"], modality="stand-in",
                                 settings={}, response=text))
    return out


async def _audio_chat(messages: list[dict[str, Any]], cfg: dict[str, Any], epoch: int,
                      client: Any) -> str:
    kw: dict[str, Any] = {"model": cfg["model"], "messages": messages,
                          "temperature": cfg["temperature"], "seed": epoch,
                          "max_tokens": cfg["max_tokens"]}
    if cfg.get("modalities"):
        kw["modalities"] = cfg["modalities"]
    resp = await client.chat.completions.create(**kw)
    msg = resp.choices[0].message
    text = msg.content or ""
    audio = getattr(msg, "audio", None)
    if not text and audio is not None:            # audio-out models put the words in the transcript
        text = getattr(audio, "transcript", "") or ""
    return text


def _openai_client(ctx) -> Any:
    client = ctx.resources.get("openai_audio_client")
    if client is None:
        import openai

        base_url = os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY", "").strip() or ("sk-no-key-required" if base_url else "")
        if not key:
            raise ConfigError("respond with audio needs OPENAI_API_KEY (or OPENAI_BASE_URL for a "
                              "local OpenAI-compatible server); or pass --text-only")
        client = ctx.resources["openai_audio_client"] = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, max_retries=4)
    return client


async def _with_model(inp: RespondInput, ctx) -> list[ModelResponse]:
    cfg = ctx.config
    item = inp.item
    out = []
    for e in range(cfg["epochs"]):
        if cfg["modality"] == "audio":
            msgs = chat_messages(item, inp.audio, ctx.resources["audio_blobs"])
            text = await _audio_chat(msgs, cfg, e, _openai_client(ctx))
        else:
            from bargein.generators.conversation import llm_for

            llm = llm_for(ctx, cfg["llm"])
            c = await llm.complete(chat_messages(item), agent="respond", sample=e,
                                   temperature=cfg["temperature"], max_tokens=cfg["max_tokens"])
            text = c.text
        text = text.strip()
        if not text:
            raise GenerationFailed(f"respond {item.id} epoch {e}: {cfg['llm']} returned an empty "
                                   "answer", evidence={"item": item.id, "epoch": e, "model": cfg["llm"]})
        out.append(ModelResponse(item_id=item.id, epoch=e, model=cfg["llm"], modality=cfg["modality"],
                                 settings={k: cfg[k] for k in ("temperature", "max_tokens")}, response=text))
    return out


def respond_stage(llm: str, *, epochs: int, modality: str, temperature: float, max_tokens: int,
                  concurrency: int):
    from bargein.runner import Stage

    if llm in STAND_INS:
        return Stage(name="respond", fn=_stand_in, output=ModelResponse,
                     config={"llm": llm, "epochs": epochs}, version=RESPOND_VERSION)
    cfg = {"llm": llm, "model": llm.split(":", 1)[1], "epochs": epochs, "modality": modality,
           "temperature": temperature, "max_tokens": max_tokens}
    return Stage(name="respond", fn=_with_model, output=ModelResponse, config=cfg,
                 version=RESPOND_VERSION, backends=(llm,), kind="io", concurrency=concurrency)


def generate_responses(release: str | Path, *, llm: str, epochs: int = 3, out: Path,
                       seed: int = 1234, workdir: Path = Path("work"), concurrency: int = 8,
                       temperature: float = 0.7, max_tokens: int = 512, text_only: bool = False,
                       endpoint: str | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Write ``{item_id, epoch, model, modality, response}`` lines to ``out``; returns a summary
    (lines written, modality, failures)."""
    from bargein.llm import parse_spec
    from bargein.releases.hub import pull_release
    from bargein.runner import run_stage
    from bargein.scorers.ihbench import load_eval_items

    import math

    if epochs < 1:
        raise ConfigError(f"--epochs {epochs}: must be >= 1")
    if concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: must be >= 1")
    if not (math.isfinite(temperature) and 0 <= temperature <= 2):
        raise ConfigError(f"--temperature {temperature}: must be a number from 0 to 2")
    if max_tokens < 1:
        raise ConfigError(f"--max-tokens {max_tokens}: must be >= 1")
    llm = llm.strip()
    if llm.lower() in ("offline", "rule", "rules"):
        raise ConfigError(f"--llm {llm}: there is no rule-based responder any more. Pass a model "
                          "(openai:MODEL, anthropic:MODEL, llamacpp:PATH), or 'oracle' / 'smoke' "
                          "for pipeline tests")
    path = pull_release(str(release), endpoint=endpoint)
    items = load_eval_items(path)
    resources: dict[str, Any] = {}
    problems: list[str] = []
    if llm.lower() in STAND_INS:
        llm, modality = llm.lower(), "stand-in"
        inputs = [RespondInput(item=i) for i in items]
    else:
        provider, _ = parse_spec(llm)
        modality = "text" if text_only or provider not in AUDIO_PROVIDERS else "audio"
        audio: dict[str, tuple[AudioTurn, ...]] = {}
        if modality == "audio":
            audio, resources["audio_blobs"], problems = user_turn_audio(path, items)
            if problems and len(problems) == len(items):
                raise ConfigError(f"release {path} has no user-turn audio for its eval items "
                                  f"({problems[0]}). Fix: pass --text-only, or use a release "
                                  "built with audio")
        inputs = [RespondInput(item=i, audio=audio.get(i.id, ())) for i in items
                  if modality != "audio" or i.id in audio]
    stage = respond_stage(llm, epochs=epochs, modality=modality, temperature=temperature,
                          max_tokens=max_tokens, concurrency=concurrency)
    res = run_stage(stage, inputs, workdir=workdir, seed=seed, resources=resources, progress=progress)
    rows = [r.model_dump(mode="json", exclude={"id"}) for r in res.outputs]
    atomic_write_text(Path(out), "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                                         for r in rows))
    llm_client = resources.get("llm")
    if llm_client is not None:
        llm_client.flush()
    return {"written": len(rows), "modality": modality, "model": llm,
            "failures": len(res.failures) + len(problems), "problems": problems[:5],
            "failures_file": str(Path(workdir) / "respond.failures.jsonl")}
