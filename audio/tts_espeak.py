"""espeak-ng through the library bundled in ``espeakng-loader`` (GPL-3, extra ``espeak``).

Synchronous ctypes synthesis: the callback receives int16 audio and WORD events (type 1) that
carry the word's character position in the text and its exact sample position, so word starts
are exact. Voices are ``<accent>[+<variant>]``: ``en-us``, ``en-gb-scotland+f3``, ``en-029+m2``.
"""

from __future__ import annotations

import _ctypes
import atexit
import contextlib
import ctypes
import hashlib
import os
import shutil
import tempfile
import threading
from functools import cached_property
from pathlib import Path

import numpy as np

from bargein.audio.base import Speech
from bargein.audio.wordtimes import (
    WORDTIMES_VERSION, check_audio, check_text, check_timings, dist_version, fill_missing,
    timings_from_starts,
)
from bargein.errors import AudioError, BackendUnavailable, ConfigError, missing_extra
from bargein.seeding import stable_int

SAMPLE_RATE = 22050
# accent -> the name espeak_SetVoiceByName accepts
ACCENTS = {
    "en-us": "en-us", "en-gb": "en", "en-029": "en-029", "en-gb-scotland": "en-gb-scotland",
    "en-gb-x-gbclan": "en-gb-x-gbclan", "en-gb-x-gbcwmd": "en-gb-x-gbcwmd",
    "en-gb-x-rp": "en-gb-x-rp", "en-us-nyc": "en-us-nyc",
}
ALIASES = {"en-sc": "en-gb-scotland", "en-rp": "en-gb-x-rp", "en-nyc": "en-us-nyc", "en": "en-gb",
           "en-uk": "en-gb"}
VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5")

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_EVENT_LIST_TERMINATED, _EVENT_WORD = 0, 1
_RATE = 1


class _Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint),
                ("text_position", ctypes.c_int), ("length", ctypes.c_int),
                ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int,
                             ctypes.POINTER(_Event))


class _Lib:
    """libespeak-ng, loaded fresh for every synthesis.

    The library keeps synthesis state in C statics (pitch flutter, filters) that no API resets,
    so the same text would sound slightly different depending on what was said before. A private
    copy of the .so is dlopen'ed, initialised, used once and dlclose'd: every call starts from the
    same state (~8 ms). Its own RNG and libc ``rand()`` (breathy variants) are seeded per call.
    """

    _instance: _Lib | None = None
    _pid = -1
    _copy: str | None = None            # the private .so, shared with forked workers

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError:
            raise missing_extra("espeakng_loader", "espeak", "The espeak TTS engine") from None
        self.lock = threading.Lock()
        self.data_path = espeakng_loader.get_data_path()
        src = Path(espeakng_loader.get_library_path())
        if not src.is_file():
            raise BackendUnavailable(f"espeakng-loader is installed but {src} is missing. "
                                     "Fix: pip install --force-reinstall espeakng-loader")
        if _Lib._copy is None or not os.path.isfile(_Lib._copy):
            tmp = tempfile.mkdtemp(prefix="bargein-espeak-")
            _Lib._copy = os.path.join(tmp, "libespeak-ng-private.so")
            shutil.copyfile(src, _Lib._copy)
            owner = os.getpid()
            atexit.register(lambda: os.getpid() == owner and shutil.rmtree(tmp, ignore_errors=True))
        self.lib_path = _Lib._copy
        self._libc = ctypes.CDLL(None)
        self.chunks: list[np.ndarray] = []
        self.events: list[tuple[int, int, int]] = []   # (text_position 1-based, length, sample)
        self._cb = _CALLBACK(self._on_audio)           # keep a reference: ctypes would free it
        with self._loaded() as lib:
            self.lib_version = lib.espeak_Info(None).decode()

    @classmethod
    def get(cls) -> _Lib:
        if cls._instance is None or cls._pid != os.getpid():
            cls._instance, cls._pid = cls(), os.getpid()
        return cls._instance

    @contextlib.contextmanager
    def _loaded(self):
        lib = ctypes.CDLL(self.lib_path, mode=os.RTLD_LOCAL)
        try:
            lib.espeak_Initialize.restype = ctypes.c_int
            lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
            lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
            lib.espeak_SetVoiceByName.restype = ctypes.c_int
            lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
            lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
                                         ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
            lib.espeak_Synth.restype = ctypes.c_int
            lib.espeak_Info.restype = ctypes.c_char_p
            lib.espeak_Info.argtypes = [ctypes.c_void_p]
            sr = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, self.data_path.encode(),
                                       _INITIALIZE_DONT_EXIT)
            if sr != SAMPLE_RATE:
                raise BackendUnavailable(f"espeak-ng failed to initialise with data {self.data_path} "
                                         f"(returned {sr})")
            lib.espeak_SetSynthCallback(self._cb)
            yield lib
        finally:
            with contextlib.suppress(Exception):
                lib.espeak_Terminate()
            handle = lib._handle
            del lib
            _ctypes.dlclose(handle)

    def _on_audio(self, wav, n, events) -> int:
        if n > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        i = 0
        while events[i].type != _EVENT_LIST_TERMINATED:
            ev = events[i]
            if ev.type == _EVENT_WORD:
                self.events.append((ev.text_position, ev.length, ev.sample))
            i += 1
        return 0

    def synth(self, text: str, voice: str, rate: int, seed: int
              ) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        with self.lock, self._loaded() as lib:
            if lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise AudioError(f"espeak-ng rejected voice {voice!r}")
            lib.espeak_SetParameter(_RATE, int(rate), 0)
            if hasattr(lib, "espeak_ng_SetRandSeed"):
                lib.espeak_ng_SetRandSeed(ctypes.c_long(int(seed) & 0x7FFFFFFF))
            self._libc.srand(ctypes.c_uint(int(seed) & 0xFFFFFFFF))
            self.chunks, self.events = [], []
            data = text.encode("utf-8")
            rc = lib.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            if rc != 0:
                raise AudioError(f"espeak-ng synthesis failed (error {rc}) for {text[:60]!r}")
            pcm = np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int16)
            return (pcm.astype(np.float32) / 32768.0), list(self.events)


