"""Records: immutable, deterministic ids, JSON round-trip, schemas; seeds stable across processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import ValidationError

from bargein.records import (
    ALL_RECORDS, ChatMessage, Interruption, Message, Rubric, Segment, UserIntent, WordTiming,
)
from bargein.seeding import item_rng, item_seed, stable_hash


def test_every_record_has_a_json_schema(tmp_path):
    from bargein.cli import main

    main(["schema", "--out", str(tmp_path)])
    files = sorted(p.name for p in tmp_path.glob("*.schema.json"))
    assert len(files) == len(ALL_RECORDS)
    schema = json.loads((tmp_path / "Segment.schema.json").read_text())
    assert set(schema["properties"]) >= {"message_index", "channel", "start_s", "end_s", "words"}


def test_round_trip_and_immutability():
    w = WordTiming(word="claim", start_s=0.12, end_s=0.48, char_start=5)
    seg = Segment(message_index=3, channel=1, start_s=0.0, end_s=2.5, text="a claim", words=(w,))
    again = Segment.from_json(seg.to_json())
    assert again == seg and again.id == seg.id
    with pytest.raises(ValidationError):
        seg.start_s = 1.0  # frozen
    moved = seg.with_(start_s=0.5)
    assert moved.start_s == 0.5 and seg.start_s == 0.0
    # a content id follows the content; an explicit id is a name and stays
    assert moved.id != seg.id and moved.id == moved.content_id() == Segment(**{
        **seg.model_dump(exclude={"id"}), "start_s": 0.5}).id
    named = seg.with_(id="seg-given").with_(start_s=0.7)
    assert named.id == "seg-given" and named.with_(id="other").id == "other"


def test_deep_immutability():
    """No payload inside a record can change: dicts are FrozenDicts, lists tuples, all the way down."""
    from bargein.records import Failure, FrozenDict, MaskedItem, RoundPlan, Turn

    f = Failure(stage="s", item_id="i", reason="r", evidence={"a": [1, {"b": [2]}], "c": {"d": 1}})
    assert isinstance(f.evidence, FrozenDict) and f.evidence["a"] == (1, {"b": (2,)})
    for mutate in (lambda: f.evidence.__setitem__("x", 1), lambda: f.evidence["c"].update(d=2),
                   lambda: f.evidence.pop("a"), lambda: f.evidence["a"][1].clear()):
        with pytest.raises(TypeError, match="immutable"):
            mutate()
    assert Failure.from_json(f.to_json()) == f and hash(f) == hash(Failure.from_json(f.to_json()))
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(f)) == f and copy.deepcopy(f) == f
    item = MaskedItem(source_id="rd-1", audio_path="a.flac", transcript="my number is 12", words=(),
                      spans=(), condition="answerable", signal="silence", measured={"masked_s": 3.0},
                      context=({"role": "system", "content": "You are an agent."},))
    assert isinstance(item.context[0], Turn) and item.context[0].role == "system"
    with pytest.raises(TypeError):
        item.measured["masked_s"] = 9.0
    with pytest.raises(ValidationError):
        item.context[0].content = "changed"
    plan = RoundPlan(round=0, stage=None, assistant_action="open", detail={"variant": "x"})
    with pytest.raises(TypeError):
        plan.detail["variant"] = "y"
    import yaml

    assert yaml.safe_load(yaml.safe_dump(f.model_dump())) == json.loads(f.to_json())


def test_record_maps_have_fixed_typed_keys():
    """The payload maps whose keys are a fixed set (measures, interruption detail, acknowledgement,
    voices by role) refuse an unknown key or a wrongly typed value, naming it; they serialise as
    plain JSON objects, so a record's JSON and content id do not depend on how they are typed."""
    from bargein.records import MaskedItem, PerturbationPair, RenderedDialogue, RoundPlan

    pair = dict(source_id="rd-1", type="late_response", natural_path="n.flac",
                perturbed_path="p.flac", crop_start_s=0.0, crop_end_s=4.0,
                edits=({"op": "shift", "channel": 1, "at_s": 1.0, "duration_s": 0.5},))
    p = PerturbationPair(**pair, measured={"delay_s": 0.5, "gap_s": 0.9, "in_spec": 1.0})
    assert json.loads(p.to_json())["measured"] == {"delay_s": 0.5, "gap_s": 0.9, "in_spec": 1.0}
    assert PerturbationPair.from_json(p.to_json()) == p
    with pytest.raises(ValidationError, match="measured.delay_ms"):
        PerturbationPair(**pair, measured={"delay_ms": 500.0})
    with pytest.raises(ValidationError, match="measured.in_spec"):
        PerturbationPair(**pair, measured={"in_spec": "yes"})
    with pytest.raises(ValidationError, match="measured.snr_db"):
        MaskedItem(source_id="rd-1", audio_path="a.flac", transcript="t", words=(), spans=(),
                   condition="answerable", signal="silence", measured={"snr_db": 3.0})
    with pytest.raises(ValidationError, match="detail.colour"):
        RoundPlan(round=0, stage=None, assistant_action="open", detail={"colour": "red"})
    with pytest.raises(ValidationError, match="ack.kind"):
        RoundPlan(round=0, stage=None, assistant_action="open", ack={"kind": "shrug"})
    plan = RoundPlan(round=0, stage=None, assistant_action="open", user_facts={"any_fact_key": "x"},
                     detail={"variant": "constraint", "pair": "3"}, ack={"kind": "plain"})
    assert plan.detail.get("pair") == "3" and "anchor" not in plan.detail
    assert json.loads(plan.model_dump_json())["detail"] == {"variant": "constraint", "pair": "3"}
    rd = dict(conversation_id="c", audio_path="a.flac", duration_s=1.0, segments=())
    assert RenderedDialogue(**rd, voices={"user": "v1", "assistant": "v2"}).voices["user"] == "v1"
    with pytest.raises(ValidationError, match="voices"):
        RenderedDialogue(**rd, voices={"narrator": "v1"})


