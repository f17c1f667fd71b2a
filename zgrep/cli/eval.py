"""`zg eval ANNOTATIONS...`: score the current workspace against semble-format annotation files."""

from __future__ import annotations

from pathlib import Path

import click

from zgrep.cli import output
from zgrep.cli.main import fail, resolve
from zgrep.dispatch import error_response
from zgrep.search.evaluate import AnnotationError, evaluate_workspace, format_report, load_annotations
from zgrep.server.client import ClientError


@click.command("eval")
@click.argument("annotations", nargs=-1)
@click.option("--json", "as_json", is_flag=True)
def eval_cmd(annotations: tuple[str, ...], as_json: bool) -> None:
    """Score retrieval on semble-format annotated query sets (see bench/semble.py)."""
    if not annotations:
        fail("give one or more annotation files (semble format)")
    root, cfg = resolve(None)
    try:
        queries = [q for p in annotations for q in load_annotations(Path(p))]
    except AnnotationError as exc:
        fail(str(exc))
    try:
        result = evaluate_workspace(root, queries, mode=cfg["mode"])
    except ClientError as exc:
        fail(str(exc), exc.exit_code)
    except Exception as exc:  # the engine's failures become its one-line messages
        fail(error_response(exc)["error"]["message"])
    if as_json:
        output.write_json({k: v for k, v in result.items() if k != "rows"}, ascii_only=True)
    else:
        click.echo(format_report({"workspace": result}))
