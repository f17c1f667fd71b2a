"""Print the import cycles among a package's modules (exit 1 when there is one).

Every `import` counts, at module level or inside a function, under `if TYPE_CHECKING:` or not:
a cycle hidden in a function is still a cycle in the design.

    python scripts/importgraph.py [PACKAGE_DIR]     (default: zgrep)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(path: Path, top: Path) -> str:
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    """The package modules `path` (module `name`) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the submodule when there is one, else a name of pkg
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str]) -> int:
    top = Path(argv[1] if len(argv) > 1 else "zgrep").resolve()
    files = {module_name(p, top): p for p in sorted(top.rglob("*.py"))}
    graph = {name: imports_of(path, name, set(files)) for name, path in files.items()}
    found = cycles(graph)
    edges = sum(len(targets) for targets in graph.values())
    print(f"{len(graph)} modules, {edges} import edges, {len(found)} cycle(s)")
    for component in found:
        print("cycle: " + " <-> ".join(component))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
