"""The perturbation stages: scan dialogues, plan per-type quotas, build natural/perturbed pairs.

::

    dialogues ──scan (VAD, events, candidates)──► DialogueScan
              ──plan (seeded, per-type quota, round-robin over dialogues)──► PerturbJob
              ──make_pair (crop, edit, normalise, re-measure, write)──► PerturbationPair
                                       out/pairs.jsonl, out/audio/*.flac, out/sidecars/*.json

A candidate that cannot host its perturbation fails with the reason (runner failures) and the
next candidate of that type is tried, up to ``max_rounds`` rounds.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from bargein.audio.events import Backchannel, _active, detect_events
from bargein.audio.io import normalize_loudness, read_audio, resample, write_audio
from bargein.audio.vad import exact_channel_segments, frame_db, get_vad
from bargein.errors import AudioError, BargeinError, ConfigError, GenerationFailed
from bargein.perturb import ops
from bargein.perturb.crops import CROP_MAX_S, CROP_MIN_S, choose_crop, clip_segments
from bargein.perturb.measure import TOLERANCE_S, measure
from bargein.records.audio import RenderedDialogue
from bargein.records.base import Record
from bargein.records.derived import PERTURBATION_TYPES, PerturbationPair
from bargein.records.release import Failure
from bargein.runner import Stage, StageContext, run_stage
from bargein.seeding import canonical_json, file_sha256, item_rng
from bargein.store import atomic_write_text, write_jsonl

log = logging.getLogger("bargein.perturb")
Segs = tuple[tuple[tuple[float, float], ...], ...]


class DialogueScan(Record):
    """VAD segments, backchannel sources and perturbation candidates of one dialogue."""

    id_prefix = "scan"
    source_id: str
    audio_path: str
    audio_sha256: str
    duration_s: float
    segments: Segs
    backchannels: tuple[dict, ...] = ()
    candidates: dict[str, tuple[dict, ...]] = {}
    vad: str = ""
    voices: dict[str, str] = {}         # role -> voice id (to synthesise missing backchannels)
    ref_segments: dict = {}             # turnnat-ref: 80 ms frame segments (see perturb.ref_ops)


class PerturbJob(Record):
    """One planned pair: a dialogue, a perturbation type and the candidate to use."""

    id_prefix = "job"
    source_id: str
    audio_path: str
    audio_sha256: str
    duration_s: float
    segments: Segs
    backchannels: tuple[dict, ...] = ()
    type: str
    candidate: dict
    voices: dict[str, str] = {}
    ref_segments: dict = {}


def _vad(ctx: StageContext):
    vad = ctx.resources.get("vad")
    if vad is None:
        vad = ctx.resources["vad"] = get_vad(ctx.config["vad"])
    return vad


def load_stereo(path: str, sample_rate: int, what: str) -> np.ndarray:
    """(n, 2) float32 at ``sample_rate``; mono, >2 channels, NaNs or unreadable files raise."""
    x, sr = read_audio(path)
    if x.ndim == 1 or x.shape[1] == 1:
        raise AudioError(f"{what}: {path} is mono; TurnNat needs two-channel audio (one speaker "
                         "per channel). Fix: supply stereo files (user = channel 0, system = 1).")
    if x.shape[1] != 2:
        raise AudioError(f"{what}: {path} has {x.shape[1]} channels; expected 2")
    return resample(x, sr, sample_rate) if sr != sample_rate else x


def scan_dialogue(rd: RenderedDialogue, ctx: StageContext) -> DialogueScan:
    """Stage ``perturb_scan``: VAD both channels, find events and candidates."""
    cfg = ctx.config
    x = load_stereo(rd.audio_path, cfg["sample_rate"], f"dialogue {rd.id}")
    dur = len(x) / cfg["sample_rate"]
    if dur < CROP_MIN_S:
        raise AudioError(f"dialogue {rd.id}: {dur:.1f} s is shorter than a {CROP_MIN_S:.0f}-"
                         f"{CROP_MAX_S:.0f} s crop; nothing to perturb")
    if cfg.get("protocol") == "turnnat-ref":
        return _scan_ref(rd, x, dur, cfg["sample_rate"])
    vad = _vad(ctx)
    segs = exact_channel_segments(cfg["vad"], x, cfg["sample_rate"])
    for c, s in enumerate(segs):
        if not s:
            raise AudioError(f"dialogue {rd.id}: channel {c} has no speech (VAD {vad.id}); "
                             "a two-speaker dialogue is needed")
    ev = detect_events(segs, dur, rd.segments or None)
    voices = {r: v for r, v in (rd.voices or {}).items() if r in ROLE_CHANNEL}
    synth = [ROLE_CHANNEL[r] for r in voices
             if len({(b.start_s, b.end_s) for b in ev.backchannels if b.channel == ROLE_CHANNEL[r]}) < 2]
    cands = ops.find_candidates(segs, dur, ev.backchannels, synth_channels=synth)
    # keep the candidates around which a crop with silent ends exists at all
    cands = {t: tuple(_round(c) for c in v if choose_crop(segs, dur, c["need"]) is not None)
             for t, v in cands.items()}
    return DialogueScan(id=rd.id, source_id=rd.id, audio_path=rd.audio_path,
                        audio_sha256=file_sha256(rd.audio_path), duration_s=round(dur, 6),
                        segments=tuple(tuple((round(a, 6), round(b, 6)) for a, b in s) for s in segs),
                        backchannels=tuple(_round(b.__dict__) for b in ev.backchannels),
                        candidates=cands, vad=f"{vad.id}@{vad.version}", voices=voices)


def _scan_ref(rd: RenderedDialogue, x: np.ndarray, dur: float, sr: int) -> DialogueScan:
    """``turnnat-ref`` scan: the reference turn VAD (silero, 0.1 s timestamps, 80 ms frames,
    merge <= 3 frames), its candidate rules and its isolated backchannels as sources."""
    from bargein.perturb import ref_ops
    from bargein.perturb import ref_rules as R

    texts = [[(s.start_s, s.end_s, s.spoken_text if s.spoken_text is not None else s.text)
              for s in (rd.segments or ()) if s.channel == ch] for ch in (0, 1)]
    si = ref_ops.scan_input(x, sr, texts)
    for c, s in enumerate(si.segs):
        if not s:
            raise AudioError(f"dialogue {rd.id}: channel {c} has no speech (reference turn VAD); "
                             "a two-speaker dialogue is needed")
    cands = ref_ops.candidates(x, sr, si)
    v = si.vads(short=True)
    bcs = [dict(channel=ch, start_s=g.start_s, end_s=g.end_s, text=R.normalized(g.text) or None, source="ref")
           for ch in (0, 1) for g in R.isolated_backchannels(si.segs_short[ch], v[ch], v[1 - ch])
           if g.text.strip()]                  # the reference needs a transcript for a source
    voices = {r: vid for r, vid in (rd.voices or {}).items() if r in ROLE_CHANNEL}
    ref = {"segs": [[ref_ops.seg_dict(g) for g in ch] for ch in si.segs],
           "short": [[ref_ops.seg_dict(g) for g in ch] for ch in si.segs_short], "n_frames": si.n_frames}
    return DialogueScan(id=rd.id, source_id=rd.id, audio_path=rd.audio_path,
                        audio_sha256=file_sha256(rd.audio_path), duration_s=round(dur, 6),
                        segments=tuple(tuple((round(g.start_s, 6), round(g.end_s, 6)) for g in ch)
                                       for ch in si.segs),
                        backchannels=tuple(_round(b) for b in bcs),
                        candidates={t: tuple(_round(c) for c in v)
                                    for t, v in ref_ops.coverable(cands, si, dur).items()},
                        vad="silero@turnnat-ref (0.1 s, 80 ms frames)", voices=voices, ref_segments=ref)


def _make_pair_ref(job: "PerturbJob", ctx: StageContext, x: np.ndarray):
    """``turnnat-ref`` pair: edit the whole dialogue, crop the result by the reference rule, cut
    the natural clip at the mapped source bounds, normalise each whole file separately."""
    from random import Random as _R

    from bargein.perturb import ref_edits, ref_ops

    cfg, rng, sr = ctx.config, ctx.rng, ctx.config["sample_rate"]
    rs = job.ref_segments
    si = ref_ops.ScanInput(tuple(tuple(ref_ops.seg_of(d) for d in ch) for ch in rs["segs"]),
                           tuple(tuple(ref_ops.seg_of(d) for d in ch) for ch in rs["short"]), int(rs["n_frames"]))
    c = dict(job.candidate)
    if job.type == "excessive_backchannel":
        bcs = [Backchannel(**b) for b in job.backchannels]
        pool = ref_ops.source_pool(c, x, sr, bcs)
        if len(pool) < ref_ops.BC_COUNT:
            speech = [(a, b) for a, b in job.segments[c["b"]]]
            pool += synth_backchannels(job, c["b"], x[:, c["b"]], speech, sr, rng,
                                       have={t for t, _, _ in pool}, n=ref_ops.BC_COUNT - len(pool))
        app = ref_ops.excessive_backchannel(x, sr, c, si, rng, pool)
    else:
        app = ref_ops.APPLY[job.type](x, sr, c, si, rng)
    (p0, p1), (n0, n1) = ref_ops.crop_pair(x, app, sr, _R(rng.random()))
    pert, nat = app.audio[p0:p1], x[n0:n1]
    a_s = p0 / sr
    edits = [ops._edit(**{**e, "at_s": e["at_s"] - a_s}) for e in app.edits]
    shift = {"at_s"} if "at_s" in app.params else set()
    params = {k: (v - a_s if k in shift else v) for k, v in app.params.items()}
    cc = {k: (v - a_s if isinstance(v, float) and k in ("a0", "a1", "b0", "b1", "s", "e", "t_a", "bt1", "w0", "w1")
              else v) for k, v in c.items()}
    nat, g_nat = ref_edits.normalize_stereo(nat)
    pert, g_pert = ref_edits.normalize_stereo(pert)
    params.update(loudness_gain_natural=g_nat, loudness_gain_perturbed=g_pert)
    return nat, pert, edits, params, cc, (a_s, p1 / sr), (n0 / sr, n1 / sr)


def _round(d: dict) -> dict:
    return {k: (round(v, 6) if isinstance(v, float) else
                tuple(round(x, 6) if isinstance(x, float) else x for x in v) if isinstance(v, tuple) else v)
            for k, v in d.items()}


def _normalise_pair(nat: np.ndarray, pert: np.ndarray, sr: int, segs) -> tuple[np.ndarray, np.ndarray]:
    """Per channel: the gain that puts the natural crop at -20 dBFS active RMS, applied to both
    halves, then lowered until both peaks are <= -1 dBFS."""
    nat, pert = nat.copy(), pert.copy()
    for c in range(2):
        gain = normalize_loudness(nat[:, c], sr)[1] if segs[c] else 1.0
        peak = max(float(np.max(np.abs(nat[:, c]))), float(np.max(np.abs(pert[:, c])))) * gain
        if peak > 10 ** (-1 / 20):
            gain *= 10 ** (-1 / 20) / peak
        nat[:, c] *= gain
        pert[:, c] *= gain
    return nat, pert


ROLE_CHANNEL = {"user": 0, "assistant": 1}
BC_SYNTH_PHRASES = ("yeah", "uh-huh", "right", "mm-hm", "okay", "oh really", "I see")


def synth_backchannels(job: PerturbJob, ch: int, listener: np.ndarray, speech, sr: int, rng,
                       have: set, n: int) -> list[tuple[str, np.ndarray, None]]:
    """Up to ``n`` backchannels synthesised in the listener's own voice (lexicon phrases, <= 1 s
    of sound, trimmed to it, at the listener's speech level), for dialogues that have none."""
    from bargein import lexicon
    from bargein.audio.io import active_rms
    from bargein.audio.tts import synthesize
    from bargein.audio.vad import refine_to_energy

    role = next((r for r, c in ROLE_CHANNEL.items() if c == ch), None)
    voice = job.voices.get(role) if role else None
    if voice is None:
        return []
    level = active_rms(listener, sr) if speech else 0.05
    phrases = [p for p in BC_SYNTH_PHRASES if lexicon.is_backchannel(p) and lexicon.normalize(p) not in have]
    rng.shuffle(phrases)
    out = []
    for phrase in phrases:
        if len(out) >= n:
            break
        try:
            sp = synthesize(phrase, voice)
        except BargeinError as e:
            log.debug("backchannel %r in %s failed: %s", phrase, voice, e)
            continue
        y = resample(sp.samples.astype(np.float32), sp.sample_rate, sr) if sp.sample_rate != sr else \
            sp.samples.astype(np.float32)
        span = refine_to_energy(y, sr, [(0.0, len(y) / sr)])[0]
        y = y[int(span[0] * sr): int(np.ceil(span[1] * sr))]
        if not 0.1 <= len(y) / sr <= ops.BC_MAX_S or not np.any(y):
            continue
        gain = level / max(active_rms(y, sr), 1e-9)
        out.append((lexicon.normalize(phrase), (y * gain).astype(np.float32), None))
    return out


