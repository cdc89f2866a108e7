"""The service's commands: ``memstrata serve``, ``memstrata mcp`` and ``memstrata keys``."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol, cast

import typer

from memstrata.config import settings_from_env
from memstrata.errors import MemstrataError, error_code
from memstrata.service import wire as m
from memstrata.service.auth import Clearance, KeyInfo, Role
from memstrata.service.wire import dump

DataDir = Annotated[
    Path,
    typer.Option("--data-dir", help="Where the embedded Valkey and Qdrant keep their files."),
]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="MEMSTRATA_URL",
        help="A running service to manage keys through (with an admin key in "
        "MEMSTRATA_API_KEY); without it the data directory's key store is used directly, "
        "also while `memstrata serve` runs on it (how a locked-out operator gets back in).",
    ),
]
DEFAULT_DATA_DIR = Path(".memstrata")


def _fail(exc: MemstrataError) -> typer.Exit:
    code = error_code(exc)
    sys.stderr.write(f"error ({type(exc).__name__}, {code.grpc.lower()}): {exc}\n")
    return typer.Exit(2)


def _print(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def serve(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="REST and MCP (at /mcp).")] = 8080,
    grpc_port: Annotated[int, typer.Option("--grpc-port")] = 50051,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Engine processes behind one front, sharded by tenant (fixed per data dir).",
        ),
    ] = 1,
) -> None:
    """Serve REST (OpenAPI at /openapi.json), MCP (streamable HTTP at /mcp) and gRPC.

    With --workers N, N engine processes serve behind one front that routes each
    request by its API key's tenant (a tenant's sessions and memory live in one
    worker). On the first start an admin key for tenant `default` is written to
    <data-dir>/admin.key; create the others with `memstrata keys create`.
    """
    from memstrata.service.server import ServeOptions
    from memstrata.service.server import serve as run

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    settings = settings_from_env(data_dir=data_dir)
    options = ServeOptions(host=host, port=port, grpc_port=grpc_port)
    try:
        if workers == 1:
            run(settings, options)
        else:
            from memstrata.service.workers import serve_workers

            serve_workers(settings, options, workers)
    except MemstrataError as exc:
        raise _fail(exc) from exc


def mcp(
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    agent: Annotated[str, typer.Option("--agent")] = "local",
    data_dir: DataDir = DEFAULT_DATA_DIR,
) -> None:
    """MCP over stdio for desktop clients: runs as the local user, no key needed."""
    import anyio

    from memstrata.engine import ContextEngine
    from memstrata.service.auth import check_name
    from memstrata.service.local import local_caller, local_service
    from memstrata.service.mcp import run_stdio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        caller = local_caller(check_name("tenant", tenant), check_name("agent", agent))
        settings = settings_from_env(data_dir=data_dir)
        with ContextEngine.open(settings) as engine:
            anyio.run(run_stdio, local_service(engine, caller))
    except MemstrataError as exc:
        raise _fail(exc) from exc


class KeyClient(Protocol):
    """What ``memstrata keys --url`` calls: a :class:`memstrata.client.Client`, which the
    CLI passes in (this package does not import the client: the client imports it)."""

    def create_key(
        self,
        agent: str,
        role: Role,
        *,
        tenant: str | None = None,
        clearance: Clearance = "high",
        ttl_s: float | None = None,
        rate_per_s: int = 1000,
    ) -> m.CreatedKeyOut: ...

    def revoke_key(self, key_id: str) -> m.KeyOut: ...

    def list_keys(self) -> m.KeyList: ...

    def close(self) -> None: ...


Connect = Callable[[str, str], KeyClient]
"""``(url, key)`` -> a client of the service at ``url`` presenting ``key``."""


@contextmanager
def _remote(connect: Connect, url: str) -> Iterator[KeyClient]:
    """A client of the service at ``url`` with the admin key in ``MEMSTRATA_API_KEY``;
    an error is reported as the service's error body with its HTTP status."""
    from memstrata.service.core import error_body

    key = os.environ.get("MEMSTRATA_API_KEY")
    if not key:
        sys.stderr.write("error: set MEMSTRATA_API_KEY to an admin key of the service\n")
        raise typer.Exit(2)
    client = connect(url, key)
    try:
        yield client
    except MemstrataError as exc:
        sys.stderr.write(f"error ({error_code(exc).http}): {error_body(exc)}\n")
        raise typer.Exit(2) from exc
    finally:
        client.close()


