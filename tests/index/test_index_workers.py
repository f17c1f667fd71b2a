"""Big index runs prepare files in worker processes: the index they build is the one a single process
builds, and a workspace's own Python files are never imported by a worker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpus import assert_consistent, make_repo, run_zg, store_rows, user_env

FILES = 420  # above index/prepare.POOL_MIN_FILES


def _repo(root: Path) -> Path:
    files = {
        f"pkg{i % 6}/mod{i:03d}.py": f'def measure_{i:03d}(item):\n    """Measure item {i}."""\n    return item * {i}\n'
        for i in range(FILES)
    }
    # modules the worker itself imports: were the workspace (its cwd) on a worker's path, these would run
    marker = root.parent / "imported-from-the-workspace"
    hostile = f"open({str(marker)!r}, 'w').close()\nraise SystemExit('workspace module imported')\n"
    files.update({"pickle.py": hostile, "struct.py": hostile, "zgrep/__init__.py": hostile})
    return make_repo(root, files)


def _index(root: Path, env: dict[str, str]) -> dict[str, object]:
    proc = run_zg("index", "--json", "--mode", "direct", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_workers_build_the_index_one_process_builds_and_import_nothing_of_the_workspace(
    tmp_path: Path,
) -> None:
    root = _repo(tmp_path / "repo")
    env = user_env(tmp_path / "user")
    pooled = _index(root, env)
    assert not (tmp_path / "imported-from-the-workspace").exists()
    phases = pooled["phases"]
    assert isinstance(phases, dict) and phases.get("chunk", 0) > 0 and phases.get("embed", 0) > 0
    assert pooled["files"] == FILES + 3 and pooled["embedded"] > 0
    rows = {r["id"]: r for r in assert_consistent(root)}
    found = run_zg(
        "search", "measure_321", "--json", "-n", "1", "--mode", "direct", cwd=root, env=env
    )
    assert json.loads(found.stdout)["hits"][0]["path"] == "pkg3/mod321.py", found.stdout

    shutil.rmtree(root / ".zgrep")
    single = _index(root, {**env, "ZG_INDEX_WORKERS": "0"})
    assert single["chunks"] == pooled["chunks"] and single["changed"] == pooled["changed"]
    assert {r["id"]: r for r in store_rows(root)} == rows
