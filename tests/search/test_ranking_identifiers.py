"""Whole identifiers: an ALL_CAPS name like FORCE_COLOR finds the code that spells it, not code about
its parts (a `color.py`, a `Color` class); a hit is labelled with the definition its chunk holds, not
with a member name the query happened to match (a real repo, real Milvus Lite, the real `zg`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import indexed_repo, search_hits

_FIELDS = [
    ("width", "int"),
    ("height", "int"),
    ("markup", "bool"),
    ("highlight", "bool"),
    ("encoding", "str"),
    ("legacy_windows", "bool"),
    ("justify", "str"),
    ("overflow", "str"),
    ("no_wrap", "bool"),
    ("min_width", "int"),
    ("max_width", "int"),
    ("is_terminal", "bool"),
]
# A dataclass long enough to be split: its first piece lists the fields among its names.
OPTIONS = (
    '"""Console options."""\n\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass ConsoleOptions:\n'
    + "".join(
        f'    {name}: {kind}\n    """The {name.replace("_", " ")} option."""\n'
        for name, kind in _FIELDS
    )
    + "".join(
        f'\n    def update_{name}(self, value):\n        """A copy with a new {name}."""\n'
        f"        options = self.copy()\n        options.{name} = value\n        options.changed = True\n"
        f"        options.version += 1\n        options.history.append({name!r})\n        return options\n"
        for name in ("width", "height", "justify", "overflow", "encoding")
    )
)

FILES = {
    "paint/color.py": '''\
"""Colors and their parsing."""


class Color:
    """A terminal color: a name, a number in the palette or an RGB triplet."""

    def __init__(self, name, number=None, triplet=None):
        self.name = name
        self.number = number
        self.triplet = triplet
        self.is_default = name == "default"
        self.is_system = number is not None and number < 16
        self.is_true_color = triplet is not None

    def downgrade(self, system):
        """The nearest color the color system can show."""
        if system == "truecolor" or self.is_default:
            return self
        if self.triplet is not None and system == "256":
            return Color(self.name, number=16 + sum(self.triplet) % 216)
        return Color(self.name, number=(self.number or 0) % 16)


def parse_color(text):
    """Parse a color name, `#rrggbb` or `color(n)` into a Color."""
    text = text.strip().lower()
    if text.startswith("#"):
        triplet = tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))
        return Color(text, triplet=triplet)
    if text.startswith("color(") and text.endswith(")"):
        return Color(text, number=int(text[6:-1]))
    return Color(text)
''',
    "term/options.py": OPTIONS,
    "term/console.py": '''\
"""The console that writes to a terminal."""

import os
import sys


class Console:
    """Writes rich text to a file."""

    def __init__(self, file=None, environ=None):
        self.file = file or sys.stdout
        self.environ = os.environ if environ is None else environ
        self.width = 80
        self.height = 25
        self.soft_wrap = False

    def is_terminal(self):
        """Whether the output goes to an interactive terminal."""
        if self.environ.get("TTY_INTERACTIVE") == "0":
            return False
        force = self.environ.get("FORCE_COLOR")
        if force is not None:
            return force != ""
        isatty = getattr(self.file, "isatty", None)
        try:
            return False if isatty is None else isatty()
        except ValueError:
            return False
''',
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("idents"), FILES)


search = search_hits


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_all_caps_name_finds_the_code_that_reads_it(repo, mode):
    hits = search(repo, "FORCE_COLOR", "--mode-search", mode)
    reads = (
        FILES["term/console.py"]
        .splitlines()
        .index('        force = self.environ.get("FORCE_COLOR")')
        + 1
    )
    assert (
        hits[0]["path"] == "term/console.py"
        and hits[0]["start_line"] <= reads <= hits[0]["end_line"]
    )


def test_hit_is_labelled_with_its_own_definition(repo):
    hits = search(repo, "markup")
    line = OPTIONS.splitlines().index("    markup: bool") + 1
    options = [
        h
        for h in hits
        if h["path"] == "term/options.py" and h["start_line"] <= line <= h["end_line"]
    ]
    assert options and options[0]["symbol"] == "ConsoleOptions"
    assert options[0]["symbol_kind"] == "class"
