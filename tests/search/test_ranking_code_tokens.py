"""Only code-like query tokens earn the exact-name boost: English words never lift a definition
that merely shares their spelling (a real repo, real Milvus Lite, the real `zg` command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import indexed_repo, search_hits

FILES = {
    "core/kernel.py": '''\
"""Dependency injection."""


class Application:
    """A container of named bindings, resolved lazily."""

    def __init__(self, settings):
        self.settings = settings
        self.bindings = {}
        self.aliases = {}
        self.resolved = set()
        self.tags = {}
        self.extenders = {}
        self.instances = {}

    def bind(self, name, factory):
        """Bind one factory under a name, replacing an older binding."""
        self.bindings[name] = factory
        self.aliases.pop(name, None)
        self.resolved.discard(name)
        return factory
''',
    "runtime/startup.py": '''\
"""Bringing the process up."""


def start_services(container, settings):
    """Boot sequence of the application: load settings, then start every service in order."""
    loaded = dict(settings)
    started = []
    for name in sorted(container.services):
        service = container.services[name]
        service.configure(loaded)
        service.start()
        started.append(name)
    container.started = started
    return started
''',
    "web/routes.py": '''\
"""URL routing."""


def parse_route_table(lines):
    """Split `METHOD /path handler` lines into a table keyed by method and path."""
    table = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        method, path, handler = line.split()
        table[(method.upper(), path)] = handler
    return table
''',
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return indexed_repo(tmp_path_factory.mktemp("rank"), FILES)


search = search_hits


def test_english_word_does_not_lift_a_same_named_class(repo):
    hits = search(repo, "how the application boots its services in order")
    assert hits[0]["path"] == "runtime/startup.py"
    assert hits[0]["symbol"] == "start_services"


def test_symbol_query_still_finds_the_definition(repo):
    hits = search(repo, "Application")
    assert (hits[0]["path"], hits[0]["symbol"]) == ("core/kernel.py", "Application")


def test_code_token_inside_a_sentence_finds_its_definition(repo):
    hits = search(repo, "where is parse_route_table called with the lines")
    assert (hits[0]["path"], hits[0]["symbol"]) == ("web/routes.py", "parse_route_table")
