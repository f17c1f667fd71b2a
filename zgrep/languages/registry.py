"""The language registry: every `Language` record by name, and what is derived from them (detection
by file name, rg types, the chunking and relations specs, resolver families, the doctor's samples).
Standard library only: the thin client lists the types."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from zgrep.languages.builtin import BUILTIN, OTHER_TYPES
from zgrep.languages.spec import ChunkSpec, Language, RelSpec

_SNIFF_CHARS = 200_000
_BY_NAME: dict[str, Language] = {}
_BY_FILENAME: dict[str, str] = {}
_BY_EXTENSION: dict[str, str] = {}
_BY_PREFIX: dict[str, str] = {}
_TYPES: dict[str, tuple[str, ...]] = dict(OTHER_TYPES)

LANGUAGES: Mapping[str, Language] = MappingProxyType(_BY_NAME)
"""Every registered language by name, in registration order."""
TYPES: Mapping[str, tuple[str, ...]] = MappingProxyType(_TYPES)
"""rg type name -> globs, of every language and the files no language claims."""


def register(language: Language) -> None:
    """Add a language; ValueError when its name, a file name, an extension or a type is another's."""
    clashes = [f"language {language.name!r}"] if language.name in _BY_NAME else []
    clashes += [f"file name {n!r}" for n in language.filenames if n in _BY_FILENAME]
    clashes += [f"file name start {p!r}" for p in language.prefixes if p in _BY_PREFIX]
    clashes += [f"extension {e!r}" for e in language.extensions if e in _BY_EXTENSION]
    clashes += [f"type {t!r}" for t in language.types if t in _TYPES]
    if clashes:
        raise ValueError(
            f"cannot register {language.name!r}: {', '.join(clashes)} already registered"
        )
    if language.chunking is not None and not language.sample:
        raise ValueError(
            f"cannot register {language.name!r}: a language with a grammar needs a doctor sample"
        )
    _BY_NAME[language.name] = language
    _BY_FILENAME.update(dict.fromkeys(language.filenames, language.name))
    _BY_PREFIX.update(dict.fromkeys(language.prefixes, language.name))
    _BY_EXTENSION.update(dict.fromkeys(language.extensions, language.name))
    _TYPES.update(language.types)


def unregister(name: str) -> None:
    """Remove a registered language and everything it claimed."""
    language = _BY_NAME.pop(name)
    for table in (_BY_FILENAME, _BY_PREFIX, _BY_EXTENSION):
        for key in [k for k, v in table.items() if v == name]:
            del table[key]
    for type_name in language.types:
        del _TYPES[type_name]


def detect_language(path: str, text: str | None = None) -> str:
    """Language name for a path by file name, name prefix or extension; "text" when unknown. With
    the file's `text`, a language that sniffs this extension claims the file when the text matches
    (a C++ `.h`)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name in _BY_FILENAME:
        return _BY_FILENAME[name]
    for prefix, language_name in _BY_PREFIX.items():
        if name.startswith(prefix):
            return language_name
    dot = name.rfind(".")
    if dot <= 0:
        return "text"
    extension = name[dot:]
    if text:
        for language in _BY_NAME.values():
            if (
                language.sniff
                and language.sniff[0] == extension
                and language.sniff[1].search(text, 0, _SNIFF_CHARS)
            ):
                return language.name
    return _BY_EXTENSION.get(extension, "text")


def chunk_spec(language: str) -> ChunkSpec | None:
    """The tree-sitter chunking spec of a language, None when it is chunked without a grammar."""
    found = _BY_NAME.get(language)
    return found.chunking if found is not None else None


def rel_spec(language: str) -> RelSpec | None:
    """The relations facts of a language, None when the generic walk is all it needs."""
    found = _BY_NAME.get(language)
    return found.relations if found is not None else None


def resolver_family(language: str) -> str:
    """The resolver family of a language (its own name when it has none, or is unknown)."""
    found = _BY_NAME.get(language)
    return found.resolver_family if found is not None else language


def family(language: str) -> frozenset[str]:
    """The languages that import one another's files with `language`'s (itself included)."""
    name = resolver_family(language)
    return frozenset(
        {language} | {n for n, lang in _BY_NAME.items() if lang.resolver_family == name}
    )


def samples() -> dict[str, str]:
    """Per language with a grammar, the snippet `zg doctor` must find a definition in."""
    return {name: lang.sample for name, lang in _BY_NAME.items() if lang.chunking is not None}


for _language in BUILTIN:
    register(_language)
