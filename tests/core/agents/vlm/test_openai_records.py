"""What an OpenAI-compatible server's replies and a run's credentials leave in the records.

Replies with lone surrogates (escaped in JSON, as Python's json writes them) and malformed
UTF-8 go through a real `cityseeker benchmark` with the VLM policy, a supervisor and its
SQLite memory, and `cityseeker report` then writes both files. A canary credential in
base_url, extra_body and headers reaches the server and nothing else: no file under --out,
no log line, no terminal output.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from cityseeker_ros.cli import main
from cityseeker_ros.core.agents.vlm.backend import GenerationRequest, Message
from cityseeker_ros.core.agents.vlm.openai_backend import OpenAIBackend
from cityseeker_ros.core.infra.text import is_clean
from tests.core.agents.vlm.canned_server import MODEL, CannedServer

CANARY = "CANARY-5f2e8b-do-not-record"


def completion(content: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


def decision(thoughts: str) -> str:
    return json.dumps({"action": 0, "confidence": 0.9, "thoughts": thoughts}, ensure_ascii=False)


# Replies a server may send: escaped lone surrogates of both kinds and in a broken pair, and raw
# bytes that are not UTF-8 (a truncated multi-byte sequence, 0xff).
BAD_REPLIES: list[Any] = [
    json.dumps(completion(decision("left of \ud800 the cafe"))).encode(),
    json.dumps(completion(decision("a sign reads \udfff\ud83d"))).encode(),
    json.dumps(completion(decision("ok \ud83d\ude00 then \udc80"))).encode(),
    json.dumps(completion("x")).replace('"x"', '"{\\"action\\": 0, \\"thoughts\\": \\"\xff\xe6\x9d bytes\\"}"')
    .encode("latin-1"),
]


@pytest.fixture
def server() -> Iterator[CannedServer]:
    s = CannedServer()
    yield s
    s.close()


def _script_bad_replies(server: CannedServer, n: int) -> None:
    for i in range(n):
        server.script.append({"body": BAD_REPLIES[i % len(BAD_REPLIES)]})


def _all_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _all_strings(k)
            yield from _all_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _all_strings(v)


def test_backend_cleans_replies_at_the_boundary(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _script_bad_replies(server, len(BAD_REPLIES))
    backend = OpenAIBackend(base_url=server.url, model=MODEL, timeout_s=5.0, max_concurrency=1)  # replies in order
    try:
        ask = GenerationRequest(messages=(Message("user", ("hi",)),))
        texts = [g.text for g in backend.generate([ask] * len(BAD_REPLIES))]
    finally:
        backend.close()
    assert all(is_clean(t) for t in texts)
    assert ["\ufffd" in t for t in texts] == [True] * len(BAD_REPLIES)
    assert "ok 😀 then" in texts[2]  # a valid escaped pair stays the character it encodes


def test_a_run_with_broken_replies_writes_records_and_a_report(server, tiny_city, tmp_path, capsys):
    _script_bad_replies(server, 400)
    out = tmp_path / "out"
    argv = ["benchmark", "--data", str(tiny_city), "--policy", "vlm", "--backend", "openai", "--model", MODEL,
            "--backend-param", f"base_url={server.url}", "--backend-param", "retries=0",
            "--param", "mode=single-call", "--strategy", "R3", "--rounds", "2", "--max-steps", "3",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert main(["report", str(out)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err and "wrote" in captured.out

    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 and all(r["end_reason"] != "error" for r in records)
    raws = [raw for r in records for d in r["decisions"] for raw in d["raw"]]
    assert raws and all("\ufffd" in raw for raw in raws)
    assert all(is_clean(s) for r in records for s in _all_strings(r))
    for name in ("report.html", "report.md", "summary.json", "config.json"):
        (out / name).read_bytes().decode("utf-8")  # strictly valid UTF-8
    assert "\ufffd" in (out / "report.html").read_text(encoding="utf-8")
    assert (out / "memory.sqlite").stat().st_size > 0


@pytest.mark.parametrize("with_headers", [False, True])
def test_a_canary_credential_reaches_the_server_and_no_record_or_log(server, tiny_city, tmp_path, capsys,
                                                                     caplog, monkeypatch, with_headers):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    port = server.url.split(":")[2].split("/")[0]
    base_url = f"http://user:{CANARY}@127.0.0.1:{port}/v1"
    # A retried 500 (logged with its URL), then a 400 whose body quotes the key (an episode's error).
    server.script.extend([{"status": 500, "body": {"error": "busy"}},
                          {"status": 400, "body": {"error": f"invalid api_key {CANARY}"}}])
    out = tmp_path / "out"
    argv = ["benchmark", "--data", str(tiny_city), "--policy", "vlm", "--backend", "openai", "--model", MODEL,
            "--backend-param", f"base_url={base_url}", "--backend-param", "retries=1",
            "--backend-param", "backoff_s=0.01",
            "--backend-param", json_param("extra_body", {"api_key": CANARY, "top_k": 3}),
            *(["--backend-param", json_param("headers", {"x-api-key": CANARY, "Authorization": f"Bearer {CANARY}"})]
              if with_headers else []),
            "--param", "mode=single-call", "--strategy", "R3", "--max-steps", "2", "--out", str(out),
            "--no-progress"]
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr("sys.argv", ["cityseeker", *argv])  # the command config.json records
    assert main(argv) == 0
    assert main(["report", str(out)]) == 0

    posts = server.posts()
    assert posts and all(p["body"]["api_key"] == CANARY for p in posts)
    assert all(p["headers"].get("x-api-key") == (CANARY if with_headers else None) for p in posts)
    assert posts[0]["headers"]["Authorization"].startswith("Basic ")  # httpx: the URL's user and password
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["end_reason"] for r in records].count("error") == 1  # the 400 ended one episode
    config = json.loads((out / "config.json").read_text())
    bp = config["policy_params"]["backend_params"]
    assert bp["base_url"] == f"http://***@127.0.0.1:{port}/v1" and bp["extra_body"] == {"api_key": "***", "top_k": 3}
    assert bp.get("headers", {}) == ({"x-api-key": "***", "Authorization": "***"} if with_headers else {})
    assert "user:" not in config["command"] and "--backend-param base_url=http://***@127.0.0.1" in config["command"]

    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"config.json", "summary.json", "episodes.jsonl", "memory.sqlite", "report.html"} <= {p.name for p in files}
    hits = [str(p) for p in files if CANARY.encode() in p.read_bytes()]
    captured = capsys.readouterr()
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert hits == [] and CANARY not in captured.out + captured.err and CANARY not in logs
    assert "retry 1/1" in logs  # the logged lines were there to leak, and did not


def json_param(key: str, value: Any) -> str:
    return f"{key}={json.dumps(value)}"


def test_backend_sends_headers_and_describes_them_masked(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    port = server.url.split(":")[2].split("/")[0]
    backend = OpenAIBackend(base_url=f"http://u:{CANARY}@127.0.0.1:{port}/v1", model=MODEL,
                            headers={"X-Api-Key": CANARY, "X-Team": "nav"}, extra_body={"client_secret": CANARY})
    try:
        assert server.requests[-1]["headers"]["X-Api-Key"] == CANARY  # the start-up check sent it
        desc = json.dumps(backend.describe())
    finally:
        backend.close()
    assert CANARY not in desc
    assert json.loads(desc)["headers"] == {"X-Api-Key": "***", "X-Team": "nav"}


def test_errors_name_the_url_without_its_credentials(monkeypatch):
    from cityseeker_ros.core.infra.errors import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as err:
        OpenAIBackend(base_url=f"ftp://u:{CANARY}@h/v1", model=MODEL)
    assert CANARY not in str(err.value) and "ftp://***@h/v1" in str(err.value)
    backend = OpenAIBackend(base_url=f"http://u:{CANARY}@127.0.0.1:9/v1", model=MODEL, check_on_start=False,
                            retries=0, timeout_s=2)
    try:
        with pytest.raises(Exception) as err:
            backend.generate([GenerationRequest(messages=(Message("user", ("hi",)),))])
    finally:
        backend.close()
    assert CANARY not in str(err.value) and "http://***@127.0.0.1:9/v1/chat/completions" in str(err.value)


def test_a_command_line_with_bytes_that_are_not_utf8_is_recorded_and_reported(tiny_city, tmp_path, monkeypatch):
    """config.json records the command line; Python decodes bytes that are not UTF-8 in argv as
    lone surrogates (surrogateescape), which every JSON and HTML writer used to fail on."""
    out = tmp_path / "out"
    argv = ["benchmark", "--data", str(tiny_city), "--policy", "random", "--out", str(out), "--no-progress"]
    monkeypatch.setattr("sys.argv", ["cityseeker", *argv, "caf\udce9"])
    assert main(argv) == 0
    assert main(["report", str(out)]) == 0
    for p in out.rglob("*"):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".html", ".md"):
            p.read_bytes().decode("utf-8")
    assert "caf\ufffd" in json.loads((out / "config.json").read_text())["command"]
