"""How a `zg` command ends early: a one-line failure, Ctrl-C, or a reader that went away (standard
library only, for the commands `zgrep.cli.fast` serves without click as for the click CLI)."""

from __future__ import annotations

import os
import sys

from zgrep.cli.output import echo

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see zgrep.service)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr, then exit with `code`."""
    echo(f"zg: {message}", err=True)
    sys.exit(code)


def interrupted() -> NoReturn:
    """Exit 130 after Ctrl-C, at once: a Milvus Lite server thread cut off mid-call can keep the
    interpreter from exiting, and every write made so far survives a kill (an index run resumes next
    time)."""
    import signal  # (its enums cost ~3.5M instructions of every `zg` call)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.stderr.isatty():
        echo(err=True)  # end the terminal's ^C echo
    echo("zg: interrupted", err=True)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(130)


def reader_gone() -> NoReturn:
    """stdout's reader went away (`zg ... | head`): exit 141 as grep does when SIGPIPE ends it,
    silently."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(141)


def shell_exits(command: Callable[[], object]) -> None:
    """Run `command` so that it ends as shells expect: Ctrl-C exits 130 (128 + SIGINT) and a closed
    stdout 141, not 1, which scripts would read as 'no hits'."""
    try:
        try:
            command()
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not as noise at exit
    except KeyboardInterrupt:
        interrupted()
    except BrokenPipeError:
        reader_gone()
