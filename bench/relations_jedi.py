"""jedi's side of bench/relations.py; runs in the bench venv (never zgrep's), JSON on stdin and stdout.

Input: {"root": DIR, "refs": [[path, line, col], ...], "gotos": [[path, line, col], ...]} (paths relative to
root, lines 1-based, columns 0-based). Output: {"refs": [[[path, line, col, type], ...] per query],
"gotos": [[[path, line, col, type], ...] per query]}; positions outside root are left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jedi


def main() -> None:
    request = json.load(sys.stdin)
    root = Path(request["root"]).resolve()
    project = jedi.Project(
        root, added_sys_path=[str(root)], smart_sys_path=False, load_unsafe_extensions=False
    )
    scripts: dict[str, jedi.Script] = {}

    def script(rel: str) -> jedi.Script:
        if rel not in scripts:
            path = root / rel
            scripts[rel] = jedi.Script(path.read_text(), path=path, project=project)
        return scripts[rel]

    def inside(names: list) -> list[list]:
        out = []
        for name in names:
            path = name.module_path
            if path is None or name.line is None:
                continue
            try:
                rel = Path(path).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            out.append([rel, name.line, name.column, name.type])
        return out

    refs = [
        inside(script(p).get_references(line, col, include_builtins=False, scope="project"))
        for p, line, col in request["refs"]
    ]
    gotos = [
        inside(script(p).goto(line, col, follow_imports=True)) for p, line, col in request["gotos"]
    ]
    json.dump({"refs": refs, "gotos": gotos}, sys.stdout)


if __name__ == "__main__":
    main()
