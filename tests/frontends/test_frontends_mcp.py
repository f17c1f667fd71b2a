"""`zg mcp` through the MCP SDK's own client over a real stdio subprocess: every tool answers what
`zg ... --json` answers on the same workspace, errors carry the CLI's line, and with the daemon running
the server serves searches through it without loading the engine."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import corpus
from conftest import ZG
from daemon_helpers import User
from embedding_server import EmbeddingServer
from test_adr_kit import adr_text
from test_thin_client import heavy
from zgrep.frontends.clips import ClipStore

pytestmark = pytest.mark.e2e

T = TypeVar("T")
DIRECT = {
    "ZG_MODE": "direct"
}  # no daemon, and none started on the side, until the daemon test starts one
TOOLS = {
    "search",
    "read",
    "read_hit",
    "status",
    "index",
    "callers",
    "trace",
    "impact",
    "adr_constraints",
    "adr_search",
    "adr_check",
}
FILES: dict[str, str | bytes] = {
    **corpus.FILES,
    "src/net/client.py": "from net.retry import retry_with_backoff\n\n\ndef fetch(url):\n"
    '    """Fetch a URL, retrying."""\n    return retry_with_backoff(lambda: url)\n',
    "docs/adr/0001-retries.md": adr_text(
        "ADR-0001",
        title="Retry with backoff",
        anchors="  - {path: src/net/retry.py, symbol: retry_with_backoff}\n",
    ),
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, Path]]:
    base = tmp_path_factory.mktemp("mcp")
    user = User(base)
    config = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "[telemetry]\nenabled = true\n"
    )  # the MCP server records its calls as the CLI does
    root = corpus.make_repo(base / "repo", FILES)
    assert user.zg("index", cwd=root, env=DIRECT).returncode == 0
    yield user, root
    user.zg_binary("server", "off")


def session(
    user: User,
    root: Path,
    body: Callable[[Client], Awaitable[T]],
    *python_flags: str,
    errlog: Any = None,
    env: dict[str, str] | None = None,
) -> T:
    """Start `zg mcp` in `root` as `user` and run `body` with an SDK client connected to it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[*python_flags, ZG, "mcp"],
        cwd=str(root),
        env={**user.env, **(env or {})},
    )

    async def run() -> T:
        async with Client(
            stdio_client(params, errlog=errlog or sys.stderr), read_timeout_seconds=120
        ) as client:
            return await body(client)

    return asyncio.run(run())


def cli(user: User, root: Path, *args: str) -> Any:
    proc = user.zg(*args, cwd=root, env=DIRECT)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def data(result: Any) -> Any:
    """A tool's answer: one compact JSON text block, sent once (no structured copy, no pretty-printing)."""
    assert not result.is_error and result.structured_content is None, result
    (block,) = result.content
    doc = json.loads(block.text)
    assert block.text == json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return doc


