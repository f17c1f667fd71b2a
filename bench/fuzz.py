"""Fuzz the daemon while it serves (issue 23): hostile frames (tests/fuzzframes.py, the fuzz test's own) aimed
at two held workspaces through every spelling of their roots (`..`, `.`, trailing slashes), with other daemons'
tokens, while a second client runs valid searches in both workspaces, also through `..` spellings. Every valid
search must be answered, with the right first hit, within --deadline seconds.

    python bench/fuzz.py [--frames 2400] [--seed 23] [--deadline 2] [--json]

Prints frames sent/answered with their reply codes, the valid searches (lost, late, wrong, latency
percentiles) and how `zg server off` ended the daemon. Exit 0 when every frame got an answer, no valid search
was lost, late or wrong, and the daemon stopped without a signal; else 1.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import zmq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import percentile, private_env  # noqa: E402
from fuzzframes import fuzz_frames, spellings  # noqa: E402
from zgrep.server import protocol, runtime  # noqa: E402

ZG = str(Path(sys.executable).with_name("zg"))
WINDOW = 50  # fuzzed frames in flight at once: below every socket's high-water mark
LOST_S = 30.0  # a reply later than this counts as lost
WORKSPACES = {  # name: (file, text, query, expected first hit)
    "alpha": (
        "retry.py",
        "import time\n\n\ndef retry_with_backoff(call, attempts=5):\n"
        '    """Retry `call` with exponential backoff."""\n    for n in range(attempts):\n'
        "        try:\n            return call()\n        except OSError:\n            time.sleep(2 ** n)\n",
        "retry with exponential backoff",
    ),
    "beta": (
        "cache.py",
        'class LruCache:\n    """A least-recently-used cache with a size bound."""\n\n'
        "    def __init__(self, size):\n        self.size = size\n        self.items = {}\n",
        "least recently used cache",
    ),
}
FILLER = 'def helper_{i}(value):\n    """Add {i} to a value."""\n    return value + {i}\n'


def make_workspace(root: Path, env: dict[str, str], name: str) -> None:
    """A committed git repository: the workspace's one distinctive file and a few fillers."""
    root.mkdir(parents=True)
    path, text, _ = WORKSPACES[name]
    (root / path).write_text(text)
    for i in range(6):
        (root / f"filler_{i}.py").write_text(FILLER.format(i=i))
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=root, env=env, check=True, capture_output=True)


def dealer(ctx: zmq.Context, endpoint: str) -> zmq.Socket:
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def fuzz(ctx: zmq.Context, endpoint: str, frames: list[list[bytes]], out: dict[str, Any]) -> None:
    """Send `frames` WINDOW at a time; count the answers by reply code."""
    sock = dealer(ctx, endpoint)
    sock.setsockopt(zmq.RCVTIMEO, int(LOST_S * 1000))
    codes: dict[str, int] = {}
    sent = answered = 0
    try:
        for start in range(0, len(frames), WINDOW):
            window = frames[start : start + WINDOW]
            for message in window:
                sock.send_multipart(message)
                sent += 1
            for _ in window:
                reply = protocol.decode_response(sock.recv_multipart()[-1])
                answered += 1
                code = "ok" if reply["ok"] else reply["error"]["code"]
                codes[code] = codes.get(code, 0) + 1
                if code == "internal":  # a bug: the message names the exception
                    out.setdefault("internal_messages", []).append(reply["error"]["message"][:300])
    except zmq.Again:
        out["stalled_after"] = answered
    finally:
        sock.close()
        out.update(sent=sent, answered=answered, codes=dict(sorted(codes.items())))


