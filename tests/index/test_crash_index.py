"""Index consistency (issue 8): a full rebuild switches atomically, a kill -9 never leaves a silently
empty or partial index, damaged state is named and `zg index --full` recovers from it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import ZG
from corpus import (
    FILES,
    assert_consistent,
    assert_one_line_error,
    collections,
    engine_pids,
    make_repo,
    run_zg,
    user_env,
)
from daemon_helpers import User, wait_for

SMALL = {rel: FILES[rel] for rel in ("src/auth/users.py", "src/net/retry.py", "web/render.js")}


def generated_files(n: int) -> dict[str, str]:
    """`n` Python modules, each defining a function named after its number (one chunk per definition)."""
    body = lambda i: "\n".join(f"    value_{j} = item * {j} + {i}" for j in range(10))  # noqa: E731
    return {
        f"pkg{i % 8}/mod{i:03d}.py": f'"""Module {i}."""\n\n\ndef crashtoken{i:03d}q(item):\n    """Compute quantity {i}."""\n{body(i)}\n'
        f"    return value_9\n"
        for i in range(n)
    }


def search(
    root: Path, env: dict[str, str], query: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return run_zg("search", "--json", "--preview", "none", *extra, query, cwd=root, env=env)


def top_path(proc: subprocess.CompletedProcess[str]) -> str | None:
    assert proc.returncode in (0, 1), proc.stderr
    hits = json.loads(proc.stdout)["hits"]
    return hits[0]["path"] if hits else None


@pytest.fixture
def indexed(tmp_path: Path) -> dict[str, Any]:
    root = make_repo(tmp_path / "repo", SMALL)
    env = user_env(tmp_path / "user")
    out = run_zg("index", "--mode", "direct", cwd=root, env=env)
    assert out.returncode == 0, out.stderr
    return {"root": root, "env": env}


# --- item 1: searches keep answering while --full rebuilds ----------------------------------------------------


@pytest.mark.e2e
def test_daemon_answers_searches_from_the_old_index_while_a_full_rebuild_runs(
    tmp_path: Path,
) -> None:
    user = User(tmp_path / "user")
    root = make_repo(tmp_path / "repo", generated_files(240))
    user.start()
    try:
        assert user.zg("index", "--mode", "server", cwd=root).returncode == 0
        rebuild = user.popen("index", "--full", "--mode", "server", "--json", cwd=root)
        wait_for(
            lambda: any(
                w["root"] == str(root) and w["job_running"]
                for w in user.server_status()["workspaces"]
            ),
            60,
            "the rebuild to start",
        )
        answered = 0
        while any(
            w["root"] == str(root) and w["job_running"] for w in user.server_status()["workspaces"]
        ):
            i = (answered * 37) % 240
            out = user.zg(
                "search",
                "--json",
                "--refresh",
                "off",
                "--mode",
                "server",
                f"crashtoken{i:03d}q",
                cwd=root,
            )
            assert out.returncode == 0, (answered, out.returncode, out.stderr)
            assert json.loads(out.stdout)["hits"][0]["path"] == f"pkg{i % 8}/mod{i:03d}.py"
            callers = user.zg("callers", "--json", f"crashtoken{i:03d}q", cwd=root)
            assert callers.returncode in (0, 1), callers.stderr
            assert json.loads(callers.stdout)["definitions"], callers.stdout
            answered += 1
        stdout, stderr = rebuild.communicate(timeout=120)
        assert rebuild.returncode == 0, stderr
        assert answered >= 1, "the rebuild finished before a search could run during it"
        out = user.zg(
            "search", "--json", "--refresh", "off", "--mode", "server", "crashtoken007q", cwd=root
        )
        assert json.loads(out.stdout)["hits"][0]["path"] == "pkg7/mod007.py"
    finally:
        user.zg("server", "off")
    assert_consistent(root)
    state = root / ".zgrep"
    assert collections(root) == [json.loads((state / "manifest.json").read_text())["collection"]], (
        "old collection kept"
    )
    assert not (state / "rebuild.json").exists()


# --- item 2: kill -9 in a full rebuild ------------------------------------------------------------------------


def _rebuild_started(state: Path) -> bool:
    """A rebuild has begun writing: its marker (or, before issue 8, an incomplete manifest)."""
    return (state / "rebuild.json").exists() or json.loads(
        (state / "manifest.json").read_text()
    ).get("complete") is False


def _kill_when(proc: subprocess.Popen[bytes], ready: Any) -> None:
    """SIGKILL `proc` as soon as `ready()` holds."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and not ready() and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "zg index --full finished before it could be killed"


