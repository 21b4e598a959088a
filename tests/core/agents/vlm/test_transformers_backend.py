"""TransformersBackend through the real `from_pretrained` path on tiny random checkpoints (CPU,
offline), the torchvision-free Qwen input path against the real processor classes, quantisation
names, random full-size architectures (on the meta device) and the configuration errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from cityseeker_ros.core.agents.vlm import random_models, transformers_backend  # noqa: E402
from cityseeker_ros.core.agents.vlm.backend import BackendError, GenerationRequest, Message, make_backend  # noqa: E402
from cityseeker_ros.core.agents.vlm.quantization import QUANTIZATIONS, check_available  # noqa: E402
from cityseeker_ros.core.agents.vlm.qwen_inputs import QwenImageConfig, QwenInputBuilder, smart_resize  # noqa: E402
from cityseeker_ros.core.agents.vlm.transformers_backend import TransformersBackend  # noqa: E402
from cityseeker_ros.core.infra.errors import ConfigError  # noqa: E402


def views(n: int, seed: int, size: tuple[int, int] = (48, 64)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (*size, 3), dtype=np.uint8) for _ in range(n)]


def ask(text: str, images: list[np.ndarray], max_new_tokens: int = 10) -> GenerationRequest:
    content: list = []
    for i, image in enumerate(images):
        content += [f"View {i + 1}:", image]
    content.append(text)
    return GenerationRequest(messages=(Message("system", ("You choose a heading.",)), Message("user", tuple(content))),
                             max_new_tokens=max_new_tokens)


REQUESTS = [ask("Where is the pharmacy?", views(2, 1)), ask("Find a cafe.", views(4, 2)),
            ask("Which way to the bank?", views(3, 3))]


@pytest.fixture(scope="module")
def backends(tiny_checkpoints):
    made = {f: make_backend("transformers", model=str(tiny_checkpoints[f])) for f in ("qwen2.5-vl", "llava")}
    yield made
    for b in made.values():
        b.close()


# ----- loading and generating -----

@pytest.mark.parametrize("family", ["qwen2.5-vl", "llava", "idefics3"])
def test_generates_from_images_and_text(tiny_checkpoints, family):
    b = make_backend("transformers", model=str(tiny_checkpoints[family]), dtype="float32", device_map="cpu")
    try:
        gen = b.generate([ask("Which view shows the cafe?", views(3, 0), max_new_tokens=6)])[0]
        info = b.describe()
    finally:
        b.close()
    assert isinstance(gen.text, str)
    assert 1 <= gen.completion_tokens <= 6
    assert gen.prompt_tokens > 3 * 4  # at least the image tokens of three views
    assert gen.latency.preprocess_s > 0 and gen.latency.generate_s > 0
    expected_type = {"qwen2.5-vl": "qwen2_5_vl", "llava": "llava", "idefics3": "idefics3"}[family]
    assert info["family"] == expected_type and info["model"] == str(tiny_checkpoints[family])
    assert info["dtype"] == "float32" and info["device"] == "cpu" and info["quantization"] == "none"
    assert 10_000 < info["parameters"] < 1_000_000
    assert info["inputs"] == ("qwen_inputs" if family == "qwen2.5-vl" and not transformers_backend._torchvision_usable()
                              else "transformers-processor")


@pytest.mark.parametrize("family", ["qwen2.5-vl", "llava"])
def test_batched_greedy_equals_one_by_one(backends, family):
    b = backends[family]
    batched = b.generate(REQUESTS)
    single = [b.generate([r])[0] for r in REQUESTS]
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.prompt_tokens for g in batched] == [g.prompt_tokens for g in single]
    assert len({g.prompt_tokens for g in batched}) == 3  # different lengths: left padding was exercised
    assert [g.completion_tokens for g in batched] == [g.completion_tokens for g in single]


def test_deterministic_across_loads_and_calls(tiny_checkpoints, backends):
    again = make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]))
    try:
        first = [g.text for g in backends["qwen2.5-vl"].generate(REQUESTS[1:2])]
        assert [g.text for g in again.generate(REQUESTS[1:2])] == first
        assert [g.text for g in backends["qwen2.5-vl"].generate(REQUESTS[1:2])] == first
    finally:
        again.close()


def test_batches_split_by_max_batch_size_and_token_budget(tiny_checkpoints, backends):
    b = make_backend("transformers", model=str(tiny_checkpoints["llava"]), max_batch_size=2, ignore_eos=True)
    try:
        reqs = [*REQUESTS, ask("Short.", views(1, 9), max_new_tokens=3)]
        gens = b.generate(reqs)
    finally:
        b.close()
    assert [g.completion_tokens for g in gens] == [10, 10, 10, 3]  # ignore_eos: exactly the budget
    reference = backends["llava"].generate(reqs)
    # without ignore_eos the same greedy tokens, cut at the first end of sequence
    for forced, free in zip(gens, reference):
        assert forced.text.startswith(free.text)


def test_pixel_limits(tiny_checkpoints):
    small = make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]), max_pixels=28 * 28 * 4)
    large = make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]), min_pixels=28 * 28 * 16,
                         max_pixels=28 * 28 * 16)
    try:
        req = [ask("Go.", views(1, 4, size=(200, 300)), max_new_tokens=1)]
        # 200x300 under 3136 px -> 28x56 -> 2x4 patches -> 2 tokens; under 12544 px -> 84x112 -> 12 tokens
        assert large.generate(req)[0].prompt_tokens - small.generate(req)[0].prompt_tokens == 12 - 2
    finally:
        small.close()
        large.close()


def test_close_releases_the_model(tiny_checkpoints):
    b = make_backend("transformers", model=str(tiny_checkpoints["llava"]))
    b.close()
    assert b.describe()["closed"] is True
    with pytest.raises(BackendError, match="closed"):
        b.generate(REQUESTS[:1])


def test_bad_image_is_a_backend_error(backends):
    bad = GenerationRequest(messages=(Message("user", ("x", np.zeros((8, 8), np.uint8))),), max_new_tokens=2)
    with pytest.raises(BackendError, match="RGB uint8"):
        backends["llava"].generate([bad])


def test_out_of_memory_is_a_backend_error(backends, monkeypatch):
    def out_of_memory(**kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(backends["llava"]._model, "generate", out_of_memory)
    with pytest.raises(BackendError, match="out of memory generating a batch of 2 .*Tried to allocate"):
        backends["llava"].generate(REQUESTS[:2])


# ----- quantisation -----

def test_quanto_int8_on_cpu(tiny_checkpoints, backends):
    b = make_backend("transformers", model=str(tiny_checkpoints["qwen2.5-vl"]), quantization="quanto-int8")
    try:
        gens = b.generate(REQUESTS[:2])
        kinds = {type(m).__name__ for m in b._model.modules()}
        assert b.describe()["quantization"] == "quanto-int8"
    finally:
        b.close()
    assert "QLinear" in kinds
    assert all(1 <= g.completion_tokens <= 10 for g in gens)


def test_bnb_8bit_on_cpu(tiny_checkpoints):
    try:
        check_available("bnb-8bit", "cpu")
    except ConfigError as exc:
        pytest.skip(f"bitsandbytes cannot run on this CPU: {exc}")
    b = make_backend("transformers", model=str(tiny_checkpoints["llava"]), quantization="bnb-8bit")
    try:
        gen = b.generate(REQUESTS[:1])[0]
        kinds = {type(m).__name__ for m in b._model.modules()}
    finally:
        b.close()
    assert "Linear8bitLt" in kinds and 1 <= gen.completion_tokens <= 10


def test_quantization_names():
    assert set(QUANTIZATIONS) >= {"none", "bnb-8bit", "bnb-4bit", "quanto-int8", "quanto-int4", "torchao-int8",
                                  "fp8", "prequantized"}
    assert QUANTIZATIONS["quanto-int4"].build(None).weights == "int4"
    nf4 = QUANTIZATIONS["bnb-4bit"].build(torch.bfloat16)
    assert nf4.load_in_4bit and nf4.bnb_4bit_quant_type == "nf4" and nf4.bnb_4bit_compute_dtype == torch.bfloat16
    assert QUANTIZATIONS["none"].build(None) is None and QUANTIZATIONS["prequantized"].build(None) is None
    with pytest.raises(ConfigError, match="unknown quantization 'int3'; known: none, bnb-8bit"):
        check_available("int3", "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="fp8.*cuda"):
            check_available("fp8", "cpu")


# ----- configuration errors -----

def test_configuration_errors(tiny_checkpoints, tmp_path):
    llava = str(tiny_checkpoints["llava"])
    with pytest.raises(ConfigError, match=f"'{tmp_path / 'nope'}' does not exist"):
        make_backend("transformers", model=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="unknown quantization 'int3'; known: none, bnb-8bit, bnb-4bit"):
        make_backend("transformers", model=llava, quantization="int3")
    with pytest.raises(ConfigError, match="dtype must be one of auto, float32, bfloat16, float16, got 'float8'"):
        make_backend("transformers", model=llava, dtype="float8")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="quantization 'fp8' needs a cuda device"):
            make_backend("transformers", model=llava, quantization="fp8")
    with pytest.raises(ConfigError, match="has no quantization_config"):
        make_backend("transformers", model=llava, quantization="prequantized")
    with pytest.raises(ConfigError, match="max_batch_size"):
        make_backend("transformers", model=llava, max_batch_size=0)
    with pytest.raises(ConfigError, match="bad parameters"):
        make_backend("transformers", model=llava, temperature=0.5)


def test_torchao_without_torchao(tiny_checkpoints):
    pytest.importorskip("importlib").util.find_spec("torchao") and pytest.skip("torchao is installed")
    with pytest.raises(ConfigError, match="pip install torchao"):
        make_backend("transformers", model=str(tiny_checkpoints["llava"]), quantization="torchao-int8")


def test_importing_the_backend_is_cheap():
    code = ("import sys, cityseeker_ros.core.agents.vlm.transformers_backend as t, "
            "cityseeker_ros.core.agents.vlm.random_models; "
            "from cityseeker_ros.core.agents.vlm.backend import BACKENDS; assert 'transformers' in BACKENDS; "
            "print(sorted(m for m in ('torch', 'transformers', 'PIL') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ----- Qwen inputs without torchvision -----

def test_smart_resize_by_hand():
    assert smart_resize(512, 1024, 28, 3136, 12845056) == (504, 1036)  # rounded to the 28-pixel grid
    assert smart_resize(48, 64, 28, 3136, 50176) == (56, 56)
    assert smart_resize(2048, 4096, 28, 3136, 28 * 28 * 256) == (308, 616)  # shrunk under max_pixels
    assert smart_resize(20, 30, 28, 28 * 28 * 16, 10**9) == (112, 140)  # grown over min_pixels
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 2500, 28, 1, 10**9)


def test_qwen_inputs_equal_the_real_processor(tiny_checkpoints, monkeypatch):
    """Compared against the real classes: transformers' slow PIL image processor
    (`Qwen2VLImageProcessorPil`, which imports without torchvision) inside the real
    `Qwen2_5_VLProcessor.__call__` (image-pad expansion, padding, mm_token_type_ids). That processor
    cannot be constructed without torchvision because of its video processor, so only the
    constructor's argument-class check is skipped and `video_processor=None` is passed; the code
    that produces the inputs is the library's. Equality is exact, element for element."""
    from transformers import AutoTokenizer, Qwen2_5_VLProcessor, Qwen2VLImageProcessorPil
    from transformers.processing_utils import ProcessorMixin

    monkeypatch.setattr(ProcessorMixin, "check_argument_for_proper_class", lambda *args: None)
    path = tiny_checkpoints["qwen2.5-vl"]
    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    processor = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessorPil.from_pretrained(str(path)),
                                    tokenizer=tok, video_processor=None)
    images = [views(2, 5, (48, 64)) + views(1, 6, (100, 37)), views(1, 7, (300, 500)), []]
    convs = [
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "left"}, {"type": "image"},
                                      {"type": "image"}, {"type": "text", "text": "where?"}]}],
        [{"role": "system", "content": [{"type": "text", "text": "sys"}]},
         {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]}],
        [{"role": "user", "content": [{"type": "text", "text": "no image at all"}]}],
    ]
    texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in convs]
    for limits in ({}, {"min_pixels": 28 * 28 * 9, "max_pixels": 28 * 28 * 12}):
        ref = processor(text=texts, images=[im for per in images for im in per], padding=True, padding_side="left",
                        return_tensors="pt",
                        **({"size": {"shortest_edge": limits["min_pixels"], "longest_edge": limits["max_pixels"]}}
                           if limits else {}))
        mine = QwenInputBuilder.from_pretrained(path, tokenizer=tok, **limits)(texts, images)
        assert set(mine) == set(ref) == {"input_ids", "attention_mask", "mm_token_type_ids", "pixel_values",
                                         "image_grid_thw"}
        for key in mine:
            assert mine[key].dtype == ref[key].dtype and torch.equal(mine[key], ref[key]), key
        # the backend's processor route (taken when torchvision works) passes the same limits
        routed = transformers_backend._ProcessorInputs(processor, True, limits.get("min_pixels"),
                                                       limits.get("max_pixels"))(texts, images)
        for key in mine:
            assert torch.equal(routed[key], mine[key]), key
    # by hand, within 7056..9408 px: 48x64 -> 84x112; 100x37 -> 140x56; 300x500 -> 56x112 (14-px patches)
    assert ref["image_grid_thw"].tolist() == [[1, 6, 8], [1, 6, 8], [1, 10, 4], [1, 4, 8]]


