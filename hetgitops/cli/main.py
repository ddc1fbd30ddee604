"""Thin CLI: options -> api call -> formatter -> exit code. No policy logic lives here.

Commands are loaded when they run: `hetgitops explain` imports explain's module and what it
needs, not every compiler, checker and formatter the other commands use (importing them all
cost more than explain itself, issue 20 item 5). `hetgitops --help` imports every command to
list its one-line help."""

from __future__ import annotations

import importlib

import click

from hetgitops import __version__
from hetgitops.cli.common import EXIT_CODES_HELP, hold_standard_streams, tune_collector

# name -> "module:attribute" of its click command. A new command is one line here.
COMMANDS = {
    "argocd-cm": "hetgitops.cli.argocd_cm:argocd_cm",
    "capacity": "hetgitops.cli.capacity:capacity",
    "diff": "hetgitops.cli.diff:diff",
    "drift": "hetgitops.cli.drift:drift",
    "explain": "hetgitops.cli.explain:explain",
    "import": "hetgitops.cli.import_cmd:import_",
    "init": "hetgitops.cli.init:init",
    "jobs": "hetgitops.cli.jobs:jobs",
    "render": "hetgitops.cli.render:render",
    "rules": "hetgitops.cli.rules:rules",
    "schema": "hetgitops.cli.schema:schema",
    "validate": "hetgitops.cli.validate:validate",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented lazy-loading
    pattern: list_commands from a table, get_command imports the one asked for)."""

    def __init__(self, *args: object, lazy: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command) or command.name != cmd_name:
                raise TypeError(f"{self.lazy[cmd_name]} is not the {cmd_name!r} command")
            self.add_command(command)
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, prog_name="hetgitops")
def main() -> None:
    """Manage a heterogeneous GPU Kubernetes fleet from one declarative policy."""
    hold_standard_streams()
    tune_collector()
