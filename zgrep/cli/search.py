"""`zg search`: hybrid search of the workspace. Exit 0 with hits, 1 without, 2 on error."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click

from zgrep.cli import output
from zgrep.cli.main import Common, common_options, fail, resolve, run
from zgrep.contracts import Args, SearchResult
from zgrep.service import SEARCH
from zgrep.vocab import (
    HIT_KINDS,
    PREVIEWS,
    REFRESHES,
    SEARCH_MODES,
    HitKind,
    Preview,
    Refresh,
    SearchMode,
)

FORMATS = ("text", "json", "jsonl", "markdown")

# rg's flags that have no meaning here: (flags, takes a value, what to use instead)
NOT_IN_ZG: tuple[tuple[tuple[str, ...], bool, str], ...] = (
    (("-v", "--invert-match"), False, "-g '!GLOB' or -T TYPE to leave files out"),
    (("-x", "--line-regexp"), False, "--mode-search lexical for keyword matches"),
    (
        ("-w", "--word-regexp"),
        False,
        "--mode-search lexical for keyword matches (words and identifier parts)",
    ),
    (("-o", "--only-matching"), False, "--preview none for locations only, or -l for files"),
    (
        ("-s", "--case-sensitive"),
        False,
        "a definition's exact name, which ranks first (keyword matching ignores case)",
    ),
    (
        ("-S", "--smart-case"),
        False,
        "a definition's exact name, which ranks first (keyword matching ignores case)",
    ),
    (("-m", "--max-count"), True, "-n/--limit for the number of hits"),
    (("-r", "--replace"), True, "rg -r on the files zg finds (zg search -l ...)"),
    (("-U", "--multiline"), False, "the query as is: a hit is a whole chunk of code"),
    (("-P", "--pcre2"), False, "rg: a zg query is words, never a regular expression"),
    (("-u", "--unrestricted"), False, "'!PATTERN' lines in .zgignore to index ignored files"),
    (
        ("-L", "--follow"),
        False,
        "the index as is: symlinks inside the workspace are followed, others never",
    ),
)


class SearchCommand(click.Command):
    """`zg search`: remembers how many arguments followed `--` (query words, never paths)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["zg.forced_words"] = len(args) - args.index("--") - 1 if "--" in args else 0
        return super().parse_args(ctx, args)


