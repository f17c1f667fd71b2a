"""Index and search speed of whole `zg` commands on the flask corpus (issue 2's figures).

Measures: a cold `zg index` (no state, no vector cache), an incremental `zg index` after
editing one file, and p50/p90 of 20 direct-mode `zg search --json` runs.
Usage: python bench/core.py [--repo flask] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Stopwatch, percentile
from semble import scratch_copy

ZG = str(Path(sys.executable).with_name("zg"))


def timed(*args: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time of one whole `zg` process."""
    with Stopwatch() as clock:
        proc = subprocess.run([ZG, *args], cwd=cwd, capture_output=True, text=True)
    return clock.elapsed, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repo", default="flask")
    ap.add_argument("--runs", type=int, default=20)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = scratch_copy(opts.repo, Path(tmp))
        files = sorted(p for p in ws.rglob("*.py"))
        cold, proc = timed("index", "--json", "--mode", "direct", str(ws), cwd=ws)
        report = json.loads(proc.stdout)
        target = files[len(files) // 2]
        target.write_text(target.read_text() + "\n# touched by bench/core.py\n")
        incr, proc2 = timed("index", "--json", "--mode", "direct", str(ws), cwd=ws)
        report2 = json.loads(proc2.stdout)
        walls = []
        for _ in range(opts.runs):
            wall, proc3 = timed(
                "search", "how are routes registered", "--json", "--mode", "direct", cwd=ws
            )
            assert proc3.returncode == 0, proc3.stderr
            walls.append(wall)
    walls.sort()
    print(f"corpus            {opts.repo}: {report['files']} files, {report['chunks']} chunks")
    print(f"cold zg index     {cold:.2f} s  (whole command; no state, no vector cache)")
    print(
        f"incremental index {incr:.2f} s  (one file edited: changed={report2['changed']}, embedded={report2['embedded']})"
    )
    print(
        f"direct zg search  p50 {statistics.median(walls):.3f} s, p90 {percentile(walls, 0.9):.3f} s "
        f"over {opts.runs} runs (whole process, --refresh wait default)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
