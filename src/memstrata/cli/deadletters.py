"""``memstrata deadletters``: the write queue's entries that can never be stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table

from memstrata.cli.common import (
    DEFAULT_DATA_DIR,
    DataDir,
    JsonFlag,
    TenantOption,
    UrlOption,
    emit_json,
    open_client,
    out,
)

app = typer.Typer(
    help="The write queue's dead letters: entries that can never be stored, with why."
)


@app.command("list")
def deadletters_list(
    tenant: TenantOption = "default",
    after: Annotated[
        str | None, typer.Option("--after", help="Only those after this dead id (paging).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many.", min=1)] = 100,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The tenant's dead letters, oldest first: kind, user, error, reason (never the
    text). With --url, the API key's tenant's (an admin key)."""
    with open_client(url, tenant, data_dir, as_json) as client:
        letters = list(client.dead_letters(after=after, limit=limit))
    # A full page may have more after it: the next page starts after its last id.
    next_after = letters[-1].dead_id if len(letters) == limit else None
    if as_json:
        emit_json(
            {
                "dead_letters": [d.model_dump(mode="json") for d in letters],
                "next_after": next_after,
            }
        )
        return
    table = Table(title=f"dead letters ({len(letters)})")
    for column in ("dead id", "given up", "kind", "user", "deliveries", "error", "reason"):
        table.add_column(column, overflow="fold")
    for letter in letters:
        at = datetime.fromtimestamp(letter.dead_at, tz=UTC).isoformat(timespec="seconds")
        table.add_row(
            letter.dead_id,
            at,
            letter.kind,
            letter.user_id or "",
            str(letter.deliveries),
            letter.error,
            letter.reason,
        )
    out.print(table)
    if next_after:
        out.print(f"more: --after {next_after}")


@app.command("replay")
def deadletters_replay(
    dead_ids: Annotated[list[str], typer.Argument(help="Dead ids `deadletters list` printed.")],
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Put dead letters back on the write stream (each removed from the dead letters);
    without --url, waits until they are written."""
    with open_client(url, tenant, data_dir, as_json) as client:
        replayed = [client.replay_dead_letter(dead_id) for dead_id in dead_ids]
        if not url:
            client.flush(timeout_s=60)  # the engine closes after this command
    if as_json:
        emit_json({"replayed": [r.model_dump(mode="json") for r in replayed]})
        return
    for item in replayed:
        out.print(f"replayed {item.dead_id} as entry {item.entry_id}")
