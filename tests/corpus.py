"""A small multi-language workspace, helpers to run `zg` against it, and to read its index.

Shared by test_index_search.py, test_cli.py, test_faults.py and test_milvus_server.py (not
fixtures: each test module builds what it needs with these).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zgrun
from conftest import git

# Every definition is at least 10 lines long so the chunker keeps it as its own chunk.
FILES: dict[str, str] = {
    "src/auth/users.py": '''\
"""User accounts."""


def getUserName(user_id, directory):
    """Look up the display name of one account in the directory."""
    record = directory.lookup(user_id)
    if record is None:
        raise KeyError(user_id)
    first = record.get("first", "")
    last = record.get("last", "")
    display = f"{first} {last}".strip()
    if not display:
        display = record["login"]
    return display


class SessionStore:
    """Keeps signed session cookies for logged-in visitors."""

    def __init__(self, secret):
        self.secret = secret
        self.sessions = {}
        self.created = 0
        self.expired = 0
        self.max_age = 3600
        self.cookie_name = "sid"
        self.domain = None
        self.secure = True

    def sign_cookie(self, value):
        """Sign a session cookie value with the secret key using HMAC."""
        import hashlib
        import hmac

        digest = hmac.new(self.secret, value.encode(), hashlib.sha256)
        signature = digest.hexdigest()
        signed = f"{value}.{signature}"
        self.created += 1
        return signed
''',
    "src/net/retry.py": '''\
"""Network helpers."""

import time


def retry_with_backoff(call, attempts=5, base_delay=0.5):
    """Call `call`; on failure wait exponentially longer before each retry."""
    last_error = None
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError as exc:
            last_error = exc
            delay = base_delay * (2 ** attempt)
            time.sleep(delay)
    raise last_error
''',
    "src/config/loader.go": """\
package config

import (
	"os"

	"gopkg.in/yaml.v3"
)

// ParseConfig reads the YAML configuration file at path and decodes it.
func ParseConfig(path string) (*Settings, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var settings Settings
	if err := yaml.Unmarshal(raw, &settings); err != nil {
		return nil, err
	}
	return &settings, nil
}
""",
    "web/render.js": """\
// Browser-side HTML rendering.

function renderTemplate(name, context) {
  // Fill an HTML template with values, escaping each one.
  const template = TEMPLATES[name];
  if (!template) {
    throw new Error("no template " + name);
  }
  let html = template;
  for (const [key, value] of Object.entries(context)) {
    html = html.replaceAll("{{" + key + "}}", escapeHtml(String(value)));
  }
  return html;
}
""",
    "src/checksum.rs": """\
/// Checksums for stored blocks.

