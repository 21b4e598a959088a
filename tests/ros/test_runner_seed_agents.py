"""Each seed agent over the ROS node set: `cityseeker run benchmark --policy AGENT` against the
loopback canned server writes the same records as the in-process `cityseeker benchmark`, its
per-step calls, tokens and replies included (only the seconds, wall times, differ)."""
from __future__ import annotations

import pytest

from tests.core.agents.seeds.test_seed_golden import _answer
from tests.core.agents.vlm import canned_server
from tests.core.agents.vlm.canned_server import MODEL, CannedServer
from tests.ros.test_runner import in_process, records, run


def _timeless(record: dict) -> dict:
    for step in record.get("decisions", ()):
        step.pop("seconds", None)
        for call in step.get("calls", ()):
            call.pop("seconds", None)
    return record


@pytest.mark.parametrize("agent, switch", [("navgpt", "cot=true"), ("mapgpt", "reflection=true"),
                                           ("prep", "planning=true"), ("pma", "collector=true")])
def test_a_seed_agent_over_ros_writes_the_in_process_records(tiny_city, ros_domain, tmp_path, monkeypatch, agent,
                                                             switch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(canned_server, "good_reply", _answer)
    server = CannedServer()
    try:
        flags = ("--data", str(tiny_city), "--policy", agent, "--param", switch, "--backend", "openai",
                 "--model", MODEL, "--backend-param", f"base_url={server.url}", "--backend-param", "timeout_s=20",
                 "--limit", "1", "--max-steps", "3")
        in_process(tmp_path / "cli", *flags)
        run(tmp_path / "ros", ros_domain, *flags, "--single-process")
    finally:
        server.close()
    got, expected = records(tmp_path / "ros"), records(tmp_path / "cli")
    steps = expected[0]["decisions"]
    assert steps and all(d["agent"] == agent and d["calls"] for d in steps)
    assert [_timeless(r) for r in got] == [_timeless(r) for r in expected]
