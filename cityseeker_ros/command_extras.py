"""What each `cityseeker` command needs of the optional extras (core/infra/extras.py), and the
one check that runs before a command starts anything.

`make demo` installs only the `ocr` and `ros` extras; `cityseeker ar` once failed from there with
an aiohttp traceback from a node it had already started. Now every command declares its extras
(COMMAND_EXTRAS, plus what its policy, backend, executor or vehicle add), and a missing one ends
the command at once with one line naming it and the way to install it."""
from __future__ import annotations

import argparse
from typing import Any, Optional

from cityseeker_ros.core.infra.extras import require

# Each command (its words after `cityseeker`) and the extras it needs whatever its options.
# A command not named needs none (the core install).
COMMAND_EXTRAS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("run",): ("ros",),
    ("run", "airsim"): ("ros", "airsim"),
    ("seek",): ("ros",),
    ("ar",): ("ros", "ar"),
    ("bag",): ("ros",),
    ("monitor",): ("mavlink",),
}
# Policies that read signs with OCR; the VLM-backed ones need `vlm` only with a local backend.
POLICY_EXTRAS: dict[str, tuple[str, ...]] = {"ocr-embed": ("ocr",), "question-ocr": ("ocr",)}
LOCAL_BACKEND = "transformers"
VEHICLE_EXTRAS: dict[str, tuple[str, ...]] = {"mavlink": ("mavlink",), "airsim": ("airsim",)}


def command_words(args: argparse.Namespace) -> tuple[str, ...]:
    """The command and its subcommand: ("run", "benchmark"), ("ar",)."""
    words = [args.command]
    for attribute in ("run_command", "bag_command", "world_command"):
        value = getattr(args, attribute, None)
        if value:
            words.append(value)
    return tuple(words)


def required_extras(args: argparse.Namespace) -> list[str]:
    """The extras the parsed command needs, in setup.py's words, each once."""
    words = command_words(args)
    needed: list[str] = list(COMMAND_EXTRAS.get(words[:1], ())) + list(COMMAND_EXTRAS.get(words[:2], ()))
    policies = [getattr(args, "policy", None)] + [_policy_name(p) for p in getattr(args, "policies", None) or []]
    for policy in filter(None, policies):
        needed += POLICY_EXTRAS.get(policy, ())
    specs = [str(p) for p in getattr(args, "policies", None) or []]
    if _backend(args) == LOCAL_BACKEND or any(f"backend={LOCAL_BACKEND}" in spec for spec in specs):
        needed.append("vlm")
    if getattr(args, "executor", None) == "ray":
        needed.append("ray")
    link = getattr(args, "link", None) or str(getattr(args, "vehicle", None) or "").partition(":")[0]
    needed += VEHICLE_EXTRAS.get(link, ())
    if getattr(args, "console", False):  # the operator console's web server (aiohttp)
        needed.append("ar")
    return list(dict.fromkeys(needed))


def check_extras(args: argparse.Namespace) -> None:
    """Raise MissingExtra, in one line, for the first extra the command needs that is missing."""
    for extra in required_extras(args):
        require(extra, f"`cityseeker {' '.join(command_words(args))}`")


def _policy_name(entry: Any) -> Optional[str]:
    """An ablation's policy: [LABEL=]NAME[:K=V,...] or a mapping {policy: NAME}."""
    if isinstance(entry, dict):
        return entry.get("policy")
    name = str(entry).split(":", 1)[0]
    return name.split("=", 1)[1] if "=" in name else name


def _backend(args: argparse.Namespace) -> Optional[str]:
    if getattr(args, "backend", None):
        return args.backend
    return dict(getattr(args, "param", None) or []).get("backend")
