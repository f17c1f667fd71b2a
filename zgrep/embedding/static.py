"""Static (model2vec-style) embeddings: mean of per-token vectors, numpy + tokenizers only; a model folder
may name a transformer query encoder (asymmetric: chunks static, queries through the transformer)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer, normalizers

from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.blas import one_thread
from zgrep.embedding.folder import default_model_dir, read_config
from zgrep.embedding.safetensors import read_safetensors
from zgrep.embedding.words import WordTokens

__all__ = ["StaticEmbedder", "default_model_dir", "read_safetensors"]
DEFAULT_MAX_LENGTH = 512
POOL_BLOCK_TOKENS = 16384  # pooling works on blocks of whole texts: at most this many tokens...
POOL_BLOCK_TEXTS = 256  # ...and this many texts, so the count matrix stays small
# ASCII characters BERT's clean_text deletes (controls other than tab, newline, carriage return).
_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class StaticEmbedder:
    """Embeds a text as the L2-normalised mean of its token vectors (model2vec's rule)."""

    def __init__(
        self,
        table: np.ndarray,
        tokenizer: Tokenizer,
        model_id: str,
        max_length: int | None,
        scales: np.ndarray | None = None,
    ) -> None:
        """`table`: float token vectors, or int8 ones with per-row `scales` (kept so: a quarter of
        the memory; the rows a text uses are dequantised when it is embedded, to the same float32
        values)."""
        one_thread()
        self.table = np.ascontiguousarray(table, dtype=np.float32 if scales is None else np.int8)
        self.scales = None if scales is None else np.ascontiguousarray(scales, dtype=np.float32)
        self.dim = int(self.table.shape[1])
        self.model_id = model_id
        if tokenizer.get_vocab_size() > len(self.table):
            raise EmbeddingError(
                f"{model_id}: tokenizer has more tokens than the embedding table has rows"
            )
        self.tokenizer = _configure(tokenizer, max_length)
        # a lowercasing BertNormalizer leaves clean ASCII lowercased, nothing else
        normaliser = tokenizer.normalizer
        self.lowercases = isinstance(normaliser, normalizers.BertNormalizer) and bool(
            normaliser.lowercase
        )
        self.words = WordTokens(tokenizer, max_length) if WordTokens.applies(tokenizer) else None
        self.added = _added_tokens(tokenizer)
        self.max_length = max_length
        # max_length × the median token length, on first need (~15 ms)
        self._max_chars: int | None = None
        self.unk_id = _unk_token_id(tokenizer)
        # (folder, model id) when loaded by from_dir
        self.source: tuple[str, str | None] | None = None
        self.query_encoder: QueryEncoder | None = None

    @property
    def max_chars(self) -> int | None:
        """Characters a text keeps before tokenizing (model2vec's rule: max_length × median token
        length)."""
        if self.max_length is not None and self._max_chars is None:
            self._max_chars = self.max_length * _median_token_length(self.tokenizer)
        return self._max_chars

    @classmethod
    def from_dir(cls, path: str | Path, model_id: str | None = None) -> StaticEmbedder:
        """A zgrep int8 model folder or a model2vec folder, loaded now (embedding.deferred defers a
        zgrep one)."""
        path = Path(path)
        if (path / "embeddings.npy").is_file():
            model = cls(*cls._zgrep_parts(path, model_id))
            model.query_encoder = query_encoder_of(path)
        elif (path / "model.safetensors").is_file():
            model = cls._from_model2vec_dir(path, model_id)
        else:
            raise EmbeddingError(
                f"{path}: not a static model folder (no embeddings.npy or model.safetensors)"
            )
        model.source = (str(path), model_id)
        return model

    @staticmethod
    def _zgrep_parts(
        path: Path, model_id: str | None
    ) -> tuple[np.ndarray, Tokenizer, str, int | None, np.ndarray]:
        """The constructor's arguments from int8 `embeddings.npy` with per-row `scales.npy`."""
        config = read_config(path / "config.json")
        quantised = np.load(path / "embeddings.npy")
        if quantised.dtype != np.int8:
            raise EmbeddingError(f"{path}: embeddings.npy holds {quantised.dtype}, not int8")
        scales = np.load(path / "scales.npy").astype(np.float32)
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        return (
            quantised,
            tokenizer,
            model_id or config["model_id"],
            config.get("max_length", DEFAULT_MAX_LENGTH),
            scales,
        )

    @classmethod
    def _from_model2vec_dir(cls, path: Path, model_id: str | None) -> StaticEmbedder:
        """Load model2vec's layout, folding its optional `weights` and `mapping` into one table."""
        config = read_config(path / "config.json")
        tensors = read_safetensors(path / "model.safetensors")
        if "embeddings" not in tensors:
            raise EmbeddingError(
                f"{path}: model.safetensors has no 'embeddings' tensor (not a model2vec model)"
            )
        table = tensors["embeddings"].astype(np.float32)
        if "mapping" in tensors:
            table = table[tensors["mapping"]]
        if "weights" in tensors:
            table = table * tensors["weights"].astype(np.float32)[:, None]
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        max_length = config.get("max_length", DEFAULT_MAX_LENGTH)
        return cls(table, tokenizer, model_id or f"model2vec/{path.resolve().name}", max_length)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents; returns float32 (len(texts), dim), rows L2-normalised (empty text →
        zeros)."""
        # model2vec pre-truncates to max_chars; a text of at most max_length characters is shorter
        # (tokens are at least one character long)
        if self.max_length is not None and any(len(text) > self.max_length for text in texts):
            texts = [text[: self.max_chars] for text in texts]
        sums = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, (ids, lengths) in self._token_ids(texts):
            if self.unk_id is not None:
                ids, lengths = _drop_token(ids, lengths, self.unk_id)
            sums[rows] = _segment_sums(self.table, self.scales, ids, lengths)
        return _normalise(sums)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (through the folder's query encoder when it names one); shape (dim,)."""
        if self.query_encoder is not None:
            return self.query_encoder.embed(text)
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def _token_ids(
        self, texts: list[str]
    ) -> Iterator[tuple[list[int], tuple[np.ndarray, np.ndarray]]]:
        """(text numbers, (their token ids without special tokens, concatenated; each one's token
        count)) for the texts WordTokens splits (word by word), then for the rest."""
        words: list[str] = []
        fast: list[int] = []
        rest: list[int] = []
        for i, text in enumerate(texts):
            normalised = self._word_split_text(text)
            if normalised is None:
                rest.append(i)
            else:
                fast.append(i)
                words.append(normalised)
        if fast:
            assert self.words is not None
            yield fast, self.words.token_ids(words)
        if rest:
            ids_per_text = [
                e.ids
                for e in self.tokenizer.encode_batch_fast(
                    [texts[i] for i in rest], add_special_tokens=False
                )
            ]
            lengths = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=len(rest))
            ids = np.fromiter(
                chain.from_iterable(ids_per_text), dtype=np.int64, count=int(lengths.sum())
            )
            yield rest, (ids, lengths)

    def _word_split_text(self, text: str) -> str | None:
        """`text` normalised, when it holds no added token (WordTokens splits it); else None (the
        tokenizer takes it whole)."""
        if self.words is None:
            return None
        if self.lowercases and _is_clean_ascii(text):
            normalised = text.lower()  # what BERT normalisation does to clean ASCII
        elif self.tokenizer.normalizer is not None:
            normalised = self.tokenizer.normalizer.normalize_str(text)
        else:
            normalised = text
        if self.added is not None and (self.added.search(text) or self.added.search(normalised)):
            return None
        return normalised


