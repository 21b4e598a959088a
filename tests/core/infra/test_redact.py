"""core/infra/redact.py: credentials are masked wherever a configuration is written or logged, and
nothing else changes."""
from __future__ import annotations

import json
import logging

import pytest

from cityseeker_ros.core.infra.redact import (
    MASK,
    RedactingFilter,
    is_secret_name,
    redact,
    redact_command,
    redact_text,
)

CANARY = "CANARY-7c1d9e-unit"


@pytest.mark.parametrize("name", ["api_key", "apiKey", "APIKey", "x-api-key", "X-Api-Key", "Authorization",
                                  "Proxy-Authorization", "access_token", "client_secret", "password", "passwd",
                                  "OPENAI_API_KEY", "apikey", "Cookie", "auth", "token", "refresh_token"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["model", "max_new_tokens", "max_tokens", "tokenizer", "api_key_env",
                                  "json_schema", "base_url", "monkey", "sort_keys", "keys", "authenticated",
                                  "Content-Type", "temperature", 3, None,
                                  "/tmp/test_credentials_0/question.json", "the api key was rejected"])
def test_names_that_are_not_secret(name):
    assert not is_secret_name(name)


def test_mappings_are_masked_at_any_depth_and_the_rest_is_kept():
    config = {"policy": "vlm", "policy_params": {"backend": "openai", "max_new_tokens": 64, "backend_params": {
        "base_url": f"http://user:{CANARY}@127.0.0.1:8000/v1", "api_key_env": "MY_KEY", "password": 1234,
        "extra_body": {"api_key": CANARY, "top_k": 3, "nested": [{"X-Api-Key": CANARY}]},
        "headers": {"Authorization": f"Bearer {CANARY}", "Accept": "application/json"}}}, "seeds": [0, 1]}
    out = redact(config)
    assert CANARY not in json.dumps(out)
    bp = out["policy_params"]["backend_params"]
    assert bp["base_url"] == f"http://{MASK}@127.0.0.1:8000/v1"
    assert bp["extra_body"] == {"api_key": MASK, "top_k": 3, "nested": [{"X-Api-Key": MASK}]}
    assert bp["headers"] == {"Authorization": MASK, "Accept": "application/json"}
    assert bp["api_key_env"] == "MY_KEY" and bp["password"] == MASK
    assert out["policy_params"]["max_new_tokens"] == 64 and out["seeds"] == [0, 1]
    assert config["policy_params"]["backend_params"]["extra_body"]["api_key"] == CANARY  # a copy: input untouched
    assert redact(out) == out  # idempotent: a masked record masks to itself (resume compares them)
    files = {"/tmp/test_credentials_0/question.json": "65eacb0c78f9898bd41f7b4013ad4537"}
    assert redact({"data_files": files}) == {"data_files": files}  # a path is no setting name


def test_json_carried_in_a_string_is_masked_as_json():
    """ROS parameters carry the policy's settings as a JSON string."""
    text = json.dumps({"backend_params": {"extra_body": {"token": CANARY}, "base_url": f"https://{CANARY}@h/v1"}})
    out = redact({"policy_params": text})
    assert CANARY not in out["policy_params"]
    assert json.loads(out["policy_params"]) == {"backend_params": {"extra_body": {"token": MASK},
                                                                   "base_url": f"https://{MASK}@h/v1"}}


@pytest.mark.parametrize("text, expected", [
    (f"http://u:{CANARY}@host:8000/v1/models: HTTP 500", f"http://{MASK}@host:8000/v1/models: HTTP 500"),
    (f"GET https://h/v1?api_key={CANARY}&model=m", f"GET https://h/v1?api_key={MASK}&model=m"),
    (f"Authorization: Bearer {CANARY}", f"Authorization: Bearer {MASK}"),
    (f"{{'api_key': '{CANARY}', 'model': 'm'}}", f"{{'api_key': '{MASK}', 'model': 'm'}}"),
    (f'{{"x-api-key": "{CANARY}"}}', f'{{"x-api-key": "{MASK}"}}'),
    (f"token={CANARY} max_tokens=5", f"token={MASK} max_tokens=5"),
    ("http://127.0.0.1:9/v1: no answer after 1 attempt(s)", "http://127.0.0.1:9/v1: no answer after 1 attempt(s)"),
    # usage text names metavariables, not credentials
    ("--strategy 'R3:5': expected key=value", "--strategy 'R3:5': expected key=value"),
    (f"api_key=<KEY> token={CANARY}", f"api_key=<KEY> token={MASK}"),
])
def test_free_text(text, expected):
    assert redact_text(text) == expected


def test_a_masked_value_is_masked_wherever_it_is_quoted_later():
    secret = "later-quoted-" + CANARY
    redact({"extra_body": {"api_key": secret}})
    assert redact_text(f"the server said: unknown key {secret}!") == f"the server said: unknown key {MASK}!"


def test_recorded_command_line():
    argv = ["cityseeker", "benchmark", "--backend-param", f"base_url=http://u:{CANARY}@h/v1",
            "--backend-param", f'extra_body={{"api_key": "{CANARY}", "top_k": 3}}',
            "--backend-param", f'headers={{"Authorization": "Bearer {CANARY}"}}',
            "--api-key", CANARY, f"--token={CANARY}", "--param", "mode=single-call", "--limit", "2"]
    out = redact_command(argv)
    assert CANARY not in out
    assert out.startswith("cityseeker benchmark --backend-param base_url=http://***@h/v1 ")
    assert 'extra_body={"api_key": "***", "top_k": 3}' in out and "--api-key *** --token=***" in out
    assert out.endswith("--param mode=single-call --limit 2")


def test_logging_filter_masks_messages_arguments_and_tracebacks():
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Collect()
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("cityseeker_ros.test_redact")
    log.addHandler(handler)
    try:
        log.warning("%s: retry", f"http://u:{CANARY}@h/v1/chat/completions")
        try:
            raise RuntimeError(f"Authorization: Bearer {CANARY}")
        except RuntimeError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    assert len(records) == 2 and not any(CANARY in r for r in records)
    assert "http://***@h/v1" in records[0] and "Bearer ***" in records[1]


@pytest.mark.parametrize("prose", ["the sign-oracle reads basic direction signs", "Token budget exhausted",
                                   "bearer capacity of the road"])
def test_a_scheme_name_in_prose_masks_nothing_then_or_later(prose):
    """Once "basic direction signs" was taken for a Basic credential, every later "direction" in
    the process, in logs and episode errors alike, printed as ***."""
    assert redact_text(prose) == prose
    for later in ("direction", "turn towards the direction of the station", "exhausted", "capacity"):
        assert redact_text(later) == later


@pytest.mark.parametrize("credential", ["dXNlcjpwYXNzd29yZA==", "sk-abc123", "abcd1234", "eyJhbGciOi.J9.x"])
def test_scheme_credentials_are_still_masked(credential):
    assert redact_text(f"Authorization: Basic {credential}") == f"Authorization: Basic {MASK}"
    assert redact_text(f"bearer {credential}") == f"bearer {MASK}"
