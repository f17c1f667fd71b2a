"""Trust covers everything that decides what leaves the machine: `.zgignore`/`.ignore` edits withdraw it, a remote
provider never gets a git-ignored or secret-looking file, and an untrusted file cannot raise resource limits.
The embedding endpoint is a real local HTTP server recording what it receives."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import zgrun
from conftest import git
from embedding_server import EmbeddingServer
from zgrep.config import Config, user_config_path


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(dim=8) as srv:
        yield srv


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return zgrun.in_process(*args, cwd=cwd, env={**os.environ, "ZG_MODE": "direct"})


def sent(server: EmbeddingServer) -> str:
    return json.dumps([r.body for r in server.requests])


def remote_repo(root: Path, url: str) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("def f(): pass\n")
    (root / ".gitignore").write_text(".env\nlocal.txt\n")
    (root / ".env").write_text("DB_PASSWORD=hunter2\n")
    (root / "local.txt").write_text("LOCAL_ONLY_NOTE=tomato\n")
    (root / ".zgrep.toml").write_text(
        f'[embedding]\nprovider = "openai"\nmodel = "m"\nurl = "{url}"\n'
        "allow_remote = true\nmax_retries = 0\n[index]\ninclude_hidden = true\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "i")
    return root


def test_editing_zgignore_withdraws_trust_and_reincludes_never_reach_a_remote_provider(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    root = remote_repo(tmp_path / "r", server.openai_url)
    assert run("trust", cwd=root).returncode == 0
    done = run("index", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "def f" in sent(server) and "hunter2" not in sent(server)
    (root / ".zgignore").write_text("!.env\n!local.txt\n")
    status = run("trust", "--status", cwd=root)
    assert status.returncode == 1 and "changed since you trusted it" in status.stdout
    assert run("trust", cwd=root).returncode == 0  # the user reviews and trusts the re-includes too
    assert run("index", cwd=root).returncode == 0
    assert "hunter2" not in sent(server) and "tomato" not in sent(
        server
    )  # git ignores them: never sent
    (root / ".ignore").write_text("# a comment\n")
    assert run("trust", "--status", cwd=root).returncode == 1


def test_secret_files_are_not_embedded_remotely_unless_the_users_config_names_them(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    root = remote_repo(tmp_path / "s", server.openai_url)
    for name, text in (
        (".env.production", "API_TOKEN=pear"),
        ("deploy.pem", "PRIVATE_KEY=plum"),
        ("id_rsa_backup", "RSA=fig"),
        (".npmrc", "authToken=kiwi"),
        ("credentials.json", "x=lime"),
    ):
        (root / name).write_text(text + "\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "secrets")
    assert run("trust", cwd=root).returncode == 0
    report = json.loads(run("index", "--json", cwd=root).stdout)
    assert report["ignored"]["secrets"] == 5
    assert not any(word in sent(server) for word in ("pear", "plum", "fig", "kiwi", "lime"))
    Path(user_config_path()).parent.mkdir(parents=True, exist_ok=True)
    Path(user_config_path()).write_text('[embedding]\nallow_secret_files = ["credentials.json"]\n')
    (root / ".zgrep.toml").write_text((root / ".zgrep.toml").read_text() + "[search]\nlimit = 5\n")
    assert run("trust", cwd=root).returncode == 0
    assert run("index", cwd=root).returncode == 0
    assert "lime" in sent(server) and "pear" not in sent(server)


def test_a_workspace_file_cannot_name_secret_files_for_the_user(tmp_path: Path) -> None:
    (tmp_path / ".zgrep.toml").write_text('[embedding]\nallow_secret_files = [".env"]\n')
    assert Config.load(tmp_path).embedding.allow_secret_files == []


def test_an_untrusted_file_cannot_raise_resource_limits(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".zgrep.toml").write_text(
        "[index]\nmax_file_bytes = 100000000\nchunk_context_lines = 1\n"
    )
    cfg = Config.load(root)
    assert cfg.index.max_file_bytes == 1024 * 1024 and cfg.index.chunk_context_lines == 1
    assert "capped index.max_file_bytes at the default" in cfg.notice
    assert run("trust", cwd=root).returncode == 0
    assert Config.load(root).index.max_file_bytes == 100000000


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_config_show_masks_credentials(tmp_path: Path, json_flag: tuple[str, ...]) -> None:
    proc = zgrun.in_process(
        "config",
        "show",
        *json_flag,
        cwd=tmp_path,
        env={**os.environ, "ZG_MILVUS_URI": "http://root:s3cretpw@db.example:19530"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "s3cretpw" not in proc.stdout and "http://***@db.example:19530" in proc.stdout