def query_encoder_of(folder: Path) -> QueryEncoder | None:
    """The query encoder a zgrep model folder's config.json names (not loaded yet), or None."""
    spec = read_config(folder / "config.json").get("query_encoder")
    return QueryEncoder(folder, spec) if isinstance(spec, dict) else None


class QueryEncoder:
    """The transformer a model folder names for queries, projected into the static table's space;
    loaded on the first query (index workers never hold it)."""

    def __init__(self, folder: Path, spec: dict[str, Any]) -> None:
        name = str(spec.get("model", ""))
        if not name or name != Path(name).name or name in (".", ".."):
            raise EmbeddingError(f"{folder}: its query encoder {name!r} is not a folder name")
        candidates = [folder.parent / name, default_model_dir().parent / name]
        found = next(
            (c for c in candidates if name and (c / "weights.safetensors").is_file()), None
        )
        if found is None:
            raise EmbeddingError(
                f"{folder}: its query encoder {name!r} is not in {folder.parent} or the package"
            )
        self.folder = found
        self.projection_path = folder / str(spec.get("projection", "projection.npy"))
        self._encoder: Any = None
        self._projection: np.ndarray | None = None
        self._loading = threading.Lock()

    def load(self) -> None:
        """Load the transformer and the projection (once; a second caller waits for the first)."""
        with self._loading:
            if self._encoder is None:
                from zgrep.embedding.transformer import TransformerEncoder

                self._projection = np.load(self.projection_path).astype(np.float32)
                self._encoder = TransformerEncoder(self.folder)

    def loaded(self) -> bool:
        """Whether the transformer is loaded."""
        return self._encoder is not None

    def embed(self, text: str) -> np.ndarray:
        """The transformer's vector of `text`, projected and L2-normalised."""
        self.load()
        assert self._projection is not None
        vector: np.ndarray = self._projection @ self._encoder.encode(text)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)


