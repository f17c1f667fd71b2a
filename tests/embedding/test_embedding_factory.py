"""make_embedder and parse_model_spec: provider choice, local model lookup, clear errors."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from embedding_server import EmbeddingServer
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from zgrep.embedding.base import EmbeddingError
from zgrep.embedding.factory import make_embedder, parse_model_spec
from zgrep.embedding.http import OllamaEmbedder, OpenAIEmbedder


def write_model2vec_dir(path: Path, dim: int = 4) -> Path:
    """A tiny but real model2vec folder: model.safetensors, tokenizer.json, config.json."""
    vocab = {"[UNK]": 0, "retry": 1, "backoff": 2, "parse": 3, "url": 4}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    path.mkdir(parents=True)
    tokenizer.save(str(path / "tokenizer.json"))
    table = np.random.default_rng(0).standard_normal((len(vocab), dim)).astype(np.float32)
    header = json.dumps(
        {
            "embeddings": {
                "dtype": "F32",
                "shape": list(table.shape),
                "data_offsets": [0, table.nbytes],
            }
        }
    )
    raw = header.encode()
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + table.tobytes())
    (path / "config.json").write_text(json.dumps({"normalize": True}))
    return path


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("local", ("local", None)),
        ("local:/models/potion", ("local", "/models/potion")),
        ("/path/to/dir", ("local", "/path/to/dir")),
        ("minishlab/potion-code-16M", ("local", "minishlab/potion-code-16M")),
        ("ollama:nomic-embed-text", ("ollama", "nomic-embed-text")),
        ("ollama:nomic-embed-text:latest", ("ollama", "nomic-embed-text:latest")),
        ("openai:text-embedding-3-small", ("openai", "text-embedding-3-small")),
        ("openai", ("openai", None)),
    ],
)
def test_parse_model_spec(spec: str, parsed: tuple[str, str | None]) -> None:
    assert parse_model_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["", "cohere:embed-v3"])
def test_parse_model_spec_rejects(spec: str) -> None:
    with pytest.raises(EmbeddingError, match="local"):
        parse_model_spec(spec)


def test_unknown_provider_lists_valid_ones() -> None:
    with pytest.raises(EmbeddingError, match="local, ollama, openai"):
        make_embedder("cohere")


def test_http_providers_use_the_given_options() -> None:
    with EmbeddingServer(dim=6) as server:
        ollama = make_embedder("ollama", None, server.url, batch_size=2, timeout=5.0, max_retries=0)
        assert isinstance(ollama, OllamaEmbedder) and ollama.model_id == "ollama:nomic-embed-text"
        assert ollama.embed(["a", "b", "c"]).shape == (3, 6)
        assert [r.batch_size for r in server.requests] == [2, 1]
        server.fail(500)
        with pytest.raises(EmbeddingError, match="after 1 attempts"):
            ollama.embed(["a"])
        openai = make_embedder("openai", "text-embedding-3-large", server.openai_url)
        assert isinstance(openai, OpenAIEmbedder)
        assert openai.model_id.startswith("openai:text-embedding-3-large@127.0.0.1:")


def test_local_model_directory(tmp_path: Path) -> None:
    model_dir = write_model2vec_dir(tmp_path / "potion")
    embedder = make_embedder("local", str(model_dir))
    assert embedder.dim == 4 and embedder.embed(["retry backoff"]).shape == (1, 4)


def test_local_hub_id_found_in_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "hf" / "hub" / "models--minishlab--potion-code-16M"
    write_model2vec_dir(repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    embedder = make_embedder("local", "minishlab/potion-code-16M")
    assert embedder.model_id == "model2vec/minishlab/potion-code-16M"
    assert embedder.embed_query("parse url").shape == (4,)


def test_local_hub_id_missing_offline_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(EmbeddingError, match="not available offline.*--local-dir DIR.*--model DIR"):
        make_embedder("local", "minishlab/potion-code-16M")


def test_local_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="no model directory"):
        make_embedder("local", str(tmp_path / "nope" / "deeper" / "x"))


def test_factory_imports_cheaply() -> None:
    code = "import sys, zgrep.embedding.factory as f; print(sorted({'httpx', 'tokenizers', 'zgrep.embedding.static'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
