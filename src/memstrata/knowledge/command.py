"""CLI glue for ``memstrata ingest``: a progress bar, the run, a summary table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memstrata.clock import Clock
from memstrata.knowledge.chunking import Chunker
from memstrata.knowledge.ingest import IngestReport, KnowledgeIngestor
from memstrata.longterm.store import LongTermStore, PayloadSanitizer


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


def run_ingest_command(
    store: LongTermStore,
    sanitizer: PayloadSanitizer,
    clock: Clock,
    paths: Sequence[Path],
    tenant: str,
    manifest_dir: Path,
    console: Console,
    *,
    chunker: Chunker | None = None,
) -> IngestReport:
    """Ingest ``paths`` for ``tenant`` with a progress bar on ``console``; print a summary.

    Per-file errors are printed (file and reason) and returned in the report; the
    caller decides the exit status (e.g. non-zero when ``report.errors``).
    """
    ingestor = KnowledgeIngestor(
        store, sanitizer, clock, manifest_dir=manifest_dir, chunker=chunker
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        report = ingestor.ingest(paths, tenant=tenant, progress=progress)
    console.print(report_table(report))
    for error in report.errors:
        # markup=False: a file name with [brackets] must print as written.
        console.print(f"error: {error.path}: {error.reason}", style="red", markup=False)
    return report
