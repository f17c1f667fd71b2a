"""`zg init`: wire `zg mcp` into a project's agent configuration, and take exactly that out again.

Each client's JSON file gets one `zgrep` server entry merged in (nothing else is touched; a file
that is not a plain JSON object is refused, not rewritten); the instructions file gets one marked
block. What a file held before is remembered in the user's state dir, so `--remove` restores it byte
for byte (or, with no record, takes out just the entry and the block)."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from zgrep.fsutil import atomic_write
from zgrep.index.discovery import Confinement
from zgrep.server.runtime import state_dir
from zgrep.service import ErrorCode, FixedCodeError

NAME = "zgrep"
# client -> (file, servers key, entry before its command)
CLIENTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "claude": (".mcp.json", "mcpServers", {}),
    "vscode": (".vscode/mcp.json", "servers", {"type": "stdio"}),
    "cursor": (".cursor/mcp.json", "mcpServers", {}),
}
INSTRUCTIONS_FILE = "AGENTS.md"
BEGIN = "<!-- zgrep:begin (written by `zg init`; `zg init --remove` takes it out) -->"
END = "<!-- zgrep:end -->"
BLOCK = f"""{BEGIN}
## Code search: zgrep

This repository is indexed by zgrep (`zg`): hybrid semantic + keyword code search, code relations and
architecture decision records (ADRs). It is wired in as the MCP server `zgrep`; without MCP, run the same
commands in a shell with `--json`.

- Find code by meaning or name: MCP `search` (several `queries` in one call; filters `glob`, `type`,
  `symbol_type`, `path`), then `read_hit` with the hit ids. Shell: `zg search --json "what it does"`.
- Read more lines: `read` (path, start, end). Shell: `zg read PATH:START-END`.
- Before changing a definition: `callers` / `trace` / `impact`. Shell: `zg callers NAME --json`.
- Before editing a file: `adr_constraints` with its path: the decision records governing it and the rules
  a change must keep. Shell: `zg adr constraints --for PATH`. After the edit: `adr_check` (`zg adr check`).
- `status` says whether the index is fresh; `index` refreshes it (search also refreshes by itself).
{END}
"""


class InitError(FixedCodeError):
    """A file `zg init` must not rewrite (not JSON, not an object, not UTF-8, or reached through a
    symlink out of the workspace); the message names it."""

    CODE = ErrorCode.BAD_REQUEST


@dataclass
class Change:
    """One file's planned change: its text before (None: absent) and after (None: delete)."""

    rel: str
    before: str | None
    after: str | None
    note: str = ""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change (`/dev/null` for a created or deleted file)."""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(
                old,
                new,
                "/dev/null" if self.before is None else f"a/{self.rel}",
                "/dev/null" if self.after is None else f"b/{self.rel}",
            )
        )


def targets(clients: list[str], instructions: bool) -> list[str]:
    """The workspace-relative files `zg init` manages for these clients."""
    return [CLIENTS[c][0] for c in clients] + ([INSTRUCTIONS_FILE] if instructions else [])


def _read(root: Path, rel: str) -> str | None:
    # a cloned repository's `.vscode -> ~/elsewhere` must not be written
    if Confinement(root).path(rel) is None:
        raise InitError(
            f"{rel} leads out of the workspace (a symlink, or a symlinked directory on the way); "
            "zg init leaves it alone"
        )
    try:
        return (root / rel).read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise InitError(
            f"{rel} is not UTF-8 text; zg init leaves it alone (add the zgrep entry by hand)"
        ) from None
    except OSError as exc:
        raise InitError(f"cannot read {rel}: {exc.strerror}") from None


def zg_command() -> str:
    """How an agent starts this zg: `zg` when that name on PATH is this very program, else its
    absolute path (e.g. a virtualenv's `bin/zg` not on PATH)."""
    here = os.path.abspath(sys.argv[0])
    if os.path.basename(here) != "zg" or not os.path.isfile(here):
        return (
            "zg"  # not started as the `zg` script (e.g. from Python): agents can only use the name
        )
    found = shutil.which("zg")
    return "zg" if found and os.path.samefile(found, here) else here


def _client_of(rel: str, command: str | None = None) -> tuple[str, dict[str, object]]:
    """`rel`'s servers key and zg init's entry in it (starting `command`, default `zg_command()`)."""
    key, head = next((key, head) for file, key, head in CLIENTS.values() if file == rel)
    return key, {**head, "command": command or zg_command(), "args": ["mcp"]}


def _ours(rel: str, entry: Any) -> bool:
    """Whether `entry` is one zg init writes into `rel`, whichever `zg` it names."""
    command = entry.get("command") if isinstance(entry, dict) else None
    return (
        isinstance(command, str)
        and os.path.basename(command) == "zg"
        and entry == _client_of(rel, command)[1]
    )


def _load_object(rel: str, text: str, key: str) -> dict[str, Any]:
    """The JSON object in `text` whose `key` (if present) is an object; InitError naming the
    problem."""
    hint = f'add "{NAME}": {json.dumps(_client_of(rel)[1])} under "{key}" by hand'
    try:
        doc = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InitError(
            f"{rel} is not plain JSON ({exc.msg} at line {exc.lineno}; comments?); {hint}"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key, {}), dict):
        raise InitError(f'{rel}: expected a JSON object with an object "{key}"; {hint}')
    return doc


