"""MCP search latency on the flask corpus: wall time of each `search` tool call made through the MCP SDK's
client to a real `zg mcp` stdio subprocess, with the daemon running and without it (direct mode).

Measures, in one run on the same index: the session start (spawn + initialize + list_tools), the first
search call, then p50/p90/max of `--runs` further calls (queries cycled) in each mode.
Usage: python bench/mcp.py [--repo flask] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [
    entry for entry in sys.path if str(Path(entry or ".").resolve()) != HERE
]  # this file is not the SDK
from mcp import Client, StdioServerParameters  # noqa: E402

sys.path.insert(0, HERE)
from common import Stopwatch, percentile, private_env  # noqa: E402
from daemon import ZG  # noqa: E402
from semble import scratch_copy  # noqa: E402

QUERIES = (
    "how are routes registered",
    "where is the session cookie signed",
    "url_for",
    "blueprint registration",
    "error handler for 404",
    "JSON response serialization",
    "test client request context",
    "load configuration from environment variables",
    "template rendering with jinja",
    "before_request hooks",
)


async def session(ws: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """Start `zg mcp` in `ws`; time the start, the first search and `runs` more."""
    params = StdioServerParameters(command=ZG, args=["mcp"], cwd=str(ws), env=env)
    session_clock = Stopwatch()
    async with Client(params, read_timeout_seconds=300) as client:
        await client.list_tools()
        started = session_clock.elapsed
        walls, modes = [], set()
        for i in range(runs + 1):
            with Stopwatch() as clock:
                result = await client.call_tool("search", {"query": QUERIES[i % len(QUERIES)]})
            walls.append(clock.elapsed)
            assert not result.is_error and result.structured_content, result.content
            modes.add(result.structured_content["mode"])
    rest = sorted(walls[1:])
    return {
        "start_s": started,
        "first_s": walls[0],
        "p50_s": percentile(rest, 0.5),
        "p90_s": percentile(rest, 0.9),
        "max_s": rest[-1],
        "mean_s": statistics.fmean(rest),
        "modes": sorted(modes),
    }


def show(label: str, r: dict[str, Any]) -> None:
    print(
        f"{label:<14} mode {','.join(r['modes']):<7} session start {r['start_s']:.3f}s  first call {r['first_s']:.3f}s  "
        f"per call p50 {r['p50_s']:.3f}s  p90 {r['p90_s']:.3f}s  max {r['max_s']:.3f}s  mean {r['mean_s']:.3f}s"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repo", default="flask")
    ap.add_argument("--runs", type=int, default=30)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = scratch_copy(opts.repo, Path(tmp))
        env = private_env(Path(tmp), cache=False, autostart=False)
        subprocess.run(
            [ZG, "index", "--mode", "direct"], cwd=ws, env=env, check=True, capture_output=True
        )
        print(
            f"{opts.repo}: {opts.runs} search calls per mode through the MCP SDK client (stdio subprocess)"
        )
        show(
            "no daemon", asyncio.run(session(ws, {**env, "ZG_MODE": "direct"}, opts.runs))
        )  # none autostarted
        subprocess.run([ZG, "server", "on"], cwd=ws, env=env, check=True, capture_output=True)
        try:
            subprocess.run(
                [ZG, "search", "--mode", "server", "warm up"], cwd=ws, env=env, capture_output=True
            )
            show("daemon", asyncio.run(session(ws, env, opts.runs)))
        finally:
            subprocess.run([ZG, "server", "off"], cwd=ws, env=env, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