def keys_commands(connect: Connect) -> typer.Typer:
    """``memstrata keys``: with ``--url`` through ``connect``'s client (as the key's
    tenant, within its rights), otherwise on the data directory's key store (any
    tenant, no engine: the operator), beside a running service or not."""
    keys_app = typer.Typer(help="API keys: create, revoke and list (hashed in Valkey).")

    @keys_app.command("create")
    def keys_create(
        tenant: Annotated[str, typer.Option("--tenant")],
        agent: Annotated[str, typer.Option("--agent")],
        role: Annotated[str, typer.Option("--role", help="reader, writer or admin")],
        clearance: Annotated[str, typer.Option("--clearance", help="low, medium or high")] = "high",
        ttl_days: Annotated[float | None, typer.Option("--ttl-days")] = None,
        rate_per_s: Annotated[int, typer.Option("--rate-per-s")] = 1_000,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        url: UrlOption = None,
    ) -> None:
        """Create a key; it is printed this once (only its hash is stored)."""
        ttl_s = None if ttl_days is None else ttl_days * 86_400
        if url:  # another tenant than the key's needs an operator admin key
            with _remote(connect, url) as client:
                created = client.create_key(
                    agent,
                    cast(Role, role),  # the request model checks it
                    tenant=tenant,
                    clearance=cast(Clearance, clearance),
                    ttl_s=ttl_s or None,
                    rate_per_s=rate_per_s,
                )
            _print(dump(created))
            return
        from memstrata.service.server import key_store

        try:
            with key_store(settings_from_env(data_dir=data_dir)) as keys:
                made = keys.create(
                    tenant, agent, role, clearance=clearance, ttl_s=ttl_s, rate_per_s=rate_per_s
                )
        except MemstrataError as exc:
            raise _fail(exc) from exc
        _print({"key": made.key, "info": made.info.as_dict()})

    @keys_app.command("revoke")
    def keys_revoke(
        key_id: Annotated[str, typer.Argument(help="The key id (the part after msk_).")],
        data_dir: DataDir = DEFAULT_DATA_DIR,
        url: UrlOption = None,
    ) -> None:
        """Revoke a key at once."""
        if url:
            with _remote(connect, url) as client:
                _print(dump(client.revoke_key(key_id)))
            return
        from memstrata.service.server import key_store

        try:
            with key_store(settings_from_env(data_dir=data_dir)) as keys:
                info: KeyInfo = keys.revoke(key_id)
        except MemstrataError as exc:
            raise _fail(exc) from exc
        _print(info.as_dict())

    @keys_app.command("list")
    def keys_list(
        tenant: Annotated[str | None, typer.Option("--tenant")] = None,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        url: UrlOption = None,
    ) -> None:
        """List keys (ids, tenants, agents, roles; never the keys)."""
        if url:  # the key's tenant's keys: --tenant is not used
            with _remote(connect, url) as client:
                _print(dump(client.list_keys()))
            return
        from memstrata.service.server import key_store

        try:
            with key_store(settings_from_env(data_dir=data_dir)) as keys:
                infos = keys.all(tenant)
        except MemstrataError as exc:
            raise _fail(exc) from exc
        _print({"keys": [i.as_dict() for i in infos]})

    return keys_app


def serve_demo(data_dir: DataDir = Path(".memstrata-demo")) -> None:
    """Start the service, run an agent step over REST and the same step through MCP."""
    from memstrata.service.demo import run_serve_demo

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        run_serve_demo(data_dir)
    except MemstrataError as exc:
        raise _fail(exc) from exc


def register(app: typer.Typer, connect: Connect) -> None:
    """Add the service's commands to the ``memstrata`` app; ``connect`` makes the client
    ``memstrata keys --url`` calls."""
    app.command()(serve)
    app.command("serve-demo")(serve_demo)
    app.command()(mcp)
    app.add_typer(keys_commands(connect), name="keys")
