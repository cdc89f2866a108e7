"""The service's commands (serve, wait, serve-demo, mcp, keys, proxy), registered without importing
them: :mod:`memstrata.service.commands` imports the service's wire models and key store,
which ``memstrata --help`` and every other command do without.

Each is a :class:`LazyCommand` in the top-level group: enough to list it in the help
(its name and one line); the group swaps in the real command, built by the service's own
``register``, when one of them is invoked (``--help`` included).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click import Command, Context  # typer's own click (it vendors one)

    from memstrata.client import Client

# name -> the line the top-level help shows (a test checks it against the real command's).
SERVICE_COMMANDS: dict[str, str] = {
    "serve": "Serve REST (OpenAPI at /openapi.json), MCP (streamable HTTP at /mcp) and gRPC.",
    "wait": "Wait until the service at --url is ready: GET /readyz answers 200.",
    "serve-demo": "Start the service, run an agent step over REST and the same step through MCP.",
    "mcp": "MCP over stdio for desktop clients: runs as the local user, no key needed.",
    "keys": "API keys: create, revoke and list (hashed in Valkey).",
    "proxy": "An OpenAI-compatible proxy: POST /v1/chat/completions with the user's memories.",
}


def key_client(url: str, key: str) -> Client:
    """The client ``memstrata keys --url`` manages keys through."""
    from memstrata.client import Client

    return Client(url, key, timeout_s=30.0)


@cache
def _service_group() -> TyperGroup:
    """The service's commands as the service registers them, built once per process."""
    from memstrata.service.commands import register

    holder = typer.Typer()
    register(holder, key_client)
    group = typer.main.get_command(holder)
    assert isinstance(group, TyperGroup)
    return group


class LazyCommand(TyperCommand):
    """A service command listed by name and help line; :meth:`load` builds the real one."""

    def __init__(self, name: str, short_help: str) -> None:
        super().__init__(name, help=short_help, short_help=short_help, add_help_option=False)

    def load(self) -> Command:
        """The real command (importing the service's command module)."""
        assert self.name is not None
        group = _service_group()
        command = group.get_command(typer.Context(group), self.name)
        assert command is not None, self.name
        return command

    def invoke(self, ctx: Context) -> Any:  # pragma: no cover - the group loads first
        raise RuntimeError(f"{self.name}: the group loads the command before it runs")


class LazyGroup(TyperGroup):
    """The top-level group: the service's commands listed at once, loaded when run."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, line in SERVICE_COMMANDS.items():
            self.add_command(LazyCommand(name, line), name)

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, LazyCommand):
            command = command.load()
        return name, command, rest