@pytest.mark.e2e
@pytest.mark.parametrize("moment", ["rebuild started", "file state written"])
def test_kill_9_during_full_keeps_a_whole_index(tmp_path: Path, moment: str) -> None:
    root = make_repo(tmp_path / "repo", generated_files(240))
    env = user_env(tmp_path / "user")
    assert run_zg("index", "--mode", "direct", cwd=root, env=env).returncode == 0
    state = root / ".zgrep"
    saved = (state / "files.json").stat().st_mtime_ns
    proc = subprocess.Popen(
        [ZG, "index", "--full", "--mode", "direct"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if moment == "rebuild started":
        ready = lambda: _rebuild_started(state)  # noqa: E731
    else:
        ready = lambda: (state / "files.json").stat().st_mtime_ns != saved  # noqa: E731
    _kill_when(proc, ready)
    wait_for(lambda: not engine_pids(root), 30, "the killed index's engine to exit")
    # without refreshing, searches still answer from the complete old index
    for i in (3, 120, 239):
        assert (
            top_path(search(root, env, f"crashtoken{i:03d}q", "--refresh", "off"))
            == f"pkg{i % 8}/mod{i:03d}.py"
        )
    out = run_zg("index", "--json", "--mode", "direct", cwd=root, env=env)
    assert out.returncode == 0, out.stderr
    rows = assert_consistent(root)
    assert len({r["path"] for r in rows}) == 240
    assert not (state / "rebuild.json").exists() and not (state / "relations.next.sqlite").exists()
    assert len(collections(root)) == 1, "the abandoned rebuild's collection"


@pytest.mark.e2e
def test_kill_9_of_the_daemon_during_full_keeps_a_whole_index(tmp_path: Path) -> None:
    user = User(tmp_path / "user")
    root = make_repo(tmp_path / "repo", generated_files(240))
    pid = user.start()
    try:
        assert user.zg("index", "--mode", "server", cwd=root).returncode == 0
        rebuild = user.popen("index", "--full", "--mode", "server", cwd=root)
        wait_for(
            lambda: _rebuild_started(root / ".zgrep") or rebuild.poll() is not None,
            60,
            "the rebuild to start",
        )
        assert rebuild.poll() is None, "the rebuild finished before the daemon could be killed"
        os.kill(pid, signal.SIGKILL)
        rebuild.communicate(timeout=60)
        wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "the daemon to go")
        wait_for(lambda: not engine_pids(root), 30, "the killed daemon's engine to exit")
    finally:
        user.zg("server", "off")
    env = {**user.env}
    assert (
        top_path(search(root, env, "crashtoken200q", "--refresh", "off", "--mode", "direct"))
        == "pkg0/mod200.py"
    )
    assert run_zg("index", "--mode", "direct", cwd=root, env=env).returncode == 0
    assert len({r["path"] for r in assert_consistent(root)}) == 240
    assert not (root / ".zgrep" / "rebuild.json").exists()


def test_rows_that_disagree_with_the_file_state_are_reported_then_repaired(
    indexed: dict[str, Any],
) -> None:
    root, env = indexed["root"], indexed["env"]
    from zgrep.engine import Engine

    engine = Engine(root)  # what a kill -9 right after dropping the collection left behind
    try:
        store = engine.open_store(create=False)
        store.drop()
        store.create()
    finally:
        engine.close()
    status = run_zg("status", "--mode", "direct", cwd=root, env=env)
    assert (
        status.returncode == 1 and "holds 0 chunks" in status.stdout and "zg index" in status.stdout
    ), status.stdout
    doctor = run_zg("doctor", cwd=root, env=env)
    assert doctor.returncode != 0 and "holds 0 chunks" in doctor.stdout, doctor.stdout
    out = run_zg("index", "--json", "--mode", "direct", cwd=root, env=env)
    report = json.loads(out.stdout)
    assert report["repaired"] is True and "held 0 chunks" in report["repair_reason"], report
    assert top_path(search(root, env, "getUserName", "--refresh", "off")) == "src/auth/users.py"
    assert_consistent(root)
    assert run_zg("status", "--mode", "direct", cwd=root, env=env).returncode == 0


# --- item 3: damage to .zgrep/milvus.db (the native engine's one data file) -----------------------------------


def _data_file(root: Path) -> Path:
    return root / ".zgrep" / "milvus.db"


def _overwrite_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 4 :] = os.urandom(len(data) - len(data) // 4)
    path.write_bytes(bytes(data))


DAMAGE = {
    "garbage bytes": lambda f: f.write_bytes(os.urandom(f.stat().st_size)),
    "truncated to nothing": lambda f: f.write_bytes(b""),
    "overwritten after the header": _overwrite_middle,
    "deleted database": lambda f: f.unlink(),
    "a Milvus Lite 3 directory in its place": lambda f: (
        f.unlink(),
        f.mkdir(),
        (f / "LOCK").write_text(""),
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_milvus_data_is_named_and_full_recovers(
    indexed: dict[str, Any], damage: str
) -> None:
    root, env = indexed["root"], indexed["env"]
    DAMAGE[damage](_data_file(root))
    status = run_zg("status", "--mode", "direct", cwd=root, env=env)
    assert status.returncode == 1 and "PROBLEM" in status.stdout, (status.stdout, status.stderr)
    assert "zg index" in status.stdout
    doctor = run_zg("doctor", cwd=root, env=env)
    assert doctor.returncode != 0, doctor.stdout
    unrefreshed = search(root, env, "getUserName", "--refresh", "off")
    assert_one_line_error(unrefreshed, "zg index")
    out = run_zg("index", "--full", "--json", "--mode", "direct", cwd=root, env=env)
    assert out.returncode == 0, out.stderr
    assert top_path(search(root, env, "getUserName", "--refresh", "off")) == "src/auth/users.py"
    assert_consistent(root)
    assert run_zg("status", "--mode", "direct", cwd=root, env=env).returncode == 0


def test_plain_index_repairs_damaged_milvus_data_and_says_so(indexed: dict[str, Any]) -> None:
    root, env = indexed["root"], indexed["env"]
    DAMAGE["garbage bytes"](_data_file(root))
    report = json.loads(run_zg("index", "--json", "--mode", "direct", cwd=root, env=env).stdout)
    assert report["repaired"] is True and "damaged" in report["repair_reason"], report
    assert report["changed"] == len(SMALL)
    assert_consistent(root)


def test_human_index_says_it_repaired(indexed: dict[str, Any]) -> None:
    root, env = indexed["root"], indexed["env"]
    DAMAGE["garbage bytes"](_data_file(root))
    out = run_zg("index", "--mode", "direct", cwd=root, env=env)
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 1, out.stdout
    assert "rebuilt the whole index" in out.stderr and "damaged" in out.stderr, out.stderr


# --- item 4: state files of the wrong JSON type ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name,content",
    [
        ("manifest.json", "[]"),
        ("manifest.json", '"x"'),
        ("files.json", '{"files": []}'),
        ("files.json", "[]"),
        ("files.json", '{"files": {"a.py": "abcde"}}'),
    ],
)
def test_state_files_of_the_wrong_type_give_one_line_naming_the_fix(
    indexed: dict[str, Any], name: str, content: str
) -> None:
    root, env = indexed["root"], indexed["env"]
    (root / ".zgrep" / name).write_text(content)
    for args in (("search", "getUserName"), ("index",), ("status",)):
        out = run_zg(*args, "--mode", "direct", cwd=root, env=env)
        assert_one_line_error(out, name, "zg index --full")
    out = run_zg("index", "--full", "--mode", "direct", cwd=root, env=env)
    assert out.returncode == 0, out.stderr
    assert top_path(search(root, env, "getUserName")) == "src/auth/users.py"


# --- item 6: an unreachable Milvus server; credentials in URIs ------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_is_named_and_its_credentials_masked(indexed: dict[str, Any]) -> None:
    root = indexed["root"]
    env = {**indexed["env"], "ZG_MILVUS_URI": f"http://alice:s3cret@127.0.0.1:{_closed_port()}"}
    for args in (("search", "getUserName"), ("index",), ("index", "--full")):
        out = run_zg(*args, "--mode", "direct", cwd=root, env=env)
        assert_one_line_error(out, "unreachable", "127.0.0.1")
        assert "s3cret" not in out.stderr
        assert "index --full" not in out.stderr, "advises a rebuild that cannot work"
    status = run_zg("status", "--json", "--mode", "direct", cwd=root, env=env)
    assert status.returncode == 1 and "unreachable" in json.loads(status.stdout)["problem"]
    assert "s3cret" not in status.stdout + status.stderr
    doctor = run_zg("doctor", cwd=root, env=env)
    assert doctor.returncode != 0 and "unreachable" in doctor.stdout, doctor.stdout
    assert "s3cret" not in doctor.stdout + doctor.stderr
