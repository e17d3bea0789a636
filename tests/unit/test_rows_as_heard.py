"""Release rows say what the audio says: the heard text and the realised overlap of each cut
(``stop_s - cut_s`` of the rendered segment), under the same conversation id (issue 14 §2)."""

from __future__ import annotations

from doubles import render_convs as RC  # noqa: E402

from bargein.audio.render import RenderConfig, render_conversations  # noqa: E402
from bargein.releases.rows import AudioResolver, conversation_row, ihbench_row  # noqa: E402


def test_rows_publish_the_realised_overlap_and_keep_the_id(tmp_path):
    vc = RC.verified(1)
    res = render_conversations([vc], workdir=tmp_path, seed=3, workers=1, progress=False,
                               config=RenderConfig(assistant_voice="espeak:en-us+f3",
                                                   user_voice="espeak:en-gb+m3", label_vad="energy"))
    [rd] = res.outputs
    cut = next(s for s in rd.segments if s.kind == "message" and s.cut_s is not None)
    row = conversation_row(vc.conversation, vc, rd, AudioResolver([tmp_path]))
    assert row["conversation_id"] == vc.conversation.id
    msg = next(m for m in row["messages"] if m["index"] == cut.message_index)
    assert msg["overlap_ms"] == max(0, round((cut.stop_s - cut.cut_s) * 1000))
    assert msg["heard_text"] == cut.heard_text
    wide = ihbench_row(vc.conversation, rd, AudioResolver([tmp_path]), max_turns=40)
    assert wide["conversation_id"] == vc.conversation.id
    assert cut.heard_text in [wide[k] for k in wide if k.endswith("_transcript") and wide[k]]
