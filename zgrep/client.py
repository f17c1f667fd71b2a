"""Route a request to the daemon or run it in-process (--mode auto|server|direct).

Thin path: imports only the standard library and the protocol module at import time.
"""

from __future__ import annotations

from typing import Any

from zgrep import protocol

MODES = ("auto", "server", "direct")


class ClientError(RuntimeError):
    """A request failed; `exit_code` is what the CLI should exit with."""

    def __init__(self, message: str, exit_code: int = 2, code: str = "error") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.code = code


def call_direct(op: str, root: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run `op` in this process with the same Engine the daemon uses."""
    from zgrep.engine import run_direct

    response = run_direct(protocol.make_request(op, root, args))
    if not response["ok"]:
        err = response["error"]
        raise ClientError(err["message"], code=err["code"])
    return response["result"]


def call(op: str, root: str, args: dict[str, Any], mode: str = "auto") -> tuple[dict[str, Any], str]:
    """Run `op` for workspace `root`; return (result, mode actually used)."""
    if mode == "server":
        raise ClientError("no zgrep daemon is running; start one with: zg server on", exit_code=2, code="no_daemon")
    return call_direct(op, root, args), "direct"
