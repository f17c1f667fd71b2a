"""Render search results: human (colour on a TTY), --json, --jsonl. Standard library only."""

from __future__ import annotations

import json
from typing import Any, TextIO

_RESET, _MAGENTA, _GREEN, _DIM, _BOLD = "\033[0m", "\033[35m", "\033[32m", "\033[2m", "\033[1m"


def _paint(text: str, code: str, colour: bool) -> str:
    return f"{code}{text}{_RESET}" if colour else text


def hit_header(hit: dict[str, Any], colour: bool) -> str:
    """`path:start-end  symbol (kind)  score` like a grep match header."""
    loc = _paint(f"{hit['path']}:{hit['start_line']}-{hit['end_line']}", _MAGENTA, colour)
    name = ".".join(p for p in (hit.get("scope"), hit.get("symbol")) if p)
    label = f"  {_paint(name, _BOLD, colour)} ({hit.get('symbol_kind')})" if name else ""
    return f"{loc}{label}  {_paint(format(hit['score'], '.3f'), _DIM, colour)}"


def write_hits(out: TextIO, hits: list[dict[str, Any]], colour: bool) -> None:
    """Human output: a header per hit and its numbered preview lines."""
    for hit in hits:
        out.write(hit_header(hit, colour) + "\n")
        if hit.get("preview"):
            for offset, line in enumerate(hit["preview"].splitlines()):
                num = _paint(str(hit["start_line"] + offset).rjust(5), _GREEN, colour)
                out.write(f"{num}: {line}\n")
            out.write("\n")


def write_human(out: TextIO, result: dict[str, Any], colour: bool) -> None:
    """Human output for one query or grouped queries."""
    if "groups" in result:
        for group in result["groups"]:
            out.write(_paint(f"## {group['query']}", _BOLD, colour) + "\n")
            write_hits(out, group["hits"], colour)
        out.write(f"{result['distinct_locations']} distinct locations\n")
    else:
        write_hits(out, result["hits"], colour)


def write_json(out: TextIO, result: dict[str, Any], mode: str) -> None:
    """One JSON document following the SPEC contract."""
    ordered = {"query": result.get("query"), "root": result["root"], "mode": mode} if "query" in result else {
        "root": result["root"], "mode": mode}
    ordered.update({k: v for k, v in result.items() if k not in ordered})
    out.write(json.dumps(ordered, ensure_ascii=False) + "\n")


def write_jsonl(out: TextIO, result: dict[str, Any]) -> None:
    """One hit object per line, each carrying its query."""
    groups = result.get("groups") or [{"query": result.get("query"), "hits": result.get("hits", [])}]
    for group in groups:
        for hit in group["hits"]:
            out.write(json.dumps({"query": group["query"], **hit}, ensure_ascii=False) + "\n")


def hit_count(result: dict[str, Any]) -> int:
    """Total hits over all groups."""
    if "groups" in result:
        return sum(len(g["hits"]) for g in result["groups"])
    return len(result.get("hits", []))
