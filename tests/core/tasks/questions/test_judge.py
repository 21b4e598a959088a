"""The optional 1-5 LLM judge over finished records, through a configured backend (the OpenAI
backend against the canned loopback server): the paper's prompt, the mark parsed, prompt and
model kept on each record, no call for a missing or invalid answer."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cityseeker_ros.core.agents.vlm.openai_backend import OpenAIBackend
from cityseeker_ros.core.tasks.questions.judge import (
    JUDGE_PROMPT_SHA256,
    judge,
    judge_prompt,
    judge_summary,
    parse_mark,
)
from tests.core.agents.vlm.canned_server import MODEL, CannedServer


@pytest.fixture
def canned(monkeypatch) -> Iterator[tuple[CannedServer, OpenAIBackend]]:
    """The loopback server and an OpenAI backend talking to it, both closed after the test."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = CannedServer()
    # One request at a time: the canned replies then meet the records in order.
    backend = OpenAIBackend(base_url=server.url, model=MODEL, timeout_s=5.0, backoff_s=0.01, backoff_max_s=0.05,
                            json_mode="off", max_concurrency=1)
    yield server, backend
    backend.close()
    server.close()


def reply(text: str) -> dict:
    return {"body": {"id": "x", "object": "chat.completion", "model": MODEL,
                     "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                                   "content": text}}]}}


def record(answer, expected="Panificio Bruno", family="questions") -> dict:
    return {"episode_id": "q1", "family": family, "question": "What is the name of the bakery?", "answer": answer,
            "expected": expected}


def test_the_prompt_is_the_papers_with_the_three_slots_filled():
    text = judge_prompt("Q?", "Starbucks", "Starbuks")
    assert text.startswith("You are an AI assistant who will help me to evaluate the response")
    assert "Question: Q?\nAnswer: Starbucks\nResponse: Starbuks\n" in text
    assert '{"mark": <integer>}' in text


@pytest.mark.parametrize(("text", "mark"), [('{"mark": 4}', 4), ('Output: {\n "mark": 5\n}', 5), ("3", 3),
                                            ("```json\n{\"mark\":2}\n```", 2), ("mark: 1", 1),
                                            ("I think it is good", None), ('{"mark": 9}', None)])
def test_the_mark_is_read_from_json_prose_or_a_lone_digit(text, mark):
    assert parse_mark(text) == mark


def test_judged_records_carry_score_reply_prompt_and_model(canned):
    server, backend = canned
    server.script.extend([reply('{"mark": 5}'), reply("no idea")])
    records = [record("panificio bruno"), record("Bruno's"), record(""), record(None), record("x", family=None)]
    out = judge(records, backend)
    posts = server.posts()
    assert len(posts) == 2  # neither the empty nor the missing answer, nor another family's record, is asked
    assert "Response: panificio bruno" in posts[0]["body"]["messages"][-1]["content"]
    assert out[0]["judge"]["score"] == 5 and out[0]["judge"]["model"]["model"] == MODEL
    assert out[0]["judge"]["prompt_sha256"] == JUDGE_PROMPT_SHA256 and "Panificio Bruno" in out[0]["judge"]["prompt"]
    assert out[1]["judge"]["score"] is None and out[1]["judge"]["reply"] == "no idea"
    assert out[2]["judge"]["score"] == 1 and out[3]["judge"]["score"] == 1
    assert "judge" not in out[4] and "judge" not in records[0]  # the input is left as it was
    summary = judge_summary(out)
    assert summary["judge_mean"] == pytest.approx((5 + 1 + 1) / 3, abs=1e-4) and summary["unreadable"] == 1
    assert summary["models"][0]["model"] == MODEL


def test_cityseeker_judge_marks_a_run_and_the_report_shows_the_mean(street_folder, tmp_path, monkeypatch, capsys):
    """The command over a real run's records, against the canned server: one call per valid
    answer, the marks in judge.jsonl, the mean in judge.json and in the report."""
    from cityseeker_ros.cli import main
    from cityseeker_ros.core.evaluation.report.page import write_report

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run = tmp_path / "run"
    assert main(["benchmark", "--data", str(street_folder), "--family", "questions", "--policy", "question-oracle",
                 "--limit", "3", "--out", str(run), "--no-progress"]) == 0
    server = CannedServer()
    try:
        server.script.extend([reply("4"), reply("5"), reply("no idea")])
        assert main(["judge", str(run), "--backend", "openai", "--model", MODEL, "--backend-param",
                     f"base_url={server.url}", "--backend-param", "json_mode=off",
                     "--backend-param", "max_concurrency=1"]) == 0  # the script's replies in record order
    finally:
        server.close()
    asked = [r for r in server.requests if r["method"] == "POST"]
    assert len(asked) == 3
    judged = [json.loads(x) for x in (run / "judge.jsonl").read_text().splitlines()]
    assert [j["judge"]["score"] for j in judged] == [4, 5, None]
    assert json.loads((run / "judge.json").read_text())["judge_mean"] == 4.5
    assert "mean 4.5 (1-5)" in capsys.readouterr().out
    _, md = write_report(run)
    text = md.read_text()
    assert "LLM judge (CityEQA's 1-5 answer quality)" in text and "| Mean mark (1-5) | 4.50 |" in text


def test_cityseeker_judge_refuses_a_run_without_questions(tiny_city, tmp_path):
    from cityseeker_ros.cli import main

    run = tmp_path / "run"
    assert main(["benchmark", "--data", str(tiny_city), "--policy", "random", "--out", str(run), "--no-progress"]) == 0
    assert main(["judge", str(run), "--backend", "openai", "--model", MODEL]) == 2
