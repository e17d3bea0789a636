"""Turn-taking predictors: P(256-state future voice activity | history), registered kind "predictor".

A predictor returns, per 50 Hz frame, the NLL of the observed VAP class (see
:mod:`bargein.audio.labels` for the bit order); NaN where the 2 s future runs past the end.

* ``builtin`` — counts over recent voice-activity history, trained here in seconds::

      context(t) = ( a0[t], a1[t],                     who speaks now (4)
                     run0, run1,                       length of each channel's current run (7 bins each)
                     last,                             who spoke last (none / 0 / 1)
                     last_len )                        length of that speaker's last utterance (4 bins)

  with interpolated Witten-Bell backoff full -> (now, runs, last) -> (now, run of the
  last speaker, last) -> (now) -> unigram -> uniform.
* ``vap`` — a VAP checkpoint a user supplies (TorchScript, or a state dict with the ``vap``
  package installed); needs torch (``pip install torch==2.13.0``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bargein.audio.labels import FRAME_HZ, N_VAP_CLASSES, vap_targets
from bargein.errors import BackendUnavailable, ConfigError
from bargein.registry import create
from bargein.store import atomic_write_bytes

RUN_EDGES_S = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2)        # 7 bins
LAST_LEN_EDGES_S = (0.5, 1.0, 3.0)                  # 4 bins


@runtime_checkable
class Predictor(Protocol):
    id: str
    frame_hz: int

    def frame_nll(self, activity: np.ndarray, *, audio: np.ndarray | None = None,
                  sample_rate: int | None = None) -> np.ndarray: ...


# ------------------------------------------------------------------ history features
def _run_lengths(x: np.ndarray) -> np.ndarray:
    """Frames since the current run of equal values started (1 at a change)."""
    n = len(x)
    change = np.ones(n, dtype=bool)
    change[1:] = x[1:] != x[:-1]
    idx = np.where(change, np.arange(n), 0)
    np.maximum.accumulate(idx, out=idx)
    return np.arange(n) - idx + 1


def _last_active(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: who spoke most recently (0 nobody yet, 1 channel 0, 2 channel 1; when both
    speak now, the one who started later) and the length in frames of that speaker's most
    recent (or current) active run."""
    n = len(a)
    t = np.arange(n)
    last, length = [], []
    for c in range(2):
        lo = np.where(a[:, c], t, -1)
        np.maximum.accumulate(lo, out=lo)                 # last active frame <= t
        cur = np.where(a[:, c], _run_lengths(a[:, c]), 0)  # active run length so far
        last.append(lo)
        length.append(np.where(lo >= 0, cur[np.maximum(lo, 0)], 0))
    who = np.where(last[1] > last[0], 2, np.where(last[0] > last[1], 1, 0))
    both = (last[0] == last[1]) & (last[0] >= 0)
    who[both] = np.where(length[1][both] < length[0][both], 2, 1)
    last_len = np.where(who == 1, length[0], np.where(who == 2, length[1], 0))
    return who, last_len


def contexts(activity: np.ndarray, frame_hz: int = FRAME_HZ) -> np.ndarray:
    """(frames, 4) context ids for backoff levels 0 (full) .. 3 (current state only)."""
    a = np.asarray(activity, dtype=bool)
    now = a[:, 0].astype(np.int64) + 2 * a[:, 1].astype(np.int64)
    edges = np.array(RUN_EDGES_S) * frame_hz
    r0 = np.searchsorted(edges, _run_lengths(a[:, 0]), side="right")
    r1 = np.searchsorted(edges, _run_lengths(a[:, 1]), side="right")
    who, last_len = _last_active(a)
    ll = np.searchsorted(np.array(LAST_LEN_EDGES_S) * frame_hz, last_len, side="right")
    nr, nl = len(RUN_EDGES_S) + 1, len(LAST_LEN_EDGES_S) + 1
    lvl1 = ((now * nr + r0) * nr + r1) * 3 + who
    lvl0 = lvl1 * nl + ll
    rl = np.where(who == 2, r1, r0)
    lvl2 = (now * nr + rl) * 3 + who
    return np.stack([lvl0, lvl1, lvl2, now], axis=1)


BETA = 1.0            # Witten-Bell backoff weight: lambda(h) = beta*T(h) / (N(h) + beta*T(h))
_NR, _NL = len(RUN_EDGES_S) + 1, len(LAST_LEN_EDGES_S) + 1
LEVEL_SIZES = (4 * _NR * _NR * 3 * _NL, 4 * _NR * _NR * 3, 4 * _NR * 3, 4)


