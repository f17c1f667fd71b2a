"""`zg search`: hybrid search of the workspace. Exit 0 with hits, 1 without, 2 on error."""

from __future__ import annotations

import os
import sys

import click

from zgrep.cli import output
from zgrep.cli.main import common_options, config_flags, fail, resolve, run
from zgrep.filetypes import type_list as types_text
from zgrep.service import SEARCH


@click.command()
@click.argument("query", nargs=-1)
@click.option("-q", "--query", "extra", multiple=True, help="A query (repeat for several; results are grouped).")
@click.option("-n", "--limit", type=int, default=None, help="Hits per query (default 10).")
@click.option("-g", "--glob", "globs", multiple=True, help="Include paths matching GLOB; '!GLOB' excludes.")
@click.option("--iglob", "iglobs", multiple=True, help="Like --glob, case-insensitive.")
@click.option("-t", "--type", "types", multiple=True, help="Only files of this type (ripgrep names: py, js, ts, go, ...).")
@click.option("-T", "--type-not", "types_not", multiple=True, help="Exclude files of this type.")
@click.option("--type-list", is_flag=True, help="Show the known file types and exit.")
@click.option("--symbol-type", "symbol_types", multiple=True,
              type=click.Choice(["module", "class", "interface", "function", "value", "alias"]), help="Only chunks of this kind.")
@click.option("--path", "paths", multiple=True, help="Only under this workspace-relative directory or file.")
@click.option("--modified-after", type=float, default=None, help="Only files modified after this epoch time.")
@click.option("--modified-before", type=float, default=None, help="Only files modified before this epoch time.")
@click.option("--min-score", type=float, default=None, help="Drop hits scoring below this (0-1).")
@click.option("--min-score-diff", type=float, default=None, help="Drop hits more than this below the best hit.")
@click.option("--preview", type=click.Choice(["none", "short", "full"]), default="short", show_default=True)
@click.option("--mode-search", "search_mode", type=click.Choice(["hybrid", "semantic", "lexical"]), default="hybrid",
              show_default=True, help="Which routes to run.")
@click.option("--refresh", type=click.Choice(["wait", "off", "background"]), default=None,
              help="Update the index first (wait), not at all (off), or after answering (background; daemon only).")
@click.option("--no-index", is_flag=True, help="Never build a missing index; fail instead.")
@click.option("--root", "root_dir", default=None, help="Workspace root (default: the git top level of the cwd).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON hit per line.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto")
@common_options
def search(query: tuple[str, ...], extra: tuple[str, ...], limit: int | None, globs: tuple[str, ...],
           iglobs: tuple[str, ...], types: tuple[str, ...], types_not: tuple[str, ...], type_list: bool,
           symbol_types: tuple[str, ...], paths: tuple[str, ...], modified_after: float | None,
           modified_before: float | None, min_score: float | None, min_score_diff: float | None, preview: str,
           search_mode: str, refresh: str | None, no_index: bool, root_dir: str | None, as_json: bool,
           as_jsonl: bool, color: str, mode: str | None, model: str | None, milvus_uri: str | None) -> None:
    """Search the workspace by meaning and keyword. Exit 0 with hits, 1 without, 2 on error."""
    if type_list:
        click.echo(types_text())
        return
    if as_json and as_jsonl:
        fail("--json and --jsonl cannot be combined")
    root, cfg = resolve(root_dir)
    args = {
        "queries": ([" ".join(query)] if query else []) + list(extra), "limit": limit, "globs": list(globs),
        "iglobs": list(iglobs), "types": list(types), "types_not": list(types_not), "symbol_types": list(symbol_types),
        "paths": list(paths), "min_score": min_score, "min_score_diff": min_score_diff, "preview": preview,
        "search_mode": search_mode, "refresh": refresh, "no_index": no_index, "modified_after": modified_after,
        "modified_before": modified_before, "config": config_flags(model, milvus_uri),
    }
    result, used = run(SEARCH, root, cfg, args, mode)
    if as_json:
        output.write_json(result, used)
    elif as_jsonl:
        output.write_jsonl(result)
    else:
        output.write_search(result, color == "always" or (color == "auto" and sys.stdout.isatty()
                                                          and not os.environ.get("NO_COLOR")))
    sys.exit(0 if output.hit_count(result) else 1)
