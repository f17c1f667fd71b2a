"""Every human and JSON output of `zg`: one place writes JSON and adds `mode`. Standard library
only: `echo` is click.echo whenever click is loaded, and its bytes without it (the commands
`zgrep.cli.fast` serves). No pathlib, re or typing at import (`zg server status` loads none of them):
`re` where a pattern is applied, the types for type checkers only."""

from __future__ import annotations

import os
import sys
import time

from zgrep import jsoncodec
from zgrep.qualname import qualify

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TextIO, TypedDict

    from zgrep.config import Config, Value
    from zgrep.contracts import (
        CallersResult,
        ImpactResult,
        IndexReport,
        SearchGroup,
        SearchHit,
        SearchResult,
        ServerStatus,
        TraceNode,
        TraceResult,
    )
    from zgrep.hooks.install import HooksStatus
    from zgrep.status import HooksSummary, WorkspaceStatus

    class ConfigEntry(TypedDict):
        value: Value
        source: str

# what click.echo strips from output that is no terminal (patterns, not compiled ones: `re` compiles
# each on first use, which most commands never reach: ~300k instructions each at import)
_ANSI = r"\033\[[0-?]*[ -/]*[@-~]"
_RESET, _MAGENTA, _GREEN, _DIM, _BOLD = "\033[0m", "\033[35m", "\033[32m", "\033[2m", "\033[1m"
_FENCE_TAGS = {"text": ""}  # zg's language names that are no fence info string
_LEADING = ("query", "root")  # a result's identity: `mode` follows it (README's JSON contract)


def echo(message: str = "", err: bool = False) -> None:
    """One line on stdout (stderr with `err`), flushed. Under the click CLI (click loaded) it is
    click.echo; without click, click.echo's bytes for text: ANSI codes stripped unless the stream is
    a terminal, and click itself for a stream that says it is ASCII (click re-encodes those)."""
    stream = sys.stderr if err else sys.stdout
    if "click" in sys.modules or stream is None or _ascii(stream):
        import click

        click.echo(message, err=err)
        return
    out = message + "\n"
    try:
        terminal = stream.isatty()
    except Exception:  # as click: a stream that cannot say is no terminal
        terminal = False
    if not terminal and "\033" in out:
        import re

        out = re.sub(_ANSI, "", out)
    stream.write(out)
    stream.flush()


def _ascii(stream: TextIO) -> bool:
    """Whether `stream` says it encodes ASCII (or says nothing): click calls that misconfigured."""
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii"
    except LookupError:
        return False


# --- JSON ------------------------------------------------------------------------------------------------


def with_mode(doc: Mapping[str, object], mode: str, *, lead: bool = True) -> dict[str, object]:
    """`doc` saying which mode answered: right after its query and root (a result), or last (a
    report)."""
    if not lead:
        return {**doc, "mode": mode}
    ordered = {key: doc[key] for key in _LEADING if key in doc}
    ordered["mode"] = mode
    ordered.update((key, value) for key, value in doc.items() if key not in ordered)
    return ordered


def write_json(
    doc: Any,
    mode: str | None = None,
    *,
    lead: bool = True,
    ascii_only: bool = False,
    indent: int | None = None,
) -> None:
    """One JSON document on stdout; with `mode` added as `with_mode` places it. `ascii_only` and
    `indent` keep each command's established bytes (reports escape non-ASCII; results and ADR
    documents do not)."""
    if mode is not None:
        doc = with_mode(doc, mode, lead=lead)
    echo(jsoncodec.dumps(doc, ensure_ascii=ascii_only, indent=indent))


# --- search ----------------------------------------------------------------------------------------------


def _paint(text: str, code: str, colour: bool) -> str:
    return f"{code}{text}{_RESET}" if colour else text


