"""Masking spoken QA: a small dataset built with espeak and saved with ``datasets``; Whisper
alignment (and ASR when there is no transcript), normalised answer match, the LLM span picker over
the real OpenAI SDK against a loopback server, and the failures (span not found, low-confidence
alignment)."""

from __future__ import annotations

import pytest
import soundfile as sf

from bargein.masking.items import MaskConfig
from bargein.masking.spans import canonical
from bargein.masking.stage import mask_sources
from bargein.records import MaskedItem

pytest.importorskip("espeakng_loader", reason="espeak (extra 'espeak') voices the QA audio")


QA_ROWS = [  # (id, spoken text, transcript column, question, answer)
    ("q0", "The meeting is at the library on Main Street.", "The meeting is at the library on Main Street.",
     "Where is the meeting?", {"text": ["the library"], "answer_start": [18]}),
    ("q1", "My flight leaves at seven thirty in the morning, so I will be at the airport by six.", None,
     "When does the flight leave?", "7:30"),
    ("q2", "The package goes to Berlin by truck.", "The package goes to Berlin by truck.",
     "Where does the package go?", "Paris"),
    ("q3", "Please send the forms to the front desk before noon.",
     "Completely different words about cooking pasta tonight.", "Where do the forms go?", "the front desk"),
    ("q4", "The doctor can see you at half past two tomorrow.",
     "The doctor can see you at half past two tomorrow.", "When can the doctor see me?", "2:30 PM"),
]


@pytest.fixture(scope="module")
def qa_dataset(tmp_path_factory):
    """A small spoken QA dataset built with espeak, saved with ``datasets`` to a local folder."""
    import io

    from datasets import Audio, Dataset

    from bargein.audio.tts import synthesize

    root = tmp_path_factory.mktemp("qa_ds")
    cols = {"id": [], "audio": [], "transcript": [], "question": [], "answer": []}
    for ex_id, text, tr, q, a in QA_ROWS:
        sp = synthesize(text, "espeak:en-us")
        buf = io.BytesIO()
        sf.write(buf, sp.samples, sp.sample_rate, format="WAV", subtype="PCM_16")
        cols["id"].append(ex_id)
        cols["audio"].append({"bytes": buf.getvalue(), "path": f"{ex_id}.wav"})
        cols["transcript"].append(tr)
        cols["question"].append(q)
        cols["answer"].append(a if isinstance(a, dict) else {"text": [a], "answer_start": [0]})
    ds = Dataset.from_dict(cols).cast_column("audio", Audio(decode=False))
    ds.save_to_disk(str(root / "saved"))
    ds.to_parquet(str(root / "qa.parquet"))
    return root


def _picker(req):
    """A loopback 'LLM' that reads the numbered transcript and points at the answer's words."""
    import json
    import re

    from bargein.testing import last_user_text

    text = last_user_text(req)
    answer = re.search(r'## Reference answer\n"(.*)"', text).group(1)
    words = re.findall(r"^(\d+): (\S+)$", text, re.M)
    want = {"2:30 PM": ["half", "past", "two"]}.get(answer)
    toks = [w for _, w in words]
    for i in range(len(toks)):
        if want and [t.lower().strip(".,") for t in toks[i:i + len(want)]] == want:
            return json.dumps({"found": True, "start_word": i, "end_word": i + len(want) - 1,
                               "quote": " ".join(toks[i:i + len(want)])})
    return json.dumps({"found": False, "start_word": 0, "end_word": 0, "quote": ""})


def test_qa_dataset_masking_with_whisper_and_span_picker(qa_dataset, tmp_path, monkeypatch):
    pytest.importorskip("faster_whisper", reason="Whisper (extra 'whisper') aligns QA audio")
    from bargein.masking.qa import qa_sources
    from bargein.testing import LoopbackLLMServer

    sources = qa_sources(str(qa_dataset / "saved"), workdir=tmp_path, audio_column="audio",
                         question_column="question", answer_column="answer",
                         transcript_column="transcript", id_column="id")
    assert [s.source_id for s in sources] == [r[0] for r in QA_ROWS]
    assert sources[0].answer == "the library" and sources[1].transcript is None
    cfg = MaskConfig(windows_ms=(0,), signals=("white_noise", "silence"), span_picker="openai:picker")
    with LoopbackLLMServer(responder=_picker) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        res = mask_sources(sources, workdir=tmp_path, seed=4, config=cfg, workers=1, progress=False)
        asked = [r for r in srv.requests if r.api == "openai"]
    fails = {f.item_id: f for f in res.failures}
    assert set(fails) == {"qa-q2", "qa-q3"}
    assert fails["qa-q2"].error_type == "SpanNotFound" and "Paris" in fails["qa-q2"].reason
    assert fails["qa-q3"].error_type == "AlignmentFailed" and "low-confidence" in fails["qa-q3"].reason
    assert len(asked) == 2                           # the picker only where matching failed
    by = {(i.source_id, i.condition, i.signal): i for i in res.outputs}
    assert len(res.outputs) == 3 * 2 * 2
    assert by[("q0", "unanswerable", "silence")].spans[0].text == "the library"
    assert canonical(by[("q1", "unanswerable", "silence")].spans[0].text) == "730"   # ASR "7.30"
    assert by[("q4", "unanswerable", "silence")].spans[0].text == "half past two"
    for it in res.outputs:
        assert it.source_kind == "qa" and it.question and not it.context
        assert (tmp_path / it.audio_path).is_file()
        if it.condition == "answerable":
            una = by[(it.source_id, "unanswerable", it.signal)]
            t0 = it.words[una.spans[0].word_start].start_s
            t1 = it.words[una.spans[0].word_end - 1].end_s
            assert all(sp.end_s <= t0 or sp.start_s >= t1 for sp in it.spans)


def test_mask_cli_on_parquet(qa_dataset, tmp_path):
    pytest.importorskip("faster_whisper", reason="Whisper (extra 'whisper') aligns QA audio")
    from click.testing import CliRunner

    from bargein.cli import cli
    from bargein.store import read_jsonl

    r = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "qa"), "mask", "--qa-dataset",
                                 str(qa_dataset / "qa.parquet"), "--transcript-column", "transcript",
                                 "--limit", "1", "--signals", "silence,music", "--windows", "0,50",
                                 "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "8 masked items from 1 utterances" in r.output
    assert len(read_jsonl(tmp_path / "qa" / "mask.jsonl", MaskedItem)) == 8
    bad = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "x"), "mask", "--qa-dataset",
                                   str(qa_dataset / "saved"), "--answer-column", "nope"])
    assert bad.exit_code != 0 and "nope" in str(bad.exception) and "columns" in str(bad.exception)
    bad = CliRunner().invoke(cli, ["--workdir", str(tmp_path / "x"), "mask", "--qa-dataset",
                                   str(tmp_path / "nowhere")])
    assert bad.exit_code != 0 and "cannot be loaded" in str(bad.exception)