class BuiltinPredictor:
    """The count-based history model (see module docstring). ``counts[level]`` is
    (contexts, 256) float64; probabilities are built once at load."""

    id = "builtin"
    frame_hz = FRAME_HZ

    def __init__(self, counts: list[np.ndarray], meta: dict | None = None):
        self.counts = counts
        self.meta = meta or {}
        self.beta = float(self.meta.get("beta", BETA))
        self.version = str(self.meta.get("sha", "untrained"))
        self.logp = np.log(self._probs())

    def with_beta(self, beta: float) -> BuiltinPredictor:
        """The same counts with another backoff weight."""
        return type(self)(self.counts, dict(self.meta, beta=float(beta)))

    def _probs(self) -> np.ndarray:
        uni = self.counts[-1].sum(axis=0) + 1.0              # add-one unigram over 256 classes
        p = (uni / uni.sum())[None, :]
        for level in range(len(self.counts) - 1, -1, -1):
            c = self.counts[level]
            if level == len(self.counts) - 1:
                parent = np.repeat(p, c.shape[0], axis=0)
            else:
                parent = p[self._parent_map(level)]
            n = c.sum(axis=1, keepdims=True)
            types = self.beta * (c > 0).sum(axis=1, keepdims=True)
            p = np.where(n > 0, (c + types * parent) / np.maximum(n + types, 1e-12), parent)
        return np.maximum(p, 1e-12)

    def _parent_map(self, level: int) -> np.ndarray:
        """Index of each level-``level`` context in level ``level + 1``."""
        nr, nl = len(RUN_EDGES_S) + 1, len(LAST_LEN_EDGES_S) + 1
        ids = np.arange(LEVEL_SIZES[level])
        if level == 0:
            return ids // nl
        if level == 1:
            who = ids % 3
            rest = ids // 3
            r1, rest = rest % nr, rest // nr
            r0, now = rest % nr, rest // nr
            rl = np.where(who == 2, r1, r0)
            return (now * nr + rl) * 3 + who
        return ids // (nr * 3)                              # level 2 -> now

    # -------------------------------------------------------------- training
    @classmethod
    def train(cls, activities: Iterable[np.ndarray], *, frame_hz: int = FRAME_HZ, swap: bool = True,
              tbu_weight: float = 1.0) -> BuiltinPredictor:
        """Count (context, future class) over natural dialogues; ``swap`` also counts each
        dialogue with its channels exchanged; frames inside TBUs weigh ``tbu_weight``."""
        from bargein.scorers.turnnat import tbu_mask

        if frame_hz != FRAME_HZ:
            raise ConfigError(f"the built-in predictor runs at {FRAME_HZ} Hz, got {frame_hz}")
        counts = [np.zeros((s, N_VAP_CLASSES)) for s in LEVEL_SIZES]
        frames = dialogues = 0
        for act in activities:
            views = [act, act[:, ::-1]] if swap else [act]
            for a in views:
                y = vap_targets(a, frame_hz)
                ok = y >= 0
                w = np.where(tbu_mask(a, frame_hz), tbu_weight, 1.0)[ok]
                ctx = contexts(a, frame_hz)[ok]
                for level, size in enumerate(LEVEL_SIZES):
                    flat = ctx[:, level] * N_VAP_CLASSES + y[ok]
                    counts[level] += np.bincount(flat, weights=w, minlength=size * N_VAP_CLASSES
                                                 ).reshape(size, N_VAP_CLASSES)
                frames += int(ok.sum())
            dialogues += 1
        if frames == 0:
            raise ConfigError("no training frames: dialogues must be longer than the 2 s horizon")
        meta = {"frames": frames, "dialogues": dialogues, "swap": swap, "tbu_weight": tbu_weight}
        return cls(counts, meta)

    # -------------------------------------------------------------- scoring
    def frame_nll(self, activity: np.ndarray, *, audio: np.ndarray | None = None,
                  sample_rate: int | None = None) -> np.ndarray:
        a = np.asarray(activity, dtype=bool)
        y = vap_targets(a, self.frame_hz)
        out = np.full(len(a), np.nan)
        ok = y >= 0
        if ok.any():
            ctx = contexts(a, self.frame_hz)[ok, 0]
            out[ok] = -self.logp[ctx, y[ok]]
        return out

    # -------------------------------------------------------------- files
    def save(self, path: str | os.PathLike) -> Path:
        from bargein.audio.labels import _npz_bytes

        arrays = {f"counts{k}": c.astype(np.float32) for k, c in enumerate(self.counts)}
        meta = {k: v for k, v in self.meta.items() if k != "sha"}
        arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
        atomic_write_bytes(path, _npz_bytes(arrays))
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> BuiltinPredictor:
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"predictor file {str(p)!r} does not exist. Fix: bargein turnnat train "
                              f"--dialogues rendered.jsonl --out {p}")
        try:
            with np.load(p, allow_pickle=False) as z:
                counts = [z[f"counts{k}"].astype(np.float64) for k in range(len(LEVEL_SIZES))]
                meta = json.loads(str(z["meta"]))
        except (KeyError, ValueError, OSError) as e:
            raise ConfigError(f"{p} is not a bargein built-in predictor ({e}). Fix: retrain it "
                              "with bargein turnnat train") from e
        for k, c in enumerate(counts):
            if c.shape != (LEVEL_SIZES[k], N_VAP_CLASSES):
                raise ConfigError(f"{p}: level {k} has shape {c.shape}, expected "
                                  f"{(LEVEL_SIZES[k], N_VAP_CLASSES)}; retrain it")
        from bargein.seeding import file_sha256

        meta["sha"] = file_sha256(p)[:12]
        return cls(counts, meta)


