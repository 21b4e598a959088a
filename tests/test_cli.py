"""The `cityseeker` command as a user runs it: options, config files and one-line errors."""
from __future__ import annotations

import json
import re
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
    (["run", "vehicle", "--data", "{city}", "--link", "airsim", "--out", "{tmp}/x"], "--policy is required"),
    (["benchmark", "--data", "{city}", "--policy", "random", "--out", "{tmp}/x", "--seeds", "0"], "--seeds must be"),
    (["benchmark", "--config", "{tmp}/nope.yaml"], "nope.yaml: no such file"),
    (["report", "{tmp}"], "no summary.json here"),
    (["validate", "{tmp}/missing"], "no such directory"),
    (["benchmark", "--data", "{city}", "--family", "quests", "--policy", "random", "--out", "{tmp}/x"],
     "unknown task family 'quests'; known: landmarks, needs, questions"),
    (["benchmark", "--data", "{city}", "--family", "landmarks", "--policy", "random", "--out", "{tmp}/x"],
     "holds needs episodes only, not landmarks"),
    (["validate", "{city}", "--family", "quests"], "unknown task family 'quests'"),
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
    assert "unknown option(s) polcy; known: data, dataset, family, policy" in capsys.readouterr().err
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
        own_camera = args.command == "run" and args.run_command in ("camera", "vehicle", "airsim")
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
    assert "| 1 | oracle [ORACLE] | 2 x 1 |" in text and "| 2 | random | 2 x 2 |" in text
    assert re.search(r"^\| 2 \| random \| 2 x 2 \| \d+\.\d \[\d+\.\d, \d+\.\d\] \| [+-]\d+\.\d \[", text, re.M)
    assert re.search(r"^\| TCE \(%\) \| [\d.]+ \| [\d.]+ ± [\d.]+ \|$", text, re.M)  # the measures, per run
    assert all(len(line) <= 100 for line in text.splitlines())
    assert (tmp_path / "cmp.md").read_text() in text
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", "compare", str(tmp_path / "a"), str(tmp_path / "c")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("cityseeker: error: compare:")
    assert "ran different episodes" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# -- cityseeker seek: its own options, and every check before any process starts -------------------------

SEEK_OPTIONS = {"-h", "--help", "--world", "--policy", "--param", "--backend", "--model", "--backend-param",
                "--max-steps", "--start", "--source", "--source-param", "--walker", "--fix-topic", "--safety-config",
                "--decision-timeout-s", "--preempt", "--result", "--timeout", "--domain-id", "--out", "--vehicle",
                "--link-param", "--estop-action", "--family", "--frames", "--console", "--console-port"}
REFUSED_AT_ONCE_S = 1.0  # a goal the server would reject: no file is read
REFUSED_WITHIN_S = 2.0  # a configuration error: the world is loaded (Monaco: about 0.6 s), the policy made


def _seek_parser():
    from cityseeker_ros.cli import build_parser

    return next(parser for path, parser in _parsers(build_parser()) if path[1:] == ("seek",))


def test_seek_has_its_own_options_and_no_benchmark_ones():
    """Before, `seek --help` listed --seeds, --limit, --workers, --rounds, --memory... and called
    --data and --out required; --source defaulted to video while every documented use needs replay."""
    parser = _seek_parser()
    options = {o for action in parser._actions for o in action.option_strings}
    assert options == SEEK_OPTIONS, sorted(options ^ SEEK_OPTIONS)
    helps = {o: action.help for action in parser._actions for o in action.option_strings}
    assert "required" not in helps["--out"] and "temporary" in helps["--out"]
    assert "(default replay)" in helps["--source"]
    args = parser.parse_args(["I am thirsty", "--world", "w", "--policy", "random"])
    assert args.max_steps == 0 and args.walker is None and args.start is None and args.out is None


def test_seek_max_steps_means_one_thing_in_the_help_and_in_docs_seek_md():
    """The docs said 0 means the run's budget while the command refused 0."""
    help_text = next(a.help for a in _seek_parser()._actions if "--max-steps" in a.option_strings)
    assert help_text == ("the goal's step budget, 1 to 1000 steps; 0 (the default): the family's, 35 steps for a "
                         "need or a landmark goal, 50 for a question")
    doc = " ".join((REPO / "docs" / "seek.md").read_text(encoding="utf-8").split())
    assert f"`--max-steps N`: {help_text}" in doc


