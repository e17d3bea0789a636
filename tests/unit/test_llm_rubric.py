"""The LLM rubric writer's criteria must not ask for what the interruption type's recovery must not
do. The cases are criteria the 1.5B model wrote for impatient cut-ins in one bench/llm_real.py
call (read by hand): "asks for clarification", "Requests clarification on the address.",
"Continues with a fresh start after the interruption." (the normal type's recovery)."""

from __future__ import annotations

import asyncio
import json
import random
import re

import pytest

from bargein.generators.llm_rubric import RubricOut, against_type, check_rubric, llm_rubric
from doubles.offline_calls import run, scenario_batch  # noqa: E402

SEEN = ["The assistant skips the unsaid part of the address and asks for clarification.",
        "Requests clarification on the address.",
        "Continues with a fresh start after the interruption."]
GOOD = ["Accepts the skip without questioning the caller.",
        "Moves on to the site plan without repeating the address.",
        "Does not re-explain the project details the caller skipped."]


@pytest.mark.parametrize("criterion", SEEN)
def test_impatient_criteria_asking_to_clarify_or_restart_are_refused(criterion):
    assert against_type("impatient", criterion)
    out = RubricOut(tf_criterion="The response moves on to the required drawings and the site plan.",
                    rq_criteria=[criterion, GOOD[0]])
    assert any("must not" in e for e in check_rubric(out, "impatient"))


def _first_cut(workdir, pick):
    """(offline conversation, index of the interjection) of the first cut-in ``pick`` accepts
    among twelve scenarios of seed 3, six offline runs each."""
    for scn in scenario_batch(12, 3, workdir):
        for seed in range(6):
            c = run(scn, seed)
            cuts = [m.index + 1 for m in c.messages if m.interruption is not None and pick(m)]
            if cuts:
                return c, cuts[0]
    raise AssertionError("no offline cut-in of that kind")


def test_negated_and_other_type_criteria_pass():
    assert [c for c in GOOD if against_type("impatient", c)] == []
    assert against_type("normal", SEEN[2]) == ""          # a fresh start is the normal recovery
    assert against_type("filler", "Acknowledges the caller, then continues.") == "acknowledg"
    assert against_type("filler", "Continues from the cut word with no acknowledgement.") == ""
    out = RubricOut(tf_criterion="The response moves on to the required drawings and the site plan.",
                    rq_criteria=GOOD)
    assert check_rubric(out, "impatient") == []


def test_the_rubric_writer_is_re_asked_on_a_contradicting_criterion(tmp_path):
    """Through llm_rubric with a scripted model: the first answer contradicts the type, the
    re-ask (which names the criterion) is answered well, and that answer is the rubric."""
    conv, idx = _first_cut(tmp_path, lambda m: m.interruption.type == "impatient")

    class Model:
        def __init__(self):
            self.sent = []

        async def structured(self, messages, schema, **kw):
            self.sent.append(messages)
            rq = SEEN[1:] if len(self.sent) == 1 else GOOD
            return schema(tf_criterion="The response moves straight on to the next step of the task.",
                          rq_criteria=rq)

    model = Model()
    rubric = asyncio.run(llm_rubric(conv, idx, model, random.Random(0)))
    assert len(model.sent) == 2 and "must not" in model.sent[1][-1]["content"]
    assert list(rubric.rq_criteria) == GOOD and rubric.type == "impatient"


def _offline_call(tmp_path, kind: str):
    """An offline-simulated call with a ``kind`` interruption, and the interjection's index."""
    return _first_cut(tmp_path, lambda m: m.interruption.type == kind)


def _filled(example: dict, values: dict[str, str]) -> dict:
    from bargein.generators.llm_rubric import _SLOT

    fill = lambda c: _SLOT.sub(lambda m: values[m.group(1).strip().lower()], c)   # noqa: E731
    return {"tf_criterion": fill(example["tf_criterion"]), "rq_criteria": [fill(c) for c in example["rq_criteria"]]}


