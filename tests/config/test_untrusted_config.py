"""A cloned repository's `.zgrep.toml` is untrusted input.

Settings that send code off the machine, pick which secret to read or point at a server are
ignored from it (one line on stderr says which and how to trust) until the user runs
`zg trust`, which records the root and the file's hash in the user's config dir.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import zgrun
from conftest import ZG, git
from embedding_server import EmbeddingServer

SECRET = "zg-test-secret-value-1234"


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return zgrun.in_process(
        *args, cwd=cwd, env={**os.environ, "ZG_TEST_SECRET": SECRET, **(env or {})}
    )


def workspace(root: Path, toml: str) -> Path:
    """A git repository with one Python file and the given `.zgrep.toml` (as a clone would bring it)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "retry.py").write_text("def retry_with_backoff(call):\n    return call()\n")
    (root / ".zgrep.toml").write_text(toml)
    return root


def remote_toml(url: str) -> str:
    return (
        f'[embedding]\nprovider = "openai"\nmodel = "test-embed"\nurl = "{url}"\nallow_remote = true\n'
        'api_key_env = "ZG_TEST_SECRET"\nmax_retries = 0\n'
    )


def shown(root: Path) -> tuple[dict[str, dict], str]:
    proc = run("config", "show", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.fixture
def server():
    with EmbeddingServer(dim=8) as srv:
        yield srv


def test_untrusted_remote_embedding_sends_nothing_until_trusted(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    root = workspace(tmp_path / "clone", remote_toml(server.openai_url))
    for args in (("index",), ("search", "retry backoff")):
        proc = run(*args, cwd=root)
        assert proc.returncode == 0, proc.stderr
        notice = proc.stderr.strip().splitlines()
        assert (
            len(notice) == 1
            and "embedding.provider" in notice[0]
            and "embedding.api_key_env" in notice[0]
        )
        assert f"zg trust {root}" in notice[0]
    assert server.requests == []
    assert json.loads(run("status", "--json", cwd=root).stdout)["model"].startswith(
        "zgrep/"
    )  # the bundled model


def test_trusted_remote_embedding_is_used_with_its_secret(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    root = workspace(tmp_path / "clone", remote_toml(server.openai_url))
    trusted = run("trust", cwd=root)
    assert trusted.returncode == 0, trusted.stderr
    assert "embedding.url" in trusted.stdout and server.openai_url in trusted.stdout
    proc = run("index", cwd=root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_editing_the_file_withdraws_trust_and_revoke_and_status(tmp_path: Path) -> None:
    root = workspace(tmp_path / "clone", '[milvus]\nuri = "http://127.0.0.1:9"\n')
    assert run("trust", "--status", cwd=root).returncode == 1
    assert run("trust", cwd=root).returncode == 0
    status = run("trust", "--status", cwd=root)
    assert status.returncode == 0 and "trusted" in status.stdout
    values, err = shown(root)
    assert values["milvus.uri"]["value"] == "http://127.0.0.1:9" and err == ""
    (root / ".zgrep.toml").write_text('[milvus]\nuri = "http://203.0.113.9:19530"\n')
    status = run("trust", "--status", cwd=root)
    assert status.returncode == 1 and "changed since" in status.stdout
    values, err = shown(root)
    assert (
        values["milvus.uri"]["source"] == "default"
        and "milvus.uri" in err
        and "changed since" in err
    )
    assert run("trust", cwd=root).returncode == 0
    assert shown(root)[0]["milvus.uri"]["value"] == "http://203.0.113.9:19530"
    revoked = run("trust", "--revoke", cwd=root)
    assert revoked.returncode == 0
    assert shown(root)[0]["milvus.uri"]["source"] == "default"
    assert run("trust", "--status", cwd=root).returncode == 1


@pytest.mark.parametrize(
    "toml,key",
    [
        ('[embedding]\nprovider = "ollama"\n', "embedding.provider"),
        ('[embedding]\nurl = "http://203.0.113.9/"\n', "embedding.url"),
        ('[embedding]\napi_key_env = "GITHUB_TOKEN"\n', "embedding.api_key_env"),
        ("[embedding]\nallow_remote = true\n", "embedding.allow_remote"),
        ('[milvus]\nuri = "http://203.0.113.9:19530"\n', "milvus.uri"),
        ('[server]\nendpoint = "tcp://0.0.0.0:5555"\n', "server.endpoint"),
    ],
)
def test_each_gated_setting_is_ignored_from_an_untrusted_file(
    tmp_path: Path, toml: str, key: str
) -> None:
    root = workspace(tmp_path / "clone", toml + "[search]\nlimit = 4\n")
    values, err = shown(root)
    assert values[key]["source"] == "default"
    assert values["search.limit"]["value"] == 4  # harmless settings still apply
    assert err.count("\n") == 1 and key in err and "zg trust" in err


def test_trust_is_per_root_and_kept_outside_the_repository(tmp_path: Path) -> None:
    toml = '[milvus]\nuri = "http://203.0.113.9:19530"\n'
    first = workspace(tmp_path / "first", toml)
    second = workspace(tmp_path / "second", toml)
    assert run("trust", cwd=first).returncode == 0
    assert shown(first)[0]["milvus.uri"]["source"] == str(first / ".zgrep.toml")
    assert shown(second)[0]["milvus.uri"]["source"] == "default"
    assert git(first, "status", "--porcelain") == "?? .zgrep.toml\n?? retry.py\n"


def test_no_notice_without_gated_settings_and_trust_needs_a_file(tmp_path: Path) -> None:
    root = workspace(tmp_path / "clone", "[search]\nlimit = 3\n")
    assert shown(root)[1] == ""
    (root / ".zgrep.toml").unlink()
    proc = run("trust", cwd=root)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and ".zgrep.toml" in proc.stderr


def test_doctor_builds_the_model_through_the_remote_opt_in(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """`zg doctor` used its own embedder builder, which skipped the opt-in: a trusted file naming a remote
    provider without `allow_remote` must not make the doctor send anything."""
    toml = remote_toml(server.openai_url).replace("allow_remote = true\n", "")
    root = workspace(tmp_path / "clone", toml)
    assert run("trust", cwd=root).returncode == 0
    proc = run("doctor", "--json", cwd=root)
    model = next(c for c in json.loads(proc.stdout) if c["name"] == "model")
    assert not model["ok"] and "opt in" in model["detail"], model
    assert server.requests == []


@pytest.mark.e2e
def test_concurrent_trust_runs_each_keep_their_entry(tmp_path: Path) -> None:
    """Eight workspaces trusted at the same moment: the record keeps all eight (it is rewritten under a lock)."""
    roots = [workspace(tmp_path / f"w{i}", "[search]\nlimit = 5\n") for i in range(8)]
    procs = [
        subprocess.Popen(
            [ZG, "trust", str(r)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for r in roots
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert all(run("trust", "--status", str(r), cwd=r).returncode == 0 for r in roots)
