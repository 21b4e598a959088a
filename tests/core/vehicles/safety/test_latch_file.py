"""The e-stop latch on disk: it survives the process (even SIGKILL right after the trip), only a
reset clears it, and a file that cannot be read fails safe (latched) with a log line naming it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.safety import EStop, Goal, LatchFile, SafetyCode, SafetyGate
from tests.core.vehicles.safety.conftest import north_of_origin


def test_a_latch_survives_a_restart_until_reset(tmp_path):
    path = tmp_path / "ros" / "estop.json"  # the folder is made
    first = EStop(LatchFile(path))
    assert not first.latched and not path.exists()
    first.trigger("/estop", "person on the pavement")
    assert json.loads(path.read_text())["reason"] == "e-stop from /estop: person on the pavement"
    again = EStop(LatchFile(path))  # the restarted bridge
    assert again.latched and again.check().reason == "e-stop from /estop: person on the pavement"
    assert again.reset().ok and not path.exists()
    assert not EStop(LatchFile(path)).latched
    assert [p.name for p in path.parent.iterdir()] == []  # no temporary file left behind


def test_a_latch_survives_sigkill_right_after_the_trip(tmp_path):
    path = tmp_path / "estop.json"
    code = ("import os, signal, sys; from cityseeker_ros.core.vehicles.safety import EStop, LatchFile; "
            "EStop(LatchFile(sys.argv[1])).trigger('/estop', 'killed'); os.kill(os.getpid(), signal.SIGKILL)")
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == -9, result.stderr
    assert EStop(LatchFile(path)).check().reason == "e-stop from /estop: killed"


def test_a_restarted_gate_holds_a_fresh_decision(tmp_path, config, clock):
    path = tmp_path / "estop.json"
    SafetyGate.from_config(config, clock, EStop(LatchFile(path))).estop.trigger("operator")
    gate = SafetyGate.from_config(config, clock, EStop(LatchFile(path)))
    gate.beat()
    verdict = gate.decision(Goal(north_of_origin(10.0), 0.0))
    assert not verdict.moving and verdict.code is SafetyCode.ESTOP


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"latched": false}', b"[1]", b"\xff\xfe"])
def test_an_unreadable_file_fails_safe_and_names_the_file(tmp_path, caplog, content):
    path = tmp_path / "estop.json"
    path.write_bytes(content)
    stop = EStop(LatchFile(path))
    assert stop.latched and str(path) in stop.check().reason
    assert any(str(path) in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)
    assert stop.reset().ok and not path.exists() and not EStop(LatchFile(path)).latched


def test_a_file_that_cannot_be_removed_refuses_the_reset(tmp_path):
    path = tmp_path / "estop.json"
    path.mkdir()
    (path / "x").write_text("")  # a folder where the file should be: unreadable and not removable
    stop = EStop(LatchFile(path))
    assert stop.latched
    check = stop.reset()
    assert not check.ok and check.code is SafetyCode.RESET_REFUSED and str(path) in check.reason
    assert stop.latched


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_a_config_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match=f"e-stop state file {folder}/estop.json: folder .* is not writable"):
            LatchFile(folder / "estop.json")
    finally:
        folder.chmod(0o700)
