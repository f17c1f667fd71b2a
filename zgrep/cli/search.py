"""`zg search`: hybrid search of the workspace. Exit 0 with hits, 1 without, 2 on error."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click

from zgrep.cli import searching
from zgrep.cli.flags import FORMATS, SEARCH
from zgrep.cli.main import Common, click_options, common_options, fail, resolve, run
from zgrep.cli.searching import split_words
from zgrep.service import SEARCH as SEARCH_OP

__all__ = ["FORMATS", "search", "split_words"]

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


@click.command(cls=SearchCommand)
@click.argument("words", nargs=-1)
@click_options(SEARCH)
@rg_flags_zg_lacks
@common_options
@click.pass_context
def search(ctx: click.Context, words: tuple[str, ...], common: Common, **values: Any) -> None:
    """Search the workspace by meaning and keyword: QUERY words, then any PATHs to search (as rg;
    `--` makes every later word a query word). Exit 0 with hits, 1 without, 2 on error."""
    if values["type_list"]:
        from zgrep.filetypes import type_list as types_text  # 5 ms of imports, for --type-list only

        click.echo(types_text())
        return
    asked = searching.formats(values)
    if len(asked) > 1:
        fail(searching.format_clash(asked))
    fmt = asked.pop() if asked else "text"
    query, given = split_words(words, ctx.meta.get("zg.forced_words", 0), bool(values["extra"]))
    root, cfg = resolve(values["root_dir"])
    cwd = os.path.realpath(os.getcwd())
    try:
        paths = searching.scoped(values, str(root), cwd, given)
    except searching.OutsideWorkspace as exc:
        fail(str(exc))
    args = searching.request(values, query, paths, fmt, common.config())
    answer, used = run(SEARCH_OP, root, cfg, args, common.mode)
    sys.exit(searching.show(answer, used, fmt, str(root), cwd, values["color"]))
