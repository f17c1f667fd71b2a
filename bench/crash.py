"""Crash consistency: random `kill -9` during full and incremental index runs, direct and daemon.

Each run edits, deletes and adds a few files of a generated workspace (every file defines one
function with a planted identifier unique to its current content), starts `zg index` (direct) or
asks the daemon to index (then kills the daemon), sends SIGKILL after a random delay, runs
`zg index --mode direct`, and checks the stored rows against the files on disk: every planted
identifier on disk is found in exactly one row, none from edited-away or deleted content, no
duplicate chunk ids, rows agree with the file state, the manifest is complete, `zg status` is clean;
the killed process's Milvus engine exits on its own and leaves no lock held.
The runs cycle through full/incremental x direct/daemon.
Usage: python bench/crash.py [--runs 50] [--files 160] [--seed 1] [--max-delay 3.0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import Stopwatch, private_env

ZG = str(Path(sys.executable).with_name("zg"))
PLANTED = re.compile(r"\bplant_[0-9a-z]+_[0-9]+\b")
KINDS = [
    ("incremental", "direct"),
    ("full", "direct"),
    ("incremental", "daemon"),
    ("full", "daemon"),
]


def zg(
    env: dict[str, str], *args: str, cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [ZG, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"zg {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def module(name: str) -> str:
    """One function (one chunk) named by its planted identifier."""
    body = "\n".join(f"    value_{j} = item * {j} + {len(name)}" for j in range(10))
    return f'def {name}(item):\n    """Compute {name}."""\n{body}\n    return value_9\n'


class Tree:
    """The generated workspace: file i holds identifier plant_<generation>_<i>."""

    def __init__(self, root: Path, files: int, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.next_file = 0
        self.generation = 0
        root.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        for _ in range(files):
            self.write(self.new_path())

    def new_path(self) -> Path:
        self.next_file += 1
        return self.root / f"pkg{self.next_file % 8}" / f"mod{self.next_file:04d}.py"

    def write(self, path: Path) -> None:
        self.generation += 1
        number = int(path.stem[3:])
        path.parent.mkdir(exist_ok=True)
        path.write_text(module(f"plant_{self.generation:x}_{number}"))

    def files(self) -> list[Path]:
        return sorted(self.root.glob("pkg*/mod*.py"))

    def mutate(self) -> None:
        """Edit, delete and add a few files."""
        files = self.files()
        for path in self.rng.sample(files, min(len(files), self.rng.randint(5, 40))):
            self.write(path)
        for path in self.rng.sample(self.files(), self.rng.randint(0, 8)):
            path.unlink()
        for _ in range(self.rng.randint(0, 8)):
            self.write(self.new_path())

    def planted(self) -> Counter[str]:
        return Counter(m for p in self.files() for m in set(PLANTED.findall(p.read_text())))


def daemon_pid(env: dict[str, str]) -> int:
    from zgrep.server import runtime

    info = Path(env["XDG_RUNTIME_DIR"]) / "zgrep" / runtime.INFO_FILE
    return int(json.loads(info.read_text())["pid"])


def kill_during(
    env: dict[str, str], root: Path, kind: str, mode: str, delay: float
) -> float | None:
    """Start the index run, SIGKILL the process doing the work after `delay` s; None when it was
    still running, else how long the run took."""
    args = ["index", "--mode", "direct" if mode == "direct" else "server"] + (
        ["--full"] if kind == "full" else []
    )
    if mode == "daemon":
        zg(env, "server", "on", cwd=root)
        victim = daemon_pid(env)
    client = subprocess.Popen(
        [ZG, *args], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    if mode == "direct":
        victim = client.pid
    clock = Stopwatch()
    while clock.elapsed < delay and client.poll() is None:
        time.sleep(0.005)
    took = None if client.poll() is None else clock.elapsed
    try:
        os.kill(victim, signal.SIGKILL)
    except ProcessLookupError:
        took = took or delay
    client.wait(timeout=120)
    if mode == "daemon":  # wait until the kernel has released the daemon (and its locks)
        end = time.monotonic() + 30
        while Path(f"/proc/{victim}").exists() and time.monotonic() < end:
            time.sleep(0.02)
    return took


def stored_rows(root: Path) -> list[dict[str, Any]]:
    """Every row (id, path, content) in the workspace's collection, read in this process."""
    from zgrep.engine import Engine

    engine = Engine(root)
    try:
        return engine.open_store(create=False).rows(["id", "path", "content"])
    finally:
        engine.close()


