"""`zg adr anchor DOC`: propose code_anchors from the paths and code identifiers a document
mentions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from zgrep.adr.anchors import outside_repo
from zgrep.adr.model import Anchor
from zgrep import git

PATH_RE = re.compile(r"(?<![\w/.-])((?:\.?/)?[\w.-]+(?:/[\w.-]+)*(?:/|\.\w+))")
CODE_SPAN_RE = re.compile(r"`([^`\n]+)`")
IDENT_RE = re.compile(r"^([A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*)(?:\(\))?$")
MAX_FILES = 5000
MAX_BYTES = 512 * 1024
MAX_PLACES = 3


@dataclass
class Proposal:
    """Anchors found for a document, and identifiers that matched too many places or none."""

    anchors: list[Anchor] = field(default_factory=list)
    ambiguous: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


def workspace_files(root: Path) -> list[str]:
    """Tracked and untracked-not-ignored files (git), else a plain walk; capped."""
    if git.is_git_repo(root):
        files = git.split_names(git.run(root, "ls-files", "-co", "--exclude-standard", "-z"))
    else:
        files = [
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and ".git" not in p.parts
        ]
    return sorted(files)[:MAX_FILES]


def mentioned_paths(text: str, files: list[str]) -> list[str]:
    """Repo-relative file or directory paths named in the text that exist."""
    fileset = set(files)
    dirs = {f.rsplit("/", i)[0] for f in files for i in range(1, f.count("/") + 1)}
    out = []
    for m in PATH_RE.finditer(text):
        cand = m.group(1).removeprefix("./").rstrip("/.")
        if (
            cand
            and not outside_repo(cand)
            and (cand in fileset or cand in dirs)
            and cand not in out
        ):
            out.append(cand)
    return out


def mentioned_identifiers(text: str, paths: list[str]) -> list[str]:
    """Identifier-like code spans (`name`, `Class.method`, `fn()`), minus the paths."""
    out = []
    for m in CODE_SPAN_RE.finditer(text):
        ident = IDENT_RE.match(m.group(1).strip())
        if ident and ident.group(1) not in paths and ident.group(1) not in out:
            out.append(ident.group(1).replace("::", "."))
    return out


def propose(root: Path, doc: str, text: str, doc_dirs: tuple[str, ...]) -> Proposal:
    """Anchors for the code paths and defined symbols the document `doc` mentions (docs excluded)."""
    from zgrep.adr.anchors import find_symbol
    from zgrep.chunking import detect_language

    files = [
        f
        for f in workspace_files(root)
        if not any(f.startswith(d.rstrip("/") + "/") for d in doc_dirs)
    ]
    out = Proposal()
    paths = mentioned_paths(text, files)
    out.anchors += [Anchor(p) for p in paths]
    idents = [i for i in mentioned_identifiers(text, paths) if "." in i or len(i) > 2]
    places: dict[str, list[Anchor]] = {i: [] for i in idents}
    for rel in files:
        if not idents:
            break
        language = detect_language(rel)
        path = root / rel
        if (
            language in ("text", "markdown")
            or not path.is_file()
            or path.stat().st_size > MAX_BYTES
        ):
            continue
        src = path.read_text(encoding="utf-8", errors="replace")
        for ident in idents:
            if ident.rsplit(".", 1)[-1] in src:
                places[ident] += [
                    Anchor(rel, ident, None) for _ in find_symbol(src, language, ident)
                ][:1]
    for ident, found in places.items():
        if not found:
            out.unknown.append(ident)
        elif len(found) > MAX_PLACES:
            out.ambiguous[ident] = len(found)
        else:
            out.anchors += [a for a in found if a not in out.anchors]
    return out
