"""Static checks of docker/: no Docker engine runs here, so the image is never built in CI.
The compose file must parse and reserve the GPU for vLLM with the model mounted read-only, and
every path the Dockerfile copies or runs must exist in the repository (hadolint, when installed,
lints the Dockerfile itself: docker/README.md)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

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
    assert "base_url:=http://vllm:8000/v1" in stack["command"]
    assert set(stack["networks"]) == set(services["vllm"]["networks"])
    assert any(v.endswith(":/runs") for v in stack["volumes"]) and "runs" in compose()["volumes"]


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
