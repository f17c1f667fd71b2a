"""A BERT sentence encoder (all-MiniLM-L6-v2's shape) in numpy: int8 weights, mean pooling, normalised."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.blas import one_thread
from zgrep.embedding.safetensors import read_safetensors

MAX_TOKENS = 256  # the source model's max_seq_length
# Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is the exact one.
_ERF = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
# OpenBLAS's sgemm takes rows four at a time: a query's token rows are padded to a multiple of 4 (zero rows the
# attention never reads, dropped before pooling); 12 rows multiply 384x1536 in ~0.29 ms, 10 rows in ~0.37 ms.
_ROW_STEP = 4


@dataclass(frozen=True)
class _Layer:
    """One encoder layer's weights: matrices transposed for `x @ W`, query, key and value side by side."""

    qkv: np.ndarray
    qkv_bias: np.ndarray
    attention_out: np.ndarray
    attention_out_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    out_norm: tuple[np.ndarray, np.ndarray]


class TransformerEncoder:
    """Encodes texts with a BERT encoder read from a zgrep folder (weights.safetensors, tokenizer.json)."""

    def __init__(self, folder: Path) -> None:
        """Load the folder's weights and tokenizer; EmbeddingError when they are not a BERT encoder's."""
        one_thread()
        try:
            self._load(folder)
        except (OSError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"{folder}: not a query encoder ({exc!r})") from exc

    def _load(self, folder: Path) -> None:
        """Read config.json, weights.safetensors and tokenizer.json (KeyError, ValueError... when
        one does not fit)."""
        config = json.loads((folder / "config.json").read_text("utf-8"))
        tensors = read_safetensors(folder / "weights.safetensors")
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.model_id = str(config["model_id"])
        # Embedding rows stay int8 (dequantised per lookup); the matrices are dequantised once, transposed.
        # a copy: a view would keep the whole file's bytes (the int8 layers beside their float32
        # copies: 10.5 MB) alive
        self.words = tensors["embeddings.word_embeddings.weight"].copy()
        self.word_scales = tensors["embeddings.word_embeddings.weight.scale"].astype(np.float32)
        self.positions = _weight(tensors, "embeddings.position_embeddings.weight")
        self.token_type = _weight(tensors, "embeddings.token_type_embeddings.weight")[0]
        self.embedding_norm = _norm_weights(tensors, "embeddings.LayerNorm")
        self.layers = [
            _read_layer(tensors, f"encoder.layer.{i}.")
            for i in range(int(config["num_hidden_layers"]))
        ]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.dim = int(self.words.shape[1])

    def encode(self, text: str) -> np.ndarray:
        """The L2-normalised mean of the last layer's token states; shape (dim,)."""
        ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)
        tokens = len(ids)
        if tokens > len(self.positions):
            raise EmbeddingError(f"{self.model_id}: {tokens} tokens exceed the position table")
        x = np.zeros((-(-tokens // _ROW_STEP) * _ROW_STEP, self.dim), dtype=np.float32)
        x[:tokens] = self.words[ids].astype(np.float32) * self.word_scales[ids, None]
        x[:tokens] += self.positions[:tokens] + self.token_type
        x = self._norm(x, self.embedding_norm)
        for layer in self.layers:
            x = self._layer(x, tokens, layer)
        pooled = x[:tokens].mean(axis=0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def _layer(self, x: np.ndarray, tokens: int, w: _Layer) -> np.ndarray:
        """One layer over the padded rows `x`, whose first `tokens` rows are the text's (the only keys)."""
        rows, dim = x.shape
        split = dim // self.heads
        qkv = x @ w.qkv
        qkv += w.qkv_bias
        q = qkv[:, :dim].reshape(rows, self.heads, split).transpose(1, 0, 2)
        k = qkv[:tokens, dim : 2 * dim].reshape(tokens, self.heads, split).transpose(1, 2, 0)
        v = qkv[:tokens, 2 * dim :].reshape(tokens, self.heads, split).transpose(1, 0, 2)
        scores = q @ k
        scores *= np.float32(1 / math.sqrt(split))
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        attended = (scores @ v).transpose(1, 0, 2).reshape(rows, dim) @ w.attention_out
        attended += w.attention_out_bias
        attended += x
        x = self._norm(attended, w.attention_norm)
        hidden = x @ w.up
        hidden += w.up_bias
        out = _gelu(hidden) @ w.down
        out += w.down_bias
        out += x
        return self._norm(out, w.out_norm)

    def _norm(self, x: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """LayerNorm of each row of `x`, in place."""
        x -= x.mean(axis=-1, keepdims=True)
        var = np.einsum("ij,ij->i", x, x) / np.float32(x.shape[1])
        x *= (1 / np.sqrt(var + np.float32(self.eps)))[:, None]
        x *= weights[0]
        x += weights[1]
        return x


def _read_layer(tensors: dict[str, np.ndarray], p: str) -> _Layer:
    """The weights of the layer whose tensor names start with `p`."""
    parts = [f"{p}attention.self.{part}" for part in ("query", "key", "value")]
    widths = [len(tensors[f"{n}.weight"]) for n in parts]
    qkv = np.empty((tensors[f"{parts[0]}.weight"].shape[1], sum(widths)), dtype=np.float32)
    for n, start, width in zip(parts, np.cumsum([0, *widths]), widths):
        _dequantise(tensors, f"{n}.weight", qkv[:, start : start + width])
    return _Layer(
        qkv=qkv,
        qkv_bias=np.concatenate([_weight(tensors, f"{n}.bias") for n in parts]),
        attention_out=_weight(tensors, f"{p}attention.output.dense.weight"),
        attention_out_bias=_weight(tensors, f"{p}attention.output.dense.bias"),
        attention_norm=_norm_weights(tensors, f"{p}attention.output.LayerNorm"),
        up=_weight(tensors, f"{p}intermediate.dense.weight"),
        up_bias=_weight(tensors, f"{p}intermediate.dense.bias"),
        down=_weight(tensors, f"{p}output.dense.weight"),
        down_bias=_weight(tensors, f"{p}output.dense.bias"),
        out_norm=_norm_weights(tensors, f"{p}output.LayerNorm"),
    )


def _norm_weights(tensors: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    """A LayerNorm's (scale, shift), flat."""
    return _weight(tensors, f"{name}.weight").ravel(), _weight(tensors, f"{name}.bias")


def _transposed(name: str, value: np.ndarray) -> bool:
    """Whether tensor `name` is kept transposed (a dense layer's matrix, for `x @ W`)."""
    return value.ndim == 2 and (name.endswith("dense.weight") or ".self." in name)


def _weight(tensors: dict[str, np.ndarray], name: str) -> np.ndarray:
    """A float32 tensor: int8 rows times their `.scale` (dense layers transposed for `x @ W`), or as
    stored; a copy either way (a view would keep the whole file's bytes alive)."""
    value = tensors[name]
    out = np.empty(value.shape[::-1] if _transposed(name, value) else value.shape, np.float32)
    _dequantise(tensors, name, out)
    return out


def _dequantise(tensors: dict[str, np.ndarray], name: str, out: np.ndarray) -> None:
    """Write tensor `name` into `out` as _weight gives it, in one pass over its values: the float32
    values of `int8 -> float32, times the float32 scale`, bit for bit."""
    value = tensors[name]
    transposed = _transposed(name, value)
    scale = tensors.get(f"{name}.scale")
    if scale is None:
        np.copyto(out, value.T if transposed else value)
        return
    factors = scale.astype(np.float32)  # one per stored row
    if transposed:
        np.multiply(value.T, factors, out=out, dtype=np.float32)
    else:
        np.multiply(value, factors[:, None], out=out, dtype=np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + erf(x / √2)) with a vectorised erf, computed in place."""
    z = np.abs(x)
    z *= np.float32(1 / math.sqrt(2))
    t = z * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    a1, a2, a3, a4, a5 = (np.float32(a) for a in _ERF)
    poly = t * a5
    for a in (a4, a3, a2, a1):
        poly += a
        poly *= t
    # poly * exp(-z²) is 1 - erf(z): GELU is x - x/2 (1 - erf) for x >= 0 and x/2 (1 - erf) below
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z
    poly *= np.abs(x)
    poly *= np.float32(0.5)
    np.maximum(x, 0, out=x)
    x -= poly
    return x
