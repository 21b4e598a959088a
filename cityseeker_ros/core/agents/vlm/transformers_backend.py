"""A local VLM run in-process with Hugging Face transformers, from a checkpoint folder.

Weights are never downloaded: `model` is a local folder and every `from_pretrained` gets
`local_files_only=True`. Requests are batched (left padding) up to `max_batch_size`; every
request of a batch reports that batch's preprocessing and generation times, which is how long
it waited. Qwen-VL checkpoints are fed through `qwen_inputs` when torchvision is unusable (the
transformers 5 Qwen processors need it); the inputs are identical to the processor's.

torch and transformers are imported when a backend is built, never at module import.
"""
from __future__ import annotations

import copy
import gc
import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.vlm.backend import (
    BACKENDS,
    Backend,
    BackendError,
    CacheUse,
    Generation,
    GenerationRequest,
    Latency,
)
from cityseeker_ros.core.agents.vlm.fast_decode import FastDecoder, FastSwitches, check_fast_family
from cityseeker_ros.core.agents.vlm.quantization import QUANTIZATIONS, quantization_config
from cityseeker_ros.core.agents.vlm.qwen_inputs import IMAGE_TOKEN, QWEN_MODEL_TYPES, QwenImageConfig, QwenInputBuilder
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.text import clean_text

log = logging.getLogger("cityseeker_ros.vlm.transformers")

DTYPES = ("auto", "float32", "bfloat16", "float16")
PROCESSORS = ("auto", "transformers", "qwen_inputs")


def _torchvision_usable() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - a wheel built for another torch fails in many ways
        return False
    return True


def _fit_pixels(image: np.ndarray, min_pixels: Optional[int], max_pixels: Optional[int]) -> np.ndarray:
    """Rescale (aspect kept, bicubic) so the area lies within the limits; families without their own."""
    area = image.shape[0] * image.shape[1]
    if max_pixels and area > max_pixels:
        scale = math.sqrt(max_pixels / area)
    elif min_pixels and area < min_pixels:
        scale = math.sqrt(min_pixels / area)
    else:
        return image
    from PIL import Image

    size = (max(1, int(image.shape[1] * scale)), max(1, int(image.shape[0] * scale)))
    return np.asarray(Image.fromarray(image).resize(size, resample=Image.Resampling.BICUBIC))


class _ProcessorInputs:
    """The checkpoint's own processor (AutoProcessor)."""

    kind = "transformers-processor"

    def __init__(self, processor: Any, qwen: bool, min_pixels: Optional[int], max_pixels: Optional[int]) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.qwen = qwen
        self.min_pixels, self.max_pixels = min_pixels, max_pixels
        self.extra: dict[str, Any] = {}
        if qwen and (min_pixels or max_pixels):
            size = dict(getattr(processor.image_processor, "size", None) or {})
            self.extra["size"] = {"shortest_edge": min_pixels or size.get("shortest_edge"),
                                  "longest_edge": max_pixels or size.get("longest_edge")}

    def __call__(self, texts: list[str], images: list[list[np.ndarray]]) -> dict[str, Any]:
        from PIL import Image

        if not self.qwen:
            images = [[_fit_pixels(im, self.min_pixels, self.max_pixels) for im in per] for per in images]
        nested = [[Image.fromarray(im) for im in per] for per in images]
        kwargs: dict[str, Any] = dict(self.extra)
        if any(nested):
            kwargs["images"] = nested if not self.qwen else [im for per in nested for im in per]
        return dict(self.processor(text=texts, padding=True, padding_side="left", return_tensors="pt", **kwargs))


class _PhaseClock:
    """Times `generate`'s phases without changing what it does: the vision tower by hooks on it, the
    prefill by the first new token a streamer receives (transformers calls `put` with the prompt, then
    with each new token)."""

    def __init__(self, sync: Any) -> None:
        self._sync = sync
        self.vision_s = 0.0
        self._vision_started = 0.0
        self.started = self.first_token = 0.0
        self._puts = 0

    def attach(self, visual: Any) -> None:
        visual.register_forward_pre_hook(lambda *_: self._vision_start())
        visual.register_forward_hook(lambda *_: self._vision_end())

    def _vision_start(self) -> None:
        self._sync()
        self._vision_started = time.perf_counter()

    def _vision_end(self) -> None:
        self._sync()
        self.vision_s += time.perf_counter() - self._vision_started

    def begin(self) -> None:
        self.vision_s, self._puts, self.started, self.first_token = 0.0, 0, time.perf_counter(), 0.0

    def put(self, value: Any) -> None:
        self._puts += 1
        if self._puts == 2:  # the first put is the prompt
            self._sync()
            self.first_token = time.perf_counter()

    def end(self) -> None:
        pass


