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
    # conventional ADR directories that exist beside the one read (`dir`)
    unread: tuple[str, ...] = ()


ADR_TOOLS_FILE = ".adr-dir"  # adr-tools' record of its directory (`adr init DIR`)
CONVENTIONAL_DIRS = ("doc/adr", "docs/decisions")  # adr-tools' default, MADR 3/4's default


def load_settings(start: Path | None = None) -> AdrSettings:
    """Resolve the workspace root from `start` (default cwd) and read its ADR settings."""
    root = Path(find_root(start))
    cfg = Config.load(root)
    chosen = _adr_dir(root, cfg)
    unread = (
        ()
        if cfg.source("adr.dir") != "default" or (root / ADR_TOOLS_FILE).is_file()
        else tuple(
            rel
            for rel in (cfg.adr.dir, *CONVENTIONAL_DIRS)
            if rel != chosen and (root / rel).is_dir()
        )
    )
    return AdrSettings(
        root,
        chosen,
        tuple(
            _confined(root, cfg.source("adr.doc_dirs"), "adr.doc_dirs", d) for d in cfg.adr.doc_dirs
        ),
        unread,
    )


def _adr_dir(root: Path, cfg: Config) -> str:
    """`adr.dir` when set; else adr-tools' `.adr-dir`; else docs/adr, or the first of doc/adr and
    docs/decisions that exists when docs/adr does not."""
    if cfg.source("adr.dir") == "default":
        marker = root / ADR_TOOLS_FILE
        # a cloned repo's link to a file elsewhere: never read, never echoed
        if marker.is_symlink():
            raise ConfigError(
                f"{marker}: {ADR_TOOLS_FILE} is a symlink; it must be a file naming a directory "
                "inside the workspace, e.g. doc/adr"
            )
        if marker.is_file():
            first = (marker.read_text(encoding="utf-8", errors="replace").splitlines() or [""])[
                0
            ].strip()
            if first:
                return _confined(root, str(marker), ADR_TOOLS_FILE, first)
        if not (root / cfg.adr.dir).is_dir():
            for rel in CONVENTIONAL_DIRS:
                if (root / rel).is_dir():
                    return _confined(root, str(root / rel), "the ADR directory", rel)
    return _confined(root, cfg.source("adr.dir"), "adr.dir", cfg.adr.dir)


def _confined(root: Path, source: str, key: str, value: str) -> str:
    """`value` as a normalised `/` path relative to `root`, or ConfigError when it is absolute,
    climbs out with `..`, or leads out through a symlinked directory (the setting may come
    from a cloned repository's `.zgrep.toml` or `.adr-dir`)."""
    problem = ConfigError(
        f"{source}: {key} = {value!r} must be a directory inside the workspace {root}, "
        f"e.g. {'docs/specs' if key == 'adr.doc_dirs' else 'docs/adr'}"
    )
    if "\0" in value:
        raise problem
    rel = os.path.normpath(value).replace(os.sep, "/") if value else "."
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    if (
        os.path.isabs(value)
        or rel == ".."
        or rel.startswith("../")
        or os.path.commonpath([real_root, real]) != real_root
    ):
        raise problem
    return rel
