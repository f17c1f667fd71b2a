"""`zg init` on a real git repository: merges into the agents' configs without clobbering, is idempotent,
shows a diff on --dry-run, refuses what it cannot merge without writing anything, and `--remove` leaves
the tree byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import ZG, git
from corpus import assert_one_line_error
from daemon_helpers import User

MCP_JSON = '{"mcpServers": {"theirs": {"command": "their-server"}}}'  # one line, no final newline
ON_PATH = str(Path(ZG).parent)
AGENTS_MD = "# Agents\n\nRun the tests with `make test`.\n"


def tree(root: Path) -> dict[str, str]:
    """Every file under `root` but .git, by its SHA-256 (and mode)."""
    return {
        p.relative_to(
            root
        ).as_posix(): f"{hashlib.sha256(p.read_bytes()).hexdigest()} {p.stat().st_mode:o}"
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def project(tmp_path: Path) -> tuple[User, Path]:
    user = User(tmp_path / "user")
    user.env["PATH"] = os.pathsep.join(
        [ON_PATH, user.env["PATH"]]
    )  # `zg` on PATH: the entries say `zg`
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".mcp.json").write_text(MCP_JSON)
    (root / "AGENTS.md").write_text(AGENTS_MD)
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text('{"editor.tabSize": 4}\n')
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return user, root


def test_init_merges_is_idempotent_and_remove_restores_every_byte(
    project: tuple[User, Path],
) -> None:
    user, root = project
    before = tree(root)

    dry = user.zg("init", "--dry-run", cwd=root)
    assert dry.returncode == 0, dry.stderr
    assert (
        "+++ b/.cursor/mcp.json" in dry.stdout
        and '"theirs"' in dry.stdout
        and "+<!-- zgrep:begin" in dry.stdout
    )
    assert tree(root) == before

    first = user.zg("init", cwd=root)
    assert first.returncode == 0, first.stderr
    claude = json.loads((root / ".mcp.json").read_text())
    assert claude["mcpServers"] == {
        "theirs": {"command": "their-server"},
        "zgrep": {"command": "zg", "args": ["mcp"]},
    }
    assert "\n" not in (root / ".mcp.json").read_text()  # kept on one line, as the user wrote it
    assert (
        json.loads((root / ".vscode/mcp.json").read_text())["servers"]["zgrep"]["type"] == "stdio"
    )
    assert json.loads((root / ".cursor/mcp.json").read_text())["mcpServers"]["zgrep"]["args"] == [
        "mcp"
    ]
    agents = (root / "AGENTS.md").read_text()
    assert agents.startswith(AGENTS_MD) and "adr_constraints" in agents
    after = tree(root)

    again = user.zg("init", cwd=root)
    assert again.returncode == 0 and again.stdout.split().count("unchanged") == 4, again.stdout
    assert tree(root) == after
    assert user.zg("init", "--dry-run", cwd=root).stdout == ""

    removed = user.zg("init", "--remove", cwd=root)
    assert removed.returncode == 0, removed.stderr
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert tree(root) == before
    assert not (root / ".cursor").exists() and (root / ".vscode" / "settings.json").exists()


def test_remove_after_the_user_edited_takes_out_only_zgreps_entry(
    project: tuple[User, Path],
) -> None:
    user, root = project
    assert user.zg("init", "--client", "claude", "--no-instructions", cwd=root).returncode == 0
    assert not (root / ".cursor").exists() and (root / "AGENTS.md").read_text() == AGENTS_MD
    doc = json.loads((root / ".mcp.json").read_text())
    doc["mcpServers"]["mine"] = {"command": "mine"}
    (root / ".mcp.json").write_text(json.dumps(doc))
    assert user.zg("init", "--remove", "--client", "claude", cwd=root).returncode == 0
    assert json.loads((root / ".mcp.json").read_text())["mcpServers"] == {
        "theirs": {"command": "their-server"},
        "mine": {"command": "mine"},
    }


def test_a_config_it_cannot_merge_is_refused_and_nothing_is_written(
    project: tuple[User, Path],
) -> None:
    user, root = project
    (root / ".vscode" / "mcp.json").write_text('{\n  // my servers\n  "servers": {}\n}\n')
    before = tree(root)
    proc = user.zg("init", cwd=root)
    assert_one_line_error(proc, ".vscode/mcp.json", "comments?", "by hand")
    assert tree(root) == before
    (root / ".mcp.json").write_text('{"mcpServers": ["not", "an", "object"]}')
    assert_one_line_error(user.zg("init", "--client", "claude", cwd=root), ".mcp.json", "object")


def test_a_config_reached_through_a_symlink_out_of_the_workspace_is_refused(
    project: tuple[User, Path], tmp_path: Path
) -> None:
    user, root = project
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.md").write_text("mine\n")
    (root / ".cursor").symlink_to(outside)  # a cloned repository's link to the user's own files
    before = tree(outside)
    assert_one_line_error(
        user.zg("init", "--client", "cursor", cwd=root), ".cursor/mcp.json", "out of the workspace"
    )
    assert tree(outside) == before and not (outside / "mcp.json").exists()
    (root / "AGENTS.md").unlink()
    (root / "AGENTS.md").symlink_to(outside / "notes.md")
    assert_one_line_error(
        user.zg("init", "--client", "claude", cwd=root), "AGENTS.md", "out of the workspace"
    )
    assert tree(outside) == before and (root / "AGENTS.md").is_symlink()


def test_with_zg_off_path_the_entries_name_the_running_zg(project: tuple[User, Path]) -> None:
    user, root = project
    off = os.pathsep.join(p for p in user.env["PATH"].split(os.pathsep) if p != ON_PATH)
    proc = user.zg(
        "init",
        "--client",
        "claude",
        "--client",
        "vscode",
        "--no-instructions",
        cwd=root,
        env={"PATH": off},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((root / ".mcp.json").read_text())["mcpServers"]["zgrep"] == {
        "command": ZG,
        "args": ["mcp"],
    }
    assert json.loads((root / ".vscode/mcp.json").read_text())["servers"]["zgrep"]["command"] == ZG
    assert "not on PATH" in proc.stderr and ZG in proc.stderr
    doc = json.loads((root / ".mcp.json").read_text())
    doc["mcpServers"]["mine"] = {"command": "mine"}
    (root / ".mcp.json").write_text(json.dumps(doc))
    assert (
        user.zg("init", "--remove", "--client", "claude", cwd=root).returncode == 0
    )  # (with zg on PATH again)
    assert "zgrep" not in json.loads((root / ".mcp.json").read_text())["mcpServers"]
