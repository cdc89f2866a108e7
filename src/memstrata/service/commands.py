"""The service's commands: ``memstrata serve``, ``memstrata mcp`` and ``memstrata keys``."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, cast

import typer

from memstrata.config import settings_from_env
from memstrata.errors import MemstrataError, error_code

if TYPE_CHECKING:  # `serve`, `wait` and `--help` import neither (they start at once)
    from memstrata.service import wire as m
    from memstrata.service.auth import Clearance, KeyInfo, Role

DataDir = Annotated[
    Path,
    typer.Option(
        "--data-dir",
        envvar="MEMSTRATA_DATA_DIR",
        help="Where the embedded Valkey and Qdrant keep their files.",
    ),
]
TenantOption = Annotated[str, typer.Option("--tenant", help="The tenant the key belongs to.")]
AgentOption = Annotated[
    str, typer.Option("--agent", help="The agent the key is for (its calls are audited as it).")
]
KeysJson = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print exactly one JSON document (what these commands print anyway; for scripts).",
    ),
]
DebugFlag = Annotated[
    bool,
    typer.Option(
        "--debug",
        help="On a start-up failure, print the traceback before the one-line reason "
        "(also MEMSTRATA_DEBUG=1).",
    ),
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
UpstreamOption = Annotated[
    str | None,
    typer.Option(
        "--upstream",
        help="An OpenAI-compatible base URL (https://api.openai.com/v1): POST "
        "/v1/chat/completions then adds the user's memories and forwards there "
        '(the settings\' proxy.upstream; docs/service.md, "OpenAI-compatible proxy").',
    ),
]
DEFAULT_DATA_DIR = Path(".memstrata")


def _fail(exc: MemstrataError) -> typer.Exit:
    code = error_code(exc)
    sys.stderr.write(f"error ({type(exc).__name__}, {code.grpc.lower()}): {exc}\n")
    return typer.Exit(2)


def dump(model: Any) -> Any:
    from memstrata.service.wire import dump as dump_model

    return dump_model(model)


def _print(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


SERVE_ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("MEMSTRATA_DATA_DIR", "the data directory, when --data-dir is not given"),
    ("MEMSTRATA_SETTINGS", "a JSON settings file (memstrata.config.load_settings), read first"),
    (
        "MEMSTRATA_REDIS_URL",
        "a Redis or Valkey server (redis://, unix://, redis+cluster://) instead of the "
        "embedded Valkey",
    ),
    ("MEMSTRATA_QDRANT_URL", "a Qdrant server instead of the in-process qdrant-edge"),
    ("MEMSTRATA_QDRANT_API_KEY", "the Qdrant server's API key"),
    ("MEMSTRATA_OTEL", "console or otlp: OpenTelemetry spans per stage (off when unset)"),
    ("MEMSTRATA_MODEL_CACHE", "where the ONNX model is built and kept (~/.cache/memstrata/models)"),
    ("MEMSTRATA_DISK_RESERVE_MB", "free MiB below which the service turns read-only"),
    ("MEMSTRATA_LLM_API_KEY", "the API key of an LLM extractor, when the settings name one"),
    ("MEMSTRATA_DEBUG", "1: a start-up failure prints its traceback too"),
)
"""Every environment variable ``memstrata serve`` reads (listed in ``serve --help``; a
test checks the list against the code)."""


def _environment_help() -> str:
    lines = "\n\n".join(f"{name}: {what}." for name, what in SERVE_ENVIRONMENT)
    return f"Environment variables:\n\n{lines}"


SERVE_HELP = "\n\n".join(
    (
        "Serve REST (OpenAPI at /openapi.json), MCP (streamable HTTP at /mcp) and gRPC.",
        'The ports are bound at once: GET /healthz answers 200 with status "starting" while '
        "the models and backends load, GET /readyz 503 until every operation is served, then "
        "200 (`memstrata wait` polls it); calls before that get 503 with Retry-After. On the "
        "first start an admin key for tenant `default` is written to <data-dir>/admin.key "
        "before /readyz answers 200; create the others with `memstrata keys create`.",
        "With --workers N, N engine processes serve behind one front that routes each request "
        "by its API key's tenant (a tenant's sessions and memory live in one worker).",
        "A start-up failure is one line on stderr with its own exit code: 3 a port in use, 4 "
        "the data directory is a file, 5 it cannot be written, 6 invalid settings, 7 another "
        "process serves the data directory, 8 the embedded Valkey did not start, 9 too little "
        'disk, 1 anything else (docs/service.md, "Start-up failures").',
        _environment_help(),
    )
)


def serve(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="The address REST, MCP and gRPC listen on (0.0.0.0 or :: for every "
            "interface; MCP admits only requests addressed to it).",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="REST and MCP (at /mcp).")] = 8080,
    grpc_port: Annotated[
        int, typer.Option("--grpc-port", help="gRPC (memstrata.v1.Memstrata, with reflection).")
    ] = 50051,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Engine processes behind one front, sharded by tenant (fixed per data dir).",
        ),
    ] = 1,
    upstream: UpstreamOption = None,
    debug: DebugFlag = False,
) -> None:
    from memstrata.service.proxy.serve import with_upstream
    from memstrata.service.server import ServeOptions
    from memstrata.service.server import serve as run
    from memstrata.service.startup import debug_wanted, report

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        settings = with_upstream(settings_from_env(data_dir=data_dir), upstream)
        options = ServeOptions(host=host, port=port, grpc_port=grpc_port)
        if workers == 1:
            run(settings, options)
        else:
            from memstrata.service.workers import serve_workers

            serve_workers(settings, options, workers)
    except Exception as exc:  # one line and the cause's exit code, never a traceback
        raise typer.Exit(report(exc, debug=debug or debug_wanted())) from None


serve.__doc__ = SERVE_HELP


def wait(
    url: Annotated[
        str,
        typer.Option(
            "--url", envvar="MEMSTRATA_URL", help="The service to wait for (MEMSTRATA_URL)."
        ),
    ] = "http://127.0.0.1:8080",
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds to wait before giving up (exit 1)."),
    ] = 300.0,
) -> None:
    """Wait until the service at --url is ready: GET /readyz answers 200.

    For scripts that start `memstrata serve ... &`: once this returns (exit 0), every
    operation is served and, on a first start, <data-dir>/admin.key exists. On timeout,
    or when the service failed to start, one line on stderr and exit 1.
    """
    import time

    import httpx

    deadline = time.monotonic() + timeout
    ready_url = url.rstrip("/") + "/readyz"
    last = "no answer"
    while True:
        try:
            answer = httpx.get(ready_url, timeout=5.0)
            if answer.status_code == 200:
                return
            try:
                state = answer.json()
            except ValueError:
                state = {}
            status = state.get("status", answer.status_code) if isinstance(state, dict) else ""
            last = f"/readyz answers {answer.status_code} ({status})"
            if status == "failed":
                sys.stderr.write(f"memstrata wait: {url} failed to start: {state.get('detail')}\n")
                raise typer.Exit(1)
        except httpx.HTTPError as exc:
            last = f"no answer ({type(exc).__name__})"
        if time.monotonic() >= deadline:
            sys.stderr.write(
                f"memstrata wait: {url} not ready after {timeout:g} s: {last}; is `memstrata "
                "serve` running there? (its stderr says why it stopped)\n"
            )
            raise typer.Exit(1)
        time.sleep(0.2)


def mcp(
    tenant: Annotated[
        str, typer.Option("--tenant", help="The tenant the local user acts in.")
    ] = "default",
    agent: Annotated[
        str, typer.Option("--agent", help="The agent name calls are made and audited as.")
    ] = "local",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    debug: DebugFlag = False,
) -> None:
    """MCP over stdio for desktop clients: runs as the local user, no key needed.

    It answers `initialize` and `tools/list` at once; the engine opens beside them, and
    a tool call made before it is open waits for it. Start-up failures found before
    that (settings, the data directory) are one line on stderr with the exit codes of
    `memstrata serve`; one found while the engine opens is the error of every tool call.
    """
    from memstrata.service.startup import check_data_dir, debug_wanted, report

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        from memstrata.service.auth import check_name
        from memstrata.service.local import local_caller

        caller = local_caller(check_name("tenant", tenant), check_name("agent", agent))
        settings = settings_from_env(data_dir=data_dir)
        check_data_dir(Path(settings.data_dir))
    except Exception as exc:
        raise typer.Exit(report(exc, debug=debug or debug_wanted())) from None
    import anyio

    from memstrata.service.local import StartingLocalService
    from memstrata.service.mcp import run_stdio

    service = StartingLocalService(settings, caller)
    try:
        anyio.run(run_stdio, service.as_service())
    finally:
        service.close()


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
        tenant: TenantOption,
        agent: AgentOption,
        role: Annotated[str, typer.Option("--role", help="reader, writer or admin")],
        clearance: Annotated[
            str, typer.Option("--clearance", help="low, medium or high: what the key may read")
        ] = "high",
        ttl_days: Annotated[
            float | None,
            typer.Option("--ttl-days", help="Days until the key expires (default: never)."),
        ] = None,
        rate_per_s: Annotated[
            int,
            typer.Option("--rate-per-s", help="Requests per second the key may make (then 429)."),
        ] = 1_000,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        url: UrlOption = None,
        as_json: KeysJson = False,
    ) -> None:
        """Create a key; it is printed this once (only its hash is stored)."""
        ttl_s = None if ttl_days is None else ttl_days * 86_400
        if url:  # another tenant than the key's needs an operator admin key
            with _remote(connect, url) as client:
                created = client.create_key(
                    agent,
                    cast("Role", role),  # the request model checks it
                    tenant=tenant,
                    clearance=cast("Clearance", clearance),
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
        as_json: KeysJson = False,
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
        tenant: Annotated[
            str | None,
            typer.Option(
                "--tenant", help="Only this tenant's keys (without --url; default: every tenant)."
            ),
        ] = None,
        data_dir: DataDir = DEFAULT_DATA_DIR,
        url: UrlOption = None,
        as_json: KeysJson = False,
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


def serve_demo(
    data_dir: Annotated[
        Path,
        typer.Option("--data-dir", help="Where the demo's service keeps its files."),
    ] = Path(".memstrata-demo"),
) -> None:
    """Start the service, run an agent step over REST and the same step through MCP."""
    from memstrata.service.demo import run_serve_demo

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        run_serve_demo(data_dir)
    except MemstrataError as exc:
        raise _fail(exc) from exc


def proxy(
    upstream: UpstreamOption = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    host: Annotated[str, typer.Option("--host", help="The address the proxy listens on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="The proxy's HTTP port.")] = 8090,
    debug: DebugFlag = False,
) -> None:
    """An OpenAI-compatible proxy: POST /v1/chat/completions with the user's memories.

    Point an OpenAI client's base URL at http://HOST:PORT/v1, its api_key stays the
    upstream's own (sent on in Authorization); the memstrata key goes in X-API-Key, the
    end user in X-Memstrata-User (or the request's user field), the session in
    X-Memstrata-Session (a new one when absent, returned in the same header). The
    engine and data directory are set up as `memstrata serve` does.
    """
    from memstrata.service.proxy.serve import run_proxy, with_upstream
    from memstrata.service.startup import debug_wanted, report

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        run_proxy(with_upstream(settings_from_env(data_dir=data_dir), upstream), host, port)
    except Exception as exc:  # one line and the cause's exit code, never a traceback
        raise typer.Exit(report(exc, debug=debug or debug_wanted())) from None


def register(app: typer.Typer, connect: Connect) -> None:
    """Add the service's commands to the ``memstrata`` app; ``connect`` makes the client
    ``memstrata keys --url`` calls."""
    app.command()(serve)
    app.command()(wait)
    app.command("serve-demo")(serve_demo)
    app.command()(mcp)
    app.command()(proxy)
    app.add_typer(keys_commands(connect), name="keys")
