"""Milvus boolean-expression pieces, free of the Milvus driver (ranking and filters import them)."""

from __future__ import annotations


def quote(value: str) -> str:
    """A string literal for a Milvus boolean expression."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def in_list(field: str, values: list[str]) -> str:
    """`field in ["a", "b"]`."""
    return f"{field} in [{', '.join(quote(v) for v in values)}]"
