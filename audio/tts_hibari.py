"""hibari-tts with its bundled ``heart`` voice (24 kHz); word times from the model's own durations.

hibari is a Kokoro-style model: its ONNX graph predicts a duration for every phoneme id
(``Round`` -> ``Clip`` -> ``CumSum``, in units of ``F / sum(durations)`` spectrogram frames of
300 samples) and expands the phonemes by them, so the synthesiser knows where each phoneme is.
The graph is patched in memory to also output that tensor (the audio outputs are unchanged,
bit for bit); each phoneme's sample span follows from the cumulative sum, words own their
phonemes (:mod:`bargein.audio.phonemap`), and word ends settle on the energy boundary at pauses::

    ids       0   h  ə  l  ˈ  O  ␣  ð  ˈ  ɛ  ɹ  ,   ...  0
    duration  14  2  3  2  3  2  2  2  3  3  6  3   ...     (x 2 frames x 300 samples)
    words         |--Hello-------|  |--there---|pause

``aligner="whisper"`` (or any registered aligner) times the audio with that aligner instead.

Other hibari voices download from the Hub on first use, so offline only voices already on disk
(bundled, or in hibari's cache) are offered; asking for another raises ConfigError saying why.
The model's noise is seeded from the text, so the same text gives the same samples.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.phonemap import word_phoneme_ends, word_phoneme_starts
from bargein.audio.wordtimes import (
    WORDTIMES_VERSION, AlignedWordTimes, check_audio, check_text, check_timings, dist_version,
    fill_missing, timings_from_starts,
)
from bargein.errors import AlignmentFailed, BackendUnavailable, ConfigError
from bargein.seeding import stable_int


def available_voices() -> list[str]:
    """hibari voices usable without a download: bundled, or already in hibari's cache dir."""
    try:
        from hibari.voices import VOICES, voice_path
    except ImportError:
        return []
    out = []
    for name in VOICES:
        try:
            voice_path(name, download_missing=False)
            out.append(name)
        except (FileNotFoundError, ValueError):
            pass
    return out


OWN_DURATIONS = "durations"


def duration_tensor(model) -> str:
    """The name of the per-phoneme duration tensor: the input of the graph's one ``CumSum``."""
    cums = [n for n in model.graph.node if n.op_type == "CumSum"]
    if len(cums) != 1:
        raise BackendUnavailable(f"this hibari model has {len(cums)} CumSum nodes (expected 1): its "
                                 "phoneme durations cannot be read. Fix: use aligner='whisper'")
    return cums[0].input[0]


