"""`zg adr`: decision records — new, update, list, show, for, constraints, search, anchor, import,
check."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

if TYPE_CHECKING:
    from zgrep.adr.report import CheckReport

from zgrep.adr.formats import FORMATS
from zgrep.adr.model import CHANGE_TYPES, FOREIGN_STATUSES, STATUSES, Adr, Anchor, parse_anchor_spec
from zgrep.adr.settings import AdrSettings, load_settings
from zgrep.adr.store import AdrSet
from zgrep.cli import output
from zgrep.vocab import MODES

EXIT_USAGE = 2


class AdrGroup(click.Group):
    """Turns unexpected failures into one line on stderr and exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # the CLI boundary: report, never trace back
            click.echo(f"zg adr: error: {exc}", err=True)
            ctx.exit(EXIT_USAGE)


def _fail(message: str) -> None:
    click.echo(f"zg adr: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _settings() -> AdrSettings:
    """The ADR settings; a warning when another conventional ADR directory exists beside the one
    read."""
    settings = load_settings()
    if settings.unread:
        click.echo(
            f"zg adr: warning: reading ADRs from {settings.dir} only; {' and '.join(settings.unread)} "
            f"also exist{'s' if len(settings.unread) == 1 else ''} (choose with adr.dir in .zgrep.toml)",
            err=True,
        )
    return settings


def _rel(root: Path, path: str) -> str:
    """A workspace-relative `/` path for a user-given path (relative to the cwd)."""
    full = (Path.cwd() / path).resolve()
    try:
        return full.relative_to(root).as_posix()
    except ValueError:
        _fail(f"{path} is outside the workspace {root}")
        raise


def _anchors(specs: tuple[str, ...]) -> list[Anchor]:
    from zgrep.adr.anchors import outside_repo

    out = []
    for spec in specs:
        try:
            anchor = parse_anchor_spec(spec)
        except ValueError as exc:
            _fail(str(exc))
        if outside_repo(anchor.path):
            _fail(f"anchor {spec!r} is outside the repository (use a repo-relative path)")
        out.append(anchor)
    return out


def _warn_unresolved(root: Path, anchors: list[Anchor]) -> None:
    """One stderr line per anchor that `zg adr check` would flag right now (same resolution)."""
    from zgrep.adr.anchors import resolve
    from zgrep.adr.trees import WorkTree

    tree = WorkTree(root)
    for anchor in anchors:
        res = resolve(anchor, tree)
        if res.code != "ok":
            click.echo(
                f"zg adr: warning: anchor {anchor.spec()}: {res.message} "
                "(written anyway; zg adr check flags it until it resolves)",
                err=True,
            )


def _load_work() -> tuple[AdrSettings, AdrSet]:
    from zgrep.adr.store import load
    from zgrep.adr.trees import WorkTree

    settings = _settings()
    return settings, load(WorkTree(settings.root), settings.dir)


def _get(adrs: AdrSet, adr_id: str) -> Adr:
    try:
        return adrs.get(adr_id)
    except (KeyError, ValueError) as exc:
        _fail(str(exc).strip("'\""))
        raise


def _dump(data: Any, mode: str | None = None) -> None:
    output.write_json(data, mode, indent=2)


@click.group(cls=AdrGroup, name="adr")
def adr() -> None:
    """Architecture decision records: find them, keep them true."""


@adr.command("new")
@click.argument("title")
@click.option(
    "--anchor",
    "anchors",
    multiple=True,
    metavar="PATH[:SYMBOL|:START-END]",
    help="Code the decision is about.",
)
@click.option(
    "--constraint", "constraints", multiple=True, metavar="TEXT", help="A one-line rule to keep."
)
@click.option(
    "--change-type", type=click.Choice(CHANGE_TYPES), default="architecture", show_default=True
)
@click.option("--status", type=click.Choice(STATUSES), default="proposed", show_default=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Record format (default: the one the ADR directory already uses, else zg).",
)
def new_cmd(
    title: str,
    anchors: tuple[str, ...],
    constraints: tuple[str, ...],
    change_type: str,
    status: str,
    fmt: str | None,
) -> None:
    """Write the next-numbered ADR from the template and print its path."""
    from zgrep.adr.records import render_new, slugify
    from zgrep.fsutil import atomic_write

    if not title.strip():
        _fail(
            'the title is empty: give the decision a short title, e.g. zg adr new "Use ZeroMQ for IPC"'
        )
    title = title.strip()
    parsed = _anchors(anchors)
    settings, adrs = _load_work()
    number = adrs.next_number()
    fmt = fmt or _usual_format(adrs)
    _, text = render_new(number, title, status, change_type, parsed, list(constraints), fmt)
    rel = f"{settings.dir}/{number:04d}-{slugify(title)}.md"
    atomic_write(settings.root / rel, text)
    _warn_unresolved(settings.root, parsed)
    click.echo(rel)


def _usual_format(adrs: AdrSet) -> str:
    """The format most records of the directory are written in (the newest record breaks a tie); zg
    if none."""
    records = sorted([*adrs.adrs, *adrs.unnamed], key=lambda a: a.path)
    counts = {r.format: sum(1 for o in records if o.format == r.format) for r in records}
    return max(reversed(records), key=lambda r: counts[r.format]).format if records else "zg"


def _refuse_cycle(adrs: AdrSet, record: Adr, successor: Adr) -> None:
    """Fail when `record` superseded by `successor` closes a supersession cycle (`zg adr check`
    would then block every commit); the same cycle test the check runs, on the records as they would
    be."""
    from dataclasses import replace

    from zgrep.adr.check import validate_records

    linked = replace(record, superseded_by=[*record.superseded_by, successor.id])
    after = replace(adrs, adrs=[linked if a is record else a for a in adrs.adrs])
    before = {p.message for p in validate_records(adrs) if p.code == "supersession_cycle"}
    for problem in validate_records(after):
        if problem.code == "supersession_cycle" and problem.message not in before:
            _fail(
                f"{successor.id} cannot supersede {record.id}: that would make a {problem.message}"
            )


@adr.command("update")
@click.argument("adr_id", metavar="ID")
@click.option("--status", type=click.Choice(STATUSES))
@click.option("--add-anchor", multiple=True, metavar="PATH[:SYMBOL|:START-END]")
@click.option("--remove-anchor", multiple=True, metavar="PATH[:SYMBOL|:START-END]")
@click.option("--superseded-by", metavar="ID", help="Mark superseded and link both ways.")
@click.option("--add-constraint", multiple=True, metavar="TEXT")
def update_cmd(
    adr_id: str,
    status: str | None,
    add_anchor: tuple[str, ...],
    remove_anchor: tuple[str, ...],
    superseded_by: str | None,
    add_constraint: tuple[str, ...],
) -> None:
    """Edit an ADR's zg fields in place (front matter, or the ```zg block of an adr-tools/MADR
    record); everything else stays byte for byte."""
    from zgrep.adr.edit import FrontMatter
    from zgrep.adr.records import anchor_matcher
    from zgrep.fsutil import atomic_write

    settings, adrs = _load_work()
    record = _get(adrs, adr_id)
    path = settings.root / record.path
    text = path.read_text(encoding="utf-8")
    if (status or superseded_by) and not text.startswith("---"):
        _fail(
            f"{record.id} keeps its status in its own text ({record.format} format): change it there by hand"
        )
    new_anchors = [a for a in _anchors(add_anchor) if a not in record.anchors]
    if remove_anchor or new_anchors or add_constraint:
        fm = FrontMatter.of_record(text, "code_anchors")
        for anchor in _anchors(remove_anchor):
            if not fm.remove_items("code_anchors", anchor_matcher(anchor)):
                _fail(f"{record.id} has no anchor matching {anchor.spec()}")
        if new_anchors:
            fm.add_items("code_anchors", [a.to_yaml() for a in new_anchors])
        if add_constraint:
            fm.add_items("constraints", [c for c in add_constraint if c not in record.constraints])
        text = fm.text()
    successor = None
    if superseded_by or status:
        fm = FrontMatter(text)
        if superseded_by:
            successor = _get(adrs, superseded_by)
            if successor.id == record.id:
                _fail(f"{record.id} cannot supersede itself")
            _refuse_cycle(adrs, record, successor)
            if successor.id not in record.superseded_by:
                fm.add_items("superseded_by", [successor.id], style="flow")
            status = status or "superseded"
        fm.set_scalar("status", status)
        text = fm.text()
    atomic_write(path, text)
    _warn_unresolved(settings.root, new_anchors)
    if successor is not None and record.id not in successor.supersedes:
        succ_path = settings.root / successor.path
        sfm = FrontMatter.of_record(succ_path.read_text(encoding="utf-8"), "supersedes")
        sfm.add_items("supersedes", [record.id], style="flow")
        atomic_write(succ_path, sfm.text())
        click.echo(successor.path)
    click.echo(record.path)


@adr.command("list")
@click.option("--status", type=click.Choice(FOREIGN_STATUSES))
@click.option("--change-type", type=click.Choice(CHANGE_TYPES))
@click.option("--json", "as_json", is_flag=True)
def list_cmd(status: str | None, change_type: str | None, as_json: bool) -> None:
    """List the ADRs (id, status, change type, title)."""
    _, adrs = _load_work()
    rows = [
        a
        for a in sorted(adrs.adrs, key=lambda a: a.id)
        if (not status or a.status == status) and (not change_type or a.change_type == change_type)
    ]
    for path, err in adrs.errors:
        click.echo(f"zg adr: warning: {path}:{err.line}: {err}", err=True)
    if as_json:
        _dump([a.to_json() for a in rows])
        return
    for a in rows:
        click.echo(f"{a.id}  {a.status:<10}  {a.change_type or '-':<12}  {a.title}")


@adr.command("show")
@click.argument("adr_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True)
def show_cmd(adr_id: str, as_json: bool) -> None:
    """Print one ADR."""
    settings, adrs = _load_work()
    record = _get(adrs, adr_id)
    if as_json:
        _dump({**record.to_json(), "body": record.body})
    else:
        click.echo((settings.root / record.path).read_text(encoding="utf-8"), nl=False)


@adr.command("for")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True)
def for_cmd(path: str, as_json: bool) -> None:
    """The live ADRs anchoring PATH, and which symbols and line ranges."""
    from zgrep.adr.check import governing

    settings, adrs = _load_work()
    found = governing(adrs, {_rel(settings.root, path)})
    if as_json:
        _dump([g.to_json() for g in found])
        return
    for g in found:
        syms = f"  symbols: {', '.join(g.symbols)}" if g.symbols else ""
        lines = f"  lines: {', '.join(g.lines)}" if g.lines else ""
        click.echo(f"{g.adr.id}  {g.adr.status:<9} {g.adr.title}  ({g.adr.path}){syms}{lines}")


@adr.command("constraints")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--for", "for_path", metavar="PATH", help="Only ADRs anchoring this file.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "markdown", "json")),
    default="text",
    show_default=True,
)
def constraints_cmd(ids: tuple[str, ...], for_path: str | None, fmt: str) -> None:
    """The active constraints (live ADRs), ready to paste into a prompt."""
    from zgrep.adr.check import governing

    settings, adrs = _load_work()
    chosen = (
        [_get(adrs, i) for i in ids]
        if ids
        else [a for a in sorted(adrs.adrs, key=lambda a: a.id) if a.live]
    )
    if for_path:
        allowed = {g.adr.id for g in governing(adrs, {_rel(settings.root, for_path)})}
        chosen = [a for a in chosen if a.id in allowed]
    chosen = [a for a in chosen if a.live and a.constraints]
    if fmt == "json":
        _dump(
            [
                {"id": a.id, "title": a.title, "status": a.status, "constraint": c}
                for a in chosen
                for c in a.constraints
            ]
        )
    elif fmt == "markdown":
        click.echo("## Constraints from decision records\n")
        for a in chosen:
            click.echo(f"### {a.id}: {a.title}" + (" (proposed)" if a.status == "proposed" else ""))
            click.echo("".join(f"- {c}\n" for c in a.constraints))
    else:
        for a in chosen:
            for c in a.constraints:
                click.echo(f"[{a.id}] {c}")


