"""One parameter written as KEY=VALUE text (`--param`, `--policy NAME:K=V,...`, `--strategy
NAME:K=V,...`), read in one place so that every form types its values alike: JSON where the
value parses as JSON (numbers, true/false, null, lists, objects), else the text itself."""
from __future__ import annotations

import argparse
import json
from typing import Any

from cityseeker_ros.core.infra.errors import ConfigError


def parse_key_value(text: str, *, where: str = "", metavar: str = "KEY=VALUE",
                    verbatim_key: bool = False) -> tuple[str, Any]:
    """The key and typed value of `text`, split at its first '=' (so a value may hold more).

    The key is stripped and must not be empty, unless `verbatim_key`: then it is kept exactly
    as written, even empty (the command line's options, one shell word each). Text without '='
    (or with an empty key) raises ConfigError "WHERE: expected METAVAR, got 'TEXT'", so each
    caller names its own option and spelling.
    """
    key, sep, value = text.partition("=")
    if not verbatim_key:
        key = key.strip()
    if not sep or not (key or verbatim_key):
        prefix = f"{where}: " if where else ""
        raise ConfigError(f"{prefix}expected {metavar}, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def key_value_argument(text: str) -> tuple[str, Any]:
    """parse_key_value as the argparse `type=` of repeatable KEY=VALUE options: argparse shows
    an ArgumentTypeError's own message as the usage error; a ConfigError would escape parsing."""
    try:
        return parse_key_value(text, verbatim_key=True)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
