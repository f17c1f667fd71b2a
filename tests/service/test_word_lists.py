"""The word lists the thin client reads (tuples) and the Literal types type checkers read (under
TYPE_CHECKING, not run) say the same: zgrep.vocab's and the config's choices."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Literal, get_args

from zgrep import config, vocab


def checked_types(module: ModuleType) -> dict[str, tuple[str, ...]]:
    """The Literal aliases the module's `if TYPE_CHECKING:` block defines, by name: their values."""
    tree = ast.parse(Path(str(module.__file__)).read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )
    made: dict[str, object] = {}
    for node in block.body:
        if isinstance(node, ast.Assign) and "Literal" in ast.unparse(node.value):
            name = node.targets[0].id  # type: ignore[attr-defined]
            made[name] = eval(ast.unparse(node.value), {"Literal": Literal, **made})
    return {name: get_args(alias) for name, alias in made.items()}


def test_vocab_word_lists_are_its_literal_types() -> None:
    types = checked_types(vocab)
    lists = {
        "Mode": vocab.MODES,
        "SymbolKind": vocab.SYMBOL_KINDS,
        "HitKind": vocab.HIT_KINDS,
        "SearchMode": vocab.SEARCH_MODES,
        "Preview": vocab.PREVIEWS,
        "Refresh": vocab.REFRESHES,
        "Direction": vocab.DIRECTIONS,
    }
    assert types == lists
    # the run-time types (zgrep.contracts, the click CLI) are made from the lists on first use
    for name, values in lists.items():
        assert get_args(getattr(vocab, name)) == values, name


def test_config_choices_are_its_literal_types() -> None:
    assert checked_types(config) == {"Provider": config.PROVIDERS, "Fusion": config.FUSIONS}
    assert config.CHOICES["embedding.provider"] == config.PROVIDERS
    assert config.CHOICES["search.fusion"] == config.FUSIONS
    assert config.CHOICES["mode"] == vocab.MODES


def test_vocab_loads_no_typing_until_a_type_is_asked() -> None:
    code = (
        "import sys, zgrep.vocab as v; print('typing' in sys.modules);"
        " v.Mode; print('typing' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