def test_qwen_image_config_reads_the_published_layout(tmp_path):
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({
        "min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
        "image_processor_type": "Qwen2VLImageProcessor"}))
    cfg = QwenImageConfig.from_pretrained(tmp_path, max_pixels=1024 * 28 * 28)
    assert (cfg.min_pixels, cfg.max_pixels, cfg.factor) == (3136, 1024 * 28 * 28, 28)
    with pytest.raises(ConfigError, match="exceeds"):
        QwenImageConfig.from_pretrained(tmp_path, min_pixels=10**9)


# ----- random checkpoints and full-size architectures -----

def test_random_checkpoints_are_small_and_seeded(tiny_checkpoints, tmp_path):
    for path in tiny_checkpoints.values():
        assert sum(f.stat().st_size for f in Path(path).iterdir()) < 1_000_000
    again = random_models.build_random_checkpoint("llava", tmp_path / "same", seed=0)
    other = random_models.build_random_checkpoint("llava", tmp_path / "other", seed=1)
    weights = [(p / "model.safetensors").read_bytes() for p in (tiny_checkpoints["llava"], again, other)]
    assert weights[0] == weights[1] != weights[2]
    assert (Path(tiny_checkpoints["llava"]) / "tokenizer.json").read_bytes() == (again / "tokenizer.json").read_bytes()


