"""Shell functions defined inside a `{ ... }` that wraps a whole script (nvm.sh does this so a
half-downloaded script never runs) or inside an `if` are definitions a search finds and labels
(a real repo, real Milvus Lite, the real `zg`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import make_repo, run_zg, user_env

_STEPS = "".join(f'  echo "step {i}" >&2\n' for i in range(6))
SCRIPT = f"""#!/usr/bin/env bash
{{ # this ensures the entire script is downloaded

tool_download_archive() {{
  # fetch a release tarball with curl, falling back to wget
{_STEPS}  curl -fsSL "$1" -o "$2" || wget -q "$1" -O "$2"
}}

tool_checksum_verify() {{
  # compare the archive's sha256 with the published sum
{_STEPS}  [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}}

if [ -n "${{ZSH_VERSION-}}" ]; then
  tool_shell_name() {{
    # the running shell, for messages
{_STEPS}    echo zsh
  }}
fi

}} # this ensures the entire script is downloaded
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("wrapped")
    root = make_repo(base / "repo", {"install.sh": SCRIPT})
    env = user_env(base)
    proc = run_zg("index", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    return root, env


@pytest.mark.parametrize("name", ["tool_checksum_verify", "tool_shell_name"])
def test_function_inside_a_wrapper_is_found_by_name(repo, name):
    root, env = repo
    proc = run_zg("search", name, "--json", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    hit = json.loads(proc.stdout)["hits"][0]
    line = (
        SCRIPT.splitlines().index(
            next(s for s in SCRIPT.splitlines() if s.strip().startswith(f"{name}()"))
        )
        + 1
    )
    assert (hit["symbol"], hit["symbol_kind"]) == (name, "function")
    assert hit["start_line"] <= line <= hit["end_line"]