def test_release_payloads_are_typed_or_json():
    """The manifest's provenance types the keys bargein writes (a wrong type is refused, naming the
    key) and keeps a user's own additions; scorer evidence and settings are JSON values, frozen."""
    from bargein.records import ItemScore, ReleaseManifest, ScoreReport

    base = dict(name="r", version="1.0.0", configs={}, files=())
    stage = {"stage": "render", "inputs": ["VerifiedConversation"], "outputs": ["RenderedDialogue"],
             "after": ["conversations"], "backend": {"sample_rate": 16000}}
    m = ReleaseManifest(**base, provenance={"seed": 7, "stages": [stage], "models": {"tts": "piper"}})
    assert m.provenance["stages"][0]["outputs"] == ("RenderedDialogue",)
    assert m.provenance["models"] == {"tts": "piper"}           # the user's key is kept
    assert ReleaseManifest.from_json(m.to_json()) == m
    with pytest.raises(ValidationError, match="provenance.seed"):
        ReleaseManifest(**base, provenance={"seed": "seven"})
    with pytest.raises(ValidationError, match="provenance.stages.0"):
        ReleaseManifest(**base, provenance={"stages": [{"stage": "render"}]})
    s = ItemScore(item_id="ev-1", metric="TF", value=1.0, detail={"epochs": [{"epoch": 0, "ok": True}]})
    assert s.detail["epochs"][0] == {"epoch": 0, "ok": True} and isinstance(s.detail["epochs"], tuple)
    assert s.with_(detail={**s.detail, "stamp": "smoke"}).detail["stamp"] == "smoke"
    with pytest.raises(ValidationError, match="detail"):
        ItemScore(item_id="ev-1", metric="TF", value=1.0, detail={"judge": object()})
    with pytest.raises(ValidationError, match="config"):
        ScoreReport(scorer="x", release="r", aggregates=(), config={"phase": 1j})


def test_ids_are_content_addressed():
    a = ChatMessage(role="user", content="hello")
    b = ChatMessage(role="user", content="hello")
    c = ChatMessage(role="user", content="hello!")
    assert a.id == b.id != c.id
    assert a.id.startswith("chat-") and len(a.id) == len("chat-") + 16
    assert ChatMessage(role="user", content="x", id="given").id == "given"


def test_extra_fields_rejected_with_the_key_named():
    with pytest.raises(ValidationError, match="colour"):
        WordTiming(word="a", start_s=0, end_s=1, colour="red")


def test_interruption_must_agree_with_message():
    text = "Your claim needs three documents and a photo of the damage"
    intr = Interruption(type="filler", cut_word_index=4, cut_char_offset=22,
                        heard_text="Your claim needs three", overlap_ms=200, interjection="mm-hm")
    Message(index=1, role="assistant", text=text, heard_text=intr.heard_text, interruption=intr)
    with pytest.raises(ValidationError, match="prefix"):
        bad = intr.with_(heard_text="Your claim wants three")
        Message(index=1, role="assistant", text=text, heard_text=bad.heard_text, interruption=bad)


def test_rubric_needs_two_to_four_rq_criteria():
    with pytest.raises(ValidationError):
        Rubric(message_index=2, type="filler", tf_criterion="continue", rq_criteria=("only one",))
    Rubric(message_index=2, type="filler", tf_criterion="continue", rq_criteria=("a", "b"))


def test_intent_probabilities_validated():
    probs = dict(normal=0.2, impatient=0.2, correction=0.1, topic_switch=0.1, filler=0.1, pushback=0.3)
    UserIntent(profile="rushed", interruption_probs=probs)
    with pytest.raises(ValidationError, match="sum to 1"):
        UserIntent(profile="rushed", interruption_probs={**probs, "normal": 0.5})
    with pytest.raises(ValidationError, match="lacks types"):
        UserIntent(profile="rushed", interruption_probs={"normal": 1.0})


