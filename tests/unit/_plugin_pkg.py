"""A third-party plugin package, written to a folder as pip would install it.

``install(folder)`` writes ``bargein_tone_plugin/`` (a TTS engine, two voices, a VAD) and its
``bargein_tone_plugin-0.1.dist-info/`` with ``entry_points.txt``. Put the folder on ``sys.path``
(and ``PYTHONPATH`` for other processes) and bargein finds the backends by name, exactly as it
finds its own: nothing in bargein names this package.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = "bargein_tone_plugin"

SOURCE = '''"""A tone per word: a tiny deterministic TTS engine, its voices and a VAD (a plugin)."""

import os
import time
import zlib

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.vad import FrameVAD
from bargein.audio.wordtimes import split_words
from bargein.records.audio import Voice, WordTiming

WORD_S, GAP_S, RATE = 0.22, 0.08, 16000


class ToneTTS:
    """Tone-per-word speech (plugin): each word a 220 ms tone whose pitch depends on the voice."""

    id = "tone"
    version = "1"
    sample_rate = RATE

    def __init__(self, level: float = 0.3):
        self.level = level

    def voices(self):
        return ["low", "high"]

    def synthesize(self, text, voice):
        delay = float(os.environ.get("TONE_PLUGIN_DELAY_S", "0"))
        if delay:
            time.sleep(delay)
        words = split_words(text)
        hz = 180.0 + zlib.crc32(voice.encode()) % 400
        n_word, n_gap = int(WORD_S * RATE), int(GAP_S * RATE)
        t = np.arange(n_word) / RATE
        tone = (self.level * np.sin(2 * np.pi * hz * t) * np.hanning(n_word)).astype(np.float32)
        parts, timings, pos = [], [], 0
        for w, c in words:
            parts += [tone, np.zeros(n_gap, np.float32)]
            timings.append(WordTiming(word=w, start_s=pos / RATE, end_s=(pos + n_word) / RATE,
                                      char_start=c))
            pos += n_word + n_gap
        return Speech(samples=np.concatenate(parts), sample_rate=RATE, words=tuple(timings),
                      text=text, voice_id=f"tone:{voice}", timing_source="synthesizer")


VOICES = [Voice(engine="tone", name="low", sex="male", accent="en-us", sample_rate=RATE),
          Voice(engine="tone", name="high", sex="female", accent="en-us", sample_rate=RATE)]


class ToneVAD(FrameVAD):
    """Peak level per frame above a fixed floor (plugin)."""

    id = "tonevad"
    version = "1"
    hop_s = 0.01

    def scores(self, samples, sample_rate):
        hop = max(1, int(round(sample_rate * self.hop_s)))
        n = len(samples) // hop
        frames = np.abs(np.asarray(samples[: n * hop], dtype=np.float64)).reshape(n, hop)
        return (frames.max(axis=1) > 0.02).astype(np.float64)
'''

ENTRY_POINTS = f"""[bargein.tts]
tone = {PACKAGE}:ToneTTS

[bargein.voices]
tone = {PACKAGE}:VOICES

[bargein.vad]
tonevad = {PACKAGE}:ToneVAD
"""


def install(folder: Path) -> Path:
    """Write the package and its dist-info into ``folder``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    pkg = folder / PACKAGE
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text(SOURCE, encoding="utf-8")
    info = folder / f"{PACKAGE}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return folder
