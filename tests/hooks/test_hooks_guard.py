"""The installed hooks never block git except for a real ADR violation, and start no Python they can do without."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git
from test_adr_kit import adr_text
from test_hooks import ZGREP_REPO, commit, write, zg
from zgrep.git import commit_paths
from zgrep.hooks import pending
from zgrep.locking import FileLock
from zgrep.workspace import MANIFEST, STATE_DIR, StateDir

pytestmark = pytest.mark.e2e

NET = "def fetch_with_retry(url):\n    return url\n"
ANCHOR = "  - {path: src/net.py, symbol: fetch_with_retry}\n"
# Every Python interpreter started with this PYTHONPATH appends its argv to $ZGREP_TEST_PYTHON_LOG.
PROBE = "import os, sys\nwith open(os.environ['ZGREP_TEST_PYTHON_LOG'], 'a') as f:\n    f.write(repr(sys.orig_argv) + '\\n')\n"


def git_env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        **extra,
    }


def run_git(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A git command as a user runs it (hooks fire); the process, not raising."""
    return subprocess.run(
        ["git", *args], cwd=root, env=env or git_env(), capture_output=True, text=True, timeout=120
    )


def head_subject(root: Path) -> str:
    return git(root, "log", "-1", "--format=%s").strip()


def probe_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose Python starts are logged, and the log."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(PROBE)
    log = tmp_path / "python-starts.log"
    return git_env(PYTHONPATH=str(probe), ZGREP_TEST_PYTHON_LOG=str(log)), log


def starts(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def fake_indexed(root: Path) -> None:
    """Mark the work tree as indexed (the hooks only look for the manifest); the state dir ignores itself."""
    StateDir(root).ensure_state_dir()
    (root / STATE_DIR / MANIFEST).write_text("{}")


@pytest.fixture
def adr_repo(repo: Path) -> Path:
    """zgrep's hooks installed; docs/adr/0001 anchors src/net.py:fetch_with_retry; all committed."""
    assert zg("hooks", "install", cwd=repo).returncode == 0
    write(repo, "src/net.py", NET)
    write(repo, "docs/adr/0001-retries.md", adr_text("ADR-0001", anchors=ANCHOR))
    git(repo, "add", ".")
    proc = commit(repo, "init")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return repo


def test_adr_violation_still_blocks(adr_repo: Path) -> None:
    repo = adr_repo
    write(repo, "src/net.py", NET.replace("fetch_with_retry", "fetch"))
    git(repo, "add", ".")
    proc = commit(repo, "rename")
    out = proc.stdout + proc.stderr  # git sends a hook's stdout to its stderr
    assert proc.returncode == 1 and head_subject(repo) == "init"
    assert "ADR-0001" in out and "fetch_with_retry" in out and "FAILED" in out
    write(
        repo,
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors=ANCHOR.replace("fetch_with_retry", "fetch")),
    )
    git(repo, "add", ".")
    proc = commit(repo, "rename with the ADR updated")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", (
        proc.stdout + proc.stderr
    )


@pytest.mark.parametrize("how", ["-a", "paths"])
def test_commit_all_or_paths_checks_the_index_git_commits(adr_repo: Path, how: str) -> None:
    """`git commit -a` / `git commit PATH...` hand the hook a temporary index: the check reads that one."""
    repo = adr_repo
    write(
        repo, "src/net.py", NET.replace("fetch_with_retry", "fetch")
    )  # not staged: git stages it for the commit
    proc = commit(repo, "rename", *(["-a"] if how == "-a" else ["src/net.py"]))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and head_subject(repo) == "init", out
    assert "ADR-0001" in out and "fetch_with_retry" in out and "FAILED" in out
    write(
        repo,
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors=ANCHOR.replace("fetch_with_retry", "fetch")),
    )
    proc = commit(
        repo,
        "rename with the ADR updated",
        *(["-a"] if how == "-a" else ["src/net.py", "docs/adr/0001-retries.md"]),
    )
    assert proc.returncode == 0 and head_subject(repo) == "rename with the ADR updated", (
        proc.stdout + proc.stderr
    )
    assert proc.stdout == "" and proc.stderr == ""


