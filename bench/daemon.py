"""Daemon speed on the flask corpus: server vs direct `zg search --json`, readiness checks, probe cost.

Measures (whole `zg` processes unless said otherwise, in one run, same index):
- p50/p90 of `zg search --json` in server mode (warm daemon) and in direct mode, each with its
  default refresh (server: off, the watcher keeps the index fresh; direct: wait) and with
  `--refresh wait` / `--refresh off` for a like-for-like comparison;
- p50 of `zg server status --check-ready` with the daemon up;
- with no daemon: the auto-mode probe function itself, and `zg search` auto vs direct.
Usage: python bench/daemon.py [--repo flask] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Stopwatch, percentile, private_env
from semble import scratch_copy

ZG = str(Path(sys.executable).with_name("zg"))
QUERY = "how are routes registered"


def run_zg(
    env: dict[str, str], *args: str, cwd: Path
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time and outcome of one whole `zg` process."""
    with Stopwatch() as clock:
        proc = subprocess.run([ZG, *args], cwd=cwd, env=env, capture_output=True, text=True)
    return clock.elapsed, proc


def timed(env: dict[str, str], *args: str, cwd: Path) -> float:
    """Wall time of one whole `zg` process (which must exit 0)."""
    wall, proc = run_zg(env, *args, cwd=cwd)
    assert proc.returncode == 0, f"zg {' '.join(args)}: {proc.stderr}"
    return wall


def series(env: dict[str, str], runs: int, *args: str, cwd: Path) -> list[float]:
    return sorted(timed(env, *args, cwd=cwd) for _ in range(runs))


def probe_function_cost(env: dict[str, str], calls: int = 2000) -> float:
    """Median seconds of `client.probe` when no daemon runs (in this process)."""
    os.environ.update({k: env[k] for k in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME")})
    from zgrep.server import client

    costs = []
    for _ in range(calls):
        start = (
            time.perf_counter()
        )  # not a Stopwatch: its ~0.1 us of calls would show in this figure
        assert client.probe(30) is None
        costs.append(time.perf_counter() - start)
    return statistics.median(costs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repo", default="flask")
    ap.add_argument("--runs", type=int, default=20)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = scratch_copy(opts.repo, Path(tmp))
        env = private_env(
            Path(tmp), cache=False, autostart=False
        )  # XDG_CACHE_HOME stays the user's
        timed(env, "index", "--mode", "direct", str(ws), cwd=ws)
        probe_s = probe_function_cost(env)
        auto, direct = [], []
        for _ in range(opts.runs):  # interleaved so machine load hits both alike
            auto.append(timed(env, "search", QUERY, "--json", "--mode", "auto", cwd=ws))
            direct.append(timed(env, "search", QUERY, "--json", "--mode", "direct", cwd=ws))
        auto.sort()
        direct.sort()
        direct_off = series(
            env,
            opts.runs,
            "search",
            QUERY,
            "--json",
            "--mode",
            "direct",
            "--refresh",
            "off",
            cwd=ws,
        )
        timed(env, "server", "on", cwd=ws)
        try:
            timed(
                env, "search", QUERY, "--json", "--mode", "server", cwd=ws
            )  # hold the workspace, warm it
            server = series(env, opts.runs, "search", QUERY, "--json", "--mode", "server", cwd=ws)
            server_wait = series(
                env,
                opts.runs,
                "search",
                QUERY,
                "--json",
                "--mode",
                "server",
                "--refresh",
                "wait",
                cwd=ws,
            )
            ready = series(env, opts.runs, "server", "status", "--check-ready", cwd=ws)
        finally:
            timed(env, "server", "off", cwd=ws)
    rows = [
        ("server search (default refresh: off, watcher)", server),
        ("server search --refresh wait", server_wait),
        ("direct search (default refresh: wait)", direct),
        ("direct search --refresh off", direct_off),
        ("auto search, no daemon (default refresh)", auto),
        ("zg server status --check-ready", ready),
    ]
    print(f"corpus {opts.repo}, {opts.runs} runs each, whole-process wall time")
    for name, walls in rows:
        print(
            f"  {name:<48} p50 {statistics.median(walls):.3f} s   p90 {percentile(walls, 0.9):.3f} s"
        )
    print(
        f"  speed-up, default refresh (direct p50 / server p50): {statistics.median(direct) / statistics.median(server):.1f}x"
    )
    print(
        f"  speed-up, --refresh wait both:                       "
        f"{statistics.median(direct) / statistics.median(server_wait):.1f}x"
    )
    print(
        f"  speed-up, --refresh off both:                        "
        f"{statistics.median(direct_off) / statistics.median(server):.1f}x"
    )
    print(
        f"  auto-mode probe, no daemon: probe() {probe_s * 1e6:.1f} us; "
        f"whole command auto - direct p50 {statistics.median(auto) - statistics.median(direct):+.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
