"""`zg stats`: latency, zero-hit rate and index times from the local telemetry log (opt-in)."""

from __future__ import annotations

import sys
import click

from zgrep import telemetry
from zgrep.cli import output
from zgrep.cli.main import resolve
from zgrep.config import user_config_path
from zgrep.telemetry import CommandSummary, Interval


def _ms(stat: Interval) -> str:
    low, high = stat["ci"]
    return f"{stat['value']:.0f} ms [{low:.0f}-{high:.0f}]"


def _rate(stat: Interval) -> str:
    low, high = stat["ci"]
    return f"{100 * stat['value']:.1f}% [{100 * low:.1f}-{100 * high:.1f}]"


def _count(stat: Interval) -> str:
    low, high = stat["ci"]
    return f"{stat['value']:g} [{low:g}-{high:g}]"


def write_stats(summary: dict[str, CommandSummary], lines: int, path: str) -> None:
    """One block per command: runs, p50/p95 (95% bootstrap intervals), then per mode."""
    click.echo(
        f"{lines} telemetry lines in {path}; figures are p50/p95 with 95% bootstrap intervals"
    )
    for command, s in summary.items():
        head = f"{command:<7} {s['runs']} runs" + (
            f" ({s['errors']} failed)" if s["errors"] else ""
        )
        if "p50_ms" in s:
            head += f"  p50 {_ms(s['p50_ms'])}  p95 {_ms(s['p95_ms'])}"
        if "zero_hit_rate" in s:
            head += f"  zero hits {_rate(s['zero_hit_rate'])}"
        if "changed_p50" in s:
            head += f"  changed per run p50 {_count(s['changed_p50'])}"
        if "chunks_p50" in s:
            head += f"  chunks per run p50 {_count(s['chunks_p50'])}"
        click.echo(head)
        for mode, m in s.get("by_mode", {}).items():
            click.echo(
                f"  {mode:<7} {m['runs']} runs  p50 {_ms(m['p50_ms'])}  p95 {_ms(m['p95_ms'])}"
            )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
def stats(as_json: bool) -> None:
    """Summarise the local usage log: search/index/status latency (p50, p95), the zero-hit rate and
    index runs, each with a bootstrap confidence interval. Exit 1 when nothing was recorded."""
    _, cfg = resolve(None)
    path = telemetry.log_path()
    docs = telemetry.read_lines(path)
    if not docs:
        if cfg.telemetry.enabled:
            click.echo(f"zg: no usage recorded yet in {path}", err=True)
        else:
            click.echo(
                f"zg: telemetry is off (the default), so nothing is recorded; turn it on with "
                f"`[telemetry] enabled = true` in {user_config_path()} (lines stay in {path}; nothing is "
                "sent anywhere)",
                err=True,
            )
        sys.exit(1)
    summary = telemetry.summarize(docs)
    if as_json:
        output.write_json(
            {
                "path": str(path),
                "lines": len(docs),
                "enabled": cfg.telemetry.enabled,
                "commands": summary,
            }
        )
    else:
        write_stats(summary, len(docs), str(path))
