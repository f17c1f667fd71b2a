"""Layered configuration: flags > ZG_* environment > .zgrep.toml > user file > defaults.

Every value remembers where it came from (`zg config show`). Standard library only: the
thin client reads `mode` from here.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKSPACE_FILE = ".zgrep.toml"

DEFAULTS: dict[str, Any] = {
    "mode": "auto",
    "embedding.provider": "local",
    "embedding.model": "",
    "embedding.url": "",
    "embedding.api_key_env": "",
    "embedding.batch_size": 64,
    "embedding.timeout": 30.0,
    "embedding.max_retries": 3,
    "embedding.allow_remote": False,
    "milvus.uri": "",
    "index.max_file_bytes": 1024 * 1024,
    "index.include_hidden": False,
    "index.chunk_context_lines": 2,
    "search.limit": 10,
    "search.fusion": "rrf",
    "search.rrf_k": 60,
    "search.dense_weight": 0.6,
    "search.lexical_weight": 1.0,
    "search.symbol_weight": 1.0,
    "search.path_weight": 0.3,
    "search.candidates": 80,
    "server.endpoint": "",
    "server.idle_timeout": 1800.0,
    "server.probe_timeout_ms": 30,
    "adr.dir": "docs/adr",
    "adr.doc_dirs": ["docs/specs", "docs/plans"],
}



MINIMUMS: dict[str, float] = {
    "index.max_file_bytes": 1, "index.chunk_context_lines": 0, "search.limit": 1, "search.rrf_k": 1,
    "search.candidates": 1, "search.dense_weight": 0, "search.lexical_weight": 0, "search.symbol_weight": 0,
    "search.path_weight": 0, "embedding.batch_size": 1, "embedding.timeout": 0.1, "embedding.max_retries": 0,
    "server.idle_timeout": 1, "server.probe_timeout_ms": 1,
}
CHOICES: dict[str, tuple[str, ...]] = {
    "mode": ("auto", "server", "direct"), "search.fusion": ("rrf", "weighted"),
    "embedding.provider": ("local", "ollama", "openai"),
}


class ConfigError(ValueError):
    """A configuration file or value is invalid."""


def user_config_path() -> Path:
    """The user-level config file under the XDG config directory."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "zgrep" / "config.toml"


def env_name(key: str) -> str:
    """`search.rrf_k` → `ZG_SEARCH_RRF_K`."""
    return "ZG_" + key.replace(".", "_").upper()


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, full + "."))
        else:
            out[full] = value
    return out


def _coerce(key: str, value: Any, source: str) -> Any:
    default = DEFAULTS[key]
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off", ""):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, list):
            return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {key} = {value!r} is not a valid {type(default).__name__}") from None


def _check(key: str, value: Any, source: str) -> Any:
    """Refuse values outside a setting's range or choices."""
    if key in MINIMUMS and value < MINIMUMS[key]:
        raise ConfigError(f"{source}: {key} = {value!r} must be at least {MINIMUMS[key]:g}")
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigError(f"{source}: {key} = {value!r}; choose from {', '.join(CHOICES[key])}")
    return value


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return _flatten(tomllib.load(fh))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


@dataclass
class Config:
    """Merged settings with the source of each value."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def source(self, key: str) -> str:
        """Where `key`'s value came from (default, a file path, an env var, or a flag)."""
        return self.sources[key]

    @classmethod
    def load(cls, root: Path | None, flags: dict[str, Any] | None = None) -> "Config":
        """Merge all layers for workspace `root` (None: no workspace layer)."""
        cfg = cls(dict(DEFAULTS), {k: "default" for k in DEFAULTS})
        layers: list[tuple[str, dict[str, Any]]] = [(str(user_config_path()), _read_toml(user_config_path()))]
        if root is not None:
            ws = root / WORKSPACE_FILE
            layers.append((str(ws), _read_toml(ws)))
        for source, data in layers:
            for key, value in data.items():
                if key not in DEFAULTS:
                    raise ConfigError(f"{source}: unknown setting {key!r}")
                cfg._set(key, _coerce(key, value, source), source)
        for key in DEFAULTS:
            name = env_name(key)
            if name in os.environ:
                cfg._set(key, _coerce(key, os.environ[name], name), f"env {name}")
        for key, value in (flags or {}).items():
            if value is not None:
                cfg._set(key, _coerce(key, value, "flag"), "flag")
        return cfg

    def _set(self, key: str, value: Any, source: str) -> None:
        self.values[key] = _check(key, value, source)
        self.sources[key] = source

    def as_dict(self) -> dict[str, Any]:
        """Plain dict of values (JSON-serialisable)."""
        return dict(self.values)
