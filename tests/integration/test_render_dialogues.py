"""Render the verified conversations of an offline run, VAD-checked (issue 5, done-when).

* the assistant channel is silent within 30 ms after each planned stop (energy VAD and exact
  zeros; silero too, allowing for its LSTM hangover on digital silence),
* the user channel starts at the planned onset,
* the heard text matches the word timings,
* the default voices (hibari heart + Piper joe) in worker processes render byte-identically to
  a fresh in-process synthesis.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from doubles import render_convs as RC  # noqa: E402

from bargein.audio.render import RenderConfig, render_conversations  # noqa: E402
from bargein.audio.vad import get_vad  # noqa: E402

pytestmark = pytest.mark.integration

TOL_S = 0.030
SILERO_HANGOVER_S = 0.150
SILERO_ONSET_LAG_S = 0.128      # silero's 32 ms windows need 1-4 of them to rise above 0.5 (107 ms measured
                                # on a soft espeak onset; the energy VAD checks the onset to 30 ms). Read
                                # from its window scores, not its segments: espeak's "Excuse me" scores
                                # 0.92 in the 2nd window, then dips below 0.5 on "-cuse", and the
                                # segmenter's minimum duration drops that first burst (272 ms "lag")
ESPEAK = RenderConfig(assistant_voice="espeak:en-us+f3", user_voice="espeak:en-gb")
DEFAULT = RenderConfig(backchannels=True, backchannel_prob=1.0, backchannel_min_turn_s=2.5)


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    """A 10-scenario offline generate + verify run (rule-based agents, seconds)."""
    from bargein.generators.conversation import generate_conversations
    from bargein.generators.scenarios import generate_scenarios

    wd = tmp_path_factory.mktemp("offline_run")
    sc = generate_scenarios(10, 7, workdir=wd, progress=False)
    run = generate_conversations(sc.outputs, seed=7, workdir=wd, progress=False)
    assert sum(v.accepted for v in run.verified) >= 5
    return run.verified


def _assistant_after(rd, seg):
    later = [t.start_s for t in rd.segments if t.channel == 1 and t.start_s > seg.start_s]
    return min(later) if later else rd.duration_s


def check_cut_ins(rd, wd: Path, convs) -> int:
    """Every done-when check on one rendered dialogue; returns the number of cut-ins."""
    conv = next(c.conversation for c in convs if c.conversation.id == rd.conversation_id)
    silero = get_vad("silero", pad_ms=0)
    energy = get_vad("energy", pad_ms=0, min_silence_ms=20, merge_gap_ms=0, min_speech_ms=0)
    x, sr = sf.read(wd / rd.audio_path, dtype="float32")
    assert x.shape == (round(rd.duration_s * sr), 2)
    p1 = silero.scores(x[:, 1], sr)
    e1, s1 = energy.segments(x[:, 1], sr), silero.segments(x[:, 1], sr)
    p0, e0 = silero.scores(x[:, 0], sr), energy.segments(x[:, 0], sr)
    cuts = [s for s in rd.segments if s.cut_s is not None]
    assert len(cuts) == sum(m.interruption is not None for m in conv.messages)
    for s in cuts:
        stop, nxt = s.stop_s, _assistant_after(rd, s)
        # exact: not one non-zero sample between the stop and the assistant's next words
        assert np.all(x[round(stop * sr):round(nxt * sr), 1] == 0)
        # energy VAD (10 ms): silent within 30 ms after the stop (earlier if it fell in a pause)
        assert max(v.end_s for v in e1 if v.start_s < stop) <= stop + TOL_S
        # silero (32 ms windows) agrees once its hangover on digital silence has passed
        first = int(np.ceil((stop + SILERO_HANGOVER_S) / silero.hop_s))
        last = int((nxt - 0.1) / silero.hop_s)
        if nxt - stop > 0.4:        # else the assistant resumes before silero could end it
            assert p1[first:last].max() < 0.5, (stop, p1[first - 3:first + 2])
            assert max(v.end_s for v in s1 if v.start_s < stop) <= stop + SILERO_HANGOVER_S
        # the interjection is first heard at the planned onset: its clip may start up to 50 ms
        # earlier with a quiet lead-in (kept so soft onsets are not clipped), silence before that
        onset = round(s.cut_s * sr)
        start = max(round(u.start_s * sr) for u in rd.segments if u.channel == 0 and u.start_s <= s.cut_s)
        assert onset - start <= int(0.05 * sr)
        assert np.all(x[start - int(0.05 * sr):start, 0] == 0)
        assert np.abs(x[start:onset, 0]).max(initial=0.0) < 0.1 * np.abs(x[onset:onset + sr, 0]).max()
        assert np.abs(x[onset:onset + int(0.03 * sr), 0]).max() > 0.01
        assert min(abs(v.start_s - s.cut_s) for v in e0) <= TOL_S
        # silero hears speech (a window above 0.5) within its lag of the onset, and none in the
        # windows before it (from 100 ms before, the lead-in checked above)
        i0 = max(int((s.cut_s - 0.1) / silero.hop_s), 0)
        heard = next(i for i in range(i0, len(p0)) if p0[i] >= 0.5) * silero.hop_s
        assert -TOL_S - silero.hop_s <= heard - s.cut_s <= SILERO_ONSET_LAG_S, (s.cut_s, heard)
        # heard text == the words whose audio ended by the onset
        heard = [w for w in s.words if w.end_s <= s.cut_s]
        msg = conv.messages[s.message_index]
        assert s.cut_resolution in ("as_planned", "onset_moved") and s.heard_text == msg.heard_text
        assert s.text[: heard[-1].char_start + len(heard[-1].word)].rstrip() == s.heard_text.rstrip()
        assert s.spoken_text.startswith(s.heard_text) and msg.text.startswith(s.spoken_text)
        # or the message ended first: the stop is the clip's end, at most a few ms of tail
        # after its last word's alignment (a cut near the end, overlap longer than the rest)
        assert abs((s.stop_s - s.cut_s) * 1000 - msg.interruption.overlap_ms) < 1.0 or (
            s.stop_s == s.end_s and 0 <= s.end_s - max(w.end_s for w in s.words) <= TOL_S)
    return len(cuts)


def test_offline_run_renders_with_exact_cut_ins(offline_run, tmp_path):
    pytest.importorskip("espeakng_loader", reason="espeak-ng (extra 'espeak') renders the big run fast")
    res = render_conversations(offline_run, workdir=tmp_path, seed=7, config=ESPEAK, workers=2,
                               progress=False)
    accepted = [v for v in offline_run if v.accepted]
    assert not res.failures and len(res.outputs) == len(accepted)
    assert sum(check_cut_ins(rd, tmp_path, offline_run) for rd in res.outputs) >= 20


def test_default_voices_in_workers_are_exact_and_deterministic(offline_run, tmp_path_factory):
    pytest.importorskip("piper", reason="Piper (extra 'piper') is the default user voice")
    pytest.importorskip("hibari", reason="hibari-tts is the default assistant voice")
    # the shortest accepted conversation with at least three cut-ins (a short one keeps the
    # default voices' synthesis quick; the cut-in checks need several cuts to mean something)
    shortest = min((v for v in offline_run if v.accepted and sum(
        m.interruption is not None for m in v.conversation.messages) >= 3),
        key=lambda v: sum(len(m.text) for m in v.conversation.messages))
    convs = [RC.verified(1), shortest]
    wd = tmp_path_factory.mktemp("default")
    res = render_conversations(convs, workdir=wd, seed=11, config=DEFAULT, workers=2, progress=False)
    assert not res.failures, res.failures
    assert sum(check_cut_ins(rd, wd, convs) for rd in res.outputs) >= 4
    for rd in res.outputs:
        assert rd.voices == {"assistant": "hibari:heart", "user": "piper:joe"}
        assert {e.split("@")[0] for e in rd.engines} == {"hibari", "piper"}
    bcs = [s for rd in res.outputs for s in rd.segments if s.kind == "backchannel"]
    # both listeners backchannel; hibari's Whisper alignment rejects one-word fillers, so the
    # assistant's are the phrases it can say ("I see")
    assert {s.channel for s in bcs} == {0, 1}
    assert all(s.voice_id == ("hibari:heart" if s.channel == 1 else "piper:joe") for s in bcs)
    # fresh synthesis (empty cache), in-process: the same records and the same bytes
    wd2 = tmp_path_factory.mktemp("default_again")
    again = render_conversations(convs[:1], workdir=wd2, seed=11, config=DEFAULT, workers=1,
                                 progress=False)
    a, b = res.outputs[0], again.outputs[0]
    assert a == b
    assert (wd / a.audio_path).read_bytes() == (wd2 / b.audio_path).read_bytes()
    for s in a.segments:
        if s.clip_path is not None:             # backchannels have no clip of their own
            assert (wd / s.clip_path).read_bytes() == (wd2 / s.clip_path).read_bytes()
    assert (wd / a.frame_labels_path).read_bytes() == (wd2 / b.frame_labels_path).read_bytes()
    with np.load(wd / a.frame_labels_path) as z:
        assert str(z["source"]) == "timeline+vad:energy"      # label_vad="auto" on clean audio
        assert np.mean(z["activity"] == z["vad_activity"]) > 0.85
