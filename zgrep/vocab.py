"""The closed word lists of the operations' arguments and results: one Literal type each, and its
values.

Standard library only: the thin client's option parsing and `zgrep.contracts` use these."""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["auto", "server", "direct"]
"""Where an op runs: the daemon when one is ready (auto), only the daemon (server), or in this process (direct)."""
SymbolKind = Literal["module", "class", "interface", "function", "value", "alias"]
"""What a definition is: a chunk's and a hit's `symbol_kind`."""
HitKind = Literal[SymbolKind, "section"]
"""What `--symbol-type` may ask for: a symbol kind, or a markdown chunk's heading (stored as a module)."""
SearchMode = Literal["hybrid", "semantic", "lexical"]
"""Which routes a search runs: all, the dense one only, the keyword ones only."""
Preview = Literal["none", "short", "full"]
"""How much code a hit shows."""
Refresh = Literal["wait", "off", "background"]
"""Whether a search updates the index first, not at all, or after answering (daemon only)."""
Direction = Literal["backward", "forward"]
"""Which way `zg trace` follows uses: to the callers, or to the callees."""

MODES: tuple[Mode, ...] = get_args(Mode)
SYMBOL_KINDS: tuple[SymbolKind, ...] = get_args(SymbolKind)
HIT_KINDS: tuple[HitKind, ...] = get_args(HitKind)
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)
PREVIEWS: tuple[Preview, ...] = get_args(Preview)
REFRESHES: tuple[Refresh, ...] = get_args(Refresh)
DIRECTIONS: tuple[Direction, ...] = get_args(Direction)
