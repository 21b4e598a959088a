"""Each command's extras, and the one check that ends a command missing one before it starts."""
from __future__ import annotations

import pytest

from cityseeker_ros import command_extras
from cityseeker_ros.cli import build_parser, main
from cityseeker_ros.core.infra import extras


@pytest.mark.parametrize("argv, needed", [
    (["ar", "--world", "w", "--policy", "ocr-embed"], ["ros", "ar", "ocr"]),
    (["ar", "--world", "w", "--policy", "random"], ["ros", "ar"]),
    (["benchmark", "--data", "d", "--policy", "random", "--out", "o"], []),
    (["benchmark", "--data", "d", "--policy", "question-ocr", "--out", "o", "--executor", "ray"], ["ocr", "ray"]),
    (["benchmark", "--data", "d", "--policy", "vlm", "--backend", "openai", "--model", "m", "--out", "o"], []),
    (["benchmark", "--data", "d", "--policy", "vlm", "--backend", "transformers", "--out", "o"], ["vlm"]),
    (["ablate", "--data", "d", "--policy", "q=vlm:backend=transformers", "--policy", "ocr-embed", "--out", "o"],
     ["ocr", "vlm"]),
    (["run", "benchmark", "--data", "d", "--policy", "random", "--out", "o"], ["ros"]),
    (["run", "airsim", "--data", "d", "--policy", "random", "--out", "o"], ["ros", "airsim"]),
    (["seek", "x", "--world", "w", "--policy", "random", "--vehicle", "mavlink:udp://127.0.0.1:14540"],
     ["ros", "mavlink"]),
    (["monitor", "--connection", "udp://:14550", "--safety", "s.yaml"], ["mavlink"]),
    (["bag", "eval", "b", "--data", "d"], ["ros"]),
    (["world", "info", "w"], []),
    (["compare", "a", "b"], []),
])
def test_each_command_declares_what_it_needs(argv, needed):
    assert command_extras.required_extras(build_parser().parse_args(argv)) == needed
    assert set(needed) <= set(extras.EXTRAS)


def test_a_missing_extra_ends_the_command_in_one_line_before_it_runs(monkeypatch, capsys):
    monkeypatch.setattr(extras, "installed", lambda module: module != "aiohttp")
    ran = []
    monkeypatch.setitem(__import__("cityseeker_ros.cli", fromlist=["COMMANDS"]).COMMANDS, "ar", ran.append)
    assert main(["ar", "--world", "worlds/monaco", "--policy", "ocr-embed"]) == 2
    out, err = capsys.readouterr()
    assert ran == [] and out == ""
    assert err == ("cityseeker: error: `cityseeker ar` needs the 'ar' extra (the AR page's server), not installed "
                   "here (no aiohttp): make extra-ar (or .venv/bin/pip install -e '.[ar]')\n")
