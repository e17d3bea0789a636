"""Synthesis speed of each TTS engine and of Whisper alignment, as x realtime.

    python bench/tts.py [--repeat 2]

x realtime = seconds of audio / wall seconds, measured in this run on the same sentences.
``align_share`` is the part of an aligned engine's time spent in Whisper (hibari, openai).
"""

from __future__ import annotations

import argparse
import io
import time

SENTENCES = [
    "Thanks for calling. Your claim needs three documents: a photo of the damage, the police report, "
    "and a receipt for any repairs.",
    "I understand. Before we continue, could you confirm the email address on the account, please?",
    "Sure, I can help with that. Your order shipped yesterday and should arrive on Thursday afternoon.",
    "Okay, so the renewal goes through on the first of next month unless you cancel before then.",
]


def _time(fn, repeat: int) -> tuple[float, float]:
    audio_s = wall = 0.0
    for _ in range(repeat):
        for text in SENTENCES:
            t0 = time.perf_counter()
            s = fn(text)
            wall += time.perf_counter() - t0
            audio_s += s.duration_s
    return audio_s, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    import soundfile as sf

    from bargein.audio.align import get_aligner
    from bargein.audio.tts import get_engine

    whisper = get_aligner("whisper")
    whisper.model
    engines = {"espeak": (get_engine("espeak"), "en-us"), "piper": (get_engine("piper"), "joe"),
               "hibari": (get_engine("hibari"), "heart")}
    for name, (tts, voice) in engines.items():
        tts.synthesize("Warm up.", voice)
        audio_s, wall = _time(lambda t: tts.synthesize(t, voice), args.repeat)
        print(f"engine={name} audio_s={audio_s:.1f} wall_s={wall:.2f} x_realtime={audio_s / wall:.1f}")
    hib = engines["hibari"][0]
    model = hib._model("heart")
    raw_audio = raw_wall = 0.0
    for text in SENTENCES * args.repeat:
        t0 = time.perf_counter()
        raw_audio += len(model(text, seed=1)) / hib.sample_rate
        raw_wall += time.perf_counter() - t0
    print(f"engine=hibari_raw x_realtime={raw_audio / raw_wall:.1f} (synthesis without alignment)")
    esp = engines["espeak"][0]
    clips = [esp.synthesize(t, "en-us") for t in SENTENCES]
    t0 = time.perf_counter()
    for c in clips * args.repeat:
        whisper.align(c.samples, c.sample_rate, c.text)
    wall = time.perf_counter() - t0
    audio_s = sum(c.duration_s for c in clips) * args.repeat
    print(f"aligner=whisper x_realtime={audio_s / wall:.1f}")

    from bargein.audio.tts_openai import OpenAITTS
    from bargein.testing.loopback import LoopbackLLMServer

    def speech_fn(text: str, voice: str, fmt: str) -> bytes:
        buf = io.BytesIO()
        s = esp.synthesize(text, "en-us+f3")
        sf.write(buf, s.samples, s.sample_rate, format="WAV", subtype="PCM_16")
        return buf.getvalue()

    with LoopbackLLMServer(speech_fn=speech_fn) as srv:
        oa = OpenAITTS(base_url=srv.openai_base_url, api_key="sk-bench")
        oa.synthesize("Warm up.", "alloy")
        audio_s, wall = _time(lambda t: oa.synthesize(t, "alloy"), args.repeat)
    print(f"engine=openai_loopback x_realtime={audio_s / wall:.1f} (espeak audio over HTTP + Whisper)")


if __name__ == "__main__":
    main()
