"""Shared helpers for the ADR tests: a real git repository in a temp dir, and the real `zg` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import zgrun

BIN = Path(sys.executable).parent
ZG = str(BIN / "zg")


def adr_text(
    adr_id: str,
    *,
    status: str = "accepted",
    anchors: str = "",
    extra: str = "",
    title: str = "A decision",
) -> str:
    """A small ADR document; `anchors` are `code_anchors` item lines."""
    anchor_block = "code_anchors:\n" + anchors if anchors else "code_anchors: []\n"
    return (
        f"---\nid: {adr_id}\ntitle: {title}\nstatus: {status}\ndate: 2024-05-01\n"
        f"change_type: api\n{anchor_block}constraints:\n  - Keep the rule of {adr_id}\n{extra}---\n\n"
        f"# {adr_id}: {title}\n\n## Context\n\nBecause.\n"
    )


class Repo:
    """A throw-away git repository driven through real git and `zg` (in this process; its hooks run the real one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        }
        self.git("init", "-q", "-b", "main")
        self.git("config", "commit.gpgsign", "false")

    def write(self, rel: str, text: str | bytes) -> Path:
        """Write a file (creating parent directories)."""
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    def read(self, rel: str) -> str:
        """Read a file of the working copy."""
        return (self.path / rel).read_text()

    def run(self, *cmd: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run a command in the repository."""
        proc = subprocess.run(
            cmd, cwd=self.path, env=self.env, capture_output=True, text=True, timeout=120
        )
        if check and proc.returncode:
            raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run git."""
        return self.run("git", *args, check=check)

    def zg(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `zg adr ARGS` (in this process)."""
        return zgrun.in_process("adr", *args, cwd=self.path, env=self.env)

    def commit(self, message: str = "change") -> subprocess.CompletedProcess[str]:
        """`git add -A && git commit`, hooks included; returns the commit's process."""
        self.git("add", "-A")
        return self.git("commit", "-q", "-m", message, check=False)

    def install_hook(self) -> None:
        """A minimal installed pre-commit hook running `zg adr check --staged`."""
        hook = self.write(".git/hooks/pre-commit", f"#!/bin/sh\nexec '{ZG}' adr check --staged\n")
        hook.chmod(0o755)
