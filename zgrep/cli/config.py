"""`zg config show`: the merged configuration and where each value came from."""

from __future__ import annotations

import click

from zgrep.cli import output
from zgrep.cli.main import Common, common_options, fail, resolve
from zgrep.config import Config, ConfigError


@click.group()
def config() -> None:
    """Inspect configuration."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True)
@click.option("--root", "root_dir", default=None)
@common_options
def config_show(as_json: bool, root_dir: str | None, common: Common) -> None:
    """Print the merged configuration and where each value came from (flags included)."""
    root, _ = resolve(root_dir)
    try:
        cfg = Config.load(root, {**common.config(), "mode": common.mode})
    except ConfigError as exc:
        fail(str(exc))
    if as_json:
        output.write_json(output.config_doc(cfg), ascii_only=True)
    else:
        output.write_config(cfg)