def no_ids(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert all(re.fullmatch(r"h\d+", h["id"]) for h in hits)
    return [{k: v for k, v in h.items() if k != "id"} for h in hits]


def test_every_tool_answers_as_the_cli_does(ws: tuple[User, Path]) -> None:
    user, root = ws
    progress: list[tuple[float, float | None, str | None]] = []
    expected = {  # the CLI's answers, before the session's index call changes the workspace
        "search": cli(user, root, "search", "--json", "retry with exponential backoff"),
        "grouped": cli(
            user, root, "search", "--json", "-q", "session cookie", "-q", "config loader", "-n", "3"
        ),
        "filtered": cli(
            user, root, "search", "--json", "user name", "-t", "py", "--symbol-type", "function"
        ),
        "status": cli(user, root, "status", "--json"),
        "callers": cli(user, root, "callers", "retry_with_backoff", "--json"),
        "trace": cli(
            user, root, "trace", "fetch", "--direction", "forward", "--depth", "2", "--json"
        ),
        "adr_for": cli(user, root, "adr", "for", "src/net/retry.py", "--json"),
        "adr_search": cli(user, root, "adr", "search", "retry with backoff decision", "--json"),
        "adr_check": cli(user, root, "adr", "check", "--json"),
    }

    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": (await client.list_tools()).tools}

        async def call(name: str, **args: Any) -> Any:
            result = await client.call_tool(name, args)
            return result.content[0].text if result.is_error else data(result)

        out["search"] = await call("search", query="retry with exponential backoff")
        out["grouped"] = await call("search", queries=["session cookie", "config loader"], limit=3)
        out["filtered"] = await call(
            "search", query="user name", type=["py"], symbol_type=["function"]
        )
        out["read_hit"] = await call("read_hit", ids=[out["search"]["hits"][0]["id"], "h999999"])
        out["read"] = await call("read", path="src/net/retry.py", start=3, end=6)
        out["outside"] = await call("read", path="../secret.txt")
        out["bad_glob"] = await call("search", query="retry", glob=["src/[unclosed"])
        out["unknown_id"] = await call("read_hit", id="h424242")
        out["status"] = await call("status")
        out["callers"] = await call("callers", symbol="retry_with_backoff")
        out["trace"] = await call("trace", entry="fetch", direction="forward", depth=2)
        out["adr_constraints"] = await call("adr_constraints", paths=["src/net/retry.py"])
        out["adr_search"] = await call("adr_search", query="retry with backoff decision")
        out["adr_check"] = await call("adr_check")
        (root / "src/net/extra.py").write_text(
            'def jittered_delay(attempt):\n    """Backoff with jitter."""\n'
            "    return 0.5 * 2 ** attempt\n"
        )

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        out["index"] = data(
            await client.call_tool(
                "index", {"paths": ["src/net/extra.py"]}, progress_callback=on_progress
            )
        )
        return out

    out = session(user, root, body, env=DIRECT)

    tools = {t.name: t for t in out["tools"]}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 80 and tool.input_schema["type"] == "object", tool.name
        assert not re.search(r"\n\s", tool.description or ""), (
            tool.description
        )  # dedented, as written
        assert tool.output_schema is None, tool.name
    assert set(tools["search"].input_schema["properties"]) >= {
        "query",
        "queries",
        "limit",
        "glob",
        "type",
        "symbol_type",
        "path",
        "mode_search",
        "min_score",
    }

    assert no_ids(out["search"]["hits"]) == expected["search"]["hits"]
    assert out["search"]["hits"][0]["path"] == "src/net/retry.py"
    assert [no_ids(g["hits"]) for g in out["grouped"]["groups"]] == [
        g["hits"] for g in expected["grouped"]["groups"]
    ]
    assert no_ids(out["filtered"]["hits"]) == expected["filtered"]["hits"]

    first = out["search"]["hits"][0]
    clip, missing = out["read_hit"]["clips"]
    lines = (root / first["path"]).read_text().splitlines()
    assert clip["text"] == "".join(
        f"{line}\n" for line in lines[first["start_line"] - 1 : first["end_line"]]
    )
    assert missing["error"].startswith("zg: unknown hit id 'h999999'")
    shown = user.zg("read", "src/net/retry.py:3-6", cwd=root, env=DIRECT).stdout.splitlines()
    assert out["read"]["text"].splitlines() == [
        line.split(": ", 1)[1] if ": " in line else "" for line in shown
    ]

    for key, args in (
        ("outside", ("read", "../secret.txt")),
        ("bad_glob", ("search", "retry", "-g", "src/[unclosed")),
    ):
        proc = user.zg(*args, cwd=root, env=DIRECT)
        assert proc.returncode == 2 and out[key] == proc.stderr.strip(), (out[key], proc.stderr)
    assert out["unknown_id"].startswith("zg: unknown hit id 'h424242'")

    keys = ("indexed", "files", "chunks", "model", "mode")
    assert {k: out["status"][k] for k in keys} == {k: expected["status"][k] for k in keys}
    assert out["callers"] == expected["callers"] and out["callers"]["callers"]
    assert out["trace"] == expected["trace"]
    assert out["adr_constraints"]["adrs"] == expected["adr_for"]
    assert out["adr_constraints"]["adrs"][0]["constraints"] == ["Keep the rule of ADR-0001"]
    assert out["adr_search"]["hits"] == expected["adr_search"]["hits"]
    assert expected["adr_search"]["hits"][0]["id"] == "ADR-0001"
    assert out["adr_check"] == expected["adr_check"]

    assert out["index"]["changed"] == 1 and out["index"]["mode"] == "direct"
    assert progress and progress[-1][0] == progress[-1][1] == 1
    assert (
        cli(user, root, "search", "--json", "jittered_delay")["hits"][0]["path"]
        == "src/net/extra.py"
    )

    log = Path(user.env["XDG_STATE_HOME"]) / "zgrep" / "telemetry.jsonl"
    served = [
        json.loads(line) for line in log.read_text().splitlines() if '"frontend": "mcp"' in line
    ]
    assert [d["command"] for d in served].count("search") == 5 and "retry" not in log.read_text()
    assert [d["exit"] for d in served if d["command"] == "search"] == [
        0,
        0,
        0,
        2,
        0,
    ]  # the bad glob failed


def test_filters_take_one_value_or_several_and_relations_take_edges_and_impact(
    ws: tuple[User, Path],
) -> None:
    """An agent sends `"type": "py"` as often as `["py"]`; callers, trace and impact answer as the CLI does."""
    user, root = ws
    expected = {
        "typed": cli(user, root, "search", "--json", "user name", "-t", "py", "-g", "src/**"),
        "kinds": cli(
            user,
            root,
            "search",
            "--json",
            "user name",
            "-t",
            "py",
            "-t",
            "go",
            "--symbol-type",
            "function",
        ),
        "callers": cli(user, root, "callers", "retry_with_backoff", "--edges", "call", "--json"),
        "imports": cli(user, root, "callers", "retry_with_backoff", "--edges", "import", "--json"),
        "trace": cli(
            user,
            root,
            "trace",
            "fetch",
            "--direction",
            "forward",
            "--edges",
            "call,reference",
            "--json",
        ),
        "impact": cli(user, root, "impact", "src/net/retry.py:retry_with_backoff", "--json"),
    }

    async def body(client: Client) -> dict[str, Any]:
        async def call(name: str, **args: Any) -> Any:
            return data(await client.call_tool(name, args))

        return {
            "typed": await call("search", query="user name", type="py", glob="src/**"),
            "kinds": await call(
                "search", query="user name", type=["py", "go"], symbol_type="function"
            ),
            "callers": await call("callers", symbol="retry_with_backoff", edges="call"),
            "imports": await call("callers", symbol="retry_with_backoff", edges=["import"]),
            "trace": await call(
                "trace", entry="fetch", direction="forward", edges="call,reference"
            ),
            "impact": await call("impact", targets="src/net/retry.py:retry_with_backoff"),
            "bad_edges": (await client.call_tool("callers", {"symbol": "fetch", "edges": "calls"}))
            .content[0]
            .text,
            "no_target": (await client.call_tool("impact", {})).content[0].text,
        }

    out = session(user, root, body, env=DIRECT)
    for key in ("typed", "kinds"):
        assert no_ids(out[key]["hits"]) == expected[key]["hits"] and out[key]["hits"], key
    assert {h["path"].rsplit(".", 1)[1] for h in out["typed"]["hits"]} == {"py"}
    for key in ("callers", "imports", "trace", "impact"):
        assert out[key] == expected[key], key
    assert out["callers"]["callers"] and out["callers"]["callers"] != out["imports"]["callers"]
    assert out["impact"]["total"] and out["impact"]["test_files"] == ["tests/test_retry.py"]
    assert out["bad_edges"].startswith("zg: --edges: unknown kind 'calls'")
    assert out["no_target"].startswith("zg: nothing to assess")


def test_a_search_is_answered_while_an_index_call_runs(tmp_path: Path) -> None:
    """Reads do not wait behind an index job: with the index call's embedding request held by the (real, local)
    embedding server, a search through the same MCP session is answered, from the index as it was."""
    user = User(tmp_path / "u")
    root = corpus.make_repo(
        tmp_path / "repo", {**FILES, ".zgrep.toml": "[embedding]\nallow_remote = true\n"}
    )
    config = Path(user.env["XDG_CONFIG_HOME"]) / "zgrep" / "config.toml"
    config.parent.mkdir(parents=True)
    with EmbeddingServer(dim=8) as server:
        config.write_text(
            f'[embedding]\nprovider = "ollama"\nmodel = "test-embed"\nurl = "{server.url}"\n'
            "max_retries = 0\ntimeout = 600\n"
        )
        assert user.zg("trust", cwd=root).returncode == 0
        assert user.zg("index", cwd=root, env=DIRECT).returncode == 0

        async def body(client: Client) -> tuple[dict[str, Any], bool, dict[str, Any]]:
            (root / "src/net/extra.py").write_text(
                "def jittered_delay(attempt):\n    return 0.5 * 2 ** attempt\n"
            )
            sent = len(server.requests)
            server.stall(600)  # the index call's embedding request is answered only once released
            index = asyncio.ensure_future(
                client.call_tool("index", {"paths": ["src/net/extra.py"]})
            )
            deadline = time.monotonic() + 120
            while len(server.requests) == sent:  # until the index job is embedding
                assert time.monotonic() < deadline and not index.done(), (
                    "the index call sent no embedding request"
                )
                await asyncio.sleep(0.05)
            found = data(
                await client.call_tool("search", {"query": "retry with exponential backoff"})
            )
            still_indexing = not index.done()
            server.release()
            return found, still_indexing, data(await index)

        found, still_indexing, indexed = session(user, root, body, env=DIRECT)
    assert still_indexing and found["mode"] == "direct"
    assert found["hits"][0]["path"] == "src/net/retry.py"
    assert indexed["changed"] == 1


def test_a_never_indexed_workspace_is_indexed_without_noise_on_stderr(tmp_path: Path) -> None:
    """The first search builds the index; the server's stderr (the agent's log) stays free of tracebacks."""
    user = User(tmp_path / "u")
    root = corpus.make_repo(tmp_path / "repo", corpus.FILES)

    async def body(client: Client) -> dict[str, Any]:
        return json.loads(
            (await client.call_tool("search", {"query": "retry with exponential backoff"}))
            .content[0]
            .text
        )

    with (tmp_path / "stderr").open("w") as errlog:
        found = session(user, root, body, errlog=errlog, env=DIRECT)
    assert found["hits"][0]["path"] == "src/net/retry.py"
    assert (tmp_path / "stderr").read_text() == ""


def test_hit_ids_are_stable_per_location_and_the_oldest_are_forgotten() -> None:
    clips = ClipStore(capacity=2)
    first = clips.add("a.py", 1, 5)
    assert clips.add("a.py", 1, 5) == first and clips.get(first) == "a.py:1-5"
    second, third = clips.add("b.py", 1, 2), clips.add("c.py", 3, 4)
    assert (
        clips.get(first) is None
        and clips.get(second) == "b.py:1-2"
        and clips.get(third) == "c.py:3-4"
    )
    assert len(clips) == 2 and len({first, second, third}) == 3


def test_with_the_daemon_searches_are_served_by_it_and_no_engine_loads(
    ws: tuple[User, Path], tmp_path: Path
) -> None:
    user, root = ws
    user.start()

    async def body(client: Client) -> list[dict[str, Any]]:
        return [
            data(await client.call_tool("search", {"query": q}))
            for q in ("retry with backoff", "session cookie", "SessionStore")
        ]

    with (tmp_path / "stderr").open("w") as errlog:
        results = session(user, root, body, "-X", "importtime", errlog=errlog)
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in (tmp_path / "stderr").read_text().splitlines()
        if line.startswith("import time:")
    }
    assert [r["mode"] for r in results] == ["server"] * 3
    assert results[0]["hits"][0]["path"] == "src/net/retry.py"
    assert "mcp" in names and heavy(names) == []
    user.zg_binary("server", "off")


def test_a_root_that_is_no_workspace_is_one_line(ws: tuple[User, Path], tmp_path: Path) -> None:
    user, _ = ws
    proc = user.zg_binary("mcp", "--root", str(tmp_path / "missing"), cwd=tmp_path)
    corpus.assert_one_line_error(proc)
