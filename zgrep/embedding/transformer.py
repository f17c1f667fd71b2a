"""A BERT sentence encoder (all-MiniLM-L6-v2's shape) in numpy: int8 weights, mean pooling, normalised."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.blas import one_thread
from zgrep.embedding.safetensors import read_safetensors

MAX_TOKENS = 256  # the source model's max_seq_length
# Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is the exact one.
_ERF = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class TransformerEncoder:
    """Encodes texts with a BERT encoder read from a zgrep folder (weights.safetensors, tokenizer.json)."""

    def __init__(self, folder: Path) -> None:
        one_thread()
        config = json.loads((folder / "config.json").read_text("utf-8"))
        tensors = read_safetensors(folder / "weights.safetensors")
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.model_id = str(config["model_id"])
        # Embedding rows stay int8 (dequantised per lookup); the matrices are dequantised once, transposed.
        self.words = tensors["embeddings.word_embeddings.weight"]
        self.word_scales = tensors["embeddings.word_embeddings.weight.scale"].astype(np.float32)
        self.w = {
            name: _weight(tensors, name)
            for name in tensors
            if name.endswith(".weight") and not name.startswith("embeddings.word_embeddings")
        }
        self.b = {
            name: value.astype(np.float32)
            for name, value in tensors.items()
            if name.endswith(".bias")
        }
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.dim = int(self.words.shape[1])

    def encode(self, text: str) -> np.ndarray:
        """The L2-normalised mean of the last layer's token states; shape (dim,)."""
        ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)
        if len(ids) > len(self.w["embeddings.position_embeddings.weight"]):
            raise EmbeddingError(f"{self.model_id}: {len(ids)} tokens exceed the position table")
        x = self.words[ids].astype(np.float32) * self.word_scales[ids, None]
        x += (
            self.w["embeddings.position_embeddings.weight"][: len(ids)]
            + self.w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        for layer in range(self.layers):
            x = self._layer(x, f"encoder.layer.{layer}.")
        pooled = x.mean(axis=0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def _layer(self, x: np.ndarray, p: str) -> np.ndarray:
        n, dim = x.shape
        split = dim // self.heads
        q, k, v = (
            self._dense(x, f"{p}attention.self.{part}")
            .reshape(n, self.heads, split)
            .transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(split))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        x = self._norm(
            x
            + self._dense(context.transpose(1, 0, 2).reshape(n, dim), f"{p}attention.output.dense"),
            f"{p}attention.output.LayerNorm",
        )
        hidden = _gelu(self._dense(x, f"{p}intermediate.dense"))
        return self._norm(x + self._dense(hidden, f"{p}output.dense"), f"{p}output.LayerNorm")

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"] + self.b[f"{name}.bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"].ravel() + self.b[
            f"{name}.bias"
        ]


def _weight(tensors: dict[str, np.ndarray], name: str) -> np.ndarray:
    """A float32 weight: int8 rows times their `.scale` (dense layers transposed for `x @ W`), or as stored."""
    value = tensors[name]
    if f"{name}.scale" in tensors:
        value = value.astype(np.float32) * tensors[f"{name}.scale"].astype(np.float32)[:, None]
    value = value.astype(np.float32)
    return (
        np.ascontiguousarray(value.T)
        if name.endswith("dense.weight") or ".self." in name
        else value
    )


def _gelu(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + erf(x / √2)) with a vectorised erf."""
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + np.float32(0.3275911) * z)
    a1, a2, a3, a4, a5 = _ERF
    erf = 1 - ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t * np.exp(-z * z)
    return 0.5 * x * (1 + np.sign(x) * erf)