@pytest.fixture
def no_process(monkeypatch, tmp_path) -> Path:
    """Fails the test on any process started; temporary folders go to the returned folder."""
    import tempfile

    def started(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", started)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _timed_main(argv: list[str]) -> tuple[int, float]:
    import time

    began = time.monotonic()
    code = main(argv)
    return code, time.monotonic() - began


@pytest.mark.parametrize("need, budget", [("", "0"), ("   \t", "0"), ("x" * 300, "0"), ("I am thirsty", "1001"),
                                          ("I am thirsty", "-1")], ids=["empty", "blank", "300", "1001", "-1"])
def test_seek_refuses_a_bad_need_or_budget_at_once_with_the_servers_answer(monaco_dir, tmp_path, no_process, capsys,
                                                                         need, budget):
    """Before, five nodes started first: the answer came after 7-15 s, a temporary folder stayed
    behind, and a budget of 1001 was called 'the run's 1001'. Now the server's own check
    (core.loop.seek.check_request) answers before anything starts, with its code and words."""
    from cityseeker_ros.core.loop.seek import SeekRequest, check_request

    result = tmp_path / "result.json"
    code, took = _timed_main(["seek", need, "--world", str(monaco_dir), "--policy", "ocr-embed", "--max-steps", budget,
                              "--result", str(result)])
    out, err = capsys.readouterr()
    expected = check_request(SeekRequest(need, int(budget)), 35)
    print(f"\nrefused in {1000 * took:.0f} ms: {out.strip()}")
    assert code == 3 and err == "" and out == f"result: rejected ({expected.code}): {expected.reason}\n"
    assert took < REFUSED_AT_ONCE_S and list(no_process.iterdir()) == []
    assert "the run's 35" in out or expected.code == "bad_need"
    record = json.loads(result.read_text())
    assert (record["status"], record["outcome"], record["code"], record["reason"]) == (
        "aborted", "rejected", expected.code, expected.reason)  # as the server's answer reads
    assert record["steps"] == 0 and record["path"] == [] and record["feedback"] == []


def _safety_file(tmp_path: Path) -> Path:
    bad = tmp_path / "safety.yaml"
    bad.write_text("safety:\n  geofence:\n    circle:\n      center: [43.7, 7.4]\n      radius_m: -5\n")
    return bad


def test_seek_refuses_an_unknown_goal_family_at_once_naming_the_known(monaco_dir, no_process, capsys):
    """An unknown family is a bad option, exit 2 like an unknown policy (it was the server's
    bad_family rejection, exit 3); the server still answers bad_family to other clients."""
    code, took = _timed_main(["seek", "what is the cafe called?", "--world", str(monaco_dir), "--policy", "ocr-embed",
                              "--family", "quests"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and took < REFUSED_AT_ONCE_S and list(no_process.iterdir()) == []
    assert err == ("cityseeker: error: --family quests: unknown task family 'quests'; known: landmarks, needs, "
                   "questions\n")
    doc = (REPO / "docs" / "seek.md").read_text(encoding="utf-8")
    assert "`bad_family`" in doc and "unknown task family" in doc


def test_a_question_seek_counts_the_questions_budget_and_a_need_the_run_s(monaco_dir):
    """docs/tasks.md gives a question 50 steps; a question Seek ran with 35. One source:
    TaskFamily.goal_budget (the questions family's QuestionSettings.budget)."""
    from cityseeker_ros.cli import seek_run_config
    from cityseeker_ros.core.tasks.family import get_family
    from cityseeker_ros.core.tasks.questions.generator import QuestionSettings
    from cityseeker_ros.ros.launcher import plan_seek

    def budget(family: str, max_steps: int = 0) -> int:
        args = _seek_parser().parse_args(["what is it?", "--world", str(monaco_dir), "--policy", "question-random",
                                          "--family", family])
        planned = plan_seek(seek_run_config(args), args.need, max_steps=max_steps, family=family)
        counted = {n.params["max_steps"] for n in planned.nodes if "max_steps" in n.params}
        assert counted == {planned.run.benchmark.max_steps}, counted
        return planned.run.benchmark.max_steps

    assert budget("questions") == QuestionSettings().budget == get_family("questions").goal_budget(35) == 50
    assert budget("needs") == 35 and budget("questions", max_steps=7) == 7
    tasks_md = (REPO / "docs" / "tasks.md").read_text(encoding="utf-8")
    assert "| `questions` |" in tasks_md and "| 50 steps (CityEQA's)" in tasks_md


def test_ctrl_c_ends_a_seek_with_130_as_seek_md_says(monkeypatch, capsys):
    """The code returned 130 while docs/seek.md said 1: 130, the shell's convention, in both."""
    from cityseeker_ros.ros import launcher

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(launcher, "run_seek", interrupted)
    monkeypatch.setattr("cityseeker_ros.cli.check_extras", lambda args: None)
    assert main(["seek", "I am thirsty", "--world", "w", "--policy", "random"]) == 130
    assert "interrupted" in capsys.readouterr().err
    doc = " ".join((REPO / "docs" / "seek.md").read_text(encoding="utf-8").split())
    assert "| 130 | interrupted (Ctrl-C)" in doc
    help_text = " ".join(_seek_parser().description.split())
    assert "130 interrupted by Ctrl-C" in help_text


def test_seek_with_an_unreachable_model_server_fails_at_once_with_the_cause_first(monaco_dir, no_process, capsys):
    """It took 32 s and printed 'rejected (not_ready)' before the cause: the server is now asked
    once before any node starts."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    code, took = _timed_main(["seek", "I am thirsty", "--world", str(monaco_dir), "--policy", "vlm", "--backend",
                              "openai", "--model", "m", "--backend-param", f"base_url={url}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"cityseeker: error: cannot reach the server at {url}: connection refused"), err
    assert "not_ready" not in err and took < 5.0 and list(no_process.iterdir()) == []


@pytest.mark.parametrize("extra, message", [
    (["--world", "{tmp}/nope"], "--world {tmp}/nope: no such folder"),
    (["--world", "{tmp}"], "--world {tmp}: no city folder"),
    (["--world", "{tmp}/safety.yaml"], "--world {tmp}/safety.yaml: a file; a world is a folder"),
    (["--policy", "gpt"], "unknown policy 'gpt'; known: "),
    (["--policy", "oracle"], "policy 'oracle' reads the task's target, and a Seek has none"),
    (["--param", "nope=1"], "policy 'ocr-embed': bad parameters ['nope']: no parameter 'nope'; it takes: stop_score"),
    (["--param", "det_max_sid=320"], "no parameter 'det_max_sid' (did you mean det_max_side?); it takes: "),
    (["--source", "cam"], "unknown frame source 'cam'; known: "),
    (["--source-param", "views=nope"], "--source replay: unknown view source 'nope'"),
    (["--safety-config", "{tmp}/safety.yaml"], "safety_config {tmp}/safety.yaml: safety.geofence.circle.radius_m"),
    (["--start", "n1117"], "--start n1117: no node 'n1117' in the street graph of monaco; did you mean n01117"),
    (["--start", "x9"], "--start x9: no node 'x9' in the street graph of monaco; its node ids look like n01345"),
    (["--start", "43.70,7.30"], "--start 43.70,7.30: off the street graph of monaco: off-graph: "),
    (["--start", "43.7,abc"], "--start 43.7,abc: expected a node id (e.g. n01345) or LAT,LON"),
    (["--start", "n01117", "--walker", "device"], "--start n01117: it places the simulated walker (--walker sim)"),
    (["--vehicle", "px4"], "unknown vehicle link 'px4'; known: airsim, mavlink, walker"),
    (["--vehicle", "mavlink"], "--vehicle mavlink: give the connection, e.g. mavlink:udp://127.0.0.1:14540"),
    (["--vehicle", "mavlink:ftp://x"], "--vehicle mavlink:ftp://x: "),
    (["--vehicle", "mavlink:udp://127.0.0.1:14540"], "safety_config is required for the mavlink link (it flies)"),
    (["--vehicle", "airsim", "--safety-config", "config/safety.yaml"], "link_params anchor is required"),
    (["--vehicle", "mavlink:udp://127.0.0.1:14540", "--walker", "sim"], "--walker sim and --vehicle mavlink"),
], ids=["no-world", "not-a-world", "world-file", "policy", "privileged", "param", "param-misspelt", "source",
        "source-param", "safety", "near-node", "node", "off-graph", "bad-position", "device", "vehicle-name",
        "vehicle-no-connection", "vehicle-scheme",
        "vehicle-unfenced", "airsim-no-anchor", "two-vehicles"])
def test_seek_refuses_a_bad_configuration_in_one_line_before_anything_starts(monaco_dir, tmp_path, no_process,
                                                                             capsys, extra, message):
    """Before, a missing --world started five nodes and printed 'seek: interrupted before a goal
    was sent' before the reason, taken from a node's log."""
    _safety_file(tmp_path)
    argv = ["seek", "I am thirsty", "--world", str(monaco_dir), "--policy", "ocr-embed",
            *[a.format(tmp=tmp_path) for a in extra]]
    code, took = _timed_main(argv)
    out, err = capsys.readouterr()
    print(f"\nrefused in {1000 * took:.0f} ms: {err.strip()}")
    assert code == 2 and out == "" and err.startswith("cityseeker: error: ") and len(err.splitlines()) == 1, err
    assert message.format(tmp=tmp_path) in err
    assert took < REFUSED_WITHIN_S and list(no_process.iterdir()) == []


def test_seek_checks_the_start_and_budget_and_places_the_walker(monaco_dir):
    """--max-steps 0 is the run's budget (the goal says 0, the nodes count 35); a budget the
    goal gives is the nodes' too; --start becomes the walker's start parameter."""
    from cityseeker_ros.cli import seek_run_config
    from cityseeker_ros.core.datasets import load_dataset
    from cityseeker_ros.ros.launcher import SeekPlan, plan_seek

    def plan(*extra: str, max_steps: int = 0, start=None) -> SeekPlan:
        args = _seek_parser().parse_args(["I am thirsty", "--world", str(monaco_dir), "--policy", "random", *extra])
        planned = plan_seek(seek_run_config(args), args.need, max_steps=max_steps, start=start)
        assert isinstance(planned, SeekPlan), planned
        return planned

    def params(planned: SeekPlan, name: str) -> dict:
        found = next(n.params for n in planned.nodes if n.name == name)
        return json.loads(found["link_params"]) if name == "vehicle_bridge" else found

    default = plan()
    assert default.request.max_steps == 0 and default.run.benchmark.max_steps == 35
    assert params(default, "camera_ingest")["max_steps"] == params(default, "supervisor")["max_steps"] == 35
    assert "start" not in params(default, "vehicle_bridge") and "start_node" not in params(default, "vehicle_bridge")
    assert next(n for n in default.nodes if n.name == "vehicle_bridge").params["link"] == "walker"
    assert default.run.source == "replay" and default.run.walker == "sim" and default.run.out == ""
    big = plan(max_steps=200)
    assert big.request.max_steps == 200 and params(big, "camera_ingest")["max_steps"] == 200
    assert params(plan(start="n00042"), "vehicle_bridge")["start_node"] == "n00042"
    node = load_dataset(monaco_dir)[0].graph.nodes["n00042"]
    assert params(plan(start=f"{node.lat},{node.lon}"), "vehicle_bridge")["start"] == f"{node.lat!r},{node.lon!r}"
    device = plan("--source", "replay", "--walker", "device")
    assert device.run.walker == "" and "vehicle_bridge" not in [n.name for n in device.nodes]
    mavlink = plan("--vehicle", "mavlink:udp://127.0.0.1:14540", "--safety-config", "config/safety.yaml",
                   "--link-param", "flavour=px4")
    bridge = next(n for n in mavlink.nodes if n.name == "vehicle_bridge").params
    assert mavlink.run.kind == "vehicle" and bridge["link"] == "mavlink" and bridge["safety_config"].endswith(
        "config/safety.yaml")
    assert json.loads(bridge["link_params"]) == {"connection": "udp://127.0.0.1:14540", "flavour": "px4"}


@pytest.mark.parametrize("argv, code", [
    (["seek", "", "--world", "{world}", "--policy", "ocr-embed"], 3),
    (["seek", "I am thirsty", "--world", "{tmp}/nope", "--policy", "ocr-embed"], 2),
], ids=["bad-need", "no-world"])
def test_a_refused_seek_leaves_no_temporary_folder(monaco_dir, tmp_path, argv, code):
    """Before, every `cityseeker seek` left a /tmp/cityseeker-seek-* folder, refused ones too.
    As a user runs it: a fresh interpreter, TMPDIR counted before and after."""
    import os
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    argv = [a.format(world=monaco_dir, tmp=tmp_path) for a in argv]
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cityseeker_ros", *argv], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp)}, timeout=60)
    took = time.monotonic() - began
    print(f"\nrefused in {took:.1f} s with the interpreter's start: {(proc.stdout + proc.stderr).strip()}")
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "ROS_DOMAIN_ID=" not in proc.stdout and "interrupted" not in proc.stderr  # nothing was started
    assert sorted(p.name for p in tmp.glob("cityseeker-seek-*")) == []
    assert took < 5.0  # before: 7-15 s, five nodes started and stopped


def test_seek_result_lines_say_how_the_goal_ended_in_words_that_cannot_be_misread():
    """Before: 'result: budget (succeeded) at n03299 after 5 steps, 85.8 m: ... the need 'I am
    thirsty' was not satisfied', the action's status beside the outcome. The line now says how it
    ended; the JSON record keeps the status."""
    from cityseeker_ros.ros.seek_outcome import EXIT_ENDED, EXIT_REJECTED, EXIT_SUCCEEDED, SeekOutcome, exit_code

    def outcome(status: str, kind: str, code: str, reason: str, steps: int = 5) -> SeekOutcome:
        return SeekOutcome(status, kind, code, reason, "n03299", 43.7, 7.4, ["n01117"], steps, 85.8)

    budget = outcome("succeeded", "budget", "budget",
                     "the need 'I am thirsty' was not satisfied within the budget of 5 steps")
    assert budget.line() == ("budget spent after 5 steps at n03299 (85.8 m walked): the need 'I am thirsty' was not "
                             "satisfied within the budget of 5 steps")
    found = outcome("succeeded", "found", "stopped", "the policy believes 'water' is met here (unverified live)", 1)
    assert found.line() == ("arrived after 1 step at n03299 (85.8 m walked): the policy believes 'water' is met here "
                            "(unverified live)")
    assert outcome("canceled", "cancelled", "cancelled", "cancelled by the operator").line().startswith(
        "cancelled after 5 steps at n03299 (85.8 m walked): cancelled by the operator")
    assert outcome("aborted", "failed", "stalled", "no progress for 120 s").line().startswith(
        "failed (stalled) after 5 steps at n03299")
    rejected = outcome("aborted", "rejected", "outside_geofence", "the vehicle at ... is 1850.0 m outside")
    assert rejected.line() == "rejected (outside_geofence): the vehicle at ... is 1850.0 m outside"
    for line in (budget.line(), found.line(), rejected.line()):
        assert not any(word in line for word in ("succeeded", "aborted", "canceled"))
    assert [exit_code(o) for o in (budget, found, rejected)] == [EXIT_SUCCEEDED, EXIT_SUCCEEDED, EXIT_REJECTED]
    assert exit_code(outcome("aborted", "failed", "estop", "e-stop")) == EXIT_ENDED


def test_seek_md_s_sample_output_names_the_nodes_the_command_starts(monaco_dir):
    """The sample once listed a `walker` node the command no longer starts (it is the vehicle
    bridge's walker link now): the sample's first line must name the node set plan_seek makes."""
    import re

    from cityseeker_ros.cli import seek_run_config
    from cityseeker_ros.ros.launcher import plan_seek

    doc = (REPO / "docs" / "seek.md").read_text(encoding="utf-8")
    sample = doc[doc.index("The first prints"):]
    listed = re.search(r"^ROS_DOMAIN_ID=\d+: ([\w, ]+); node logs in", sample, re.M).group(1).split(", ")
    args = _seek_parser().parse_args(["I am thirsty", "--world", str(monaco_dir), "--policy", "ocr-embed",
                                      "--max-steps", "5"])
    planned = plan_seek(seek_run_config(args), args.need, max_steps=5)
    assert listed == [n.name for n in planned.nodes]
    steps = re.findall(r"^step (\d+) \((\d+) left\)", sample, re.M)
    assert [(int(a), int(b)) for a, b in steps] == [(i, 5 - i) for i in range(5)]
    assert re.search(r"^result: budget spent after 5 steps at n\d+ \([\d.]+ m walked\)", sample, re.M)
