"""`[adr] dir` and `doc_dirs` come from an untrusted `.zgrep.toml`: every configured ADR path is
confined to the workspace (no absolute path, no `..`, no symlinked directory leading out)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import git


def workspace(root: Path, toml: str) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".zgrep.toml").write_text(toml)
    return root


@pytest.mark.parametrize(
    "toml,key",
    [
        ('[adr]\ndir = "../.."\n', "adr.dir"),
        ('[adr]\ndir = "docs/../../escape"\n', "adr.dir"),
        ('[adr]\ndir = "/tmp/zg-adr-escape"\n', "adr.dir"),
        ('[adr]\ndoc_dirs = ["docs/specs", "../../etc"]\n', "adr.doc_dirs"),
        ('[adr]\ndir = "linked"\n', "adr.dir"),
    ],
)
def test_adr_paths_leaving_the_workspace_are_refused(
    tmp_path: Path, zg, toml: str, key: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = workspace(tmp_path / "deep" / "clone", toml)
    os.symlink(outside, root / "linked")
    before = sorted(p for p in tmp_path.rglob("*") if ".git" not in p.parts)
    for args in (("adr", "new", "Use a queue"), ("adr", "list"), ("adr", "check")):
        proc = zg(*args, cwd=root)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert (
            proc.stderr.count("\n") == 1
            and key in proc.stderr
            and "inside the workspace" in proc.stderr
        )
    assert sorted(p for p in tmp_path.rglob("*") if ".git" not in p.parts) == before
    assert not Path("/tmp/zg-adr-escape").exists()


def test_adr_paths_inside_the_workspace_still_work(tmp_path: Path, zg) -> None:
    root = workspace(tmp_path / "clone", '[adr]\ndir = "decisions/"\ndoc_dirs = ["./specs"]\n')
    proc = zg("adr", "new", "Use a queue", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip().startswith("decisions/0001-") and (root / proc.stdout.strip()).is_file()
    )
