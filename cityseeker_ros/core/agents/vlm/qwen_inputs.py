"""Qwen2-VL / Qwen2.5-VL / Qwen3-VL model inputs without torchvision.

transformers 5.x cannot construct the Qwen-VL processors without torchvision (their video
processor needs it), and the torchvision wheels on these machines do not import. The image path
is small and fully specified, so it is reproduced here step for step as the PIL image processor
(`Qwen2VLImageProcessorPil`) does it: `smart_resize` onto the patch x merge grid within
min/max pixels, bicubic resize in PIL, rescale in float64 then float32, normalise, patchify to
(patches, channels x temporal x patch x patch) with the frame repeated over the temporal patch;
then each `<|image_pad|>` in the prompt is expanded to grid_t*grid_h*grid_w/merge^2 copies and
`mm_token_type_ids` marks image tokens for the 3-D rotary positions. The tests check equality
with the real processor classes, element for element.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError

IMAGE_TOKEN = "<|image_pad|>"
QWEN_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe")


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Height and width divisible by `factor`, area within [min_pixels, max_pixels], aspect kept."""
    ratio = max(height, width) / min(height, width)
    if ratio > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {ratio}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class QwenImageConfig:
    """The fields of a Qwen-VL preprocessor_config.json that decide the model inputs."""

    patch_size: int = 14
    temporal_patch_size: int = 2
    merge_size: int = 2
    min_pixels: int = 56 * 56
    max_pixels: int = 28 * 28 * 1280
    image_mean: tuple[float, float, float] = (0.48145466, 0.4578275, 0.40821073)
    image_std: tuple[float, float, float] = (0.26862954, 0.26130258, 0.27577711)
    rescale_factor: float = 1 / 255
    resample: int = 3  # PIL bicubic

    @classmethod
    def from_pretrained(cls, path: Path | str, *, min_pixels: Optional[int] = None,
                        max_pixels: Optional[int] = None) -> QwenImageConfig:
        """Read preprocessor_config.json; explicit min/max pixels override the file's."""
        file = Path(path) / "preprocessor_config.json"
        try:
            raw: dict[str, Any] = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the Qwen image processor config {file}: {exc}") from None
        size = raw.get("size") or {}
        lo = min_pixels or raw.get("min_pixels") or size.get("shortest_edge") or cls.min_pixels
        hi = max_pixels or raw.get("max_pixels") or size.get("longest_edge") or cls.max_pixels
        if lo > hi:
            raise ConfigError(f"min_pixels {lo} exceeds max_pixels {hi}")
        return cls(patch_size=int(raw.get("patch_size", cls.patch_size)),
                   temporal_patch_size=int(raw.get("temporal_patch_size", cls.temporal_patch_size)),
                   merge_size=int(raw.get("merge_size", cls.merge_size)), min_pixels=int(lo), max_pixels=int(hi),
                   image_mean=tuple(raw.get("image_mean", cls.image_mean)),
                   image_std=tuple(raw.get("image_std", cls.image_std)),
                   rescale_factor=float(raw.get("rescale_factor", cls.rescale_factor)),
                   resample=int(raw.get("resample", cls.resample)))

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size


