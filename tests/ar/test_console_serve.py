"""The pages' process (`python -m cityseeker_ros.ar.serve`) serving the console alone
(--no-phone --console-world) on a hand-made grid world, its ROS side the real console bridge
with nothing else on the domain: no vehicle bridge is faked here, so a press comes back as the
bridge's own "not available" answer, which proves the path page -> server -> rclpy -> page in
the real process. The bridge's wiring to each service and topic is tests/ar/test_console_bridge.py's."""
from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import time

import aiohttp
import pytest

from cityseeker_ros.core.console.world_map import world_map
from cityseeker_ros.ros import env as ros
from tests.core.tasks.landmarks.gridtown import LAT0, LON0, grid_graph, write_world_folder
from tests.ros.conftest import REPO, require_ros, ros_domain, ros_env  # noqa: F401  the leased domain's fixtures

TOKEN = "s" * 32


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_process_serves_the_console_alone_behind_the_token_and_a_press_comes_back_answered(
        request: pytest.FixtureRequest, tmp_path):
    require_ros()
    from cityseeker_ros.core.worlds.scene import Scene

    world = write_world_folder(tmp_path / "grid", grid_graph(n=3), Scene(LAT0, LON0), {"tasks": []})
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    port = _free_port()
    log = open(tmp_path / "serve.log", "w+")
    process = ros.spawn(ros.python_module_command(
        "cityseeker_ros.ar.serve", "--token-file", str(token_file), "--port", str(port), "--no-phone",
        "--console-world", str(world)), request.getfixturevalue("ros_env"), stdout=log, stderr=subprocess.STDOUT,
        cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while "ar_server: serving" not in (tmp_path / "serve.log").read_text():
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.1)

        async def go():
            base = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession() as http:
                statuses = [(await http.get(f"{base}{path}")).status
                            for path in ("/console", "/console/map.json", "/", "/ws", f"/console?token={TOKEN}x")]
                page = (await http.get(f"{base}/console?token={TOKEN}")).status
                phone = (await http.get(f"{base}/?token={TOKEN}")).status  # not served: --no-phone
                doc = await (await http.get(f"{base}/console/map.json?token={TOKEN}")).json()
                ws = await http.ws_connect(f"{base}/console/ws?token={TOKEN}")
                await ws.send_str('{"type": "take_control"}')
                answer = None
                end = time.monotonic() + 20
                while answer is None and time.monotonic() < end:
                    msg = json.loads((await ws.receive(timeout=5)).data)
                    if msg["type"] == "state" and msg["answers"]:
                        answer = msg["answers"][-1]
                await ws.close()
                stats = await (await http.get(f"{base}/console/stats?token={TOKEN}")).json()
                return statuses, page, phone, doc, answer, stats

        statuses, page, phone, doc, answer, stats = asyncio.run(go())
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        log.close()
    assert statuses == [403] * 5 and page == 200 and phone == 404
    assert doc == json.loads(json.dumps(world_map(world)))
    assert answer == {"command": "take_control", "ok": False,
                      "message": "/vehicle_bridge/take_control is not available (is the vehicle bridge running?)"}
    assert stats["counts"]["http.forbidden"] == 5 and stats["counts"]["command.take_control"] == 1
    assert process.returncode == 0, (tmp_path / "serve.log").read_text()
