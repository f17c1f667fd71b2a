"""Definition lookup on any corpus: does `zg search NAME` put the file that defines NAME first?

The answers come from a plain regex over the source (a definition keyword, then the name), not from
zgrep's own tree-sitter walker, so a language whose definitions zgrep does not read scores low rather
than agreeing with itself. A name counts only when exactly one non-test file defines it and it has at
least five characters; up to --per-repo names are drawn per repository (seeded). Each query is
scored like semble's symbol queries (NDCG@10 with the defining file as the one relevant target).

Corpora are bench/semble.py's (`--half dev|val|all` picks them the same way), or any workspaces
given with --root. Usage: python bench/symbols.py [--half dev] [--root DIR ...] [--per-repo 25] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import semble  # (corpora and halves of the semble benchmark)

_MODIFIERS = (
    r"(?:(?:pub(?:\([a-z]+\))?|export|public|private|protected|internal|static|final|abstract|open"
    r"|data|sealed|async|default|inline|extern)\s+)*"
)
_KEYWORDS = (
    r"(?:class|module|defmodule|interface|struct|enum|trait|type|func|function|fn|def|fun|object"
    r"|protocol|record|typedef struct|newtype|data)"
)
DEFINITION = re.compile(
    rf"^\s*{_MODIFIERS}{_KEYWORDS}\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Z]\w*)*)", re.M
)
_NOT_SOURCE = re.compile(
    r"(^|/)(tests?|spec|specs|testing|__tests__|examples?|docs?|benchmarks?)/|_test\.|\.test\."
    r"|(^|/)test_|Test\.|Spec\.|_spec\."
)
_EXTENSIONS = frozenset(
    {
        ".py",
        ".go",
        ".rs",
        ".rb",
        ".ts",
        ".tsx",
        ".js",
        ".java",
        ".kt",
        ".scala",
        ".swift",
        ".cs",
        ".php",
        ".ex",
        ".exs",
        ".hs",
        ".lua",
        ".zig",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".sh",
    }
)
MIN_NAME = 5
MAX_FILE_BYTES = 400_000


def definitions(root: Path) -> dict[str, set[str]]:
    """Name -> the non-test source files (workspace-relative) whose text defines it by keyword."""
    where: dict[str, set[str]] = defaultdict(set)
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if (
            path.suffix not in _EXTENSIONS
            or rel.startswith((".git/", ".zgrep/"))
            or _NOT_SOURCE.search(rel)
            or not path.is_file()
            or path.is_symlink()
            or path.stat().st_size > MAX_FILE_BYTES
        ):
            continue
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for match in DEFINITION.finditer(text):
            name = match.group(1).rsplit(".", 1)[-1]
            if len(name) >= MIN_NAME and not name.startswith("__"):
                where[name].add(rel)
    return where


def queries(root: Path, per_repo: int, seed: int) -> list[Any]:
    """Up to `per_repo` names defined in exactly one file, as annotated symbol queries."""
    from zgrep.search.evaluate import Query, Target

    where = definitions(root)
    unique = sorted(name for name, files in where.items() if len(files) == 1)
    random.Random(f"{seed}:{root.name}").shuffle(unique)
    return [Query(name, (Target(next(iter(where[name]))),), "symbol") for name in unique[:per_repo]]


def main() -> int:
    from zgrep.search.evaluate import evaluate_workspace

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--half", default="dev", choices=["dev", "val", "all"])
    ap.add_argument(
        "--root", action="append", default=[], help="a workspace to score instead of the corpora"
    )
    ap.add_argument("--per-repo", type=int, default=25)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--json", dest="json_out", default="")
    opts = ap.parse_args()

    if opts.root:
        targets = [(Path(r).resolve(), "?") for r in opts.root]
    else:
        python = {
            k: v
            for k, v in json.loads((semble.SHARED / "python-corpora.json").read_text()).items()
            if not k.startswith("_")
        }
        targets = []
        for repo in semble.plan_repos():
            if opts.half in ("all", repo["half"]):
                ws, _ = semble.resolve(repo, python, fresh=False)
                if ws is not None:
                    targets.append((ws, repo["language"]))
    results: dict[str, Any] = {}
    for ws, language in targets:
        asked = queries(ws, opts.per_repo, opts.seed)
        if not asked:
            continue
        res = evaluate_workspace(ws, asked)
        results[ws.name] = {
            "language": language,
            "ndcg@10": res["overall"]["ndcg@10"],
            "mrr": res["overall"]["mrr"],
            "queries": len(asked),
            "misses": [q for q in res["per_query"] if q["ndcg@10"] < 1.0],
        }
        print(
            f"{ws.name:<20} {language:<11} {len(asked):>3} ndcg@10 {res['overall']['ndcg@10']:.3f}",
            file=sys.stderr,
        )
    if not results:
        print("symbols.py: no corpus to score", file=sys.stderr)
        return 1
    by_language: dict[str, list[float]] = defaultdict(list)
    for r in results.values():
        by_language[r["language"]].append(r["ndcg@10"])
    print(f"{'language':<11} {'repos':>5} {'ndcg@10':>8}")
    for language, scores in sorted(by_language.items()):
        print(f"{language:<11} {len(scores):>5} {statistics.fmean(scores):>8.3f}")
    overall = statistics.fmean(r["ndcg@10"] for r in results.values())
    print(f"{'all':<11} {len(results):>5} {overall:>8.3f}  (mean over repos)")
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps({"overall": overall, "repos": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