def search_while(
    ctx: zmq.Context,
    endpoint: str,
    token: str,
    roots: dict[str, Path],
    done: threading.Event,
    rng: random.Random,
    out: dict[str, Any],
) -> None:
    """Valid searches, one at a time, in both workspaces through their spellings, until `done`."""
    sock = dealer(ctx, endpoint)
    latencies: list[float] = []
    lost = wrong = 0
    try:
        while not done.is_set():
            name = rng.choice(sorted(roots))
            spelling = rng.choice(spellings(roots[name]))
            path, _, query = WORKSPACES[name]
            request = protocol.make_request(
                "search", spelling, {"queries": [query], "limit": 3, "refresh": "off"}, token=token
            )
            started = time.perf_counter()
            sock.send_multipart([b"", protocol.encode(request)])
            if not sock.poll(int(LOST_S * 1000)):
                lost += 1
                sock.close()
                sock = dealer(
                    ctx, endpoint
                )  # a fresh socket: a late reply must not answer the next search
                continue
            reply = protocol.decode_response(sock.recv_multipart()[-1])
            latencies.append(time.perf_counter() - started)
            hits = reply.get("result", {}).get("hits") if reply["ok"] else None
            if not hits or hits[0]["path"] != path:
                wrong += 1
                out.setdefault("wrong_examples", []).append(reply if not reply["ok"] else hits[:1])
    finally:
        sock.close()
        out.update(searches=len(latencies) + lost, lost=lost, wrong=wrong, latencies=latencies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument(
        "--deadline", type=float, default=2.0, help="seconds a valid search may take"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="zg-fuzz-"))
    env = private_env(
        base / "user", home=True, git_identity=("t", "t@example.com"), ZG_SERVER_AUTOSTART="false"
    )
    roots = {name: base / name for name in WORKSPACES}
    for name, root in roots.items():
        make_workspace(root, env, name)
    report: dict[str, Any] = {
        "frames_asked": args.frames,
        "seed": args.seed,
        "deadline_s": args.deadline,
    }
    ctx = zmq.Context()
    try:
        started = subprocess.run(
            [ZG, "server", "on"], env=env, capture_output=True, text=True, timeout=180
        )
        if started.returncode:
            print(f"fuzz: zg server on failed: {started.stderr.strip()}", file=sys.stderr)
            return 1
        for root in roots.values():
            indexed = subprocess.run(
                [ZG, "index", "--mode", "server"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if indexed.returncode:
                print(f"fuzz: zg index in {root} failed: {indexed.stderr.strip()}", file=sys.stderr)
                return 1
        rundir = Path(env["XDG_RUNTIME_DIR"]) / "zgrep"
        info = json.loads((rundir / runtime.INFO_FILE).read_text())
        token = (rundir / runtime.TOKEN_FILE).read_text()
        rng = random.Random(args.seed)
        empty = base / "empty"  # a directory that is no repository, spelled through `..` too
        empty.mkdir()
        targets = [s for root in roots.values() for s in spellings(root)] + [
            str(empty),
            f"{roots['alpha']}/../empty",
        ]
        foreign = [
            secrets.token_urlsafe(32) for _ in range(3)
        ]  # other daemons' tokens: this one's shape
        frames = [fuzz_frames(rng, token, targets, foreign) for _ in range(args.frames)]
        fuzzed: dict[str, Any] = {}
        searched: dict[str, Any] = {}
        done = threading.Event()
        searcher = threading.Thread(
            target=search_while,
            args=(
                ctx,
                info["endpoint"],
                token,
                roots,
                done,
                random.Random(args.seed + 1),
                searched,
            ),
        )
        searcher.start()
        clock = time.perf_counter()
        fuzz(ctx, info["endpoint"], frames, fuzzed)
        fuzz_s = time.perf_counter() - clock
        done.set()
        searcher.join()
        status = subprocess.run(
            [ZG, "server", "status", "--json"], env=env, capture_output=True, text=True, timeout=60
        )
        held = json.loads(status.stdout).get("workspaces", []) if status.returncode == 0 else []
        off = subprocess.run(
            [ZG, "server", "off"], env=env, capture_output=True, text=True, timeout=120
        )
        latencies = sorted(searched.pop("latencies"))
        late = sum(t > args.deadline for t in latencies)
        report.update(
            fuzz={**fuzzed, "seconds": round(fuzz_s, 1)},
            searches={
                **searched,
                "late": late,
                "p50_ms": round(percentile(latencies, 0.5) * 1000, 1) if latencies else None,
                "p95_ms": round(percentile(latencies, 0.95) * 1000, 1) if latencies else None,
                "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
            },
            workspaces_held=sorted(w["root"] for w in held),
            server_off=off.stdout.strip(),
        )
        ok = (
            fuzzed["answered"] == fuzzed["sent"] == args.frames
            and not searched["lost"]
            and not searched["wrong"]
            and not late
            and searched["searches"] > 0
            and "SIG" not in off.stdout
            and off.returncode == 0
        )
        report["ok"] = ok
    finally:
        subprocess.run([ZG, "server", "off"], env=env, capture_output=True, timeout=120)
        ctx.term()
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        f, s = report["fuzz"], report["searches"]
        print(
            f"frames: {f['answered']}/{f['sent']} answered in {f['seconds']} s; codes {f['codes']}"
        )
        print(
            f"valid searches: {s['searches']} ({s['lost']} lost, {s['late']} later than {args.deadline:g} s, "
            f"{s['wrong']} wrong); p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms"
        )
        print(f"workspaces held: {len(report['workspaces_held'])}; {report['server_off']}")
        print("ok" if report["ok"] else "FAILED")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
