"""pymilvus is imported without pandas, requests and python-dotenv (store.lazydeps): every store call zg
makes still works against the real engine, those modules stay unimported (a later import is the real
one), and a `.env` in the searched repository changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from corpus import make_repo, run_zg

STORE_CALLS = """
import json, sys
from pathlib import Path
from zgrep.store.milvus import MilvusStore

def row(i, path, symbol, text, dense):
    return {"id": f"c{i}", "path": path, "language": "python", "symbol": symbol, "names": [symbol],
            "symbol_kind": "function", "scope": "", "start_line": 1, "end_line": 2, "mtime": 0,
            "content": text, "lexical": text, "dense": dense}

store = MilvusStore(sys.argv[1], "zg_probe", 4)
try:
    store.create()
    store.insert([row(0, "a.py", "retry", "retry with backoff", [1.0, 0.0, 0.0, 0.0]),
                  row(1, "b.py", "parse", "parse the config file", [0.0, 1.0, 0.0, 0.0])])
    store.flush()
    seen = {
        "count": store.count(),
        "dense": [h.fields["path"] for h in store.search_dense([0.0, 1.0, 0.0, 0.0], 2)],
        "lexical": [h.fields["path"] for h in store.search_lexical("backoff", 2)],
        "symbols": [h.fields["path"] for h in store.search_symbols(["parse"], 2)],
        "symbol_rows": [r["path"] for r in store.symbol_rows(["retry"], 2)],
        "rows": sorted(r["path"] for r in store.rows(["path"])),
    }
    store.delete_paths(["a.py"])
    seen["after_delete"] = sorted(r["path"] for r in store.rows(["path"]))
    store.drop()
    seen["exists"] = store.exists()
finally:
    store.close()
seen["imported"] = sorted(
    {m.partition(".")[0] for m in sys.modules} & {"pandas", "requests", "dotenv", "dateutil"}
    | {"importlib.metadata"} & set(sys.modules)
)
import pymilvus.client
seen["version"] = pymilvus.client.__version__
import importlib.metadata
seen["version_later"] = importlib.metadata.version("pymilvus")
import pandas
seen["pandas_later"] = pandas.DataFrame({"a": [1, 2]}).shape[0]
print(json.dumps(seen))
"""


def test_the_store_works_without_pandas_requests_or_dotenv(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", STORE_CALLS, str(tmp_path / "milvus.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen.pop("version") == seen.pop("version_later")  # pymilvus's own, as importlib reads it
    assert seen == {
        "count": 2,
        "dense": ["b.py", "a.py"],
        "lexical": ["a.py"],
        "symbols": ["b.py"],
        "symbol_rows": ["a.py"],
        "rows": ["a.py", "b.py"],
        "after_delete": ["b.py"],
        "exists": False,
        "imported": [],
        "pandas_later": 2,
    }


# `python -c`: python-dotenv's load_dotenv() reads the .env of the cwd when __main__ has no file
SEARCH_TWICE = """
import json, sys
from zgrep.server.client import call

limits = []
for _ in range(2):
    result, _mode = call("search", sys.argv[1], {"queries": ["retry"]}, "direct")
    limits.append(len(result["hits"]))
print(json.dumps({"hits": limits, "env": "ZG_SEARCH_LIMIT" in __import__("os").environ}))
"""


def test_a_dotenv_file_in_the_repository_changes_nothing(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "repo",
        {f"src/m{i}.py": f"def retry_{i}(n):\n    return retry(n - {i})\n" for i in range(6)},
    )
    assert run_zg("index", str(root), cwd=root).returncode == 0
    (root / ".env").write_text("ZG_SEARCH_LIMIT=1\n")
    out = subprocess.run(
        [sys.executable, "-c", SEARCH_TWICE, str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["hits"][0] > 1 and seen["hits"][1] == seen["hits"][0] and not seen["env"], seen