def test_the_examples_hold_no_other_calls_words_and_an_echoed_slot_is_refused_with_its_value():
    """The examples were calls of a parcel delivery; the 1.5B model copied them word for word
    into unrelated calls ("Accepts 41 Elm Street without questioning the caller." for an email
    correction; "The assistant asks for the order number to start the return." for a flight
    cancellation), three answers of three. The examples now hold slots where a call's words go:
    no value of any call is in them, an answer leaving a slot is refused, and the error gives
    the value the slot stands for in this call."""
    from bargein.generators.llm_rubric import EXAMPLES, _SLOT, example_for, slots_left

    assert set(EXAMPLES) == {"normal", "impatient", "correction", "topic_switch", "filler", "pushback"}
    for kind, ex in EXAMPLES.items():
        lines = [ex["tf_criterion"], *ex["rq_criteria"]]
        assert not any(ch.isdigit() for c in lines for ch in c)          # no value of any call
        assert _SLOT.search(ex["tf_criterion"])
        bare = example_for(kind, {"next step": "the next step of the call"})   # no detail known
        assert len(bare["rq_criteria"]) >= 2 and "<" in bare["tf_criterion"]
        assert check_rubric(RubricOut(**ex), kind) != []                 # the example as it stands
    values = {"new": "kscott@johnson-lucas.com", "old": "kscott32@proton.me", "label": "email",
              "next step": "confirm the refund to the card"}
    ex = example_for("correction", values)
    errs = slots_left(RubricOut(**ex), values)
    assert any("'<new>'" in e and "kscott@johnson-lucas.com" in e for e in errs)
    assert any("'<next step>'" in e and "confirm the refund to the card" in e for e in errs)
    assert slots_left(RubricOut(**_filled(ex, values)), values) == []
    # a line whose slot this call has no value for is left out, never shown empty
    assert [c for c in example_for("correction", {**values, "old": ""})["rq_criteria"] if "<old>" in c] == []


def test_the_writer_fills_the_slots_after_a_re_ask_naming_their_values(tmp_path):
    """Through llm_rubric with a scripted model on an offline-simulated correction: the request
    shows each slot with this call's value; the first answer echoes the example, the re-ask
    names the values and leaves the example out (shown it again, the 1.5B model wrote it again,
    slots and all, three answers of three), the filled answer is the rubric and passes the
    verifier's own checks."""
    from bargein.generators.llm_rubric import example_for, gate_errors, slot_values

    conv, idx = _offline_call(tmp_path, "correction")
    values = slot_values(conv, idx)
    assert values["new"] and values["new"] in conv.messages[idx].text
    ex = example_for("correction", values)

    class Model:
        def __init__(self):
            self.sent = []

        async def structured(self, messages, schema, **kw):
            self.sent.append(messages)
            return schema(**(ex if len(self.sent) == 1 else _filled(ex, values)))

    model = Model()
    rubric = asyncio.run(llm_rubric(conv, idx, model, random.Random(0)))
    first = model.sent[0][-1]["content"]
    assert f"<new> = {json.dumps(values['new'])}" in first and "Elm Street" not in first
    reask = model.sent[1][-1]["content"]
    assert len(model.sent) == 2 and values["new"] in reask and "is a slot of the example" in reask
    assert '"tf_criterion"' not in reask and "<new> = " in reask      # the values, not the example
    assert values["new"] in rubric.rq_criteria[1] and "<" not in rubric.tf_criterion
    assert gate_errors(conv, rubric) == []


def test_a_rubric_the_writer_fails_is_the_rule_rubric_recorded_in_the_provenance(tmp_path):
    """A model that leaves the slots in every answer (three answers): with the fallback (the
    default) the conversation keeps the rule-based rubric of that interruption and its
    ``agents`` says which rubric is rule-based and why; with ``fallback="none"`` the writer's
    failure stands (PlanBroken with the attempts as evidence)."""
    from bargein.generators.llm_rubric import EXAMPLES, RULE_FALLBACK, rubrics_llm
    from bargein.generators.rubric import rule_rubric
    from bargein.generators.user_sim import PlanBroken
    from bargein.runner import StageContext

    conv, idx = _offline_call(tmp_path, "correction")
    conv = conv.with_(agents="llamacpp:model.gguf")

    class Echo:
        calls = 0

        async def structured(self, messages, schema, **kw):
            Echo.calls += 1
            kind = re.search(r"^Interruption type: (\w+)", messages[-1]["content"], re.M).group(1)
            return schema(**EXAMPLES[kind])

    ctx = StageContext(stage="conversations", item_id=conv.id, seed=3, workdir=tmp_path,
                       config={"llm": "llamacpp:model.gguf"}, resources={"llm": Echo()})
    out = asyncio.run(rubrics_llm(conv, ctx))
    n = len(conv.interruptions)
    assert Echo.calls == 3 * n and len(out.rubrics) == n
    rub = next(r for r in out.rubrics if r.message_index == idx)
    assert rub == rule_rubric(conv, idx, random.Random(ctx.item_seed + idx))
    assert out.agents.startswith("llamacpp:model.gguf; ")
    assert RULE_FALLBACK.format(idx=idx, why="")[:40] in out.agents and "is a slot of the example" in out.agents
    assert out.id == conv.id
    ctx.config["fallback"] = "none"
    with pytest.raises(PlanBroken) as e:
        asyncio.run(rubrics_llm(conv, ctx))
    assert len(e.value.evidence["attempts"]) == 3


