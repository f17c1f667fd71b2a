"""Workspace root discovery and the state directory `<root>/.zgrep/` with its manifest.

Standard library only, and neither pathlib, typing nor re at import (the thin client resolves the root,
a str, before routing a request): its records are plain classes and the manifest's TypedDict is for
type checkers only (typing compiles each field's annotation when such a class is made: ~8M
instructions of a served `zg search`).
"""

from __future__ import annotations

import os

from zgrep import jsoncodec
from zgrep.fsutil import atomic_write
from zgrep.service import ErrorCode, FixedCodeError

STATE_DIR = ".zgrep"
MANIFEST = "manifest.json"
FORMAT_VERSION = 1
SCHEMA_VERSION = 2
ENGINES = {
    "python": "Milvus Lite 3 (pure Python)",
    "native": "milvus-lite 2.5 (native)",
}  # manifest milvus_engine
_URI_CREDENTIALS = r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/\s]+@"  # compiled on first use

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, TypedDict

    class Manifest(TypedDict, total=False):
        """`.zgrep/manifest.json`: what the index was built with and how far its last run got. Read back
        from disk (an older zg's file may lack any field), so readers use `.get`."""

        format_version: int
        schema_version: int
        root: str
        model_id: str
        dim: int
        milvus_uri: str
        milvus_engine: str  # native | server (none: written by Milvus Lite 3)
        collection: str
        content_version: (
            str  # what the chunker and the rows' text were made by (index.run.content_version)
        )
        complete: bool  # False while a run writes
        last_indexed: float
        root_hash: str | None
        commit: str | None  # the HEAD the index covers


class WorkspaceError(FixedCodeError):
    """The workspace or its state cannot be used as is; the message names the fix."""

    CODE = ErrorCode.WORKSPACE


def find_root(start: str | os.PathLike[str] | None = None, explicit: bool = False) -> str:
    """The workspace root for `start` (default: the cwd), its real absolute path: itself when
    explicit, else the nearest indexed ancestor inside the git work tree, else the git top level,
    else `start`. A str (the thin client loads no pathlib)."""
    given = os.getcwd() if start is None else os.fspath(start)
    try:
        base = os.path.realpath(given, strict=True)
    except FileNotFoundError:
        base = os.path.realpath(given)  # (named as it would resolve: "not a directory" below)
    except OSError as exc:  # a symlink loop, a component no directory, no permission
        raise WorkspaceError(f"cannot use {given}: {exc.strerror}") from None
    if not os.path.isdir(base):
        raise WorkspaceError(f"not a directory: {base}")
    if explicit:
        return base
    candidate = base
    while True:  # every command starts here: no git process when indexed
        if os.path.isfile(os.path.join(candidate, STATE_DIR, MANIFEST)):
            return candidate
        # the work tree's top level (a directory, or a worktree's file)
        if os.path.exists(os.path.join(candidate, ".git")):
            break
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    from zgrep.git import git_toplevel  # git.py imports subprocess: not for an indexed workspace

    top = git_toplevel(base)
    return base if top is None else str(top)


def read_json(path: Path) -> Any:
    """Load JSON from `path`; None when missing; WorkspaceError when unreadable."""
    try:
        return jsoncodec.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise WorkspaceError(f"{path} is damaged ({exc}); rebuild with: zg index --full") from None


def read_object(path: Path) -> dict[str, Any] | None:
    """Load a JSON object from `path`; None when missing; WorkspaceError when unreadable or not an
    object."""
    data = read_json(path)
    if data is not None and not isinstance(data, dict):
        raise WorkspaceError(
            f"{path} is damaged (a JSON {type(data).__name__} where an object belongs); "
            "rebuild with: zg index --full"
        )
    return data


def redact(text: str) -> str:
    """`text` with the credentials of every URI in it (`scheme://user:secret@host`) masked."""
    import re

    return re.sub(_URI_CREDENTIALS, r"\1***@", text)


class Identity:
    """What makes a workspace the same one: its real path and the device and inode of the root and
    of `.zgrep/` (None before it exists). A directory deleted and re-created at the same path is
    another one."""

    __slots__ = ("real", "root", "state")

    def __init__(self, real: Path, root: tuple[int, int], state: tuple[int, int] | None) -> None:
        self.real = real
        self.root = root
        self.state = state

    @classmethod
    def of(cls, root: Path) -> Identity:
        """The identity of the directory `root` names now (OSError when it is gone)."""
        from pathlib import Path

        real = Path(os.path.realpath(root))
        st = os.stat(real)
        try:
            sd = os.stat(real / STATE_DIR)
            state: tuple[int, int] | None = (sd.st_dev, sd.st_ino)
        except FileNotFoundError:
            state = None
        return cls(real, (st.st_dev, st.st_ino), state)

    def same_as(self, now: Identity) -> bool:
        """Whether `now` is still this workspace (a state dir that appeared since is its own)."""
        return self.real == now.real and self.root == now.root and self.state in (None, now.state)


class StateDir:
    """A workspace root and its state directory `<root>/.zgrep/` (the front ends' `Workspace` is
    `frontends.api.Workspace`)."""

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def path(self, name: str) -> Path:
        """A file inside the state directory."""
        return self.state_dir / name

    def ensure_state_dir(self) -> Path:
        """Create the self-ignoring state directory if needed."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        ignore = self.state_dir / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, "*\n")
        return self.state_dir

    def read_manifest(self) -> Manifest | None:
        """The manifest, or None when the workspace was never indexed."""
        manifest: Manifest | None = read_object(self.path(MANIFEST))  # type: ignore[assignment]  # (read back: fields may lack)
        return manifest

    def write_manifest(self, manifest: Manifest) -> None:
        """Persist the manifest atomically."""
        self.ensure_state_dir()
        atomic_write(self.path(MANIFEST), jsoncodec.dumps(manifest, indent=2, sort_keys=True))

    def check_manifest(
        self, manifest: Manifest, model_id: str, dim: int, milvus_uri: str, engine: str
    ) -> None:
        """Refuse a manifest from another format, schema, model, Milvus URI or Milvus Lite engine
        (`engine`: the manifest's milvus_engine this zg writes; a Milvus Lite index without one was
        written by Milvus Lite 3)."""
        problems = []
        if manifest.get("format_version") != FORMAT_VERSION:
            problems.append(
                f"index format {manifest.get('format_version')} (this zg writes {FORMAT_VERSION})"
            )
        if manifest.get("schema_version") != SCHEMA_VERSION:
            problems.append(
                f"schema {manifest.get('schema_version')} (this zg uses {SCHEMA_VERSION})"
            )
        if manifest.get("model_id") != model_id or manifest.get("dim") != dim:
            problems.append(
                f"model {manifest.get('model_id')} ({manifest.get('dim')}-d), configured {model_id} ({dim}-d)"
            )
        if manifest.get("milvus_uri") != milvus_uri:
            problems.append(
                f"Milvus URI {redact(str(manifest.get('milvus_uri')))}, configured {redact(milvus_uri)}"
            )
        elif engine != "server" and manifest.get("milvus_engine", "python") != engine:
            built = ENGINES.get(
                str(manifest.get("milvus_engine", "python")), str(manifest.get("milvus_engine"))
            )
            problems.append(
                f"the Milvus engine {built} (this zg runs {ENGINES.get(engine, engine)})"
            )
        if problems:
            raise WorkspaceError(
                f"the index in {self.state_dir} was built with "
                + "; ".join(problems)
                + "; rebuild it with: zg index --full"
            )
