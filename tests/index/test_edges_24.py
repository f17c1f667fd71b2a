"""Surprises at the edges (issue 24): a big folder outside git is indexed only when asked, nested git repos stay
their own workspaces, a reversed `zg read` range, `--from-history` on a one-commit repo, `impact`'s plurals,
a loopback embedder is not "off this machine", `zg adr for` lists line anchors, and two ADR folders warn."""

from __future__ import annotations

import json
from pathlib import Path

from corpus import assert_one_line_error, make_repo, run_zg, user_env
from test_adr_kit import Repo, adr_text


def test_a_big_folder_outside_git_is_indexed_only_when_asked(tmp_path):
    top = tmp_path / "scratch"
    for n in range(2001):
        path = top / f"d{n // 100}" / f"f{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{n}():\n    return {n}\n")
    env = user_env(tmp_path / "user")
    proc = run_zg("search", "f7", cwd=top, env=env)
    assert_one_line_error(proc, "not a git repository", "2001 files", f"zg index {top}", "--yes")
    assert not (top / ".zgrep" / "manifest.json").exists()  # nothing was indexed


def test_nested_git_repositories_stay_their_own_workspaces(tmp_path):
    top = tmp_path / "scratch"
    make_repo(top / "inner", {"inner.py": "def inner():\n    return 1\n"})
    (top / "loose.py").write_text("def loose():\n    return 2\n")
    env = user_env(tmp_path / "user")
    proc = run_zg("index", "--dry-run", cwd=top, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "index   loose.py" in proc.stdout.splitlines() and "inner" not in proc.stdout


def test_read_says_a_reversed_range_is_reversed(tmp_path):
    root = make_repo(tmp_path / "repo", {"a.py": "".join(f"x{n} = {n}\n" for n in range(20))})
    proc = run_zg("read", "a.py:10-5", cwd=root, env=user_env(tmp_path / "user"))
    assert_one_line_error(proc, "reversed range 10-5", "a.py:5-10")


def test_from_history_on_a_one_commit_repo_speaks_of_that_commit(tmp_path):
    root = make_repo(tmp_path / "repo", {"data.bin": b"\x00\x01\x02" * 100})
    proc = run_zg("eval", "--from-history", "5", cwd=root, env=user_env(tmp_path / "user"))
    assert_one_line_error(proc, "the only commit", "changes no file zg indexes")
    # (not the default count of 50 commits; the temp path may hold a 50 of its own)
    assert "50" not in proc.stderr.replace(str(tmp_path), "")


def test_impact_counts_one_file_in_the_singular(tmp_path):
    root = make_repo(
        tmp_path / "repo",
        {"m.py": "def net(a):\n    return a\n\n\ndef gross(a):\n    return net(a)\n"},
    )
    env = user_env(tmp_path / "user")
    assert run_zg("index", cwd=root, env=env).returncode == 0
    proc = run_zg("impact", "m.py:net", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "impacted: 1 definition in 1 file" in proc.stdout.splitlines(), proc.stdout


def test_a_loopback_embedder_is_not_off_this_machine_but_still_needs_the_opt_in(tmp_path):
    root = make_repo(tmp_path / "repo", {"a.py": "def a():\n    return 1\n"})
    env = user_env(tmp_path / "user")
    local = run_zg(
        "index", "--model", "ollama:nomic", cwd=root, env=env
    )  # Ollama's default: 127.0.0.1:11434
    assert_one_line_error(local, "loopback", "allow_remote = true")
    assert "off this machine" not in local.stderr
    (root / ".zgrep.toml").write_text('[embedding]\nurl = "http://192.0.2.7:11434"\n')
    assert run_zg("trust", cwd=root, env=env).returncode == 0
    remote = run_zg("index", "--model", "ollama:nomic", cwd=root, env=env)
    assert_one_line_error(remote, "sends code off this machine", "allow_remote = true")


def test_adr_for_lists_line_anchors(tmp_path):
    r = Repo(tmp_path / "repo")
    r.write("src/net.py", "def fetch():\n    return 1\n")
    r.write(
        "docs/adr/0001-net.md", adr_text("ADR-0001", anchors="  - {path: src/net.py, lines: 1-2}\n")
    )
    r.commit("init")
    proc = r.zg("for", "src/net.py")
    assert proc.returncode == 0, proc.stderr
    assert "lines: src/net.py:1-2" in proc.stdout
    assert json.loads(r.zg("for", "src/net.py", "--json").stdout)[0]["lines"] == ["src/net.py:1-2"]


def test_two_adr_folders_warn_which_one_is_read(tmp_path):
    r = Repo(tmp_path / "repo")
    r.write("docs/adr/0001-a.md", adr_text("ADR-0001"))
    r.write("doc/adr/0001-b.md", adr_text("ADR-0001", title="Elsewhere"))
    r.commit("init")
    proc = r.zg("list")
    assert proc.returncode == 0 and "ADR-0001" in proc.stdout
    assert proc.stderr.splitlines() == [
        "zg adr: warning: reading ADRs from docs/adr only; doc/adr also exists (choose with adr.dir in .zgrep.toml)"
    ]
