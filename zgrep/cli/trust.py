"""`zg trust [PATH] [--status|--revoke]`: let a workspace's `.zgrep.toml` choose where code goes.

Like direnv's `allow`: the user's config dir records the workspace's real root with the SHA-256
of the file's current content; any edit withdraws the trust until the user runs it again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from zgrep.cli.main import fail
from zgrep.config import (
    GATED,
    WORKSPACE_FILE,
    ConfigError,
    read_toml,
    trust_digest,
    trust_key,
    trust_path,
    trust_state,
    trusted_digests,
)
from zgrep.fsutil import atomic_write
from zgrep.locking import FileLock
from zgrep.workspace import WorkspaceError, find_root


def _record(root: Path, digest: str | None) -> None:
    """Set (or with None, drop) the trusted digest of `root`'s workspace file (under a lock:
    concurrent `zg trust` runs each keep their entry)."""
    trusted = Path(trust_path())
    trusted.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(trusted.with_suffix(".lock"), mode=0o600):
        digests = trusted_digests()
        digests.pop(trust_key(root), None)
        if digest is not None:
            digests[trust_key(root)] = digest
        atomic_write(trusted, json.dumps(digests, indent=1, sort_keys=True) + "\n")


@click.command()
@click.argument("path", required=False)
@click.option(
    "--status",
    "show_status",
    is_flag=True,
    help="Say whether the file is trusted (exit 0) or not (exit 1).",
)
@click.option("--revoke", is_flag=True, help="Withdraw the trust.")
def trust(path: str | None, show_status: bool, revoke: bool) -> None:
    """Trust the workspace's .zgrep.toml as it is now: its settings that send code off this
    machine, pick a secret or a server (embedding provider/model/url/api_key_env/allow_remote,
    milvus.uri, server.endpoint) apply until the file changes."""
    if show_status and revoke:
        fail("--status and --revoke cannot be combined")
    try:
        root = Path(find_root(path or None, explicit=path is not None))
        data, toml_digest = read_toml(root / WORKSPACE_FILE)
        digest = trust_digest(root, toml_digest)
    except (WorkspaceError, ConfigError) as exc:
        fail(str(exc))
    file = root / WORKSPACE_FILE
    if revoke:
        _record(root, None)
        click.echo(f"no longer trusted: {file}")
        return
    if digest is None:
        fail(f"no {WORKSPACE_FILE} in {root}; there is nothing to trust")
    if show_status:
        state = trust_state(root, digest)
        words = {
            "trusted": "trusted",
            "changed": "not trusted (changed since you trusted it)",
            "untrusted": "not trusted",
        }
        click.echo(f"{words[state]}: {file}")
        sys.exit(0 if state == "trusted" else 1)
    _record(root, digest)
    gated = [key for key in GATED if key in data]
    click.echo(
        f"trusted {file} (sha256 {digest[:12]})" + ("; until it changes it sets:" if gated else "")
    )
    for key in gated:
        click.echo(f"  {key} = {json.dumps(data[key])}")
