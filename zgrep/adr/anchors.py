"""Resolve one code anchor against a tree: path safety, file, binary, line range, symbol."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from zgrep.adr.model import Anchor
from zgrep.adr.trees import IndexTree, WorkTree
from zgrep.types import Definition

SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Resolution:
    """Outcome of resolving an anchor: `code` is "ok" or a problem code; `found` a symbol's range."""

    code: str
    message: str = ""
    severity: str = "error"
    found: tuple[int, int] | None = None


def outside_repo(path: str) -> bool:
    """Absolute paths and paths that climb out with `..` are outside the repository."""
    norm = posixpath.normpath(path.replace("\\", "/"))
    return (
        path.startswith(("/", "\\", "~"))
        or (len(path) > 1 and path[1] == ":")
        or norm == ".."
        or norm.startswith("../")
    )


def is_binary(data: bytes) -> bool:
    """Git's heuristic: a NUL byte near the start."""
    return b"\0" in data[:SNIFF_BYTES]


def find_symbol(text: str, language: str, name: str) -> list[Definition]:
    """Definitions of `name` (`Scope.name` pins the enclosing scope) found by the indexing
    extractor."""
    from zgrep.chunking import extract_symbols

    scope, _, base = name.rpartition(".")
    return [
        s
        for s in extract_symbols(text, language)
        if s.name == base
        and (
            not scope
            or s.scope == scope
            or s.scope.endswith("." + scope)
            or s.scope.endswith("::" + scope)
        )
    ]


def resolve(anchor: Anchor, tree: WorkTree | IndexTree) -> Resolution:
    """Check that the anchor still points at something real in `tree`."""
    path = anchor.path.strip("/")
    where = tree.label
    if outside_repo(anchor.path):
        return Resolution(
            "anchor_outside",
            f"path {anchor.path!r} is outside the repository (use a repo-relative path)",
        )
    if tree.is_dir(path) and not tree.is_file(path):
        if anchor.symbol or anchor.lines:
            return Resolution(
                "anchor_dir", f"{path} is a directory: a symbol or line range needs a file"
            )
        return Resolution("ok")
    data = tree.read(path)
    if data is None:
        return Resolution("anchor_missing_file", f"file {path} does not exist in the {where}")
    if is_binary(data):
        return Resolution(
            "anchor_binary", f"{path} is a binary file: anchor a text/source file instead"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Resolution(
            "anchor_binary", f"{path} is not UTF-8 text: anchor a text/source file instead"
        )
    n_lines = len(text.splitlines())
    if anchor.lines and anchor.lines[1] > n_lines:
        lo, hi = anchor.lines
        return Resolution(
            "anchor_lines", f"lines {lo}-{hi} lie outside {path} ({n_lines} lines) in the {where}"
        )
    if not anchor.symbol:
        return Resolution("ok")
    from zgrep.chunking import detect_language

    language = detect_language(path, text)
    if language == "text":
        return Resolution(
            "anchor_symbol_unsupported",
            f"cannot find symbols in {path} (no parser for it): anchor a line range instead",
        )
    found = [(s.start, s.end) for s in find_symbol(text, language, anchor.symbol)]
    if not found:
        return Resolution(
            "anchor_symbol", f"symbol {anchor.symbol} is no longer defined in {path} ({where})"
        )
    if anchor.lines and anchor.lines not in found:
        lo, hi = found[0]
        return Resolution(
            "anchor_lines_stale",
            f"{anchor.symbol} is now at lines {lo}-{hi} of {path} "
            f"(anchor says {anchor.lines[0]}-{anchor.lines[1]})",
            "warning",
            found[0],
        )
    return Resolution("ok", found=found[0])
