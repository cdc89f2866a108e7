"""The ``memstrata`` command line (typer + rich), one module per command group.

With ``--json`` a command writes exactly one JSON document to stdout; everything
else (progress, logs) goes to stderr.

Starting is cheap: the modules here import typer, rich and each other only; a command
imports the engine, the client, the models or a benchmark when it runs, and the
service's commands are loaded only when one of them is invoked (see
:mod:`memstrata.cli.lazy`). ``memstrata --help`` and ``--version`` load none of them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memstrata.cli import bench, deadletters, demo, feedback, listing, memory
from memstrata.cli import eval as eval_commands
from memstrata.cli.common import err, out
from memstrata.cli.lazy import LazyGroup

DISTRIBUTION = "ctxstrata"


def installed_version() -> str:
    """The installed distribution's version ("0+unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"memstrata {installed_version()}")
        raise typer.Exit()


app = typer.Typer(
    name="memstrata",
    help="A layered context engine for long-running LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    cls=LazyGroup,
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the installed version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """A layered context engine for long-running LLM agents."""


app.add_typer(demo.app)
app.add_typer(memory.app)
app.add_typer(listing.app)
app.add_typer(bench.app, name="bench")
app.add_typer(eval_commands.app, name="eval")
app.add_typer(feedback.app, name="feedback")
app.add_typer(deadletters.app, name="deadletters")


def main() -> None:  # pragma: no cover - console entry
    app()


__all__ = ["app", "err", "installed_version", "main", "out"]
