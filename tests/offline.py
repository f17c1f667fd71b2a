"""Run Python in a fresh interpreter that cannot reach the network (sockets refuse to connect,
HF_HUB_OFFLINE=1): what a model loaded offline must survive."""

from __future__ import annotations

import os
import subprocess
import sys

_REFUSE_NETWORK = (
    "import socket, sys\n"
    "def refuse(*a, **k): raise OSError('network used')\n"
    "socket.socket.connect = refuse\n"
    "socket.create_connection = refuse\n"
)


def run_offline(body: str) -> list[str]:
    """The words `body` prints, run after the network is refused (`sys` is imported)."""
    return subprocess.run(
        [sys.executable, "-c", _REFUSE_NETWORK + body],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