def _segment_sums(
    table: np.ndarray, scales: np.ndarray | None, ids: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """Sum of table rows per consecutive segment of `ids` (the mean up to scale; empty → zeros)."""
    out = np.zeros((len(lengths), table.shape[1]), dtype=np.float32)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    first = 0
    while first < len(lengths):
        stop = int(np.searchsorted(ends, starts[first] + POOL_BLOCK_TOKENS, side="right"))
        stop = max(min(stop, first + POOL_BLOCK_TEXTS), first + 1)
        block_ids = ids[starts[first] : ends[stop - 1]]
        out[first:stop] = _block_sums(table, scales, block_ids, lengths[first:stop])
        first = stop
    return out


def _block_sums(
    table: np.ndarray, scales: np.ndarray | None, ids: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """Per-text sums for one block as (token-count matrix) @ (rows of the distinct tokens,
    dequantised when `scales` are given: int8 * scale, the float32 values a dequantised table would
    hold)."""
    distinct, column = np.unique(ids, return_inverse=True)
    row = np.repeat(np.arange(len(lengths)), lengths)
    counts = np.bincount(row * len(distinct) + column, minlength=len(lengths) * len(distinct))
    rows = (
        table[distinct]
        if scales is None
        else table[distinct].astype(np.float32) * scales[distinct, None]
    )
    summed: np.ndarray = counts.reshape(len(lengths), len(distinct)).astype(np.float32) @ rows
    return summed


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise rows; zero rows stay zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: np.ndarray = vectors / np.maximum(norms, np.float32(1e-12))
    return normalised


def _is_clean_ascii(text: str) -> bool:
    """True when BERT normalisation of `text` is plain lowercasing."""
    return text.isascii() and _ASCII_CONTROLS.search(text) is None


def _configure(tokenizer: Tokenizer, max_length: int | None) -> Tokenizer:
    """No padding; truncation at max_length tokens (none if None)."""
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    return tokenizer


def _added_tokens(tokenizer: Tokenizer) -> re.Pattern[str] | None:
    """A pattern finding the tokenizer's added tokens ([PAD], ...: matched before words are split),
    or None when it has none."""
    contents = sorted({t.content for t in tokenizer.get_added_tokens_decoder().values()})
    return re.compile("|".join(map(re.escape, contents))) if contents else None


def _drop_token(
    ids: np.ndarray, lengths: np.ndarray, token_id: int
) -> tuple[np.ndarray, np.ndarray]:
    """Remove every occurrence of `token_id`, keeping per-text lengths consistent."""
    keep = ids != token_id
    if keep.all():
        return ids, lengths
    segment = np.repeat(np.arange(len(lengths)), lengths)
    return ids[keep], np.bincount(segment[keep], minlength=len(lengths)).astype(np.int64)


def _unk_token_id(tokenizer: Tokenizer) -> int | None:
    """The unknown-token id (model2vec drops it before pooling), or None."""
    unk_token = getattr(tokenizer.model, "unk_token", None)
    if unk_token is not None:
        unk_id: int | None = tokenizer.token_to_id(unk_token)
        return unk_id
    listed: int | None = json.loads(tokenizer.to_str())["model"].get("unk_id")
    return listed


def _median_token_length(tokenizer: Tokenizer) -> int:
    """Median vocabulary token length in characters (model2vec pre-truncates texts to max_length ×
    this)."""
    return int(np.median([len(token) for token in tokenizer.get_vocab()]))
