"""`zg adr search`: the normal search restricted to decision/spec/plan documents, hits labelled by
kind."""

from __future__ import annotations


from zgrep.adr.settings import AdrSettings
from zgrep.adr.store import AdrSet, anchor_covers
from zgrep.contracts import Args, SearchHit


def search_args(settings: AdrSettings, query: str, limit: int) -> Args:
    """Search args (DEVELOPERS.md) with globs limited to the ADR and doc directories."""
    dirs = (settings.dir, *settings.doc_dirs)
    return {
        "queries": [query],
        "limit": limit,
        "globs": [f"{d}/**" for d in dirs],
        "preview": "short",
    }


def doc_kind(settings: AdrSettings, path: str) -> str:
    """ "adr", "spec" or "plan" (or "doc") by which configured directory holds `path`."""
    if anchor_covers(settings.dir, path):
        return "adr"
    for d in settings.doc_dirs:
        if anchor_covers(d, path):
            name = d.rstrip("/").rsplit("/", 1)[-1]
            return (
                "spec" if name.startswith("spec") else "plan" if name.startswith("plan") else "doc"
            )
    return "doc"


class LabelledHit(SearchHit, total=False):
    """A search hit with the kind of document it is in, and the ADR's id, title and status for an
    ADR."""

    doc_kind: str
    id: str
    title: str
    status: str


def label_hits(
    settings: AdrSettings, adrs: AdrSet, hits: list[SearchHit], status: str | None
) -> list[LabelledHit]:
    """Add doc_kind (and id/title/status for ADRs); `status` keeps only ADR hits with it."""
    by_path = {a.path: a for a in adrs.adrs}
    out = []
    for hit in hits:
        kind = doc_kind(settings, hit["path"])
        labelled: LabelledHit = {**hit, "doc_kind": kind}
        record = by_path.get(hit["path"])
        if record is not None:
            labelled["id"], labelled["title"], labelled["status"] = (
                record.id,
                record.title,
                record.status,
            )
        if status and (kind != "adr" or labelled.get("status") != status):
            continue
        out.append(labelled)
    return out
