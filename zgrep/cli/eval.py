"""`zg eval ANNOTATIONS...`: score the current workspace against semble-format annotation files, or
against its own last N commits (`--from-history N`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import click

from zgrep.cli import output
from zgrep.cli.main import fail, resolve
from zgrep.dispatch import error_response
from zgrep.search.evaluate import (
    AnnotationError,
    evaluate_workspace,
    format_report,
    load_annotations,
)
from zgrep.search.history import HistoryError, evaluate_history, format_history
from zgrep.server.client import ClientError


@click.command("eval")
@click.argument("annotations", nargs=-1)
@click.option(
    "--from-history",
    "history",
    type=int,
    default=None,
    metavar="N",
    help="Score on the last N commits: each subject line as a query, the files it changed as the answer.",
)
@click.option("--json", "as_json", is_flag=True)
def eval_cmd(annotations: tuple[str, ...], history: int | None, as_json: bool) -> None:
    """Score retrieval on semble-format annotated query sets (see bench/semble.py) or on your own
    history."""
    if history is not None and (annotations or history < 1):
        fail("--from-history takes a number of commits (at least 1) and no annotation files")
    if history is None and not annotations:
        fail("give one or more annotation files (semble format), or --from-history N")
    root, cfg = resolve(None)
    try:
        if history is not None:
            past = evaluate_history(root, cfg, history, mode=cfg.mode)
            result: Mapping[str, object] = past
        else:
            queries = [q for p in annotations for q in load_annotations(Path(p))]
            now = evaluate_workspace(root, queries, mode=cfg.mode)
            result = now
    except (AnnotationError, HistoryError) as exc:
        fail(str(exc))
    except ClientError as exc:
        fail(str(exc), exc.exit_code)
    except Exception as exc:  # the engine's failures become its one-line messages
        fail(error_response(exc)["error"]["message"])
    if as_json:
        output.write_json({k: v for k, v in result.items() if k != "rows"}, ascii_only=True)
    elif history is not None:
        click.echo(format_history(past))
    else:
        click.echo(format_report({"workspace": now}))
