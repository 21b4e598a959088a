"""Vision-language models with random weights, built offline from configs.

No weights can be downloaded on these machines, yet the transformers backend must be tested
through the real `from_pretrained` path and timed at full size. So:

- ``size="tiny"``: a complete checkpoint folder (config, random weights, tokenizer, image
  processor, chat template) of a few hundred KB that ``AutoModelForImageTextToText`` /
  ``AutoProcessor`` / ``AutoTokenizer.from_pretrained`` load like a published one.
- ``size="3b"|"7b"|"32b"`` (Qwen2.5-VL): the published architecture written out below. The
  folder gets config, tokenizer and processor files but no weights (32B is 65 GB);
  :func:`build_random_model` instantiates the weights directly on the target device, optionally
  quantised layer by layer so that a 4-bit 32B model never exists in bf16 all at once.
  Latency does not depend on weight values once the number of generated tokens is fixed.

The tokenizer is a small byte-level BPE trained with `tokenizers` on a fixed corpus, wrapped in
the family's real tokenizer class with the family's special tokens, so prompts tokenise to more
(shorter) tokens than with the published vocabulary: image tokens, which dominate a multi-view
prompt, are counted exactly. Everything is deterministic given ``seed``.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cityseeker_ros.core.infra.errors import ConfigError

FAMILIES = ("qwen2.5-vl", "qwen2-vl", "qwen3-vl", "llava", "idefics3")
FULL_SIZES = {"qwen2.5-vl": ("3b", "7b", "32b")}
RANDOM_QUANTIZATIONS = ("none", "bnb-8bit", "bnb-4bit", "quanto-int8", "quanto-int4")

_CORPUS = (
    "You are a pedestrian in a city. Look at the street views and choose the heading that leads to the place "
    "that meets the request. Turn left at the cafe, walk north past the bank and the pharmacy, cross the road "
    "at the station, the restaurant is on the right next to the supermarket. Answer in JSON with the keys "
    "\"heading\", \"reason\" and \"confidence\": {\"heading\": 90, \"reason\": \"the shop sign\", "
    "\"confidence\": 0.8}. View 1 faces 0 degrees, view 2 faces 90 degrees, view 3 faces 180 degrees, "
    "view 4 faces 270 degrees. Stop when the target is in sight. I am hungry and want coffee, where can I buy "
    "medicine, find a hotel, a bookstore, a hospital, a school, a park, an ATM, a post office, a museum."
)
_BPE_VOCAB = 512

# --- Qwen-VL -------------------------------------------------------------------------------------

_QWEN_SPECIAL = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)
# The published Qwen2-VL / Qwen2.5-VL template, video branch included (Qwen3-VL's differs only
# in tool-calling parts the benchmark does not use).
QWEN_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Qwen2.5-VL as published (config.json of Qwen/Qwen2.5-VL-{3B,7B,32B}-Instruct). Token ids are
# set from our tokenizer at build time; they do not change any tensor shape.
_QWEN25_VISION = {
    "depth": 32, "hidden_size": 1280, "hidden_act": "silu", "num_heads": 16, "in_channels": 3,
    "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
    "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2,
}
_QWEN25_TEXT = {
    "hidden_act": "silu", "max_position_embeddings": 128000, "rms_norm_eps": 1e-6, "use_sliding_window": False,
    "sliding_window": 32768, "attention_dropout": 0.0, "initializer_range": 0.02,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
}
QWEN25_VL_SIZES: dict[str, dict[str, Any]] = {
    "3b": {
        "text": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
                 "num_attention_heads": 16, "num_key_value_heads": 2, "max_window_layers": 70},
        "vision": {"intermediate_size": 3420, "out_hidden_size": 2048},
        "tie_word_embeddings": True,
    },
    "7b": {
        "text": {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                 "num_attention_heads": 28, "num_key_value_heads": 4, "max_window_layers": 28},
        "vision": {"intermediate_size": 3420, "out_hidden_size": 3584},
        "tie_word_embeddings": False,
    },
    "32b": {
        "text": {"vocab_size": 152064, "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
                 "num_attention_heads": 40, "num_key_value_heads": 8, "max_window_layers": 64},
        "vision": {"intermediate_size": 3456, "out_hidden_size": 5120},
        "tie_word_embeddings": False,
    },
}
# Published Qwen2.5-VL preprocessor_config.json (min 4 and max 16384 merged 28-pixel patches).
_QWEN25_PREPROCESSOR = {"min_pixels": 3136, "max_pixels": 12845056}

# --- tiny architectures ----------------------------------------------------------------------------
# Wide enough init that greedy decoding has clear winners, so batched and single runs agree.
_TINY_INIT = 0.2
_TINY_TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "max_position_embeddings": 4096, "initializer_range": _TINY_INIT}
_TINY_QWEN_PIXELS = {"min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 64}  # 1..16 image tokens per view


def _check_family_size(family: str, size: str) -> None:
    if family not in FAMILIES:
        raise ConfigError(f"unknown VLM family '{family}'; known: {', '.join(FAMILIES)}")
    sizes = ("tiny", *FULL_SIZES.get(family, ()))
    if size not in sizes:
        raise ConfigError(f"family '{family}' has no random size '{size}'; available: {', '.join(sizes)}")


# --- tokenizers -------------------------------------------------------------------------------------

def _train_bpe(pre_tokenizer: Any, special: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A small BPE over a fixed corpus: the same vocabulary on every machine and run."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    alphabet = pre_tokenizers.ByteLevel.alphabet() if isinstance(pre_tokenizer, pre_tokenizers.ByteLevel) else []
    trainer = trainers.BpeTrainer(vocab_size=_BPE_VOCAB, initial_alphabet=alphabet, special_tokens=special,
                                  show_progress=False)
    tok.train_from_iterator([_CORPUS] * 4, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return dict(model["vocab"]), merges


def _qwen_tokenizer() -> Any:
    from tokenizers import pre_tokenizers
    from transformers import Qwen2Tokenizer

    vocab, merges = _train_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False), [])
    for token in _QWEN_SPECIAL:  # after the BPE ids, like the published vocabulary
        vocab[token] = len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, eos_token="<|im_end|>",
                         pad_token="<|endoftext|>", extra_special_tokens=list(_QWEN_SPECIAL[1:]))
    tok.chat_template = QWEN_CHAT_TEMPLATE
    return tok


# LLaVA-1.5 renders "USER: <image>\n... ASSISTANT:"; this one keeps images where the request put them.
_LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{% for c in message['content'] %}{{ c['text'] }}{% endfor %}\n"
    "{% else %}{{ message['role'].upper() + ': ' }}"
    "{% for c in message['content'] %}{% if c['type'] == 'image' %}{{ '<image>\n' }}"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def _llava_tokenizer() -> Any:
    """LLaVA-1.5 ships Llama's SentencePiece-style BPE: metaspace, byte fallback, <image> and <pad>."""
    from tokenizers import pre_tokenizers
    from transformers import LlamaTokenizer

    base = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    vocab, merges = _train_bpe(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False), base)
    for token in ("<image>", "<pad>"):
        vocab[token] = len(vocab)
    tok = LlamaTokenizer(vocab=vocab, merges=merges, pad_token="<pad>", extra_special_tokens=["<image>"])
    tok.chat_template = _LLAVA_CHAT_TEMPLATE
    return tok


