"""The embedded Milvus is milvus-lite's native engine in a child process (issue 22): it never outlives its
owner, an index written by another engine is refused with the fix, and status names the engine."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any


from corpus import assert_consistent, assert_one_line_error, engine_pids, make_repo, run_zg
from daemon_helpers import wait_for

from test_crash_index import SMALL, indexed  # noqa: F401 (the same small indexed repo, as a fixture)

HOLD = """
import sys, time
from pathlib import Path
from zgrep.engine import Engine
engine = Engine(Path(sys.argv[1]))
engine.open_store(create=False)
print("holding", flush=True)
time.sleep(120)
"""


def test_kill_9_of_its_owner_ends_the_engine_and_frees_the_index(indexed: dict[str, Any]) -> None:
    root, env = indexed["root"], indexed["env"]
    from zgrep.locking import ENGINE_LOCK, lock_holder
    from zgrep.store.native import holder

    owner = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "holding", (
            owner.stderr
        )
        engines = engine_pids(root)
        assert len(engines) == 1, engines
        busy = run_zg(
            "search", "retry", "--mode", "direct", cwd=root, env={**env, "ZG_LOCK_TIMEOUT": "1"}
        )
        assert_one_line_error(busy, f"held by pid {owner.pid}")
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    finally:
        owner.kill()
        owner.wait()
    wait_for(lambda: not engine_pids(root), 30, "the engine to exit after its owner was killed")
    data = root / ".zgrep" / "milvus.db"
    assert holder(data) is None and lock_holder(root / ".zgrep" / ENGINE_LOCK) is None, (
        "a stale lock"
    )
    out = run_zg("search", "retry_with_backoff", "--json", "--mode", "direct", cwd=root, env=env)
    assert (
        out.returncode == 0 and json.loads(out.stdout)["hits"][0]["path"] == "src/net/retry.py"
    ), out.stderr
    assert not engine_pids(root), "a finished zg left its engine running"


def test_an_index_written_by_milvus_lite_3_is_refused_naming_the_fix(
    indexed: dict[str, Any],
) -> None:
    root, env = indexed["root"], indexed["env"]
    state = root / ".zgrep"
    manifest = json.loads((state / "manifest.json").read_text())
    del manifest[
        "milvus_engine"
    ]  # what zg wrote before the native engine: Milvus Lite 3's directory, no engine
    (state / "manifest.json").write_text(json.dumps(manifest))
    (state / "milvus.db").unlink()
    (state / "milvus.db").mkdir()
    (state / "milvus.db" / "LOCK").write_text("")
    for args in (("search", "retry"), ("index",)):
        out = run_zg(*args, "--mode", "direct", cwd=root, env=env)
        assert_one_line_error(out, "Milvus Lite 3", "zg index --full")
    status = json.loads(run_zg("status", "--json", "--mode", "direct", cwd=root, env=env).stdout)
    assert "Milvus Lite 3" in status["problem"] and "zg index --full" in status["problem"]
    out = run_zg("index", "--full", "--mode", "direct", cwd=root, env=env)
    assert out.returncode == 0, out.stderr
    assert (state / "milvus.db").is_file()
    hits = json.loads(run_zg("search", "getUserName", "--json", cwd=root, env=env).stdout)["hits"]
    assert hits[0]["path"] == "src/auth/users.py"
    assert_consistent(root)


def test_status_names_the_engine(indexed: dict[str, Any], tmp_path: Path) -> None:
    root, env = indexed["root"], indexed["env"]
    status = json.loads(run_zg("status", "--json", "--mode", "direct", cwd=root, env=env).stdout)
    assert status["milvus_engine"].startswith("milvus-lite 2.5") and status[
        "milvus_engine"
    ].endswith("(native)")
    assert "(native)" in run_zg("status", "--mode", "direct", cwd=root, env=env).stdout
    fresh = make_repo(tmp_path / "fresh", SMALL)
    unindexed = json.loads(
        run_zg("status", "--json", "--mode", "direct", cwd=fresh, env=env).stdout
    )
    assert unindexed["indexed"] is False and unindexed["milvus_engine"] == status["milvus_engine"]
    doctor = run_zg("doctor", cwd=root, env=env)
    assert status["milvus_engine"] in doctor.stdout, doctor.stdout


def test_status_names_the_installed_versions_as_package_metadata_does() -> None:
    """`zg status` and `zg doctor` name the engine's version from its .dist-info, read without
    importlib.metadata: the same version it reports, and none for a package that is not installed."""
    from importlib.metadata import version

    from zgrep.store.native import describe, installed_version

    for package in ("milvus-lite", "pymilvus", "click", "tree-sitter-language-pack"):
        assert installed_version(package) == version(package)
    assert installed_version("no-such-package-zg") is None
    assert describe() == f"milvus-lite {version('milvus-lite')} (native)"
