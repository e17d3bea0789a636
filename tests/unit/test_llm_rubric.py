"""The LLM rubric writer's criteria must not ask for what the interruption type's recovery must not
do. The cases are criteria the 1.5B model wrote for impatient cut-ins in one bench/llm_real.py
call (read by hand): "asks for clarification", "Requests clarification on the address.",
"Continues with a fresh start after the interruption." (the normal type's recovery)."""

from __future__ import annotations

import asyncio
import random

import pytest

from bargein.generators.llm_rubric import RubricOut, against_type, check_rubric, llm_rubric

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
    from bargein.generators.conversation import RuleAgents, _run_sync, simulate
    from bargein.generators.scenarios import generate_scenarios

    conv = idx = None
    for scn in generate_scenarios(12, 3, workdir=tmp_path, progress=False).outputs:
        for seed in range(6):
            c = _run_sync(simulate(scn, random.Random(seed), RuleAgents(scn)))
            cuts = [m.index + 1 for m in c.messages if m.interruption is not None
                    and m.interruption.type == "impatient"]
            if cuts:
                conv, idx = c, cuts[0]
                break
        if conv is not None:
            break
    assert conv is not None

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


def test_the_request_carries_the_example_of_its_own_type_and_a_copy_is_refused():
    """One correction example for every type made the 1.5B model write correction checks for
    filler cut-ins ("Uses the new plan (Standard with Ads at 7.99 a month) without mentioning
    it."). Each type now has its own example (another call), and a criterion copying it is
    re-asked."""
    from bargein.generators.llm_rubric import EXAMPLES, _example, copies_example

    assert set(EXAMPLES) == {"normal", "impatient", "correction", "topic_switch", "filler", "pushback"}
    for kind, (_, _, answer) in EXAMPLES.items():
        out = RubricOut(**answer)
        assert check_rubric(out, kind) != []                      # the example itself is a copy
        assert copies_example(out, kind)
        assert "Mm-hm" in _example("filler")["example_interjection"]
    own = RubricOut(tf_criterion="The response finishes the sentence about the fifteen titles on the plan.",
                    rq_criteria=["Continues exactly from 'including' with the rest of the sentence.",
                                 "Does not say 'Downloads for offline viewing' again."])
    assert check_rubric(own, "filler") == []


def test_a_rubric_the_verifier_would_reject_is_re_asked_with_the_verdict(tmp_path):
    """The rubric writer's answer goes through the verifier's own deterministic checks before it
    is kept: a criterion starting in lower case (grammar_gold) and one quoting a fragment that is
    no whole phrase of the call (rq_whole_phrase) were the two discard reasons of a 25-message
    1.5B call. The re-ask carries the verdicts; the fixed answer passes the same checks."""
    from bargein.generators.conversation import RuleAgents, _run_sync, simulate
    from bargein.generators.scenarios import generate_scenarios
    from bargein.verify.checks import run_checks

    def fragment_of(text: str) -> str:
        """Two words of ``text`` ending on 'the'/'to'/'of'/'your' ("to the"): mid-phrase."""
        words = [w.strip(".,?!") for w in text.split()]
        return next((f"{a} {b}" for a, b in zip(words, words[1:])
                     if b.lower() in ("the", "to", "of", "your") and a.isalpha()), "")

    conv = idx = None
    for scn in generate_scenarios(12, 3, workdir=tmp_path, progress=False).outputs:
        for seed in range(6):
            c = _run_sync(simulate(scn, random.Random(seed), RuleAgents(scn)))
            cuts = [m.index + 1 for m in c.messages if m.interruption is not None
                    and m.interruption.type == "normal" and fragment_of(m.heard_text)]
            if cuts:
                conv, idx = c, cuts[0]
                break
        if conv is not None:
            break
    assert conv is not None
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
    assert len(model.sent) == 2 and "lower-case" in reask and "not a whole phrase" in reask
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