_IDEFICS3_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _idefics3_tokenizer() -> Any:
    """SmolVLM-style: GPT-2 byte-level BPE plus the Idefics3 image and tile tokens."""
    from tokenizers import AddedToken, pre_tokenizers
    from transformers import GPT2Tokenizer

    vocab, merges = _train_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False), [])
    special = ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>",
               "<global-img>"]
    tiles = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    for token in special + tiles:
        vocab[token] = len(vocab)
    tok = GPT2Tokenizer(vocab=vocab, merges=merges, unk_token="<|endoftext|>", bos_token="<|im_start|>",
                        eos_token="<end_of_utterance>", pad_token="<|endoftext|>",
                        extra_special_tokens=special[3:])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in tiles])
    tok.chat_template = _IDEFICS3_CHAT_TEMPLATE
    return tok


# --- configs ------------------------------------------------------------------------------------------

def _qwen_ids(tok: Any) -> dict[str, int]:
    ids = {t: tok.convert_tokens_to_ids(t) for t in _QWEN_SPECIAL}
    return {"image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
            "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"]}


def _qwen_text_ids(tok: Any) -> dict[str, int]:
    return {"bos_token_id": tok.convert_tokens_to_ids("<|endoftext|>"),
            "eos_token_id": tok.convert_tokens_to_ids("<|im_end|>"),
            "pad_token_id": tok.convert_tokens_to_ids("<|endoftext|>")}


