"""The one definition of `zg search`'s options and of the common workspace options (--mode, --model,
--milvus-uri), click-free: the click CLI builds its options from these tables (`cli.main.click_options`),
and the fast path (`zgrep.cli.fast`) parses the same tables with `parse`, which takes only what it reads
exactly as click does and declines the rest (help, unknown options, bad values): the click CLI then
answers those.

Standard library and the word lists only, no typing at import."""

from __future__ import annotations

from zgrep.cli.exits import fail
from zgrep.vocab import HIT_KINDS, MODES, PREVIEWS, REFRESHES, SEARCH_MODES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from typing import Any, Literal

    from zgrep.contracts import Setting

    Kind = Literal["flag", "int", "uint", "float", "choice", "str"]
    """What an option takes: nothing (a flag), an integer, an integer of 0 or more
    (click.IntRange(0)), a number, one of `choices`, or any text."""
    Values = dict[str, Any]
    """Parsed options by `dest`, as click gives them to the command (each option's own type, as
    click's `**values: Any`): a tuple for a `multiple` option."""

FORMATS = ("text", "json", "jsonl", "markdown")


class Flag:
    """One option: its names (`-n`, `--limit`), the name its value goes by, what it takes, and its help.
    A plain class: a NamedTuple's creation compiles each field's annotation (~0.3M instructions a
    field on every `zg` call)."""

    __slots__ = (
        "names",
        "dest",
        "kind",
        "help",
        "choices",
        "multiple",
        "default",
        "show_default",
        "expose",
    )

    def __init__(
        self,
        names: tuple[str, ...],
        dest: str,
        kind: Kind = "str",
        help: str | None = None,
        choices: tuple[str, ...] = (),
        multiple: bool = False,
        default: object = None,
        show_default: bool = False,
        expose: bool = True,  # False: accepted, its value given to nobody (rg's -i, -F)
    ) -> None:
        self.names = names
        self.dest = dest
        self.kind = kind
        self.help = help
        self.choices = choices
        self.multiple = multiple
        self.default = default
        self.show_default = show_default
        self.expose = expose

    @property
    def default_value(self) -> object:
        """The value click gives when the option is absent."""
        if self.multiple:
            return ()
        return False if self.kind == "flag" else self.default


COMMON = (
    Flag(("--mode",), "mode", "choice", "auto (daemon if ready), server or direct.", MODES),
    Flag(
        ("--model",), "model", help="Embedding model: local, local:/dir, ollama:NAME, openai:NAME."
    ),
    Flag(
        ("--milvus-uri",),
        "milvus_uri",
        help="Milvus URI (default: Milvus Lite in .zgrep/). Env ZG_MILVUS_URI.",
    ),
)
"""--mode, --model, --milvus-uri: on every workspace command (`cli.main.common_options`)."""


class Common:
    """The common options' values: --mode, --model and --milvus-uri (a plain class: see `Flag`)."""

    __slots__ = ("mode", "model", "milvus_uri")

    def __init__(self, mode: str | None, model: str | None, milvus_uri: str | None) -> None:
        self.mode = mode
        self.model = model
        self.milvus_uri = milvus_uri

    def config(self) -> dict[str, Setting]:
        """Config overrides from --model and --milvus-uri (see `config_flags`)."""
        return config_flags(self.model, self.milvus_uri)


def config_flags(model: str | None, milvus_uri: str | None) -> dict[str, Setting]:
    """Config overrides from the common flags; a bad --model exits 2 with the embedding factory's
    reason."""
    flags: dict[str, Setting] = {}
    if milvus_uri:
        flags["milvus.uri"] = milvus_uri
    if model is not None:
        from zgrep.embedding.base import EmbeddingError
        from zgrep.embedding.factory import parse_model_spec

        try:
            provider, name = parse_model_spec(model)
        except EmbeddingError as exc:
            fail(str(exc))
        flags["embedding.provider"] = provider
        flags["embedding.model"] = name or ""
    return flags


