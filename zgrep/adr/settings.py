"""Where the ADRs live: the workspace root and the `adr.dir` / `adr.doc_dirs` settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zgrep.config import Config, ConfigError
from zgrep.workspace import find_root


@dataclass(frozen=True)
class AdrSettings:
    """Workspace-relative directories of ADRs and of spec/plan documents."""

    root: Path
    dir: str
    doc_dirs: tuple[str, ...]


def load_settings(start: Path | None = None) -> AdrSettings:
    """Resolve the workspace root from `start` (default cwd) and read its ADR settings."""
    root = find_root(start)
    cfg = Config.load(root)
    return AdrSettings(root, _confined(root, cfg, "adr.dir", cfg["adr.dir"]),
                       tuple(_confined(root, cfg, "adr.doc_dirs", d) for d in cfg["adr.doc_dirs"]))


def _confined(root: Path, cfg: Config, key: str, value: str) -> str:
    """`value` as a normalised `/` path relative to `root`, or ConfigError when it is absolute,
    climbs out with `..`, or leads out through a symlinked directory (the setting may come
    from a cloned repository's `.zgrep.toml`)."""
    rel = os.path.normpath(value).replace(os.sep, "/") if value else "."
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    if os.path.isabs(value) or rel == ".." or rel.startswith("../") or os.path.commonpath([real_root, real]) != real_root:
        raise ConfigError(f"{cfg.source(key)}: {key} = {value!r} must be a directory inside the workspace {root}, "
                          f"e.g. {'docs/adr' if key == 'adr.dir' else 'docs/specs'}")
    return rel