class _QwenInputs:
    kind = "qwen_inputs"

    def __init__(self, builder: QwenInputBuilder) -> None:
        self.builder = builder
        self.tokenizer = builder.tokenizer

    def __call__(self, texts: list[str], images: list[list[np.ndarray]]) -> dict[str, Any]:
        return self.builder(texts, images, padding_side="left", return_tensors="pt")


@BACKENDS.register("transformers")
class TransformersBackend(Backend):
    """`AutoModelForImageTextToText` + `AutoProcessor` from a local folder; greedy at temperature 0."""

    name = "transformers"

    def __init__(
        self,
        model: str,
        dtype: str = "auto",
        device_map: Optional[str] = None,
        quantization: str = "none",
        min_pixels: Optional[int] = None,
        max_pixels: Optional[int] = None,
        max_batch_size: int = 8,
        attn_implementation: Optional[str] = None,
        seed: int = 0,
        processor: str = "auto",
        ignore_eos: bool = False,
        vision_cache_mb: float = 0.0,
        prefix_cache_entries: int = 0,
        static_cache: bool = False,
        compile_decode: bool = False,
    ) -> None:
        path = Path(str(model)).expanduser()
        if not (path / "config.json").is_file():
            what = "does not exist" if not path.exists() else "has no config.json"
            raise ConfigError(f"transformers backend: model folder '{path}' {what} (weights are never downloaded: "
                              f"give a local checkpoint folder)")
        self._validate(dtype, quantization, min_pixels, max_pixels, max_batch_size, processor)
        switches = FastSwitches(vision_cache_mb, prefix_cache_entries, static_cache, compile_decode)
        switches.check()
        import torch
        import transformers

        transformers.set_seed(seed)
        if device_map is None:
            device_map = "cuda" if torch.cuda.is_available() else "cpu"
        device_type = ("cuda" if torch.cuda.is_available() else "cpu") if device_map == "auto" else device_map
        torch_dtype = self._torch_dtype(dtype, path, device_type)
        qconfig = quantization_config(quantization, device_type=device_type, compute_dtype=torch_dtype,
                                      model_path=path)
        kwargs: dict[str, Any] = {"dtype": torch_dtype, "device_map": device_map, "local_files_only": True}
        if qconfig is not None:
            kwargs["quantization_config"] = qconfig
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        try:
            loaded = transformers.AutoModelForImageTextToText.from_pretrained(str(path), **kwargs)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise ConfigError(f"transformers backend: cannot load '{path}' as an image-text-to-text model "
                              f"({type(exc).__name__}: {exc})") from None
        except RuntimeError as exc:  # CUDA out of memory while loading, a broken kernel...
            raise BackendError(f"transformers backend: loading '{path}' failed: {exc}") from None
        self._attach(loaded, path, quantization=quantization, min_pixels=min_pixels, max_pixels=max_pixels,
                     max_batch_size=max_batch_size, processor=processor, ignore_eos=ignore_eos, seed=seed,
                     switches=switches)

    @classmethod
    def from_model(cls, model: Any, path: Path | str, *, quantization: str = "none", min_pixels: Optional[int] = None,
                   max_pixels: Optional[int] = None, max_batch_size: int = 8, processor: str = "auto",
                   ignore_eos: bool = False, seed: int = 0,
                   switches: FastSwitches = FastSwitches()) -> TransformersBackend:
        """A backend around a model already in memory (random full-size weights); `path` holds its
        tokenizer and processor files."""
        self = cls.__new__(cls)
        self._validate("auto", quantization, min_pixels, max_pixels, max_batch_size, processor)
        switches.check()
        self._attach(model, Path(path), quantization=quantization, min_pixels=min_pixels, max_pixels=max_pixels,
                     max_batch_size=max_batch_size, processor=processor, ignore_eos=ignore_eos, seed=seed,
                     switches=switches)
        return self

    # --- set-up ---------------------------------------------------------------------------------------

    @staticmethod
    def _validate(dtype: str, quantization: str, min_pixels: Optional[int], max_pixels: Optional[int],
                  max_batch_size: int, processor: str) -> None:
        if dtype not in DTYPES:
            raise ConfigError(f"transformers backend: dtype must be one of {', '.join(DTYPES)}, got '{dtype}'")
        if quantization not in QUANTIZATIONS:
            raise ConfigError(f"unknown quantization '{quantization}'; known: {', '.join(QUANTIZATIONS)}")
        if processor not in PROCESSORS:
            raise ConfigError(f"transformers backend: processor must be one of {', '.join(PROCESSORS)}, "
                              f"got '{processor}'")
        if int(max_batch_size) < 1:
            raise ConfigError(f"transformers backend: max_batch_size must be >= 1, got {max_batch_size}")
        for key, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
            if value is not None and int(value) < 1:
                raise ConfigError(f"transformers backend: {key} must be positive, got {value}")
        if min_pixels and max_pixels and min_pixels > max_pixels:
            raise ConfigError(f"transformers backend: min_pixels {min_pixels} exceeds max_pixels {max_pixels}")

    @staticmethod
    def _torch_dtype(dtype: str, path: Path, device_type: str) -> Any:
        """"auto" keeps the checkpoint's dtype, except bf16/fp16 on a CPU, which run far slower than fp32."""
        import torch

        if dtype != "auto":
            return getattr(torch, dtype)
        try:
            raw = json.loads((path / "config.json").read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"transformers backend: cannot read {path / 'config.json'}: {exc}") from None
        saved = raw.get("dtype") or raw.get("torch_dtype") or (raw.get("text_config") or {}).get("dtype")
        if device_type == "cpu" or saved not in ("bfloat16", "float16", "float32"):
            return torch.float32
        return getattr(torch, saved)

    def _attach(self, model: Any, path: Path, *, quantization: str, min_pixels: Optional[int],
                max_pixels: Optional[int], max_batch_size: int, processor: str, ignore_eos: bool, seed: int,
                switches: FastSwitches) -> None:
        import torch

        self._torch = torch
        self.model_path = path
        self.quantization = quantization
        self.max_batch_size = int(max_batch_size)
        self.ignore_eos = bool(ignore_eos)
        self.seed = seed
        self._model = model
        self._family = getattr(model.config, "model_type", "?")
        qwen = self._family in QWEN_MODEL_TYPES
        use_builtin = processor == "qwen_inputs" or (processor == "auto" and qwen and not _torchvision_usable())
        if use_builtin and not qwen:
            raise ConfigError(f"transformers backend: processor 'qwen_inputs' is for Qwen-VL models, "
                              f"'{path}' is {self._family}")
        from transformers import AutoProcessor, AutoTokenizer

        try:
            if use_builtin:
                tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                self._inputs: Any = _QwenInputs(QwenInputBuilder.from_pretrained(
                    path, min_pixels=min_pixels, max_pixels=max_pixels, tokenizer=tokenizer))
            else:
                self._inputs = _ProcessorInputs(AutoProcessor.from_pretrained(str(path), local_files_only=True),
                                                qwen, min_pixels, max_pixels)
        except (OSError, ValueError, ImportError, AttributeError) as exc:
            raise ConfigError(f"transformers backend: cannot load the processor of '{path}' "
                              f"({type(exc).__name__}: {exc})") from None
        self._template_owner = self._chat_template_owner(path)
        tok = self._inputs.tokenizer
        eos = model.generation_config.eos_token_id
        eos = eos if eos is not None else tok.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        self._pad_id = tok.pad_token_id if tok.pad_token_id is not None else next(iter(self._eos_ids), 0)
        self.switches = switches
        self._fast: Optional[FastDecoder] = None
        if switches.any:
            check_fast_family(model)  # before reading a Qwen processor config another family lacks
            image_config = (self._inputs.builder.image_config if isinstance(self._inputs, _QwenInputs) else
                            QwenImageConfig.from_pretrained(path, min_pixels=min_pixels, max_pixels=max_pixels))
            self._fast = FastDecoder(model, tok, image_config, IMAGE_TOKEN, switches, self._eos_ids, self.ignore_eos,
                                     settings=f"{path.resolve()}|{image_config}")
        self._clock = _PhaseClock(self._sync)
        visual = getattr(getattr(model, "model", None), "visual", None)
        self._clock_sees_vision = visual is not None
        if visual is not None:
            self._clock.attach(visual)

    def _chat_template_owner(self, path: Path) -> Any:
        """Whoever holds the chat template: the processor, else the tokenizer (given the folder's file)."""
        proc = getattr(self._inputs, "processor", None)
        if proc is not None and getattr(proc, "chat_template", None):
            return proc
        tok = self._inputs.tokenizer
        if not getattr(tok, "chat_template", None):
            for name in ("chat_template.jinja", "chat_template.json"):
                file = path / name
                if file.is_file():
                    text = file.read_text()
                    tok.chat_template = json.loads(text)["chat_template"] if name.endswith(".json") else text
                    break
            else:
                raise ConfigError(f"transformers backend: '{path}' has no chat template")
        return tok

    # --- generation ------------------------------------------------------------------------------------

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not hasattr(self, "_model"):
            raise BackendError("transformers backend: the model was closed")
        results: list[Optional[Generation]] = [None] * len(requests)
        groups: dict[tuple[int, float], list[int]] = {}
        for i, req in enumerate(requests):  # one generate call needs one token budget and one sampler
            groups.setdefault((int(req.max_new_tokens), float(req.temperature)), []).append(i)
        for (max_new, temperature), indices in groups.items():
            if self._fast is not None and temperature <= 0:
                for i in indices:
                    results[i] = self._generate_fast(requests[i], max_new)
                continue
            for start in range(0, len(indices), self.max_batch_size):
                batch = indices[start:start + self.max_batch_size]
                for i, gen in zip(batch, self._generate_batch([requests[i] for i in batch], max_new, temperature)):
                    results[i] = gen
        return [r for r in results if r is not None]

    def _conversation(self, request: GenerationRequest) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
        conv, images = [], []
        for message in request.messages:
            parts: list[dict[str, Any]] = []
            for content in message.content:
                if isinstance(content, str):
                    parts.append({"type": "text", "text": content})
                else:
                    image = np.asarray(content)
                    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
                        raise BackendError(f"transformers backend: images must be RGB uint8 (H, W, 3), "
                                           f"got {image.dtype} {image.shape}")
                    parts.append({"type": "image"})
                    images.append(image)
            conv.append({"role": message.role, "content": parts})
        return conv, images

    def _generate_fast(self, request: GenerationRequest, max_new: int) -> Generation:
        assert self._fast is not None
        t0 = time.perf_counter()
        conv, images = self._conversation(request)
        text = self._template_owner.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
        template_s = time.perf_counter() - t0
        try:
            done = self._fast.generate(text, images, max_new)
        except (ValueError, TypeError) as exc:
            raise BackendError(f"transformers backend: cannot build the model inputs: {exc}") from None
        except self._torch.OutOfMemoryError as exc:
            self._free_cache()
            raise BackendError(f"transformers backend: out of memory (lower max_pixels or vision_cache_mb): "
                               f"{str(exc).splitlines()[0] if str(exc) else 'CUDA out of memory'}") from None
        except (RuntimeError, IndexError) as exc:
            raise BackendError(f"transformers backend: generation failed: {type(exc).__name__}: {exc}") from None
        reply = clean_text(self._inputs.tokenizer.decode(done.tokens, skip_special_tokens=True)).strip()
        latency = Latency(preprocess_s=template_s + done.inputs_s,
                          generate_s=done.vision_s + done.prefill_s + done.decode_s,
                          vision_s=done.vision_s, prefill_s=done.prefill_s, decode_s=done.decode_s)
        return Generation(text=reply, latency=latency, prompt_tokens=done.prompt_tokens,
                          completion_tokens=len(done.tokens), token_ids=tuple(done.tokens),
                          cache=CacheUse(done.vision_hits, done.vision_misses, done.prefix_tokens, done.compiled))

    def _sync(self) -> None:
        if self._torch.cuda.is_available() and self._torch.cuda.is_initialized():
            self._torch.cuda.synchronize()

    def _generation_config(self, max_new: int, temperature: float) -> Any:
        cfg = copy.deepcopy(self._model.generation_config)
        cfg.max_new_tokens = max_new
        cfg.min_new_tokens = max_new if self.ignore_eos else None
        cfg.do_sample = temperature > 0
        cfg.temperature = temperature if temperature > 0 else None
        if temperature <= 0:  # greedy: the checkpoint's sampling knobs would only raise warnings
            cfg.top_p = cfg.top_k = None
        cfg.pad_token_id = self._pad_id
        cfg.num_beams = 1
        return cfg

    def _generate_batch(self, requests: list[GenerationRequest], max_new: int,
                        temperature: float) -> list[Generation]:
        torch = self._torch
        t0 = time.perf_counter()
        texts, images = [], []
        for req in requests:
            conv, imgs = self._conversation(req)
            texts.append(self._template_owner.apply_chat_template(conv, tokenize=False, add_generation_prompt=True))
            images.append(imgs)
        try:
            inputs = self._inputs(texts, images)
        except (ValueError, TypeError) as exc:
            raise BackendError(f"transformers backend: cannot build the model inputs: {exc}") from None
        model = self._model
        device = model.device
        dtype = model.dtype
        inputs = {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) if hasattr(v, "to") else v
                  for k, v in inputs.items()}
        self._sync()
        t1 = time.perf_counter()
        oom = None
        clock = self._clock
        clock.begin()
        try:
            with torch.no_grad():  # not inference_mode: quanto's int4 kernels bump version counters
                out = model.generate(**inputs, generation_config=self._generation_config(max_new, temperature),
                                     streamer=clock if len(requests) == 1 else None)
            self._sync()
        except torch.OutOfMemoryError as exc:
            oom = str(exc).splitlines()[0] if str(exc) else "CUDA out of memory"
        except (RuntimeError, ValueError, IndexError) as exc:
            raise BackendError(f"transformers backend: generation failed: {type(exc).__name__}: {exc}") from None
        if oom is not None:  # outside the except block, so the traceback no longer pins the activations
            del inputs
            self._free_cache()
            raise BackendError(f"transformers backend: out of memory generating a batch of {len(requests)} "
                               f"(lower max_batch_size or max_pixels): {oom}")
        prompt_len = inputs["input_ids"].shape[1]
        new = out[:, prompt_len:].tolist()
        # Model text enters here: cleaned like every text from outside (core/infra/text.py), whatever the tokenizer.
        decoded = [clean_text(t) for t in self._inputs.tokenizer.batch_decode(new, skip_special_tokens=True)]
        t2 = time.perf_counter()
        phases: dict[str, Optional[float]] = {"vision_s": clock.vision_s if self._clock_sees_vision else None}
        if clock.first_token:  # one request: the streamer saw its first new token
            phases.update(prefill_s=clock.first_token - clock.started - clock.vision_s,
                          decode_s=t2 - clock.first_token)
        latency = Latency(preprocess_s=t1 - t0, generate_s=t2 - t1, **phases)
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        return [Generation(text=text.strip(), latency=latency, prompt_tokens=int(n_prompt),
                           completion_tokens=self._count_completion(row),
                           token_ids=tuple(row[:self._count_completion(row)]))
                for text, row, n_prompt in zip(decoded, new, prompt_tokens)]

    def _count_completion(self, row: list[int]) -> int:
        """Tokens up to and including the first end-of-sequence; what follows is batch padding."""
        if self.ignore_eos:
            return len(row)
        for i, token in enumerate(row):
            if token in self._eos_ids:
                return i + 1
        return len(row)

    # --- reporting and clean-up ------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        model = getattr(self, "_model", None)
        info: dict[str, Any] = {"name": self.name, "model": str(self.model_path), "quantization": self.quantization,
                                "inputs": self._inputs.kind, "max_batch_size": self.max_batch_size,
                                "ignore_eos": self.ignore_eos, "json_schema": "not enforced (prompt only)",
                                "fast_path": asdict(self.switches) if self.switches.any else "off"}
        if model is None:
            return {**info, "closed": True}
        # bitsandbytes packs two 4-bit weights per stored element; other quantised tensors keep their shape
        parameters = sum(p.numel() * (2 if type(p).__name__ == "Params4bit" else 1) for p in model.parameters())
        device_map = getattr(model, "hf_device_map", None)
        info.update({
            "family": self._family,
            "dtype": str(model.dtype).removeprefix("torch."),
            "device": str(model.device) if not device_map or len(set(device_map.values())) < 2 else device_map,
            "parameters": parameters,
            "attn_implementation": getattr(model.config, "_attn_implementation", None),
        })
        return info

    def _free_cache(self) -> None:
        gc.collect()
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()

    def close(self) -> None:
        if hasattr(self, "_model"):
            del self._model
            self._free_cache()
