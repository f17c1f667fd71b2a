"""The closed word lists of the operations' arguments and results: its values as tuples, and one
Literal type each (`Mode`, `SymbolKind`, ...) made on first use.

Standard library only, and no typing at import: the thin client's option parsing and the config read
the tuples; type checkers, `zgrep.contracts` and the click CLI the types (tests/service/
test_word_lists.py checks that both say the same)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from typing import Literal

    Mode = Literal["auto", "server", "direct"]
    SymbolKind = Literal["module", "class", "interface", "function", "value", "alias"]
    HitKind = Literal[SymbolKind, "section"]
    SearchMode = Literal["hybrid", "semantic", "lexical"]
    Preview = Literal["none", "short", "full"]
    Refresh = Literal["wait", "off", "background"]
    Direction = Literal["backward", "forward"]

MODES: tuple[Mode, ...] = ("auto", "server", "direct")
"""Where an op runs: the daemon when one is ready (auto), only the daemon (server), or in this process (direct)."""
SYMBOL_KINDS: tuple[SymbolKind, ...] = (
    "module",
    "class",
    "interface",
    "function",
    "value",
    "alias",
)
"""What a definition is: a chunk's and a hit's `symbol_kind`."""
HIT_KINDS: tuple[HitKind, ...] = (*SYMBOL_KINDS, "section")
"""What `--symbol-type` may ask for: a symbol kind, or a markdown chunk's heading (stored as a module)."""
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "semantic", "lexical")
"""Which routes a search runs: all, the dense one only, the keyword ones only."""
PREVIEWS: tuple[Preview, ...] = ("none", "short", "full")
"""How much code a hit shows."""
REFRESHES: tuple[Refresh, ...] = ("wait", "off", "background")
"""Whether a search updates the index first, not at all, or after answering (daemon only)."""
DIRECTIONS: tuple[Direction, ...] = ("backward", "forward")
"""Which way `zg trace` follows uses: to the callers, or to the callees."""

_TYPES = {
    "Mode": MODES,
    "SymbolKind": SYMBOL_KINDS,
    "HitKind": HIT_KINDS,
    "SearchMode": SEARCH_MODES,
    "Preview": PREVIEWS,
    "Refresh": REFRESHES,
    "Direction": DIRECTIONS,
}
"""Each Literal type's name and its values, for `__getattr__`."""


def __getattr__(name: str) -> object:
    """`Mode`, `SymbolKind`, ...: the Literal type of a word list, made (and kept) on first use."""
    if name not in _TYPES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from typing import Literal

    made = Literal[_TYPES[name]]  # type: ignore[valid-type]  # (the checkers read the types above)
    globals()[name] = made
    return made
