"""Discovery and ignore layers against real files and real git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from zgrep.git import git_toplevel
from zgrep.index.discovery import (
    Confinement,
    LoadedFile,
    Skip,
    discover,
    filter_paths,
    is_git_repo,
    list_files,
    read_file,
    stat_files,
)
from zgrep.index.ignore import IgnoreRules, global_ignore_path

MiB = 1024 * 1024


@pytest.fixture(autouse=True)
def isolated_config(tmp_path_factory, monkeypatch):
    """No user-level git or zgrep config leaks into a test."""
    xdg = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    return xdg


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True,
        capture_output=True,
    )


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    return root


def commit_all(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")


def listed(root: Path, **kwargs) -> list[str]:
    return list_files(root, IgnoreRules.for_root(root, **kwargs))


@pytest.fixture(params=["git", "plain"])
def workspace(request, tmp_path) -> Path:
    """The same expectations must hold inside and outside a git work tree."""
    root = tmp_path / "ws"
    root.mkdir()
    if request.param == "git":
        make_repo(root)
    return root


# --- git listing -------------------------------------------------------------------------


def test_git_lists_tracked_and_untracked_but_not_gitignored(tmp_path):
    root = make_repo(tmp_path)
    write(root, ".gitignore", "*.log\nsecret/\n")
    write(root, "tracked.py")
    write(root, "gone.py")
    commit_all(root)
    write(root, "untracked.py")
    write(root, "debug.log", "noise\n")
    write(root, "secret/key.py")
    (root / "gone.py").unlink()  # deleted but still in the index

    assert listed(root) == ["tracked.py", "untracked.py"]


def test_git_handles_spaces_and_unicode_names(tmp_path):
    root = make_repo(tmp_path)
    names = ["dir with space/file name.py", "ünïcødé/日本語.md", "tab\tname.txt"]
    for name in names:
        write(root, name, "hello\n")
    commit_all(root)
    write(root, "new dir/ñ untracked.py")

    assert listed(root) == sorted(names + ["new dir/ñ untracked.py"])


def test_git_workspace_in_a_subdirectory_lists_relative_to_it(tmp_path):
    root = make_repo(tmp_path)
    write(root, "top.py")
    write(root, "pkg/inner.py")
    commit_all(root)

    assert listed(root / "pkg") == ["inner.py"]
    assert git_toplevel(root / "pkg") == root.resolve()
    assert is_git_repo(root / "pkg")


def test_git_is_not_confused_by_hook_environment(tmp_path, monkeypatch):
    other = make_repo(tmp_path / "other")
    write(other, "other.py")
    commit_all(other)
    write(other, ".git/info/exclude", "mine.py\n")
    root = make_repo(tmp_path / "repo")
    write(root, "mine.py")
    write(root, ".git/info/exclude", "junk.py\n")
    write(root, "junk.py")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as git sets it for hooks

    assert listed(root) == ["mine.py"]


def test_outside_git(tmp_path):
    root = tmp_path / "plain"
    write(root, "a.py")
    assert git_toplevel(root) is None
    assert not is_git_repo(root)
    assert listed(root) == ["a.py"]


def test_git_skips_submodule_and_nested_repository_dirs(tmp_path):
    sub = make_repo(tmp_path / "lib")
    write(sub, "lib.py")
    commit_all(sub)
    root = make_repo(tmp_path / "app")
    write(root, "app.py")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendored")
    commit_all(root)
    shutil.copytree(sub, root / "nested")  # an untracked nested repository

    assert listed(root) == ["app.py"]


# --- ignore layers -----------------------------------------------------------------------


def test_nested_gitignore_applies_to_its_own_subtree(workspace):
    write(workspace, ".gitignore", "*.tmp\n")
    write(workspace, "a/.gitignore", "generated.py\n")
    write(workspace, "a/generated.py")
    write(workspace, "a/kept.py")
    write(workspace, "b/generated.py")
    write(workspace, "b/x.tmp")

    assert listed(workspace) == ["a/kept.py", "b/generated.py"]


def test_zgignore_reincludes_and_outranks_ignore_and_gitignore(workspace):
    write(workspace, ".gitignore", "*.gen.py\nlogs/\n")
    write(workspace, ".ignore", "docs/\nwanted.py\n")
    write(workspace, ".zgignore", "!keep.gen.py\n!logs/\n!wanted.py\n")
    write(workspace, "drop.gen.py")
    write(workspace, "keep.gen.py")
    write(workspace, "logs/today.py")
    write(workspace, "docs/guide.md")
    write(workspace, "wanted.py")

    assert listed(workspace) == ["keep.gen.py", "logs/today.py", "wanted.py"]


def test_ignore_files_apply_however_git_lists_them(workspace):
    """In git the listing tells which ignore files exist (they are not looked for where it covers a
    directory): tracked, untracked, git-ignored ones and those inside a re-included ignored directory
    all apply, as outside git."""
    write(workspace, ".gitignore", ".ignore\nout/\n")
    write(workspace, ".zgignore", "!out/\n")
    write(workspace, "tracked/.gitignore", "t_drop.py\n")
    write(workspace, "tracked/t_drop.py")
    write(workspace, "tracked/t_keep.py")
    if (workspace / ".git").exists():
        commit_all(workspace)
    write(workspace, "untracked/deep/.zgignore", "u_drop.py\n")
    write(workspace, "untracked/deep/u_drop.py")
    write(workspace, "untracked/deep/u_keep.py")
    write(workspace, "git_ignored/.ignore", "i_drop.py\n")  # .ignore is itself git-ignored
    write(workspace, "git_ignored/i_drop.py")
    write(workspace, "git_ignored/i_keep.py")
    write(workspace, "out/sub/.zgignore", "o_drop.py\n")
    write(workspace, "out/sub/o_drop.py")
    write(workspace, "out/sub/o_keep.py")

    assert listed(workspace) == [
        "git_ignored/i_keep.py",
        "out/sub/o_keep.py",
        "tracked/t_keep.py",
        "untracked/deep/u_keep.py",
    ]


def test_reinclude_cannot_reach_into_an_ignored_directory(workspace):
    write(workspace, ".gitignore", "out/\n")
    write(workspace, ".zgignore", "!out/keep.py\n")
    write(workspace, "out/keep.py")
    write(workspace, "main.py")

    assert listed(workspace) == ["main.py"]  # as git and ripgrep: re-include the dir itself


def test_global_ignore_file_from_xdg_config_home(workspace, isolated_config):
    assert global_ignore_path() == isolated_config / "zgrep" / "ignore"
    write(isolated_config, "zgrep/ignore", "*.snapshot\nfixtures/\n")
    write(workspace, "a.snapshot", "s\n")
    write(workspace, "fixtures/data.py")
    write(workspace, "code.py")

    assert listed(workspace) == ["code.py"]


def test_workspace_files_outrank_the_global_file_which_outranks_defaults(workspace, tmp_path):
    global_file = write(tmp_path, "global-ignore", "!dist/\n*.py\n")
    write(workspace, ".zgignore", "!main.py\n")
    write(workspace, "dist/bundle.js", "var a;\n")
    write(workspace, "main.py")
    write(workspace, "other.py")

    assert listed(workspace, global_ignore_file=global_file) == ["dist/bundle.js", "main.py"]


def test_global_ignore_path_defaults_to_home_config(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert global_ignore_path() == tmp_path / ".config" / "zgrep" / "ignore"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # must be absolute to count
    assert global_ignore_path() == tmp_path / ".config" / "zgrep" / "ignore"


def test_hidden_paths_skipped_unless_asked(workspace):
    write(workspace, ".env", "A=1\n")
    write(workspace, ".github/workflows/ci.yml", "on: push\n")
    write(workspace, ".gitignore", "*.tmp\n")
    write(workspace, "src/.hidden.py")
    write(workspace, "src/seen.py")

    assert listed(workspace) == ["src/seen.py"]
    assert listed(workspace, include_hidden=True) == [
        ".env",
        ".github/workflows/ci.yml",
        "src/.hidden.py",
        "src/seen.py",
    ]


def test_explicit_reinclude_admits_a_hidden_path(workspace):
    write(workspace, ".zgignore", "!.github/\n")
    write(workspace, ".github/workflows/ci.yml", "on: push\n")
    write(workspace, ".env", "A=1\n")

    assert listed(workspace) == [".github/workflows/ci.yml"]


def test_builtin_defaults(workspace):
    skipped = [
        "node_modules/pkg/index.js",
        "web/node_modules/x.js",
        "app.min.js",
        "s.min.css",
        "app.js.map",
        "package-lock.json",
        "sub/Cargo.lock",
        "go.sum",
        "logo.PNG",
        "photo.jpg",
        "lib.so",
        "a.whl",
        "doc.pdf",
        "font.woff2",
        "__pycache__/m.pyc",
        "dist/out.js",
        "build/gen.py",
        "target/debug/x.rs",
        ".venv/lib/site.py",
        "venv/bin/activate",
    ]
    for rel in skipped:
        write(workspace, rel, "data\n")
    write(workspace, "app.js", "var a;\n")
    write(workspace, "src/build.py")  # a *file* named like a default directory stays

    assert listed(workspace) == ["app.js", "src/build.py"]


def test_state_and_git_dirs_never_listed_even_with_hidden(workspace):
    write(workspace, ".zgrep/manifest.json", "{}\n")
    write(workspace, "a.py")
    assert listed(workspace, include_hidden=True) == ["a.py"]


def test_filter_paths_applies_the_same_rules(workspace):
    write(workspace, ".gitignore", "*.log\n")
    write(workspace, "a.py")
    write(workspace, "b.log", "x\n")
    write(workspace, "node_modules/m.js", "x\n")
    rules = IgnoreRules.for_root(workspace)
    got = filter_paths(workspace, rules, ["a.py", "b.log", "node_modules/m.js", "missing.py"])
    assert got == ["a.py"]


# --- symlinks ----------------------------------------------------------------------------


def test_symlink_loops_do_not_hang_and_dir_links_are_not_followed(workspace, tmp_path):
    write(workspace, "a/real.py")
    os.symlink("..", workspace / "a" / "up")  # loop back to the root
    os.symlink("self", workspace / "self")  # a link to itself
    os.symlink("a", workspace / "alias")  # a second name for a directory
    outside = write(tmp_path, "outside.py")
    os.symlink(outside, workspace / "escape.py")  # a file outside the workspace
    os.symlink("a/real.py", workspace / "inner_link.py")  # a file inside: kept

    assert listed(workspace) == ["a/real.py", "inner_link.py"]


def test_given_paths_get_the_listings_confinement(workspace, tmp_path):
    """Paths from a hook, `--paths-from` or the watcher: a link out, or a symlinked directory on
    the way, is refused by filter_paths, stat_files and read_file alike."""
    write(workspace, "a/real.py")
    write(tmp_path, "etc/passwd", "root:x:0:0\n")
    os.symlink(tmp_path / "etc", workspace / "etc_link")  # a directory outside
    os.symlink(tmp_path / "etc" / "passwd", workspace / "creds.py")  # a file outside
    os.symlink("a", workspace / "alias")  # a directory inside: never entered either
    given = ["etc_link/passwd", "creds.py", "alias/real.py", "a/../etc_link/passwd", "a/real.py"]
    assert filter_paths(workspace, IgnoreRules.for_root(workspace), given) == ["a/real.py"]
    assert stat_files(workspace, given).keys() == {"a/real.py"}
    for rel in given[:-1]:
        assert read_file(workspace, rel, max_bytes=MiB) == Skip(rel, "outside_workspace")
    assert isinstance(read_file(workspace, "a/real.py", max_bytes=MiB), LoadedFile)


def test_a_symlinked_directory_deeper_on_the_way_is_refused_for_every_path_below_it(
    workspace, tmp_path
):
    """One Confinement serves a whole run: a link three levels down refuses everything under it, and its
    siblings and parents stay readable, whichever path is asked first."""
    write(workspace, "a/b/c/real.py")
    write(workspace, "a/b/keep.py")
    write(tmp_path, "out/d/secret.py", "secret = 1\n")
    os.symlink(tmp_path / "out", workspace / "a" / "b" / "link")
    confinement = Confinement(workspace)
    asked = ["a/b/link/d/secret.py", "a/b/c/real.py", "a/b/link/d/secret.py", "a/b/keep.py"]
    got = [read_file(workspace, rel, max_bytes=MiB, confinement=confinement) for rel in asked]
    assert got[0] == got[2] == Skip("a/b/link/d/secret.py", "outside_workspace")
    assert isinstance(got[1], LoadedFile) and isinstance(got[3], LoadedFile)
    stats: dict[str, tuple[int, int]] = {}
    assert list_files(workspace, IgnoreRules.for_root(workspace), stats=stats) == [
        "a/b/c/real.py",
        "a/b/keep.py",
    ]
    assert stats == stat_files(workspace, ["a/b/c/real.py", "a/b/keep.py"])


def test_tracked_directory_swapped_for_a_link_out_is_not_listed(tmp_path):
    """git's index still lists `conf/app.py` after `conf` becomes a symlink out of the workspace."""
    root = make_repo(tmp_path / "ws")
    write(root, "conf/app.py")
    write(root, "keep.py")
    commit_all(root)
    write(tmp_path, "elsewhere/app.py", "secret = 1\n")
    shutil.rmtree(root / "conf")
    os.symlink(tmp_path / "elsewhere", root / "conf")
    assert listed(root) == ["keep.py"]


