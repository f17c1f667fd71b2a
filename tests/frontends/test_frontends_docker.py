"""docker/compose.yaml and docker/Dockerfile, checked statically (they are not built or run here): parsable,
images pinned to versions, a healthcheck on every service that others wait for, ports on loopback only,
volumes declared, and every path, command and ZG_* setting they name still exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from zgrep.cli.main import COMMANDS
from zgrep.config import CHOICES, DEFAULTS, env_name

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
PINNED = re.compile(
    r"^[\w./-]+:(v?\d[\w.-]*|RELEASE\.[\w.-]+)$"
)  # a version tag, never `latest` or none


def compose() -> dict[str, Any]:
    doc = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert isinstance(doc, dict) and isinstance(doc.get("services"), dict)
    return doc


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line, continuations joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line.strip() else "")
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_compose_images_are_pinned_and_every_service_has_a_healthcheck() -> None:
    services = compose()["services"]
    assert set(services) == {"etcd", "minio", "milvus", "zgrep"}
    for name, svc in services.items():
        if "image" in svc:
            assert PINNED.match(svc["image"]), (name, svc["image"])
        test = svc.get("healthcheck", {}).get("test")
        assert isinstance(test, list) and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, name
        for dep, cond in (svc.get("depends_on") or {}).items():
            assert dep in services and cond == {"condition": "service_healthy"}, (name, dep)
    assert services["zgrep"]["healthcheck"]["test"][1:] == [
        "zg",
        "server",
        "status",
        "--check-ready",
    ]


def test_ports_are_loopback_only_and_volumes_are_declared() -> None:
    doc = compose()
    published = [
        (name, port) for name, svc in doc["services"].items() for port in svc.get("ports", [])
    ]
    assert published == [
        ("milvus", "127.0.0.1:19530:19530")
    ]  # as README documents: Milvus gRPC on loopback
    named = {
        v.split(":", 1)[0]
        for svc in doc["services"].values()
        for v in svc.get("volumes", [])
        if not v.startswith(("$", ".", "/"))
    }
    assert named == set(doc["volumes"]) == {"etcd", "minio", "milvus"}


def test_what_compose_and_the_dockerfile_name_still_exists() -> None:
    zgrep = compose()["services"]["zgrep"]
    assert (
        DOCKER / zgrep["build"]["context"] / zgrep["build"]["dockerfile"]
    ).resolve() == DOCKER / "Dockerfile"
    known = {env_name(key) for key in DEFAULTS}
    assert set(zgrep["environment"]) <= known, set(zgrep["environment"]) - known
    assert zgrep["environment"]["ZG_MODE"] in CHOICES["mode"]
    steps = dockerfile()
    froms = [args for op, args in steps if op == "FROM"]
    assert len(froms) == 1 and PINNED.match(froms[0].split()[0]), froms
    for op, args in steps:
        if op == "COPY":
            *sources, _ = args.split()
            assert all((REPO / src).exists() for src in sources), args
    assert [args for op, args in steps if op == "USER"] == ["zg"]  # not root
    cmd = [args for op, args in steps if op == "CMD"][-1]
    assert cmd == '["zg", "server", "run"]' and "server" in COMMANDS
