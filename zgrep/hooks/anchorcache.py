"""The anchor set the shell pre-commit hook reads, so a commit that touches no anchored path starts
no Python.

After a passing staged check, two files go into the repository's git directory: KEY_FILE, the state
of the ADRs (which of the conventional ADR directories exist, the config files' blob ids, and `git
ls-files -s` of the directories), and LIST_FILE, every path a live ADR anchors, one per line.
`zgrep-hook` recomputes the key the same way (`adr_key`); when it matches and no staged path is, or
lies under, a listed path, the check is skipped."""

from __future__ import annotations

from pathlib import Path

from typing import TYPE_CHECKING

from zgrep import git
from zgrep.adr.settings import CONVENTIONAL_DIRS
from zgrep.config import WORKSPACE_FILE, AdrSection, user_config_path
from zgrep.fsutil import atomic_write

if TYPE_CHECKING:
    from zgrep.adr.settings import AdrSettings

KEY_FILE = "zgrep-adr-key"
LIST_FILE = "zgrep-adr-anchors"
KEY_VERSION = "v1"  # the shell runner compares this too; bump both when the key's shape changes


def key(root: Path) -> str:
    """The ADRs' state exactly as `zgrep-hook`'s adr_key prints it (trailing newlines dropped, as
    `$(...)` does): the directories present, the config files' blob ids (a changed config is checked
    again), the staged ADRs."""
    dirs = (AdrSection.dir, *CONVENTIONAL_DIRS)
    present = "".join(f" {d}" for d in dirs if (root / d).is_dir())
    configs = [str(p) for p in (root / WORKSPACE_FILE, Path(user_config_path())) if p.is_file()]
    blobs = git.run(root, "hash-object", "--", *configs).decode() if configs else ""
    listed = git.run(root, "ls-files", "-s", "--", *dirs, own_index=True).decode(
        "utf-8", "surrogateescape"
    )
    return f"{KEY_VERSION}{present}\n{blobs}{listed}".rstrip("\n")


def save(settings: AdrSettings) -> None:
    """Record the staged ADRs' live anchors for the shell hook; nothing when a path cannot be one
    line."""
    from zgrep.adr.anchors import (
        outside_repo,
    )  # the ADR parsers (PyYAML) only where a check already ran
    from zgrep.adr.store import load
    from zgrep.adr.trees import IndexTree

    root = settings.root
    if settings.dir not in (AdrSection.dir, *CONVENTIONAL_DIRS):
        return  # the shell hook knows only the conventional directories: it always asks Python
    tree = IndexTree(root)
    try:
        adrs = load(tree, settings.dir)
    finally:
        tree.close()
    anchored = sorted(
        {
            a.path.strip("/")
            for adr in [*adrs.adrs, *adrs.unnamed]
            if adr.live
            for a in adr.anchors
            if not outside_repo(a.path)
        }
    )
    if any("\n" in p or p.startswith('"') or not p for p in anchored):
        return
    git_dir = Path(git.run(root, "rev-parse", "--absolute-git-dir").decode().strip())
    atomic_write(git_dir / LIST_FILE, "".join(f"{p}\n" for p in anchored))
    atomic_write(git_dir / KEY_FILE, key(root) + "\n")