# --- reading -----------------------------------------------------------------------------


def test_read_text_file(tmp_path):
    path = write(tmp_path, "ok.py", "print('héllo')\n")
    got = read_file(tmp_path, "ok.py", max_bytes=MiB)
    assert isinstance(got, LoadedFile)
    assert got.text == "print('héllo')\n"
    assert got.size == path.stat().st_size
    assert got.mtime_ns == path.stat().st_mtime_ns
    assert got.mtime == pytest.approx(path.stat().st_mtime)
    import hashlib

    assert got.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_utf8_bom_is_allowed_and_stripped(tmp_path):
    write(tmp_path, "bom.py", b"\xef\xbb\xbfx = 1\n")
    got = read_file(tmp_path, "bom.py", max_bytes=MiB)
    assert isinstance(got, LoadedFile) and got.text == "x = 1\n"


def test_binary_file(tmp_path):
    write(tmp_path, "blob.dat", b"header\x00\x01\x02" + b"a" * 100)
    assert read_file(tmp_path, "blob.dat", max_bytes=MiB) == Skip("blob.dat", "binary")


def test_nul_after_first_8k_is_still_text_if_utf8(tmp_path):
    write(tmp_path, "late.txt", b"a" * 9000 + b"\x00")
    got = read_file(tmp_path, "late.txt", max_bytes=MiB)
    assert isinstance(got, LoadedFile) and got.text == "a" * 9000 + "\x00" and got.size == 9001


