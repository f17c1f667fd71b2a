"""Precision and recall of `zg callers` / `zg trace --depth 1` against type-aware references, and callers latency.

Ground truth: jedi's `get_references` / `goto` (Python: flask 3.1.3 and click 8.3.2, the sdists' src/) and
TypeScript's language service `findReferences` / `getDefinitionAtPosition` (redux's src/). A caller is
file + innermost enclosing definition (its decorators included; "<module>" outside any); references inside
import statements count (kind `import`). Trace depth 1 is checked against the project definitions that the
calls in a definition's own body (not nested definitions, not decorators) go to. Definitions are sampled
with a fixed seed. jedi and typescript are bench-only: never runtime dependencies of zgrep.

Setup (once):
    python3 -m venv /work/relbench/.venv && /work/relbench/.venv/bin/pip install jedi
    cd /work/relbench && npm install typescript@5     # 7.x (the native port) has no JS language service
Usage:
    .venv/bin/python bench/relations.py [--jedi-python PY] [--typescript DIR] [--sdists DIR] [--js-corpus DIR]
        [--corpora flask,click,redux] [--samples 25] [--seed 10] [--runs 20] [--show-misses]
    env: ZG_RELBENCH_PYTHON (default /work/relbench/.venv/bin/python), ZG_RELBENCH_TYPESCRIPT (default
    /work/relbench/node_modules/typescript), ZG_BENCH_SDISTS (default /work/corpora/_sdists),
    ZG_RELBENCH_JS (default /work/corpora/redux/src).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import Stopwatch, private_env  # noqa: E402

ZG = str(Path(sys.executable).with_name("zg"))
SDISTS = {"flask": "flask-3.1.3", "click": "click-8.3.2"}
MODULE = "<module>"
Key = tuple[str, str]  # (path, qualified name of the innermost definition, or <module>)


@dataclass
class PyDef:
    """A Python definition as `ast` sees it: span from its first decorator, name position."""

    path: str
    qualname: str
    start: int
    end: int
    line: int
    col: int
    overload: bool
    calls: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, truth: set[Key], found: set[Key]) -> None:
        self.tp += len(truth & found)
        self.fp += len(found - truth)
        self.fn += len(truth - found)

    def figures(self) -> tuple[float, float]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0
        return precision, recall


# ----- workspaces ------------------------------------------------------------------------------------------


def workspace(name: str, tmp: Path, sdists: Path, js_corpus: Path) -> Path:
    """A scratch copy of one corpus (the sdist's src/ or the JS/TS tree), indexed by `zg index`."""
    ws = tmp / name
    if name in SDISTS:
        with tarfile.open(sdists / f"{SDISTS[name]}.tar.gz") as archive:
            archive.extractall(tmp / "sdists", filter="data")
        shutil.copytree(tmp / "sdists" / SDISTS[name] / "src", ws)
    else:
        shutil.copytree(js_corpus, ws)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    proc = subprocess.run(
        [ZG, "index", str(ws), "--mode", "direct", "--json"], capture_output=True, cwd=ws, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"zg index failed on {name}: {proc.stderr}")
    return ws


# ----- Python ground truth (ast + jedi) --------------------------------------------------------------------


def python_defs(ws: Path) -> dict[str, list[PyDef]]:
    """Every function and class of every file, with the calls of its own body."""
    out: dict[str, list[PyDef]] = {}
    for file in sorted(ws.rglob("*.py")):
        rel = file.relative_to(ws).as_posix()
        text = file.read_text()
        lines = text.splitlines()
        found: list[PyDef] = []

        def visit(
            node: ast.AST,
            scope: list[str],
            owner: PyDef | None,
            rel: str = rel,
            lines: list[str] = lines,
            found: list[PyDef] = found,
        ) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    head = lines[child.lineno - 1]
                    match = re.compile(rf"(?:def|class)\s+({re.escape(child.name)})\b").search(
                        head, child.col_offset
                    )
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    overload = any(
                        (isinstance(d, ast.Name) and d.id == "overload")
                        or (isinstance(d, ast.Attribute) and d.attr == "overload")
                        for d in child.decorator_list
                    )
                    definition = PyDef(
                        rel,
                        ".".join([*scope, child.name]),
                        start,
                        child.end_lineno or child.lineno,
                        child.lineno,
                        match.start(1) if match else child.col_offset,
                        overload,
                    )
                    found.append(definition)
                    for (
                        decorator
                    ) in child.decorator_list:  # decorator calls are nobody's body calls
                        visit(ast.Expr(decorator), scope, None)
                    body = ast.Module(
                        body=[
                            n for n in ast.iter_child_nodes(child) if n not in child.decorator_list
                        ],
                        type_ignores=[],
                    )
                    visit(body, [*scope, child.name], definition)
                    continue
                if owner is not None and isinstance(child, ast.Call):
                    position = _callee(child.func)
                    if position:
                        owner.calls.append(position)
                visit(child, scope, owner)

        visit(ast.parse(text), [], None)
        out[rel] = found
    return out


def _callee(func: ast.expr) -> tuple[int, int] | None:
    """Position of the called name (`f` in `f()`, `m` in `a.b.m()`)."""
    if isinstance(func, ast.Name):
        return func.lineno, func.col_offset
    if (
        isinstance(func, ast.Attribute)
        and func.end_lineno is not None
        and func.end_col_offset is not None
    ):
        return func.end_lineno, func.end_col_offset - len(func.attr)
    return None


def enclosing(defs: list[PyDef], line: int) -> str:
    """The innermost definition around a line (decorators included), or <module>."""
    inside = [d for d in defs if d.start <= line <= d.end]
    return max(inside, key=lambda d: (d.start, -d.end)).qualname if inside else MODULE


def jedi_truth(
    jedi_python: str, ws: Path, sample: list[PyDef], defs: dict[str, list[PyDef]]
) -> tuple[list[set[Key]], list[set[Key]]]:
    """Per sampled definition: the callers jedi finds, and what its body's calls go to."""
    gotos = [(d.path, line, col) for d in sample for line, col in d.calls]
    request = {"root": str(ws), "refs": [(d.path, d.line, d.col) for d in sample], "gotos": gotos}
    proc = subprocess.run(
        [jedi_python, str(HERE / "relations_jedi.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"jedi failed: {proc.stderr[-2000:]}")
    reply = json.loads(proc.stdout)
    heads = {(d.path, d.line, d.col): d for ds in defs.values() for d in ds}
    callers = []
    for d, refs in zip(sample, reply["refs"]):
        own = {(o.path, o.line, o.col) for o in defs[d.path] if o.qualname == d.qualname}
        callers.append(
            {
                (p, enclosing(defs[p], line))
                for p, line, col, _ in refs
                if (p, line, col) not in own and p in defs
            }
        )
    callees: list[set[Key]] = []
    at = 0
    for d in sample:
        found: set[Key] = set()
        for p, line, col, _ in (
            g for reply_list in reply["gotos"][at : at + len(d.calls)] for g in reply_list
        ):
            target = heads.get((p, line, col))
            if target is not None:
                found.add((p, target.qualname))
        at += len(d.calls)
        callees.append(found)
    return callers, callees


# ----- TypeScript ground truth -----------------------------------------------------------------------------


def ts_truth(
    typescript: str, ws: Path, samples: int, seed: int
) -> tuple[list[dict[str, Any]], list[set[Key]], list[set[Key]]]:
    """Sampled definitions with the callers and callees TypeScript's language service finds."""

    def node(*args: str) -> Any:
        proc = subprocess.run(
            ["node", str(HERE / "relations_ts.cjs"), typescript, str(ws), *args],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"typescript failed: {proc.stderr[-2000:]}")
        return json.loads(proc.stdout)

    every = [d for d in node("defs") if not d["overload"]]
    sample = random.Random(seed).sample(every, min(samples, len(every)))
    reply = node("query", json.dumps([[d["path"], d["pos"]] for d in sample]))
    callers = [{(p, q) for p, q in found} for found in reply["callers"]]
    callees = [{(p, q) for p, q in found} for found in reply["callees"]]
    return sample, callers, callees


# ----- zg --------------------------------------------------------------------------------------------------


def zg_callers(root: Path, path: str, qualname: str) -> set[Key]:
    from zgrep.relations.query import callers

    result = callers(root, f"{path}:{qualname}")
    # unknown_receiver lines are warnings (an `obj.name` whose obj has no known type), not claimed callers
    return {(c["path"], _qualified(c)) for c in result["callers"] if c["via"] != "unknown_receiver"}


def zg_callees(root: Path, path: str, qualname: str) -> set[Key]:
    from zgrep.relations.query import trace

    result = trace(root, f"{path}:{qualname}", "forward", 1)
    tree = result["tree"]
    tops = [] if tree is None else tree["children"] if tree.get("ambiguous") else [tree]
    return {(c["path"], _qualified(c)) for top in tops for c in top["children"]}


def _qualified(entry: dict[str, Any]) -> str:
    if not entry["symbol"]:
        return MODULE
    return f"{entry['scope']}.{entry['symbol']}" if entry["scope"] else entry["symbol"]


def latency(root: Path, symbols: list[str], runs: int, env: dict[str, str], mode: str) -> float:
    """p50 seconds of whole `zg callers --json` processes, cycling through `symbols`."""
    walls = []
    for index in range(runs):
        with Stopwatch() as clock:
            proc = subprocess.run(
                [ZG, "callers", symbols[index % len(symbols)], "--json", "--mode", mode],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
            )
        walls.append(clock.elapsed)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"zg callers failed: {proc.stderr}")
    return statistics.median(walls)


# ----- main ------------------------------------------------------------------------------------------------


def compare(
    label: str,
    keys: list[tuple[str, str]],
    truths: list[set[Key]],
    founds: list[set[Key]],
    show: bool,
) -> Score:
    score = Score()
    for (path, qualname), truth, found in zip(keys, truths, founds):
        score.add(truth, found)
        if show and truth != found:
            print(f"  {label} {path}:{qualname}")
            for key in sorted(found - truth):
                print(f"      + {key[0]}:{key[1]}")
            for key in sorted(truth - found):
                print(f"      - {key[0]}:{key[1]}")
    return score


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--jedi-python",
        default=os.environ.get("ZG_RELBENCH_PYTHON", "/work/relbench/.venv/bin/python"),
    )
    ap.add_argument(
        "--typescript",
        default=os.environ.get("ZG_RELBENCH_TYPESCRIPT", "/work/relbench/node_modules/typescript"),
    )
    ap.add_argument(
        "--sdists",
        type=Path,
        default=Path(os.environ.get("ZG_BENCH_SDISTS", "/work/corpora/_sdists")),
    )
    ap.add_argument(
        "--js-corpus",
        type=Path,
        default=Path(os.environ.get("ZG_RELBENCH_JS", "/work/corpora/redux/src")),
    )
    ap.add_argument("--corpora", default="flask,click,redux")
    ap.add_argument("--samples", type=int, default=25)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument(
        "--runs", type=int, default=20, help="zg callers runs per mode for the latency (0: skip)"
    )
    ap.add_argument(
        "--show-misses", action="store_true", help="print every definition whose answer differs"
    )
    opts = ap.parse_args()
    totals = {"python": (Score(), Score()), "ts": (Score(), Score())}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        latency_root: Path | None = None
        latency_symbols: list[str] = []
        for name in opts.corpora.split(","):
            ws = workspace(name, tmp, opts.sdists, opts.js_corpus)
            if name in SDISTS:
                defs = python_defs(ws)
                every = [
                    d
                    for ds in defs.values()
                    for d in ds
                    if not d.overload
                    and not (
                        d.qualname.rsplit(".", 1)[-1].startswith("__") and d.qualname.endswith("__")
                    )
                ]
                sample = random.Random(opts.seed).sample(every, min(opts.samples, len(every)))
                truth_callers, truth_callees = jedi_truth(opts.jedi_python, ws, sample, defs)
                keys = [(d.path, d.qualname) for d in sample]
                family = "python"
                latency_root = latency_root or ws
                latency_symbols = latency_symbols or [k[1].rsplit(".", 1)[-1] for k in keys]
            else:
                ts_sample, truth_callers, truth_callees = ts_truth(
                    opts.typescript, ws, opts.samples, opts.seed
                )
                keys = [(d["path"], d["qualname"]) for d in ts_sample]
                family = "ts"
            found_callers = [zg_callers(ws, p, q) for p, q in keys]
            found_callees = [zg_callees(ws, p, q) for p, q in keys]
            callers_score = compare("callers", keys, truth_callers, found_callers, opts.show_misses)
            trace_score = compare("trace", keys, truth_callees, found_callees, opts.show_misses)
            for total, part in zip(totals[family], (callers_score, trace_score)):
                total.tp, total.fp, total.fn = (
                    total.tp + part.tp,
                    total.fp + part.fp,
                    total.fn + part.fn,
                )
            cp, cr = callers_score.figures()
            tp_, tr = trace_score.figures()
            print(
                f"{name:8} {len(keys)} definitions  callers P {cp:.3f} R {cr:.3f} "
                f"(tp {callers_score.tp} fp {callers_score.fp} fn {callers_score.fn})  "
                f"trace-1 P {tp_:.3f} R {tr:.3f} (tp {trace_score.tp} fp {trace_score.fp} fn {trace_score.fn})"
            )
        for family, label in (("python", "python (flask+click)"), ("ts", "typescript")):
            callers_score, trace_score = totals[family]
            if callers_score.tp + callers_score.fp + callers_score.fn:
                cp, cr = callers_score.figures()
                tp_, tr = trace_score.figures()
                print(f"{label}: callers P {cp:.3f} R {cr:.3f}  trace-1 P {tp_:.3f} R {tr:.3f}")
        if opts.runs and latency_root is not None:
            (tmp / "user").mkdir()
            # a user of its own, autostart off, bytecode cached as an installed zg's is (as bench/scale.py's)
            env = private_env(tmp / "user", autostart=False, ci=False, pycache=True)
            latency(latency_root, latency_symbols, 3, env, "direct")  # write the bytecode cache
            direct = latency(latency_root, latency_symbols, opts.runs, env, "direct")
            print(
                f"zg callers p50 direct {direct:.3f} s over {opts.runs} runs ({latency_root.name})"
            )
            on = subprocess.run([ZG, "server", "on"], env=env, capture_output=True, text=True)
            if on.returncode == 0:
                try:
                    latency(
                        latency_root, latency_symbols, 3, env, "server"
                    )  # warm the workspace's engine
                    served = latency(latency_root, latency_symbols, opts.runs, env, "server")
                    print(f"zg callers p50 server {served:.3f} s over {opts.runs} runs")
                finally:
                    subprocess.run([ZG, "server", "off"], env=env, capture_output=True, text=True)
            else:
                print(f"server mode not measured: {on.stderr.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
