"""The local backend's fast path for Qwen2-VL and Qwen2.5-VL: greedy decoding in a loop of its own,
so that the work the paper names as its last limitation ("redundant visual processing", CitySeeker
appendix H) is done once. Three switches, each off by default (all off, the backend runs
`generate` as before):

- `vision_cache_mb`: vision-tower outputs kept by image content (vision_cache.py): a hit skips the
  image's preprocessing and its encoding;
- `prefix_cache_entries`: the KV caches of recent prompts (prefix_cache.py): only the part after
  the shared beginning is prefilled;
- `static_cache` (with `compile_decode`): the decode step runs on a preallocated KV cache, so its
  shapes never change and `torch.compile` can compile it once per prompt length bucket.

The loop reproduces greedy `generate`: the same inputs (the same preprocessing, token expansion and
3-D rotary positions as `qwen_inputs`), the checkpoint's repetition penalty, end-of-sequence
suppressed while `ignore_eos` asks for every token, and the same stop at end-of-sequence. Sampling
(temperature > 0) is left to `generate`. One request is decoded at a time (the robot's case: batch
1); batches go through the same loop one request after the other, sharing both caches.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.vlm.prefix_cache import PrefixCache
from cityseeker_ros.core.agents.vlm.qwen_inputs import QwenImageConfig, expand_image_tokens, preprocess_image
from cityseeker_ros.core.agents.vlm.vision_cache import EncodedImage, VisionCache, content_key
from cityseeker_ros.core.infra.errors import ConfigError

FAST_FAMILIES = ("qwen2_vl", "qwen2_5_vl")  # their image features enter as token embeddings only
# generation_config fields whose logits processors the loop does not apply: a checkpoint setting any
# of them keeps the switches off (refused at start-up) rather than decode differently from `generate`
UNSUPPORTED_GENERATION = ("no_repeat_ngram_size", "bad_words_ids", "suppress_tokens", "begin_suppress_tokens",
                          "forced_bos_token_id", "forced_eos_token_id", "sequence_bias", "encoder_repetition_penalty",
                          "exponential_decay_length_penalty", "renormalize_logits")
STATIC_BUCKET = 1024  # static cache lengths are rounded up to this: one compilation serves many prompts


@dataclass(frozen=True)
class FastSwitches:
    vision_cache_mb: float = 0.0
    prefix_cache_entries: int = 0
    static_cache: bool = False
    compile_decode: bool = False

    @property
    def any(self) -> bool:
        return self.vision_cache_mb > 0 or self.prefix_cache_entries > 0 or self.static_cache or self.compile_decode

    def check(self) -> None:
        if not isinstance(self.vision_cache_mb, (int, float)) or isinstance(self.vision_cache_mb, bool) \
                or not 0 <= self.vision_cache_mb <= 1e6:
            raise ConfigError(f"transformers backend: vision_cache_mb must be a number from 0 (off) to 1e6, "
                              f"got {self.vision_cache_mb!r}")
        if not isinstance(self.prefix_cache_entries, int) or isinstance(self.prefix_cache_entries, bool) \
                or not 0 <= self.prefix_cache_entries <= 64:
            raise ConfigError(f"transformers backend: prefix_cache_entries must be an integer from 0 (off) to 64, "
                              f"got {self.prefix_cache_entries!r}")
        for name in ("static_cache", "compile_decode"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"transformers backend: {name} must be true or false, got {getattr(self, name)!r}")
        if self.compile_decode and not self.static_cache:
            raise ConfigError("transformers backend: compile_decode needs static_cache true (a compiled step "
                              "needs fixed shapes)")


def check_fast_family(model: Any) -> None:
    family = getattr(model.config, "model_type", "?")
    if family not in FAST_FAMILIES:
        raise ConfigError(f"transformers backend: vision_cache_mb, prefix_cache_entries, static_cache and "
                          f"compile_decode work on {', '.join(FAST_FAMILIES)} checkpoints; this one is {family}")


@dataclass(frozen=True)
class FastResult:
    tokens: list[int]  # generated, end-of-sequence included when it ended the reply
    prompt_tokens: int
    inputs_s: float  # preprocessing the images not found cached, and the tokens
    vision_s: float  # the vision tower on the images not found cached
    prefill_s: float
    decode_s: float
    vision_hits: int
    vision_misses: int
    prefix_tokens: int  # prompt tokens whose keys and values were reused
    compiled: bool  # this call compiled the decode step (its decode time is mostly compilation)


class FastDecoder:
    def __init__(self, model: Any, tokenizer: Any, image_config: QwenImageConfig, image_token: str,
                 switches: FastSwitches, eos_ids: set[int], ignore_eos: bool, settings: str) -> None:
        import torch

        check_fast_family(model)
        config = model.generation_config
        unsupported = [f for f in UNSUPPORTED_GENERATION if getattr(config, f, None) not in (None, False, [], 1.0)]
        if unsupported:
            raise ConfigError(f"transformers backend: the checkpoint's generation_config sets "
                              f"{', '.join(unsupported)}, which the fast path does not apply; turn its switches off")
        self._torch = torch
        self.model, self.tokenizer, self.image_config = model, tokenizer, image_config
        self.image_token, self.image_token_id = image_token, tokenizer.convert_tokens_to_ids(image_token)
        self.switches, self.eos_ids, self.ignore_eos = switches, eos_ids, ignore_eos
        self.repetition_penalty = float(getattr(config, "repetition_penalty", None) or 1.0)
        self.settings = settings
        self.vision = VisionCache(int(switches.vision_cache_mb * 2**20)) if switches.vision_cache_mb else None
        self.prefixes = PrefixCache(switches.prefix_cache_entries, self._new_cache) if switches.prefix_cache_entries \
            else None
        self._compiled: dict[int, Any] = {}  # static cache length -> compiled decode step

    # -- inputs ----------------------------------------------------------------------------------

    def _encode(self, images: list[np.ndarray], keys: list[bytes]) -> tuple[list[EncodedImage], int, float]:
        """Each image's grid and features, from the cache or encoded now (the misses in one tower
        call); the hits and the tower's seconds."""
        torch = self._torch
        tower_s = 0.0
        found: list[Optional[EncodedImage]] = [self.vision.get(k) if self.vision is not None else None for k in keys]
        missing = [i for i, e in enumerate(found) if e is None]
        if missing:
            done = [preprocess_image(images[i], self.image_config) for i in missing]
            pixels = torch.from_numpy(np.ascontiguousarray(np.concatenate([d[0] for d in done])))
            grid = torch.tensor([d[1] for d in done], dtype=torch.long)
            model = self.model
            self._sync()
            started = time.perf_counter()
            with torch.no_grad():
                out = model.model.get_image_features(pixels.to(model.device, model.dtype), grid.to(model.device))
            self._sync()
            tower_s = time.perf_counter() - started
            for i, d, features in zip(missing, done, out.pooler_output):
                found[i] = EncodedImage(tuple(int(v) for v in d[1]), features)  # type: ignore[arg-type]
                if self.vision is not None:
                    self.vision.put(keys[i], found[i])  # type: ignore[arg-type]
        return found, len(images) - len(missing), tower_s  # type: ignore[return-value]

    def _content_keys(self, ids: np.ndarray, encoded: list[EncodedImage], digests: list[bytes]) -> np.ndarray:
        """Token ids, each image's tokens replaced by a number naming its pixels (negative: no token id)."""
        keys = ids.astype(np.int64).copy()
        positions = np.flatnonzero(ids == self.image_token_id)
        start = 0
        for digest, enc in zip(digests, encoded):
            n = int(np.prod(enc.grid_thw)) // self.image_config.merge_size ** 2
            keys[positions[start:start + n]] = -(int.from_bytes(digest[:7], "little") + 1)
            start += n
        return keys

    # -- the loop ----------------------------------------------------------------------------------

    def generate(self, text: str, images: list[np.ndarray], max_new: int) -> FastResult:
        torch = self._torch
        model = self.model
        t0 = time.perf_counter()
        digests = [content_key(im, self.settings) for im in images]
        encoded, hits, tower_s = self._encode(images, digests)
        grids = np.asarray([e.grid_thw for e in encoded], dtype=np.int64).reshape(-1, 3)
        expanded = expand_image_tokens(text, grids, self.image_config.merge_size, self.image_token) if images else text
        ids = self.tokenizer([expanded], return_tensors="pt")["input_ids"].to(model.device)
        length = ids.shape[1]
        t1 = time.perf_counter()
        with torch.no_grad():
            embeds = model.model.get_input_embeddings()(ids)
            if images:
                features = torch.cat([e.features for e in encoded]).to(embeds.device, embeds.dtype)
                embeds = embeds.masked_scatter((ids == self.image_token_id).unsqueeze(-1), features)
            grid_t = torch.from_numpy(grids).to(model.device) if images else None
            positions, _ = model.model.get_rope_index(ids, image_grid_thw=grid_t, attention_mask=torch.ones_like(ids),
                                                      mm_token_type_ids=(ids == self.image_token_id).to(ids.dtype))
            reused, cache = 0, None
            keys = self._content_keys(ids[0].cpu().numpy(), encoded, digests) if self.prefixes is not None else None
            if self.prefixes is not None:
                reused, cache = self.prefixes.take(keys)
            if cache is None:
                cache = self._new_cache()
            logits = self._step(embeds[:, reused:], positions[:, :, reused:], cache,
                                torch.arange(reused, length, device=model.device))
            if self.prefixes is not None:
                self.prefixes.put(keys, cache)  # a later decode may extend it: take() copies and cuts
            t2 = time.perf_counter()
            tokens, compiled = self._decode(ids, logits, cache, int(positions.max()) + 1, length, max_new)
        self._sync()
        t3 = time.perf_counter()
        return FastResult(tokens, length, t1 - t0 - tower_s, tower_s, t2 - t1, t3 - t2, hits, len(images) - hits,
                          reused, compiled)

    def _new_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def _step(self, embeds: Any, positions: Any, cache: Any, cache_position: Any) -> Any:
        """The language model over new positions; the last position's logits (float32)."""
        model = self.model
        out = model.model.language_model(inputs_embeds=embeds, position_ids=positions, past_key_values=cache,
                                         use_cache=True, cache_position=cache_position)
        return model.lm_head(out.last_hidden_state[:, -1:]).float()[:, -1]

    def _decode(self, ids: Any, logits: Any, cache: Any, next_position: int, length: int,
                max_new: int) -> tuple[list[int], bool]:
        torch = self._torch
        model = self.model
        step, compiled = self._step, False
        if self.switches.static_cache:
            cache_len = -(-(length + max_new) // STATIC_BUCKET) * STATIC_BUCKET
            cache = self._static_copy(cache, length, cache_len)
            if self.switches.compile_decode:
                step, compiled = self._compiled_step(cache_len)
        embed = model.model.get_input_embeddings()
        seen = ids[0].tolist()
        tokens: list[int] = []
        for i in range(max_new):
            token = self._choose(logits, seen)
            tokens.append(token)
            seen.append(token)
            if token in self.eos_ids and not self.ignore_eos or i == max_new - 1:
                break
            position = torch.full((3, 1, 1), next_position + i, dtype=torch.long, device=model.device)
            new = torch.tensor([[token]], device=model.device)
            logits = step(embed(new), position, cache, torch.tensor([length + i], device=model.device))
        return tokens, compiled

    def _choose(self, logits: Any, seen: list[int]) -> int:
        """Greedy, after the processors greedy `generate` applies: the repetition penalty over the
        prompt and the reply so far, and (ignore_eos) end-of-sequence never chosen."""
        torch = self._torch
        scores = logits[0]
        if self.repetition_penalty != 1.0:
            index = torch.tensor(sorted(set(seen)), device=scores.device)
            picked = scores[index]
            scores = scores.clone()
            scores[index] = torch.where(picked < 0, picked * self.repetition_penalty, picked / self.repetition_penalty)
        if self.ignore_eos and self.eos_ids:
            scores = scores.clone()
            scores[list(self.eos_ids)] = -float("inf")
        return int(scores.argmax())

    def _static_copy(self, cache: Any, length: int, cache_len: int) -> Any:
        """The prefilled keys and values in a preallocated cache with room for the whole reply."""
        torch = self._torch
        from transformers import StaticCache

        static = StaticCache(config=self.model.config, max_cache_len=cache_len)
        where = torch.arange(length, device=self.model.device)
        for index, layer in enumerate(cache.layers):
            static.update(layer.keys[:, :, :length], layer.values[:, :, :length], index, {"cache_position": where})
        return static

    def _compiled_step(self, cache_len: int) -> tuple[Any, bool]:
        """The decode step compiled for this cache length (compiled on its first use: reported).
        Lengths come in STATIC_BUCKET steps, so prompts of similar length share one compilation."""
        if cache_len in self._compiled:
            return self._compiled[cache_len], False
        self._compiled[cache_len] = self._torch.compile(self._step, dynamic=False, fullgraph=False)
        return self._compiled[cache_len], True

    def _sync(self) -> None:
        torch = self._torch
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
