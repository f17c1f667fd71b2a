"""The thin client path (cli -> client -> protocol) must not import the engine stack."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ZG
from daemon_helpers import User, make_repo
from zgrep.server import zmtp

pytestmark = pytest.mark.e2e

HEAVY = (
    "pymilvus",
    "milvus_lite",
    "grpc",
    "tree_sitter",
    "tree_sitter_language_pack",
    "numpy",
    "tokenizers",
    "zgrep.engine",
    "zgrep.dispatch",
    "zgrep.index.run",
    "zgrep.search.run",
    "zgrep.server.daemon",
    "zgrep.server.holder",
    "zgrep.server.jobrunner",
    "zgrep.server.transport",
)


def imported(
    user: User, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `zg ARGS` under -X importtime (`env`: extra variables); the module names it imported
    after the interpreter's start (`site` and what it imports come first)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", ZG, *args],
        cwd=cwd,
        env={**user.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = [
        line.rsplit("|", 1)[-1]
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    ]
    started = next(i for i, line in enumerate(lines) if line.strip() == "site" and line[1] != " ")
    return out, {line.strip() for line in lines[started + 1 :]}


PATIENT = {"ZG_SERVER_PROBE_TIMEOUT_MS": "5000"}
"""A probe timeout a loaded machine meets (the default 30 ms missed hands a search to the click CLI)."""


def heavy(names: set[str], modules: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in modules))


STANDARD_SKIPS = (
    "pathlib",
    "typing",
    "json",
    "re",
    "enum",
    "functools",
    "collections",
    "contextlib",
    "importlib",
)
STATUS_SKIPS = (*HEAVY, "click", "zgrep.config", "zgrep.cli.flags", *STANDARD_SKIPS)
"""What `zg server status` never imports, with or without a daemon: besides the engine, click and
the config, the standard library modules Python does not load at its start that cost milliseconds
of every call (json compiles regular expressions, `re` imports enum, enum functools and collections;
zgrep.jsoncodec reads and writes JSON through json's accelerator)."""

SEARCH_SKIPS = (
    *HEAVY,
    "click",
    "zgrep.search",
    "zgrep.progress",
    "zgrep.telemetry",
    "math",
    *STANDARD_SKIPS,
)
"""What a `zg search` the daemon answers never imports: the engine, click, the search and telemetry
(when off) modules, zgrep.progress, and the standard library modules `zg server status` skips
(find_root's root, the config's files and the search paths are str; zgrep.vocab makes its Literal
types only when one is asked for; index progress prints from zgrep.server.client)."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    base = tmp_path_factory.mktemp("thin")
    user = User(base)
    repo = make_repo(base / "repo")
    (repo / "net").mkdir()
    (repo / "net" / "backoff.py").write_text(
        'def jittered_delay(attempt):\n    """The delay before a retry: exponential backoff with jitter."""\n'
        "    return min(60, 2 ** attempt)\n"
    )
    user.start()
    assert user.zg_binary("index", "--mode", "server", cwd=repo).returncode == 0
    yield user, repo
    user.zg_binary("server", "off")


def test_server_search_imports_no_engine(running: tuple[User, Path]) -> None:
    user, repo = running
    out, names = imported(
        user, "search", "--mode", "server", "--json", "retry with backoff", cwd=repo, env=PATIENT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # the client speaks ZMTP itself (zgrep.server.zmtp); a search a daemon answers skips click
    assert "click" not in names and "zmq" not in names
    assert heavy(names) == []


@pytest.mark.parametrize(
    "args",
    [
        ("search", "retry with backoff"),
        ("search", "--json", "-n", "1", "--mode=server", "cache"),
        ("search", "-l", "backoff", "net"),
        ("search", "--root", ".", "-C", "1", "--md", "cache"),
    ],
    ids=" ".join,
)
def test_served_search_imports_no_pathlib_typing_re_or_enum(
    running: tuple[User, Path], args: tuple[str, ...]
) -> None:
    """A search the daemon answers loads only what it runs: no click, no engine, search or telemetry
    module, and of the standard library nothing Python does not load at its start but `_json`,
    `_socket`, `select`, `struct`, `contextvars`, `fcntl` and `encodings.utf_8_sig` (SEARCH_SKIPS
    names the costly ones)."""
    user, repo = running
    out, names = imported(user, *args, cwd=repo, env=PATIENT)
    assert out.returncode == 0 and out.stdout.strip(), out.stderr[-2000:]
    assert heavy(names, SEARCH_SKIPS) == []
    assert "zgrep.config" in names and "zgrep.cli.flags" in names  # (served here, not by click)


def test_a_busy_daemon_still_answers_a_search_without_click(running: tuple[User, Path]) -> None:
    """A daemon too busy for the first probe (its loop decoding two large messages another peer
    sends, ~0.2 s each) but alive gets BUSY_PROBE_MS to answer a second one: the search is served,
    without click and without falling back to direct mode (seconds of engine start)."""
    user, repo = running
    # a workspace searched before (the first search loads its tables, keeping the daemon busier)
    assert user.zg_binary("search", "-n", "1", "cache", cwd=repo, env=PATIENT).returncode == 0
    flood = zmtp.Dealer(user.info()["endpoint"], 5.0)
    noise = b'{"v": 1, "op": "ping", "args": {"queries": [' + b",".join([b"[]"] * 800_000) + b"]}}"
    # once to its end: the first such message costs the daemon several times the next ones (memory)
    flood.send([b"", noise])
    assert flood.recv(30.0) is not None  # (the refusal, and the handshake is done)
    sender = threading.Thread(target=lambda: [flood.send([b"", noise]) for _ in range(2)])
    sender.start()
    try:
        out, names = imported(user, "search", "--json", "-n", "1", "retry with backoff", cwd=repo)
    finally:
        sender.join()
        flood.close()
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["mode"] == "server" and "click" not in names


def test_auto_search_and_status_import_no_engine(running: tuple[User, Path]) -> None:
    user, repo = running
    for args in (
        ("search", "--json", "cache"),
        ("status", "--json"),
        ("server", "status", "--json"),
    ):
        out, names = imported(user, *args, cwd=repo)
        assert out.returncode in (0, 1), out.stderr[-2000:]
        assert heavy(names) == [] and "zmq" not in names, args


def test_check_ready_is_thin_with_and_without_a_daemon(
    running: tuple[User, Path], tmp_path: Path
) -> None:
    user, _ = running
    out, names = imported(user, "server", "status", "--check-ready")
    assert out.returncode == 0 and out.stdout == ""
    assert heavy(names, STATUS_SKIPS) == []
    nobody = User(tmp_path)
    out, names = imported(nobody, "server", "status", "--check-ready")
    assert out.returncode == 1 and out.stdout == ""
    assert heavy(names, STATUS_SKIPS) == [] and "zmq" not in names


def click_cli(
    user: User, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`zg ARGS` through the click CLI (zgrep.cli.main), which the `zg` entry point hands what it does not serve."""
    code = "import sys; sys.argv[0] = 'zg'; from zgrep.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env={**user.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def without_counts(text: str) -> str:
    """`text` with its numbers (uptime, idle seconds, requests served) as N: they move between two calls."""
    return re.sub(r"\d+(\.\d+)?", "N", text)


def test_server_status_is_served_without_click_as_click_serves_it(
    running: tuple[User, Path],
) -> None:
    """`zg server status` skips click (and the config) with a daemon up; what it prints and its exit code
    are the click command's."""
    user, _ = running
    for args in (
        ("server", "status"),
        ("server", "status", "--json", "--timeout-ms", "800"),
        ("server", "status", "--mode=server", "--timeout-ms=800"),
    ):
        out, names = imported(user, *args)
        assert out.returncode == 0, out.stderr[-2000:]
        assert heavy(names, STATUS_SKIPS) == [], args
        slow = click_cli(user, *args)
        assert (out.returncode, without_counts(out.stdout)) == (
            slow.returncode,
            without_counts(slow.stdout),
        )
    status = json.loads(imported(user, "server", "status", "--json")[0].stdout)
    assert (
        status["running"] is True
        and status["ready"] is True
        and status["pid"] == user.info()["pid"]
    )
    out, names = imported(user, "server", "status", "--check-ready")
    assert (out.returncode, out.stdout, "click" in names) == (0, "", False)


@pytest.mark.parametrize(
    "args",
    [
        ("server", "status", "-h"),
        ("server", "status", "--timeout-ms", "soon"),
        ("server", "status", "--jsn"),
        ("server", "status", "--mode", "remote"),
        ("server", "status", "--json=yes"),
        ("server", "status", "--timeout-ms"),
        ("server", "status", "extra"),
    ],
)
def test_server_status_help_and_usage_errors_are_the_click_clis(
    running: tuple[User, Path], args: tuple[str, ...]
) -> None:
    """Help, unknown flags and bad values reach click: the same bytes and exit code as the click CLI's."""
    user, _ = running
    fast = user.zg(*args)
    slow = click_cli(user, *args)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        slow.returncode,
        slow.stdout,
        slow.stderr,
    )
    assert (
        fast.returncode in (0, 2) and (fast.stdout if fast.returncode == 0 else fast.stderr).strip()
    )


