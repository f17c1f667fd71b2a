"""The `zg` command: parse arguments, build a request, hand it to the client, render.

Thin path: click, the client and the protocol; sub-groups (adr, hooks, server) load lazily.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn

import click

from zgrep import __version__
from zgrep.server.client import MODES, ClientError, call
from zgrep.config import Config, ConfigError
from zgrep.workspace import WorkspaceError, find_root

LAZY_GROUPS = {
    "adr": ("zgrep.cli.adr", "adr", "Architecture decision records: new, list, show, check, search, ..."),
    "hooks": ("zgrep.cli.hooks", "hooks", "Install, remove or inspect the git hooks that keep the index fresh."),
    "server": ("zgrep.cli.server", "server", "The resident daemon: on, off, status, run."),
    "trust": ("zgrep.cli.trust", "trust", "Let this workspace's .zgrep.toml pick remote endpoints and secrets."),
}


class LazyGroup(click.Group):
    """A group whose heavier sub-groups are imported only when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_GROUPS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_GROUPS:
            module, attr, _ = LAZY_GROUPS[name]
            try:
                command = getattr(importlib.import_module(module), attr)
            except ImportError as exc:
                raise click.ClickException(f"`zg {name}` is unavailable: {exc}") from None
        else:
            command = super().get_command(ctx, name)
        if command is not None:
            accept_mode_everywhere(command)
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's main, but a usage error is one `zg: ...` line naming the help to read, exit 2."""
        if kwargs.get("standalone_mode") is False:
            return super().main(*args, **kwargs)
        try:
            result = super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = f"; see {exc.ctx.command_path} -h" if exc.ctx else ""
            fail(exc.format_message().rstrip(".") + where)
        except click.ClickException as exc:
            fail(exc.format_message())
        except click.Abort:
            interrupted()
        sys.exit(result or 0)  # an int only when a command called ctx.exit(code)

    def invoke(self, ctx: click.Context) -> None:
        """Run the command (its return value is no exit code); Ctrl-C exits 130 (128 + SIGINT) as shells
        expect and a closed stdout 141, not click's 1, which scripts would read as 'no hits'."""
        try:
            try:
                super().invoke(ctx)
            finally:
                sys.stdout.flush()  # a closed pipe shows here, not as noise at exit
        except KeyboardInterrupt:
            interrupted()
        except BrokenPipeError:
            reader_gone()