def leftovers(root: Path, wait_s: float = 15.0) -> list[str]:
    """What a killed run left behind after `wait_s`: its Milvus engine still running, a lock still held."""
    from zgrep.locking import ENGINE_LOCK, lock_holder
    from zgrep.store.native import engine_pids, holder

    db = root / ".zgrep" / "milvus.db"
    end = time.monotonic() + wait_s
    while engine_pids(db) and time.monotonic() < end:
        time.sleep(0.02)
    found = [f"Milvus engine pid {pid} still running" for pid in engine_pids(db)]
    for name, who in (
        ("engine.lock", lock_holder(root / ".zgrep" / ENGINE_LOCK)),
        ("milvus lock", holder(db)),
    ):
        if who:
            found.append(f"stale {name} held by {who}")
    return found


def check(env: dict[str, str], tree: Tree) -> list[str]:
    """Index, then compare the stored rows with the files on disk; the problems found."""
    root = tree.root
    problems = leftovers(root)
    out = zg(env, "index", "--mode", "direct", "--json", cwd=root, check=False)
    if out.returncode != 0:
        return [f"zg index after the kill exited {out.returncode}: {out.stderr.strip()}"]
    rows = stored_rows(root)
    found = Counter(m for r in rows for m in set(PLANTED.findall(r["content"])))
    wanted = tree.planted()
    missing = sorted(set(wanted) - set(found))
    extra = sorted(set(found) - set(wanted))
    doubled = sorted(k for k, n in found.items() if k in wanted and n != 1)
    if missing:
        problems.append(f"{len(missing)} planted identifiers missing, e.g. {missing[:3]}")
    if extra:
        problems.append(
            f"{len(extra)} identifiers from edited or deleted files still stored, e.g. {extra[:3]}"
        )
    if doubled:
        problems.append(f"{len(doubled)} identifiers stored more than once, e.g. {doubled[:3]}")
    if len({r["id"] for r in rows}) != len(rows):
        problems.append("duplicate chunk ids")
    state = root / ".zgrep"
    files = json.loads((state / "files.json").read_text())["files"]
    if len(rows) != sum(rec[4] for rec in files.values()):
        problems.append(
            f"{len(rows)} rows, the file state records {sum(rec[4] for rec in files.values())}"
        )
    if not json.loads((state / "manifest.json").read_text()).get("complete"):
        problems.append("manifest not complete")
    status = zg(env, "status", "--mode", "direct", "--json", cwd=root, check=False)
    if status.returncode != 0 or json.loads(status.stdout).get("problem"):
        problems.append(
            f"zg status: exit {status.returncode} {status.stdout[-200:]} {status.stderr.strip()}"
        )
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--files", type=int, default=160)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--max-delay",
        type=float,
        default=4.0,
        help="kill after 0.05..this many seconds at random (narrowed to how long runs of the kind take)",
    )
    opts = ap.parse_args()
    rng = random.Random(opts.seed)
    with tempfile.TemporaryDirectory(prefix="zg-crash-") as tmp:
        env = private_env(
            Path(tmp) / "user", home=True, HF_HUB_OFFLINE="1"
        )  # no real daemon or cache
        tree = Tree(Path(tmp) / "repo", opts.files, rng)
        zg(env, "index", "--mode", "direct", cwd=tree.root)
        consistent = killed_runs = 0
        longest = {kinds: opts.max_delay for kinds in KINDS}
        try:
            for run in range(opts.runs):
                kind, mode = KINDS[run % len(KINDS)]
                tree.mutate()
                delay = rng.uniform(0.05, longest[kind, mode])
                took = kill_during(env, tree.root, kind, mode, delay)
                killed = took is None
                if took is not None:
                    longest[kind, mode] = max(0.1, took)
                killed_runs += killed
                problems = check(env, tree)
                consistent += not problems
                verdict = "consistent" if not problems else "INCONSISTENT: " + "; ".join(problems)
                print(
                    f"run {run + 1:3d} {kind:11s} {mode:6s} kill at {delay:4.2f}s "
                    f"{'(mid-run)' if killed else '(after it ended)'}: {verdict}",
                    flush=True,
                )
        finally:
            zg(env, "server", "off", cwd=tree.root, check=False)
        left = leftovers(tree.root)
        if left:
            print("after the last run: " + "; ".join(left))
            consistent = min(consistent, opts.runs - 1)
    print(
        f"\n{consistent}/{opts.runs} consistent ({killed_runs} runs killed mid-run), "
        f"{opts.files} files, seed {opts.seed}"
    )
    sys.exit(0 if consistent == opts.runs else 1)


if __name__ == "__main__":
    main()