def _config(family: str, size: str, tok: Any) -> Any:
    """The model config; for full sizes only the token ids differ from the published one."""
    import transformers as tf

    vocab = len(tok)
    if family == "qwen2.5-vl":
        if size == "tiny":
            text = {**_TINY_TEXT, "vocab_size": vocab,
                    "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [1, 1, 2]}}
            vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
                      "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56,
                      "fullatt_block_indexes": [1], "tokens_per_second": 2, "initializer_range": _TINY_INIT}
            tie = False
        else:
            arch = QWEN25_VL_SIZES[size]
            text = {**_QWEN25_TEXT, **arch["text"]}
            vision = {**_QWEN25_VISION, **arch["vision"]}
            tie = arch["tie_word_embeddings"]
        return tf.Qwen2_5_VLConfig(text_config={**text, **_qwen_text_ids(tok), "tie_word_embeddings": tie},
                                   vision_config=vision, tie_word_embeddings=tie, **_qwen_ids(tok))
    if family == "qwen2-vl":
        text = {**_TINY_TEXT, "vocab_size": vocab, **_qwen_text_ids(tok),
                "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [1, 1, 2]}}
        vision = {"depth": 2, "embed_dim": 32, "hidden_size": 32, "mlp_ratio": 2, "num_heads": 2, "patch_size": 14,
                  "spatial_merge_size": 2, "temporal_patch_size": 2, "initializer_range": _TINY_INIT}
        return tf.Qwen2VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))
    if family == "qwen3-vl":
        text = {**_TINY_TEXT, "vocab_size": vocab, "head_dim": 8, **_qwen_text_ids(tok),
                "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [1, 1, 2],
                                    "mrope_interleaved": True}}
        vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 16,
                  "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32,
                  "num_position_embeddings": 64, "deepstack_visual_indexes": [0], "initializer_range": _TINY_INIT}
        return tf.Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))
    text = {**_TINY_TEXT, "model_type": "llama", "vocab_size": vocab, "pad_token_id": tok.pad_token_id,
            "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id}
    if family == "llava":
        vision = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                  "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 32, "patch_size": 8,
                  "projection_dim": 32, "initializer_range": _TINY_INIT}
        return tf.LlavaConfig(text_config=text, vision_config=vision, image_token_index=tok.convert_tokens_to_ids(
            "<image>"), image_seq_length=16, vision_feature_select_strategy="default", vision_feature_layer=-2,
            pad_token_id=tok.pad_token_id)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8, "initializer_range": _TINY_INIT}
    return tf.Idefics3Config(text_config=text, vision_config=vision, scale_factor=2,
                             image_token_id=tok.convert_tokens_to_ids("<image>"), pad_token_id=tok.pad_token_id)


def _tokenizer(family: str) -> Any:
    if family.startswith("qwen"):
        return _qwen_tokenizer()
    return _llava_tokenizer() if family == "llava" else _idefics3_tokenizer()


