"""The `cityseeker` command as a user runs it: options, config files and one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cityseeker_ros.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_benchmark_prints_summary_and_writes_files(tiny_city, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["benchmark", "--data", str(tiny_city), "--policy", "oracle", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "policy oracle on tinytown: 2 episodes x 1 seed(s)" in text
    assert "tce" in text and "solvable ceiling: 100.0%" in text
    assert (out / "summary.json").is_file() and (out / "episodes.jsonl").is_file()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").is_file() and (out / "report.md").is_file()


def test_config_file_with_flag_override(tiny_city, tmp_path):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(f"data: {tiny_city}\npolicy: random\nseeds: 2\nmax-steps: 4\nout: {tmp_path / 'a'}\n")
    assert main(["benchmark", "--config", str(cfg), "--no-progress", "--seeds", "3"]) == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["config"]["seeds"] == [0, 1, 2] and summary["config"]["max_steps"] == 4
    assert summary["overall"]["as"] == 4.0


def test_shipped_config_is_valid(tiny_city, tmp_path):
    from cityseeker_ros.cli import load_options

    options = load_options(REPO / "config" / "benchmark.yaml")
    assert options["policy"] == "random" and options["seeds"] == 20 and options["max_steps"] == 35


@pytest.mark.parametrize("argv, message", [
    (["benchmark", "--data", "{city}", "--policy", "gpt", "--out", "{tmp}/x"], "unknown policy 'gpt'; known:"),
    (["benchmark", "--data", "{tmp}/missing", "--policy", "random", "--out", "{tmp}/x"], "no such directory"),
    (["benchmark", "--data", "{city}", "--out", "{tmp}/x"], "--policy is required"),
    (["run", "camera", "--data", "{city}", "--out", "{tmp}/x"], "--policy is required"),
    (["run", "airsim", "--data", "{city}", "--anchor", "{{}}", "--out", "{tmp}/x"], "--policy is required"),
    (["benchmark", "--data", "{city}", "--policy", "random", "--out", "{tmp}/x", "--seeds", "0"], "--seeds must be"),
    (["benchmark", "--config", "{tmp}/nope.yaml"], "nope.yaml: no such file"),
    (["report", "{tmp}"], "no summary.json here"),
    (["validate", "{tmp}/missing"], "no such directory"),
])
def test_bad_input_gives_one_line_error_not_traceback(tiny_city, tmp_path, argv, message):
    argv = [a.format(city=tiny_city, tmp=tmp_path) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", *argv], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and message in proc.stderr
    assert proc.stderr.startswith("cityseeker: error:")


def test_bad_config_keys_and_types(tiny_city, tmp_path, capsys):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("polcy: random\n")
    assert main(["benchmark", "--config", str(cfg)]) == 2
    assert "unknown option(s) polcy; known: data, dataset, policy" in capsys.readouterr().err
    cfg.write_text(f"data: {tiny_city}\npolicy: random\nout: {tmp_path / 'o'}\nmax-steps: many\n")
    assert main(["benchmark", "--config", str(cfg)]) == 2
    assert "--max-steps must be an integer, got 'many'" in capsys.readouterr().err
    cfg.write_text("[unclosed\n")
    assert main(["benchmark", "--config", str(cfg)]) == 2
    assert "invalid YAML" in capsys.readouterr().err


def _hk6_with(tmp_path, hk6, edit) -> Path:
    """HongKong_6 with `edit` applied to its episodes, in tmp_path (the graph is linked, not copied)."""
    city = tmp_path / "HongKong_6"
    city.mkdir()
    (city / "connections.json").symlink_to(hk6 / "connections.json")
    episodes = json.loads((hk6 / "question.json").read_text(encoding="utf-8"))
    edit(episodes)
    (city / "question.json").write_text(json.dumps(episodes), encoding="utf-8")
    return city


@pytest.mark.parametrize("edit, where", [
    (lambda q: q[5].__setitem__("question_idx", str(q[3]["question_idx"])), "record 5: field 'question_idx'"),
    (lambda q: q.clear(), "no episodes: the list is empty"),
])
def test_benchmark_refuses_data_that_would_lose_records_and_writes_nothing(tmp_path, hk6, edit, where):
    """Before, ids 3 and "3" ran as one episode: 176 of 177 records, exit 0; an empty file ran 0."""
    data, out = _hk6_with(tmp_path, hk6, edit), tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", "benchmark", "--data", str(data), "--policy",
                           "random", "--out", str(out), "--no-progress"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("cityseeker: error:") and len(proc.stderr.strip().splitlines()) == 1
    assert f"{data / 'question.json'}: {where}" in proc.stderr
    assert not out.exists()
    assert main(["validate", str(data)]) == 1


@pytest.fixture
def dressed_tiny(tiny_city, tmp_path) -> Path:
    """The tiny city dressed with synthetic facades: a world folder `world render` can draw."""
    world = tmp_path / "world"
    assert main(["world", "dress", str(tiny_city), "--out", str(world)]) == 0
    return world


@pytest.mark.parametrize("name, kind", [("v.png", "PNG"), ("v.jpg", "JPEG"), ("v.JPEG", "JPEG")])
def test_world_render_writes_the_format_its_out_suffix_names(dressed_tiny, tmp_path, name, kind):
    from PIL import Image

    out = tmp_path / name
    assert main(["world", "render", str(dressed_tiny), "--node", "00000001", "--size", "64x48", "--out", str(out)]) == 0
    with Image.open(out) as image:
        assert image.format == kind and image.size == (64, 48)


@pytest.mark.parametrize("name", ["v.gif", "v"])
def test_world_render_refuses_an_unknown_image_type_naming_out(dressed_tiny, tmp_path, name):
    out = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", "world", "render", str(dressed_tiny), "--node",
                           "00000001", "--out", str(out)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"cityseeker: error: --out {out}: unknown image type")
    assert ".png, .jpg, .jpeg" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_unknown_render_setting_lists_the_valid_ones(dressed_tiny, tmp_path, capsys):
    from dataclasses import fields

    from cityseeker_ros.core.render import RenderSettings

    known = ", ".join(f.name for f in fields(RenderSettings))
    argv = ["world", "render", str(dressed_tiny), "--node", "00000001", "--set", "blurr=1", "--out",
            str(tmp_path / "v.png")]
    assert main(argv) == 2
    assert f"--set: unknown render setting(s) blurr; known: {known}" in capsys.readouterr().err
    assert not (tmp_path / "v.png").exists()
    # The same settings reach the rendered view source through --view-param.
    argv = ["benchmark", "--data", str(dressed_tiny), "--policy", "random", "--views", "rendered", "--view-param",
            "blurr=1", "--out", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 2
    assert f"view source 'rendered': unknown render setting(s) blurr; known: {known}" in capsys.readouterr().err


def test_image_policy_without_views_warns_once_naming_the_flag(tiny_city, tmp_path):
    """Before, `--policy ocr-embed` with no --views ran every episode blind without a word."""
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", "benchmark", "--data", str(tiny_city), "--policy",
                           "ocr-embed", "--max-steps", "2", "--out", str(tmp_path / "run"), "--no-progress"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1 and warnings[0].startswith("cityseeker: warning: policy 'ocr-embed' reads images")
    assert "add --views rendered" in warnings[0]


def test_blind_warning_only_for_image_policies_without_views(tiny_city, tmp_path, capsys):
    from cityseeker_ros.cli import warn_if_blind
    from cityseeker_ros.core.agents.policies import POLICIES

    for name in POLICIES.names():
        warn_if_blind(name, None)
        assert ("--views" in capsys.readouterr().err) == POLICIES.get(name).uses_images, name
        warn_if_blind(name, "rendered")
        assert capsys.readouterr().err == "", name
    assert main(["benchmark", "--data", str(tiny_city), "--policy", "random", "--out", str(tmp_path / "r"),
                 "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err


def _documented_commands() -> list[tuple[str, list[str]]]:
    """Every `cityseeker ...` command in README.md and docs/*.md (tests/docs_commands.py finds
    them; `[optional]` parts dropped), as (file:line, argv)."""
    from tests.docs_commands import documented_commands

    return [(c.where, c.args()) for c in documented_commands() if c.program.endswith("cityseeker")]


@pytest.mark.parametrize("where, argv", _documented_commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_documented_commands_parse_with_their_required_options(where, argv):
    """The README's `run camera` and `run airsim` lacked --policy and failed as written; every documented
    command must at least parse, carry its required options, name a known view source, and give an
    image policy its images (run camera / airsim take theirs from the camera)."""
    from cityseeker_ros.cli import benchmark_config, build_parser
    from cityseeker_ros.core.agents.policies import POLICIES
    from cityseeker_ros.core.evaluation.ablation import policies_from
    from cityseeker_ros.core.sensing.views import VIEW_SOURCES

    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"{where}: `cityseeker {' '.join(argv)}` does not parse")
    if args.command == "benchmark" or (args.command == "run" and args.run_command != "bag"):
        config, _ = benchmark_config(args)
        policies, views = [config.policy], config.views
        own_camera = args.command == "run" and args.run_command in ("camera", "airsim")
    elif args.command == "ablate":
        policies, views, own_camera = [p["policy"] for p in policies_from(args.policies)], args.views, False
    else:
        return
    assert views is None or views in VIEW_SOURCES, f"{where}: unknown view source {views!r}"
    blind = [p for p in policies if POLICIES.get(p).uses_images and not views and not own_camera]
    assert not blind, f"{where}: image policy {blind} without --views runs blind"


def _parsers(parser, path=("cityseeker",)):
    """`parser` and every subcommand's parser under it, with the command words that reach each."""
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_option_has_help_text():
    import argparse

    from cityseeker_ros.cli import build_parser

    missing = [f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}"
               for path, parser in _parsers(build_parser()) for action in parser._actions
               if not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))
               and not (action.help and action.help.strip()) and action.help != argparse.SUPPRESS]
    assert not missing, "options without help text:\n" + "\n".join(missing)


def test_compare_prints_runs_side_by_side_and_refuses_other_episodes(tiny_city, tmp_path, capsys):
    for name, extra in (("a", ["--policy", "oracle"]), ("b", ["--policy", "random", "--seeds", "2"]),
                        ("c", ["--policy", "random", "--per-category", "1", "--limit", "1"])):
        out = str(tmp_path / name)
        assert main(["benchmark", "--data", str(tiny_city), *extra, "--out", out, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp.md")]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| oracle") or line.startswith("| random")]
    assert len(rows) == 2 and "| 2 x 1 |" in rows[0] and "| 2 x 2 |" in rows[1] and " ± " in rows[1]
    assert (tmp_path / "cmp.md").read_text() in text
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", "compare", str(tmp_path / "a"), str(tmp_path / "c")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("cityseeker: error: compare:")
    assert "ran different episodes" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
