"""The import statements of each language as (module, name, alias) triples: `name` "" binds the
module itself, "*" everything, "default" a default export. Standard library only (the language
records name these)."""

from __future__ import annotations

import re


def js_imports(text: str) -> list[tuple[str, str, str]]:
    """`import {a as b} from './m'`, `const x = require('m')`, `export * from './m'`."""
    source = re.search(r"""(?:from\s*|require\s*\(\s*)['"`]([^'"`]+)['"`]""", text)
    if source is None:
        return []
    module = source.group(1)
    head = text[: source.start()]
    require = head.strip().endswith("=") or "require" in text[source.start() : source.start() + 9]
    if require:
        head = head.split("=", 1)[0]
    head = re.sub(r"^\s*(import|export|const|let|var)\s+(type\s+)?", "", head).strip()
    out: list[tuple[str, str, str]] = []
    braces = re.search(r"\{([^}]*)\}", head)
    if braces:
        for part in braces.group(1).split(","):
            sep = ":" if require else " as "
            name, _, alias = (p.strip() for p in part.partition(sep))
            name = re.sub(r"^type\s+", "", name)
            if name:
                out.append((module, name, alias or name))
        head = head[: braces.start()] + head[braces.end() :]
    star = re.search(r"\*\s*(?:as\s+([\w$]+))?", head)
    if star:
        out.append((module, "" if star.group(1) else "*", star.group(1) or ""))
        head = head[: star.start()] + head[star.end() :]
    default = re.match(r"\s*([\w$]+)", head.replace(",", " "))
    if default and default.group(1) != "from":
        out.append((module, "" if require else "default", default.group(1)))
    return out


def go_imports(text: str) -> list[tuple[str, str, str]]:
    """One `import_spec`: `alias "path"` (`.` imports everything, `_` nothing)."""
    match = re.match(r"\s*([\w.]+)?\s*\"([^\"]+)\"", text)
    if match is None or match.group(1) == "_":
        return []
    path, alias = match.group(2), match.group(1)
    if alias == ".":
        return [(path, "*", "")]
    return [(path, "", alias or path.rsplit("/", 1)[-1])]


def _rust_tree(prefix: str, text: str, out: list[tuple[str, str, str]]) -> None:
    """Expand one `use` tree (`a::{b, c as d, e::*}`) into (module, name, alias)."""
    text = text.strip()
    brace = text.find("{")
    if brace >= 0 and text.endswith("}"):
        base = "::".join(p for p in (prefix, text[:brace].rstrip(":").strip()) if p)
        depth, start = 0, brace + 1
        for i in range(brace + 1, len(text) - 1):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if text[i] == "," and depth == 0:
                _rust_tree(base, text[start:i], out)
                start = i + 1
        _rust_tree(base, text[start:-1], out)
        return
    path, _, alias = (p.strip() for p in text.partition(" as "))
    full = "::".join(p for p in (prefix, path) if p)
    module, _, name = full.rpartition("::")
    if name == "self":
        module, _, name = module.rpartition("::")
    if name:
        out.append((module, name, "" if name == "*" else alias or name))


def rust_imports(text: str) -> list[tuple[str, str, str]]:
    """`use a::{b, c as d, e::*};`"""
    text = re.sub(r"^\s*(pub(\([^)]*\))?\s+)?use\s+|;\s*$", "", text.strip())
    out: list[tuple[str, str, str]] = []
    _rust_tree("", re.sub(r"\s+", "", re.sub(r"\s+as\s+", "\0", text)).replace("\0", " as "), out)
    return out


def jvm_imports(text: str) -> list[tuple[str, str, str]]:
    """`import a.B` (Java, Kotlin's `as`, Scala's `{B => C}` and `_`)."""
    text = re.sub(r"^\s*import\s+(static\s+)?|;\s*$", "", text.strip())
    braces = re.match(r"([\w.]+)\.\{([^}]*)\}", text)
    if braces:
        parts = [(braces.group(1), *_jvm_alias(part)) for part in braces.group(2).split(",")]
    else:
        parts = [
            (module, name, alias)
            for module, _, name, alias in (
                (*_jvm_alias(part)[0].rpartition("."), _jvm_alias(part)[1])
                for part in text.split(",")
            )
        ]
    out = []
    for module, name, alias in parts:
        if name:
            star = name in ("*", "_")
            out.append((module, "*" if star else name, "" if star else alias or name))
    return out


def _jvm_alias(part: str) -> tuple[str, str]:
    """`a.B as C` (Kotlin) or `B => C` (Scala) -> (path, alias)."""
    match = re.match(r"(.*?)\s*(?:=>|\sas\s)\s*(.*)", part.strip())
    return (match.group(1).strip(), match.group(2).strip()) if match else (part.strip(), "")


def c_imports(text: str) -> list[tuple[str, str, str]]:
    """`#include "x.h"` / `<x.h>`: everything the header declares."""
    match = re.search(r"[\"<]([^\">]+)[\">]", text)
    return [(match.group(1), "*", "")] if match else []