def test_seeds_and_ids_stable_across_processes():
    code = (
        "from bargein.seeding import item_seed, stable_hash;"
        "from bargein.records import ChatMessage;"
        "print(item_seed(7, 'render', 'conv-1'), stable_hash({'b': 1, 'a': [1, 2]}),"
        " ChatMessage(role='user', content='hello').id)"
    )
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": str(s), "PATH": ""}, check=True).stdout
            for s in (1, 2, 3)}
    assert len(outs) == 1
    here = f"{item_seed(7, 'render', 'conv-1')} {stable_hash({'a': [1, 2], 'b': 1})} " \
           f"{ChatMessage(role='user', content='hello').id}\n"
    assert outs == {here}
    assert item_rng(7, "render", "conv-1").random() == item_rng(7, "render", "conv-1").random()
    assert item_seed(7, "render", "conv-1") != item_seed(8, "render", "conv-1")


# failures-file lines as the runner wrote them before Failure.evidence was typed (evidence: Any)
OLD_FAILURE_LINES = [
    '{"id":"fail-89611d17f87df894","stage":"s","item_id":"i","reason":"r","error_type":"X","evidence":"repr text"}',
    '{"id":"fail-74d8420a5aa44b0e","stage":"s","item_id":"i","reason":"r","error_type":"X","evidence":{"traceback":["a","b"]}}',
    '{"id":"fail-0c76c56e58fffa12","stage":"s","item_id":"i","reason":"r","error_type":"X","evidence":{"agent":"a",'
    '"attempts":[{"errors":["e"],"finish_reason":"length","raw":"x","usage":{"input_tokens":1,"output_tokens":2}},'
    '{"details":{"agent":"a","attempts":3,"errors":["x"],"probes":["p"]},"error":"boom"}],"model":"m",'
    '"provider":"openai","sample":0,"schema":"S","usage":{"input_tokens":2,"output_tokens":3}}}',
    '{"id":"fail-40d24ec7a8fc5993","stage":"s","item_id":"i","reason":"r","error_type":"X","evidence":{"rounds":'
    '[{"evidence":{"agent":"a","attempts":[{"answer":{"a":1},"problems":["p"]}]},"reason":"r","replan":0,"round":1}],'
    '"scenario":"scn-1"}}',
    '{"id":"fail-2a4696dc9ce0e39e","stage":"s","item_id":"i","reason":"r","error_type":"X","evidence":{"attempts":'
    '[{"attempt":2,"errors":["e"],"heard":"hi there","interjection":"wait"}],"message":"m"}}',
    '{"id":"fail-0bf30525780f76b4","stage":"s","item_id":"i","reason":"r","error_type":"X","evidence":{"epoch":1,'
    '"item":"i","model":"gpt","placeholders":["{x}"],"plan":{"k":[1]},"spent_usd":1.5,"violations":["v1"]}}',
]


def test_failure_evidence_is_typed_frozen_and_old_files_read_unchanged():
    """Failure.evidence is a FailureEvidence: the keys bargein's producers write are typed (a
    wrongly typed value is refused, naming the key), a stage's own keys are kept as JSON, every
    level is frozen. Lines written before the typing read back to the same id and the same bytes."""
    from bargein.records import Failure, FrozenDict

    for line in OLD_FAILURE_LINES:
        f = Failure.from_json(line)
        assert f.to_json() == line and f.content_id() == f.id == json.loads(line)["id"]
    llm = Failure.from_json(OLD_FAILURE_LINES[2])
    try_ = llm.evidence["attempts"][1]
    assert isinstance(try_, FrozenDict) and try_["details"]["attempts"] == 3
    assert llm.evidence["attempts"][0]["usage"] == {"input_tokens": 1, "output_tokens": 2}
    with pytest.raises(TypeError, match="immutable"):
        try_["details"]["errors"] = ()
    # keys come out sorted at every level, however the producer ordered them (as the runner wrote)
    unsorted = Failure(stage="s", item_id="i", reason="r", error_type="X", evidence={
        "usage": {"output_tokens": 3, "input_tokens": 2}, "schema": "S", "sample": 0, "provider": "openai",
        "model": "m", "attempts": [{"usage": {"output_tokens": 2, "input_tokens": 1}, "raw": "x",
                                    "finish_reason": "length", "errors": ["e"]},
                                   {"error": "boom", "details": {"probes": ["p"], "errors": ["x"], "attempts": 3,
                                                                 "agent": "a"}}], "agent": "a"})
    assert unsorted.to_json() == OLD_FAILURE_LINES[2]
    for bad, where in (({"attempts": "three"}, "attempts"), ({"usage": {"input_tokens": 1}}, "output_tokens"),
                       ({"attempts": [{"usage": {"input_tokens": "x", "output_tokens": 1}}]}, "input_tokens"),
                       ({"rounds": [{"round": "first"}]}, "round"), ({"extra": float("nan")}, "JSON"),
                       ({"extra": {1, 2}}, "JSON")):
        with pytest.raises(ValidationError, match=where):
            Failure(stage="s", item_id="i", reason="r", evidence=bad)
