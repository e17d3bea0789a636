"""``bargein render``: conversations -> two-channel FLAC, per-message clips, frame labels."""

from __future__ import annotations

from pathlib import Path

import click

from bargein.cli.util import FiniteFloat, fail_if_nothing, get_globals, parse_kv, require_file
from bargein.errors import ConfigError


def _voices(values: tuple[str, ...]) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """``role=voice`` fixes a role's voice; ``role=v1,v2`` is a pool drawn per conversation."""
    fixed, pool = {}, {}
    for role, val in parse_kv(values, "--voices").items():
        if role not in ("assistant", "user"):
            raise ConfigError(f"--voices {role}=...: unknown role {role!r}; use assistant=... or user=...")
        ids = tuple(v.strip() for v in val.split(",") if v.strip())
        if not ids:
            raise ConfigError(f"--voices {role}=: give a voice id, e.g. {role}=piper:joe")
        if len(ids) == 1:
            fixed[role] = ids[0]
        else:
            pool[role] = ids
    return fixed, pool


def _voice_map(path: Path | None) -> dict[str, dict[str, str]]:
    if path is None:
        return {}
    from bargein.store import read_json

    data = read_json(require_file(path, "--voice-map", "pass a JSON file "
                                  '{"<conversation id>": {"user": "piper:joe"}}'), "--voice-map")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"--voice-map {path}: expected {{conversation id: {{role: voice id}}}}")
    return data


@click.command("render")
@click.option("--conversations", "conversations", type=click.Path(path_type=Path), required=True,
              help="JSONL of VerifiedConversation (or Conversation) records.")
@click.option("--voices", multiple=True, metavar="ROLE=VOICE[,VOICE...]",
              help="Voice per role (repeatable), e.g. assistant=hibari:heart user=piper:joe; "
                   "a comma list is a pool drawn per conversation.")
@click.option("--voice-map", type=click.Path(path_type=Path), default=None,
              help="JSON {conversation id: {role: voice id}} overriding voices per conversation.")
@click.option("--sample-rate", type=int, default=16000, show_default=True, help="Release rate (Hz).")
@click.option("--noise", type=click.Choice(["none", "white", "pink", "babble"]), default="none",
              show_default=True, help="Background noise (babble = other synthesized voices).")
@click.option("--snr", "snr_db", type=FiniteFloat(), default=20.0, show_default=True,
              help="Noise SNR in dB against each channel's speech.")
@click.option("--telephony", is_flag=True, help="8 kHz mu-law telephone round trip.")
@click.option("--backchannels", is_flag=True, help="Listener backchannels during long turns.")
@click.option("--label-vad", type=click.Choice(["auto", "silero", "webrtc", "energy", "none"]),
              default="auto", show_default=True,
              help="VAD for the measured frame labels (auto: energy on clean audio, silero on noisy).")
@click.option("--workers", type=click.IntRange(1, None), default=None,
              help="Worker processes (default: cores).")
def render(conversations: Path, voices: tuple[str, ...], voice_map: Path | None, sample_rate: int,
           noise: str, snr_db: float, telephony: bool, backchannels: bool, label_vad: str,
           workers: int | None) -> None:
    """Render conversations to two-channel audio (user = channel 0, assistant = channel 1).

    Writes <workdir>/render.jsonl (RenderedDialogue records), render.failures.jsonl, and audio
    under <workdir>/artifacts/render/; synthesis is cached in <workdir>/tts_cache/.
    """
    from pydantic import ValidationError

    from bargein.audio.render import RenderConfig, load_conversations
    from bargein.pipeline import render_spec, run_stages
    from bargein.records import VerifiedConversation
    from bargein.store import write_jsonl

    g = get_globals()
    require_file(conversations, "--conversations", "pass the conversations.jsonl written by "
                 "'bargein generate conversations' (or 'bargein verify')")
    fixed, pool = _voices(voices)
    try:
        config = RenderConfig(
            **{f"{r}_voice": v for r, v in fixed.items()}, voice_pool=pool,
            voice_overrides=_voice_map(voice_map), sample_rate=sample_rate, noise=noise,
            snr_db=snr_db, telephony=telephony, backchannels=backchannels, label_vad=label_vad)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"render option {key}={err.get('input')!r}: {err['msg']}") from None
    from bargein.audio.voices import get_voice

    for role, vid in [("assistant", config.assistant_voice), ("user", config.user_voice)] + [
            (r, v) for r, vs in pool.items() for v in vs]:
        try:                                    # a voice every item would need: fail fast
            get_voice(vid)
        except ConfigError as e:
            raise ConfigError(f"--voices {role}: {e}") from None
    items, bad = load_conversations(conversations)
    cache_dir = g.workdir / "tts_cache"
    before = _count(cache_dir)
    # a plain Conversation line stands for an accepted verified one (the renderer reads both)
    result = run_stages([render_spec({"render": config.model_dump(mode="json")})],
                        workdir=g.workdir, seed=g.resolve_seed(), workers=workers,
                        records={VerifiedConversation: items})["render"].result
    failures = bad + result.failures
    write_jsonl(g.workdir / "render.failures.jsonl", failures)
    skipped = len(items) - result.computed - result.cached - len(result.failures)
    total_s = sum(r.duration_s for r in result.outputs)
    click.echo(f"rendered {len(result.outputs)} dialogues ({result.cached} cached, "
               f"{result.computed} computed), {total_s / 60:.1f} min of audio at {sample_rate} Hz, "
               f"in {result.wall_s:.1f} s")
    click.echo(f"synthesis cache: {_count(cache_dir) - before} new clips, {_count(cache_dir)} in "
               f"{cache_dir}")
    if skipped:
        click.echo(f"skipped {skipped} discarded or budget-stopped conversations")
    click.echo(f"outputs: {g.workdir / 'render.jsonl'}")
    if failures:
        click.echo(f"{len(failures)} failed (see {g.workdir / 'render.failures.jsonl'}):", err=True)
        for f in failures[:5]:
            click.echo(f"  {f.item_id}: {f.error_type}: {f.reason[:300]}", err=True)
    fail_if_nothing(len(result.outputs), f"no dialogue was rendered ({len(failures)} failed); "
                    f"see {g.workdir / 'render.failures.jsonl'}")


def _count(d: Path) -> int:
    return sum(1 for _ in d.glob("*/*.npz")) if d.exists() else 0
