"""Large-repository figures (issue 9) on the Django 5.1.4 sdist made a one-commit git repo.

Prints: a cold `zg index` with its per-phase breakdown (`phases` of the JSON report) and the
peak RSS of every process involved (sampled from /proc: the zg process, its index workers, its
embedded Milvus engine, and a Milvus server when one is used); no-change and one-file incremental
`zg index`; search p50 in direct and server mode (whole commands); the daemon's steady RSS (with its
Milvus engine) and its idle CPU over 60 s; auto mode with no daemon (first search in-process, the
second, --autostart-wait s later, by the autostarted daemon). `--milvus-server` runs it all against the
native engine serving gRPC on 127.0.0.1 instead of embedded Milvus Lite. Run by another checkout's
venv (`/other/.venv/bin/python bench/scale.py`) it measures that zg. The sdist is fetched once with
pip into --cache.
Usage: python bench/scale.py [--cache DIR] [--runs 10] [--idle-s 60] [--milvus-server]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable

from common import Stopwatch, percentile, private_env

BIN = Path(sys.executable).parent
ZG = str(BIN / "zg")
SDIST = "Django-5.1.4.tar.gz"
QUERIES = [
    "how are database migrations applied",
    "QuerySet filter with Q objects",
    "csrf token check",
    "template variable resolution",
    "send_mail",
    "password hashing algorithm",
]


def fetch_sdist(cache: Path) -> Path:
    """The django==5.1.4 sdist, downloaded with pip the first time."""
    target = cache / SDIST
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "django==5.1.4",
                "-d",
                str(cache),
            ],
            check=True,
        )
    return target


def make_repo(sdist: Path, base: Path) -> Path:
    """The sdist extracted as a one-commit git repository."""
    with tarfile.open(sdist) as tar:
        tar.extractall(base, filter="data")
    root = base / "Django-5.1.4"
    git = [
        "git",
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
        "-c",
        "safe.directory=*",
    ]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "django 5.1.4"], cwd=root, check=True)
    return root


# --- processes -------------------------------------------------------------------------------


def _status(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            pass
    return out


def _label(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(a.decode(errors="replace") for a in argv if a)
    if "zgrep.index.prepare" in text:
        return "index worker"
    if argv[0].endswith(b"/milvus") or "milvus-lite" in text:
        return "Milvus server" if b"unix:" not in b" ".join(argv) else "Milvus engine"
    if "server run" in text:
        return "zg daemon"
    if "python" not in Path(argv[0].decode(errors="replace")).name and not text.startswith(ZG):
        return Path(argv[0].decode(errors="replace")).name
    return "zg " + (argv[2].decode() if len(argv) > 2 else "")


class Peaks:
    """Samples a process tree (plus extra pids) every 0.1 s: peak RSS per process and of the sum."""

    def __init__(self, root_pid: int, extra: list[int]) -> None:
        self.pids = [root_pid, *extra]
        self.per: dict[int, tuple[str, int]] = {}
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            seen, queue, total = set(), list(self.pids), 0
            while queue:
                pid = queue.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                queue += _children(pid)
                hwm, rss = _status(pid, "VmHWM"), _status(pid, "VmRSS")
                total += rss
                if pid not in self.per:  # read the process's name once, not on every sample
                    self.per[pid] = (_label(pid), 0)
                label, best = self.per[pid]
                self.per[pid] = (label, max(best, hwm))
            self.total = max(self.total, total)
            time.sleep(0.1)

    def stop(self) -> str:
        self._stop.set()
        self._thread.join()
        worst: dict[str, list[int]] = {}
        for label, peak in self.per.values():
            worst.setdefault(label, []).append(peak)
        parts = [
            f"{label} {max(p) / 2**20:.0f} MB" + (f" (x{len(p)})" if len(p) > 1 else "")
            for label, p in sorted(worst.items())
            if max(p)
        ]
        return ", ".join(parts) + f"; sum at peak {self.total / 2**20:.0f} MB"


def zg(
    env: dict[str, str],
    cwd: Path,
    *args: str,
    extra_pids: list[int] | None = None,
    peaks: bool = False,
) -> tuple[float, subprocess.CompletedProcess[str], str]:
    """One whole `zg` process: (wall seconds, result, peak-RSS summary when `peaks`)."""
    with Stopwatch() as clock:
        proc = subprocess.Popen(
            [ZG, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        sampler = Peaks(proc.pid, extra_pids or []) if peaks else None
        out, err = proc.communicate()
    summary = sampler.stop() if sampler else ""
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"zg {' '.join(args)} exited {proc.returncode}: {err.strip()}")
    return clock.elapsed, result, summary


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_pid(env: dict[str, str], cwd: Path) -> int | None:
    proc = subprocess.run(
        [ZG, "server", "status", "--json"], cwd=cwd, env=env, capture_output=True, text=True
    )
    try:
        info = json.loads(proc.stdout)
    except ValueError:
        return None
    pid = info.get("pid") if info.get("running", True) else None
    return pid if isinstance(pid, int) else None


def wait_for(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


# --- the runs --------------------------------------------------------------------------------


def index_figures(env: dict[str, str], root: Path, extra: list[int], runs: int) -> None:
    wall, proc, peaks = zg(
        env, root, "index", "--json", "--mode", "direct", extra_pids=extra, peaks=True
    )
    report = json.loads(proc.stdout)
    print(
        f"cold zg index        {wall:.1f} s  ({report['files']} files, {report['chunks']} chunks, "
        f"skipped {report.get('skipped')})"
    )
    status = json.loads(zg(env, root, "status", "--json", "--mode", "direct")[1].stdout)
    print(f"  Milvus engine      {status.get('milvus_engine', 'milvus-lite 3 (pure Python)')}")
    print(f"  peak RSS           {peaks}")
    phases = report.get("phases", {})
    print("  phases (s)         " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()))
    quiet = sorted(zg(env, root, "index", "--json", "--mode", "direct")[0] for _ in range(runs))
    print(
        f"no-change zg index   p50 {statistics.median(quiet):.2f} s (min {quiet[0]:.2f}, {runs} runs)"
    )
    targets = sorted(root.glob("django/*/*.py"))[:runs]
    walls = []
    for target in targets:
        target.write_text(target.read_text() + "\n# touched by bench/scale.py\n")
        wall, proc, _ = zg(env, root, "index", "--json", "--mode", "direct")
        assert json.loads(proc.stdout)["changed"] == 1, proc.stdout
        walls.append(wall)
    walls.sort()
    print(
        f"one-file incremental p50 {statistics.median(walls):.2f} s (min {walls[0]:.2f}, max {walls[-1]:.2f})"
    )


def search_series(
    env: dict[str, str], root: Path, mode: str, runs: int
) -> tuple[list[float], set[str]]:
    walls, used = [], set()
    for i in range(runs):
        wall, proc, _ = zg(env, root, "search", QUERIES[i % len(QUERIES)], "--json", "--mode", mode)
        walls.append(wall)
        used.add(json.loads(proc.stdout).get("mode", "?"))
    return sorted(walls), used


def server_figures(env: dict[str, str], root: Path, runs: int, idle_s: float) -> None:
    walls, used = search_series(env, root, "direct", max(3, runs // 2))
    print(
        f"direct zg search     p50 {statistics.median(walls):.2f} s over {len(walls)} runs (modes {sorted(used)})"
    )
    subprocess.run([ZG, "server", "on"], cwd=root, env=env, check=True, capture_output=True)
    try:
        zg(env, root, "search", "warm up", "--json", "--mode", "server")
        walls, used = search_series(env, root, "server", runs * 2)
        print(
            f"server zg search     p50 {statistics.median(walls):.3f} s, p90 {percentile(walls, 0.9):.3f} s "
            f"over {len(walls)} runs (modes {sorted(used)})"
        )
        pid = daemon_pid(env, root)
        if pid:
            engines = [c for c in _children(pid) if _label(c) == "Milvus engine"]
            engine_rss = sum(_status(c, "VmRSS") for c in engines)
            print(
                f"daemon steady RSS    {(_status(pid, 'VmRSS') + engine_rss) / 2**20:.0f} MB with its Milvus engine "
                f"(daemon {_status(pid, 'VmRSS') / 2**20:.0f} MB, peak {_status(pid, 'VmHWM') / 2**20:.0f} MB; "
                f"engine {engine_rss / 2**20:.0f} MB)"
            )
            before = cpu_seconds(pid)
            time.sleep(idle_s)
            used_s = cpu_seconds(pid) - before
            print(
                f"idle daemon CPU      {100 * used_s / idle_s:.2f}% of a core over {idle_s:.0f} s"
            )
    finally:
        subprocess.run([ZG, "server", "off"], cwd=root, env=env, capture_output=True)


def autostart_figures(env: dict[str, str], root: Path, wait_s: float) -> None:
    """No daemon, auto mode: the first search answers in-process; the second, `wait_s` later, is timed."""
    auto = {**env, "ZG_SERVER_AUTOSTART": "true"}
    wall1, proc1, _ = zg(auto, root, "search", QUERIES[0], "--json")
    time.sleep(wait_s)
    wall2, proc2, _ = zg(auto, root, "search", QUERIES[1], "--json")
    print(
        f"auto, no daemon      1st search {wall1:.2f} s (mode {json.loads(proc1.stdout).get('mode')}); 2nd search "
        f"{wait_s:.0f} s later: {wall2:.3f} s (mode {json.loads(proc2.stdout).get('mode')})"
    )
    subprocess.run([ZG, "server", "off"], cwd=root, env=auto, capture_output=True)


def milvus_server(base: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The native Milvus engine serving gRPC on a free loopback port (milvus-lite 3's `milvus-lite server` before)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    try:
        from zgrep.store.native import command
    except ImportError:  # a zg of the pure-Python Milvus Lite
        argv, env = (
            [
                str(BIN / "milvus-lite"),
                "server",
                "--data-dir",
                str(base / "milvus"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            None,
        )
    else:
        argv, env = command(base / "server.db", f"127.0.0.1:{port}")
    proc = subprocess.Popen(
        argv, env=env, cwd=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    uri = f"http://127.0.0.1:{port}"
    from pymilvus import MilvusClient

    def answers() -> bool:
        try:
            client = MilvusClient(uri=uri, timeout=2)
        except Exception:
            return False
        try:
            client.list_collections()
            return True
        except Exception:
            return False
        finally:
            client.close()

    if not wait_for(answers, 60):
        raise SystemExit("the Milvus server did not answer")
    return proc, uri


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "zgrep-bench")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--idle-s", type=float, default=60.0)
    ap.add_argument(
        "--autostart-wait",
        type=float,
        default=10.0,
        help="seconds between the two auto-mode searches",
    )
    ap.add_argument(
        "--milvus-server", action="store_true", help="index into a Milvus server on 127.0.0.1"
    )
    opts = ap.parse_args()
    sdist = fetch_sdist(opts.cache)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = make_repo(sdist, base / "src")
        extra: dict[str, str] = {}
        server = None
        if opts.milvus_server:
            server, uri = milvus_server(base)
            extra["ZG_MILVUS_URI"] = uri
            print(f"Milvus: a server at {uri}")
        # no real daemon or user config, autostart off unless asked; bytecode cached as for an installed zg
        env = private_env(base, autostart=False, ci=False, pycache=True) | extra
        try:
            index_figures(env, root, [server.pid] if server else [], opts.runs)
            server_figures(env, root, opts.runs, opts.idle_s)
            autostart_figures(env, root, opts.autostart_wait)
            if server:
                print(
                    f"Milvus server        RSS {_status(server.pid, 'VmRSS') / 2**20:.0f} MB "
                    f"(peak {_status(server.pid, 'VmHWM') / 2**20:.0f} MB)"
                )
        finally:
            if server:
                server.kill()
                server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