def test_full_size_folder_has_the_published_architecture_and_no_weights(tmp_path):
    folder = random_models.build_random_checkpoint("qwen2.5-vl", tmp_path / "7b", size="7b")
    config = json.loads((folder / "config.json").read_text())
    text = config.get("text_config", config)
    assert (text["hidden_size"], text["num_hidden_layers"], text["num_attention_heads"],
            text["num_key_value_heads"], text["intermediate_size"]) == (3584, 28, 28, 4, 18944)
    assert config["vision_config"]["out_hidden_size"] == 3584
    assert not list(folder.glob("*.safetensors"))
    with pytest.raises(ConfigError, match="cannot load"):
        make_backend("transformers", model=str(folder))
    with pytest.raises(ConfigError, match="no random size '7b'"):
        random_models.build_random_checkpoint("llava", tmp_path / "x", size="7b")


def test_published_parameter_counts():
    """Counted on the meta device: the sizes on the model cards (3.75B, 8.29B, 33.5B)."""
    counts = {}
    for size in ("3b", "7b", "32b"):
        config = random_models._config("qwen2.5-vl", size, random_models._tokenizer("qwen2.5-vl"))
        with torch.device("meta"):
            model = random_models._model_class("qwen2.5-vl")._from_config(config, dtype=torch.bfloat16)
        counts[size] = round(model.num_parameters() / 1e9, 2)
    assert counts == {"3b": 3.75, "7b": 8.29, "32b": 33.45}