def test_server_status_without_a_daemon_is_served_without_click(tmp_path: Path) -> None:
    nobody = User(tmp_path)
    for args in (("server", "status"), ("server", "status", "--json")):
        out, names = imported(nobody, *args)
        slow = click_cli(nobody, *args)
        assert (out.returncode, out.stdout, out.stderr.count("zg:")) == (1, slow.stdout, 0), args
        assert slow.returncode == 1 and heavy(names, STATUS_SKIPS) == []
    assert json.loads(out.stdout) == {"running": False, "ready": False}


@pytest.fixture
def unserved(tmp_path: Path) -> tuple[User, Path]:
    """A user without a daemon and a repository indexed in direct mode."""
    nobody = User(tmp_path)
    repo = make_repo(tmp_path / "repo")
    assert nobody.zg("index", "--mode", "direct", cwd=repo).returncode == 0
    return nobody, repo


def test_direct_status_of_a_consistent_index_loads_neither_milvus_nor_the_model(
    unserved: tuple[User, Path],
) -> None:
    """Without a daemon, the state files (manifest, verified.json) answer `zg status`: no engine, no model."""
    nobody, repo = unserved
    out, names = imported(nobody, "status", "--json", cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    status = json.loads(out.stdout)
    assert status["fresh"] is True and status["problem"] is None and status["files"] == 3
    model = (
        "pymilvus",
        "milvus_lite",
        "grpc",
        "numpy",
        "tokenizers",
        "zgrep.store.milvus",
        "zgrep.embedding.static",
    )
    assert sorted(n for n in names if n.split(".")[0] in model or n in model) == []
    (
        repo / ".zgrep" / "verified.json"
    ).unlink()  # without the record, the engine is asked (and answers the same)
    again, names = imported(nobody, "status", "--json", cwd=repo)
    assert again.returncode == 0 and json.loads(again.stdout) == status
    assert "pymilvus" in names


def test_status_names_another_configured_model_without_loading_it(
    unserved: tuple[User, Path], tmp_path: Path
) -> None:
    """The configured model's id and dimension come from its folder's config.json: a mismatch is still named."""
    from zgrep.embedding.folder import default_model_dir

    nobody, repo = unserved
    other = tmp_path / "other-model"
    shutil.copytree(default_model_dir(), other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "model_id": "team/other-static"}))
    out, names = imported(nobody, "status", "--json", "--model", f"local:{other}", cwd=repo)
    assert out.returncode == 1
    problem = json.loads(out.stdout)["problem"]
    assert (
        f"configured team/other-static ({config['dim']}-d)" in problem
        and "zg index --full" in problem
    )
    assert "numpy" not in names and "zgrep.embedding.static" not in names


