"""`zg` against a real Milvus gRPC server (the native milvus-lite engine serving gRPC on 127.0.0.1) instead of
embedded Milvus Lite."""

from __future__ import annotations

import json
import socket
import subprocess
import time

from typing import Any
from collections.abc import Iterator

import pytest

from corpus import FILES, assert_one_line_error, json_out, make_repo, run_zg, state_files, user_env

QUIET = {
    "grpc.keepalive_time_ms": 2**31 - 1,
    "grpc.keepalive_permit_without_calls": 0,
}  # the engine GOAWAYs idle pings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(uri: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Until the server answers a real request (an open port alone is not enough)."""
    from pymilvus import MilvusClient

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the Milvus server exited with {proc.returncode}: {proc.stderr.read().decode()[-500:]}"
            )
        try:
            client = MilvusClient(uri=uri, timeout=2, grpc_options=QUIET)
            client.list_collections()
            client.close()
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"the Milvus server at {uri} not ready after {timeout}s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from zgrep.store.native import command

    data = tmp_path_factory.mktemp("milvus-server") / "server.db"
    port = free_port()
    argv, env = command(data, f"127.0.0.1:{port}")
    proc = subprocess.Popen(
        argv, env=env, cwd=data.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        wait_ready(uri, proc)
        yield uri
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def ws(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("remote")
    root = make_repo(base / "repo")
    env = user_env(base / "user")
    proc = run_zg("index", "--json", "--milvus-uri", server, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return {"root": root, "env": env, "uri": server, "report": json.loads(proc.stdout)}


def server_rows(uri: str, collection: str) -> list[dict[str, Any]]:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, timeout=10, grpc_options=QUIET)
    try:
        client.load_collection(collection)
        return client.query(
            collection, filter='id != ""', output_fields=["id", "path"], limit=16384
        )
    finally:
        client.close()


def test_index_into_a_milvus_server(ws):
    report = ws["report"]
    assert (report["changed"], report["files"], report["skipped"]) == (len(FILES), len(FILES), {})
    # nothing was written to an embedded Milvus Lite
    assert not (ws["root"] / ".zgrep" / "milvus.db").exists()
    st = json.loads(
        run_zg("status", "--json", "--milvus-uri", ws["uri"], cwd=ws["root"], env=ws["env"]).stdout
    )
    assert st["milvus_uri"] == ws["uri"]
    assert (st["files"], st["chunks"]) == (len(FILES), report["chunks"])
    rows = server_rows(ws["uri"], st["collection"])
    assert len(rows) == len({r["id"] for r in rows}) == report["chunks"]


def test_search_on_the_server_runs_dense_and_bm25(ws):
    proc = run_zg(
        "search",
        "how are retries with exponential backoff done",
        "--json",
        "--milvus-uri",
        ws["uri"],
        cwd=ws["root"],
        env=ws["env"],
    )
    top = json_out(proc)["hits"][0]
    assert (top["path"], top["symbol"]) == ("src/net/retry.py", "retry_with_backoff")
    assert set(top["matched_by"]) >= {"lexical", "semantic"}
    # the server's BM25 analyzer sees the split identifiers, as embedded Milvus Lite does
    lexical = json_out(
        run_zg(
            "search",
            "user name",
            "--mode-search",
            "lexical",
            "--json",
            "--milvus-uri",
            ws["uri"],
            cwd=ws["root"],
            env=ws["env"],
        )
    )["hits"][0]
    assert lexical["symbol"] == "getUserName" and "lexical" in lexical["matched_by"]


def test_the_uri_from_the_environment_and_the_manifest_check(ws):
    env = {**ws["env"], "ZG_MILVUS_URI": ws["uri"]}
    assert (
        json_out(run_zg("search", "yaml config", "--json", cwd=ws["root"], env=env))["hits"][0][
            "path"
        ]
        == "src/config/loader.go"
    )
    # the same workspace without the URI: refused (it was indexed into the server), with the fix
    proc = run_zg("search", "yaml config", cwd=ws["root"], env=ws["env"])
    assert_one_line_error(proc, f"Milvus URI {ws['uri']}", "zg index --full")


def test_incremental_index_on_the_server(ws, tmp_path):
    root, env, uri = ws["root"], ws["env"], ws["uri"]
    (root / "web" / "render.js").write_text(FILES["web/render.js"] + "\n// capybara\n")
    (root / "docs" / "guide.md").unlink()
    report = json_out(run_zg("index", "--json", "--milvus-uri", uri, cwd=root, env=env))
    assert (report["changed"], report["deleted"], report["embedded"]) == (1, 1, 1)
    hits = json_out(run_zg("search", "capybara", "--json", "--milvus-uri", uri, cwd=root, env=env))[
        "hits"
    ]
    assert hits[0]["path"] == "web/render.js"
    st = json.loads(run_zg("status", "--json", cwd=root, env=env).stdout)
    rows = server_rows(uri, st["collection"])
    assert len(rows) == sum(rec[4] for rec in state_files(root).values())
    assert "docs/guide.md" not in {r["path"] for r in rows}


def test_two_workspaces_share_a_server_without_mixing(ws, tmp_path):
    other = make_repo(
        tmp_path / "other", {"zebra.py": "def zebra_stripes():\n    return 'black and white'\n"}
    )
    env = user_env(tmp_path / "user")
    assert run_zg("index", "--milvus-uri", ws["uri"], cwd=other, env=env).returncode == 0
    hits = json_out(
        run_zg("search", "zebra stripes", "--json", "--milvus-uri", ws["uri"], cwd=other, env=env)
    )["hits"]
    assert {h["path"] for h in hits} == {"zebra.py"}
    proc = run_zg(
        "search",
        "zebra stripes",
        "--mode-search",
        "lexical",
        "--json",
        "--milvus-uri",
        ws["uri"],
        cwd=ws["root"],
        env=ws["env"],
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "zebra.py" not in {h["path"] for h in json.loads(proc.stdout)["hits"]}


def test_two_models_share_a_server_without_mixing(ws, tmp_path):
    """The same code indexed with another model (a real local Ollama-compatible server, 8 dimensions) into the
    same Milvus server gets a collection of its own; neither workspace sees the other's rows."""
    from embedding_server import EmbeddingServer

    other = make_repo(tmp_path / "other", FILES)
    env = user_env(tmp_path / "user")
    (other / ".zgrep.toml").write_text(
        '[embedding]\nprovider = "ollama"\nmodel = "test-embed"\nallow_remote = true\n'
    )
    with EmbeddingServer(dim=8) as embedder:
        with (other / ".zgrep.toml").open("a") as toml:
            toml.write(f'url = "{embedder.url}"\n')
        assert run_zg("trust", cwd=other, env=env).returncode == 0
        proc = run_zg("index", "--json", "--milvus-uri", ws["uri"], cwd=other, env=env)
        assert proc.returncode == 0, proc.stderr
        theirs = json.loads(
            run_zg("status", "--json", "--milvus-uri", ws["uri"], cwd=other, env=env).stdout
        )
        hits = json_out(
            run_zg(
                "search",
                "retry_with_backoff",
                "--json",
                "--milvus-uri",
                ws["uri"],
                cwd=other,
                env=env,
            )
        )["hits"]
    ours = json.loads(
        run_zg("status", "--json", "--milvus-uri", ws["uri"], cwd=ws["root"], env=ws["env"]).stdout
    )
    assert (theirs["model"], theirs["dim"]) == ("ollama:test-embed", 8) and ours["dim"] != 8
    assert theirs["collection"] != ours["collection"]
    assert hits[0]["path"] == "src/net/retry.py"
    for root, status in ((other, theirs), (ws["root"], ours)):
        rows = server_rows(ws["uri"], status["collection"])
        assert len(rows) == sum(rec[4] for rec in state_files(root).values()) == status["chunks"]


def test_an_unreachable_server_is_one_line(tmp_path):
    root = make_repo(tmp_path / "repo", {"a.py": FILES["src/net/retry.py"]})
    env = user_env(tmp_path / "user")
    uri = f"http://127.0.0.1:{free_port()}"
    proc = run_zg(
        "index", "--milvus-uri", uri, cwd=root, env=env, timeout=120
    )  # gives up, never hangs
    assert_one_line_error(proc, f"cannot open Milvus at {uri}")