@pytest.mark.parametrize("quantization", ["none", "quanto-int8"])
def test_build_random_model_in_chunks(tiny_checkpoints, quantization):
    """The meta-device path the GPU benchmark uses, here on the CPU with chunks of one block."""
    model = random_models.build_random_model("qwen2.5-vl", "tiny", "float32", "cpu", quantization=quantization,
                                             chunk_params=10_000)
    assert not any(t.is_meta for t in (*model.parameters(), *model.buffers()))
    reference = random_models._model_class("qwen2.5-vl")._from_config(model.config, dtype=torch.float32)
    buffers = dict(reference.named_buffers())
    for name, buf in model.named_buffers():  # rotary tables recomputed, not left as allocator garbage
        if name in buffers:
            assert torch.equal(buf, buffers[name]), name
    plain = [n for n, m in model.named_modules() if type(m) is torch.nn.Linear]
    assert plain == (["lm_head"] if quantization != "none" else plain)
    b = TransformersBackend.from_model(model, tiny_checkpoints["qwen2.5-vl"], quantization=quantization,
                                       ignore_eos=True)
    gens = b.generate(REQUESTS[:2])
    assert [g.completion_tokens for g in gens] == [10, 10]
    with pytest.raises(ConfigError, match="random models support quantization"):
        random_models.build_random_model("qwen2.5-vl", "tiny", "float32", "cpu", quantization="fp8")
