"""`zg impact`: what reaches a changed definition, from a path, a symbol, or the staged change; tests apart."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from conftest import git

Zg = Callable[..., subprocess.CompletedProcess[str]]

FILES = {
    "shop/__init__.py": "",
    "shop/price.py": "def net(amount):\n    return amount * 0.8\n\n\ndef unused():\n    return 0\n",
    "shop/cart.py": (
        "from .price import net\n\n\nclass Cart:\n    def total(self, items):\n"
        "        return sum(net(i) for i in items)\n\n\ndef checkout(cart, items):\n"
        "    return cart.total(items)\n\n\ndef receipt(items):\n    return Cart().total(items)\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart, receipt\n\n\ndef test_total():\n"
        "    assert Cart().total([10]) == 8\n\n\ndef test_receipt():\n    assert receipt([1])\n"
    ),
}


def impact(zg: Zg, root: Path, *args: str) -> dict:
    out = zg("impact", *args, "--json", "--mode", "direct", cwd=root)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_impact_of_a_symbol_a_path_and_the_staged_change(repo: Path, zg: Zg) -> None:
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shop")
    assert zg("index", "--mode", "direct", cwd=repo).returncode == 0

    result = impact(zg, repo, "shop/price.py:net")
    assert [(e["path"], e["symbol"], e["distance"], e["resolved"]) for e in result["impacted"]] == [
        ("shop/cart.py", "", 1, True),
        ("shop/cart.py", "total", 1, True),
        ("shop/cart.py", "checkout", 2, False),
        ("shop/cart.py", "receipt", 2, True),
    ]  # `cart` has no type: a guess
    assert {(e["symbol"], e["edge"], e["reaches"]) for e in result["tests"]} == {
        ("test_total", "call", "Cart.total"),
        ("test_receipt", "call", "receipt"),
        ("", "import", "receipt"),
    }
    assert result["test_files"] == ["tests/test_cart.py"] and result["files"] == ["shop/cart.py"]
    assert result["truncated"] is False
    assert impact(zg, repo, "shop/price.py:net", "--depth", "1")["tests"] == []
    whole = impact(zg, repo, "shop/price.py")
    assert [d["symbol"] for d in whole["changed"]] == ["net", "unused"]

    (repo / "shop/price.py").write_text(FILES["shop/price.py"].replace("return 0\n", "return 1\n"))
    (repo / "shop/new.py").write_text("def fresh():\n    return 2\n")  # staged, not indexed yet
    git(repo, "add", "shop/price.py", "shop/new.py")
    staged = impact(zg, repo, "--staged")
    assert staged["targets"] == ["shop/new.py:1-2", "shop/price.py:6-6"] and staged["skipped"] == [
        "shop/new.py"
    ]
    assert [d["symbol"] for d in staged["changed"]] == ["unused"]
    assert (
        staged["total"] == 0
        and zg("impact", "--staged", "--mode", "direct", cwd=repo).returncode == 1
    )
    human = zg("impact", "shop/cart.py:Cart.total", "--mode", "direct", cwd=repo)
    assert human.returncode == 0 and "tests: 3 definitions in 1 file" in human.stdout, human.stdout

    for args, needle in (
        (("impact",), "--staged"),
        (("impact", "nowhere.py"), "not an indexed file"),
        (("impact", "shop/cart.py", "--edges", "calls"), "--edges"),
    ):
        bad = zg(*args, "--mode", "direct", cwd=repo)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and needle in bad.stderr, (
            bad.stderr
        )


def test_staged_paths_git_quotes_or_prefixes_otherwise(repo: Path, zg: Zg) -> None:
    """A non-ASCII name (C-quoted by git), a name with a space (git ends it with a tab) and the repository's
    own diff.mnemonicPrefix (c/ and i/ instead of a/ and b/) still name the staged files."""
    names = ("café.py", "my shop.py")
    for name in names:
        (repo / name).write_text("def one():\n    return 1\n\n\ndef two():\n    return 2\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "two files")
    assert zg("index", "--mode", "direct", cwd=repo).returncode == 0
    git(repo, "config", "diff.mnemonicPrefix", "true")
    for name in names:
        (repo / name).write_text("def one():\n    return 1\n\n\ndef two():\n    return 3\n")
    git(repo, "add", ".")
    staged = impact(zg, repo, "--staged")
    assert staged["targets"] == ["café.py:6-6", "my shop.py:6-6"] and staged["skipped"] == []
    assert [(d["path"], d["symbol"]) for d in staged["changed"]] == [
        ("café.py", "two"),
        ("my shop.py", "two"),
    ]


def test_an_empty_staged_change_answers_every_field(repo: Path, zg: Zg) -> None:
    """Nothing staged gives the keys a non-empty result has (the requested depth, the edge kinds, empty lists)."""
    (repo / "a.py").write_text("def one():\n    return 1\n\n\ndef two():\n    return one()\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a")
    assert zg("index", "--mode", "direct", cwd=repo).returncode == 0
    found = impact(zg, repo, "a.py:one", "--depth", "2", "--edges", "call")
    empty = impact(zg, repo, "--staged", "--depth", "2", "--edges", "call")
    unreached = impact(
        zg, repo, "a.py:5-6", "--depth", "2", "--edges", "call"
    )  # two(): nothing calls it
    assert (
        list(empty) == list(found) == list(unreached)
        and found["total"] == 1
        and unreached["total"] == 0
    )
    assert {
        k: empty[k]
        for k in ("targets", "depth", "edges", "changed", "impacted", "files", "total", "skipped")
    } == {
        "targets": [],
        "depth": 2,
        "edges": ["call"],
        "changed": [],
        "impacted": [],
        "files": [],
        "total": 0,
        "skipped": [],
    }
    assert zg("impact", "--staged", "--json", "--mode", "direct", cwd=repo).returncode == 1
    human = zg("impact", "--staged", "--mode", "direct", cwd=repo)
    assert human.returncode == 1 and human.stderr == "nothing staged\n", human.stderr
