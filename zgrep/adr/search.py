"""`zg adr search`: the normal search restricted to decision/spec/plan documents, hits labelled by kind."""

from __future__ import annotations

from typing import Any

from zgrep.adr.settings import AdrSettings
from zgrep.adr.store import AdrSet, anchor_covers


def search_args(settings: AdrSettings, query: str, limit: int) -> dict[str, Any]:
    """Search args (DEVELOPERS.md) with globs limited to the ADR and doc directories."""
    dirs = (settings.dir, *settings.doc_dirs)
    return {"queries": [query], "limit": limit, "globs": [f"{d}/**" for d in dirs], "preview": "short"}


def doc_kind(settings: AdrSettings, path: str) -> str:
    """"adr", "spec" or "plan" (or "doc") by which configured directory holds `path`."""
    if anchor_covers(settings.dir, path):
        return "adr"
    for d in settings.doc_dirs:
        if anchor_covers(d, path):
            name = d.rstrip("/").rsplit("/", 1)[-1]
            return "spec" if name.startswith("spec") else "plan" if name.startswith("plan") else "doc"
    return "doc"


def label_hits(settings: AdrSettings, adrs: AdrSet, hits: list[dict[str, Any]], status: str | None) -> list[dict[str, Any]]:
    """Add doc_kind (and id/title/status for ADRs); `status` keeps only ADR hits with it."""
    by_path = {a.path: a for a in adrs.adrs}
    out = []
    for hit in hits:
        kind = doc_kind(settings, hit["path"])
        labelled = {**hit, "doc_kind": kind}
        record = by_path.get(hit["path"])
        if record is not None:
            labelled.update(id=record.id, title=record.title, status=record.status)
        if status and (kind != "adr" or labelled.get("status") != status):
            continue
        out.append(labelled)
    return out