def _export_mode(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        os.environ["ZG_MODE"] = value


def accept_mode_everywhere(command: click.Command) -> None:
    """Give every (sub)command a --mode option, so scripts may pass it to any command; where the
    command does not route through the client it only sets ZG_MODE for what it runs."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_mode_everywhere(sub)
    elif not any(p.name == "mode" for p in command.params):
        command.params.append(click.Option(["--mode"], type=click.Choice(MODES), default=None, expose_value=False,
                                           callback=_export_mode, help="auto, server or direct (ZG_MODE)."))


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr, then exit with `code`."""
    click.echo(f"zg: {message}", err=True)
    sys.exit(code)


def interrupted() -> NoReturn:
    """Exit 130 after Ctrl-C; a second Ctrl-C cannot cut this short (an index run resumes next time)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.stderr.isatty():
        click.echo(err=True)  # end the terminal's ^C echo
    fail("interrupted", 130)


def reader_gone() -> NoReturn:
    """stdout's reader went away (`zg ... | head`): exit 141 as grep does when SIGPIPE ends it, silently."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(141)


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--mode, --model, --milvus-uri on every workspace command."""
    fn = click.option("--milvus-uri", default=None, help="Milvus URI (default: Milvus Lite in .zgrep/). Env ZG_MILVUS_URI.")(fn)
    fn = click.option("--model", default=None, help="Embedding model: local, local:/dir, ollama:NAME, openai:NAME.")(fn)
    fn = click.option("--mode", type=click.Choice(MODES), default=None, help="auto (daemon if ready), server or direct.")(fn)
    return fn


def config_flags(model: str | None, milvus_uri: str | None) -> dict[str, Any]:
    """Config overrides from the common flags."""
    flags: dict[str, Any] = {}
    if milvus_uri:
        flags["milvus.uri"] = milvus_uri
    if model:
        provider, _, name = model.partition(":")
        if provider in ("local", "ollama", "openai"):
            flags["embedding.provider"] = provider
            flags["embedding.model"] = name
        else:
            flags["embedding.provider"] = "local"
            flags["embedding.model"] = model
    return flags


def resolve(path: str | None) -> tuple[Path, Config]:
    """Workspace root and its config, or exit 2 with the reason."""
    try:
        root = find_root(Path(path) if path else None, explicit=path is not None)
        cfg = Config.load(root)
    except (WorkspaceError, ConfigError) as exc:
        fail(str(exc))
    if cfg.notice:
        click.echo(f"zg: {cfg.notice}", err=True)
    return root, cfg


def run(op: str, root: Path, cfg: Config, args: dict[str, Any], mode: str | None) -> tuple[dict[str, Any], str]:
    """Send a request through the client; errors become one line and exit 2."""
    try:
        return call(op, str(root), args, mode or cfg["mode"], probe_ms=cfg["server.probe_timeout_ms"])
    except ClientError as exc:
        fail(str(exc), exc.exit_code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="zg")
@click.option("--mode", type=click.Choice(MODES), default=None, expose_value=False, callback=_export_mode,
              is_eager=True, help="auto, server or direct for the command that follows (ZG_MODE).")
def main() -> None:
    """Search a codebase by meaning and by keyword."""


@main.command()
@click.argument("path", required=False)
@click.option("--full", is_flag=True, help="Rebuild from scratch (cached vectors are reused).")
@click.option("--dry-run", is_flag=True, help="List what would change; write nothing.")
@click.option("--paths-from", type=click.File("r"), default=None, help="Index only the paths listed in this file ('-' = stdin).")
@click.option("--changed", "changed", default=None, metavar="A..B", help="Index only paths changed between two revisions.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@common_options
def index(path: str | None, full: bool, dry_run: bool, paths_from: Any, changed: str | None, as_json: bool,
          mode: str | None, model: str | None, milvus_uri: str | None) -> None:
    """Build or refresh the index of the workspace (git top level, or PATH)."""
    root, cfg = resolve(path)
    args: dict[str, Any] = {"full": full, "dry_run": dry_run, "config": config_flags(model, milvus_uri)}
    if paths_from is not None and changed:
        fail("--paths-from and --changed cannot be combined")
    if full and (paths_from is not None or changed):
        fail("--full rebuilds everything; it cannot be combined with --paths-from or --changed")
    if paths_from is not None:
        args["paths"] = [line.rstrip("\n") for line in paths_from if line.strip()]
    elif changed:
        from zgrep.git import GitError, range_paths

        check_range(changed)

        try:
            args["paths"] = range_paths(root, changed)
        except GitError as exc:
            fail(f"--changed {changed}: {exc}")
    report, used = run("index", root, cfg, args, mode)
    if as_json:
        click.echo(json.dumps({**report, "mode": used}))
        return
    if dry_run:
        for rel in report.get("changed_paths", []):
            click.echo(f"index   {rel}")
        for rel in report.get("deleted_paths", []):
            click.echo(f"remove  {rel}")
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report.get("skipped", {}).items())) or "none"
    verb = "would index" if dry_run else "indexed"
    click.echo(f"{verb} {report['changed']} changed files, removed {report['deleted']}, "
               f"{report['unchanged']} unchanged; skipped: {skipped}" +
               ("" if dry_run else f"; {report.get('chunks', 0)} chunks ({report.get('embedded', 0)} embedded) "
                                   f"in {report.get('took_s', 0)}s; {report.get('files', 0)} files in the index"))


def check_range(spec: str) -> None:
    """--changed takes A..B, A.., A...B or A...; a bare revision (A..A, nothing) or a missing A (everything)
    is refused."""
    left = spec.partition("...")[0] if "..." in spec else spec.partition("..")[0]
    if ".." not in spec or not left.strip():
        fail(f"--changed {spec}: give a revision range A..B, e.g. --changed HEAD~1..HEAD")


@main.command()
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
    from zgrep.cli import output as render

    if type_list:
        from zgrep.filetypes import type_list as types_text

        click.echo(types_text())
        return
    queries = ([" ".join(query)] if query else []) + list(extra)
    if not queries or any(not q.strip() for q in queries):
        fail('empty query: give search text, e.g. zg search "retry with backoff"')
    if as_json and as_jsonl:
        fail("--json and --jsonl cannot be combined")
    if modified_after is not None and modified_before is not None and modified_after >= modified_before:
        fail("--modified-after must be earlier than --modified-before (no file can match both)")
    root, cfg = resolve(root_dir)
    args = {
        "queries": queries, "limit": limit, "globs": list(globs), "iglobs": list(iglobs), "types": list(types),
        "types_not": list(types_not), "symbol_types": list(symbol_types), "paths": list(paths),
        "min_score": min_score, "min_score_diff": min_score_diff, "preview": preview, "search_mode": search_mode,
        "refresh": refresh, "no_index": no_index, "modified_after": modified_after,
        "modified_before": modified_before, "config": config_flags(model, milvus_uri),
    }
    result, used = run("search", root, cfg, args, mode)
    if as_json:
        render.write_json(sys.stdout, result, used)
    elif as_jsonl:
        render.write_jsonl(sys.stdout, result)
    else:
        colour = color == "always" or (color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
        render.write_human(sys.stdout, result, colour)
    sys.exit(0 if render.hit_count(result) else 1)


@main.command()
@click.argument("symbol")
@click.option("--source-file", default=None, help="Only the definition in this workspace-relative file.")
@click.option("-n", "--limit", type=int, default=None, help="At most this many callers.")
@click.option("--root", "root_dir", default=None, help="Workspace root (default: the git top level of the cwd).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@common_options
def callers(symbol: str, source_file: str | None, limit: int | None, root_dir: str | None, as_json: bool,
            mode: str | None, model: str | None, milvus_uri: str | None) -> None:
    """Definitions that reference SYMBOL (name, Scope.name or PATH:name). Exit 0 found, 1 none, 2 error."""
    root, cfg = resolve(root_dir)
    args = {"symbol": symbol, "source_file": source_file, "limit": limit, "config": config_flags(model, milvus_uri)}
    result, used = run("callers", root, cfg, args, mode)
    if as_json:
        click.echo(json.dumps({"root": result["root"], "mode": used, **result}, ensure_ascii=False))
    elif not result["definitions"]:
        click.echo(f"zg: no definition of {symbol}" + (f" in {source_file}" if source_file else ""), err=True)
    else:
        for d in result["definitions"]:
            click.echo(f"defined {d['path']}:{d['start_line']}-{d['end_line']}  {_qualified(d)} ({d['kind']})")
        for c in result["callers"]:
            note = "" if c["resolved"] else f"  (unresolved: {c['via']})"
            click.echo(f"{c['path']}:{c['line']}  {_qualified(c) or '<module>'}{note}")
    sys.exit(0 if result["callers"] else 1)


@main.command()
@click.argument("entry")
@click.option("--direction", type=click.Choice(["backward", "forward"]), default="backward", show_default=True,
              help="backward: who calls ENTRY; forward: what ENTRY calls.")
@click.option("--depth", type=click.IntRange(1, 10), default=3, show_default=True, help="Levels to follow.")
@click.option("--source-file", default=None, help="Only the definition in this workspace-relative file.")
@click.option("--root", "root_dir", default=None, help="Workspace root (default: the git top level of the cwd).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@common_options
def trace(entry: str, direction: str, depth: int, source_file: str | None, root_dir: str | None, as_json: bool,
          mode: str | None, model: str | None, milvus_uri: str | None) -> None:
    """Call tree from ENTRY (name, Scope.name or PATH:name). Exit 0 with edges, 1 without, 2 on error."""
    root, cfg = resolve(root_dir)
    args = {"entry": entry, "direction": direction, "depth": depth, "source_file": source_file,
            "config": config_flags(model, milvus_uri)}
    result, used = run("trace", root, cfg, args, mode)
    tree = result["tree"]
    tops = [] if tree is None else tree["children"] if tree.get("ambiguous") else [tree]
    if as_json:
        click.echo(json.dumps({"root": result["root"], "mode": used, **result}, ensure_ascii=False))
    elif tree is None:
        click.echo(f"zg: no definition of {entry}" + (f" in {source_file}" if source_file else ""), err=True)
    for top in [] if as_json else tops:
        _echo_tree(top, direction == "forward", 0)
    sys.exit(0 if any(top["children"] for top in tops) else 1)


def _qualified(item: dict[str, Any]) -> str:
    return ".".join(p for p in (item.get("scope"), item.get("symbol")) if p)


def _echo_tree(node: dict[str, Any], forward: bool, level: int) -> None:
    """One line per node, indented by depth: callers at the referencing line, callees at their definition."""
    line = node["start_line"] if forward or not level else node["line"]
    marks = [m for m, on in (("unresolved", node.get("resolved") is False), ("cycle", node.get("cycle")),
                             ("expanded elsewhere", node.get("seen")), ("truncated", node.get("truncated"))) if on]
    label = f"{node['path']}:{line}  {_qualified(node) or '<module>'}" + (f"  ({', '.join(marks)})" if marks else "")
    click.echo(("   " * (level - 1) + ("-> " if forward else "<- ") if level else "") + label)
    for child in node["children"]:
        _echo_tree(child, forward, level + 1)


@main.command()
@click.argument("path", required=False)
@click.option("--root", "root_dir", default=None, help="Workspace root (same as PATH).")
@click.option("--json", "as_json", is_flag=True)
@common_options
def status(path: str | None, root_dir: str | None, as_json: bool, mode: str | None, model: str | None,
           milvus_uri: str | None) -> None:
    """Show what is indexed, with which model, where, and how fresh."""
    root, cfg = resolve(path or root_dir)
    result, used = run("status", root, cfg, {"config": config_flags(model, milvus_uri)}, mode)
    result["mode"] = used
    from zgrep.server.client import daemon_state
    from zgrep.hooks.install import hooks_status
    from zgrep.git import git_toplevel

    result["daemon"] = daemon_state()
    hooks = hooks_status(root) if git_toplevel(root) else None
    result["hooks"] = {"installed": hooks["installed"], "pending": hooks["pending"],
                       "worker_running": hooks["worker_running"]} if hooks else None
    if as_json:
        click.echo(json.dumps(result))
        sys.exit(1 if result.get("problem") else 0)
    if not result.get("indexed"):
        state = "hooks installed, not indexed" if hooks and hooks["installed"] else "not indexed"
        click.echo(f"{result['root']}: {state} (run: zg index)")
        return
    langs = ", ".join(f"{k} {v}" for k, v in list(result["languages"].items())[:8])
    rows = [
        ("root", result["root"]), ("files", result["files"]), ("chunks", result["chunks"]), ("languages", langs),
        ("model", f"{result['model']} ({result['dim']}-d)"), ("milvus", result["milvus_uri"]),
        ("last indexed", _when(result.get("last_indexed"))),
        ("freshness", _freshness(result)),
        ("mode", used),
        ("daemon", f"running (pid {result['daemon']['pid']})" if result["daemon"].get("running") else "not running"),
        ("hooks", _hooks_line(hooks)),
    ]
    if result.get("problem"):
        rows.insert(1, ("PROBLEM", result["problem"]))
    for key, value in rows:
        click.echo(f"{key:>13}: {value}")
    if result.get("problem"):
        sys.exit(1)


def _freshness(result: dict[str, Any]) -> str:
    if result.get("problem"):
        return "unknown (see PROBLEM)"
    if result.get("run_unfinished"):
        return "an index run is in progress or was interrupted (run: zg index)"
    if result.get("changed_files"):
        return f"{result['changed_files']} files differ from the index (run: zg index)"
    head = result.get("head_commit")
    if not head:
        return "up to date with the working tree"
    moved = "" if result.get("indexed_commit") == head else "; HEAD moved since, no indexed file differs"
    return f"up to date with the working tree at HEAD {head[:10]}{moved}"


def _hooks_line(hooks: dict[str, Any] | None) -> str:
    if hooks is None:
        return "not a git repository"
    state = "installed" if hooks["installed"] else "not installed (zg hooks install)"
    busy = ", indexing in the background" if hooks["worker_running"] else ""
    return f"{state}; {hooks['pending']} paths pending{busy}"


def parse_span(span: str) -> tuple[int, int | None]:
    """`""` → whole file; `12` → line 12; `12-` → to the end; `12-20` → inclusive range."""
    if not span:
        return 1, None
    start_s, dash, end_s = span.partition("-")
    start = int(start_s)
    if not dash:
        return start, start
    return start, int(end_s) if end_s else None


def _when(ts: float | None) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "never"


@main.command()
@click.argument("location")
@click.option("--root", "root_dir", default=None)
def read(location: str, root_dir: str | None) -> None:
    """Print a slice of a file: PATH[:START[-END]] (confined to the workspace)."""
    root, _ = resolve(root_dir)
    rel, _, span = location.partition(":")
    target = Path(os.path.normpath(root / rel))
    real = Path(os.path.realpath(target))
    if not (target.is_relative_to(root) and real.is_relative_to(Path(os.path.realpath(root)))):
        fail(f"refusing a path outside the workspace {root}: {rel}")
    try:
        start, end = parse_span(span)
    except ValueError:
        fail(f"bad line range {span!r}; use PATH:START-END")
    from zgrep.index.discovery import looks_binary

    try:
        data = real.read_bytes()
    except OSError as exc:
        fail(f"cannot read {rel}: {exc.strerror}")
    if looks_binary(data):
        fail(f"refusing to print {rel}: it is a binary file (the index skips it too)")
    lines = data.decode("utf-8-sig", errors="replace").splitlines()
    end = len(lines) if end is None else min(end, len(lines))
    if start < 1 or start > max(end, 1):
        fail(f"line range {span} is outside {rel} ({len(lines)} lines)")
    for number in range(start, end + 1):
        click.echo(f"{number:>6}: {lines[number - 1]}")


@main.group()
def config() -> None:
    """Inspect configuration."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True)
@click.option("--root", "root_dir", default=None)
@common_options
def config_show(as_json: bool, root_dir: str | None, mode: str | None, model: str | None,
                milvus_uri: str | None) -> None:
    """Print the merged configuration and where each value came from (flags included)."""
    root, _ = resolve(root_dir)
    try:
        cfg = Config.load(root, {**config_flags(model, milvus_uri), "mode": mode})
    except ConfigError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps({k: {"value": v, "source": cfg.source(k)} for k, v in cfg.values.items()}))
        return
    for key, value in cfg.values.items():
        click.echo(f"{key} = {json.dumps(value)}    # {cfg.source(key)}")


@main.command()
@click.option("--root", "root_dir", default=None)
@click.option("--json", "as_json", is_flag=True)
def doctor(root_dir: str | None, as_json: bool) -> None:
    """Check Milvus, the model, grammars, daemon and hooks; print the fix for each failure."""
    from zgrep.doctor import run_checks

    root, cfg = resolve(root_dir)
    checks = run_checks(root, cfg)
    if as_json:
        click.echo(json.dumps([c.__dict__ for c in checks]))
    else:
        for c in checks:
            mark = "ok  " if c.ok else "FAIL"
            click.echo(f"[{mark}] {c.name}: {c.detail}" + ("" if c.ok else f"\n       fix: {c.fix}"))
    sys.exit(0 if all(c.ok for c in checks) else 1)


@main.command("eval")
@click.argument("annotations", nargs=-1)
@click.option("--json", "as_json", is_flag=True)
def eval_cmd(annotations: tuple[str, ...], as_json: bool) -> None:
    """Score retrieval on semble-format annotated query sets (see bench/semble.py)."""
    from zgrep.search.evaluate import main as eval_main

    sys.exit(eval_main(list(annotations), as_json))


if __name__ == "__main__":
    main()
