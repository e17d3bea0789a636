"""EAR: hand-computed C, R and EAR; the offline repair classifier; the LLM judge over the real
OpenAI SDK against a loopback server; the ``bargein score ear`` command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bargein.errors import ConfigError
from bargein.records import MaskedItem, MaskSpan, WordTiming
from bargein.scorers.ear import aggregate, ear, score_ear
from bargein.scorers.ear_rules import answer_correct, classify_repair
from bargein.store import write_jsonl

ACCOUNT_TEXT = "Sure, my account number is four four seven one, zero nine three two."
CONTEXT = ({"content": "You are a telecom agent.", "role": "system"},
           {"content": "Can I have your account number, please?", "role": "assistant"})


def item(unit: int = 0, condition: str = "unanswerable", signal: str = "white_noise", window: int = 0,
         kind: str = "conversation") -> MaskedItem:
    words = tuple(WordTiming(word=w, start_s=0.3 * k, end_s=0.3 * k + 0.25) for k, w in enumerate(ACCOUNT_TEXT.split()))
    if condition == "unanswerable":
        span = MaskSpan(word_start=5, word_end=13, start_s=1.5, end_s=3.85, text=" ".join(ACCOUNT_TEXT.split()[5:]))
        masked = "Sure, my account number is [inaudible]."
    else:
        span = MaskSpan(word_start=1, word_end=2, start_s=0.3, end_s=0.55, text="my")
        masked = "Sure, [inaudible] account number is four four seven one, zero nine three two."
    common = dict(id=f"u{unit}_{condition}_{signal}_w{window}", source_id=f"rd-{unit}", audio_path="x.flac",
                  transcript=ACCOUNT_TEXT, words=words, spans=(span,), condition=condition,
                  signal=signal, window_ms=window, masked_transcript=masked)
    if kind == "qa":
        return MaskedItem(**{**common, "transcript": "The meeting is at the library.",
                             "masked_transcript": "The meeting is at [inaudible]."
                             if condition == "unanswerable" else "The meeting [inaudible] at the library."},
                          source_kind="qa", question="Where is the meeting?", answer="the library")
    return MaskedItem(**common, source_kind="conversation", message_index=1, answer="4471 0932",
                      slot="account_number", context=CONTEXT)


def test_ear_formula_hand_computed():
    assert ear(0.9, 0.1) == pytest.approx(0.18)
    assert ear(0.5, 0.5) == pytest.approx(0.5) and ear(1, 0) == 0 and ear(0, 0) == 0
    assert ear(0.75, 0.625) == pytest.approx(2 * 0.75 * 0.625 / 1.375)


GOOD_ANSWER = "Thanks, I have your account number 4471 0932. Now, what is your move date?"
EXPLICIT = "Sorry, I didn't catch your account number. Could you repeat it?"
GENERIC = "Sorry, could you say that again?"
UNAWARE = "Thanks, your account is verified. Let me pull up your plan."


@pytest.mark.parametrize("response,category", [
    (EXPLICIT, "explicit_repair"),
    ("Could you give me your account number again?", "explicit_repair"),
    ("I'm sorry, the line cut out when you said the number. What were the digits?", "explicit_repair"),
    (GENERIC, "generic_refusal"),
    ("I'm sorry, there was some noise on the line.", "generic_refusal"),
    ("I don't know.", "generic_refusal"),
    ("Thanks, your account number 5521 7730 is verified.", "answer"),
    ("Sorry, I missed part of that, but I think it was 5521 7730?", "answer"),
    ("Was that 4471 0932?", "answer"),                  # a guess of the hidden value
    (UNAWARE, "answer"),
    ("", "answer"),
])
def test_offline_classifier_conversation(response, category):
    assert classify_repair(response, item()).category == category


@pytest.mark.parametrize("response,category", [
    ("Sorry, I couldn't hear where the meeting is. Could you repeat that part?", "explicit_repair"),
    ("Could you repeat the question?", "generic_refusal"),
    ("I'm not sure where it is.", "generic_refusal"),
    ("It's at the library.", "answer"),
    ("The meeting is at the town hall.", "answer"),
])
def test_offline_classifier_qa(response, category):
    assert classify_repair(response, item(kind="qa")).category == category


@pytest.mark.parametrize("response,kind,ok", [
    ("It's at the Library!", "qa", True),
    ("At the town hall.", "qa", False),
    (GOOD_ANSWER, "conversation", True),
    ("Great, moving on. What is your new address?", "conversation", False),   # shows nothing of the value
    ("Sorry, what was your account number?", "conversation", False),
    ("Your account 5521 7730 is verified.", "conversation", False),
    ("", "conversation", False),
])
def test_answer_correct(response, kind, ok):
    it = item(condition="answerable", kind=kind)
    assert answer_correct(response, it) is ok


def test_answer_correct_number_words():
    it = item(condition="answerable", kind="qa").with_(answer="7:30", question="When does it leave?")
    assert answer_correct("It leaves at seven thirty.", it) and not answer_correct("At 8:15.", it)


def _files(tmp_path: Path, pairs: list[tuple[MaskedItem, str | list[str]]]) -> tuple[Path, Path]:
    items, lines = [], []
    for it, resp in pairs:
        items.append(it)
        for e, r in enumerate([resp] if isinstance(resp, str) else resp):
            lines.append({"item_id": it.id, "epoch": e, "response": r})
    write_jsonl(tmp_path / "items.jsonl", items)
    (tmp_path / "resp.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path / "items.jsonl", tmp_path / "resp.jsonl"


def _hand_case() -> list[tuple[MaskedItem, str]]:
    """white_noise/0 ms: 10 utterances, C = 9/10, R = 1/10 -> EAR 0.18.
    music/100 ms: the first 4 utterances, C = 2/4, R = (1 + 1 + 0.5 + 0)/4 = 0.625."""
    pairs = []
    for u in range(10):
        pairs.append((item(u, "answerable"), GOOD_ANSWER if u < 9 else EXPLICIT))
        pairs.append((item(u, "unanswerable"), EXPLICIT if u == 0 else UNAWARE))
    for u in range(4):
        pairs.append((item(u, "answerable", "music", 100), GOOD_ANSWER if u < 2 else GENERIC))
        pairs.append((item(u, "unanswerable", "music", 100), [EXPLICIT, EXPLICIT, GENERIC, UNAWARE][u]))
    return pairs


def test_score_ear_hand_computed(tmp_path):
    items_path, resp_path = _files(tmp_path, _hand_case())
    rep = score_ear(items_path, resp_path, judge="smoke", out=tmp_path / "out", seed=1, n_boot=300)
    g1 = dict(signal="white_noise", window_ms=0)
    assert rep.get("C", **g1).value == pytest.approx(0.9) and rep.get("C", **g1).n == 10
    assert rep.get("R", **g1).value == pytest.approx(0.1) and rep.get("R", **g1).n == 10
    assert rep.get("EAR", **g1).value == pytest.approx(0.18)
    g2 = dict(signal="music", window_ms=100)
    assert rep.get("C", **g2).value == pytest.approx(0.5)
    assert rep.get("R", **g2).value == pytest.approx(0.625)
    assert rep.get("EAR", **g2).value == pytest.approx(2 * 0.5 * 0.625 / 1.125)
    c_all, r_all = 11 / 14, 3.5 / 14
    assert rep.get("C").value == pytest.approx(c_all) and rep.get("R").value == pytest.approx(r_all)
    assert rep.get("EAR").value == pytest.approx(ear(c_all, r_all))
    assert rep.get("EAR", signal="music").value == rep.get("EAR", **g2).value
    assert rep.get("EAR", window_ms=0).value == pytest.approx(0.18)
    assert rep.get("R_explicit", **g2).value == 0.5 and rep.get("R_generic", **g2).value == 0.25
    for a in rep.report.aggregates:
        if a.ci_low is not None:
            assert a.ci_low <= a.value + 1e-12 and a.value <= a.ci_high + 1e-12
    lo, hi = rep.get("C", **g1).ci_low, rep.get("C", **g1).ci_high
    assert 0.6 <= lo < 0.9 and hi == 1.0
    assert (tmp_path / "out" / "tables.md").read_text().count("|") > 20
    scores = [json.loads(x) for x in (tmp_path / "out" / "item_scores.jsonl").read_text().splitlines()]
    assert len(scores) == 28 and {s["metric"] for s in scores} == {"C", "R"}
    again = score_ear(items_path, resp_path, judge="smoke", seed=1, n_boot=300)
    assert again.to_dict() == rep.to_dict()                       # deterministic, CIs included


def test_epochs_average_per_item_and_bootstrap_keeps_pairs(tmp_path):
    pairs = [(item(0, "answerable"), [GOOD_ANSWER, EXPLICIT]), (item(0, "unanswerable"), [EXPLICIT, GENERIC])]
    rep = score_ear(*_files(tmp_path, pairs), judge="smoke", n_boot=50)
    assert rep.get("C").value == 0.5 and rep.get("R").value == 0.75
    assert rep.get("EAR").ci_low == rep.get("EAR").ci_high == pytest.approx(ear(0.5, 0.75))  # one unit
    assert aggregate([], n_boot=10) == []


def test_bad_responses_reported_per_item(tmp_path):
    pairs = _hand_case()[:4]
    items_path, resp_path = _files(tmp_path, pairs[:3])
    write_jsonl(items_path, [p[0] for p in pairs])
    rep = score_ear(items_path, resp_path, judge="smoke", n_boot=0, out=tmp_path / "o")
    assert rep.report.config["input_issues"] == {"missing response": 1}
    missing = pairs[3][0]
    metric = "C" if missing.condition == "answerable" else "R"
    assert rep.unscorable(metric, {}) == 1 and "(1)" in rep.tables()
    issues = [json.loads(x) for x in (tmp_path / "o" / "issues.jsonl").read_text().splitlines()]
    assert [i["item_id"] for i in issues] == [missing.id]
    rep = score_ear(items_path, resp_path, judge="smoke", n_boot=0, allow_missing=True)
    assert rep.get("R").n + rep.get("C").n == 4
    lines = [json.dumps({"item_id": "nope", "response": "x"}), "not json",
             json.dumps({"item_id": pairs[0][0].id, "response": EXPLICIT}),
             json.dumps({"item_id": pairs[0][0].id, "response": GENERIC}),
             json.dumps({"item_id": pairs[1][0].id, "response": ""})]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    rep = score_ear(items_path, tmp_path / "bad.jsonl", judge="smoke", n_boot=0)
    assert rep.report.config["input_issues"] == {
        "conflicting duplicates": 1, "empty response (scored: no repair, not correct)": 1,
        "missing response": 2, "unknown item id": 1, "unreadable line": 1}
    (tmp_path / "none.jsonl").write_text('{"item_id": "nope", "response": "x"}\n')
    with pytest.raises(ConfigError, match="no response for any of these items"):
        score_ear(items_path, tmp_path / "none.jsonl", judge="smoke", n_boot=0)
    with pytest.raises(ConfigError, match="does not exist"):
        score_ear(tmp_path / "missing.jsonl", resp_path, judge="smoke")


def test_smoke_c_needs_the_value_not_a_bare_okay():
    """The issue's case: "Okay." used to count as correct on every answerable item."""
    ans = item(0, "answerable")
    assert not answer_correct("Okay.", ans) and not answer_correct("Sure, thanks.", ans)
    assert answer_correct(GOOD_ANSWER, ans)
    assert answer_correct("Thanks, four four seven one zero nine three two, verified.", ans)
    assert not answer_correct("Thanks, account 4471 0933 is verified.", ans)