def test_a_rubric_the_verifier_would_reject_is_re_asked_with_the_verdict(tmp_path):
    """The rubric writer's answer goes through the verifier's own deterministic checks before it
    is kept: a criterion starting in lower case (grammar_gold) and one quoting a fragment that is
    no whole phrase of the call (rq_whole_phrase) were the two discard reasons of a 25-message
    1.5B call. The re-ask carries the verdicts; the fixed answer passes the same checks."""
    from bargein.verify.checks import run_checks

    def fragment_of(text: str) -> str:
        """Two words of ``text`` ending on 'the'/'to'/'of'/'your' ("to the"): mid-phrase."""
        words = [w.strip(".,?!") for w in text.split()]
        return next((f"{a} {b}" for a, b in zip(words, words[1:])
                     if b.lower() in ("the", "to", "of", "your") and a.isalpha()), "")

    conv, idx = _first_cut(tmp_path, lambda m: (m.interruption.type == "normal"
                                                and fragment_of(m.heard_text)))
    fragment = fragment_of(conv.messages[idx - 1].heard_text)     # ends mid-phrase ("to the")
    bad = ["answers the caller's question before going on.",
           f"Says the cut sentence again, not only \"{fragment}\"."]
    good = ["Answers the caller's question before going on.",
            "Says the cut sentence again from its beginning."]

    class Model:
        def __init__(self):
            self.sent = []

        async def structured(self, messages, schema, **kw):
            self.sent.append(messages)
            return schema(tf_criterion="The response answers the caller and goes on with the task.",
                          rq_criteria=bad if len(self.sent) == 1 else good)

    model = Model()
    rubric = asyncio.run(llm_rubric(conv, idx, model, random.Random(0)))
    reask = model.sent[1][-1]["content"]
    # the lower-case start is capitalised in code (tidy_criterion), not re-asked; the fragment is
    assert len(model.sent) == 2 and "lower-case" not in reask and "not a whole phrase" in reask
    assert list(rubric.rq_criteria) == good
    new = [v for v in run_checks(conv.with_(rubrics=(rubric,))) if v.message_index == idx
           and v.check in ("grammar_gold", "rq_whole_phrase")]
    assert new == []


def test_a_cue_inside_the_calls_own_words_is_content_not_a_recovery():
    """'restart' is the filler recovery's forbidden fresh start, but 'restart your new phone' is
    a step the call walks the caller through (seen in the LLM end-to-end run: every rubric of a
    number-transfer call was re-asked three times and failed). Outside the call's words the
    same criterion is still refused."""
    said = ("When the transfer completes, your old phone will lose service. That's expected and "
            "it's the signal to restart your new phone so the number shows up.")
    c = "Goes on to say that losing service is the signal to restart your new phone."
    assert against_type("filler", c, said) == ""
    assert against_type("filler", c) == "restart"
    assert against_type("filler", "Restarts the explanation from the top.", said) == "restart"


def test_a_type_label_before_a_criterion_is_removed_or_refused():
    """Seen on the 1.5B model (bench/llm_real.py, a1acd21): "normal: address the detail or
    question, then resume with a fresh start" as a criterion of an impatient cut-in, and
    "impatient: skip ..." refused for its lower-case start; 6 of 11 rubrics fell back to rules.
    A label of the rubric's own type is removed in code; another type's label is a re-ask."""
    from bargein.generators.llm_rubric import RubricOut, tidy_criterion, tidy_rubric, wrong_type_labels

    assert tidy_criterion("impatient: skips the fee explanation and asks for the date.",
                          "impatient") == "Skips the fee explanation and asks for the date."
    assert tidy_criterion("Topic switch - answers the yard sale question briefly.",
                          "topic_switch") == "Answers the yard sale question briefly."
    # no label, or a word that only starts like one, is left as written
    plain = "Normal service resumes after the assistant confirms the deck size."
    assert tidy_criterion(plain, "normal") == plain
    assert tidy_criterion("The assistant asks for the project cost.", "impatient") == \
        "The assistant asks for the project cost."
    out = RubricOut(tf_criterion="The assistant asks for the estimated project cost next.",
                    rq_criteria=["normal: address the detail or question, then resume",
                                 "impatient: does not explain the fee again."])
    (err,) = wrong_type_labels(tidy_rubric(out, "impatient"), "impatient")
    assert "normal type" in err and "impatient" in err
    assert tidy_rubric(out, "impatient").rq_criteria[1] == "Does not explain the fee again."
    assert wrong_type_labels(tidy_rubric(out, "normal"), "normal")[0].startswith("'Impatient:")
