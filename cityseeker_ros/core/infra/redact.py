"""Credentials never reach a record or a log: one masking function for every writer of a
configuration (config.json, summary.json, ablation.json, the recorded command, node
parameters and logs).

A run's settings are written next to its results so that it can be reproduced and compared,
and results are shared; an API key in `base_url` (http://user:KEY@host), `extra_body` or a
header must not travel with them. What is masked:

- the value of any mapping key whose name has a word meaning a credential (key, token,
  secret, password, authorization, cookie...: `api_key`, `x-api-key`, `Authorization`,
  `access_token`, `client_secret`), at any depth; keys that end in `_env` name an
  environment variable that holds the secret and are kept;
- the user and password of a URL, secret-named query parameters, `Bearer`/`Basic`
  credentials, and `name=value` / `name: value` pairs with a secret name in free text;
- in a command line, the value after a secret-named flag and the JSON values of KEY=VALUE
  arguments, masked as mappings.

Every value masked is remembered for the life of the process (at least MIN_REMEMBERED
characters), so that a later message quoting it verbatim (a server's error, a traceback)
is masked too.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Sequence
from typing import Any, Optional

MASK = "***"
MIN_REMEMBERED = 8  # shorter values would mask ordinary words in every later message

# Words that make a name secret, and run-together forms ("apikey", "accesstoken").
_SECRET_WORDS = frozenset({"key", "token", "secret", "password", "passwd", "pwd", "passphrase", "authorization",
                           "auth", "credential", "credentials", "cookie", "signature", "bearer"})
_JOINED = re.compile(r"^(api|access|auth|secret|private|session|refresh|id|client|app|bearer|x)"
                     r"(key|token|secret|password)s?$")
_NAME = re.compile(r"-{0,2}[A-Za-z_][\w.-]{0,63}")
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#'\"]+@")
_QUERY = re.compile(r"([?&;])([^=&#\s]+)=([^&#\s'\"]*)")
_SCHEMES = ("bearer", "basic", "token")  # "Authorization: Bearer ***" keeps its scheme
_SCHEME_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{4,}")
# "basic direction signs", "Token budget": a plain word after a scheme's name is prose, not a credential.
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*")
_QUOTED_PAIR = re.compile(r"([\"'])([^\"'\n]{1,64})\1(\s*:\s*)([\"'])((?:\\.|(?!\4).)*)\4")
_PAIR = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]{0,63})(\s*[:=]\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&'\"{}\[\]()]+)")

# Usage text names its metavariables ("expected key=value", "--api-key <KEY>"): no credential.
_PLACEHOLDER = re.compile(r"(?i)value|<[^<>\s]*>")

_remembered: set[str] = set()
_lock = threading.Lock()


def is_secret_name(name: object) -> bool:
    """Whether a setting, header, flag or field of this name holds a credential."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # a path or a sentence is no setting name
        return False
    words = [w.lower() for w in _WORD.findall(name)]
    if not words or words[-1] == "env":  # api_key_env names a variable, it holds no secret
        return False
    return any(w in _SECRET_WORDS or _JOINED.match(w) for w in words)


def _maskable(value: object) -> bool:
    return value is not None and not isinstance(value, bool) and value != "" and value != MASK


def remember(value: object) -> None:
    """Mask this value wherever a later message quotes it (strings and numbers, recursively)."""
    if isinstance(value, dict):
        for v in value.values():
            remember(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            remember(v)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value)
        if len(text) >= MIN_REMEMBERED and text != MASK:
            with _lock:
                _remembered.add(text)


def redact(value: Any) -> Any:
    """A copy of a JSON-like value (mappings, lists, strings, scalars) with every credential
    masked; strings that hold a JSON object or array are masked as one."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if is_secret_name(k) and _maskable(v):
                remember(v)
                out[k] = MASK
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, (list, tuple)):
        items = [redact(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, str):
        if value.lstrip().startswith(("{", "[")):  # JSON carried in a string (ROS parameters)
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, (dict, list)):
                return json.dumps(redact(parsed), ensure_ascii=False)
        return redact_text(value)
    return value


def _mask_group(match: re.Match[str], name_group: int, value_group: int) -> str:
    value = match.group(value_group)
    if (not is_secret_name(match.group(name_group)) or value in ("", MASK) or value.lower() in _SCHEMES
            or _PLACEHOLDER.fullmatch(value)):
        return match.group(0)
    remember(value)
    start, end = match.span(value_group)
    base = match.start(0)
    text = match.group(0)
    return text[: start - base] + MASK + text[end - base:]


def redact_text(text: str) -> str:
    """Free text (a URL, a log line, an error message) with credentials masked."""
    if not text:
        return text

    def userinfo(m: re.Match[str]) -> str:
        user, colon, password = m.group(0)[len(m.group(1)):-1].partition(":")
        if user + colon + password != MASK:
            remember(password if colon else user)  # a lone user part is a token (https://TOKEN@host)
        return f"{m.group(1)}{MASK}@"

    def scheme(m: re.Match[str]) -> str:
        token = m.group(0)[m.end(2) - m.start(0):]
        if token == MASK or _PLAIN_WORD.fullmatch(token):
            return m.group(0)
        remember(token)
        return f"{m.group(1)}{m.group(2)}{MASK}"

    text = _URL_USERINFO.sub(userinfo, text)
    text = _QUERY.sub(lambda m: _mask_group(m, 2, 3), text)
    text = _SCHEME_CREDENTIAL.sub(scheme, text)
    text = _QUOTED_PAIR.sub(lambda m: _mask_group(m, 2, 5), text)
    text = _PAIR.sub(lambda m: _mask_group(m, 1, 3), text)
    with _lock:
        known = sorted(_remembered, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_command(argv: Sequence[str]) -> str:
    """A command line as recorded: secret flag values and secret KEY=VALUE parameters masked,
    JSON values masked as mappings (`--backend-param extra_body={"api_key": ...}`)."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next and not arg.startswith("--"):
            remember(arg)
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        if arg.startswith("--") and "=" not in arg:
            mask_next = is_secret_name(arg[2:])
            out.append(arg)
        elif "=" in arg:
            out.append(_redact_assignment(arg))
        else:
            out.append(redact_text(arg))
    return " ".join(out)


def _redact_assignment(arg: str) -> str:
    name, _, value = arg.partition("=")
    if is_secret_name(name.lstrip("-")):
        remember(value)
        return f"{name}={MASK}"
    try:
        parsed = json.loads(value)
    except ValueError:
        return redact_text(arg)
    if isinstance(parsed, (dict, list)):
        return f"{redact_text(name)}={json.dumps(redact(parsed), ensure_ascii=False)}"
    return redact_text(arg)


class RedactingFilter(logging.Filter):
    """A handler filter that masks credentials in every message and traceback it passes on,
    whichever library logged it (httpx logs request URLs, user and password included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


def redact_logging(logger: Optional[logging.Logger] = None) -> None:
    """Put a RedactingFilter on every handler of `logger` (default: the root), once."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