def test_llm_judge_over_loopback(tmp_path, monkeypatch):
    from bargein.testing import LoopbackLLMServer, last_user_text

    prompts = []

    def responder(req):
        text = last_user_text(req)
        prompts.append(text)
        resp = re.search(r'"""(.*)"""', text, re.S).group(1)
        cat = ("explicit_repair" if "account number" in resp and "repeat" in resp else
               "generic_refusal" if "again" in resp else "answer")
        return json.dumps({"category": cat, "correct": "4471" in resp, "reason": "read the response"})

    pairs = _hand_case()[:20]                                      # white_noise/0 ms
    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        rep = score_ear(*_files(tmp_path, pairs), judge="openai:judge-model", workdir=tmp_path,
                        n_boot=100)
    assert len(set(prompts)) == 4 <= len(prompts) <= 20          # identical prompts hit the LLM cache
    una = next(p for p in prompts if "could NOT know" in p)
    assert "[inaudible]" in una and "account number" in una and "white noise" in una
    assert rep.get("C").value == pytest.approx(0.9) and rep.get("R").value == pytest.approx(0.1)
    assert rep.report.config["judge"] == "openai:judge-model (judge_repair v2)"


def test_score_ear_cli(tmp_path):
    from click.testing import CliRunner

    from bargein.cli import cli

    items_path, resp_path = _files(tmp_path, _hand_case())
    r = CliRunner().invoke(cli, ["score", "ear", "--items", str(items_path), "--responses", str(resp_path),
                                 "--judge", "smoke", "--out", str(tmp_path / "o"), "--bootstrap", "200"])
    assert r.exit_code == 0, r.output
    assert "| signal=white_noise, window_ms=0 | 10 (0) | 0.900" in r.output and "0.180" in r.output
    assert "SMOKE TEST, NOT A SCORE" in r.output and "validation κ" in r.output
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["scorer"] == "ear"
    r = CliRunner().invoke(cli, ["score", "ear", "--items", str(items_path), "--responses", str(resp_path),
                                 "--judge", "smoke", "--json", "--bootstrap", "0"])
    assert json.loads(r.output)["aggregates"][0]["ci_low"] is None