def test_a_binary_file_over_the_size_limit_is_too_large_and_under_it_binary(tmp_path):
    write(tmp_path, "big.bin", b"\x00" * 5000)
    assert read_file(tmp_path, "big.bin", max_bytes=4096) == Skip("big.bin", "too_large")
    assert read_file(tmp_path, "big.bin", max_bytes=MiB) == Skip("big.bin", "binary")


def test_invalid_utf8(tmp_path):
    write(tmp_path, "latin1.txt", "café".encode("latin-1"))
    assert read_file(tmp_path, "latin1.txt", max_bytes=MiB) == Skip("latin1.txt", "not_utf8")


def test_fifty_mib_file_is_too_large(tmp_path):
    with open(tmp_path / "huge.txt", "wb") as fh:
        fh.truncate(50 * MiB)  # sparse: instant to create, slow to read if we ever did
    assert read_file(tmp_path, "huge.txt", max_bytes=MiB) == Skip("huge.txt", "too_large")


def test_size_cap_is_inclusive(tmp_path):
    write(tmp_path, "exact.txt", b"a" * 100)
    assert isinstance(read_file(tmp_path, "exact.txt", max_bytes=100), LoadedFile)
    assert read_file(tmp_path, "exact.txt", max_bytes=99) == Skip("exact.txt", "too_large")