def _check_removed(pert: np.ndarray, sr: int, c: dict, segs, measured: dict) -> None:
    """The removed turn leaves nothing: inside the closed gap B's channel stays at its noise
    floor (no 5 ms frame more than 10 dB above it), else the pair fails with the evidence."""
    A, B = c["a"], c["b"]
    offs = [b for _, b in segs[A] if abs(b - c["s"]) < 0.35]
    if not offs:
        return
    off = offs[0]
    nxt = min((a for a, _ in segs[A] if a > off), default=None)
    if nxt is None:
        return
    db = frame_db(pert[:, B], sr)
    floor = float(np.percentile(db, 10))
    gap = db[int(off / 0.005): int(nxt / 0.005)]
    peak = float(gap.max()) if gap.size else floor
    measured["residue_over_floor_db"] = round(peak - floor, 3)
    if peak > floor + 10.0:
        raise GenerationFailed(f"hold_instead_of_shift: the removed turn leaves sound in the closed gap "
                               f"({peak:.1f} dBFS, floor {floor:.1f})", evidence={"measured": measured})


def _turn_sources(job: PerturbJob, a: int, b: int) -> list[tuple[float, float]]:
    """Complete 1-4 s turns of speaker ``b``: those with ``a`` silent around them (no cross-talk
    on b's channel) when there are any, else every 1-4 s segment of ``b``."""
    turns = [(s, e) for s, e in job.segments[b] if 1.0 <= e - s <= 4.0]
    clean = [(s, e) for s, e in turns if not _active(job.segments[a], s - 0.2, e + 0.2)]
    return clean or turns


