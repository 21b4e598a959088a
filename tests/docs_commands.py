"""The shell commands in the README and docs/*.md, as a user would copy them: every line of a
fenced shell block (```bash, ```sh, ```console, or an untagged block whose line starts with a
known program), continuation lines joined. A command that the docs test cannot run here carries
a trailing `# needs: WHAT[, WHAT]` comment naming what it needs from NEEDS."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "docker" / "README.md")
SHELL_BLOCKS = {"bash", "sh", "shell", "console", ""}
# What a command may need that the docs test does not have here; the tag says why it is not run.
NEEDS = {
    "GPU": "a CUDA GPU",
    "model": "VLM weights or a model server",
    "AirSim": "a running AirSim simulator",
    "PX4 SITL": "PX4's software-in-the-loop build (not installed here)",
    "ArduPilot SITL": "ArduPilot's software-in-the-loop build (not installed here)",
    "MAVLink vehicle": "a MAVLink autopilot answering on the connection: SITL, a real one, or the shipped simulator "
                       "started by hand as docs/vehicles.md shows",
    "camera": "a camera and GNSS fixes from a device",
    "ROS 2 install": "a ROS 2 Jazzy install with ros2 (launch, bag); pip-only machines have no ros2 command",
    "running stack": "ROS nodes already running on the same domain (bag record/play, nodes started by hand)",
    "bag": "a bag recorded earlier",
    "Docker": "a Docker engine",
    "network": "the package index or another network service",
    "Ray cluster": "several machines running Ray",
    "CitySeeker data": "the CitySeeker release and panoramas you downloaded",
    "long run": "minutes to hours of computing (the full benchmark, the whole test suite)",
}
# Programs the docs may run, first word of a command (after VAR=value assignments).
PROGRAMS = {"cityseeker", ".venv/bin/cityseeker", "python", "python3", ".venv/bin/python", "make", "pip", "ros2",
            "docker", "ray", "vllm", "source", "eval", "streetview_replay", "decision", "supervisor", "evaluator",
            "graph_localiser", "camera_ingest", "vehicle_bridge", "/tmp/hadolint-venv/bin/pip",
            "/tmp/hadolint-venv/bin/hadolint", "ls", "colcon"}
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
_BOX = re.compile("[\u2500-\u257f\u25b6\u25ba\u25c4]")  # box drawing and arrows
_NEEDS = re.compile(r"#.*?\bneeds:\s*(?P<what>[^#]+)")


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    text: str  # the line as written, continuations joined
    words: tuple[str, ...]  # the shell words, comments dropped
    needs: tuple[str, ...]  # the `# needs:` tags

    @property
    def program(self) -> str:
        words = [w for w in self.words if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
        return words[0] if words else ""

    def args(self) -> list[str]:
        """The words after the program, with `[optional]` parts dropped."""
        words = list(self.words[self.words.index(self.program) + 1:])
        kept, depth = [], 0
        for word in words:
            depth += word.startswith("[")
            if not depth:
                kept.append(word)
            depth -= word.endswith("]")
        return kept


def documented_commands(files=DOCS) -> list[Command]:
    found = []
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for block in _FENCE.finditer(text):
            if block.group("info") not in SHELL_BLOCKS:
                continue
            first = text[:block.start("body")].count("\n") + 1
            if not block.group("info") and _BOX.search(block.group("body")):
                continue  # an untagged block that draws: a diagram, not commands
            lines = [line[len(block.group("indent")):] if line.startswith(block.group("indent")) else line
                     for line in block.group("body").splitlines()]
            i = 0
            while i < len(lines):
                start, joined = i, lines[i].rstrip()
                while joined.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    joined = joined[:-1].rstrip() + " " + lines[i].strip()
                i += 1
                stripped = joined.strip()
                if not stripped or stripped.startswith("#"):
                    continue
                try:
                    words = tuple(shlex.split(stripped, comments=True))
                except ValueError:
                    words = tuple(stripped.split())
                needs = _NEEDS.search(stripped)
                command = Command(f"{path.relative_to(REPO)}:{first + start}", stripped, words,
                                  tuple(t.strip() for t in needs.group("what").split(",")) if needs else ())
                if block.group("info") or command.program in PROGRAMS:  # untagged: known programs only
                    found.append(command)
    return found
