"""Listing commands: list (a user's memories without a query), history (every
version of a fact) and users (the tenant's users with memory).

Each runs on the data directory in this process or, with ``--url``, on a running
service (as the API key's tenant and clearance).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli.common import (
    DEFAULT_DATA_DIR,
    DataDir,
    JsonFlag,
    TenantOption,
    UrlOption,
    emit_json,
    exit_with,
    open_client,
    out,
)
from memstrata.errors import ValidationError

if TYPE_CHECKING:
    from memstrata.service.wire import ListedMemoryOut

app = typer.Typer()

KINDS = ("episode", "fact", "event", "preference", "pinned")
ListKind = Literal["episode", "fact", "event", "preference", "pinned"]


def parse_when(name: str, value: str | None, as_json: bool) -> datetime | None:
    """An ISO date or datetime from the command line (UTC when it names no zone)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise exit_with(
            ValidationError(name, f"must be an ISO date or datetime, got {value!r}"), as_json
        ) from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _marks(item: ListedMemoryOut) -> str:
    marks: list[str] = [item.status] if item.status not in ("current", "stored") else []
    if item.fact is not None:
        if item.fact.pinned:
            marks.append("pinned")
        marks.append(f"v{item.fact.version}")
        marks.append(f"importance {item.fact.importance:.2f}")
        if item.slot_current is False and item.status in ("current", "disputed"):
            marks.append("L2 slot names another version")
    return ", ".join(marks)


def _links(item: ListedMemoryOut) -> list[str]:
    lines = [f"  <- said: {e.text}" for e in item.episodes]
    lines += [f"  -> {f.subject} {f.attribute} = {f.value}" for f in item.facts]
    return lines


@app.command("list")
def list_memories(
    user: Annotated[str, typer.Option("--user", help="User id.")],
    kind: Annotated[
        str | None, typer.Option("--kind", help=f"Only one kind: {', '.join(KINDS)}.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only from this ISO date/datetime on.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only before this ISO date/datetime.")
    ] = None,
    page: Annotated[
        str | None, typer.Option("--page", help="The next_page marker a previous page printed.")
    ] = None,
    page_size: Annotated[int, typer.Option("--page-size", help="Items per page (1-200).")] = 50,
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """A user's memories without a query, newest first: episodes, facts (every version,
    marked), events and preferences, with the episodes each fact came from."""
    if kind is not None and kind not in KINDS:
        raise exit_with(ValidationError("kind", f"must be one of {', '.join(KINDS)}"), as_json)
    start, end = parse_when("since", since, as_json), parse_when("until", until, as_json)
    with open_client(url, tenant, data_dir, as_json) as client:
        result = client.list_memories(
            user,
            kind=cast("ListKind | None", kind),  # checked against KINDS above
            since=start,
            until=end,
            page=page,
            page_size=page_size,
        )
    if as_json:
        document: dict[str, Any] = {"user": user, "tenant": tenant}
        emit_json({**document, **result.model_dump(mode="json", exclude_none=True)})
        return
    if not result.items:
        out.print(f"no memories of {escape(user)} in this window")
        return
    table = Table(title=escape(f"memories of {user}, newest first"))
    for column in ("at", "kind", "id", "text", "marks"):
        table.add_column(column, overflow="fold")
    for item in result.items:
        text = "\n".join([item.text, *_links(item)])
        table.add_row(
            item.at.isoformat(timespec="seconds"), item.kind, item.id, escape(text), _marks(item)
        )
    out.print(table)
    if result.next_page:
        out.print(f"more: --page {result.next_page}")


@app.command()
def history(
    fact_id: Annotated[str, typer.Argument(help="The id of any version of the fact.")],
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Every version of a fact, oldest to newest, with validity and episodes."""
    with open_client(url, tenant, data_dir, as_json) as client:
        found = client.history(fact_id)
    if as_json:
        emit_json(found.model_dump(mode="json", exclude_none=True))
        return
    table = Table(title=escape(f"{found.subject} {found.attribute} of {found.user}"))
    for column in ("version", "value", "valid", "status", "said"):
        table.add_column(column, overflow="fold")
    for item in found.versions:
        fact = item.fact
        if fact is None:
            continue
        ended = "now" if fact.valid_to is None else fact.valid_to.isoformat(timespec="seconds")
        valid = f"{fact.valid_from.isoformat(timespec='seconds')} .. {ended}"
        said = "\n".join(e.text for e in item.episodes)
        table.add_row(f"v{fact.version}", escape(fact.value), valid, item.status, escape(said))
    out.print(table)


@app.command()
def users(
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The users with memory in the tenant, most recently active first."""
    with open_client(url, tenant, data_dir, as_json) as client:
        found = client.list_users()
    if as_json:
        emit_json({"tenant": tenant, "users": [u.model_dump(mode="json") for u in found]})
        return
    table = Table(title=escape(f"users of {tenant}"))
    for column in ("user", "episodes", "facts", "last active"):
        table.add_column(column)
    for u in found:
        table.add_row(
            escape(u.user),
            str(u.episodes),
            str(u.facts),
            u.last_active.isoformat(timespec="seconds"),
        )
    out.print(table)