def _count(n: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _qualified(item: Mapping[str, object]) -> str:
    scope, symbol = item.get("scope"), item.get("symbol")
    return qualify(
        scope if isinstance(scope, str) else "", symbol if isinstance(symbol, str) else ""
    )


def inside(path: str, root: str) -> bool:
    """Whether the normalised absolute `path` is `root` or below it (Path.is_relative_to on str)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def relative(path: str, root: str) -> str:
    """`path`, inside `root` (both normalised absolute), relative to it: "." for the root itself."""
    return "." if path == root else path[len(root.rstrip("/")) + 1 :]


class PathView:
    """How human output names a workspace file: relative to the cwd when that is inside the
    workspace (as rg prints it), else relative to the root. JSON keeps the root-relative `path`
    beside `root`. `root` and `cwd`: real absolute paths."""

    def __init__(self, root: str, cwd: str) -> None:
        self.base = cwd if inside(cwd, root) else root
        self.root = root

    def __call__(self, path: str) -> str:
        return os.path.relpath(os.path.join(self.root, path), self.base)


def hit_header(hit: SearchHit, shown: PathView, colour: bool) -> str:
    """`path:start-end  symbol (kind)  score` like a grep match header."""
    loc = _paint(f"{shown(hit['path'])}:{hit['start_line']}-{hit['end_line']}", _MAGENTA, colour)
    name = _qualified(hit)
    label = f"  {_paint(name, _BOLD, colour)} ({hit.get('symbol_kind')})" if name else ""
    return f"{loc}{label}  {_paint(format(hit['score'], '.3f'), _DIM, colour)}"


def write_hits(out: TextIO, hits: list[SearchHit], shown: PathView, colour: bool) -> None:
    """Human output: a header per hit and its numbered preview lines (`N:` inside the hit, `N-` for
    context lines outside it, as rg marks them)."""
    for hit in hits:
        out.write(hit_header(hit, shown, colour) + "\n")
        if hit.get("preview"):
            first = hit.get("preview_start_line", hit["start_line"])
            for number, line in enumerate(hit["preview"].split("\n"), first):
                mark = ":" if hit["start_line"] <= number <= hit["end_line"] else "-"
                out.write(f"{_paint(str(number).rjust(5), _GREEN, colour)}{mark} {line}\n")
            out.write("\n")


def _groups(result: SearchResult) -> list[SearchGroup]:
    one: SearchGroup = {"query": result.get("query"), "hits": result.get("hits", [])}  # type: ignore[typeddict-item]  # (None: a result without its query)
    return result.get("groups") or [one]


def write_search(result: SearchResult, shown: PathView, colour: bool) -> None:
    """Human output for one query or grouped queries."""
    out = sys.stdout
    if "groups" in result:
        for group in result["groups"]:
            out.write(_paint(f"## {group['query']}", _BOLD, colour) + "\n")
            write_hits(out, group["hits"], shown, colour)
        out.write(f"{result['distinct_locations']} distinct locations\n")
    else:
        write_hits(out, result["hits"], shown, colour)


def write_files(result: SearchResult, shown: PathView, with_counts: bool) -> None:
    """`-l`: each file with hits once, best first; `-c`: with its number of hits (`path:N`, as rg
    -c)."""
    counts: dict[str, int] = {}
    for group in _groups(result):
        for hit in group["hits"]:
            counts[hit["path"]] = counts.get(hit["path"], 0) + 1
    for path, n in counts.items():
        echo(f"{shown(path)}:{n}" if with_counts else shown(path))


def write_markdown(result: SearchResult, shown: PathView) -> None:
    """`--format markdown`: per hit a `path:start-end symbol` heading and its preview fenced with
    its language, ready to paste into a prompt (a query heading above each group of several
    queries)."""
    several = "groups" in result
    for group in _groups(result):
        if several:
            echo(f"# {group['query']}\n")
        for hit in group["hits"]:
            name = _qualified(hit)
            echo(
                f"{'###' if several else '##'} {shown(hit['path'])}:{hit['start_line']}-{hit['end_line']}"
                + (f" {name}" if name else "")
                + "\n"
            )
            if hit.get("preview"):
                fence = "```"  # longer than any run of backticks in the preview (no `re`)
                while fence in hit["preview"]:
                    fence += "`"
                echo(
                    f"{fence}{_FENCE_TAGS.get(hit.get('language') or '', hit.get('language') or '')}\n"
                    f"{hit['preview']}\n{fence}\n"
                )


def write_jsonl(result: SearchResult) -> None:
    """One hit object per line, each carrying its query."""
    for group in _groups(result):
        for hit in group["hits"]:
            sys.stdout.write(
                jsoncodec.dumps({"query": group["query"], **hit}, ensure_ascii=False) + "\n"
            )


def hit_count(result: SearchResult) -> int:
    """Total hits over all groups."""
    if "groups" in result:
        return sum(len(g["hits"]) for g in result["groups"])
    return len(result.get("hits", []))


# --- index -----------------------------------------------------------------------------------------------


def write_index_report(report: IndexReport, dry_run: bool) -> None:
    """What a dry run would change, then the one-line summary (a repair is said on stderr)."""
    if report.get("repaired"):
        echo(
            f"zg: rebuilt the whole index: {report.get('repair_reason') or 'an interrupted run'}",
            err=True,
        )
    if dry_run:
        for rel in report.get("changed_paths", []):
            echo(f"index   {rel}")
        for rel in report.get("deleted_paths", []):
            echo(f"remove  {rel}")
    for warning in report.get("warnings", []):
        echo(f"zg: warning: {warning}", err=True)
    skipped = (
        ", ".join(f"{n} {reason}" for reason, n in sorted(report.get("skipped", {}).items()))
        or "none"
    )
    ignored = (
        ", ".join(f"{n} by {layer}" for layer, n in sorted(report.get("ignored", {}).items()))
        or "none"
    )
    verb = "would index" if dry_run else "indexed"
    echo(
        f"{verb} {report['changed']} changed files, removed {report['deleted']}, "
        f"{report['unchanged']} unchanged; skipped: {skipped}; ignored: {ignored}"
        + (
            ""
            if dry_run
            else f"; {report.get('chunks', 0)} chunks ({report.get('embedded', 0)} embedded) "
            f"in {report.get('took_s', 0)}s; {report.get('files', 0)} files in the index"
        )
    )


# --- read ------------------------------------------------------------------------------------------------


def write_numbered(lines: list[str], start: int, end: int) -> None:
    """Lines `start`..`end` (1-based, inclusive), each after its right-aligned number."""
    for number in range(start, end + 1):
        echo(f"{number:>6}: {lines[number - 1]}")


# --- relations -------------------------------------------------------------------------------------------


def _no_definition(name: str, source_file: str | None) -> None:
    echo(f"zg: no definition of {name}" + (f" in {source_file}" if source_file else ""), err=True)


# How an unresolved caller line says what it may be (the JSON keeps `via`).
_UNRESOLVED = {"unknown_receiver": "  (unresolved: a call on an object of unknown type; check it)"}


def write_callers(result: CallersResult, symbol: str, source_file: str | None) -> None:
    """The definitions found, then one line per caller."""
    if not result["definitions"]:
        _no_definition(symbol, source_file)
        return
    for d in result["definitions"]:
        echo(
            f"defined {d['path']}:{d['start_line']}-{d['end_line']}  {_qualified(d)} ({d['kind']})"
        )
    for c in result["callers"]:
        note = "" if c["resolved"] else _UNRESOLVED.get(c["via"], f"  (unresolved: {c['via']})")
        kinds = f"  [{', '.join(c['edges'])}]" if c.get("edges", ["call"]) != ["call"] else ""
        echo(f"{c['path']}:{c['line']}  {_qualified(c) or '<module>'}{kinds}{note}")


def trace_tops(result: TraceResult) -> list[TraceNode]:
    """The trees of a trace: one, one per definition of an ambiguous entry, or none."""
    tree = result["tree"]
    return [] if tree is None else tree["children"] if tree.get("ambiguous") else [tree]


def write_trace(result: TraceResult, entry: str, source_file: str | None, forward: bool) -> None:
    """Each call tree, one indented line per node."""
    if result["tree"] is None:
        _no_definition(entry, source_file)
    for top in trace_tops(result):
        _write_node(top, forward, 0)


def _write_node(node: TraceNode, forward: bool, level: int) -> None:
    """One line per node, indented by depth: callers at the referencing line, callees at their
    definition."""
    line = node["start_line"] if forward or not level else node["line"]
    marks = [
        m
        for m, on in (
            (node.get("edge", ""), node.get("edge", "call") != "call"),
            ("unresolved", node.get("resolved") is False),
            ("cycle", node.get("cycle")),
            ("expanded elsewhere", node.get("seen")),
            ("truncated", node.get("truncated")),
        )
        if on
    ]
    label = f"{node['path']}:{line}  {_qualified(node) or '<module>'}" + (
        f"  ({', '.join(marks)})" if marks else ""
    )
    echo(("   " * (level - 1) + ("-> " if forward else "<- ") if level else "") + label)
    for child in node["children"]:
        _write_node(child, forward, level + 1)


def write_impact(result: ImpactResult) -> None:
    """The changed definitions, then what reaches them by distance, then the tests to re-run."""
    for d in result["changed"]:
        echo(
            f"changed {d['path']}:{d['start_line']}-{d['end_line']}  {_qualified(d)} ({d['kind']})"
        )
    if result.get("skipped"):
        echo(
            f"skipped (no relations; run zg index if they are code): {', '.join(result['skipped'])}"
        )
    for title, entries, files in (
        ("impacted", result["impacted"], result["files"]),
        ("tests", result["tests"], result["test_files"]),
    ):
        echo(f"{title}: {_count(len(entries), 'definition')} in {_count(len(files), 'file')}")
        for e in entries:
            note = "" if e["resolved"] else "  (unresolved)"
            echo(
                f"  {e['distance']}  {e['path']}:{e['line']}  {_qualified(e) or '<module>'}  "
                f"[{e['edge']} -> {e['reaches']}]{note}"
            )
    if result.get("truncated"):
        echo(
            f"(truncated: more than {result['total']} definitions reach the change; lower --depth)"
        )


# --- status, doctor, config ------------------------------------------------------------------------------


def write_status(result: WorkspaceStatus) -> None:
    """The workspace status table (or the one line of a workspace not indexed yet)."""
    hooks = result["hooks"]
    if not result.get("indexed"):
        state = "hooks installed, not indexed" if hooks and hooks["installed"] else "not indexed"
        echo(f"{result['root']}: {state} (run: zg index)")
        return
    langs = ", ".join(f"{k} {v}" for k, v in list(result["languages"].items())[:8])
    rows = [
        ("root", result["root"]),
        ("files", result["files"]),
        ("chunks", result["chunks"]),
        ("languages", langs),
        ("model", f"{result['model']} ({result['dim']}-d)"),
        (
            "milvus",
            f"{result['milvus_uri']} ({result['milvus_engine']})"
            if result.get("milvus_engine")
            else result["milvus_uri"],
        ),
        ("last indexed", _when(result.get("last_indexed"))),
        ("freshness", _freshness(result)),
        ("mode", result["mode"]),
        (
            "daemon",
            f"running (pid {result['daemon']['pid']}, started by {result['daemon'].get('started_by') or 'command'})"
            if result["daemon"].get("running")
            else "not running",
        ),
        ("hooks", _hooks_line(hooks)),
    ]
    if result.get("problem"):
        rows.insert(1, ("PROBLEM", result["problem"]))
    code = result.get("code_files")
    if code and code["tracked"] >= 10 and code["indexed"] * 2 < code["tracked"]:
        rows.insert(
            1,
            (
                "WARNING",
                f"only {code['indexed']} of the {code['tracked']} code files git tracks are "
                "indexed; see what each ignore layer keeps out: zg index --dry-run --json",
            ),
        )
    for key, value in rows:
        echo(f"{key:>13}: {value}")


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "never"


def _freshness(result: WorkspaceStatus) -> str:
    if result.get("problem"):
        return "unknown (see PROBLEM)"
    if result.get("run_unfinished"):
        return "an index run is in progress or was interrupted (run: zg index)"
    if result.get("changed_files"):
        return f"{result['changed_files']} files differ from the index (run: zg index)"
    head = result.get("head_commit")
    if not head:
        return "up to date with the working tree"
    moved = (
        ""
        if result.get("indexed_commit") == head
        else "; HEAD moved since, no indexed file differs"
    )
    return f"up to date with the working tree at HEAD {head[:10]}{moved}"


def _hooks_line(hooks: HooksSummary | None) -> str:
    if hooks is None:
        return "not a git repository"
    state = "installed" if hooks["installed"] else "not installed (zg hooks install)"
    busy = ", indexing in the background" if hooks["worker_running"] else ""
    return f"{state}; {hooks['pending']} paths pending{busy}"


def write_checks(checks: list[Any]) -> None:
    """One line per doctor check; each failure with its fix."""
    for c in checks:
        mark = "ok  " if c.ok else "FAIL"
        echo(f"[{mark}] {c.name}: {c.detail}" + ("" if c.ok else f"\n       fix: {c.fix}"))


def _masked(value: Value) -> Value:
    """A setting's value with the credentials of any URI in it masked, as every other output masks
    them."""
    from zgrep.workspace import redact

    return redact(value) if isinstance(value, str) else value


def config_doc(cfg: Config) -> dict[str, ConfigEntry]:
    """`{key: {"value", "source"}}`: the merged configuration and where each value came from
    (credentials masked)."""
    return {
        key: {"value": _masked(value), "source": cfg.source(key)}
        for key, value in cfg.values.items()
    }


def write_config(cfg: Config) -> None:
    """`key = value    # source`, one setting a line (credentials masked)."""
    for key, value in cfg.values.items():
        echo(f"{key} = {jsoncodec.dumps(_masked(value))}    # {cfg.source(key)}")


# --- git hooks, daemon -----------------------------------------------------------------------------------


def write_hooks_status(st: HooksStatus, hook_names: tuple[str, ...]) -> None:
    """Each hook's state, then how fresh the index is and what waits to be indexed."""
    echo(f"hooks directory: {st['hooks_dir']}")
    for hook in hook_names:
        h = st["hooks"][hook]
        echo(f"  {hook}: {h['state']}" + (" (chaining an earlier hook)" if h["chained"] else ""))
    if st["pre_commit_framework"]:
        echo("pre-commit framework: zg-index configured in .pre-commit-config.yaml")
    if not st["indexed"]:
        echo(("hooks installed, " if st["installed"] else "") + "not indexed (run: zg index)")
        return
    head, done = st["head_commit"], st["indexed_commit"]
    fresh = "up to date with HEAD" if head and done == head else f"HEAD is {(head or '?')[:10]}"
    echo(f"last indexed commit: {(done or 'none')[:10]} ({fresh})")
    echo(
        f"pending paths: {st['pending']}"
        + (" (background indexer running)" if st["worker_running"] else "")
    )
    if st["last_worker_log"]:
        echo(f"last background pass: {st['last_worker_log']}")


def write_server_status(result: ServerStatus) -> None:
    """The running daemon's table and one line per workspace it holds."""
    rows = [
        ("pid", result["pid"]),
        ("endpoint", result["endpoint"]),
        ("version", result["version"]),
        ("uptime", f"{result['uptime_s']:.0f}s"),
        ("started by", result.get("started_by", "command")),
        ("models", ", ".join(result["models"]) or "none loaded"),
        ("jobs", f"{result['jobs_running']} running, {result['jobs_queued']} queued"),
        ("requests", result["requests_served"]),
        ("memory", f"{result['max_rss_mb']} MiB peak RSS"),
        ("workspaces", len(result["workspaces"])),
    ]
    for key, value in rows:
        echo(f"{key:>10}: {value}")
    for ws in result["workspaces"]:
        job = "indexing" if ws["job_running"] else "no index job"
        if ws.get("busy"):  # a job stuck past the daemon's patience: its searches are answered busy
            job = f"busy: its index job has reported no progress for {ws['job_silent_s']:.0f}s"
        echo(
            f"{'':>12}{ws['root']} ({job}, idle {ws['idle_s']:.0f}s, {'watching' if ws['watching'] else 'not watching'})"
        )
