"""Static checks of docker/: no Docker engine runs here, so the image is never built in CI.
The compose file must parse, reserve the GPU for vLLM with the model mounted read-only, and
start the stack with a launch command every node accepts; every path the Dockerfile copies or
runs must exist in the repository (hadolint, when installed,
lints the Dockerfile itself: docker/README.md)."""
from __future__ import annotations

import inspect
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"


def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            rows.append((keyword.upper(), rest.strip()))
    return rows


def test_compose_has_vllm_with_a_gpu_and_a_read_only_model_folder():
    vllm = compose()["services"]["vllm"]
    assert vllm["image"].startswith("vllm/vllm-openai:")
    devices = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    mounts = [v for v in vllm["volumes"] if v.split(":")[-2:][0] == "/models"]
    assert len(mounts) == 1 and mounts[0].endswith(":/models:ro")
    command = vllm["command"]
    assert command[command.index("--model") + 1].startswith("/models/")
    assert all(p.startswith("127.0.0.1:") for p in vllm["ports"])  # the API stays on loopback


def test_compose_stack_runs_the_image_against_vllm():
    services = compose()["services"]
    stack = services["stack"]
    assert stack["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert (DOCKER / stack["build"]["context"] / stack["build"]["dockerfile"]).resolve() == DOCKER / "Dockerfile"
    assert stack["depends_on"]["vllm"]["condition"] == "service_healthy"
    assert stack["command"][:4] == ["ros2", "launch", "cityseeker_ros", "benchmark.launch.py"]
    assert set(stack["networks"]) == set(services["vllm"]["networks"])
    assert any(v.endswith(":/runs") for v in stack["volumes"]) and "runs" in compose()["volumes"]


# What a user sets (docker/README.md); the others take the file's defaults.
ENV = {"MODEL_DIR": "/srv/models", "MODEL": "Qwen2.5-VL-7B-Instruct", "DATA_DIR": "/srv/worlds/monaco"}
_VARIABLE = re.compile(r"\$(?:\$|\{(\w+)(?:(:?[-?])((?:[^}])*))?\})")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error},
    ${VAR?error} and $$ for a literal $."""
    def one(match: re.Match) -> str:
        name, op, arg = match.groups()
        if name is None:
            return "$"
        value = env.get(name)
        unset = value is None or (op is not None and op.startswith(":") and value == "")
        if op and op.endswith("?") and unset:
            raise KeyError(f"{name}: {arg}")
        if op and op.endswith("-") and unset:
            return arg
        return value or ""
    return _VARIABLE.sub(one, text)


def stack_arguments(env: dict[str, str]) -> dict[str, str]:
    """The stack's launch arguments as `ros2 launch` receives them after compose's substitution."""
    arguments = {}
    for item in compose()["services"]["stack"]["command"][4:]:
        assert ":=" in item, f"{item!r} is not a launch argument NAME:=VALUE"
        name, value = item.split(":=", 1)
        assert name not in arguments, f"{name} given twice"
        arguments[name] = interpolate(value, env)
    return arguments


def test_interpolate_follows_compose_rules():
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET} ${SET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d} $${SET}", env) == "x x d  d ${SET}"
    assert interpolate('${UNSET:-["B1", "R3"]}', env) == '["B1", "R3"]'
    with pytest.raises(KeyError, match="UNSET: set it"):
        interpolate("${UNSET:?set it}", env)


@pytest.mark.parametrize("strategies", [None, '["B1", "oracle:B2", "R3:n=5"]', "[]"])
def test_the_stack_command_is_a_benchmark_launch_every_node_accepts(strategies):
    """Before, the stack passed `base_url:=`, which benchmark.launch.py does not declare, and
    `strategies:=bcr`, which is not JSON, and no memory for the strategies: it could not start."""
    from cityseeker_ros.core.agents.policies import make_policy
    from cityseeker_ros.core.agents.vlm.backend import BACKENDS
    from cityseeker_ros.ros import node_sets, run_config
    from cityseeker_ros.ros.parameters import NODES

    env = {**ENV, **({"STRATEGIES": strategies} if strategies is not None else {})}
    arguments = stack_arguments(env)
    declared = {name for name, _, _ in run_config.launch_arguments("benchmark")}
    assert set(arguments) <= declared, f"undeclared launch arguments {sorted(set(arguments) - declared)}"
    for name, text in arguments.items():  # settings whose default is a JSON object or list take JSON
        if run_config.BY_NAME[name].default_text()[:1] in ("{", "["):
            try:
                json.loads(text)
            except json.JSONDecodeError as exc:
                pytest.fail(f"{name}:={text} is not JSON ({exc.msg})")
    run = run_config.from_launch("benchmark", arguments)  # what benchmark.launch.py does with them
    config = run.benchmark
    assert config.policy == "vlm" and config.views == "rendered" and config.memory == "/runs/memory.sqlite"
    expected = json.loads(strategies if strategies is not None else '["B1", "R3"]')
    assert [("oracle:" if s.get("oracle") else "") + s["name"] for s in config.strategies] == [
        e.split(":n=")[0] for e in expected]
    # The decision node's policy takes these parameters, and its backend takes base_url.
    policy = make_policy(config.policy, **config.policy_params)
    backend = inspect.signature(BACKENDS.get(policy.backend_name)).parameters
    assert set(policy.backend_params) <= set(backend) and policy.backend_params["base_url"] == "http://vllm:8000/v1"
    assert policy.backend_params["model"] == ENV["MODEL"] == interpolate(
        compose()["services"]["vllm"]["command"][3], ENV)  # the name vLLM serves the model under
    for spec in node_sets.nodes(run):
        unknown = set(spec.params) - {p.name for p in NODES[spec.executable]}
        assert not unknown, f"{spec.name} declares no parameter {sorted(unknown)}"


def test_the_stack_needs_the_model_and_data_folders():
    for name in ("MODEL", "DATA_DIR", "MODEL_DIR"):
        env = {k: v for k, v in ENV.items() if k != name}
        text = yaml.safe_dump(compose())
        with pytest.raises(KeyError, match=name):
            interpolate(text, env)


def test_dockerfile_copies_only_what_exists_and_builds_with_colcon():
    rows = instructions(DOCKER / "Dockerfile")
    assert rows[0][0] == "FROM" and "ubuntu24.04" in rows[0][1]
    for keyword, args in rows:
        if keyword == "COPY":
            *sources, _ = shlex.split(args)
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: missing in the repository"
    runs = " ".join(args for keyword, args in rows if keyword == "RUN")
    assert "ros-${ROS_DISTRO}-ros-base" in runs and "colcon build" in runs and "fonts-wqy-microhei" in runs
    assert "[vlm,ocr,airsim]" in runs and "constraints.txt" in runs
    entrypoint = [args for keyword, args in rows if keyword == "ENTRYPOINT"]
    assert entrypoint == ['["/entrypoint.sh"]']
    script = (DOCKER / "entrypoint.sh").read_text()
    assert "/opt/ros/" in script and "/ws/install/setup.bash" in script and 'exec "$@"' in script


def test_ament_python_package_files_are_there():
    for name in ("package.xml", "setup.py", "setup.cfg", "resource/cityseeker_ros"):
        assert (REPO / name).exists(), name
    assert "<build_type>ament_python</build_type>" in (REPO / "package.xml").read_text()


def test_the_cpu_image_copies_every_local_package_setup_py_installs():
    """`pip install .` in the CPU image builds the typed interfaces from their folders (setup.py's
    INTERFACES): the image copied neither, so its build failed at pip."""
    rows = instructions(DOCKER / "Dockerfile.cpu")
    copied = set()
    for keyword, args in rows:
        if keyword == "COPY":
            *sources, _ = shlex.split(args)
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: missing in the repository"
            copied |= set(sources)
    local = re.findall(r'\("[\w]+", "([\w/]+)"\)', (REPO / "setup.py").read_text())
    assert local == ["cityseeker_interfaces", "vendor/tf2_msgs"]
    for folder in local:
        assert any(folder == c or folder.startswith(c.rstrip("/") + "/") for c in copied), folder
    runs = " ".join(args for keyword, args in rows if keyword == "RUN")
    assert "build-essential" in runs and "constraints.txt" in runs