class VAPPredictor:
    """Adapter for a VAP checkpoint (Ekstedt et al.): stereo 16 kHz audio -> 256-way logits.

    Loads a TorchScript export (``torch.jit.load``) or, with the ``vap`` package installed,
    a state dict for ``vap.model.VapGPT``. The model must return logits or a dict with
    ``"logits"`` of shape (1, frames, 256) at 50 Hz; its class order is VAP's, the same as
    bargein's (speaker 0 bin 0 = least significant bit).
    """

    id = "vap"
    frame_hz = FRAME_HZ

    def __init__(self, path: str | os.PathLike, device: str = "cpu"):
        try:
            import torch
        except ImportError as e:
            raise BackendUnavailable("the VAP predictor needs torch, which is not installed. "
                                     "Fix: pip install torch==2.13.0 (CPU wheel)") from e
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"VAP checkpoint {str(p)!r} does not exist")
        self.torch, self.device = torch, device
        self.version = p.name
        try:
            self.model = torch.jit.load(str(p), map_location=device)
        except (RuntimeError, ValueError):
            self.model = self._from_state_dict(p)
        self.model.eval()

    def _from_state_dict(self, p: Path) -> Any:
        torch = self.torch
        try:
            from vap.model import VapConfig, VapGPT
        except ImportError as e:
            raise BackendUnavailable(f"{p} is a state dict, not TorchScript; loading it needs the "
                                     "'vap' package (github.com/ErikEkstedt/VoiceActivityProjection)"
                                     " or a TorchScript export of the model") from e
        sd = torch.load(str(p), map_location=self.device)
        sd = sd.get("state_dict", sd)
        sd = {k.removeprefix("model."): v for k, v in sd.items()}
        model = VapGPT(VapConfig())
        try:
            model.load_state_dict(sd, strict=True)
        except RuntimeError as e:      # a different config: never score with half a model
            raise ConfigError(f"{p} does not match vap.model.VapGPT(VapConfig()): {e}. Fix: export "
                              "the model with torch.jit.script and pass that file") from e
        return model

    def logits(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        from bargein.audio.io import resample

        torch = self.torch
        x = resample(audio, sample_rate, 16000) if sample_rate != 16000 else audio
        wav = torch.from_numpy(np.ascontiguousarray(x.T, dtype=np.float32))[None].to(self.device)
        with torch.no_grad():
            out = self.model(wav)
        if isinstance(out, dict):
            out = out["logits"]
        return out[0].float().cpu().numpy()

    def frame_nll(self, activity: np.ndarray, *, audio: np.ndarray | None = None,
                  sample_rate: int | None = None) -> np.ndarray:
        if audio is None or sample_rate is None:
            raise ConfigError("the VAP predictor scores audio: pass audio and sample_rate")
        lg = self.logits(audio, sample_rate)
        n = min(len(lg), len(activity))
        lg = lg[:n] - lg[:n].max(axis=1, keepdims=True)
        logp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
        y = vap_targets(np.asarray(activity, dtype=bool)[:n], self.frame_hz)
        out = np.full(len(activity), np.nan)
        ok = y >= 0
        out[:n][ok] = -logp[np.flatnonzero(ok), y[ok]]
        return out


def get_predictor(spec: str) -> Predictor:
    """``builtin:PATH`` or ``vap:PATH`` (a bare path means builtin)."""
    name, _, path = spec.partition(":") if ":" in spec else ("builtin", "", spec)
    if not path:
        raise ConfigError(f"--predictor {spec!r}: expected NAME:PATH, e.g. builtin:work/turnnat/model.npz")
    return create("predictor", name, path=path)