def test_config_typo_does_not_block(adr_repo: Path) -> None:
    repo = adr_repo
    write(repo, ".zgrep.toml", "[serch]\nlimit = 5\n")  # untracked, with a typo
    write(repo, "src/other.py", "x = 1\n")
    git(repo, "add", "src/other.py")
    proc = commit(repo, "unrelated")
    assert proc.returncode == 0 and head_subject(repo) == "unrelated", proc.stdout + proc.stderr
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert ".zgrep.toml" in proc.stderr and "serch" in proc.stderr and "not checked" in proc.stderr


def bare_venv_hooks(root: Path, tmp_path: Path) -> None:
    """Reinstall the hooks from an interpreter that has zgrep but really lacks pyyaml (a bare venv + .pth)."""
    venv = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "zgrep-src.pth").write_text(f"{ZGREP_REPO}\n")
    assert subprocess.run([str(python), "-c", "import yaml"], capture_output=True).returncode == 1
    subprocess.run(
        [
            str(python),
            "-c",
            f"from pathlib import Path; from zgrep.hooks.install import install; "
            f"install(Path({str(root)!r}))",
        ],
        check=True,
    )


@pytest.mark.parametrize("how", ["bare venv", "shadowed"])
def test_missing_pyyaml_does_not_block(adr_repo: Path, tmp_path: Path, how: str) -> None:
    env = git_env()
    if how == "bare venv":
        bare_venv_hooks(adr_repo, tmp_path)
    else:  # simulated: the hooks' own venv, with a `yaml` on PYTHONPATH that fails to import
        write(tmp_path, "shadow/yaml.py", "raise ImportError(\"No module named 'yaml'\")\n")
        env["PYTHONPATH"] = str(tmp_path / "shadow")
    write(
        adr_repo, "src/net.py", NET + "# touched\n"
    )  # an anchored file: the check must run (and cannot)
    git(adr_repo, "add", "src/net.py")
    proc = run_git(adr_repo, "commit", "-q", "-m", "unrelated", env=env)
    assert proc.returncode == 0 and head_subject(adr_repo) == "unrelated", proc.stdout + proc.stderr
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1 and "yaml" in proc.stderr
    assert "not blocked" in proc.stderr and "install zgrep" in proc.stderr


def test_post_hooks_never_block(repo: Path) -> None:
    assert zg("hooks", "install", cwd=repo).returncode == 0
    write(repo, "a.py", "x = 1\n")
    git(repo, "add", ".")
    assert commit(repo, "one").returncode == 0
    git(repo, "branch", "side")
    fake_indexed(repo)
    pending.state_path(repo, pending.QUEUE).mkdir()  # the queue cannot be written
    write(repo, "b.py", "y = 2\n")
    git(repo, "add", "b.py")
    for args in (
        ("commit", "-q", "-m", "two"),
        ("commit", "-q", "--amend", "-m", "two again"),
        ("checkout", "-q", "side"),
        ("merge", "-q", "--no-edit", "main"),
    ):
        proc = run_git(repo, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.splitlines()) <= 1, (args, proc.stderr)
    assert head_subject(repo) == "two again" and (repo / "b.py").is_file()


