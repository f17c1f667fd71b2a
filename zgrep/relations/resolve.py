"""Map an import's module, as written in a file, to the workspace files that define it: one
`Resolver` per resolver family (a language record names its family)."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from zgrep.languages.registry import family, resolver_family

_JS_EXTS = ("", ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_C_EXTS = (".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx")


class FileSet:
    """The workspace's indexed files with their languages, and suffix/directory lookups."""

    def __init__(self, languages: dict[str, str]) -> None:
        self.languages = languages

    @cached_property
    def _by_name(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = defaultdict(list)
        for path in self.languages:
            index[posixpath.basename(path)].append(path)
        return index

    @cached_property
    def _by_dir(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = defaultdict(list)
        for path in self.languages:
            index[posixpath.dirname(path)].append(path)
        return index

    def ending(self, tail: str) -> set[str]:
        """Files whose path is `tail` or ends with `/tail`."""
        return {
            p
            for p in self._by_name.get(posixpath.basename(tail), ())
            if p == tail or p.endswith("/" + tail)
        }

    def in_dir(self, directory: str, languages: frozenset[str] | set[str]) -> set[str]:
        """Files directly in `directory` of one of `languages`."""
        return {p for p in self._by_dir.get(directory, ()) if self.languages[p] in languages}

    @cached_property
    def python_roots(self) -> list[str]:
        """Directories absolute Python imports start from: the workspace root and every top-level
        package's parent."""
        roots = {""}
        for path in self.languages:
            if posixpath.basename(path) == "__init__.py":
                package = posixpath.dirname(path)
                parent = posixpath.dirname(package)
                if package and posixpath.join(parent, "__init__.py") not in self.languages:
                    roots.add(parent)
        return sorted(roots)

    def dirs_ending(self, tail: str) -> list[str]:
        """Directories equal to or ending with `/tail`."""
        return [d for d in self._by_dir if d == tail or d.endswith("/" + tail)]


def _own_file(files: FileSet, path: str) -> set[str]:
    return {path}


def _package(files: FileSet, path: str) -> set[str]:
    """The files of `path`'s directory in its family (a Go or JVM package)."""
    return files.in_dir(posixpath.dirname(path), family(files.languages.get(path, ""))) | {path}


@dataclass(frozen=True)
class Resolver:
    """The import rules of one family of languages.

    module_files: (files, importer, module) -> the workspace files the import means. local: the
    files whose definitions a file sees unqualified. separator: between a module and a name inside
    it, when names can be modules (None: they cannot). by_scopes: uses are resolved by scopes and
    types (`pyresolve`), not by the generic import lookup. by_name: what a module means depends on
    the importer's file name, not only its folder (Rust's `super` in a mod.rs)."""

    module_files: Callable[[FileSet, str, str], set[str]]
    local: Callable[[FileSet, str], set[str]] = _own_file
    separator: str | None = None
    by_scopes: bool = False
    by_name: bool = False


def _none(files: FileSet, importer: str, module: str) -> set[str]:
    return set()


NO_RESOLVER = Resolver(_none)
"""The rules of a language without import rules of its own: nothing it imports is placed."""


def resolver(language: str) -> Resolver:
    """The import rules that apply to files of `language`."""
    return RESOLVERS.get(resolver_family(language), NO_RESOLVER)


def submodule(language: str, module: str, name: str) -> str | None:
    """`module` + `name` as a module path (`pkg` + `mod` -> `pkg.mod`), None when names are not
    modules."""
    sep = resolver(language).separator
    if sep is None:
        return None
    return module + name if sep == "." and module.endswith(".") else f"{module}{sep}{name}"


def local_files(files: FileSet, path: str) -> set[str]:
    """Files whose definitions `path` sees unqualified: itself, its package dir (Go, JVM),
    header/source twins."""
    return resolver(files.languages.get(path, "")).local(files, path)


def module_files(files: FileSet, importer: str, module: str) -> set[str]:
    """The workspace files an import of `module` in `importer` refers to; empty when outside it."""
    return resolver(files.languages.get(importer, "")).module_files(files, importer, module)


def _python(files: FileSet, importer: str, module: str) -> set[str]:
    dots = len(module) - len(module.lstrip("."))
    rest = module[dots:].replace(".", "/")
    # from the package roots, or beside a script outside any package; else not the project's
    if not dots:
        here = posixpath.dirname(importer)
        roots = files.python_roots
        if posixpath.join(here, "__init__.py") not in files.languages:
            roots = [*roots, here]
        stems = [posixpath.join(root, rest) for root in roots]
        return {
            c
            for stem in stems
            for c in (f"{stem}.py", f"{stem}.pyi", f"{stem}/__init__.py")
            if c in files.languages
        }
    base = posixpath.dirname(importer)
    for _ in range(dots - 1):
        base = posixpath.dirname(base)
    stem = posixpath.join(base, rest) if rest else base
    candidates = (f"{stem}.py", f"{stem}.pyi", posixpath.join(stem, "__init__.py"))
    return {posixpath.normpath(c) for c in candidates if posixpath.normpath(c) in files.languages}


def _js(files: FileSet, importer: str, module: str) -> set[str]:
    if not module.startswith("."):
        return set()
    stem = posixpath.normpath(posixpath.join(posixpath.dirname(importer), module))
    stems = [stem]
    base, ext = posixpath.splitext(stem)
    if ext in (".js", ".jsx", ".mjs", ".cjs"):
        stems.append(base)
    for candidate_stem in stems:
        for candidate in [candidate_stem + e for e in _JS_EXTS] + [
            f"{candidate_stem}/index{e}" for e in _JS_EXTS[1:]
        ]:
            if candidate in files.languages:
                return {candidate}
    return set()


def _go(files: FileSet, importer: str, module: str) -> set[str]:
    parts = module.strip("/").split("/")
    for start in range(len(parts)):
        found = files.in_dir("/".join(parts[start:]), frozenset({"go"}))
        if found:
            return found
    return set()


def _rust(files: FileSet, importer: str, module: str) -> set[str]:
    parts = [p for p in module.split("::") if p]
    relative = parts[:1] in (["self"], ["super"])
    segments = [p for p in parts if p not in ("crate", "self", "super")]
    if not segments:
        if parts[:1] == ["crate"]:
            return files.ending("lib.rs") | files.ending("main.rs")
        directory = posixpath.dirname(importer)
        if parts[:1] == ["super"] and posixpath.basename(importer) in (
            "mod.rs",
            "lib.rs",
            "main.rs",
        ):
            directory = posixpath.dirname(directory)
        return {p for p in (f"{directory}.rs", f"{directory}/mod.rs") if p in files.languages}
    tail = "/".join(segments)
    found = files.ending(f"{tail}.rs") | files.ending(f"{tail}/mod.rs")
    if relative:
        near = posixpath.dirname(posixpath.dirname(importer))
        found = {p for p in found if p.startswith(near)} or found
    return found


def _jvm(files: FileSet, importer: str, module: str) -> set[str]:
    tail = module.replace(".", "/")
    found: set[str] = set()
    for directory in files.dirs_ending(tail):
        found |= files.in_dir(directory, family(files.languages.get(importer, "")))
    for ext in (".java", ".kt", ".scala"):
        found |= files.ending(tail + ext)
    return found


def _c(files: FileSet, importer: str, module: str) -> set[str]:
    near = posixpath.normpath(posixpath.join(posixpath.dirname(importer), module))
    found = {near} if near in files.languages else files.ending(module)
    return set().union(*(_c_twins(files, p) for p in found)) if found else set()


def _c_twins(files: FileSet, path: str) -> set[str]:
    """A header and the source files of the same stem next to it."""
    stem = posixpath.splitext(path)[0]
    return {stem + e for e in _C_EXTS if stem + e in files.languages} | {path}


RESOLVERS: dict[str, Resolver] = {
    "python": Resolver(_python, separator=".", by_scopes=True),
    "javascript": Resolver(_js),
    "go": Resolver(_go, local=_package),
    "rust": Resolver(_rust, separator="::", by_name=True),
    "jvm": Resolver(_jvm, local=_package, separator="."),
    "c": Resolver(_c, local=_c_twins),
}
"""Resolver family -> its rules."""
