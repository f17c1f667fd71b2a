"""The autostarted daemon on a big repository: first and next `zg search`, and the idle daemon's CPU.

In a private user environment with no daemon: one auto-mode `zg search --json` (answered in-process;
it starts the daemon), then after `--wait` seconds `--runs` more (whole-process wall time and the
`mode` that answered), then the daemon's CPU (utime + stime from /proc/PID/stat) over `--idle`
seconds with nothing happening (the file watcher's cost). The repository must be indexed already.
Usage: python bench/autostart.py REPO [--wait 5] [--runs 5] [--idle 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import private_env
from daemon import run_zg

QUERIES = [
    "queryset filter",
    "url resolver",
    "template engine",
    "form validation",
    "database migration",
    "middleware request",
    "cache backend",
    "session storage",
]


def search(env: dict[str, str], repo: Path, query: str) -> tuple[float, str]:
    """Wall time of one whole `zg search --json` and the mode that answered it."""
    wall, proc = run_zg(env, "search", query, "--json", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    return wall, json.loads(proc.stdout)["mode"]


def cpu_ticks(pid: int) -> int:
    """utime + stime of `pid` in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("repo", type=Path)
    ap.add_argument(
        "--wait", type=float, default=5.0, help="seconds between the first search and the next ones"
    )
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU measurement")
    opts = ap.parse_args()
    repo = opts.repo.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        env = private_env(Path(tmp), cache=False, autostart=True)
        try:
            first = search(env, repo, QUERIES[0])
            time.sleep(opts.wait)
            nxt = [search(env, repo, QUERIES[1 + i % (len(QUERIES) - 1)]) for i in range(opts.runs)]
            info = json.loads((Path(env["XDG_RUNTIME_DIR"]) / "zgrep" / "daemon.json").read_text())
            time.sleep(5)  # let the last request's work settle
            before, tick = cpu_ticks(info["pid"]), os.sysconf("SC_CLK_TCK")
            time.sleep(opts.idle)
            idle_share = (cpu_ticks(info["pid"]) - before) / tick / opts.idle
        finally:
            run_zg(env, "server", "off", cwd=repo)
    print(f"repo {repo}")
    print(f"  first search (no daemon): {first[0]:.2f} s, mode {first[1]}")
    print(
        f"  next {opts.runs} searches, from {opts.wait:g} s after the first: modes {sorted({m for _, m in nxt})}, "
        f"p50 {statistics.median(w for w, _ in nxt):.3f} s, first of them {nxt[0][0]:.3f} s, max {max(w for w, _ in nxt):.3f} s"
    )
    print(
        f"  idle daemon (pid {info['pid']}, started_by {info.get('started_by')}) over {opts.idle:g} s: "
        f"{idle_share * 100:.2f}% of a core"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
