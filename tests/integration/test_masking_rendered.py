"""Done-when of issue 6 on rendered conversations (Piper joe user voice, as rendered by default):
transcribed by Whisper, every unanswerable variant no longer says the masked value and every
answerable variant still does, for every signal and window. Runs ``bargein mask --asr-check``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
import _mask_convs as MC  # noqa: E402

from bargein.audio.align import transcribe  # noqa: E402
from bargein.audio.io import read_audio  # noqa: E402
from bargein.masking.spans import contains_value  # noqa: E402
from bargein.records import MaskedItem  # noqa: E402
from bargein.store import read_jsonl, write_jsonl  # noqa: E402

pytestmark = pytest.mark.integration
pytest.importorskip("piper", reason="Piper (extra 'piper') is the default user voice")
pytest.importorskip("faster_whisper", reason="Whisper (extra 'whisper') checks the masked audio")
pytest.importorskip("espeakng_loader", reason="espeak voices the assistant (fast)")


def test_whisper_no_longer_hears_masked_values(tmp_path):
    from click.testing import CliRunner

    from bargein.audio.render import RenderConfig, render_conversations
    from bargein.cli import cli

    rwd = tmp_path / "render"
    cfg = RenderConfig(assistant_voice="espeak:en-gb", user_voice="piper:joe", label_vad="energy")
    res = render_conversations([MC.verified(1)], workdir=rwd, seed=5, config=cfg, workers=1, progress=False)
    assert not res.failures
    write_jsonl(rwd / "verified.jsonl", [MC.verified(1)])
    wd = tmp_path / "mask"
    r = CliRunner().invoke(cli, ["--workdir", str(wd), "--seed", "21", "mask", "--rendered",
                                 str(rwd / "render.jsonl"), "--windows", "0,100", "--asr-check",
                                 "--workers", "1"])
    assert r.exit_code == 0, r.output
    print(r.output)
    items = read_jsonl(wd / "mask.jsonl", MaskedItem)
    assert len(items) == 4 * 2 * 3 * 2 and not (wd / "mask.failures.jsonl").read_text().strip()
    for path in sorted({i.original_audio_path for i in items}):      # the premise: Whisper hears it
        it = next(i for i in items if i.original_audio_path == path)
        text, _ = transcribe(*read_audio(wd / path))
        assert contains_value(text, it.answer), (text, it.answer)
    rows = [json.loads(x) for x in (wd / "mask.asr_check.jsonl").read_text().splitlines()]
    assert len(rows) == len(items)
    bad = [r for r in rows if not r["ok"]]
    assert not bad, bad
    m = re.search(r"answerable_value_kept=([\d.]+) \(n=(\d+)\), unanswerable_value_removed=([\d.]+)", r.output)
    assert m and float(m.group(1)) == 1.0 and float(m.group(3)) == 1.0 and int(m.group(2)) == 24
