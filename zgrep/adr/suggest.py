"""`zg adr check --staged --suggest`: live decisions whose text is close to the staged change
although they anchor nothing in it. Advisory only: it never fails the check and is silent when
nothing is close.

The staged diff's added lines and the symbols they touch become one hybrid search query per changed
file over the ADR directory, through `server.client.call` (the daemon when it runs, else
in-process)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, cast

from zgrep import git
from zgrep.adr.model import Adr
from zgrep.adr.anchors import is_binary
from zgrep.adr.settings import AdrSettings
from zgrep.adr.store import AdrSet, anchor_covers
from zgrep.adr.trees import IndexTree
from zgrep.contracts import Args, SearchHit, SearchResult
from zgrep.filetypes import is_prose

WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
MAX_FILES = 8  # queries per check: the files with the most added lines
MAX_TERMS = 40  # words per query, in order of first appearance
MAX_BLOB = 256 * 1024
LIMIT = 8  # hits per query
# Fused scores are rank-normalised (1.0 = first on every route). A chunk ranked near the top of both
# the lexical and the dense route scores about 0.5; one found by a single route stays below 0.35.
THRESHOLD = 0.45
# and within 80% of the best suggestion's score: a clear runner-up, not the next topic over
RELATIVE = 0.8
MAX_SUGGESTIONS = 3
NOISE = frozenset(
    """
and are as assert async await break case catch class const continue def default del elif else enum except
export extends false final finally for from func function if import in interface is lambda let new nil none
not null or pass private protected public raise return self static struct super switch this throw true try
type var void while with yield the int str bool float string list dict len get set key value values
data result response request args kwargs item items name obj text time conn err error out tmp val src lib
""".split()
)  # keywords and names so common in code that they say nothing about a decision


@dataclass
class Suggestion:
    """A live ADR close to the staged change, with the changed files whose text it matched."""

    adr: Adr
    score: float
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            **self.adr.summary(),
            "score": round(self.score, 4),
            "files": self.files,
        }


def added_lines(root: Any, skip: tuple[str, ...]) -> dict[str, list[tuple[int, str]]]:
    """Added lines (number, text) per staged file, outside the `skip` directories."""
    try:
        staged = git.staged_diff(root)
    except git.GitError:
        return {}
    return {
        f.path: f.added
        for f in staged
        if f.path is not None and f.added and not any(anchor_covers(d, f.path) for d in skip)
    }


def touched_symbols(tree: IndexTree, path: str, numbers: list[int]) -> list[str]:
    """Names of the definitions (staged version) that contain an added line, innermost last."""
    from zgrep.chunking import detect_language, extract_symbols

    data = tree.read(path)
    if data is None or len(data) > MAX_BLOB or is_binary(data):
        return []
    text = data.decode("utf-8", "replace")
    language = detect_language(path, text)
    if language in ("text", "markdown"):
        return []
    wanted = set(numbers)
    names = [
        s.name
        for s in extract_symbols(text, language)
        if any(s.start <= n <= s.end for n in wanted)
    ]
    return list(dict.fromkeys(names))


def query(path: str, symbols: list[str], lines: list[tuple[int, str]]) -> str:
    """The search text of one file's change: the file's path words, touched symbols, then the added
    lines' distinct words."""
    terms: list[str] = []
    where = WORD_RE.findall(path.rsplit(".", 1)[0])
    for word in [*where, *symbols, *(w for _, text in lines for w in WORD_RE.findall(text))]:
        if word.lower() not in NOISE and word not in terms:
            terms.append(word)
    return " ".join(terms[:MAX_TERMS])


def queries(settings: AdrSettings, tree: IndexTree) -> dict[str, str]:
    """One query per changed file (the files with most added lines first)."""
    added = added_lines(settings.root, (settings.dir, *settings.doc_dirs))
    code = [p for p in added if not is_prose(p)]  # decisions are about code
    biggest = sorted(code, key=lambda p: -len(added[p]))[:MAX_FILES]
    out = {}
    for path in biggest:
        text = query(path, touched_symbols(tree, path, [n for n, _ in added[path]]), added[path])
        if text:
            out[path] = text
    return out


def rank(
    adrs: AdrSet, adr_dir: str, groups: dict[str, list[SearchHit]], governing: set[str]
) -> list[Suggestion]:
    """Live ADRs (not already governing the change) whose best hit clears THRESHOLD, best first."""
    by_path = {a.path: a for a in adrs.adrs if a.live and a.id not in governing}
    found: dict[str, Suggestion] = {}
    for path, hits in groups.items():
        for hit in hits:
            adr = by_path.get(hit["path"])
            if adr is None or hit["score"] < THRESHOLD or not anchor_covers(adr_dir, hit["path"]):
                continue
            entry = found.setdefault(adr.id, Suggestion(adr, hit["score"]))
            entry.score = max(entry.score, hit["score"])
            if path not in entry.files:
                entry.files.append(path)
    ranked = sorted(found.values(), key=lambda s: -s.score)
    return [s for s in ranked if s.score >= RELATIVE * ranked[0].score][:MAX_SUGGESTIONS]


def suggest(
    settings: AdrSettings, adrs: AdrSet, tree: IndexTree, governing: set[str], mode: str
) -> tuple[list[Suggestion], str]:
    """Live decisions close to the staged change, and why none could be looked for ("" when the
    search ran)."""
    if not any(a.live for a in adrs.adrs):
        return [], ""
    asked = queries(settings, tree)
    if not asked:
        return [], ""
    from zgrep.server.client import ClientError, call  # only when there is something to look for
    from zgrep.service import SEARCH

    args: Args = {
        "queries": list(asked.values()),
        "limit": LIMIT,
        "globs": [f"{settings.dir}/**"],
        "preview": "none",
        "refresh": "off",
        "no_index": True,
    }
    try:
        result, _ = call(SEARCH.name, str(settings.root), args, mode)
    except ClientError as exc:
        return [], str(exc)
    found = cast(SearchResult, result)
    hits = (
        [g.get("hits", []) for g in found["groups"]]
        if found.get("groups")
        else [found.get("hits", [])]
    )
    return rank(adrs, settings.dir, dict(zip(asked, hits)), governing), ""