def preprocess_image(image: np.ndarray, cfg: QwenImageConfig) -> tuple[np.ndarray, tuple[int, int, int]]:
    """One RGB uint8 (H, W, 3) image -> (patches, channels*temporal*patch*patch) float32 and (t, h, w) grid."""
    from PIL import Image

    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an RGB uint8 image (H, W, 3), got {image.dtype} {image.shape}")
    height, width = image.shape[:2]
    new_h, new_w = smart_resize(height, width, cfg.factor, cfg.min_pixels, cfg.max_pixels)
    resized = np.asarray(Image.fromarray(image).resize((new_w, new_h), resample=cfg.resample))
    pixels = (resized.astype(np.float64) * cfg.rescale_factor).astype(np.float32)
    pixels = (pixels - np.asarray(cfg.image_mean, np.float32)) / np.asarray(cfg.image_std, np.float32)
    chw = pixels.transpose(2, 0, 1)
    p, m, t = cfg.patch_size, cfg.merge_size, cfg.temporal_patch_size
    grid_h, grid_w = new_h // p, new_w // p
    patches = chw.reshape(3, grid_h // m, m, p, grid_w // m, m, p).transpose(1, 4, 2, 5, 0, 3, 6)
    patches = np.broadcast_to(patches[:, :, :, :, :, None], (*patches.shape[:5], t, p, p))
    return patches.reshape(grid_h * grid_w, 3 * t * p * p), (1, grid_h, grid_w)


def preprocess_images(images: Sequence[np.ndarray], cfg: QwenImageConfig) -> tuple[np.ndarray, np.ndarray]:
    """All images of a batch, in prompt order: `pixel_values` and `image_grid_thw` as the model takes them."""
    if not images:
        return np.zeros((0, 3 * cfg.temporal_patch_size * cfg.patch_size ** 2), np.float32), np.zeros((0, 3), np.int64)
    done = [preprocess_image(im, cfg) for im in images]
    return np.concatenate([d[0] for d in done]), np.asarray([d[1] for d in done], dtype=np.int64)


def expand_image_tokens(text: str, grid_thw: np.ndarray, merge_size: int, image_token: str = IMAGE_TOKEN) -> str:
    """Each image token -> one copy per merged patch of its image; grids consumed in order."""
    parts = text.split(image_token)
    if len(parts) - 1 != len(grid_thw):
        raise ValueError(f"prompt has {len(parts) - 1} image tokens for {len(grid_thw)} images")
    out = [parts[0]]
    for grid, part in zip(grid_thw, parts[1:]):
        out.append(image_token * int(np.prod(grid) // merge_size ** 2))
        out.append(part)
    return "".join(out)


class QwenInputBuilder:
    """Chat-templated prompts + RGB images -> the tensors a Qwen-VL model's `generate` takes."""

    def __init__(self, tokenizer: Any, image_config: QwenImageConfig, image_token: str = IMAGE_TOKEN) -> None:
        self.tokenizer = tokenizer
        self.image_config = image_config
        self.image_token = image_token
        self.image_token_id = tokenizer.convert_tokens_to_ids(image_token)
        if self.image_token_id is None or self.image_token_id == tokenizer.unk_token_id:
            raise ConfigError(f"the tokenizer has no {image_token} token: not a Qwen-VL checkpoint")

    @classmethod
    def from_pretrained(cls, path: Path | str, *, min_pixels: Optional[int] = None,
                        max_pixels: Optional[int] = None, tokenizer: Any = None) -> QwenInputBuilder:
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        return cls(tokenizer, QwenImageConfig.from_pretrained(path, min_pixels=min_pixels, max_pixels=max_pixels))

    def __call__(self, texts: Sequence[str], images: Sequence[Sequence[np.ndarray]], *,
                 padding_side: str = "left", return_tensors: str = "pt") -> dict[str, Any]:
        """`images[i]` are the images of `texts[i]`, in the order of its image tokens."""
        if len(texts) != len(images):
            raise ValueError(f"{len(texts)} prompts but {len(images)} image lists")
        flat = [im for per_text in images for im in per_text]
        pixel_values, grid_thw = preprocess_images(flat, self.image_config)
        expanded, start = [], 0
        for text, per_text in zip(texts, images):
            expanded.append(expand_image_tokens(text, grid_thw[start:start + len(per_text)],
                                                self.image_config.merge_size, self.image_token))
            start += len(per_text)
        enc = self.tokenizer(expanded, padding=True, padding_side=padding_side, return_tensors=return_tensors)
        ids = enc["input_ids"]
        out: dict[str, Any] = {"input_ids": ids, "attention_mask": enc["attention_mask"]}
        if return_tensors == "pt":
            import torch

            out["mm_token_type_ids"] = (ids == self.image_token_id).to(ids.dtype)
            if flat:
                out["pixel_values"] = torch.from_numpy(np.ascontiguousarray(pixel_values))
                out["image_grid_thw"] = torch.from_numpy(grid_thw)
        else:
            out["mm_token_type_ids"] = (np.asarray(ids) == self.image_token_id).astype(np.int64)
            if flat:
                out["pixel_values"], out["image_grid_thw"] = pixel_values, grid_thw
        return out
