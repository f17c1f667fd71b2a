"""Symlinks out of the workspace are never indexed or printed, on every indexing route.

A pulled commit may add `settings_local.py -> ~/.aws/credentials` or a directory link
`etc_link -> /etc`; neither the full listing, `--paths-from -`, `--changed`, the post-commit
hook nor the daemon's watcher may read through them, and `zg read` refuses them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from daemon_helpers import User, wait_for
from test_hooks import wait_idle

CANARY = "zgleakcanary"  # text only the files outside the workspace contain
INSIDE = "zginsidemarker"  # text of a file inside, to prove the search itself works
HOOK_WAIT_S = 60


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files a hostile repository would like to read: a credentials file and an etc-like directory."""
    base = tmp_path / "home"
    (base / "etc").mkdir(parents=True)
    (base / "credentials").write_text(f"aws_secret_access_key = {CANARY}credentials\n")
    (base / "etc" / "passwd").write_text(f"root:x:0:0:{CANARY}passwd:/root:/bin/sh\n")
    return base


@pytest.fixture
def base_repo(repo: Path) -> Path:
    """One committed inside file."""
    (repo / "inside.py").write_text(f"def inside_function():\n    return '{INSIDE}'\n")
    commit(repo, "base")
    return repo


def add_links(root: Path, outside: Path) -> None:
    """The hostile commit's content: a file link and a directory link leaving the workspace."""
    os.symlink(outside / "credentials", root / "settings_local.py")
    os.symlink(outside / "etc", root / "etc_link")
    (root / "after.py").write_text(f"def after_function():\n    return '{INSIDE}after'\n")


def search(run: callable, root: Path, text: str) -> list[dict]:
    """Lexical hits for `text` with full previews, read straight from the index (no refresh)."""
    proc = run(
        "search",
        text,
        "--json",
        "--preview",
        "full",
        "--mode-search",
        "lexical",
        "--refresh",
        "off",
        "--mode",
        "direct",
        cwd=root,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["hits"]


def assert_no_leak(run: callable, root: Path) -> None:
    """The canary is absent from every hit, and the inside file committed with the links is indexed."""
    assert any(
        h["path"] == "after.py" for h in search(run, root, f"{INSIDE}after after_function")
    ), "the route did not index the inside file at all (the test would prove nothing)"
    for query in (
        f"{CANARY}credentials",
        f"{CANARY}passwd",
        "aws_secret_access_key",
        "root passwd",
    ):
        hits = search(run, root, query)
        assert not any(CANARY in json.dumps(h) for h in hits), hits


def test_full_listing_skips_links_out(base_repo: Path, outside: Path, zg) -> None:
    add_links(base_repo, outside)
    commit(base_repo, "links")
    assert zg("index", cwd=base_repo).returncode == 0
    assert_no_leak(zg, base_repo)


def test_paths_from_stdin_refuses_links_out(base_repo: Path, outside: Path, zg) -> None:
    assert zg("index", cwd=base_repo).returncode == 0
    add_links(base_repo, outside)
    proc = zg(
        "index",
        "--paths-from",
        "-",
        cwd=base_repo,
        input="etc_link/passwd\nsettings_local.py\nafter.py\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert_no_leak(zg, base_repo)


def test_changed_range_refuses_links_out(base_repo: Path, outside: Path, zg) -> None:
    assert zg("index", cwd=base_repo).returncode == 0
    add_links(base_repo, outside)
    commit(base_repo, "links")
    proc = zg("index", "--changed", "HEAD~1..HEAD", cwd=base_repo)
    assert proc.returncode == 0, proc.stderr
    assert_no_leak(zg, base_repo)


def test_post_commit_hook_refuses_links_out(base_repo: Path, outside: Path, zg) -> None:
    assert zg("index", cwd=base_repo).returncode == 0
    assert zg("hooks", "install", cwd=base_repo).returncode == 0
    add_links(base_repo, outside)
    git(base_repo, "add", "-A")
    subprocess.run(
        ["git", "commit", "-q", "-m", "links"], cwd=base_repo, check=True, capture_output=True
    )
    wait_idle(base_repo, timeout=HOOK_WAIT_S)
    assert_no_leak(zg, base_repo)


def test_daemon_watcher_refuses_links_out(base_repo: Path, outside: Path, tmp_path: Path) -> None:
    user = User(tmp_path / "user")
    user.start()
    try:
        assert user.zg("index", "--mode", "server", cwd=base_repo).returncode == 0
        add_links(base_repo, outside)

        def served(text: str) -> list[dict]:
            out = user.zg(
                "search",
                text,
                "--json",
                "--preview",
                "full",
                "--mode-search",
                "lexical",
                "--refresh",
                "off",
                "--mode",
                "server",
                cwd=base_repo,
            )
            assert out.returncode in (0, 1), out.stderr
            return json.loads(out.stdout)["hits"]

        wait_for(
            lambda: any(h["path"] == "after.py" for h in served(f"{INSIDE}after after_function")),
            30,
            "the watcher to index the inside file",
        )
        for query in (
            f"{CANARY}credentials",
            f"{CANARY}passwd",
            "aws_secret_access_key",
            "root passwd",
        ):
            assert not any(CANARY in json.dumps(h) for h in served(query))
    finally:
        user.zg("server", "off")


@pytest.mark.parametrize(
    "target", ["settings_local.py", "etc_link/passwd", "etc_link/../etc_link/passwd"]
)
def test_read_refuses_links_out(base_repo: Path, outside: Path, zg, target: str) -> None:
    add_links(base_repo, outside)
    proc = zg("read", target, cwd=base_repo)
    assert proc.returncode == 2 and CANARY not in proc.stdout
    assert proc.stderr.count("\n") == 1 and "outside the workspace" in proc.stderr