class HibariTTS(AlignedWordTimes):
    """hibari ``heart`` (female, American English), timed by its own phoneme durations (or an aligner)."""

    id = "hibari"

    def __init__(self, threads: int = 1, speed: float = 1.0, aligner: str = OWN_DURATIONS,
                 aligner_options: dict[str, Any] | None = None):
        try:
            import hibari
        except ImportError:
            raise BackendUnavailable("The hibari TTS engine needs the Python module 'hibari'. "
                                     "Fix: pip install hibari-tts (a core dependency of bargein)") from None
        if not 0.5 <= float(speed) <= 2.0:
            raise ConfigError(f"hibari speed={speed} is out of range; use 0.5..2.0 (default 1.0)")
        self._hibari = hibari
        self.sample_rate = int(hibari.SAMPLE_RATE)
        self.threads, self.speed = int(threads), float(speed)
        self.aligner_name, self.aligner_options = aligner, dict(aligner_options or {})
        self._models: dict[str, Any] = {}
        self._g2p_cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def voices(self) -> list[str]:
        return available_voices()

    @cached_property
    def version(self) -> str:
        pv = dist_version("hibari-tts", self._hibari.__version__)
        from hibari.voices import VOICES

        shas = ",".join(VOICES[v]["sha256"][:12] for v in sorted(self.voices()))
        timing = (f"{OWN_DURATIONS}-v1+{WORDTIMES_VERSION}" if self.aligner_name == OWN_DURATIONS
                  else self.aligner_tag)
        return f"hibari-tts-{pv}+{shas}+speed{self.speed}+{timing}"

    def _model(self, voice: str):
        valid = self.voices()
        if voice not in valid:
            from hibari.voices import VOICES

            why = (" It is a hibari voice but not on this machine (hibari downloads it from the Hub; "
                   "offline runs cannot)." if voice in VOICES else "")
            raise ConfigError(f"unknown hibari voice {voice!r}.{why} Valid here: {', '.join(valid)}")
        with self._lock:
            if voice not in self._models:
                model = self._hibari.Hibari(voice=voice, threads=self.threads)
                if self.aligner_name == OWN_DURATIONS:
                    model.sess = self._timed_session(model.model_path)
                self._models[voice] = model
            return self._models[voice]

    def _timed_session(self, path: str):
        """The voice's ONNX session with the phoneme durations as a seventh output."""
        import onnx
        import onnxruntime as ort

        model = onnx.load(path)
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(duration_tensor(model)))
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = self.threads
        so.log_severity_level = 3
        return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])

    def synthesize(self, text: str, voice: str = "heart") -> Speech:
        model = self._model(voice)
        words = check_text(text, "hibari")
        seed = stable_int("hibari", voice, self.speed, text)
        if self.aligner_name != OWN_DURATIONS:
            with self._lock:
                samples = np.asarray(model(text, speed=self.speed, seed=seed), dtype=np.float32)
            check_audio(samples, "hibari", text)
            timed = self.aligner.align(samples, self.sample_rate, text)
            source = self.aligner.id
        else:
            with self._lock:
                samples, chars, starts, ends = self._synth_timed(model, text, seed)
            check_audio(samples, "hibari", text)
            timed = self._word_times(model, words, samples, chars, starts, ends, text)
            source = "synthesizer"
        check_timings(timed, len(samples) / self.sample_rate)
        return Speech(samples=samples, sample_rate=self.sample_rate, words=timed, text=text,
                      voice_id=f"hibari:{voice}", timing_source=source, extra={"seed": seed})

    def _synth_timed(self, model, text: str, seed: int):
        """hibari's ``__call__`` (same sentences, same noise draws, same samples) plus the sample
        span of every phoneme character it spoke."""
        from hibari import dsp

        rng = np.random.default_rng(seed)
        parts, chars, starts, ends = [], [], [], []
        offset = 0
        for ps in model.phonemize(text):
            ids = model.ids(ps)
            if len(ids) < 3:
                continue
            out = model.sess.run(None, {"ids": np.asarray([ids], np.int64),
                                        "speed": np.asarray([self.speed], np.float32)})
            lh, th, ln, lr, phi, f0 = (o[0] for o in out[:6])
            dur = np.asarray(out[6]).reshape(-1).astype(np.int64)
            wav = dsp.synth(lh, th, ln, lr, phi, f0, rng)
            n_frames, total = lh.shape[1], int(dur.sum())
            if len(dur) != len(ids) or total <= 0 or n_frames % total or len(wav) != n_frames * dsp.HOP:
                raise AlignmentFailed("hibari's phoneme durations do not add up to its frames",
                                      evidence={"text": text, "ids": len(ids), "durations": len(dur),
                                                "sum": total, "frames": n_frames, "samples": len(wav)})
            unit = n_frames // total * dsp.HOP
            cum = np.concatenate([[0], np.cumsum(dur)]) * unit
            kept = [c for c in ps if c in model.vocab]          # ids[1:-1], in order
            for j, c in enumerate(kept):
                chars.append(c)
                starts.append(offset + int(cum[j + 1]))
                ends.append(offset + int(cum[j + 2]))
            chars.append(" ")                                   # sentence break
            starts.append(offset + len(wav))
            ends.append(offset + len(wav))
            parts.append(wav)
            offset += len(wav)
        samples = np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)
        return samples, chars, starts, ends

    def _word_times(self, model, words, samples, chars, starts, ends, text):
        ref = []
        for w, _ in words:
            if w not in self._g2p_cache:
                self._g2p_cache[w] = model.g2p(w)
            ref.append(self._g2p_cache[w])
        start_ci = word_phoneme_starts(chars, ref)
        end_ci = word_phoneme_ends(chars, start_ci)
        if all(c is None for c in start_ci):
            raise AlignmentFailed(f"hibari: no word of {text[:60]!r} matches its phonemes",
                                  evidence={"phonemes": "".join(chars)})
        w_starts = fill_missing([starts[c] if c is not None else None for c in start_ci], words, len(samples))
        w_ends = [ends[c] if c is not None else None for c in end_ci]
        return timings_from_starts(words, w_starts, samples, self.sample_rate, w_ends)
