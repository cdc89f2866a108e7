"""Export and import commands: ``export`` writes a user's (or the tenant's) memory as
one versioned JSON Lines file; ``import`` reads such a file back, or a conversation
a user already has (OpenAI messages, JSON Lines of role, content and timestamp).

Each runs on the data directory in this process or, with ``--url``, on a running
service (as the API key's tenant).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal, cast

import typer

from memstrata.cli.common import (
    DEFAULT_DATA_DIR,
    DataDir,
    JsonFlag,
    TenantOption,
    UrlOption,
    emit_json,
    err,
    exit_with,
    open_client,
    out,
)
from memstrata.errors import ValidationError

app = typer.Typer()

FORMATS = ("memstrata", "openai", "messages")
ImportFormat = Literal["memstrata", "openai", "messages"]


@app.command()
def export(
    user: Annotated[
        str | None,
        typer.Option("--user", help="Whose memory; omitted: every user of the tenant."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--out", help="The file to write (default: stdout).")
    ] = None,
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a user's memory (or the tenant's) as one versioned JSON Lines file: a
    header, then episodes, every fact version, preferences."""
    if as_json and output is None:
        raise exit_with(ValidationError("out", "--json prints a summary: name the file"), as_json)
    with open_client(url, tenant, data_dir, as_json) as client:
        exported = client.export_memories(user_id=user)
    if output is None:
        sys.stdout.write(exported.jsonl)
        return
    output.write_text(exported.jsonl, encoding="utf-8")
    summary = {"file": str(output), "lines": exported.lines, "user": user, "tenant": tenant}
    if as_json:
        emit_json(summary)
    else:
        err.print(f"wrote {exported.lines} lines to {output}")


@app.command("import")
def import_file(
    path: Annotated[Path, typer.Argument(help="The file to read ('-': stdin).")],
    form: Annotated[
        str,
        typer.Option(
            "--format",
            help="memstrata (an export), openai (a messages array) or messages "
            "(JSON Lines of role, content, timestamp).",
        ),
    ] = "memstrata",
    user: Annotated[
        str | None, typer.Option("--user", help="Whose conversation (openai / messages).")
    ] = None,
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Read an export into the tenant (idempotent: ids, dates and history kept), or a
    conversation through the normal write path. Nothing is written unless the whole
    file is valid; an error names its line and field."""
    if form not in FORMATS:
        raise exit_with(ValidationError("format", f"must be one of {', '.join(FORMATS)}"), as_json)
    try:
        content = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise exit_with(ValidationError("file", f"cannot be read: {exc}"), as_json) from exc
    with open_client(url, tenant, data_dir, as_json) as client:
        report = client.import_memories(
            content, format=cast("ImportFormat", form), user_id=user, wait=True
        )
    if as_json:
        emit_json(report.model_dump(mode="json", exclude_none=True))
        return
    if report.note:
        out.print(f"nothing imported: {report.note}")
        return
    out.print(
        f"imported {report.episodes} episodes, {report.facts} fact versions, "
        f"{report.preferences} preferences for {', '.join(report.users) or 'nobody'} "
        f"({report.added} new)"
        + (" (ids namespaced: the file came from another tenant)" if report.remapped else "")
    )
