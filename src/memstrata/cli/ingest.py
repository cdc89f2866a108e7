"""``memstrata ingest`` through the client: the files read here, sent as a folder's
manifest to ``ingest_documents`` (the engine in process or the service at ``--url``),
with a progress bar and a summary table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memstrata.cli.files import batches, discover

if TYPE_CHECKING:
    from memstrata.client import Client
    from memstrata.service.wire import IngestReportOut

_COUNTS = (
    ("files seen", "files_seen"),
    ("files added", "files_added"),
    ("files updated", "files_updated"),
    ("files unchanged (skipped)", "files_skipped"),
    ("files removed", "files_removed"),
    ("chunks added", "chunks_added"),
    ("chunks deleted", "chunks_deleted"),
    ("oversized chunks", "oversized_chunks"),
)


def ingest_paths(client: Client, paths: Sequence[Path], console: Console) -> IngestReportOut:
    """Ingest ``paths`` through ``client`` in batches (the last one carries the prune:
    the folders' documents neither sent nor unreadable are removed); print the
    progress, the summary and each file's error on ``console``; the summed report."""
    from memstrata.service import wire as m

    found = discover(paths)
    groups = list(batches(found.documents)) or [[]]
    sent: list[str] = []
    total = m.IngestReportOut(files_seen=len(found.unread))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("Ingesting", total=len(found.documents))
        for index, group in enumerate(groups):
            last = index == len(groups) - 1
            if not group and not (last and found.prune):
                continue
            report = client.ingest_documents(
                [m.DocumentIn(name=d.name, text=d.text, format=d.format) for d in group],
                prune_missing_under=found.prune if last else None,
                also_present=[*sent, *found.unread] if last and found.prune else None,
            )
            total = _add(total, report)
            sent += [d.name for d in group]
            progress.update(task, advance=len(group))
    errors = [m.FileErrorOut(path=path, reason=reason) for path, reason in found.errors]
    total = total.model_copy(update={"errors": [*errors, *total.errors]})
    console.print(_table(total))
    for error in total.errors:
        # markup=False: a file name with [brackets] prints as written.
        console.print(f"error: {error.path}: {error.reason}", style="red", markup=False)
    return total


def _add(total: IngestReportOut, report: IngestReportOut) -> IngestReportOut:
    counts = {field: getattr(total, field) + getattr(report, field) for _, field in _COUNTS}
    return total.model_copy(update={**counts, "errors": [*total.errors, *report.errors]})


def _table(report: IngestReportOut) -> Table:
    table = Table(title="Knowledge ingest", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, field in _COUNTS:
        table.add_row(label, str(getattr(report, field)))
    table.add_row("errors", str(len(report.errors)))
    return table
