"""Time `zg adr check --staged` as a whole command: 200 ADRs, a staged commit touching 20 files.

Usage: python bench/adr_check.py [--adrs 200] [--files 20] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import Stopwatch

ZG = str(Path(sys.executable).parent / "zg")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def module(i: int, extra: str = "") -> str:
    funcs = "".join(
        f"\n\ndef handler_{i}_{k}(request):\n    return request.get({k}){extra}\n" for k in range(8)
    )
    return (
        f'"""Module {i}."""\n\n\nclass Service{i}:\n    def run(self):\n        return {i}\n{funcs}'
    )


def build(root: Path, n_adrs: int, n_modules: int) -> None:
    git(root, "init", "-q", "-b", "main")
    for i in range(n_modules):
        (root / "src" / f"pkg{i % 10}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"pkg{i % 10}" / f"mod{i}.py").write_text(module(i))
    (root / "docs" / "adr").mkdir(parents=True)
    for n in range(1, n_adrs + 1):
        mods = [(n * 7 + k) % n_modules for k in range(3)]
        anchors = "".join(
            f"  - {{path: src/pkg{m % 10}/mod{m}.py, symbol: handler_{m}_{k}}}\n"
            for k, m in enumerate(mods)
        )
        anchors += (
            f"  - {{path: src/pkg{mods[0] % 10}/mod{mods[0]}.py, symbol: Service{mods[0]}.run}}\n"
        )
        status = "accepted" if n % 5 else "deprecated"
        (root / "docs" / "adr" / f"{n:04d}-decision-{n}.md").write_text(
            f"---\nid: ADR-{n:04d}\ntitle: Decision {n}\nstatus: {status}\ndate: 2024-01-01\nchange_type: api\n"
            f"code_anchors:\n{anchors}constraints:\n  - Rule {n}\ntags: [bench]\n---\n\n# ADR-{n:04d}\n\n"
            f"## Context\n\nText.\n\n## Decision\n\nText.\n"
        )
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=root, check=True, env=env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--adrs", type=int, default=200)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--modules", type=int, default=300)
    ap.add_argument("--runs", type=int, default=5)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, opts.adrs, opts.modules)
        for i in range(opts.files):
            path = root / "src" / f"pkg{i % 10}" / f"mod{i}.py"
            path.write_text(module(i, extra="  # touched"))
        git(root, "add", "-A")
        times, rc = [], 0
        for _ in range(opts.runs):
            with Stopwatch() as clock:
                proc = subprocess.run(
                    [ZG, "adr", "check", "--staged"], cwd=root, capture_output=True, text=True
                )
            times.append(clock.elapsed)
            rc = proc.returncode
        print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr.strip())
        print(
            f"zg adr check --staged: {opts.adrs} ADRs, {opts.files} staged files: "
            f"median {statistics.median(times) * 1000:.0f} ms, best {min(times) * 1000:.0f} ms, exit {rc}"
        )
        return 0 if rc == 0 and statistics.median(times) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
