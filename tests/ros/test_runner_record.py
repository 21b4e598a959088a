"""What `cityseeker run` leaves in OUT/ros: the node parameters with every credential masked,
which is also what the nodes' parameters hold (anyone on the DDS domain can read those through
the parameter services). The real values reach each node in its environment and nowhere else."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from cityseeker_ros.cli import benchmark_config, build_parser
from cityseeker_ros.ros import env as ros
from cityseeker_ros.ros import node_sets, secret_params
from cityseeker_ros.ros.parameters import json_parameter
from cityseeker_ros.ros.runner import Runner
from tests.core.agents.vlm.canned_server import MODEL, CannedServer

REPO = Path(__file__).resolve().parents[2]
CANARY = "CANARY-0b7d3a-runner"


def runner_with_canaries(tiny_city, out: Path, env: dict) -> tuple[Runner, object]:
    args = build_parser().parse_args([
        "run", "benchmark", "--data", str(tiny_city), "--policy", "vlm", "--backend", "openai", "--model", "m",
        "--backend-param", f"base_url=http://user:{CANARY}@127.0.0.1:9/v1",
        "--backend-param", f'extra_body={{"api_key": "{CANARY}"}}',
        "--backend-param", f'headers={{"Authorization": "Bearer {CANARY}"}}', "--out", str(out)])
    config, out = benchmark_config(args)
    return Runner(node_sets.benchmark_nodes(config, out, []), out / "ros", env=env, monitor=False), config


def test_parameters_mask_credentials_and_each_node_gets_the_real_ones_in_its_environment(tiny_city, tmp_path,
                                                                                         monkeypatch):
    out = tmp_path / "out"
    runner, config = runner_with_canaries(tiny_city, out, env={})
    runner.write_params()
    record = (out / "ros" / "params.yaml").read_text(encoding="utf-8")
    assert runner.params_file == out / "ros" / "params.yaml"  # what the nodes read is what is recorded
    assert CANARY not in record and "http://***@127.0.0.1:9/v1" in record
    for node in runner.nodes:
        assert CANARY not in " ".join(node.command(runner.params_file))
    secrets = runner._process_secrets("decision")
    public = yaml.safe_load(record)["decision"]["ros__parameters"]["policy_params"]
    monkeypatch.setenv(*secret_params.environment(secrets).popitem())
    real = json_parameter("policy_params", public)  # as the decision node reads it
    assert real["backend_params"]["extra_body"]["api_key"] == CANARY
    assert real == json.loads(node_sets.run_params(config)["policy_params"])
    assert json_parameter("policy_params", '{"other": 1}') == {"other": 1}  # a value set by other means stays
    assert runner._process_secrets("streetview_replay") == {} and CANARY in json.dumps(
        runner._process_secrets("single_process"))


def test_a_running_node_serves_no_credential_and_a_killed_runner_leaves_none_behind(tiny_city, ros_env, tmp_path):
    """rclpy's parameter services let anyone on the domain read a node's parameters; and the
    runner once kept the real parameters in a private file that a SIGKILL left in /tmp."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**ros_env, "TMPDIR": str(tmp)}
    out = tmp_path / "out"
    runner, _ = runner_with_canaries(tiny_city, out, env)
    runner.nodes = [n for n in runner.nodes if n.name == "decision"]
    runner.start()
    try:
        query = subprocess.run(
            ros.python_module_command("tests.ros.parameter_query", "/decision", "policy_params"), env=ros_env,
            capture_output=True, text=True, timeout=60)
        assert query.returncode == 0, query.stdout + query.stderr + runner.tail("decision")
        served = json.loads(query.stdout)
        assert "***" in served and CANARY not in served
    finally:
        runner.processes["decision"].kill()  # as a SIGKILL of the runner leaves it: nothing cleaned up
        runner.processes["decision"].wait(10)
        runner.stop()
    leftovers = [p for root in (tmp, out) for p in root.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert leftovers == [] and not list(tmp.glob("cityseeker-params-*"))


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