def test_judge_answers_that_fail_their_schema_are_unscorable_per_item_with_evidence(tmp_path, monkeypatch):
    """A scripted EAR judge over the OpenAI SDK answers with the wrong shape for one response:
    that (item, epoch) is listed in issues.jsonl with the judge's raw answer; an item with no
    usable epoch is counted unscorable beside C (never dropped); an item with another usable
    epoch is scored on it; the table says how many judgments got no usable answer."""
    from bargein.testing import LoopbackLLMServer, last_user_text

    mark = "Zebra crossing, let me check that for you."

    def responder(req):
        text = last_user_text(req)
        if mark in text:
            return json.dumps({"verdict": "fine"})                      # no field of the schema
        return json.dumps({"category": "answer", "correct": "4471" in text.split('"""')[-2],
                           "reason": "read the response"})

    pairs = [(item(u, "answerable"), GOOD_ANSWER) for u in range(4)]
    pairs[0] = (pairs[0][0], mark)                                     # no usable epoch
    pairs[1] = (pairs[1][0], [mark, GOOD_ANSWER])                      # one usable epoch of two
    out = tmp_path / "o"
    with LoopbackLLMServer(responder=responder) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        rep = score_ear(*_files(tmp_path, pairs), judge="openai:judge-model", workdir=tmp_path,
                        n_boot=50, out=out)
    assert rep.get("C").n == 3 and rep.unscorable("C", {}) == 1
    assert {s.item_id for s in rep.scores} == {p[0].id for p in pairs[1:]}
    assert rep.report.config["judge_failures"] == 2
    issues = [json.loads(x) for x in (out / "issues.jsonl").read_text().splitlines()]
    judged = [i for i in issues if i["source"] == "judge"]
    assert sorted((i["item_id"], i["epoch"]) for i in judged) == [(pairs[0][0].id, 0), (pairs[1][0].id, 0)]
    assert all("fine" in json.dumps(i["evidence"]) for i in judged)
    text = (out / "tables.md").read_text()
    assert "| all | 3 (1) |" in text and "2 judgment(s) got no usable answer" in text
    assert "judge openai:judge-model" in text and "validation κ not measured" in text