def _save_processor(family: str, size: str, tok: Any, out: Path) -> None:
    """Tokenizer, image processor and processor files as the published checkpoints lay them out."""
    tok.save_pretrained(out)
    if family.startswith("qwen"):
        # The Qwen processors need torchvision (video processor) to be constructed, so write their
        # files directly; `qwen_inputs` and, with torchvision, `AutoProcessor` read them.
        patch = 16 if family == "qwen3-vl" else 14
        mean, std = ([0.5] * 3, [0.5] * 3) if family == "qwen3-vl" else (
            [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711])
        pixels = _TINY_QWEN_PIXELS if size == "tiny" else _QWEN25_PREPROCESSOR
        if family == "qwen3-vl" and size == "tiny":
            pixels = {"min_pixels": 32 * 32 * 4, "max_pixels": 32 * 32 * 64}
        processor_class = {"qwen2.5-vl": "Qwen2_5_VLProcessor", "qwen2-vl": "Qwen2VLProcessor",
                           "qwen3-vl": "Qwen3VLProcessor"}[family]
        pre = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": processor_class,
               "do_resize": True, "do_rescale": True, "do_normalize": True, "do_convert_rgb": True,
               "resample": 3, "rescale_factor": 1 / 255, "image_mean": mean, "image_std": std,
               "patch_size": patch, "temporal_patch_size": 2, "merge_size": 2,
               "size": {"shortest_edge": pixels["min_pixels"], "longest_edge": pixels["max_pixels"]}, **pixels}
        (out / "preprocessor_config.json").write_text(json.dumps(pre, indent=2) + "\n")
        (out / "chat_template.json").write_text(json.dumps({"chat_template": QWEN_CHAT_TEMPLATE}, indent=2) + "\n")
        return
    if family == "llava":
        from transformers import CLIPImageProcessorPil, LlavaProcessor

        image_processor = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
        processor = LlavaProcessor(image_processor=image_processor, tokenizer=tok, patch_size=8,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   chat_template=_LLAVA_CHAT_TEMPLATE)
    else:
        from transformers import Idefics3ImageProcessorPil, Idefics3Processor

        image_processor = Idefics3ImageProcessorPil(size={"longest_edge": 64}, max_image_size={"longest_edge": 32})
        processor = Idefics3Processor(image_processor=image_processor, tokenizer=tok, image_seq_len=4,
                                      chat_template=_IDEFICS3_CHAT_TEMPLATE)
    processor.save_pretrained(out)


def _model_class(family: str) -> Any:
    import transformers as tf

    return {"qwen2.5-vl": tf.Qwen2_5_VLForConditionalGeneration, "qwen2-vl": tf.Qwen2VLForConditionalGeneration,
            "qwen3-vl": tf.Qwen3VLForConditionalGeneration, "llava": tf.LlavaForConditionalGeneration,
            "idefics3": tf.Idefics3ForConditionalGeneration}[family]


def build_random_checkpoint(family: str, out_dir: Path, *, size: str = "tiny", seed: int = 0) -> Path:
    """A checkpoint folder for `family`; weights only for ``size="tiny"`` (see the module docstring)."""
    _check_family_size(family, size)
    import torch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(family)
    config = _config(family, size, tok)
    _save_processor(family, size, tok, out)
    if size != "tiny":
        config.dtype = "bfloat16"
        config.save_pretrained(out)
        return out
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _model_class(family)._from_config(config, dtype=torch.float32)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(out)
    return out


# --- full-size random models on the device -------------------------------------------------------------

def _chunks(module: Any, max_params: int, prefix: str = "") -> Iterator[tuple[Any, str, str]]:
    """(parent, name, dotted name) of pieces with at most `max_params` parameters (bigger leaves too)."""
    for name, child in module.named_children():
        full = f"{prefix}.{name}" if prefix else name
        if sum(p.numel() for p in child.parameters()) <= max_params or not list(child.children()):
            yield module, name, full
        else:
            yield from _chunks(child, max_params, full)


def _post_order(module: Any) -> Iterator[Any]:
    for child in module.children():
        yield from _post_order(child)
    yield module


def _initialisers(model: Any) -> dict[int, Any]:
    """module id -> the `_init_weights` of its nearest PreTrainedModel (composite models nest them)."""
    from transformers import PreTrainedModel

    owners: dict[int, Any] = {}

    def visit(module: Any, init: Any) -> None:
        if isinstance(module, PreTrainedModel):
            init = module._init_weights
        owners[id(module)] = init
        for child in module.children():
            visit(child, init)

    visit(model, model._init_weights)
    return owners