@adr.command("search")
@click.argument("query")
@click.option(
    "--status", type=click.Choice(FOREIGN_STATUSES), help="Keep only ADR hits with this status."
)
@click.option("--limit", default=10, show_default=True)
@click.option("--mode", type=click.Choice(MODES), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True)
def search_cmd(query: str, status: str | None, limit: int, mode: str, as_json: bool) -> None:
    """Search ADRs and spec/plan documents with the normal index; each hit says its kind."""
    from zgrep.adr.search import label_hits, search_args
    from zgrep.contracts import SearchResult
    from zgrep.server.client import ClientError, call
    from zgrep.service import SEARCH

    settings, adrs = _load_work()
    try:
        result, used = call(
            SEARCH.name, str(settings.root), search_args(settings, query, limit), mode
        )
    except ClientError as exc:
        click.echo(f"zg adr: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    found = cast(SearchResult, result)
    hits = label_hits(settings, adrs, found.get("hits", []), status)
    if as_json:
        _dump(
            {
                "query": query,
                "root": str(settings.root),
                "took_ms": found.get("took_ms"),
                "hits": hits,
            },
            used,
        )
    else:
        for h in hits:
            tag = (
                f"{h['id']} {h['status']}: {h['title']}"
                if h["doc_kind"] == "adr" and h.get("id")
                else h["doc_kind"]
            )
            click.echo(f"{h['path']}:{h['start_line']}-{h['end_line']}  [{tag}]")
            if h.get("preview"):
                click.echo(
                    "".join(f"    {ln}\n" for ln in str(h["preview"]).splitlines()), nl=False
                )
    sys.exit(0 if hits else 1)


@adr.command("anchor")
@click.argument("doc")
@click.option("--write", is_flag=True, help="Merge the proposal into DOC's front matter.")
@click.option("--json", "as_json", is_flag=True)
def anchor_cmd(doc: str, write: bool, as_json: bool) -> None:
    """Propose code_anchors for DOC from the paths and code identifiers it mentions."""
    from zgrep.adr.propose import propose
    from zgrep.adr.records import merge_anchors

    settings = _settings()
    rel = _rel(settings.root, doc)
    path = settings.root / rel
    if not path.is_file():
        _fail(f"no such document: {doc}")
    text = path.read_text(encoding="utf-8")
    found = propose(settings.root, rel, text, (settings.dir, *settings.doc_dirs))
    if as_json:
        _dump(
            {
                "doc": rel,
                "code_anchors": [a.to_yaml() for a in found.anchors],
                "ambiguous": found.ambiguous,
                "unknown": found.unknown,
            }
        )
    else:
        from zgrep.adr.edit import anchor_lines

        click.echo("".join(anchor_lines(found.anchors)), nl=False)
        for ident, n in found.ambiguous.items():
            click.echo(
                f"zg adr: note: `{ident}` is defined in {n} places; anchor it by hand", err=True
            )
        if found.unknown:
            click.echo(
                f"zg adr: note: no definition found for {', '.join(found.unknown)}", err=True
            )
    if write and found.anchors:
        added = merge_anchors(path, text, found.anchors)
        click.echo(f"zg adr: wrote {added} new anchor(s) to {rel}", err=True)


@adr.command("import")
@click.option("--dry-run", is_flag=True, help="Print the lines it would add; write nothing.")
def import_cmd(dry_run: bool) -> None:
    """Give existing records (adr-tools, MADR, zg) an id and proposed code_anchors, adding lines
    only."""
    from zgrep.adr.importer import apply, plan

    settings, adrs = _load_work()
    unreadable = sorted(
        {
            path
            for path, err in adrs.errors
            if err.severity == "error" and path not in {a.path for a in [*adrs.adrs, *adrs.unnamed]}
        }
    )
    for path in unreadable:
        click.echo(f"zg adr: warning: {path}: not imported (zg adr check says why)", err=True)
    todo = plan(settings, adrs)
    for item in todo:
        if dry_run:
            click.echo(f"{item.path}: would add {len(item.lines)} line(s) after line {item.at}:")
            click.echo("".join(f"    + {line}" for line in item.lines), nl=False)
        else:
            apply(settings, item)
            click.echo(f"{item.path}: {item.id}, {len(item.anchors)} anchor(s)")
        for ident, n in item.ambiguous.items():
            click.echo(
                f"zg adr: note: {item.path}: `{ident}` is defined in {n} places; anchor it by hand",
                err=True,
            )
    if not todo:
        click.echo("zg adr import: nothing to do: every record has zg's fields", err=True)
    sys.exit(1 if unreadable else 0)


@adr.command("check")
@click.argument("paths", nargs=-1)
@click.option(
    "--staged", is_flag=True, help="Check the staged tree (git index), not the working copy."
)
@click.option("--all", "check_all", is_flag=True, help="Check every ADR and anchor (the default).")
@click.option("--fix", is_flag=True, help="Repair renamed files and moved symbols/line ranges.")
@click.option(
    "--strict", is_flag=True, help="Also ask every record for zg's own fields (id, code_anchors)."
)
@click.option(
    "--suggest",
    is_flag=True,
    help="With --staged: also name live ADRs close to the change (advisory).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="auto",
    show_default=True,
    help="Where --suggest searches: the daemon, in-process, or the daemon when it runs.",
)
@click.option("--json", "as_json", is_flag=True)
def check_cmd(
    paths: tuple[str, ...],
    staged: bool,
    check_all: bool,
    fix: bool,
    strict: bool,
    suggest: bool,
    mode: str,
    as_json: bool,
) -> None:
    """Validate the ADRs and their code anchors; exit 0 clean, 1 violations, 2 error."""
    from zgrep.adr.report import run_check
    from zgrep.git import is_git_repo

    if sum((staged, check_all, bool(paths))) > 1:
        _fail("use only one of --staged, --all, PATH...")
    settings = _settings()
    if staged and not is_git_repo(settings.root):
        _fail("--staged needs a git repository")
    if suggest and not staged:
        _fail("--suggest needs --staged (it reads the staged change)")
    rels = [_rel(settings.root, p) for p in paths]
    for given, rel in zip(paths, rels):
        if not _known_path(settings.root, rel):
            _fail(f"no such file or ADR in the repository: {given}")
    report = run_check(settings, staged, rels or None, fix, strict, mode if suggest else None)
    if report.note:
        click.echo(f"zg adr: note: --suggest found nothing to search: {report.note}", err=True)
    if as_json:
        _dump(report.to_json())
        sys.exit(report.exit_code)
    _render_check(report)
    sys.exit(report.exit_code)


def _known_path(root: Path, rel: str) -> bool:
    """A path `check` can scope to: on disk, or known to git (staged or in HEAD, e.g. just deleted)."""
    from zgrep.git import is_git_repo, try_run

    if rel in ("", ".") or (root / rel).exists():
        return True
    if not is_git_repo(root):
        return False
    if (try_run(root, "ls-files", "--", rel) or b"").strip():
        return True
    return bool((try_run(root, "ls-tree", "--name-only", "HEAD", "--", rel) or b"").strip())


def _render_check(report: CheckReport) -> None:
    from zgrep.adr.report import render

    click.echo(render(report), nl=False)


if __name__ == "__main__":
    adr(prog_name="zg adr")
