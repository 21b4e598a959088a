"""What `cityseeker run` leaves in OUT/ros: the node parameters with every credential masked.
The nodes read the real ones from a private file outside OUT, removed when the run stops."""
from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from cityseeker_ros.cli import benchmark_config, build_parser
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros import node_sets
from cityseeker_ros.ros.runner import Runner
from tests.core.agents.vlm.canned_server import MODEL, CannedServer

REPO = Path(__file__).resolve().parents[2]
CANARY = "CANARY-0b7d3a-runner"


def test_params_record_masks_credentials_and_the_private_copy_is_removed(tiny_city, tmp_path):
    out = tmp_path / "out"
    args = build_parser().parse_args([
        "run", "benchmark", "--data", str(tiny_city), "--policy", "vlm", "--backend", "openai", "--model", "m",
        "--backend-param", f"base_url=http://user:{CANARY}@127.0.0.1:9/v1",
        "--backend-param", f'extra_body={{"api_key": "{CANARY}"}}',
        "--backend-param", f'headers={{"Authorization": "Bearer {CANARY}"}}', "--out", str(out)])
    config, out = benchmark_config(args)
    nodes = node_sets.benchmark_nodes(config, out, [])
    runner = Runner(nodes, out / "ros", env={})
    runner._shm_before = ros.shm_segments()  # as start() does: stop() removes only what appeared since
    runner.write_params()
    private = runner.params_file
    try:
        record = (out / "ros" / "params.yaml").read_text(encoding="utf-8")
        assert CANARY not in record and "http://***@127.0.0.1:9/v1" in record
        assert out not in private.parents  # the real parameters never land under --out
        assert stat.S_IMODE(private.stat().st_mode) == 0o600 and stat.S_IMODE(private.parent.stat().st_mode) == 0o700
        assert CANARY in private.read_text(encoding="utf-8")  # the nodes do get them
        for node in nodes:
            assert CANARY not in " ".join(node.command(private))
    finally:
        runner.stop()
    assert not private.exists() and not private.parent.exists()
    assert not [p for p in out.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    policy_params = json.loads(node_sets.run_params(config)["policy_params"])
    assert policy_params["backend_params"]["extra_body"]["api_key"] == CANARY  # what the decision node needs


def test_a_ros_run_leaves_the_canary_in_no_file_log_or_output(tiny_city, ros_domain, tmp_path):
    """`cityseeker run benchmark` with a VLM behind the canned server: the decision node gets
    the credentials, and neither OUT (config, summary, records, node logs, params record) nor
    the runner's output holds them."""
    server = CannedServer()
    try:
        port = server.url.split(":")[2].split("/")[0]
        out = tmp_path / "out"
        command = [sys.executable, "-m", "cityseeker_ros.cli", "run", "benchmark", "--data", str(tiny_city),
                   "--policy", "vlm", "--backend", "openai", "--model", MODEL,
                   "--backend-param", f"base_url=http://user:{CANARY}@127.0.0.1:{port}/v1",
                   "--backend-param", f'extra_body={{"api_key": "{CANARY}"}}',
                   "--param", "retries=0",
                   "--max-steps", "2", "--out", str(out), "--single-process", "--domain-id", str(ros_domain),
                   "--timeout", "120"]
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180)
    finally:
        server.close()
    assert result.returncode == 0, result.stdout + result.stderr
    posts = server.posts()
    assert posts and all(p["body"]["api_key"] == CANARY for p in posts)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"config.json", "summary.json", "episodes.jsonl", "params.yaml", "single_process.log"} <= {
        p.name for p in files}
    assert [str(p) for p in files if CANARY.encode() in p.read_bytes()] == []
    assert CANARY not in result.stdout + result.stderr
    assert "http://***@127.0.0.1" in (out / "config.json").read_text()