def _variant_dir(data_path: str) -> Path:
    return Path(data_path) / "voices" / "!v"


class EspeakTTS:
    """espeak-ng voices ``<accent>[+<variant>]`` at 22050 Hz with exact word starts."""

    id = "espeak"
    sample_rate = SAMPLE_RATE

    def __init__(self, rate: int = 175):
        if not 80 <= int(rate) <= 450:
            raise ConfigError(f"espeak rate={rate} words/minute is out of range; use 80..450 (default 175)")
        self.rate = int(rate)
        _Lib.get()                      # fail now if the library is missing

    @property
    def _lib(self) -> _Lib:             # per process: a forked worker gets its own lock
        return _Lib.get()

    @cached_property
    def version(self) -> str:
        h = hashlib.sha256()
        data = Path(self._lib.data_path)
        for name in ("phondata", "phonindex", "phontab", "en_dict"):
            h.update((data / name).read_bytes())
        pv = dist_version("espeakng-loader")
        return (f"espeakng-loader-{pv}+libespeak-ng-{self._lib.lib_version}+data-{h.hexdigest()[:12]}"
                f"+rate{self.rate}+fresh-v1+{WORDTIMES_VERSION}")

    def voices(self) -> list[str]:
        return [a for a in ACCENTS] + [f"{a}+{v}" for a in ACCENTS for v in VARIANTS]

    def resolve(self, voice: str) -> str:
        """Canonical voice name (aliases resolved); unknown names raise ConfigError listing valid ones."""
        accent, _, variant = (voice or "").strip().lower().partition("+")
        accent = ALIASES.get(accent, accent)
        ok = accent in ACCENTS and (not variant or (_variant_dir(self._lib.data_path) / variant).is_file())
        if not ok:
            raise ConfigError(
                f"unknown espeak voice {voice!r}. Valid: <accent>[+<variant>] with accent in "
                f"{', '.join(ACCENTS)} (aliases {', '.join(ALIASES)}) and variant in "
                f"{', '.join(VARIANTS)} or any file in {_variant_dir(self._lib.data_path)}")
        return f"{accent}+{variant}" if variant else accent

    def sex(self, voice: str) -> str:
        _, _, variant = self.resolve(voice).partition("+")
        if not variant:
            return "male"
        for line in (_variant_dir(self._lib.data_path) / variant).read_text(errors="replace").splitlines():
            if line.lower().startswith("gender"):
                g = line.split()[1].lower() if len(line.split()) > 1 else ""
                return g if g in ("male", "female") else "unknown"
        return "unknown"

    def synthesize(self, text: str, voice: str = "en-us") -> Speech:
        name = self.resolve(voice)
        words = check_text(text, "espeak")
        accent, plus, variant = name.partition("+")
        seed = stable_int("espeak", name, self.rate, text)
        samples, events = self._lib.synth(text, ACCENTS[accent] + plus + variant, self.rate, seed)
        check_audio(samples, "espeak", text)
        starts = _starts_from_events(words, events)
        full = fill_missing(starts, words, len(samples))
        timings = timings_from_starts(words, full, samples, self.sample_rate)
        check_timings(timings, len(samples) / self.sample_rate)
        return Speech(samples=samples, sample_rate=self.sample_rate, words=timings, text=text,
                      voice_id=f"espeak:{name}", timing_source="synthesizer",
                      extra={"interpolated_words": sum(s is None for s in starts)})


def _starts_from_events(words: list[tuple[str, int]], events: list[tuple[int, int, int]]) -> list[int | None]:
    """Earliest event sample for each word whose characters contain the event's text position."""
    starts: list[int | None] = [None] * len(words)
    spans = [(cs, cs + len(w)) for w, cs in words]
    j = 0
    for pos1, _length, sample in sorted(events, key=lambda e: (e[0], e[2])):
        p = pos1 - 1
        while j < len(spans) and spans[j][1] <= p:
            j += 1
        if j < len(spans) and spans[j][0] <= p:
            s = starts[j]
            starts[j] = sample if s is None else min(s, sample)
    return starts