SEARCH = (
    Flag(
        ("-e", "-q", "--query"),
        "extra",
        help="A query (repeat for several; results are grouped). With it, every argument is a path.",
        multiple=True,
    ),
    Flag(("-n", "--limit"), "limit", "int", "Hits per query (default 10)."),
    Flag(
        ("-g", "--glob"),
        "globs",
        help="Include paths matching GLOB; '!GLOB' excludes.",
        multiple=True,
    ),
    Flag(("--iglob",), "iglobs", help="Like --glob, case-insensitive.", multiple=True),
    Flag(
        ("-t", "--type"),
        "types",
        help="Only files of this type (ripgrep names: py, js, ts, go, ...).",
        multiple=True,
    ),
    Flag(("-T", "--type-not"), "types_not", help="Exclude files of this type.", multiple=True),
    Flag(("--type-list",), "type_list", "flag", "Show the known file types and exit."),
    Flag(
        ("--symbol-type",),
        "symbol_types",
        "choice",
        "Only hits of this kind (section: a markdown heading's).",
        HIT_KINDS,
        multiple=True,
    ),
    Flag(
        ("--path",),
        "paths",
        help="Only under this workspace-relative directory or file.",
        multiple=True,
    ),
    Flag(
        ("--workspace",),
        "workspace",
        "flag",
        "Search the whole workspace, not just the current directory.",
    ),
    Flag(
        ("--modified-after",),
        "modified_after",
        "float",
        "Only files modified after this epoch time.",
    ),
    Flag(
        ("--modified-before",),
        "modified_before",
        "float",
        "Only files modified before this epoch time.",
    ),
    Flag(("--min-score",), "min_score", "float", "Drop hits scoring below this (0-1)."),
    Flag(
        ("--min-score-diff",),
        "min_score_diff",
        "float",
        "Drop hits more than this below the best hit.",
    ),
    Flag(
        ("--preview",),
        "preview",
        "choice",
        "Preview of each hit [default: short; full with --format markdown].",
        PREVIEWS,
    ),
    Flag(
        ("-A", "--after-context"),
        "context_after",
        "uint",
        "Show NUM file lines after each preview.",
    ),
    Flag(
        ("-B", "--before-context"),
        "context_before",
        "uint",
        "Show NUM file lines before each preview.",
    ),
    Flag(("-C", "--context"), "around", "uint", "Show NUM lines before and after."),
    Flag(
        ("-l", "--files-with-matches"),
        "files_only",
        "flag",
        "Print only the paths of files with hits.",
    ),
    Flag(
        ("-c", "--count"),
        "count",
        "flag",
        "Print each file with hits and its number of hits.",
    ),
    Flag(
        ("-i", "--ignore-case"),
        "ignore_case",
        "flag",
        "Accepted: keyword matching ignores case.",
        expose=False,
    ),
    Flag(
        ("-F", "--fixed-strings"),
        "fixed_strings",
        "flag",
        "Accepted: a query is never a regex.",
        expose=False,
    ),
    Flag(
        ("--mode-search",),
        "search_mode",
        "choice",
        "Which routes to run.",
        SEARCH_MODES,
        default="hybrid",
        show_default=True,
    ),
    Flag(
        ("--refresh",),
        "refresh",
        "choice",
        "Update the index first (wait), not at all (off), or after answering (background; daemon only).",
        REFRESHES,
    ),
    Flag(("--no-index",), "no_index", "flag", "Never build a missing index; fail instead."),
    Flag(
        ("--yes",),
        "yes",
        "flag",
        "Index a first-time folder outside git even when it holds over 2,000 files.",
    ),
    Flag(
        ("--root",),
        "root_dir",
        help="Workspace root (default: the git top level of the cwd).",
    ),
    Flag(("--format",), "fmt", "choice", "Output format [default: text].", FORMATS),
    Flag(("--json",), "as_json", "flag", "One JSON document (--format json)."),
    Flag(("--jsonl",), "as_jsonl", "flag", "One JSON hit per line (--format jsonl)."),
    Flag(
        ("--md",),
        "as_md",
        "flag",
        "Hits as markdown headings and fenced code (--format markdown).",
    ),
    Flag(("--color",), "color", "choice", choices=("auto", "always", "never"), default="auto"),
)
"""`zg search`'s options, in the order its help lists them (its hidden rg flags are cli/search.py's
NOT_IN_ZG, and the common ones follow)."""


def _value(flag: Flag, text: str) -> object:
    """`text` as `flag`'s value, or ValueError unless click would read it the same (a subset of what
    click accepts: what it rejects, or reads otherwise, is declined)."""
    if flag.kind in ("int", "uint"):
        if not (text.isascii() and text.isdigit()):
            raise ValueError(text)
        return int(text)
    if flag.kind == "float":
        whole, _, part = text.partition(".")
        if not (text.isascii() and (whole + part).isdigit() and (whole.isdigit() or part)):
            raise ValueError(text)
        return float(text)
    if flag.kind == "choice" and text not in flag.choices:
        raise ValueError(text)
    return text


def parse(table: tuple[Flag, ...], args: list[str]) -> tuple[Values, list[str]] | None:
    """The options of `table` in `args` and the other arguments (those after `--` included), as click's
    parser reads them for a command with one `nargs=-1` argument; None for anything it would not read
    the same way: an unknown option (help included), a flag given a value, a missing or bad value, or
    a separate value beginning with `-` (the click CLI then answers)."""
    by_name = {name: flag for flag in table for name in flag.names}
    values: Values = {flag.dest: flag.default_value for flag in table}
    words: list[str] = []
    rest = iter(args)

    def take(flag: Flag, given: str | None) -> bool:
        if flag.kind == "flag":
            if given is not None:
                return False
            values[flag.dest] = True
            return True
        if given is None:
            given = next(rest, None)
            if given is None or given.startswith("-"):
                return False
        try:
            value = _value(flag, given)
        except ValueError:
            return False
        if flag.multiple:
            values[flag.dest] = (*values[flag.dest], value)
        else:
            values[flag.dest] = value
        return True

    for arg in rest:
        if arg == "--":
            words.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name not in by_name or not take(by_name[name], value if eq else None):
                return None
            continue
        # short options, as click reads them: flags one letter each, a value option takes the rest
        for at in range(1, len(arg)):
            flag = by_name.get("-" + arg[at])
            if flag is None:
                return None
            attached = arg[at + 1 :] if flag.kind != "flag" and at + 1 < len(arg) else None
            if not take(flag, attached):
                return None
            if attached is not None:
                break
    return values, words