def test_vanished_between_listing_and_reading(tmp_path):
    write(tmp_path, "a.py")
    write(tmp_path, "b.py")
    rels = list_files(tmp_path, IgnoreRules.for_root(tmp_path))
    (tmp_path / "b.py").unlink()
    results = [read_file(tmp_path, rel, max_bytes=MiB) for rel in rels]
    assert results[1] == Skip("b.py", "vanished")
    assert stat_files(tmp_path, rels).keys() == {"a.py"}


def test_not_regular_files(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # opening a FIFO must not block
    (tmp_path / "dir").mkdir()
    os.symlink("loop", tmp_path / "loop")
    for rel in ("pipe", "dir", "loop"):
        assert read_file(tmp_path, rel, max_bytes=MiB) == Skip(rel, "not_regular")


def _read_as_nobody(root: Path, rel: str) -> str:
    """Fork, drop root to uid/gid 65534, and report read_file's verdict from the child."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            got = read_file(root, rel, max_bytes=MiB)
            msg = got.reason if isinstance(got, Skip) else "read"
        except BaseException as exc:  # report, never return into pytest in the child
            msg = f"error:{exc}"
        os.write(wfd, msg.encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as fh:
        msg = fh.read()
    os.waitpid(pid, 0)
    return msg


def test_unreadable_file():
    root = Path(tempfile.mkdtemp(prefix="zg-unreadable-"))  # world-traversable, unlike tmp_path
    try:
        root.chmod(0o755)
        secret = write(root, "secret.py")
        secret.chmod(0)
        if os.geteuid() != 0:
            assert read_file(root, "secret.py", max_bytes=MiB) == Skip("secret.py", "unreadable")
            return
        # root ignores mode 000, so read as an unprivileged user in a forked child instead
        verdict = _read_as_nobody(root, "secret.py")
        if verdict.startswith("error:"):
            pytest.skip(f"running as root and cannot drop privileges ({verdict})")
        assert verdict == "unreadable"
    finally:
        shutil.rmtree(root)


def test_discover_yields_files_and_counted_skip_reasons(tmp_path):
    write(tmp_path, "good.py")
    write(tmp_path, "blob.dat", b"\x00\x01")
    write(tmp_path, "bad.txt", b"\xff\xfe\xfa")
    with open(tmp_path / "big.txt", "wb") as fh:
        fh.truncate(2 * MiB)
    results = list(discover(tmp_path, IgnoreRules.for_root(tmp_path), max_bytes=MiB))

    assert [r.rel for r in results if isinstance(r, LoadedFile)] == ["good.py"]
    assert Counter(r.reason for r in results if isinstance(r, Skip)) == Counter(
        {"binary": 1, "not_utf8": 1, "too_large": 1}
    )


def test_stat_files_tracks_size_and_mtime(tmp_path):
    path = write(tmp_path, "a.py", "x = 1\n")
    before = stat_files(tmp_path, ["a.py"])
    os.utime(path, ns=(1_000_000_000, 2_000_000_000))
    after = stat_files(tmp_path, ["a.py"])
    assert before["a.py"][0] == 6
    assert after["a.py"] == (6, 2_000_000_000)
