"""The bad (and hostile-but-valid) input files the corpus feeds to every command.

Built once per session under one folder; every case reads them and none may change them. Good
files come from a real offline run (``bargein generate conversations --scenarios 2``) and a real
release built from it, so the bad ones differ from real inputs in exactly one way.
"""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path

import numpy as np
import soundfile as sf

CANARY_KEY = "sk-canary-ROBUST-0123456789abcdef"     # must never appear in any output


def _w(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def first_line(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])


def _stereo(seconds: float, sr: int = 16000, seed: int = 0) -> np.ndarray:
    """Two channels of speech-like bursts (noise gated on and off, channels alternating)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    x = np.zeros((n, 2), dtype=np.float32)
    t, ch = 0, 0
    while t < n:
        k = int(sr * rng.uniform(0.8, 2.0))
        x[t:t + k, ch] = 0.2 * rng.standard_normal(min(k, n - t))
        t += k + int(sr * rng.uniform(0.1, 0.5))
        ch = 1 - ch
    return x


def build_bad_text(root: Path) -> None:
    """Byte-level damage: encodings, binary, shapes that are not one JSON object per line."""
    rng = random.Random(16)
    _w(root / "latin1.jsonl", b'{"id": "caf\xe9", "note": "se\xf1or"}\n')
    _w(root / "utf16.jsonl", '{"id": "x"}\n'.encode("utf-16"))
    _w(root / "binary.jsonl", rng.randbytes(4096))
    _w(root / "nul.jsonl", b"\x00" * 64 + b"\n")
    _w(root / "array.jsonl", "[1, 2, 3]\n")
    _w(root / "number.jsonl", "42\n")
    _w(root / "notjson.jsonl", "hello world, not json\n")
    _w(root / "wrong.jsonl", '{"foo": 1, "bar": [2]}\n')
    _w(root / "deep.jsonl", "[" * 50_000 + "]" * 50_000 + "\n")
    _w(root / "huge_line.jsonl", json.dumps({"id": "x", "text": "a" * 8_000_000}) + "\n")
    _w(root / "empty.jsonl", b"")
    _w(root / "blank.jsonl", "\n   \n\t\n")
    _w(root / "latin1.json", b'{"model": "caf\xe9"}\n')
    _w(root / "list.json", "[1, 2]\n")
    _w(root / "broken.json", '{"model": "x",\n')
    _w(root / "deep.json", "[" * 50_000 + "]" * 50_000)
    _w(root / "binary.wav", rng.randbytes(2048))
    (root / "a_folder").mkdir(exist_ok=True)
    (root / "a_folder" / "note.txt").write_text("not an input\n")


def build_configs(root: Path, outside: Path) -> None:
    c = root / "configs"
    _w(c / "latin1.yaml", b"name: caf\xe9\n")
    _w(c / "utf16.yaml", "name: x\n".encode("utf-16"))
    _w(c / "binary.yaml", random.Random(3).randbytes(1024))
    _w(c / "empty.yaml", b"")
    _w(c / "list.yaml", "- a\n- b\n")
    _w(c / "scalar.yaml", "just a string\n")
    _w(c / "unknown_key.yaml", "scenarios:\n  n: 2\n  nn: 3\n")
    _w(c / "wrong_type.yaml", "scenarios:\n  n: many\n")
    _w(c / "negative_n.yaml", "scenarios:\n  n: -1\n")
    _w(c / "python_tag.yaml",
       f"name: !!python/object/apply:os.system ['touch {outside}/pwned']\n")
    _w(c / "python_name.yaml", "name: !!python/name:os.system\n")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    prev = "a"
    for i, ch in enumerate("bcdefghij"):
        laughs += f"{ch}: &{ch} [{', '.join('*' + prev for _ in range(10))}]\n"
        prev = ch
    _w(c / "laughs.yaml", laughs)
    _w(c / "huge.yaml", "# " + "x" * 5_000_000 + "\nname: x\n")
    _w(c / "deep.yaml", "a: " + "[" * 20_000 + "]" * 20_000 + "\n")
    _w(c / "syntax.yaml", "scenarios: [1, 2\n")
    _w(c / "tabs.yaml", "scenarios:\n\tn: 2\n")
    _w(c / "name_traversal.yaml", "name: ../../outside/x\n")
    _w(c / "name_space.yaml", "name: my release\n")
    _w(c / "version_bad.yaml", "version: 1.0\n")
    _w(c / "sample_rate.yaml", "audio:\n  sample_rate: 1\n")
    _w(c / "noise_bogus.yaml", "audio:\n  noise: thunder\n")
    _w(c / "budget_negative.yaml", "budget_usd: -1\n")
    _w(c / "workers_zero.yaml", "audio:\n  workers: 0\n")
    _w(c / "types_bogus.yaml", "timing:\n  types: [late_response, very_late]\n")
    _w(c / "signals_bogus.yaml", "repair:\n  signals: [laser]\n")
    _w(c / "verify_rounds.yaml", "conversations:\n  verify_rounds: 99\n")
    _w(c / "llm_bogus.yaml", "llm: bogus\n")
    _w(c / "snr_nan.yaml", "audio:\n  snr_db: .nan\n")
    _w(c / "domains_bogus.yaml", "scenarios:\n  domains: [moon_base]\n")
    _w(c / "dup_keys.yaml", "seed: 1\nseed: 2\nscenarios:\n  n: zero\n")
    _w(c / "null_section.yaml", "audio: 7\n")


def build_good(good: Path, rel: Path) -> dict[str, Path]:
    """Hostile-but-valid variants of real records (the schema accepts them)."""
    out: dict[str, Path] = {}
    conv_line = (good / "conversations.jsonl").read_text(encoding="utf-8").splitlines()[0]
    conv = json.loads(conv_line)
    scn = first_line(good / "scenarios.jsonl")

    big = json.loads(conv_line)
    big["messages"][1]["text"] = "a" * 100_000
    out["conv_huge_token"] = _w(good / "hostile" / "conv_huge_token.jsonl", json.dumps(big) + "\n")
    tpl = json.loads(conv_line)
    tpl["messages"][1]["text"] = "{{ 7*7 }} {% for x in range(9**9) %}{{x}}{% endfor %} ${HOME}"
    out["conv_template"] = _w(good / "hostile" / "conv_template.jsonl", json.dumps(tpl) + "\n")
    uni = json.loads(conv_line)
    uni["messages"][1]["text"] = "\u202eevil\u202c \u200b\u200b zero-width, emoji \U0001F600, \x07bell"
    out["conv_unicode"] = _w(good / "hostile" / "conv_unicode.jsonl", json.dumps(uni) + "\n")
    out["conv_crlf"] = _w(good / "hostile" / "conv_crlf.jsonl", conv_line + "\r\n")
    out["conv_bom"] = _w(good / "hostile" / "conv_bom.jsonl", "\ufeff" + conv_line + "\n")
    out["conv_truncated"] = _w(good / "hostile" / "conv_truncated.jsonl",
                               conv_line + "\n" + conv_line[: len(conv_line) // 2])
    bad_role = json.loads(conv_line)
    bad_role["messages"][0]["role"] = "system-admin"
    out["conv_bad_role"] = _w(good / "hostile" / "conv_bad_role.jsonl", json.dumps(bad_role) + "\n")
    s_tpl = dict(scn)
    s_tpl["system_prompt"] = "{{ config.__class__.__init__.__globals__ }} {% raw %}x{% endraw %}"
    out["scn_template"] = _w(good / "hostile" / "scn_template.jsonl", json.dumps(s_tpl) + "\n")
    s_big = dict(scn)
    s_big["system_prompt"] = "b" * 100_000
    out["scn_huge_token"] = _w(good / "hostile" / "scn_huge_token.jsonl", json.dumps(s_big) + "\n")
    # conversations given where scenarios are expected, and vice versa
    out["conv_as_scn"] = good / "conversations.jsonl"
    # responses files
    item = first_line(good / "eval_items.jsonl")
    out["resp_wrong_id"] = _w(good / "hostile" / "resp_wrong_id.jsonl",
                              json.dumps({"item_id": "nope", "epoch": 0, "response": "x"}) + "\n")
    out["resp_not_str"] = _w(good / "hostile" / "resp_not_str.jsonl",
                             json.dumps({"item_id": item["id"], "epoch": 0, "response": 5}) + "\n")
    # chat exports with the wrong shape
    out["sft_no_messages"] = _w(good / "hostile" / "sft_no_messages.jsonl",
                                json.dumps({"id": "a", "text": "hi"}) + "\n")
    out["sft_bad_messages"] = _w(good / "hostile" / "sft_bad_messages.jsonl",
                                 json.dumps({"id": "a", "messages": 5}) + "\n")
    out["dpo_missing"] = _w(good / "hostile" / "dpo_missing.jsonl",
                            json.dumps({"id": "a", "prompt": "hi"}) + "\n")
    del conv
    return out


def build_audio(root: Path) -> None:
    a = root / "audio"
    sr = 16000
    (a / "stereo").mkdir(parents=True, exist_ok=True)
    sf.write(a / "stereo" / "dlg.wav", _stereo(25, sr, 1), sr)
    (a / "mono").mkdir(parents=True, exist_ok=True)
    sf.write(a / "mono" / "mono.wav", _stereo(3, sr, 2)[:, 0], sr)
    (a / "empty").mkdir(parents=True, exist_ok=True)
    _w(a / "empty" / "empty.wav", b"")
    (a / "garbage").mkdir(parents=True, exist_ok=True)
    _w(a / "garbage" / "garbage.wav", random.Random(5).randbytes(3000))
    (a / "textflac").mkdir(parents=True, exist_ok=True)
    _w(a / "textflac" / "notes.flac", "this is text, not FLAC\n")
    (a / "nan").mkdir(parents=True, exist_ok=True)
    x = _stereo(3, sr, 3)
    x[100:200] = np.nan
    sf.write(a / "nan" / "nan.wav", x, sr, subtype="FLOAT")
    (a / "short").mkdir(parents=True, exist_ok=True)
    sf.write(a / "short" / "short.wav", np.zeros((10, 2), np.float32), sr)
    (a / "eight").mkdir(parents=True, exist_ok=True)
    sf.write(a / "eight" / "eight.wav", np.zeros((sr, 8), np.float32), sr)
    (a / "collide").mkdir(parents=True, exist_ok=True)
    sf.write(a / "collide" / "zero.wav", _stereo(25, sr, 4), sr)
    sf.write(a / "collide" / "zero.flac", _stereo(25, sr, 5), sr)
    (a / "nonascii").mkdir(parents=True, exist_ok=True)
    sf.write(a / "nonascii" / "été.wav", _stereo(25, sr, 6), sr)
    sf.write(a / "nonascii" / "ünï.wav", _stereo(25, sr, 7), sr)
    (a / "noaudio").mkdir(parents=True, exist_ok=True)
    _w(a / "noaudio" / "readme.txt", "no audio here\n")
    # a rendered.jsonl whose audio is missing / whose record points outside
    rd = {"id": "rd-x", "conversation_id": "conv-x", "audio_path": "missing/clean.flac",
          "sample_rate": sr, "duration_s": 3.0, "segments": []}
    _w(a / "rendered_missing.jsonl", json.dumps(rd) + "\n")
    rd2 = dict(rd, audio_path="stereo/dlg.wav", duration_s=25.0)
    _w(a / "rendered_nosegs.jsonl", json.dumps(rd2) + "\n")


def build_parquet(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = root / "parquet"
    p.mkdir(parents=True, exist_ok=True)
    _w(p / "bad.parquet", "PAR1 but not really a parquet file\n")
    _w(p / "truncated.parquet", b"PAR1" + random.Random(9).randbytes(500))
    pq.write_table(pa.table({"x": [1, 2, 3]}), p / "noaudio.parquet")
    audio_t = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(pa.table({"audio": pa.array([{"bytes": None, "path": None}], audio_t),
                             "id": ["a"]}), p / "nullaudio.parquet")
    buf = io.BytesIO()
    sf.write(buf, _stereo(2, 16000, 8)[:, 0], 16000, format="WAV")
    pq.write_table(pa.table({"audio": pa.array([{"bytes": buf.getvalue(), "path": "a.wav"}],
                                               audio_t), "id": ["../../../outside/x"]}),
                   p / "traversal_id.parquet")
    pq.write_table(pa.table({"audio": pa.array([], audio_t), "id": pa.array([], pa.string())}),
                   p / "norows.parquet")


def build_releases(root: Path, rel: Path) -> None:
    """Damaged copies of a real release folder."""
    from bargein.releases.manifest import manifest_json, read_manifest
    from bargein.seeding import file_sha256

    r = root / "releases"
    r.mkdir(parents=True, exist_ok=True)

    def copy(name: str) -> Path:
        dst = r / name
        shutil.copytree(rel, dst)
        return dst

    d = copy("no_manifest")
    (d / "manifest.json").unlink()
    d = copy("tampered")
    pq_file = sorted(d.rglob("*.parquet"))[0]
    data = bytearray(pq_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pq_file.write_bytes(bytes(data))
    d = copy("extra_file")
    (d / "sneaky.txt").write_text("not in the manifest\n")
    d = copy("manifest_notjson")
    (d / "manifest.json").write_text("{not json")
    d = copy("manifest_latin1")
    (d / "manifest.json").write_bytes(b'{"name": "caf\xe9"}')
    d = copy("manifest_array")
    (d / "manifest.json").write_text("[]")
    # manifest lists a file outside the folder (with its true checksum)
    d = copy("manifest_dotdot")
    m = read_manifest(d)
    victim = root / "victim_for_manifest.txt"
    victim.write_text("outside\n")
    entry = {"path": "../victim_for_manifest.txt", "sha256": file_sha256(victim),
             "bytes": victim.stat().st_size}
    data = json.loads(manifest_json(m))
    data["files"].append(entry)
    (d / "manifest.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    # the card's data_files point outside the folder; the manifest is updated to match
    d = copy("card_outside")
    card = (d / "README.md").read_text(encoding="utf-8")
    head, rest = card.split("\n---", 1)
    import re

    head = re.sub(r"path: (\w+)/", r"path: ../../outside/\1/", head)
    (d / "README.md").write_text(head + "\n---" + rest, encoding="utf-8")
    data = json.loads((d / "manifest.json").read_text())
    for f in data["files"]:
        if f["path"] == "README.md":
            f["sha256"] = file_sha256(d / "README.md")
            f["bytes"] = (d / "README.md").stat().st_size
    (d / "manifest.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    (r / "empty").mkdir(exist_ok=True)
    _w(r / "a_file", "not a folder\n")