def _dump(doc: dict[str, Any], like: str = "") -> str:
    """`doc` as JSON indented as `like` is (one line stays one line; default two spaces)."""
    body = like.strip()
    indent: str | None = "  "
    if body and "\n" not in body:
        indent = None
    for line in body.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            indent = line[: len(line) - len(stripped)]
            break
    return json.dumps(doc, indent=indent, ensure_ascii=False) + (
        "\n" if not like or like.endswith("\n") else ""
    )


def add_entry(rel: str, text: str | None) -> tuple[str, str]:
    """`text` with the zgrep server entry merged in, and a note (an existing, different entry is
    kept)."""
    key, entry = _client_of(rel)
    doc = _load_object(rel, text or "", key)
    servers = doc.get(key, {})
    if NAME in servers:
        same = _ours(rel, servers[NAME])
        return (
            text or "",
            "" if same else f'kept the existing "{NAME}" server entry in {rel} (not zg init\'s)',
        )
    doc[key] = {**servers, NAME: entry}
    return _dump(doc, text or ""), ""


def drop_entry(rel: str, text: str) -> tuple[str | None, str]:
    """`text` without zg init's server entry (None: nothing else was in the file), and a note."""
    key, _ = _client_of(rel)
    doc = _load_object(rel, text, key)
    servers = doc.get(key, {})
    if NAME not in servers:
        return text, ""
    if not _ours(rel, servers[NAME]):
        return (
            text,
            f'kept the "{NAME}" server entry in {rel}: it was changed since zg init wrote it',
        )
    rest = {k: v for k, v in servers.items() if k != NAME}
    doc = {**doc, key: rest} if rest else {k: v for k, v in doc.items() if k != key}
    return (_dump(doc, text) if doc else None), ""


def add_block(text: str | None) -> str:
    """The instructions file with zg init's block appended (once)."""
    if text is not None and BEGIN in text:
        return text
    if not text:
        return BLOCK
    return text + ("" if text.endswith("\n") else "\n") + "\n" + BLOCK


def drop_block(text: str) -> str | None:
    """The instructions file without zg init's block (None: nothing else was in it)."""
    start = text.find(BEGIN)
    stop = text.find(END, start)
    if start < 0 or stop < 0:
        return text
    stop += len(END) + (1 if text[stop + len(END) : stop + len(END) + 1] == "\n" else 0)
    head = text[:start]
    if head.endswith("\n\n"):
        head = head[:-1]
    out = head + text[stop:]
    return out if out.strip() else None


