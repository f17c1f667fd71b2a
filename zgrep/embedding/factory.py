"""Pick an embedding provider from settings or a ``--model`` spec (imports providers lazily)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from zgrep.embedding.base import Embedder, EmbeddingError
from zgrep.embedding.folder import default_model_dir, deferred_identity

PROVIDERS = ("local", "ollama", "openai")
DEFAULT_MODELS = {"ollama": "nomic-embed-text", "openai": "text-embedding-3-small"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def parse_model_spec(spec: str) -> tuple[str, str | None]:
    """Split a ``--model`` value into (provider, model): ``local``, ``local:DIR``, ``DIR``,
    ``ollama:NAME``, ``openai:NAME``."""
    spec = spec.strip()
    if not spec:
        raise EmbeddingError("empty --model: use local, local:DIR, ollama:NAME or openai:NAME")
    prefix, colon, rest = spec.partition(":")
    if prefix in PROVIDERS:
        return prefix, (rest.strip() or None) if colon else None
    if not colon or Path(spec).expanduser().is_dir():
        return "local", spec  # a directory or a hub id such as minishlab/potion-code-16M
    raise EmbeddingError(
        f"unknown embedding provider {prefix!r} in --model {spec!r}: use one of {', '.join(PROVIDERS)}"
    )


def make_embedder(
    provider: str = "local",
    model: str | None = None,
    url: str | None = None,
    *,
    api_key_env: str | None = None,
    batch_size: int = 64,
    timeout: float = 30.0,
    max_retries: int = 3,
) -> Embedder:
    """Build the embedder for ``provider``; http options apply to ollama/openai only."""
    if provider == "local":
        return _local(model)
    if provider not in ("ollama", "openai"):
        raise EmbeddingError(
            f"unknown embedding provider {provider!r}: use one of {', '.join(PROVIDERS)}"
        )
    from zgrep.embedding import http

    cls = http.OllamaEmbedder if provider == "ollama" else http.OpenAIEmbedder
    options: dict[str, Any] = {
        "batch_size": batch_size,
        "timeout": timeout,
        "max_retries": max_retries,
    }
    if url:
        options["base_url"] = url
    if api_key_env:
        options["api_key_env"] = api_key_env
    return cls(model or DEFAULT_MODELS[provider], **options)


def local_identity(model: str | None) -> tuple[str, int] | None:
    """The (model id, dim) `make_embedder("local", model)` reports, read from the model's folder
    when that model is one read on first embedding (the default, a zgrep folder); None when only
    loading it tells."""
    path = default_model_dir() if model is None else Path(model).expanduser()
    return deferred_identity(path, None) if path.is_dir() else None


def _local(model: str | None) -> Embedder:
    from zgrep.embedding.deferred import open_static

    if model is None:
        return open_static(default_model_dir())
    path = Path(model).expanduser()
    if path.is_dir():
        return open_static(path)
    if not _HUB_ID.match(model):
        raise EmbeddingError(
            f"no model directory at {path}: pass a model folder (model2vec layout) or a hub id"
        )
    snapshot = hub_snapshot(model) or hub_download(model)
    if snapshot is None:
        raise EmbeddingError(
            f"model {model!r} is not available offline (not in the Hugging Face cache {hub_cache_dir()}): "
            f"download the model folder on a connected machine (e.g. `huggingface-cli download {model} "
            f"--local-dir DIR`) and pass its path with --model DIR"
        )
    return open_static(Path(snapshot), model_id=f"model2vec/{model}")


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache: $HF_HUB_CACHE, $HF_HOME/hub, or ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "huggingface" / "hub"


def hub_download(repo_id: str) -> Path | None:
    """Fetch ``repo_id`` from the hub when online and `huggingface_hub` is installed (optional),
    else None."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return None
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(repo_id, cache_dir=str(hub_cache_dir())))
    except Exception:  # offline, unknown repo, auth: the caller's message names the way out
        return None


def hub_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot of ``repo_id`` (the one refs/main names, else the newest), or None."""
    root = hub_cache_dir() / f"models--{repo_id.replace('/', '--')}"
    ref = root / "refs" / "main"
    if ref.is_file():
        pinned = root / "snapshots" / ref.read_text().strip()
        if pinned.is_dir():
            return pinned
    snapshots = [p for p in (root / "snapshots").glob("*") if p.is_dir()]
    return max(snapshots, key=lambda p: p.stat().st_mtime, default=None)
