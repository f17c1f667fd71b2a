"""THE qualified name of a definition or hit: `scope.name`. No imports: human output (`zgrep.cli.output`)
names hits with it without loading zgrep.types, whose dataclasses import inspect."""


def qualify(scope: str, name: str) -> str:
    """`scope.name`, or whichever of the two is not empty: a qualified name (`Rack.Response`)."""
    return ".".join(p for p in (scope, name) if p)
