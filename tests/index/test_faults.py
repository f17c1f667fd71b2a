"""Bad input and faults (issue 2): one clear line, the right exit code, nothing lost or duplicated."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import ZG
from corpus import (
    FILES,
    assert_consistent,
    assert_one_line_error,
    engine_index,
    engine_pids,
    json_out,
    make_repo,
    run_zg,
    state_files,
    store_rows,
    user_env,
)
from daemon_helpers import wait_for
from embedding_server import EmbeddingServer
from zgrep.locking import ENGINE_LOCK, lock_holder
from zgrep.store.native import holder as engine_holder

MiB = 1024 * 1024
BLOB = b"\x7fELF\x00\x00\x01" * 100
TEXT_LIKE_BLOB = b"def late_blob():\n    return 'latewords'\n".ljust(len(BLOB) - 1, b"#") + b"\n"
GOOD = FILES["src/net/retry.py"]


def index_json(root: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = run_zg("index", "--json", *args, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --- files that cannot be indexed --------------------------------------------------------------------------


def test_binary_huge_and_undecodable_files_are_skipped_and_counted(tmp_path):
    root = make_repo(tmp_path / "repo", {"good.py": GOOD, "victim.py": FILES["src/auth/users.py"]})
    env = user_env(tmp_path / "user")
    assert index_json(root, env)["files"] == 2
    (root / "blob.dat").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    with open(root / "huge.txt", "wb") as fh:
        fh.truncate(50 * MiB)  # sparse: 50 MiB without writing them
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1"))
    (root / "victim.py").write_bytes(
        b"def f():\n    return '\xff\xfe'\n"
    )  # an indexed file turns undecodable
    report = index_json(root, env)
    assert report["skipped"] == {"binary": 1, "too_large": 1, "not_utf8": 2}
    assert (report["changed"], report["deleted"], report["files"]) == (0, 1, 1)
    assert set(state_files(root)) == {"good.py"}
    human = run_zg("index", cwd=root, env=env)
    assert human.returncode == 0 and human.stderr == ""
    assert "skipped: 1 binary, 2 not_utf8, 1 too_large;" in human.stdout
    # the undecodable file's old chunks are gone from search, not stale
    proc = run_zg(
        "search", "display name directory", "--mode-search", "lexical", "--json", cwd=root, env=env
    )
    assert all(h["path"] == "good.py" for h in json_out(proc)["hits"])


def test_an_unchanged_binary_file_is_counted_from_its_verdict_and_read_again_once_it_changes(
    tmp_path,
):
    root = make_repo(tmp_path / "repo", {"good.py": GOOD, "blob.dat": BLOB})
    env = user_env(tmp_path / "user")
    assert index_json(root, env)["files"] == 1
    assert index_json(root, env)["skipped"] == {"binary": 1}  # read once more, and its verdict kept
    blob = root / "blob.dat"

    def rewrite(data: bytes, mtime_ns: int) -> None:
        blob.write_bytes(data)
        os.utime(blob, ns=(mtime_ns, mtime_ns))

    first = blob.stat().st_mtime_ns
    rewrite(TEXT_LIKE_BLOB, first)  # same size and mtime: not read again
    report = index_json(root, env)
    assert (report["skipped"], report["files"]) == ({"binary": 1}, 1)
    rewrite(TEXT_LIKE_BLOB, first + 10**9)  # a new mtime: read, and indexed
    report = index_json(root, env)
    assert (report["skipped"], report["changed"], report["files"]) == ({}, 1, 2)
    rewrite(BLOB, first + 2 * 10**9)  # binary again: dropped, its verdict kept
    report = index_json(root, env)
    assert (report["skipped"], report["deleted"], report["files"]) == ({"binary": 1}, 1, 1)
    rewrite(TEXT_LIKE_BLOB, first + 2 * 10**9)
    assert index_json(root, env)["skipped"] == {"binary": 1}
    report = index_json(root, env, "--full")  # --full trusts no verdict: it reads the file
    assert (report["skipped"], report["files"]) == ({}, 2)
    assert set(state_files(root)) == {"good.py", "blob.dat"}


@pytest.mark.parametrize(
    "recorded",
    [
        b"\x00garbage{",
        b'{"files": []}',
        b'{"files": {"good.py": [1, 2, "binary"], "blob.dat": [1, 2, "erased"]}}',
        b'{"files": {"good.py": [-1, 2, "binary"]}}',
    ],
)
def test_a_damaged_or_crafted_skip_record_hides_no_file(tmp_path, recorded):
    root = make_repo(tmp_path / "repo", {"good.py": GOOD})
    env = user_env(tmp_path / "user")
    (root / ".zgrep").mkdir()
    (root / ".zgrep" / "skipped.json").write_bytes(recorded)
    report = index_json(root, env)
    assert (report["files"], report["skipped"]) == (1, {})
    # a record that came with the checkout (a clone writes its own mtimes) names another file's time
    (root / "other.py").write_text("def other_words():\n    return 1\n")
    st = (root / "other.py").stat()
    claim = {"other.py": [st.st_size, st.st_mtime_ns - 1, "binary"], "good.py": [1, 1, "binary"]}
    (root / ".zgrep" / "skipped.json").write_text(json.dumps({"files": claim}))
    report = index_json(root, env)
    assert (report["files"], report["skipped"]) == (2, {})
    assert set(state_files(root)) == {"good.py", "other.py"}


def test_size_cap_is_configurable(tmp_path):
    root = make_repo(
        tmp_path / "repo", {"good.py": GOOD, "big.md": "# Big\n\n" + "word " * 600 + "\n"}
    )
    env = user_env(tmp_path / "user")
    (root / ".zgrep.toml").write_text("[index]\nmax_file_bytes = 2000\n")
    report = index_json(root, env)
    assert report["skipped"] == {"too_large": 1} and report["files"] == 1


def test_a_file_deleted_between_listing_and_reading(tmp_path, monkeypatch):
    """The race is forced: the real listing (which stats each file) runs, then a file disappears before
    it is read; a scoped run lists by `filter_paths` and stats apart, so a file can go between the two.

    (Wrapping `list_files`/`filter_paths` is the only way to land exactly in those windows.)"""
    import zgrep.index.discovery as discovery

    root = make_repo(
        tmp_path / "repo",
        {"a.py": GOOD, "b.py": FILES["src/auth/users.py"], "c.md": "# C\n\nsee\n"},
    )
    assert engine_index(root)["files"] == 3
    (root / "b.py").write_text(FILES["src/auth/users.py"] + "\n# edited\n")
    (root / "new.py").write_text("def gone_soon():\n    return 1\n")
    real_list = discovery.list_files

    def list_then_delete(
        root_: Path, rules: Any, tally: Any = None, stats: Any = None
    ) -> list[str]:
        listed = real_list(root_, rules, tally, stats)
        (root / "b.py").unlink()  # after listing and stat, before read
        return listed

    monkeypatch.setattr(discovery, "list_files", list_then_delete)
    report = engine_index(root)
    assert report["skipped"] == {"vanished": 1}
    assert (report["changed"], report["deleted"], report["files"]) == (1, 1, 3)
    monkeypatch.undo()

    (root / "new.py").write_text("def gone_soon():\n    return 2\n")
    real_filter = discovery.filter_paths

    def filter_then_delete(root_: Path, rules: Any, rels: Any) -> list[str]:
        kept = real_filter(root_, rules, rels)
        (root / "new.py").unlink()  # after the scoped listing, before stat
        return kept

    monkeypatch.setattr(discovery, "filter_paths", filter_then_delete)
    report = engine_index(root, paths=["new.py"])
    assert report["skipped"] == {"vanished": 1} and report["deleted"] == 1
    monkeypatch.undo()
    assert set(state_files(root)) == {"a.py", "c.md"}
    assert_consistent(root)


@pytest.mark.parametrize("kind", ["git", "plain"])
def test_symlink_loops_do_not_hang_or_fail(tmp_path, kind):
    root = tmp_path / "ws"
    if kind == "git":
        make_repo(root, {"good.py": GOOD}, commit=False)
    else:
        root.mkdir()
        (root / "good.py").write_text(GOOD)
    (root / "sub").mkdir()
    os.symlink("loop", root / "loop")
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    os.symlink("..", root / "sub" / "up")  # a directory cycle
    env = user_env(tmp_path / "user")
    proc = run_zg("index", "--json", cwd=root, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"] == 1
    assert set(state_files(root)) == {"good.py"}
    assert_one_line_error(run_zg("read", "loop", cwd=root, env=env), "cannot read loop")


@pytest.mark.e2e
def test_an_unreadable_file_is_skipped_and_counted(tmp_path):
    root = make_repo(
        tmp_path / "repo", {"good.py": GOOD, "secret.py": "def hidden_treasure():\n    return 42\n"}
    )
    env = user_env(tmp_path / "user")
    (root / "secret.py").chmod(0)
    command = [str(Path(sys.executable).with_name("zg")), "index", "--json"]
    if os.geteuid() == 0:
        # root reads mode-000 files; without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH it cannot, like any user
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["skipped"] == {"unreadable": 1}
    assert report["files"] == 1
    assert set(state_files(root)) == {"good.py"}


# --- queries -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("faults")
    root = make_repo(base / "repo")
    env = user_env(base / "user")
    assert run_zg("index", cwd=root, env=env).returncode == 0
    return {"root": root, "env": env}


@pytest.mark.parametrize(
    "query",
    [
        " ".join(["how", "are", "retries", "with", "exponential", "backoff", "done"] * 400)[
            :10_000
        ],
        "x" * 10_000,
        ('parse_url("a\\"b") and path in ["x"] or 1==1 \\ ' * 300)[:10_000],
    ],
    ids=["words", "one-token", "quotes-and-expr-syntax"],
)
def test_a_query_of_10000_characters(ws, query):
    assert len(query) == 10_000
    proc = run_zg("search", query, "--json", cwd=ws["root"], env=ws["env"])
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["query"] == query
    if query.startswith("how"):
        assert doc["hits"][0]["path"] == "src/net/retry.py"


@pytest.mark.parametrize(
    "args",
    [
        ("search", ""),
        ("search", "   "),
        ("search",),
        ("search", "-q", ""),
        ("search", "retry", "-q", " \t"),
    ],
)
def test_an_empty_query_is_refused(ws, args):
    proc = run_zg(*args, cwd=ws["root"], env=ws["env"])
    assert_one_line_error(proc, "empty query")
    assert proc.stdout == ""


def test_a_workspace_with_nothing_to_index(tmp_path):
    root = tmp_path / "empty"
    (root / "sub").mkdir(parents=True)
    (root / "image.dat").write_bytes(b"\x00" * 64)
    env = user_env(tmp_path / "user")
    proc = run_zg("index", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        "indexed 0 changed files, removed 0, 0 unchanged; skipped: 1 binary; ignored: none; 0 chunks"
    )
    assert "0 files in the index" in proc.stdout
    proc = run_zg("search", "anything at all", cwd=root, env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    assert json_out(run_zg("search", "anything", "--json", cwd=root, env=env))["hits"] == []
    st = json.loads(run_zg("status", "--json", cwd=root, env=env).stdout)
    assert (st["indexed"], st["files"], st["chunks"]) == (True, 0, 0)


# --- the index held by another process --------------------------------------------------------------------

HOLD_ENGINE = """
import sys, time
from pathlib import Path
from zgrep.engine import Engine
engine = Engine(Path(sys.argv[1]))
engine.open_store(create=False)
print("holding", flush=True)
time.sleep(60)
"""

HOLD_LITE = """
import sys, time
from pymilvus import MilvusClient
client = MilvusClient(sys.argv[1])
print("holding", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("holder", ["zg-engine", "bare-milvus-lite"])
def test_an_index_held_by_another_process_fails_fast_naming_it(ws, holder):
    root = ws["root"]
    script, target = (
        (HOLD_ENGINE, str(root))
        if holder == "zg-engine"
        else (HOLD_LITE, str(root / ".zgrep" / "milvus.db"))
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, target],
        env=ws["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()
        with open(root / "docs" / "guide.md", "a") as fh:
            fh.write("\nOne more line, so `zg index` has something to write.\n")
        for args in (("search", "retry", "--mode", "direct"), ("index",)):
            out = run_zg(
                *args, cwd=root, env={**ws["env"], "ZG_LOCK_TIMEOUT": "1"}, timeout=90
            )  # fails, never waits
            assert_one_line_error(out, f"held by pid {proc.pid}")
    finally:
        proc.kill()
        proc.wait()
    # once the holder is gone, everything works again
    assert run_zg("search", "retry", cwd=root, env=ws["env"]).returncode == 0


# --- kill -9 in the middle of an index run ----------------------------------------------------------------


def _generated_repo(root: Path, n: int = 400) -> Path:
    body = lambda i: "\n".join(f"    value_{j} = item * {j} + {i}" for j in range(10))  # noqa: E731
    files = {
        f"pkg{i % 8}/mod{i:03d}.py": f'"""Module {i}."""\n\n\ndef compute_token{i:03d}x(item):\n    """Compute quantity {i}."""\n{body(i)}\n'
        f'    return value_9\n\n\ndef render_token{i:03d}y(item):\n    """Render it."""\n{body(i)}\n'
        f"    return str(value_3)\n"
        for i in range(n)
    }
    return make_repo(root, files)


def _kill_once_state_is_written(
    root: Path, env: dict[str, str], saves: int, then: float = 0.0
) -> int:
    """Start `zg index`, SIGKILL it `then` seconds after it has saved its file state `saves` times;
    return how many files the state records."""
    state = root / ".zgrep" / "files.json"
    seen = state.stat().st_mtime_ns if state.exists() else None
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("zg")), "index"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    changes = 0
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        mtime = state.stat().st_mtime_ns if state.exists() else None
        if mtime != seen:
            seen, changes = mtime, changes + 1
            if changes >= saves:
                break
        time.sleep(0.001)
    time.sleep(then)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "zg index finished before it could be killed"
    return len(state_files(root)) if state.exists() else 0


@pytest.mark.e2e
def test_kill_9_during_index_then_index_completes_without_duplicates(tmp_path):
    root = _generated_repo(tmp_path / "big")
    env = user_env(tmp_path / "user")
    recorded = _kill_once_state_is_written(root, env, saves=1)
    assert 0 < recorded < 400  # killed part-way
    # and again in the resumed run, this time in the middle of writing a batch
    recorded = _kill_once_state_is_written(root, env, saves=1, then=0.03)
    assert 0 < recorded < 400
    report = index_json(root, env)
    # (it resumes where the killed run stopped, or rebuilds when Milvus and the state disagree)
    assert report["files"] == 400 and 400 - recorded <= report["changed"] <= 400
    rows = assert_consistent(root)
    assert len(rows) == 1200 and len({r["path"] for r in rows}) == 400
    assert json.loads((root / ".zgrep" / "manifest.json").read_text())["complete"] is True
    # exactly the chunks a clean rebuild produces
    recovered = {r["id"] for r in rows}
    assert engine_index(root, full=True)["embedded"] == 0
    assert {r["id"] for r in store_rows(root)} == recovered
    # every file is searchable by its own function name
    from zgrep.dispatch import handle
    from zgrep.engine import Engine

    engine = Engine(root)
    try:
        for i in range(0, 400, 7):
            hits = handle(
                engine,
                "search",
                {"queries": [f"compute_token{i:03d}x"], "refresh": "off", "limit": 1},
            )["hits"]
            assert hits[0]["path"] == f"pkg{i % 8}/mod{i:03d}.py"
    finally:
        engine.close()


# --- embedding servers that fail -------------------------------------------------------------------------


def _remote_config(
    root: Path, url: str, env: dict[str, str], allow_remote: bool = True, timeout: int = 1
) -> None:
    """A remote-embedding `.zgrep.toml`, trusted (`zg trust`) as its settings require: by the user of `env`
    and by this process's user (assert_consistent opens the store here)."""
    (root / ".zgrep.toml").write_text(
        '[embedding]\nprovider = "ollama"\nmodel = "test-embed"\n'
        f'url = "{url}"\nallow_remote = {str(allow_remote).lower()}\nmax_retries = 1\ntimeout = {timeout}\n'
    )
    for user in (env, None):
        assert run_zg("trust", cwd=root, env=user).returncode == 0


@pytest.fixture
def server():
    with EmbeddingServer(dim=8) as srv:
        yield srv


def test_embedding_server_500s_give_one_line_and_leave_the_index_consistent(tmp_path, server):
    root = make_repo(
        tmp_path / "repo", {rel: FILES[rel] for rel in ("src/net/retry.py", "web/render.js")}
    )
    env = user_env(tmp_path / "user")
    _remote_config(root, server.url, env)
    server.fail(500, times=2)
    proc = run_zg("index", cwd=root, env=env)
    assert_one_line_error(proc, "HTTP 500", "after 2 attempts")
    assert len(server.requests) == 2  # one try plus max_retries = 1, then it gives up
    # healthy again: a later run completes and the index matches the state
    report = index_json(root, env)
    assert (report["changed"], report["files"]) == (2, 2)
    assert_consistent(root)
    hits = json_out(run_zg("search", "render template", "--json", cwd=root, env=env))["hits"]
    assert hits[0]["path"] == "web/render.js"
    st = json.loads(run_zg("status", "--json", cwd=root, env=env).stdout)
    assert (st["model"], st["dim"]) == ("ollama:test-embed", 8)


def test_embedding_server_timeouts_mid_incremental_keep_the_old_index(tmp_path, server):
    root = make_repo(
        tmp_path / "repo", {rel: FILES[rel] for rel in ("src/net/retry.py", "web/render.js")}
    )
    env = user_env(tmp_path / "user")
    _remote_config(root, server.url, env)
    assert index_json(root, env)["files"] == 2
    before = state_files(root)
    (root / "web/render.js").write_text(FILES["web/render.js"] + "\n// pangolin\n")
    (root / "added.py").write_text("def armadillo_count():\n    return 3\n")
    server.stall(5, times=2)
    proc = run_zg("index", cwd=root, env=env)
    assert_one_line_error(proc, "timed out", "after 2 attempts")
    # nothing half-done is recorded: the edited file keeps its old state, the new one is absent
    after = state_files(root)
    assert after == before
    assert_consistent(root)
    report = index_json(root, env)
    assert (report["changed"], report["unchanged"], report["files"]) == (2, 1, 3)
    assert_consistent(root)
    hits = json_out(run_zg("search", "armadillo", "--json", "--refresh", "off", cwd=root, env=env))[
        "hits"
    ]
    assert hits[0]["path"] == "added.py"


def test_remote_provider_without_opt_in_is_refused_and_sends_nothing(tmp_path, server):
    root = make_repo(tmp_path / "repo", {"a.py": GOOD})
    env = user_env(tmp_path / "user")
    _remote_config(root, server.url, env, allow_remote=False)
    for args in (("index",), ("search", "retry")):
        assert_one_line_error(
            run_zg(*args, cwd=root, env=env), "allow_remote = true", str(root / ".zgrep.toml")
        )
    (root / ".zgrep.toml").unlink()
    flagged = run_zg("index", "--model", "ollama:test-embed", cwd=root, env=env)
    assert_one_line_error(
        flagged,
        "sends code to the server at http://127.0.0.1:11434 (loopback",
        "allow_remote = true",
    )
    user_file = Path(env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(
        f'[embedding]\nprovider = "ollama"\nurl = "{server.url}"\nallow_remote = true\n'
    )
    assert_one_line_error(run_zg("index", cwd=root, env=env), "user-wide config cannot opt in")
    assert server.requests == []


def test_a_search_killed_while_it_embeds_its_query_leaves_no_engine_behind(tmp_path, server):
    """The store opens beside the query's embedding; kill -9 then ends the engine it had started."""
    root = make_repo(
        tmp_path / "repo", {rel: FILES[rel] for rel in ("src/net/retry.py", "web/render.js")}
    )
    env = user_env(tmp_path / "user")
    _remote_config(root, server.url, env, timeout=60)
    assert index_json(root, env)["files"] == 2
    before = json_out(
        run_zg("search", "render template", "--json", "--mode", "direct", cwd=root, env=env)
    )["hits"]
    asked = len(server.requests)
    server.stall(60)
    search = subprocess.Popen(
        [ZG, "search", "render template", "--json", "--mode", "direct"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: len(server.requests) > asked and engine_pids(root),
            60,
            "the search to embed its query with its engine started",
        )
        search.send_signal(signal.SIGKILL)
        search.wait()
    finally:
        search.kill()
        search.wait()
    server.release()
    wait_for(lambda: not engine_pids(root), 30, "the engine to exit after its search was killed")
    assert (
        engine_holder(root / ".zgrep" / "milvus.db") is None
        and lock_holder(root / ".zgrep" / ENGINE_LOCK) is None
    )
    after = json_out(
        run_zg("search", "render template", "--json", "--mode", "direct", cwd=root, env=env)
    )["hits"]
    assert after == before
    assert not engine_pids(root), "a finished search left its engine running"


def test_a_search_whose_query_cannot_be_embedded_leaves_no_engine_running(tmp_path, server):
    """A search that fails after its store began to open closes that store's engine before it exits."""
    root = make_repo(
        tmp_path / "repo", {rel: FILES[rel] for rel in ("src/net/retry.py", "web/render.js")}
    )
    env = user_env(tmp_path / "user")
    _remote_config(root, server.url, env)
    assert index_json(root, env)["files"] == 2
    server.fail(
        500, times=4
    )  # two tries each: the query's embedding and the width probe the store opening asks
    proc = run_zg("search", "render template", "--mode", "direct", cwd=root, env=env)
    assert_one_line_error(proc, "HTTP 500")
    assert len(server._faults) == 0, "a failure was left for the next search"
    assert not engine_pids(root), "the failed search left its engine running"
    assert (
        engine_holder(root / ".zgrep" / "milvus.db") is None
        and lock_holder(root / ".zgrep" / ENGINE_LOCK) is None
    )
    hits = json_out(
        run_zg("search", "render template", "--json", "--mode", "direct", cwd=root, env=env)
    )["hits"]
    assert hits[0]["path"] == "web/render.js"
