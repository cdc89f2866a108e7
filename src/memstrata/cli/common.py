"""What every command group shares: JSON output, the error exit, the engine or client a
command opens, and the options many commands take.

Kept light on purpose: this module is imported by ``memstrata --help``, so the engine,
the client and their models are imported inside the functions that open them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from memstrata.bench.baseline import Baseline, Comparison
    from memstrata.client import Client
    from memstrata.engine import ContextEngine
    from memstrata.errors import MemstrataError

out = Console()
err = Console(stderr=True)

DataDir = Annotated[
    Path,
    typer.Option("--data-dir", help="Where the embedded Valkey and Qdrant keep their files."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")]
TenantOption = Annotated[
    str,
    typer.Option(
        "--tenant",
        help="The tenant to act as on the data directory (with --url the API key's tenant "
        "is used: leave it at default).",
    ),
]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="MEMSTRATA_URL",
        help="Talk to a running `memstrata serve` (API key in MEMSTRATA_API_KEY; the tenant "
        "is the key's) instead of opening the data directory.",
    ),
]
BaselineOption = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="The previous release's numbers to print beside today's (default: the packaged "
        "baseline file, which `memstrata bench baseline` refreshes).",
    ),
]
DEFAULT_DATA_DIR = Path(".memstrata")

BUSY_HINT = (
    "The data directory is owned by another process, such as a running `memstrata serve`. "
    "Talk to it instead: add --url http://HOST:PORT (or set MEMSTRATA_URL) and put an API "
    "key in MEMSTRATA_API_KEY (`memstrata keys create --url ...`; the first admin key is in "
    "<data-dir>/admin.key)."
)


def emit_json(document: Any) -> None:
    """``document`` as the one JSON document of the command's stdout."""
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def emit_report(report: dict[str, Any], as_json: bool) -> None:
    """A benchmark report: one JSON document, or pretty-printed for a terminal."""
    if as_json:
        emit_json(report)
    else:
        out.print_json(json.dumps(report))


def exit_with(exc: MemstrataError, as_json: bool) -> typer.Exit:
    """Report ``exc`` (one JSON document with --json) and the exit to raise."""
    from memstrata.errors import error_code

    code = error_code(exc)
    hint = BUSY_HINT if "already served by a live embedded Valkey" in str(exc) else None
    if as_json:
        error = {"type": type(exc).__name__, "message": str(exc), "http": code.http}
        emit_json({"error": error | ({"hint": hint} if hint else {})})
    else:
        err.print(f"[red]error[/red] ({type(exc).__name__}): {exc}")
        if hint:
            err.print(hint)
    return typer.Exit(2)


@contextmanager
def typed_errors(as_json: bool) -> Iterator[None]:
    """A typed error (bad data file, bad option) becomes one message and exit code 2."""
    from memstrata.errors import MemstrataError, error_code

    try:
        yield
    except MemstrataError as exc:
        code = error_code(exc)
        if as_json:
            emit_json(
                {"error": {"type": type(exc).__name__, "message": str(exc), "http": code.http}}
            )
        else:
            err.print(f"[red]error[/red] ({type(exc).__name__}): {exc}", highlight=False)
        raise typer.Exit(2) from exc


def warn_to_stderr() -> None:
    """Library warnings on stderr (stdout is the command's output)."""
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


@contextmanager
def open_engine(data_dir: Path, as_json: bool) -> Iterator[ContextEngine]:
    """The engine of ``data_dir`` in this process; its typed errors end the command."""
    from memstrata.config import settings_from_env
    from memstrata.engine import ContextEngine
    from memstrata.errors import MemstrataError

    warn_to_stderr()
    try:
        with ContextEngine.open(settings_from_env(data_dir=data_dir)) as engine:
            yield engine
    except MemstrataError as exc:
        raise exit_with(exc, as_json) from exc


@contextmanager
def open_remote(url: str, tenant: str, as_json: bool) -> Iterator[Client]:
    """A client of the service at ``url``; errors reported like the local path's. Only
    the client and its wire models are imported: no engine, no model runtime."""
    import httpx

    from memstrata.client import Client
    from memstrata.errors import BackendUnavailableError, MemstrataError, ValidationError

    if tenant != "default":
        raise exit_with(
            ValidationError("tenant", "with --url the tenant is the API key's; drop --tenant"),
            as_json,
        )
    try:
        with Client(url) as client:
            yield client
    except MemstrataError as exc:
        raise exit_with(exc, as_json) from exc
    except httpx.TransportError as exc:  # the client does not translate these (yet)
        unreachable = BackendUnavailableError(f"the service at {url} did not answer: {exc}")
        raise exit_with(unreachable, as_json) from exc


@contextmanager
def open_client(url: str | None, tenant: str, data_dir: Path, as_json: bool) -> Iterator[Client]:
    """A client of the capability table: the service at ``url`` (over HTTP, as the API
    key's tenant), or without it the engine of ``data_dir`` opened in this process, as
    the local user of ``tenant``. Either way a command reads the same wire response."""
    if url:
        with open_remote(url, tenant, as_json) as client:
            yield client
        return
    from memstrata.client import Client
    from memstrata.service.inprocess import ServiceTransport
    from memstrata.service.local import local_caller, local_service

    with (
        open_engine(data_dir, as_json) as engine,
        Client(transport=ServiceTransport(local_service(engine, local_caller(tenant)))) as client,
    ):
        yield client


def load_baseline(path: Path | None, as_json: bool) -> Baseline:
    """The baseline file, read before a benchmark runs (a bad file fails in seconds)."""
    from memstrata.bench.baseline import load_baseline as load
    from memstrata.errors import MemstrataError

    try:
        return load(path)
    except MemstrataError as exc:
        raise exit_with(exc, as_json) from exc


def emit_against_baseline(
    report: dict[str, Any], baseline: Baseline, benchmark: str, mode: str, as_json: bool
) -> Comparison:
    """The report with ``baseline`` / ``vs_baseline``: one JSON document (flags on
    stderr), or the report, then today beside the previous release, then the flags."""
    import os

    from memstrata.bench.baseline import print_comparison, with_baseline

    document, comparison = with_baseline(report, baseline, benchmark, mode, load=os.getloadavg())
    if as_json:
        emit_json(document)
        print_comparison(comparison, err, table=False)
    else:
        out.print_json(json.dumps(report))
        print_comparison(comparison, out)
    return comparison
