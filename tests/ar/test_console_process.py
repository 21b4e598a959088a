"""`--console` on `cityseeker seek` and `cityseeker run camera|vehicle` (ar/console_process.py):
the console server joins the node set with a one-time token kept 0600 in a private folder that
goes with the run, and a refused goal starts no console. No process is started here: the node
set's launcher is replaced by a recorder (its own tests run it), so what is checked is what
the command hands to it."""
from __future__ import annotations

import argparse
import stat
from pathlib import Path

import pytest

from cityseeker_ros.ar.console_process import CONSOLE_SERVER, ConsoleLaunch, console_launch
from cityseeker_ros.cli import main
from cityseeker_ros.core.infra.errors import ConfigError


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"console": True, "console_port": 0, **kw})


def test_without_console_nothing_joins_the_node_set():
    with console_launch(argparse.Namespace(), "w", "", 35) as launch:
        assert launch.nodes == () and launch.url == ""


def test_the_console_process_its_token_file_and_its_cleanup(tmp_path):
    safety = tmp_path / "safety.yaml"
    with console_launch(_args(), str(tmp_path / "world"), str(safety), 12) as launch:
        [node] = launch.nodes
        argv = list(node.argv)
        token_file = Path(argv[argv.index("--token-file") + 1])
        token = token_file.read_text()
        mode = stat.S_IMODE(token_file.stat().st_mode)
        folder_mode = stat.S_IMODE(token_file.parent.stat().st_mode)
    assert node.name == CONSOLE_SERVER and node.module == "cityseeker_ros.ar.serve"
    assert argv[:3] == ["--no-phone", "--console-world", str((tmp_path / "world").resolve())]
    assert argv[argv.index("--console-safety") + 1] == str(safety.resolve())
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and int(argv[argv.index("--port") + 1]) > 0  # loopback
    assert argv[argv.index("--run-max-steps") + 1] == "12"
    assert launch.url == f"http://127.0.0.1:{argv[argv.index('--port') + 1]}/console?token={token}" and len(token) >= 32
    assert mode == 0o600 and folder_mode == 0o700
    assert not token_file.parent.exists()  # the token goes with the run


def test_a_bad_port_is_refused():
    with pytest.raises(ConfigError, match="--console-port"):
        with console_launch(_args(console_port=70000), "w", "", 35):
            pass


def test_seek_and_run_camera_hand_the_console_to_the_node_set(monkeypatch, monaco_dir, tmp_path, capsys):
    from cityseeker_ros.ros import launcher

    seen: dict = {}

    def run_seek(run, need, **kw):
        seen["seek"] = kw
        return 0

    def run_tasks_with(config, out, make_nodes, **kw):
        seen["run"] = make_nodes([])
        raise SystemExit(0)  # the summary is the launcher's: not needed here

    monkeypatch.setattr(launcher, "run_seek", run_seek)
    monkeypatch.setattr(launcher, "run_tasks_with", run_tasks_with)
    monkeypatch.setattr(ConsoleLaunch, "announce", lambda self: seen.setdefault("announced", []).append(self.url))
    assert main(["seek", "I am thirsty", "--world", str(monaco_dir), "--policy", "random", "--console"]) == 0
    [console] = seen["seek"]["extra_nodes"]
    assert console.name == CONSOLE_SERVER and seen["seek"]["started"] is not None
    with pytest.raises(SystemExit):
        main(["run", "camera", "--data", str(monaco_dir), "--policy", "random", "--out", str(tmp_path / "run"),
              "--source", "replay", "--console"])
    assert [n.name for n in seen["run"]][-1] == CONSOLE_SERVER and len(seen["announced"]) == 1
    assert main(["seek", "I am thirsty", "--world", str(monaco_dir), "--policy", "random"]) == 0
    assert seen["seek"]["extra_nodes"] == ()