def make_pair(job: PerturbJob, ctx: StageContext) -> PerturbationPair:
    """Stage ``perturb``: crop, apply, normalise, re-measure by VAD, write audio + sidecar."""
    cfg, rng = ctx.config, ctx.rng
    sr = cfg["sample_rate"]
    if file_sha256(job.audio_path) != job.audio_sha256:
        raise GenerationFailed(f"{job.audio_path} changed since it was scanned; re-run perturb")
    x = load_stereo(job.audio_path, sr, f"job {job.id}")
    if cfg.get("protocol") == "turnnat-ref" and job.ref_segments:
        nat, pert, edits, params, c, pcrop, crop = _make_pair_ref(job, ctx, x)
        a_s, b_s = crop
        fade_ms = 60.0
    else:
        nat, pert, edits, params, c, crop, fade_ms = _make_pair_bargein(job, ctx, x)
        a_s, b_s = pcrop = crop
    vad = _vad(ctx)
    # measured on the written result with exact boundaries (detector without padding, edges
    # re-placed on the audio's energy): the sidecar reports what the audio does
    m_nat = exact_channel_segments(cfg["vad"], nat, sr)
    m_pert = exact_channel_segments(cfg["vad"], pert, sr)
    off = a_s - pcrop[0]                 # natural clip time -> perturbed clip time
    if off:
        m_nat = [[(s0 + off, s1 + off) for s0, s1 in ch] for ch in m_nat]
    measured = measure(job.type, m_nat, m_pert, c, params)
    if job.type == "hold_instead_of_shift":
        _check_removed(pert, sr, c, m_pert, measured)
    evidence = {"measured": measured, "params": params, "crop": crop}
    if measured["in_spec"] != 1.0 and cfg.get("strict", True):
        raise GenerationFailed(f"{job.type}: re-measured edit outside the specified range "
                               f"{measured}", evidence=evidence)
    out = Path(cfg["out_dir"])
    nat_rel, pert_rel = f"audio/{job.id}.natural.flac", f"audio/{job.id}.perturbed.flac"
    write_audio(out / nat_rel, nat, sr)
    write_audio(out / pert_rel, pert, sr)
    pair = PerturbationPair(id=job.id, source_id=job.source_id, type=job.type, natural_path=nat_rel,
                            perturbed_path=pert_rel, sample_rate=sr, crop_start_s=round(a_s, 6),
                            crop_end_s=round(b_s, 6), edits=tuple(edits),
                            measured={k: v for k, v in measured.items()})
    sidecar = {"pair_id": job.id, "type": job.type, "source_id": job.source_id,
               "source_audio": Path(job.audio_path).name, "crop_start_s": a_s, "crop_end_s": b_s,
               "sample_rate": sr, "fade_ms": round(fade_ms, 4), "params": _round(params),
               "edits": [json.loads(e.model_dump_json()) for e in edits], "measured": measured,
               "candidate": _round({k: v for k, v in c.items() if k != "need"}),
               "natural_path": nat_rel, "perturbed_path": pert_rel,
               "vad": f"{vad.id}@{vad.version} (no pad, no merge) + energy boundaries",
               "tolerance_s": TOLERANCE_S, "protocol": cfg.get("protocol", "turnnat-bargein"), "times": "seconds from the start of the perturbed clip"}
    if pcrop != crop:
        sidecar["perturbed_crop_edited_timeline_s"] = [round(pcrop[0], 6), round(pcrop[1], 6)]
    atomic_write_text(out / "sidecars" / f"{job.id}.json", json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    return pair


def _make_pair_bargein(job: PerturbJob, ctx: StageContext, x: np.ndarray):
    """bargein's pair: crop the natural dialogue first, edit the crop, normalise per channel."""
    cfg, rng = ctx.config, ctx.rng
    sr = cfg["sample_rate"]
    fade_ms = rng.uniform(10.0, 12.0)
    target = rng.uniform(CROP_MIN_S, CROP_MAX_S)
    c_abs = job.candidate
    crop = choose_crop(job.segments, job.duration_s, tuple(c_abs["need"]), target_s=target)
    if crop is None:
        raise GenerationFailed(f"{job.type}: no {CROP_MIN_S:.0f}-{CROP_MAX_S:.0f} s crop with both "
                               f"speakers silent at its ends around {c_abs['need']}")
    a_s, b_s = crop
    i0, i1 = int(round(a_s * sr)), int(round(b_s * sr))
    nat = x[i0:i1].copy()
    segs = clip_segments(job.segments, a_s, b_s)
    c = {k: (v - a_s if isinstance(v, float) and k not in ("e_lo", "e_hi") else v) for k, v in c_abs.items()}
    clip = ops.Clip(nat, sr, segs, int(round(fade_ms * sr / 1000)))
    bcs = [Backchannel(**b) for b in job.backchannels]
    if job.type == "shift_instead_of_hold":
        pert, edits, params = ops.shift_instead_of_hold(clip, c, rng, x, sr,
                                                        _turn_sources(job, c["a"], c["b"]), crop)
    elif job.type == "excessive_backchannel":
        pool = ops.backchannel_pool(c, x, sr, bcs, crop)
        if len(pool) < 2:
            pool += synth_backchannels(job, c["b"], nat[:, c["b"]], segs[c["b"]], sr, rng,
                                       have={t for t, _, _ in pool}, n=3 - len(pool))
        insert = ops.excessive_backchannel_ref if cfg.get("protocol") == "turnnat-ref" else \
            ops.excessive_backchannel
        pert, edits, params = insert(clip, c, rng, pool)
    else:
        pert, edits, params = getattr(ops, job.type)(clip, c, rng)
    nat, pert = _normalise_pair(nat, pert, sr, segs)
    return nat, pert, edits, params, c, crop, fade_ms


def plan_jobs(scans: list[DialogueScan], kind: str, seed: int) -> list[PerturbJob]:
    """Every candidate of ``kind`` in a seeded order: shuffled per dialogue, then round-robin."""
    rng = item_rng(seed, "perturb-plan", kind)
    per: list[list[PerturbJob]] = []
    for scan in sorted(scans, key=lambda s: s.id):
        cands = list(enumerate(scan.candidates.get(kind, ())))
        rng.shuffle(cands)
        per.append([PerturbJob(id=f"{scan.source_id}_{kind}_{k}", source_id=scan.source_id,
                               audio_path=scan.audio_path, audio_sha256=scan.audio_sha256,
                               duration_s=scan.duration_s, segments=scan.segments,
                               backchannels=scan.backchannels, type=kind, candidate=cand,
                               voices=scan.voices, ref_segments=scan.ref_segments)
                    for k, cand in cands])
    rng.shuffle(per)
    order = []
    for i in range(max((len(p) for p in per), default=0)):
        order.extend(p[i] for p in per if i < len(p))
    return order


def _resources(vad: str) -> dict[str, Any]:
    return {"vad": get_vad(vad)}


def run_perturb(dialogues: list[RenderedDialogue], *, types: list[str], per_type: int, out_dir: Path,
                workdir: Path, seed: int, vad: str = "silero", sample_rate: int = 16000,
                workers: int = 1, max_rounds: int = 50, strict: bool = True,
                protocol: str = "turnnat-bargein") -> dict[str, Any]:
    """Scan, plan and build pairs; writes out/pairs.jsonl and out/skipped.jsonl. Returns a summary.

    ``protocol``: ``turnnat-bargein`` (bargein's rules) or ``turnnat-ref`` (the public TurnNat
    generator: its turn VAD, candidate rules, 60 ms splices, edit-then-crop with its crop rule,
    whole-file stereo loudness per clip; :mod:`bargein.perturb.ref_ops`). Early entry cuts
    silence from both channels in both."""
    bad = [t for t in types if t not in PERTURBATION_TYPES]
    if bad:
        raise ConfigError(f"--types: unknown {bad}; valid: {', '.join(PERTURBATION_TYPES)}")
    if per_type < 1:
        raise ConfigError(f"--per-type must be >= 1, got {per_type}")
    from bargein.scorers.protocols import get_protocol

    get_protocol(protocol, "turnnat")
    factory = functools.partial(_resources, vad)
    base = {"vad": vad, "sample_rate": sample_rate}
    if protocol == "turnnat-ref":
        base["protocol"] = protocol             # the reference turn VAD and candidate rules
    scan_stage = Stage("perturb_scan", scan_dialogue, DialogueScan, config=base, version="2", kind="cpu",
                       backends=(vad,))
    res = run_stage(scan_stage, dialogues, workdir=workdir, seed=seed, resources_factory=factory,
                    workers=workers)
    scans = res.outputs
    skipped: list[Failure] = list(res.failures)
    cfg = dict(base, out_dir=str(Path(out_dir).resolve()), strict=strict, protocol=protocol)
    pair_stage = Stage("perturb", make_pair, PerturbationPair, config=cfg, version="3", kind="cpu",
                       backends=(vad,))
    pairs: dict[str, list[PerturbationPair]] = {t: [] for t in types}
    queues = {t: plan_jobs(scans, t, seed) for t in types}
    for _ in range(max_rounds):
        batch = []
        for t in types:
            want = per_type - len(pairs[t])
            batch.extend(queues[t][:want])
            queues[t] = queues[t][want:] if want > 0 else queues[t]
        if not batch:
            break
        r = run_stage(pair_stage, batch, workdir=workdir, seed=seed, resources_factory=factory,
                      workers=workers, write_outputs=False)
        for p in r.outputs:
            pairs[p.type].append(p)
        skipped.extend(r.failures)
    out_dir = Path(out_dir)
    all_pairs = [p for t in types for p in sorted(pairs[t], key=lambda p: p.id)]
    write_jsonl(out_dir / "pairs.jsonl", all_pairs)
    write_jsonl(out_dir / "skipped.jsonl", skipped)
    summary = {"dialogues": len(dialogues), "scanned": len(scans), "pairs": len(all_pairs),
               "per_type": {t: len(pairs[t]) for t in types},
               "candidates": {t: sum(len(s.candidates.get(t, ())) for s in scans) for t in types},
               "skipped": len(skipped), "out": str(out_dir), "protocol": protocol}
    atomic_write_text(out_dir / "summary.json", canonical_json(summary) + "\n")
    return summary


__all__ = ["DialogueScan", "PerturbJob", "scan_dialogue", "make_pair", "plan_jobs", "run_perturb",
           "load_stereo"]
