"""Two ways to run `zg` with the same answer (a CompletedProcess, text stdout and stderr):

- `in_process`: the `zg` script's entry point (`zgrep.cli.fast.main`) called in this process, with the
  environment, working directory, argv and standard streams a subprocess would have had. It saves
  the interpreter's start and the imports (pymilvus alone ~0.9 s) of every call; what a test that
  only reads output and exit codes needs.
- `binary`: the installed `zg` as a subprocess; for what only the real binary shows (its exit under a
  signal, pipes, daemons and the processes it leaves). Tests that need it are marked `e2e`.

An in-process call leaves nothing behind: the environment, cwd, argv, __main__, streams and SIGINT
handler are restored, and a child process it started (a native Milvus engine) must be gone when it returns.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import traceback
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ZG = str(Path(sys.executable).with_name("zg"))
CHILD_EXIT_WAIT_S = 10.0


def binary(
    *args: str,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `zg` with exactly `env` (default: this process's environment)."""
    return subprocess.run(
        [ZG, *args],
        cwd=cwd,
        env=env if env is not None else dict(os.environ),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def in_process(
    *args: str,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `zg ARGS` in this process with exactly `env` (default: this process's environment), stdin
    `input` (default: empty) and captured stdout/stderr, decoded as subprocess.run(text=True) does.
    `timeout` is accepted for the same signature as `binary` and not enforced."""
    from zgrep.cli.fast import (
        main,
    )  # pyproject's [project.scripts] zg: it reads sys.argv, set below

    out, err = io.BytesIO(), io.BytesIO()
    children = _children()
    with _sandbox(env, cwd, [ZG, *args], input or "", out, err):
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except Exception:  # what the interpreter does with an uncaught exception
            traceback.print_exc()
            code = 1
    _wait_children_gone(children, args)
    return subprocess.CompletedProcess(
        [ZG, *args], code, _text(out.getvalue()), _text(err.getvalue())
    )


class _Exit(SystemExit):
    """os._exit(code) inside an in-process call (zg's exit after Ctrl-C): this process must live on."""


def _os_exit(code: int) -> None:
    raise _Exit(code)


@contextmanager
def _sandbox(
    env: dict[str, str] | None,
    cwd: Path | str | None,
    argv: list[str],
    stdin: str,
    out: io.BytesIO,
    err: io.BytesIO,
) -> Iterator[None]:
    saved_env, saved_cwd, saved_argv, saved_main = (
        dict(os.environ),
        os.getcwd(),
        sys.argv,
        sys.modules["__main__"],
    )
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_sigint, saved_exit = signal.getsignal(signal.SIGINT), os._exit
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    sys.argv = argv
    script = types.ModuleType(
        "__main__"
    )  # the zg script, not pytest: click names the program after it
    script.__file__ = argv[0]
    sys.modules["__main__"] = script
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(
        err, encoding="utf-8", errors="backslashreplace", write_through=True
    )
    os._exit = _os_exit  # type: ignore[assignment]
    try:
        yield
    finally:
        for stream in (sys.stdin, sys.stdout, sys.stderr):
            try:
                stream.flush()
                stream.detach()  # keeps its buffer open for the caller when the wrapper goes
            except ValueError:  # closed or detached by the command
                pass
        os._exit = saved_exit
        signal.signal(signal.SIGINT, saved_sigint)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        sys.modules["__main__"] = saved_main
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _exit_status(code: object) -> int:
    """The exit status of SystemExit(code), as the interpreter reports it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _text(data: bytes) -> str:
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _children() -> set[int]:
    """This process's live (not zombie) child processes."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != b"Z":
            found.add(int(entry))
    return found


def _wait_children_gone(before: set[int], args: tuple[str, ...]) -> None:
    """Fail when the call left a child process (an engine not closed) running after a short wait."""
    deadline = time.monotonic() + CHILD_EXIT_WAIT_S
    while left := _children() - before:
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"in-process `zg {' '.join(args)}` left child processes {sorted(left)}"
            )
        time.sleep(0.02)
