"""Quantisation by name: each maps to the library config transformers' `from_pretrained` takes.

Names are checked against the device before any weight is read, so a run asks for 4-bit on a
machine that cannot do it fails at start-up with the fix in the message, not after minutes of
loading. Library imports happen only when a name is used.
"""
from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import ConfigError


@dataclass(frozen=True)
class Quantization:
    """How one name is built; `build(compute_dtype)` returns a transformers quantization config or None."""

    name: str
    description: str
    devices: tuple[str, ...]  # device types it runs on ("cpu", "cuda")
    build: Callable[[Any], Any]


def _none(_dtype: Any) -> None:
    return None


def _bnb8(_dtype: Any) -> Any:
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_8bit=True)


def _bnb4(dtype: Any) -> Any:
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype,
                              bnb_4bit_use_double_quant=True)


def _quanto(weights: str) -> Callable[[Any], Any]:
    def build(_dtype: Any) -> Any:
        from transformers import QuantoConfig

        return QuantoConfig(weights=weights)
    return build


def _torchao_int8(_dtype: Any) -> Any:
    from transformers import TorchAoConfig

    try:
        from torchao.quantization import Int8WeightOnlyConfig
    except ImportError:  # torchao before 0.10 named its configs by string
        return TorchAoConfig("int8_weight_only")
    return TorchAoConfig(quant_type=Int8WeightOnlyConfig())


def _fp8(_dtype: Any) -> Any:
    from transformers import FineGrainedFP8Config

    return FineGrainedFP8Config()  # e4m3 weights in 128x128 blocks, activations scaled per token group


QUANTIZATIONS: dict[str, Quantization] = {q.name: q for q in (
    Quantization("none", "weights in the model dtype", ("cpu", "cuda"), _none),
    Quantization("bnb-8bit", "bitsandbytes LLM.int8()", ("cuda", "cpu"), _bnb8),
    Quantization("bnb-4bit", "bitsandbytes NF4, double quantisation, compute in the model dtype", ("cuda", "cpu"),
                 _bnb4),
    Quantization("quanto-int8", "optimum-quanto int8 weights", ("cpu", "cuda"), _quanto("int8")),
    Quantization("quanto-int4", "optimum-quanto int4 weights", ("cpu", "cuda"), _quanto("int4")),
    Quantization("torchao-int8", "torchao int8 weight-only", ("cpu", "cuda"), _torchao_int8),
    Quantization("fp8", "fine-grained FP8 (e4m3), GPUs of compute capability >= 8.9", ("cuda",), _fp8),
    Quantization("prequantized", "the checkpoint's own quantization_config (AWQ, GPTQ, ...)", ("cpu", "cuda"),
                 _none),
)}


def _get(name: str) -> Quantization:
    try:
        return QUANTIZATIONS[name]
    except KeyError:
        raise ConfigError(f"unknown quantization '{name}'; known: {', '.join(QUANTIZATIONS)}") from None


def _bitsandbytes_works_on(device_type: str, four_bit: bool) -> Optional[str]:
    """None when bitsandbytes can quantise on this device type, else why not."""
    if importlib.util.find_spec("bitsandbytes") is None:
        return "bitsandbytes is not installed (pip install bitsandbytes)"
    if device_type != "cpu":
        return None
    try:  # its CPU backend exists only in recent releases: probe it rather than trust version numbers
        import torch
        from bitsandbytes import functional as bnbf

        probe = torch.ones(64, 64, dtype=torch.float32)
        if four_bit:
            bnbf.quantize_4bit(probe, quant_type="nf4")
        else:
            bnbf.int8_vectorwise_quant(probe.half())
    except Exception as exc:  # noqa: BLE001 - any failure means "no CPU backend"
        return f"this bitsandbytes has no CPU backend ({type(exc).__name__}: {exc}); use a CUDA device"
    return None


def check_available(name: str, device_type: str) -> Quantization:
    """The named quantisation, or ConfigError saying why it cannot run on `device_type` here."""
    q = _get(name)
    device_type = device_type.split(":")[0]
    if device_type not in q.devices:
        raise ConfigError(f"quantization '{name}' needs a {' or '.join(q.devices)} device, got '{device_type}'")
    if name.startswith("bnb-"):
        why = _bitsandbytes_works_on(device_type, four_bit=name == "bnb-4bit")
        if why:
            raise ConfigError(f"quantization '{name}' on {device_type}: {why}")
    elif name.startswith("quanto-") and importlib.util.find_spec("optimum") is None:
        raise ConfigError(f"quantization '{name}' needs optimum-quanto (pip install optimum-quanto)")
    elif name == "torchao-int8" and importlib.util.find_spec("torchao") is None:
        raise ConfigError("quantization 'torchao-int8' needs torchao (pip install torchao)")
    elif name == "fp8":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("quantization 'fp8' needs a CUDA GPU of compute capability >= 8.9 (Ada, Hopper)")
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) < (8, 9):
            raise ConfigError(f"quantization 'fp8' needs compute capability >= 8.9, this GPU has {major}.{minor}")
    return q


def quantization_config(name: str, *, device_type: str, compute_dtype: Any = None,
                        model_path: Optional[Path] = None) -> Any:
    """The transformers quantization config for `name` (None: load as is), checked for this device.

    "prequantized" needs `model_path`, whose config.json must carry a quantization_config.
    """
    q = check_available(name, device_type)
    if name == "prequantized" and model_path is not None:
        config_file = Path(model_path) / "config.json"
        try:
            has_own = "quantization_config" in json.loads(config_file.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"quantization 'prequantized': cannot read {config_file}: {exc}") from None
        if not has_own:
            raise ConfigError(f"quantization 'prequantized': {config_file} has no quantization_config "
                              f"(an AWQ or GPTQ checkpoint has one); choose another quantization")
    return q.build(compute_dtype)
