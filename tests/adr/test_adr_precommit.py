"""Real commits through the pre-commit framework running the `zg-adr-check` hook this repo publishes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from test_adr_kit import Repo, adr_text

pytestmark = pytest.mark.e2e

MANIFEST = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"
NET = "def fetch_with_retry(url):\n    return url\n"


def hook_repo(path: Path) -> tuple[str, str]:
    """A hook repository publishing our manifest's zg-adr-check (as `language: system`: the
    `python` install pip-installs zgrep, ~25 s, so the test uses the zg already installed)."""
    hooks = [h for h in yaml.safe_load(MANIFEST.read_text()) if h["id"] == "zg-adr-check"]
    assert (
        hooks
        and hooks[0]["entry"] == "zg hooks run pre-commit"
        and hooks[0]["pass_filenames"] is False
    )
    repo = Repo(path)
    repo.write(
        ".pre-commit-hooks.yaml",
        yaml.safe_dump([{**hooks[0], "language": "system"}], sort_keys=False),
    )
    repo.commit("hooks")
    return str(path), repo.git("rev-parse", "HEAD").stdout.strip()


def framework_repo(tmp_path: Path) -> Repo:
    """A work repository whose pre-commit framework config runs our published zg-adr-check."""
    url, rev = hook_repo(tmp_path / "hooks")
    repo = Repo(tmp_path / "work")
    repo.env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    repo.write(
        ".pre-commit-config.yaml",
        f"repos:\n  - repo: {url}\n    rev: {rev}\n    hooks:\n      - id: zg-adr-check\n",
    )
    repo.write("src/net.py", NET)
    repo.write(
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors="  - {path: src/net.py, symbol: fetch_with_retry}\n"),
    )
    repo.run("pre-commit", "install", check=True)
    return repo


def test_framework_hook_blocks_then_passes(tmp_path: Path) -> None:
    repo = framework_repo(tmp_path)
    assert repo.commit("init").returncode == 0

    repo.write("src/net.py", NET.replace("fetch_with_retry", "fetch"))
    proc = repo.commit("rename")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "zg adr check" in out and "Failed" in out
    assert "ADR-0001" in out and "fetch_with_retry" in out

    repo.write(
        "docs/adr/0001-retries.md",
        adr_text("ADR-0001", anchors="  - {path: src/net.py, symbol: fetch}\n"),
    )
    proc = repo.commit("rename with the ADR updated")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout + proc.stderr


def test_framework_hook_does_not_block_on_a_config_typo(tmp_path: Path) -> None:
    """Only an ADR violation blocks: a typo'd `.zgrep.toml` section prints one line and the commit goes on."""
    repo = framework_repo(tmp_path)
    repo.write(".zgrep.toml", "[serch]\nlimit = 5\n")
    proc = repo.commit("init with a typo")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Passed" in out, (
        out
    )  # (the framework shows a passing hook's line only with verbose)
