"""Git hooks in real repositories: install/chain/uninstall, and the index following git."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ZG, git
from zgrep.hooks import pending
from zgrep.hooks.install import HOOKS, hooks_status

pytestmark = pytest.mark.e2e

ZGREP_REPO = Path(__file__).resolve().parents[2]
VENV_BIN = str(Path(sys.executable).parent)


def commit(root: Path, message: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`git commit` as a user would run it (hooks fire); the process, not raising."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "commit", "-q", "-m", message, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def zg(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ZG, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def wait_idle(root: Path, timeout: float = 30.0) -> None:
    """Wait until the background indexer has drained the queue (bounded)."""
    deadline = time.monotonic() + timeout
    time.sleep(0.2)
    while pending.pending_count(root) or pending.worker_running(root):
        assert time.monotonic() < deadline, f"queue not drained in {timeout}s: {hooks_status(root)}"
        time.sleep(0.2)


def found(root: Path, symbol: str) -> set[str]:
    """Paths of the `zg search --json` hits whose text defines `symbol` (the query)."""
    proc = zg("search", symbol, "--json", "--preview", "full", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return {
        hit["path"] for hit in json.loads(proc.stdout)["hits"] if f"def {symbol}(" in hit["preview"]
    }


def passes(root: Path) -> int:
    log = pending.state_path(root, pending.LOG)
    return (
        sum("index pass:" in line for line in log.read_text().splitlines()) if log.exists() else 0
    )


@pytest.fixture
def indexed(repo: Path) -> Path:
    """A repository with one commit, indexed, with zgrep's hooks installed."""
    write(repo, "src/base.py", "def base_helper(x):\n    return x + 1\n")
    git(repo, "add", ".")
    assert commit(repo, "base").returncode == 0
    proc = zg("index", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert zg("hooks", "install", cwd=repo).returncode == 0
    return repo


def test_install_fresh_repo_then_uninstall(repo: Path) -> None:
    proc = zg("hooks", "install", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    hooks_dir = repo / ".git" / "hooks"
    for hook in (*HOOKS, "zgrep-hook"):
        assert os.access(hooks_dir / hook, os.X_OK)
    assert sys.executable in (hooks_dir / "zgrep-hook").read_text()
    st = hooks_status(repo)
    assert st["installed"] and not st["indexed"]
    assert "hooks installed, not indexed" in zg("hooks", "status", cwd=repo).stdout
    # Not indexed: a commit leaves no state behind and prints nothing.
    write(repo, "a.py", "x = 1\n")
    git(repo, "add", ".")
    proc = commit(repo, "one")
    assert proc.returncode == 0 and proc.stdout == proc.stderr == ""
    assert not (repo / ".zgrep").exists()
    assert zg("hooks", "uninstall", cwd=repo).returncode == 0
    assert not any((hooks_dir / h).exists() for h in (*HOOKS, "zgrep-hook"))
    assert not hooks_status(repo)["installed"]


def test_existing_hooks_are_chained_and_restored_exactly(repo: Path) -> None:
    hooks_dir = repo / ".git" / "hooks"
    pre = b'#!/bin/sh\necho ran >> "$(git rev-parse --git-dir)/chained.log"\nexit 3\n'
    (hooks_dir / "pre-commit").write_bytes(pre)
    os.chmod(hooks_dir / "pre-commit", 0o750)
    post = b"#!/bin/sh\nexit 5\n"
    (hooks_dir / "post-commit").write_bytes(post)
    os.chmod(hooks_dir / "post-commit", 0o700)

    proc = zg("hooks", "install", cwd=repo)
    assert proc.returncode == 0 and "chaining" in proc.stdout
    st = hooks_status(repo)
    assert st["installed"] and st["hooks"]["pre-commit"]["chained"]
    write(repo, "a.py", "x = 1\n")
    git(repo, "add", ".")
    assert commit(repo, "blocked").returncode == 1  # the chained pre-commit still blocks
    assert (repo / ".git" / "chained.log").read_text() == "ran\n"
    run = subprocess.run([str(hooks_dir / "post-commit")], cwd=repo, capture_output=True, text=True)
    assert run.returncode == 5 and run.stderr == ""  # its exit code is preserved

    # Someone replaces our hook while a chained one exists: refused unless --force.
    (hooks_dir / "post-merge").write_text("#!/bin/sh\n")
    (hooks_dir / "post-merge.zgrep-chained").write_text("#!/bin/sh\n")
    proc = zg("hooks", "install", cwd=repo)
    assert (
        proc.returncode == 2 and "--force" in proc.stderr
    )  # a conflict is an error, not "none found"
    assert zg("hooks", "install", "--force", cwd=repo).returncode == 0
    (hooks_dir / "post-merge.zgrep-chained").unlink()

    assert zg("hooks", "uninstall", cwd=repo).returncode == 0
    for name, data, mode in (("pre-commit", pre, 0o750), ("post-commit", post, 0o700)):
        assert (hooks_dir / name).read_bytes() == data
        assert stat.S_IMODE((hooks_dir / name).stat().st_mode) == mode
        assert not (hooks_dir / f"{name}.zgrep-chained").exists()
    assert not (hooks_dir / "post-rewrite").exists()


def test_core_hooks_path_and_worktree(repo: Path, tmp_path: Path) -> None:
    write(repo, "a.py", "x = 1\n")
    git(repo, "add", ".")
    assert commit(repo, "one").returncode == 0
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert zg("hooks", "install", cwd=tmp_path / "wt").returncode == 0
    assert (repo / ".git" / "hooks" / "post-commit").is_file()  # worktrees share the common hooks
    assert hooks_status(repo)["installed"] and hooks_status(tmp_path / "wt")["installed"]
    assert zg("hooks", "uninstall", cwd=tmp_path / "wt").returncode == 0

    git(repo, "config", "core.hooksPath", ".githooks")
    proc = zg("hooks", "install", cwd=repo)
    assert proc.returncode == 0 and str(repo / ".githooks") in proc.stdout
    assert (repo / ".githooks" / "post-rewrite").is_file() and not (
        repo / ".git" / "hooks" / "post-rewrite"
    ).exists()
    assert hooks_status(repo)["hooks_dir"] == str(repo / ".githooks")


def test_missing_zg_exits_zero_with_one_line(repo: Path, tmp_path: Path) -> None:
    python = tmp_path / "python3"
    python.symlink_to(Path(sys.base_prefix) / "bin" / "python3")
    subprocess.run(
        [
            str(python),
            "-c",
            f"from pathlib import Path; from zgrep.hooks.install import install; "
            f"install(Path({str(repo)!r}))",
        ],
        env={**os.environ, "PYTHONPATH": str(ZGREP_REPO)},
        check=True,
    )
    python.unlink()  # the interpreter that installed the hooks is gone ...
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not shutil.which("zg", path=p)
    )
    write(repo, "a.py", "x = 1\n")
    git(repo, "add", ".")
    env = {**os.environ, "PATH": path}  # ... and zg is not on PATH
    for hook in ("pre-commit", "post-commit"):
        proc = subprocess.run(
            [str(repo / ".git" / "hooks" / hook)], cwd=repo, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0 and proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1 and "zg not found" in proc.stderr
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "x"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0


def test_index_follows_commit_checkout_merge_and_rewrite(indexed: Path) -> None:
    repo = indexed
    write(
        repo,
        "src/frob.py",
        "def parse_frobnicator_manifest(path):\n    return open(path).read().split()\n",
    )
    git(repo, "add", ".")
    proc = commit(repo, "frob")
    assert proc.returncode == 0 and proc.stdout == proc.stderr == ""
    wait_idle(repo)
    assert "src/frob.py" in found(repo, "parse_frobnicator_manifest")
    st = hooks_status(repo)
    assert st["pending"] == 0 and st["indexed_commit"] == st["head_commit"]

    # A branch without the file: switching to it removes the file from results.
    git(repo, "checkout", "-q", "-b", "side", "HEAD~1")
    write(repo, "src/quux.py", "def compute_quuxification_ratio(a, b):\n    return a / b\n")
    git(repo, "add", ".")
    assert commit(repo, "quux").returncode == 0
    wait_idle(repo)
    assert "src/frob.py" not in found(repo, "parse_frobnicator_manifest")

    # Merging main into side brings frob back.
    git(repo, "merge", "-q", "--no-edit", "main")
    wait_idle(repo)
    assert "src/frob.py" in found(repo, "parse_frobnicator_manifest")

    # An amend (post-rewrite) renames the function and moves the file.
    git(repo, "mv", "src/quux.py", "src/ratio.py")
    write(repo, "src/ratio.py", "def compute_zorblax_ratio(a, b):\n    return a / b\n")
    git(repo, "add", ".")
    assert commit(repo, "amended", "--amend").returncode == 0
    wait_idle(repo)
    hits = found(repo, "compute_zorblax_ratio")
    assert "src/ratio.py" in hits and "src/quux.py" not in hits | found(
        repo, "compute_quuxification_ratio"
    )

    # A rebase onto a main that gained a function: post-checkout/post-rewrite bring it in.
    git(repo, "checkout", "-q", "main")
    write(
        repo,
        "src/base.py",
        "def base_helper(x):\n    return x + 1\n\n\ndef rebased_wibble_sprocket():\n    return 2\n",
    )
    assert commit(repo, "main moves", "-a").returncode == 0
    git(repo, "checkout", "-q", "side")
    wait_idle(repo)
    assert "src/base.py" not in found(repo, "rebased_wibble_sprocket")
    git(repo, "rebase", "-q", "main")
    wait_idle(repo)
    assert "src/base.py" in found(repo, "rebased_wibble_sprocket")
    # (the rebase drops the amended merge commit, so the quux commit comes back as it was)
    assert "src/quux.py" in found(repo, "compute_quuxification_ratio") and not found(
        repo, "compute_zorblax_ratio"
    )
    assert "index pass failed" not in pending.state_path(repo, pending.LOG).read_text()


def test_quick_commits_coalesce(indexed: Path) -> None:
    repo = indexed
    before = passes(repo)
    for i in range(20):
        write(repo, f"gen/m{i}.py", f"def generated_function_{i}_zyx():\n    return {i}\n")
        git(repo, "add", ".")
        assert commit(repo, f"c{i}").returncode == 0
    wait_idle(repo, timeout=45)
    assert passes(repo) - before <= 4
    status = json.loads(zg("status", "--json", cwd=repo).stdout)
    assert status["files"] == 21 and not status["stale_vs_head"]
    assert "gen/m19.py" in found(repo, "generated_function_19_zyx")


def test_pre_commit_framework_try_repo(indexed: Path, tmp_path: Path) -> None:
    repo = indexed
    assert zg("hooks", "uninstall", cwd=repo).returncode == 0
    write(repo, "src/viaframework.py", "def framework_triggered_blorp():\n    return 7\n")
    git(repo, "add", ".")
    assert commit(repo, "via framework").returncode == 0
    assert pending.pending_count(repo) == 0  # no hooks: nothing queued yet
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
        "PATH": VENV_BIN + os.pathsep + os.environ["PATH"],
    }
    proc = subprocess.run(
        ["pre-commit", "try-repo", str(ZGREP_REPO), "zg-index", "--hook-stage", "post-commit"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "Passed" in proc.stdout, proc.stdout + proc.stderr
    wait_idle(repo)
    assert "src/viaframework.py" in found(repo, "framework_triggered_blorp")


def _snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in directory.iterdir()
        if p.is_file()
    }


def test_uninstall_is_idempotent(repo: Path) -> None:
    hooks_dir = repo / ".git" / "hooks"
    pre = b"#!/bin/sh\nexit 0\n"
    (hooks_dir / "pre-commit").write_bytes(pre)
    os.chmod(hooks_dir / "pre-commit", 0o750)
    assert zg("hooks", "install", cwd=repo).returncode == 0
    assert zg("hooks", "uninstall", cwd=repo).returncode == 0
    assert (hooks_dir / "pre-commit").read_bytes() == pre
    before = _snapshot(hooks_dir)
    for _ in range(2):
        proc = zg("hooks", "uninstall", cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "" and "no zgrep hooks installed" in proc.stdout
        assert _snapshot(hooks_dir) == before


def test_uninstall_still_refuses_a_foreign_hook_over_our_chained_one(repo: Path) -> None:
    hooks_dir = repo / ".git" / "hooks"
    assert zg("hooks", "install", cwd=repo).returncode == 0
    (hooks_dir / "post-merge").write_text("#!/bin/sh\n")
    (hooks_dir / "post-merge.zgrep-chained").write_text("#!/bin/sh\necho old\n")
    proc = zg("hooks", "uninstall", cwd=repo)
    assert proc.returncode == 2 and "post-merge" in proc.stderr
    assert (hooks_dir / "post-merge.zgrep-chained").exists() and (
        hooks_dir / "post-merge"
    ).read_text() == "#!/bin/sh\n"
