"""Where the ADRs live: the workspace root and the `adr.dir` / `adr.doc_dirs` settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zgrep.config import Config
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
    return AdrSettings(root, str(cfg["adr.dir"]).strip("/"), tuple(str(d).strip("/") for d in cfg["adr.doc_dirs"]))
