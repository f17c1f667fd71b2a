"""`zg read PATH[:START[-END]]`: print numbered lines of a workspace file, confined as indexing is."""

from __future__ import annotations

import os
from pathlib import Path

import click

from zgrep.cli import output
from zgrep.cli.main import fail, resolve
from zgrep.index.discovery import Confinement, Skip, looks_binary, read_bytes

READ_MAX_BYTES = 16 * 1024 * 1024
"""The largest file `zg read`, MCP `read` and HTTP `/read` open."""
_REFUSED = {
    "not_regular": "it is not a regular file (a FIFO, a device, a socket, a directory or a symlink loop)",
    "too_large": f"it is larger than {READ_MAX_BYTES // (1024 * 1024)} MiB, the most zg read serves",
    "unreadable": "Permission denied",
    "vanished": "No such file or directory",
}


def parse_span(span: str) -> tuple[int, int | None]:
    """`""` → whole file; `12` → line 12; `12-` → to the end; `12-20` → inclusive range."""
    if not span:
        return 1, None
    start_s, dash, end_s = span.partition("-")
    start = int(start_s)
    if not dash:
        return start, start
    return start, int(end_s) if end_s else None


def confined_path(root: Path, rel: str) -> str | None:
    """The real path of the workspace-relative `rel` (the root itself for `.`), or None when it
    leaves the workspace: `..` out of it, an absolute path, a symlinked directory on the way, a
    symlink pointing out."""
    norm = os.path.normpath(rel)
    if os.path.isabs(norm) or norm == os.pardir or norm.startswith(os.pardir + os.sep):
        return None
    confinement = Confinement(root)
    return confinement.real_root if norm == os.curdir else confinement.path(norm)


class ReadRefused(ValueError):
    """Why a slice cannot be printed: one line naming the fix."""


def _split_location(root: Path, location: str) -> tuple[str, str]:
    """(path, span) of `PATH[:SPAN]`: the whole location when it names a file (`docs/a:b.md`), else
    split at the last colon when that leaves a file (`docs/a:b.md:2-3`), else at the first
    (`f.py:1-2`, `f.py:x`)."""
    for rel, span in ((location, ""), location.rpartition(":")[::2]):
        target = confined_path(root, rel) if rel and "\0" not in rel else None
        if target is not None and os.path.isfile(target):
            return rel, span
    rel, _, span = location.partition(":")
    return rel, span


def file_slice(root: Path, location: str) -> tuple[str, list[str], int, int]:
    """(relative path, the file's lines, start, end) for `PATH[:START[-END]]`; ReadRefused names the
    problem. `zg read`, the MCP server and the HTTP API all read through here."""
    rel, span = _split_location(root, location)
    # no file name holds one (the OS would raise ValueError); only a front end's request can
    if "\0" in rel:
        raise ReadRefused(f"refusing a path with a NUL byte: {rel!r}")
    target = confined_path(root, rel)
    if target is None:
        raise ReadRefused(f"refusing a path outside the workspace {root}: {rel}")
    try:
        start, end = parse_span(span)
    except ValueError:
        raise ReadRefused(f"bad line range {span!r}; use PATH:START-END") from None
    got = read_bytes(root, os.path.normpath(rel), max_bytes=READ_MAX_BYTES)  # the one guarded open
    if isinstance(got, Skip):
        if got.reason == "outside_workspace":
            raise ReadRefused(
                f"refusing to print {rel}: git's and zgrep's own directories are not served"
            )
        raise ReadRefused(f"cannot read {rel}: {_REFUSED.get(got.reason, got.reason)}")
    data = got[0]
    if looks_binary(data):
        raise ReadRefused(f"refusing to print {rel}: it is a binary file (the index skips it too)")
    lines = data.decode("utf-8-sig", errors="replace").splitlines()
    if end is not None and end < start:
        raise ReadRefused(
            f"reversed range {span}: the start comes after the end; use {rel}:{end}-{start}"
        )
    end = len(lines) if end is None else min(end, len(lines))
    if start < 1 or start > max(end, 1):
        raise ReadRefused(f"line range {span} is outside {rel} ({len(lines)} lines)")
    return rel, lines, start, end


def from_cwd(root: Path, cwd: Path, location: str) -> str:
    """`location` with its path made workspace-relative when it names a file relative to the cwd (or
    an absolute path inside the workspace); else as given, relative to the root (a JSON hit's
    `path`)."""
    if "\0" in location:
        return location
    for rel, span in ((location, ""), location.rpartition(":")[::2], location.partition(":")[::2]):
        target = Path(os.path.normpath(cwd / rel)) if rel else None
        if target is not None and target.is_relative_to(root) and target.is_file():
            inside = target.relative_to(root).as_posix()
            return f"{inside}:{span}" if span else inside
    return location


@click.command()
@click.argument("location")
@click.option("--root", "root_dir", default=None)
def read(location: str, root_dir: str | None) -> None:
    """Print a slice of a file: PATH[:START[-END]], PATH relative to the cwd or the workspace root
    (confined to the workspace)."""
    root, _ = resolve(root_dir)
    try:
        _, lines, start, end = file_slice(root, from_cwd(root, Path.cwd().resolve(), location))
    except ReadRefused as exc:
        fail(str(exc))
    output.write_numbered(lines, start, end)
