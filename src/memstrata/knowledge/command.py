"""CLI glue for ``memstrata ingest``: a progress bar, the run, a summary table."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memstrata.knowledge.ingest import IngestProgress, IngestReport


def report_table(report: IngestReport) -> Table:
    """The report as a two-column rich table."""
    table = Table(title="Knowledge ingest", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    rows = (
        ("files seen", report.files_seen),
        ("files added", report.files_added),
        ("files updated", report.files_updated),
        ("files unchanged (skipped)", report.files_skipped),
        ("files removed", report.files_removed),
        ("chunks added", report.chunks_added),
        ("chunks deleted", report.chunks_deleted),
        ("oversized chunks", report.oversized_chunks),
        ("errors", len(report.errors)),
    )
    for label, value in rows:
        table.add_row(label, str(value))
    return table


def rich_progress(progress: Progress, description: str = "Ingesting") -> IngestProgress:
    """An ingest progress callback that drives one task of a rich ``Progress``."""
    task = progress.add_task(description, total=None)

    def update(name: str, done: int, total: int) -> None:
        label = f"{description} {name}" if name else description
        progress.update(task, description=label, completed=done, total=total)

    return update


def run_ingest_command(
    ingest: Callable[[IngestProgress], IngestReport], console: Console
) -> IngestReport:
    """Run ``ingest`` (e.g. ``lambda p: engine.ingest_files(paths, progress=p)``) with a
    progress bar on ``console``, then print a summary.

    Per-file errors are printed (file and reason) and returned in the report; the
    caller decides the exit status (e.g. non-zero when ``report.errors``).
    """
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        report = ingest(rich_progress(progress))
    console.print(report_table(report))
    for error in report.errors:
        # markup=False: a file name with [brackets] must print as written.
        console.print(f"error: {error.path}: {error.reason}", style="red", markup=False)
    return report
