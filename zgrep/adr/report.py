"""Run a whole check (records + anchors + optional fixes) and shape its report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zgrep.adr import fix as fixer
from zgrep.adr.check import Governing, Problem, check_anchors, governing, validate_records
from zgrep.adr.model import Anchor
from zgrep.adr.settings import AdrSettings
from zgrep.adr.store import AdrSet, load
from zgrep.adr.suggest import Suggestion, suggest
from zgrep.adr.trees import IndexTree, WorkTree, changed_since_head, staged_changes

FIXABLE = ("anchor_missing_file", "anchor_symbol", "anchor_lines", "anchor_lines_stale")


@dataclass
class CheckReport:
    """Everything `zg adr check` found and did."""

    mode: str
    adr_count: int = 0
    problems: list[Problem] = field(default_factory=list)
    governing: list[Governing] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    unfixed: list[str] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    note: str = ""  # why --suggest could not search (stderr), "" when it did

    @property
    def errors(self) -> list[Problem]:
        """Problems that fail the check."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def exit_code(self) -> int:
        """0 clean, 1 violations (or fixes still to be staged)."""
        return 1 if self.errors or (self.mode == "staged" and self.fixed) else 0

    def to_json(self) -> dict[str, Any]:
        """The `--json` document."""
        return {
            "ok": self.exit_code == 0,
            "mode": self.mode,
            "adrs": self.adr_count,
            "problems": [p.to_json() for p in self.problems],
            "governing": [g.to_json() for g in self.governing],
            "fixed": self.fixed,
            "unfixed": self.unfixed,
            "suggestions": [s.to_json() for s in self.suggestions],
        }


def _once(
    settings: AdrSettings,
    tree: WorkTree | IndexTree,
    scope: set[str] | None,
    report: CheckReport,
    strict: bool,
) -> AdrSet:
    adrs = load(tree, settings.dir)
    report.adr_count = len(adrs.files)
    report.problems = validate_records(adrs, strict) + check_anchors(adrs, tree, scope)
    return adrs


def run_check(
    settings: AdrSettings,
    staged: bool,
    paths: list[str] | None,
    fix: bool,
    strict: bool = False,
    suggest_mode: str | None = None,
) -> CheckReport:
    """Check the staged tree (`staged`), the given paths, or everything in the working copy;
    `strict` also asks every record for zg's own fields; `suggest_mode` (staged only) also looks for
    the live ADRs close to the change through `server.client.call` in that mode."""
    root = settings.root
    report = CheckReport("staged" if staged else "paths" if paths else "all")
    tree: WorkTree | IndexTree = IndexTree(root) if staged else WorkTree(root)
    try:
        scope: set[str] | None = set(paths) if paths else None
        if staged:
            scope, _ = staged_changes(root)
        adrs = _once(settings, tree, scope, report, strict)
        if scope is not None:
            report.governing = governing(adrs, scope)
        if staged and suggest_mode and isinstance(tree, IndexTree):
            try:
                report.suggestions, report.note = suggest(
                    settings, adrs, tree, {g.adr.id for g in report.governing}, suggest_mode
                )
            except Exception as exc:  # advisory: it must never stand in the way of the check itself
                report.note = f"{type(exc).__name__}: {exc}"
        if not fix:
            return report
        todo = [p for p in report.problems if p.code in FIXABLE and p.anchor is not None]
        if not todo:
            return report
        renames = fixer.rename_map(root, staged)
        candidates = scope if scope is not None else changed_since_head(root)
        for problem in todo:
            result = fixer.propose(problem, root, tree, renames, candidates)
            assert problem.anchor is not None
            if isinstance(result, Anchor) and fixer.apply(
                root, problem.file, problem.anchor, result
            ):
                report.fixed.append(
                    f"{problem.adr}: {problem.anchor.spec()} -> {result.spec()} ({problem.file})"
                )
            else:
                reason = (
                    result
                    if isinstance(result, str)
                    else "the anchor was edited in the working copy since it was staged"
                )
                report.unfixed.append(f"{problem.adr}: {problem.anchor.spec()}: {reason}")
        if report.fixed and not staged:
            _once(settings, tree, scope, report, strict)
        return report
    finally:
        tree.close()


def render(report: CheckReport) -> str:
    """The human report of `zg adr check` (and of the pre-commit hook when it blocks)."""
    lines: list[str] = []
    if report.governing:
        lines.append(
            "Decision records governing the staged files:"
            if report.mode == "staged"
            else "Decision records governing these files:"
        )
        for g in report.governing:
            syms = f" [{', '.join(g.symbols)}]" if g.symbols else ""
            lines.append(
                f"  {g.adr.id} ({g.adr.status}) {g.adr.title} - {', '.join(g.paths)}{syms}"
            )
            lines.extend(f"      constraint: {c}" for c in g.adr.constraints)
    lines.extend(suggestion_lines(report))
    lines.extend(p.render() for p in report.problems)
    lines.extend(f"fixed: {line}" for line in report.fixed)
    lines.extend(f"not fixed: {line}" for line in report.unfixed)
    if report.fixed and report.mode == "staged":
        lines.append(
            "zg adr check: anchors were fixed in the working copy; review, `git add` the ADRs and commit again"
        )
    n_err, n_warn = len(report.errors), len(report.problems) - len(report.errors)
    verdict = "FAILED" if n_err else "ok"
    lines.append(
        f"zg adr check: {verdict}: {n_err} error(s), {n_warn} warning(s) in {report.adr_count} ADR(s) ({report.mode})"
    )
    return "".join(f"{line}\n" for line in lines)


def suggestion_lines(report: CheckReport) -> list[str]:
    """`this change may concern ADR-0007 (Retry idempotent requests): src/http.py`, one per
    suggestion."""
    return [
        f"this change may concern {s.adr.id} ({s.adr.title}): {', '.join(s.files)}"
        for s in report.suggestions
    ]