def test_commit_without_adrs_starts_no_python(repo: Path, tmp_path: Path) -> None:
    env, log = probe_env(tmp_path)
    assert zg("hooks", "install", cwd=repo).returncode == 0
    write(repo, "src/a.py", "x = 1\n")
    git(repo, "add", ".")
    proc = run_git(repo, "commit", "-q", "-m", "one", env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert starts(log) == []


def test_a_commit_touching_no_anchored_path_starts_no_python_once_the_anchor_set_is_cached(
    adr_repo: Path, tmp_path: Path
) -> None:
    """Issue 24: with ADRs, a commit that stages no anchored path (and no ADR) is decided by the shell hook from
    the anchor set the last passing check left in the git dir; anchored paths, ADR edits and deletions still run
    the check and still block."""
    repo = adr_repo
    env, log = probe_env(tmp_path)
    write(repo, "docs/adr/0002-dirs.md", adr_text("ADR-0002", anchors="  - {path: src/pkg}\n"))
    write(repo, "src/pkg/mod.py", "x = 1\n")
    git(repo, "add", ".")
    assert (
        run_git(repo, "commit", "-q", "-m", "second ADR", env=env).returncode == 0
    )  # an ADR changed: checked
    assert any("zgrep.hooks.run" in line for line in starts(log))
    assert set((repo / ".git" / "zgrep-adr-anchors").read_text().split()) == {
        "src/net.py",
        "src/pkg",
    }
    log.unlink()
    write(repo, "README.md", "docs\n")
    write(repo, "src/pkg_other.py", "y = 2\n")  # a sibling of an anchored directory, not under it
    git(repo, "add", ".")
    proc = run_git(repo, "commit", "-q", "-m", "docs", env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert starts(log) == []
    write(repo, "src/pkg/mod.py", "x = 2\n")  # under an anchored directory
    git(repo, "add", ".")
    assert run_git(repo, "commit", "-q", "-m", "pkg", env=env).returncode == 0
    assert any("zgrep.hooks.run" in line for line in starts(log))
    git(repo, "rm", "-q", "src/net.py")  # an anchored file deleted: the check runs and blocks
    proc = run_git(repo, "commit", "-q", "-m", "drop net", env=env)
    assert proc.returncode == 1 and "ADR-0001" in proc.stderr, proc.stdout + proc.stderr
    git(repo, "reset", "-q", "--hard")
    write(
        repo,
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors=ANCHOR.replace("net.py", "gone.py")),
    )
    git(
        repo, "add", "."
    )  # an ADR edited to anchor a missing file: the key changed, so Python decides
    proc = run_git(repo, "commit", "-q", "-m", "bad anchor", env=env)
    assert proc.returncode == 1 and "ADR-0001" in proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("where", ["workspace file", "user file", "environment"])
def test_configured_adr_dir_is_still_checked(repo: Path, tmp_path: Path, where: str) -> None:
    """ADRs outside docs/adr, configured in any layer: the shell's shortcut must not skip the check."""
    env, log = probe_env(tmp_path)
    if where == "workspace file":
        write(repo, ".zgrep.toml", '[adr]\ndir = "decisions"\n')
    elif where == "user file":
        write(Path(os.environ["XDG_CONFIG_HOME"]), "zgrep/config.toml", 'adr.dir = "decisions"\n')
    else:
        env["ZG_ADR_DIR"] = "decisions"
    assert zg("hooks", "install", cwd=repo).returncode == 0
    write(repo, "src/net.py", NET)
    write(repo, "decisions/0001-retries.md", adr_text("ADR-0001", anchors=ANCHOR))
    git(repo, "add", ".")
    assert run_git(repo, "commit", "-q", "-m", "init", env=env).returncode == 0
    write(repo, "src/net.py", NET.replace("fetch_with_retry", "fetch"))
    git(repo, "add", ".")
    proc = run_git(repo, "commit", "-q", "-m", "rename", env=env)
    assert proc.returncode == 1 and "ADR-0001" in proc.stderr, proc.stdout + proc.stderr
    assert any("zgrep.hooks.run" in line for line in starts(log))


def test_post_commit_queues_without_python_while_a_worker_runs(repo: Path, tmp_path: Path) -> None:
    env, log = probe_env(tmp_path)
    assert zg("hooks", "install", cwd=repo).returncode == 0
    write(repo, "old name.py", "x = 1\n")
    write(repo, "gone.py", "y = 2\n")
    git(repo, "add", ".")
    assert commit(repo, "one").returncode == 0
    fake_indexed(repo)
    git(repo, "mv", "old name.py", "new name é.py")
    git(repo, "rm", "-q", "gone.py")
    write(repo, "tab\there.py", "z = 3\n")
    git(repo, "add", ".")
    worker = FileLock(pending.state_path(repo, pending.WORKER_LOCK))
    assert worker.acquire(blocking=False)  # a background indexer is running
    try:
        proc = run_git(repo, "commit", "-q", "-m", "two", env=env)
    finally:
        worker.release()
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert starts(log) == []
    expected = commit_paths(repo, "HEAD")
    assert set(expected) == {"old name.py", "new name é.py", "gone.py", "tab\there.py"}
    assert pending.take(repo) == expected
