"""The shared guards: the output-folder guard, the Hub name/revision/file-name validator, the
one text reader and collision-free source ids (issue repros, each one line)."""

from __future__ import annotations

import json
import os

import pytest

from bargein.errors import InputError, ReleaseError
from bargein.outdir import MARKER, check_replaceable, is_ours, make_staging, swap_into_place
from bargein.releases.hub import check_repo_id, check_repo_path, check_revision, parse_ref
from bargein.store import iter_jsonl, iter_text_lines, read_json, read_yaml


def test_out_folder_that_is_not_ours_is_refused_and_kept(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "precious.txt").write_text("x")
    with pytest.raises(InputError, match="not a bargein release folder .*precious.txt.* Fix"):
        check_replaceable(d)
    assert (d / "precious.txt").read_text() == "x"


def test_out_dot_and_folders_holding_the_work_dir_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for bad in (".", "..", "/", str(tmp_path)):
        with pytest.raises(InputError, match="current folder|root|holds"):
            check_replaceable(bad)
    with pytest.raises(InputError, match="work"):
        check_replaceable(tmp_path / "w", protect=[tmp_path / "w" / "work"])
    assert not list(tmp_path.parent.glob("*.building"))


def test_own_folders_are_replaced_whole(tmp_path):
    out = tmp_path / "rel"
    staging = make_staging(check_replaceable(out))
    (staging / "a.txt").write_text("1")
    swap_into_place(staging, out)
    assert is_ours(out) and (out / MARKER).is_file() and (out / "a.txt").read_text() == "1"
    staging = make_staging(check_replaceable(out))          # ours: may be replaced
    (staging / "b.txt").write_text("2")
    swap_into_place(staging, out)
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "b.txt"])
    assert [p.name for p in tmp_path.iterdir()] == ["rel"]     # no staging, no old folder


def test_a_leftover_staging_folder_is_removed_only_if_ours(tmp_path):
    out = tmp_path / "rel"
    (tmp_path / ".rel.building").mkdir()
    (tmp_path / ".rel.building" / "user.txt").write_text("mine")
    with pytest.raises(InputError, match="not made by bargein"):
        make_staging(out)
    assert (tmp_path / ".rel.building" / "user.txt").exists()


@pytest.mark.parametrize("repo", ["org/..", "../x", "a/b/c", "org/na me", "org", "org/--x",
                                  "org/x.", "-org/x", "org/" + "n" * 97, "", "org/x\n"])
def test_bad_repo_ids_are_refused(repo):
    with pytest.raises(ReleaseError, match="ORG/NAME"):
        check_repo_id(repo)


@pytest.mark.parametrize("rev", ["..", "../../outside/victim.txt", "a/b", "v1\\..\\x", ".hidden",
                                 "v1 ; rm", "", "refs/pr/x", "x" * 200])
def test_bad_revisions_are_refused(rev):
    with pytest.raises(ReleaseError, match="revision"):
        check_revision(rev)


def test_good_names_pass_and_refs_parse():
    assert check_repo_id("my-org/bargein.ihbench_v2") == "my-org/bargein.ihbench_v2"
    for rev in ("v1.0.0", "main", "refs/pr/12", "0" * 40, "v1.0.0-rc.1+build.5"):
        assert check_revision(rev) == rev
    assert parse_ref("org/rel@v1.0.0") == ("org/rel", "v1.0.0")
    assert parse_ref("org/rel") == ("org/rel", "main")
    with pytest.raises(ReleaseError, match="revision"):
        parse_ref("evil/rel@../../../../outside/victim.txt")
    with pytest.raises(ReleaseError):
        parse_ref("org/..@v1")


@pytest.mark.parametrize("name", ["../escape.txt", "a/../../b", "/etc/passwd", "a\\..\\b",
                                  "C:/x", "", "a//b", "./a"])
def test_repo_file_names_outside_the_folder_are_refused(name):
    with pytest.raises(ReleaseError, match="outside the download folder"):
        check_repo_path(name, "evil/dots")


def test_text_reader_names_file_line_and_fix(tmp_path):
    from bargein.records import Scenario

    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"a": 1}\n{"id": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"latin1.jsonl:2: not UTF-8 text \(byte 0xe9 at "
                                         r"column 12\)\. Fix"):
        list(iter_text_lines(bad))
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(InputError, match="deep.jsonl:1: not JSON"):
        list(iter_jsonl(deep, Scenario))
    with pytest.raises(InputError, match="is a folder"):
        list(iter_text_lines(tmp_path))
    arr = tmp_path / "list.json"
    arr.write_text("[1,")
    with pytest.raises(InputError, match="list.json.*not valid JSON"):
        read_json(arr)
    bom = tmp_path / "bom.json"
    bom.write_bytes("\ufeff".encode() + json.dumps({"k": 1}).encode())
    assert read_json(bom) == {"k": 1}


def test_yaml_reader_refuses_python_tags_and_alias_bombs(tmp_path):
    tag = tmp_path / "tag.yaml"
    tag.write_text(f"name: !!python/object/apply:os.system ['touch {tmp_path}/pwned']\n")
    with pytest.raises(InputError, match="not valid YAML"):
        read_yaml(tag, "config")
    assert not (tmp_path / "pwned").exists()
    bomb, prev = "a: &a [x, x, x, x, x, x, x, x, x, x]\n", "a"
    for ch in "bcdefghij":
        bomb += f"{ch}: &{ch} [{', '.join('*' + prev for _ in range(10))}]\n"
        prev = ch
    (tmp_path / "bomb.yaml").write_text(bomb)
    with pytest.raises(InputError, match="aliases"):
        read_yaml(tmp_path / "bomb.yaml", "config")


def test_source_ids_never_collide():
    from bargein.perturb.sources import source_ids

    names = ["zero.wav", "zero.flac", "été", "ünï", "a/b", "a_b", "mono", "src-x"]
    ids = source_ids(names)
    assert len(set(ids)) == len(ids)
    assert ids[6] == "src-mono"                         # plain unique names stay readable
    assert ids == source_ids(names)                     # and stable


def test_outputs_get_the_usual_file_mode(tmp_path):
    from bargein.store import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "x.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o644
