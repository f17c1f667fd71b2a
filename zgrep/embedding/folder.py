"""A static model folder's identity (model id, dimension) from its config.json, with the standard
library only: a process that just compares an index's model with the configured one never imports
numpy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zgrep.embedding.base import EmbeddingError

DEFAULT_MODEL_NAME = "minilm-l6-code"


def default_model_dir() -> Path:
    """The static model committed inside the package."""
    return Path(__file__).resolve().parent.parent / "models" / DEFAULT_MODEL_NAME


def read_config(path: Path) -> dict[str, Any]:
    """Read a JSON object, turning a missing or broken file into one clear error."""
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise EmbeddingError(f"{path}: cannot read model config ({exc})") from exc


def deferred_identity(path: Path, model_id: str | None) -> tuple[str, int] | None:
    """(model id, dim) of a zgrep int8 folder whose config.json names its dimension (a model read
    only on first embedding), else None."""
    if not (path / "embeddings.npy").is_file():
        return None
    config = read_config(path / "config.json")
    dim = config.get("dim")
    return (model_id or config["model_id"], dim) if isinstance(dim, int) else None