# --- the record of what zg init wrote (outside the tree, so the tree stays the user's) --------------------


def record_path(root: Path) -> Path:
    """`$XDG_STATE_HOME/zgrep/init/<hash of the root>.json`."""
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:16]
    return state_dir() / "init" / f"{digest}.json"


class Written(TypedDict, total=False):
    """The record's line for one file zg init wrote (read back from disk: any field may be missing)."""

    before: str | None  # the file's text before zg init first wrote it (None: it did not exist)
    after: str  # what zg init left
    dirs: list[str]  # the directories it created for the file, deepest first


def load_record(root: Path) -> dict[str, Written]:
    """{file: {"before", "after", "dirs"}}; empty when there is none (or it is unreadable)."""
    try:
        data = json.loads(record_path(root).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return (
        {k: cast(Written, v) for k, v in files.items() if isinstance(v, dict)}
        if isinstance(files, dict)
        else {}
    )


def save_record(root: Path, files: dict[str, Written]) -> None:
    path = record_path(root)
    if not files:
        path.unlink(missing_ok=True)
        return
    state_dir(create=True)
    atomic_write(path, json.dumps({"root": os.path.realpath(root), "files": files}, indent=2))


# --- plan and apply ---------------------------------------------------------------------------------------


def _edit(rel: str, text: str | None, adding: bool) -> Change:
    """`rel`'s change: zg init's block (the instructions file) or server entry added, or taken out
    of `text`."""
    if rel == INSTRUCTIONS_FILE:
        return Change(rel, text, add_block(text) if adding else drop_block(text or ""))
    after, note = add_entry(rel, text) if adding else drop_entry(rel, text or "")
    return Change(rel, text, after, note)


def plan_init(root: Path, files: list[str]) -> list[Change]:
    """The change `zg init` makes to each file (InitError before anything is written)."""
    return [_edit(rel, _read(root, rel), adding=True) for rel in files]


def plan_remove(root: Path, files: list[str], record: dict[str, Written]) -> list[Change]:
    """The change `zg init --remove` makes: back to the recorded bytes when the file is as zg init
    left it, else just the entry or block taken out."""
    changes = []
    for rel in files:
        current = _read(root, rel)
        entry = record.get(rel)
        if entry is not None and current == entry.get("after"):
            changes.append(Change(rel, current, entry.get("before")))
        elif current is None:
            changes.append(Change(rel, None, None))
        else:
            changes.append(_edit(rel, current, adding=False))
    return changes


def _new_dirs(root: Path, rel: str) -> list[str]:
    """The parent directories of `rel` that do not exist yet, deepest first."""
    out = []
    parent = Path(rel).parent
    while parent != Path(".") and not (root / parent).exists():
        out.append(parent.as_posix())
        parent = parent.parent
    return out


def apply(root: Path, changes: list[Change], removing: bool) -> None:
    """Write the changes and keep the record of what zg init wrote up to date."""
    record = load_record(root)
    for change in changes:
        path = root / change.rel
        if change.changed:
            if change.after is None:
                path.unlink(missing_ok=True)
            else:
                dirs = _new_dirs(root, change.rel)
                mode = (
                    stat.S_IMODE(path.stat().st_mode)
                    if change.before is not None
                    else 0o666 & ~_umask()
                )
                atomic_write(path, change.after.encode("utf-8"), mode=mode)
                if not removing:
                    old = record.get(change.rel)
                    record[change.rel] = {
                        "before": old["before"] if old else change.before,
                        "after": change.after,
                        "dirs": (old or {}).get("dirs", []) + dirs,
                    }
        if removing:
            for rel_dir in (record.pop(change.rel, None) or {}).get("dirs", []):
                try:
                    (root / rel_dir).rmdir()  # only when empty: a directory the user filled stays
                except OSError:
                    pass
    save_record(root, record)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