def test_direct_index_with_nothing_changed_loads_neither_milvus_nor_tree_sitter(
    unserved: tuple[User, Path],
) -> None:
    """A `zg index` that finds nothing to write answers from the state files: no engine, no chunker."""
    nobody, repo = unserved
    out, names = imported(nobody, "index", "--json", "--mode", "direct", cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["changed"] == 0 and report["unchanged"] == 3
    heavy_here = ("pymilvus", "milvus_lite", "grpc", "tree_sitter", "numpy", "zgrep.chunking")
    assert sorted(n for n in names if n.split(".")[0] in heavy_here or n in heavy_here) == []


def comparable(out: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr: without -X importtime's lines, and without a JSON document's
    `took_ms` (the daemon's time)."""
    stdout = re.sub(r'"took_ms": [0-9.]+, ', "", out.stdout)
    stderr = "".join(
        line for line in out.stderr.splitlines(keepends=True) if not line.startswith("import time:")
    )
    return out.returncode, stdout, stderr


SERVED_SEARCHES = [
    ("search", "retry with backoff"),
    ("search", "--json", "retry with backoff"),
    ("search", "--jsonl", "-n", "2", "cache"),
    ("search", "--md", "-n1", "parse configuration"),
    ("search", "-l", "cache"),
    ("search", "-c", "--limit=2", "cache"),
    ("search", "-n", "1", "-g", "*.py", "-g", "!parse.py", "cache"),
    ("search", "backoff", "net"),
    ("search", "-e", "backoff", "-q", "cache", "retry.py", "net"),
    ("search", "--", "backoff", "net"),
    ("search", "-in2", "-C", "1", "--mode-search", "lexical", "retry"),
    ("search", "--mode=server", "--workspace", "--preview", "none", "cache"),
    ("search", "--min-score", "0.99", "zebra quantum"),
    ("search", "--limit", "0", "cache"),
]
HANDED_OVER = [
    ("search", "--bogus", "cache"),
    ("search", "-n", "five", "cache"),
    ("search", "-n", "-5", "cache"),
    ("search", "--json", "-l", "cache"),
    ("search", "--json=yes", "cache"),
    ("search", "-v", "cache"),
    ("search", "-h"),
    ("search", "--type-list"),
    ("search", "--mode", "direct", "cache"),
    ("search", "cache", "/"),
]


@pytest.mark.parametrize("args", SERVED_SEARCHES + HANDED_OVER, ids=" ".join)
def test_search_with_a_daemon_is_the_click_commands_byte_for_byte(
    running: tuple[User, Path], args: tuple[str, ...]
) -> None:
    """`zg search` runs without click when the daemon answers it, and hands everything else (help,
    usage errors, rg flags zg lacks, --type-list, direct mode, a path outside the workspace) to the
    click CLI: either way stdout, stderr and exit code are the click command's. Paths print relative
    to the cwd (here a subdirectory)."""
    user, repo = running
    for cwd in (repo, repo / "net"):
        fast, names = imported(user, *args, cwd=cwd, env=PATIENT)
        slow = click_cli(user, *args, cwd=cwd, env=PATIENT)
        assert comparable(fast) == comparable(slow), (cwd, args)
        assert ("click" in names) == (args in HANDED_OVER), (cwd, args)
        assert heavy(names) == [] or args in HANDED_OVER
        assert (
            fast.stdout if fast.returncode == 0 else fast.stderr
        ).strip() or fast.returncode == 1


def test_search_records_telemetry_as_the_click_command_does(running: tuple[User, Path]) -> None:
    """With telemetry on, a search served without click writes the line the click command writes."""
    user, repo = running
    log = Path(user.env["XDG_STATE_HOME"]) / "zgrep" / "telemetry.jsonl"
    on = {"ZG_TELEMETRY_ENABLED": "true", **PATIENT}
    fast, names = imported(user, "search", "-n", "1", "cache", cwd=repo, env=on)
    slow = click_cli(user, "search", "-n", "1", "cache", cwd=repo, env=on)
    assert fast.returncode == slow.returncode == 0 and "click" not in names
    lines = [json.loads(line) for line in log.read_text().splitlines()[-2:]]
    for line in lines:
        line.pop("ts"), line.pop("took_ms")
    assert lines[0] == lines[1]
    assert (
        lines[0]["command"] == "search" and lines[0]["mode"] == "server" and lines[0]["hits"] == 1
    )


def test_search_without_a_daemon_goes_to_the_click_command(unserved: tuple[User, Path]) -> None:
    """No daemon answering: the click CLI runs the search as before (direct in auto mode; server
    mode's one line and exit 2)."""
    nobody, repo = unserved
    out, names = imported(nobody, "search", "--json", "cache", cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "click" in names and json.loads(out.stdout)["mode"] == "direct"
    out, names = imported(nobody, "search", "--mode", "server", "cache", cwd=repo)
    assert (out.returncode, out.stdout) == (2, "") and "click" in names
    assert [line for line in out.stderr.splitlines() if not line.startswith("import time:")] == [
        "zg: no zgrep daemon is ready; start one with: zg server on"
    ]
