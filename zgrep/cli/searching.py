"""`zg search` once its options are parsed (`zgrep.cli.flags.SEARCH`), click-free: the click command
(cli/search.py) and the fast path (cli/fast.py) both build the request and write the answer here.

Standard library, the output module and the operation table only; no pathlib or typing (the root and
the cwd are str paths)."""

from __future__ import annotations

import os
import sys

from zgrep.cli import output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from zgrep.cli.flags import Values
    from zgrep.contracts import Args, JSONObject, SearchResult, Setting

FORMAT_FLAGS = {  # an output format's own flag
    "json": ("as_json", "--json"),
    "jsonl": ("as_jsonl", "--jsonl"),
    "markdown": ("as_md", "--md"),
    "files": ("files_only", "-l"),
    "count": ("count", "-c"),
}


class OutsideWorkspace(ValueError):
    """A search path given on the command line is outside the workspace (the message says so)."""


def formats(values: Values) -> set[str]:
    """The output formats the flags ask for (--format and each format's own flag)."""
    asked = {name for name, (dest, _) in FORMAT_FLAGS.items() if values[dest]}
    if values["fmt"] is not None:
        asked.add(values["fmt"])
    return asked


def format_clash(asked: set[str]) -> str:
    """The one line refusing two output formats."""
    flags = " and ".join(sorted(FORMAT_FLAGS[a][1] for a in asked))
    return f"{flags} cannot be combined: choose one output format"


def split_words(
    words: tuple[str, ...] | list[str], forced: int, queries_given: bool
) -> tuple[list[str], list[str]]:
    """(query words, search paths): trailing words that name an existing path are paths as in rg,
    except the first word when no -e/-q gave a query, and the words after `--`."""
    free, tail = list(words[: len(words) - forced]), list(words[len(words) - forced :])
    paths: list[str] = []
    while len(free) > (0 if queries_given else 1) and os.path.lexists(free[-1]):
        paths.insert(0, free.pop())
    return free + tail, paths


def scope_paths(root: str, cwd: str, given: list[str], whole: bool) -> list[str]:
    """Search paths given on the command line (relative to the cwd) as workspace-relative ones; none
    given, the cwd when it is below the root (as rg and git grep), unless `whole` (--workspace,
    --root, --path). OutsideWorkspace for a path outside the root. `root` and `cwd`: real absolute
    paths."""
    scoped = []
    for raw in given:
        target = os.path.normpath(os.path.join(cwd, raw))
        if not output.inside(target, root):
            raise OutsideWorkspace(f"{raw} is outside the workspace {root}")
        scoped.append(output.relative(target, root))
    if not given and not whole and cwd != root and output.inside(cwd, root):
        scoped.append(output.relative(cwd, root))
    return scoped


def scoped(values: Values, root: str, cwd: str, given: list[str]) -> list[str]:
    """The search's workspace-relative paths: --path's, then the command line's (or the cwd);
    OutsideWorkspace as `scope_paths`."""
    paths = list(values["paths"])
    whole = bool(values["workspace"] or values["root_dir"] is not None or paths)
    return paths + scope_paths(root, cwd, given, whole)


def request(
    values: Values, query: list[str], paths: list[str], fmt: str, config: dict[str, Setting]
) -> Args:
    """The search op's arguments."""
    around = values["around"]
    before, after = values["context_before"], values["context_after"]
    args: Args = {
        "queries": ([" ".join(query)] if query else []) + list(values["extra"]),
        "limit": values["limit"],
        "globs": list(values["globs"]),
        "iglobs": list(values["iglobs"]),
        "types": list(values["types"]),
        "types_not": list(values["types_not"]),
        "symbol_types": list(values["symbol_types"]),
        "paths": paths,
        "min_score": values["min_score"],
        "min_score_diff": values["min_score_diff"],
        "preview": values["preview"] or ("full" if fmt == "markdown" else "short"),
        "context_before": before if before is not None else around or 0,
        "context_after": after if after is not None else around or 0,
        "search_mode": values["search_mode"],
        "refresh": values["refresh"],
        "no_index": values["no_index"],
        "yes": values["yes"],
        "modified_after": values["modified_after"],
        "modified_before": values["modified_before"],
        "config": config,
    }
    return args


def show(answer: JSONObject, used: str, fmt: str, root: str, cwd: str, color: str) -> int:
    """Write the answer in `fmt`; the exit code: 0 with hits, 1 without."""
    result: SearchResult = answer  # type: ignore[assignment]  # (the search op's result)
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
    return 0 if output.hit_count(result) else 1
