"""Git hook cost and index freshness, in a temp repository holding a copy of zgrep's own source.

Measures, in one run on one repository:
- the wall time `git commit` gains with zgrep's hooks installed (vs the same repository with
  `core.hooksPath` pointed at an empty directory), median of --runs interleaved pairs; each
  commit adds one file, and the background indexer is let finish between commits; first
  without ADRs (the pre-commit check starts no Python), then with two ADRs and no anchored file
  staged (the cached anchor set says so: no Python either), then with an anchored file staged
  (the check runs);
- the time from `git commit` returning until the new file is indexed (the pending queue is
  empty; a `zg search` then confirms the file is found), median of --runs, without a daemon
  and, when `zg server on` works, with the daemon running.
Usage: python bench/hooks.py [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zgrep.hooks import pending

from common import Stopwatch, private_env

ZG = str(Path(sys.executable).with_name("zg"))
SOURCE = Path(__file__).resolve().parents[1] / "zgrep"
ADR = """---
id: ADR-0001
title: Hooks never block git
status: accepted
date: 2024-05-01
change_type: architecture
code_anchors:
  - {path: zgrep/hooks/run.py, symbol: main}
constraints:
  - Only a real ADR violation blocks a commit
---

# ADR-0001: Hooks never block git
"""
ADR2 = """---
id: ADR-0002
title: One git module
status: accepted
date: 2024-05-02
change_type: architecture
code_anchors:
  - {path: zgrep/git.py}
---

# ADR-0002: One git module
"""


def sh(env: dict[str, str], cwd: Path, *argv: str) -> str:
    return subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def add_file(root: Path, n: int) -> str:
    """Write a new module with a distinctive function; return the function's name."""
    name = f"bench_distinctive_hook_probe_{n}"
    (root / "probes").mkdir(exist_ok=True)
    (root / "probes" / f"p{n}.py").write_text(f"def {name}(value):\n    return value * {n}\n")
    return name


def timed_commit(
    env: dict[str, str], root: Path, n: int, *git_opts: str, anchored: bool = False
) -> float:
    add_file(root, n)
    if anchored:  # also change a file an ADR anchors (a comment: the anchor still resolves)
        with (root / "zgrep" / "git.py").open("a") as fh:
            fh.write(f"# bench edit {n}\n")
    sh(env, root, "git", "add", ".")
    with Stopwatch() as clock:
        sh(env, root, "git", *git_opts, "commit", "-q", "-m", f"c{n}")
    return clock.elapsed


def wait_indexed(root: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while pending.pending_count(root):
        if time.monotonic() > deadline:
            raise SystemExit(f"queue not drained within {timeout}s")
        time.sleep(0.01)


def wait_idle(root: Path) -> None:
    wait_indexed(root)
    while pending.worker_running(root):
        time.sleep(0.05)


def searchable(env: dict[str, str], root: Path, name: str) -> bool:
    proc = subprocess.run(
        [ZG, "search", name, "--json", "--preview", "full"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    return proc.returncode == 0 and any(
        f"def {name}(" in h["preview"] for h in json.loads(proc.stdout)["hits"]
    )


def freshness(env: dict[str, str], root: Path, runs: int, first: int) -> list[float]:
    """Seconds from `git commit` returning until the new file is indexed, per commit."""
    out = []
    for n in range(first, first + runs):
        wait_idle(root)
        timed_commit(env, root, n)
        with Stopwatch() as clock:
            wait_indexed(root)
        out.append(clock.elapsed)
        assert searchable(env, root, f"bench_distinctive_hook_probe_{n}"), f"probe {n} not found"
    return out


def hook_cost(
    env: dict[str, str],
    root: Path,
    no_hooks: Path,
    runs: int,
    first: int,
    label: str,
    target: float,
    anchored: bool = False,
) -> None:
    """Print the median `git commit` time without and with the hooks, and the difference."""
    plain, hooked = [], []
    for i in range(first, first + runs):
        plain.append(
            timed_commit(env, root, 2 * i, "-c", f"core.hooksPath={no_hooks}", anchored=anchored)
        )
        wait_idle(root)
        hooked.append(timed_commit(env, root, 2 * i + 1, anchored=anchored))
        wait_idle(root)
    added = statistics.median(hooked) - statistics.median(plain)
    print(
        f"git commit ({label}), median of {runs}: without hooks {statistics.median(plain):.3f}s, "
        f"with hooks {statistics.median(hooked):.3f}s, added {added:.3f}s (target <= {target}s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    opts = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="zg-bench-hooks-"))
    try:
        # no real daemon or config, "no daemon" stays so (an auto-mode search must not start one), a git identity
        env = private_env(
            base,
            autostart=False,
            git_identity=("b", "b@example.com"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        )
        root = base / "repo"
        shutil.copytree(
            SOURCE, root / "zgrep", ignore=shutil.ignore_patterns("__pycache__", "models")
        )
        sh(env, root, "git", "init", "-q", "-b", "main")
        sh(env, root, "git", "add", ".")
        sh(env, root, "git", "commit", "-q", "-m", "init")
        sh(env, root, ZG, "index")
        sh(env, root, ZG, "hooks", "install")
        (base / "no-hooks").mkdir()
        hook_cost(env, root, base / "no-hooks", opts.runs, 0, "no ADRs", 0.1)
        (root / "docs" / "adr").mkdir(parents=True)
        (root / "docs" / "adr" / "0001-hooks.md").write_text(ADR)
        (root / "docs" / "adr" / "0002-git.md").write_text(ADR2)
        sh(env, root, "git", "add", ".")
        sh(
            env, root, "git", "commit", "-q", "-m", "adr"
        )  # the check runs and caches the anchor set
        wait_idle(root)
        hook_cost(
            env, root, base / "no-hooks", opts.runs, 100, "two ADRs, no anchored file staged", 0.1
        )
        hook_cost(
            env,
            root,
            base / "no-hooks",
            opts.runs,
            200,
            "two ADRs, an anchored file staged",
            0.5,
            anchored=True,
        )
        direct = freshness(env, root, opts.runs, 1000)
        print(
            f"commit -> indexed, no daemon: median {statistics.median(direct):.2f}s, "
            f"max {max(direct):.2f}s over {opts.runs} (target <= 15s)"
        )
        on = subprocess.run(
            [ZG, "server", "on"], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
        if on.returncode != 0:
            print(
                f"commit -> indexed, daemon: not measured (zg server on failed: {on.stderr.strip()})"
            )
            return 0
        try:
            sh(env, root, ZG, "search", "warm up the daemon", "--json")
            daemon = freshness(env, root, opts.runs, 2000)
            print(
                f"commit -> indexed, daemon running: median {statistics.median(daemon):.2f}s, "
                f"max {max(daemon):.2f}s over {opts.runs} (target <= 5s)"
            )
        finally:
            subprocess.run(
                [ZG, "server", "off"], cwd=root, env=env, capture_output=True, timeout=60
            )
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
