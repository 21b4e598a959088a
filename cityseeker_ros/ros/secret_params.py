"""Credentials never sit in a ROS parameter: rclpy's parameter services let anyone on the DDS
domain read every parameter (with the network switch on, the whole subnet). A node's parameters
carry the masked value (core/infra/redact.py); the real one travels in the process environment,
which only the same user can read, and `json_parameter` puts it back where the node reads it.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.redact import MASK, redact

SECRETS_ENV = "CITYSEEKER_SECRET_PARAMS"  # {parameter name: its real value}, JSON


def split(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what the parameters may hold: credentials masked, the real values of those that had any)."""
    public, secrets = {}, {}
    for name, value in params.items():
        masked = redact(value)
        if _masks(masked) > _masks(value):
            public[name], secrets[name] = masked, value
        else:
            public[name] = value
    return public, secrets


def _masks(value: Any) -> int:
    return json.dumps(value, ensure_ascii=False).count(MASK)


def environment(secrets: Mapping[str, Any]) -> dict[str, str]:
    """The environment entry that hands `secrets` to a process (none when there are none)."""
    return {SECRETS_ENV: json.dumps(dict(secrets), ensure_ascii=False)} if secrets else {}


def restore(name: str, value: Any, env: Mapping[str, str] = os.environ) -> Any:
    """The real value of parameter `name` when the environment holds one whose masked form is the
    parameter's value; else the value as given (a parameter set by other means stays as set)."""
    text = env.get(SECRETS_ENV)
    if not text:
        return value
    try:
        secrets = json.loads(text)
    except json.JSONDecodeError:
        raise ConfigError(f"${SECRETS_ENV} is not JSON; it is set by `cityseeker run` and the launch "
                          "files, not by hand") from None
    if name in secrets and redact(secrets[name]) == value:
        return secrets[name]
    return value