def _not_in_zg(advice: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value not in (None, False):
            click.echo(f"zg has no {param.opts[0]}: use {advice}", err=True)
            sys.exit(2)

    return refuse


def rg_flags_zg_lacks(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Hidden options for rg's flags zg lacks: each exits 2 with one line naming the nearest
    equivalent."""
    for flags, takes_value, advice in NOT_IN_ZG:
        fn = click.option(
            *flags,
            is_flag=not takes_value,
            default=None,
            expose_value=False,
            hidden=True,
            is_eager=True,
            callback=_not_in_zg(advice),
        )(fn)
    return fn


def split_words(
    words: tuple[str, ...], forced: int, queries_given: bool
) -> tuple[list[str], list[str]]:
    """(query words, search paths): trailing words that name an existing path are paths as in rg,
    except the first word when no -e/-q gave a query, and the words after `--`."""
    free, tail = list(words[: len(words) - forced]), list(words[len(words) - forced :])
    paths: list[str] = []
    while len(free) > (0 if queries_given else 1) and os.path.lexists(free[-1]):
        paths.insert(0, free.pop())
    return free + tail, paths


def scope_paths(root: Path, cwd: Path, given: list[str], whole: bool) -> list[str]:
    """Search paths given on the command line (relative to the cwd) as workspace-relative ones; none
    given, the cwd when it is below the root (as rg and git grep), unless `whole` (--workspace,
    --root, --path)."""
    scoped = []
    for raw in given:
        target = Path(os.path.normpath(cwd / raw))
        if not target.is_relative_to(root):
            fail(f"{raw} is outside the workspace {root}")
        scoped.append(target.relative_to(root).as_posix())
    if not given and not whole and cwd != root and cwd.is_relative_to(root):
        scoped.append(cwd.relative_to(root).as_posix())
    return scoped


@click.command(cls=SearchCommand)
@click.argument("words", nargs=-1)
@click.option(
    "-e",
    "-q",
    "--query",
    "extra",
    multiple=True,
    help="A query (repeat for several; results are grouped). With it, every argument is a path.",
)
@click.option("-n", "--limit", type=int, default=None, help="Hits per query (default 10).")
@click.option(
    "-g", "--glob", "globs", multiple=True, help="Include paths matching GLOB; '!GLOB' excludes."
)
@click.option("--iglob", "iglobs", multiple=True, help="Like --glob, case-insensitive.")
@click.option(
    "-t",
    "--type",
    "types",
    multiple=True,
    help="Only files of this type (ripgrep names: py, js, ts, go, ...).",
)
@click.option("-T", "--type-not", "types_not", multiple=True, help="Exclude files of this type.")
@click.option("--type-list", is_flag=True, help="Show the known file types and exit.")
@click.option(
    "--symbol-type",
    "symbol_types",
    multiple=True,
    type=click.Choice(HIT_KINDS),
    help="Only hits of this kind (section: a markdown heading's).",
)
@click.option(
    "--path", "paths", multiple=True, help="Only under this workspace-relative directory or file."
)
@click.option(
    "--workspace", is_flag=True, help="Search the whole workspace, not just the current directory."
)
@click.option(
    "--modified-after", type=float, default=None, help="Only files modified after this epoch time."
)
@click.option(
    "--modified-before",
    type=float,
    default=None,
    help="Only files modified before this epoch time.",
)
@click.option("--min-score", type=float, default=None, help="Drop hits scoring below this (0-1).")
@click.option(
    "--min-score-diff",
    type=float,
    default=None,
    help="Drop hits more than this below the best hit.",
)
@click.option(
    "--preview",
    type=click.Choice(PREVIEWS),
    default=None,
    help="Preview of each hit [default: short; full with --format markdown].",
)
@click.option(
    "-A",
    "--after-context",
    "context_after",
    type=click.IntRange(0),
    default=None,
    help="Show NUM file lines after each preview.",
)
@click.option(
    "-B",
    "--before-context",
    "context_before",
    type=click.IntRange(0),
    default=None,
    help="Show NUM file lines before each preview.",
)
@click.option(
    "-C",
    "--context",
    "around",
    type=click.IntRange(0),
    default=None,
    help="Show NUM lines before and after.",
)
@click.option(
    "-l",
    "--files-with-matches",
    "files_only",
    is_flag=True,
    help="Print only the paths of files with hits.",
)
@click.option(
    "-c", "--count", "count", is_flag=True, help="Print each file with hits and its number of hits."
)
@click.option(
    "-i",
    "--ignore-case",
    is_flag=True,
    expose_value=False,
    help="Accepted: keyword matching ignores case.",
)
@click.option(
    "-F",
    "--fixed-strings",
    is_flag=True,
    expose_value=False,
    help="Accepted: a query is never a regex.",
)
@click.option(
    "--mode-search",
    "search_mode",
    type=click.Choice(SEARCH_MODES),
    default="hybrid",
    show_default=True,
    help="Which routes to run.",
)
@click.option(
    "--refresh",
    type=click.Choice(REFRESHES),
    default=None,
    help="Update the index first (wait), not at all (off), or after answering (background; daemon only).",
)
@click.option("--no-index", is_flag=True, help="Never build a missing index; fail instead.")
@click.option(
    "--yes",
    is_flag=True,
    help="Index a first-time folder outside git even when it holds over 2,000 files.",
)
@click.option(
    "--root",
    "root_dir",
    default=None,
    help="Workspace root (default: the git top level of the cwd).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format [default: text].",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document (--format json).")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON hit per line (--format jsonl).")
@click.option(
    "--md",
    "as_md",
    is_flag=True,
    help="Hits as markdown headings and fenced code (--format markdown).",
)
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto")
@rg_flags_zg_lacks
@common_options
@click.pass_context
def search(
    ctx: click.Context,
    words: tuple[str, ...],
    extra: tuple[str, ...],
    limit: int | None,
    globs: tuple[str, ...],
    iglobs: tuple[str, ...],
    types: tuple[str, ...],
    types_not: tuple[str, ...],
    type_list: bool,
    symbol_types: tuple[HitKind, ...],
    paths: tuple[str, ...],
    workspace: bool,
    modified_after: float | None,
    modified_before: float | None,
    min_score: float | None,
    min_score_diff: float | None,
    preview: Preview | None,
    context_after: int | None,
    context_before: int | None,
    around: int | None,
    files_only: bool,
    count: bool,
    search_mode: SearchMode,
    refresh: Refresh | None,
    no_index: bool,
    yes: bool,
    root_dir: str | None,
    fmt: str | None,
    as_json: bool,
    as_jsonl: bool,
    as_md: bool,
    color: str,
    common: Common,
) -> None:
    """Search the workspace by meaning and keyword: QUERY words, then any PATHs to search (as rg;
    `--` makes every later word a query word). Exit 0 with hits, 1 without, 2 on error."""
    if type_list:
        from zgrep.filetypes import type_list as types_text  # 5 ms of imports, for --type-list only

        click.echo(types_text())
        return
    fmt = _one_format(fmt, as_json, as_jsonl, as_md, files_only, count)
    query, given = split_words(words, ctx.meta.get("zg.forced_words", 0), bool(extra))
    root, cfg = resolve(root_dir)
    cwd = Path.cwd().resolve()
    scoped = list(paths) + scope_paths(
        root, cwd, given, workspace or root_dir is not None or bool(paths)
    )
    args: Args = {
        "queries": ([" ".join(query)] if query else []) + list(extra),
        "limit": limit,
        "globs": list(globs),
        "iglobs": list(iglobs),
        "types": list(types),
        "types_not": list(types_not),
        "symbol_types": list(symbol_types),
        "paths": scoped,
        "min_score": min_score,
        "min_score_diff": min_score_diff,
        "preview": preview or ("full" if fmt == "markdown" else "short"),
        "context_before": context_before if context_before is not None else around or 0,
        "context_after": context_after if context_after is not None else around or 0,
        "search_mode": search_mode,
        "refresh": refresh,
        "no_index": no_index,
        "yes": yes,
        "modified_after": modified_after,
        "modified_before": modified_before,
        "config": common.config(),
    }
    answer, used = run(SEARCH, root, cfg, args, common.mode)
    result = cast(SearchResult, answer)
    shown = output.PathView(root, cwd)
    if fmt == "json":
        output.write_json(result, used)
    elif fmt == "jsonl":
        output.write_jsonl(result)
    elif fmt == "markdown":
        output.write_markdown(result, shown)
    elif fmt in ("files", "count"):
        output.write_files(result, shown, with_counts=fmt == "count")
    else:
        output.write_search(
            result,
            shown,
            color == "always"
            or (color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")),
        )
    sys.exit(0 if output.hit_count(result) else 1)


def _one_format(
    fmt: str | None, as_json: bool, as_jsonl: bool, as_md: bool, files_only: bool, count: bool
) -> str:
    """The one output format the flags ask for (text when none); two different ones exit 2."""
    asked = {
        name
        for name, on in (
            ("json", as_json),
            ("jsonl", as_jsonl),
            ("markdown", as_md),
            ("files", files_only),
            ("count", count),
        )
        if on
    }
    if fmt is not None:
        asked.add(fmt)
    if len(asked) > 1:
        flags = {
            "json": "--json",
            "jsonl": "--jsonl",
            "markdown": "--md",
            "files": "-l",
            "count": "-c",
        }
        fail(
            f"{' and '.join(sorted(flags[a] for a in asked))} cannot be combined: choose one output format"
        )
    return asked.pop() if asked else "text"
