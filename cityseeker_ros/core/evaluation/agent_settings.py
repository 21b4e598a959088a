"""What config.json says about a run's agent: its prompt version and every switch it ran with.

Two runs of one agent are comparable only when the record says what differed: a prompt
revision, a reflection switch left at its default. `switches` resolves the policy's keyword
parameters (the defaults of its constructors, then the run's `policy_params`), so a default is
recorded as well as a value given; `prompt` names the prompt version (the vlm policy's profile
record, a seed agent's `version`). Both read the policy class only: no model is loaded.

Hooks an agent may provide (classmethods), read with getattr so agents without them still get
a record: `prompt_record(params, family) -> dict | None` (its own prompt record) and
`run_switches(params) -> dict` (its switches, when they are not its constructor's keywords).
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Optional

from cityseeker_ros.core.agents.policies import POLICIES
from cityseeker_ros.core.tasks.episode import DEFAULT_FAMILY

# Constructor parameters that are objects, not settings (an injected backend, in tests).
_NOT_SETTINGS = frozenset({"self", "backend_instance"})
# Switches that say where the model is, not how the agent works: rows are not named by them.
CONNECTION = frozenset({"backend", "model", "backend_params"})


def _json_value(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json_value(v) for v in value)
    return isinstance(value, Mapping) and all(isinstance(k, str) and _json_value(v) for k, v in value.items())


def constructor_defaults(cls: type) -> dict[str, Any]:
    """Keyword parameters with defaults over the class's constructors (the most derived first)."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            parameters = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in parameters:
            if (p.name not in _NOT_SETTINGS and p.name not in out and p.default is not inspect.Parameter.empty
                    and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and _json_value(p.default)):
                out[p.name] = p.default
    return out


def switches(policy: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every switch of the run's policy: its defaults with the run's parameters over them."""
    cls = POLICIES.get(policy)
    hook = getattr(cls, "run_switches", None)
    if callable(hook):
        return dict(hook(dict(params)))
    resolved = constructor_defaults(cls)
    resolved.update({k: v for k, v in params.items() if k not in _NOT_SETTINGS})
    return dict(sorted(resolved.items()))


def prompt(policy: str, params: Mapping[str, Any], family: str = DEFAULT_FAMILY) -> Optional[dict[str, Any]]:
    """The run's prompt record: the vlm policy's profile, version and template hash; a seed
    agent's name and prompt version; None for a policy that sends no prompts."""
    from cityseeker_ros.core.agents.vlm.prompt_profiles import prompt_record

    record = prompt_record(policy, dict(params), family)
    if record is not None:
        return record
    cls = POLICIES.get(policy)
    hook = getattr(cls, "prompt_record", None)
    if callable(hook):
        return hook(dict(params), family)
    version = getattr(cls, "version", None)
    if isinstance(version, str) and version:
        return {"agent": str(getattr(cls, "agent", "") or policy), "version": version}
    return None