pub fn crc32_checksum(data: &[u8]) -> u32 {
    // Cyclic redundancy check over the bytes, polynomial 0xEDB88320.
    let mut crc: u32 = 0xFFFF_FFFF;
    for byte in data {
        crc ^= *byte as u32;
        for _ in 0..8 {
            let mask = (!(crc & 1)).wrapping_add(1);
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}
""",
    "docs/guide.md": """\
# Guide

## Installing the tool

Download the release archive, unpack it somewhere on your PATH and run the
installer once. The installer asks where to keep its data directory.

## Troubleshooting slow startup

When startup is slow, clear the thumbnail cache and disable plugins one at a time
until the culprit is found.
""",
    "tests/test_retry.py": """\
from src.net.retry import retry_with_backoff


def test_retry_gives_up_after_attempts():
    calls = []

    def flaky():
        calls.append(1)
        raise ConnectionError("down")

    try:
        retry_with_backoff(flaky, attempts=3, base_delay=0)
    except ConnectionError:
        pass
    assert len(calls) == 3
""",
}


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def engine_index(root: Path, **args: Any) -> dict[str, Any]:
    """One index run through the Engine in this process (what `zg index` sends)."""
    from zgrep.dispatch import handle
    from zgrep.engine import Engine

    engine = Engine(root)
    try:
        return handle(engine, "index", args)
    finally:
        engine.close()


def make_repo(root: Path, files: dict[str, str | bytes] | None = None, commit: bool = True) -> Path:
    """A git repository at `root` holding `files` (default: FILES), committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    write_files(root, FILES if files is None else files)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


def user_env(base: Path) -> dict[str, str]:
    """A complete environment for `zg` with its own XDG dirs and no ZG_* settings (no daemon)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZG_")}
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        path = base / name.lower()
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        env[name] = str(path)
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("NO_COLOR", None)
    return env


def run_zg(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `zg` in this process with exactly `env` (or this process's environment): zgrun.in_process."""
    return zgrun.in_process(*args, cwd=cwd, env=env, input=input, timeout=timeout)


def run_zg_binary(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `zg` as a subprocess with exactly `env` (e2e tests): zgrun.binary."""
    return zgrun.binary(*args, cwd=cwd, env=env, input=input, timeout=timeout)


def indexed_repo(base: Path, files: dict[str, str | bytes]) -> tuple[Path, dict[str, str]]:
    """A git repository of `files` under `base`, indexed with `zg index`; (root, env)."""
    root = make_repo(base / "repo", files)
    env = user_env(base)
    proc = run_zg("index", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return root, env


def search_hits(repo: tuple[Path, dict[str, str]], *args: str) -> list[dict[str, Any]]:
    """The JSON hits of `zg search ARGS` in an indexed repository (a search that must succeed)."""
    root, env = repo
    proc = run_zg("search", *args, "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["hits"]


def json_out(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {proc.stderr}"
    return json.loads(proc.stdout)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, a single `zg: ...` line on stderr naming each needle, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("zg: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def store_rows(root: Path) -> list[dict[str, Any]]:
    """Every chunk row (id, path, start_line, end_line) in the workspace's Milvus collection.

    Opens the store in this process, so no other process may hold the workspace."""
    from zgrep.engine import Engine

    engine = Engine(root)
    try:
        return engine.open_store(create=False).rows(["id", "path", "start_line", "end_line"])
    finally:
        engine.close()


def collections(root: Path) -> list[str]:
    """The collections in the workspace's Milvus Lite data (opened in this process, like store_rows)."""
    from zgrep.engine import Engine

    engine = Engine(root)
    try:
        return sorted(engine.open_store(create=False).client.list_collections())
    finally:
        engine.close()


def engine_pids(root: Path) -> list[int]:
    """The native Milvus engines serving the workspace's data file (none once their owner is gone)."""
    from zgrep.store.native import engine_pids as pids

    return pids(root / ".zgrep" / "milvus.db")


def state_files(root: Path) -> dict[str, list[Any]]:
    """The per-file state zg keeps in .zgrep/files.json."""
    return json.loads((root / ".zgrep" / "files.json").read_text())["files"]


def assert_consistent(root: Path) -> list[dict[str, Any]]:
    """Milvus holds exactly the chunks the state records: same count, same paths, no duplicate ids."""
    rows = store_rows(root)
    state = state_files(root)
    assert len({r["id"] for r in rows}) == len(rows), "duplicate chunk ids"
    assert len(rows) == sum(rec[4] for rec in state.values())
    assert {r["path"] for r in rows} == {p for p, rec in state.items() if rec[4]}
    return rows


def rank_candidates(content: str, chunks: list[tuple[str, str, str, float]]) -> list[Any]:
    """Rerank candidates that all hold `content`: one 30-line chunk per (path, language, symbol,
    fused score), a function named `symbol` (a plain chunk when empty)."""
    from zgrep.search.rank import Candidate

    return [
        Candidate(
            id=path,
            fields={
                "path": path,
                "start_line": 1,
                "end_line": 30,
                "symbol": symbol,
                "names": [symbol] if symbol else [],
                "symbol_kind": "function" if symbol else "",
                "scope": "",
                "language": language,
                "content": content,
            },
            fused=fused,
        )
        for path, language, symbol, fused in chunks
    ]


def opened_index(base: Path, files: dict[str, str | bytes]) -> Iterator[tuple[Any, Any]]:
    """A repo of `files` under `base` indexed by `zg index`, then its Engine and open store (a
    module fixture's body: closed when the generator resumes)."""
    from zgrep.engine import Engine

    root = make_repo(base / "repo", dict(files))
    out = run_zg("index", "--mode", "direct", cwd=root, env=user_env(base / "user"))
    assert out.returncode == 0, out.stderr
    engine = Engine(Path(root))
    try:
        yield engine, engine.open_store(create=False)
    finally:
        engine.close()
