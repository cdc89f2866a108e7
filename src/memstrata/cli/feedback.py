"""``memstrata feedback``: what users' feedback on decisions says about memory."""

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
    exit_with,
    open_client,
    out,
)
from memstrata.errors import ValidationError

app = typer.Typer(help="What users' feedback on decisions says about memory.")


@app.command("report")
def feedback_report(
    since: Annotated[
        str, typer.Option("--since", help="Window to report on: 30m, 24h, 7d, 2w.")
    ] = "7d",
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Which intents and questions keep missing the right memory (corrected, abandoned,
    rated 1-2), and which memories are retrieved but ignored."""
    from memstrata.health import parse_duration

    try:
        window = parse_duration(since)
    except ValidationError as exc:
        raise exit_with(exc, as_json) from exc
    with open_client(url, tenant, data_dir, as_json) as client:
        report = client.feedback_report(since=datetime.now(UTC) - window)
    if as_json:
        emit_json(report.model_dump(mode="json"))
        return
    rate = report.corrected_share
    out.print(
        f"{report.events} feedback events in the last {since}"
        + ("" if rate is None else f", {rate:.1%} of them corrections")
    )
    intents = Table(title="query types that miss the right memory (worst first)")
    columns = ("intent / question", "events", "confirmed", "corrected", "abandoned", "low")
    for column in (*columns, "miss rate"):
        intents.add_column(column, overflow="fold")
    for stats in report.intents:
        intents.add_row(
            stats.intent,
            str(stats.events),
            str(stats.confirmed),
            str(stats.corrected),
            str(stats.abandoned),
            str(stats.low_ratings),
            f"{stats.miss_rate:.0%}",
        )
        for question in stats.questions[:5]:
            intents.add_row(
                f"  {question.question or '-'}",
                str(question.events),
                "",
                "",
                "",
                "",
                f"{question.miss_rate:.0%}",
            )
    out.print(intents)
    ignored = Table(title="memories retrieved but ignored (most often first)")
    for column in ("id", "ignored", "used", "text"):
        ignored.add_column(column, overflow="fold")
    for memory in report.ignored:
        ignored.add_row(memory.id, str(memory.ignored), str(memory.used), memory.text or "[gone]")
    out.print(ignored)