def _quantized_linear(linear: Any, quantization: str, dtype: Any, device: Any) -> Any:
    """The quantised twin of one nn.Linear, as `from_pretrained(quantization_config=...)` builds it."""
    import torch

    if quantization.startswith("quanto"):
        from optimum.quanto import QLinear, qint4, qint8

        q = QLinear.from_module(linear, weights=qint8 if quantization == "quanto-int8" else qint4)
        q.freeze()
        return q
    import bitsandbytes as bnb

    bias = linear.bias is not None
    # Int8Params quantises only on a move from the CPU; Params4bit on any move
    weight = linear.weight.data.to("cpu") if quantization == "bnb-8bit" else linear.weight.data
    if quantization == "bnb-8bit":
        q = bnb.nn.Linear8bitLt(linear.in_features, linear.out_features, bias=bias, has_fp16_weights=False,
                                threshold=6.0, device="meta")
        q.weight = bnb.nn.Int8Params(weight, requires_grad=False, has_fp16_weights=False)
    else:
        q = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=bias, compute_dtype=dtype,
                              compress_statistics=True, quant_type="nf4", device="meta")
        q.weight = bnb.nn.Params4bit(weight, requires_grad=False, compress_statistics=True, quant_type="nf4",
                                     module=q)
    if bias:
        q.bias = torch.nn.Parameter(linear.bias.data.to("cpu"), requires_grad=False)
    return q.to(device)


def _quantize_child(parent: Any, name: str, skip: int, quantization: str, dtype: Any, device: Any) -> None:
    """Quantise every nn.Linear at or below parent.<name>, except the module whose id is `skip`."""
    import torch

    child = parent._modules[name]
    if id(child) == skip:
        return
    if isinstance(child, torch.nn.Linear):
        parent._modules[name] = _quantized_linear(child, quantization, dtype, device)
        return
    for sub in list(child._modules):
        _quantize_child(child, sub, skip, quantization, dtype, device)


def build_random_model(family: str, size: str, dtype: str = "bfloat16", device: str = "cuda", *,
                       quantization: str = "none", seed: int = 0, chunk_params: int = 600_000_000) -> Any:
    """The model with random weights, materialised on `device` one chunk at a time.

    Parameters are created on the meta device; then each chunk (a decoder or vision block, the
    embeddings...) is allocated on `device`, initialised by the model's own `_init_weights`
    (rotary tables included) and, if asked, quantised before the next one is allocated, so peak
    memory is the quantised model plus one chunk. As with `from_pretrained(quantization_config=...)`
    every nn.Linear except the output head is quantised. Chunks should keep attention and MLP
    blocks whole (the default does for the published sizes): an init that a parent applies to
    children in other chunks is skipped, leaving them the generic init.
    """
    _check_family_size(family, size)
    if quantization not in RANDOM_QUANTIZATIONS:
        raise ConfigError(f"random models support quantization {', '.join(RANDOM_QUANTIZATIONS)}; got "
                          f"'{quantization}' (load a real checkpoint for the others)")
    import torch

    torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}.get(dtype)
    if torch_dtype is None:
        raise ConfigError(f"dtype must be bfloat16, float16 or float32 for random models, got '{dtype}'")
    target = torch.device(device)
    from cityseeker_ros.core.agents.vlm.quantization import check_available

    check_available(quantization, target.type)
    config = _config(family, size, _tokenizer(family))
    with torch.device("meta"):
        model = _model_class(family)._from_config(config, dtype=torch_dtype)
    inits = _initialisers(model)
    head = model.get_output_embeddings()
    skip = id(head) if head is not None else 0
    torch.manual_seed(seed)
    in_chunks: set[int] = set()
    with torch.no_grad():
        for parent, name, _ in _chunks(model, chunk_params):
            parent._modules[name].to_empty(device=target)
            for sub in _post_order(parent._modules[name]):  # children first, so a parent's own init wins
                inits[id(sub)](sub)
            if quantization != "none":
                _quantize_child(parent, name, skip, quantization, torch_dtype, target)
            chunk = parent._modules[name]
            in_chunks.update(id(sub) for sub in chunk.modules())
            for tensor in (*chunk.parameters(), *chunk.buffers()):  # HF's init helpers skip flagged tensors
                tensor._is_hf_initialized = True
        for module in _post_order(model):  # the containers, last, as HF's initialize_weights does
            if id(module) in in_chunks:
                continue
            if any(t.is_meta for t in (*module.parameters(recurse=False), *module.buffers(recurse=False))):
                module.to_empty(device=target, recurse=False)
            inits[id(module)](module)
    model.tie_weights()
    model.eval()
    return model
