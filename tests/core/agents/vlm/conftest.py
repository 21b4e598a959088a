"""Tiny random VLM checkpoints, built once per session offline (no hub, no downloads)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TINY_FAMILIES = ("qwen2.5-vl", "llava", "idefics3")


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """family -> checkpoint folder that `from_pretrained` loads like a published one (~0.5 MB each)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from cityseeker_ros.core.agents.vlm.random_models import build_random_checkpoint

    root = tmp_path_factory.mktemp("tiny_vlms")
    return {family: build_random_checkpoint(family, root / family, seed=0) for family in TINY_FAMILIES}
