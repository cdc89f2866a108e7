"""Memory commands: remember, search, forget, forget-status, inspect, ingest,
consolidate, restore, report and cards.

A command with ``--url`` imports only the client and its wire models; the engine is
imported when a command opens the data directory in this process.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    err,
    exit_with,
    open_client,
    open_remote,
    out,
)
from memstrata.errors import BackendError, ValidationError

if TYPE_CHECKING:
    from memstrata.service.wire import ForgetJobOut, ForgetResult

app = typer.Typer()


@app.command()
def remember(
    user: Annotated[str, typer.Option("--user", help="User id.")],
    text: Annotated[str, typer.Option("--text", help="What to remember.")],
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Store a text for a user: kept whole as an episode, with the facts extracted from
    it (versioned, deduplicated); prints what was stored."""
    with open_client(url, tenant, data_dir, as_json) as client:
        receipt = client.remember(user, text, wait=True)
    episodes = [{"id": e.id, "text": e.text} for e in receipt.episodes]
    # What was stored, after the gateway: the text's episodes (one per chunk).
    stored_text = "\n\n".join(str(e["text"]) for e in episodes) or None
    facts = [f.model_dump(mode="json", exclude={"episodes", "valid_from"}) for f in receipt.facts]
    document = {
        "user": user,
        "tenant": tenant,
        "queued": receipt.queued,
        "written": bool(episodes),
        "episode_ids": receipt.episode_ids,
        "text": stored_text,
        "episodes": episodes,
        "facts": facts,
        "error": receipt.error,
    }
    if as_json:
        emit_json(document)
    elif receipt.queued:
        out.print(f"remembered for [bold]{user}[/bold]: {stored_text}")
        for episode in episodes:
            out.print(f"  episode {episode['id']}")
        for fact in facts:
            state = "current" if fact["active"] else "history"
            out.print(
                f"  {fact['kind']} {fact['subject']} {fact['attribute']} = {fact['value']} "
                f"(v{fact['version']}, {state})"
            )
        if not facts:
            out.print("  no fact recognized: the text is kept as said")
    else:
        err.print(f"[red]not queued[/red] ({receipt.error}); nothing was written")
    if not receipt.queued:
        raise typer.Exit(1)


@app.command()
def search(
    user: Annotated[str, typer.Option("--user", help="User id.")],
    query: Annotated[str, typer.Option("--query", help="What to look for.")],
    k: Annotated[int, typer.Option("--k", help="How many results.")] = 5,
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Retrieve a user's memories as an agent gets them (``engine.retrieve``): what was
    said and the current facts, the past marked as such."""
    from memstrata.skipreasons import BELOW_THRESHOLD, skip_note

    with open_client(url, tenant, data_dir, as_json) as client:
        result = client.retrieve(query, user_id=user, k=k)
    rows: list[dict[str, Any]] = [
        {
            "id": item.id,
            "kind": item.kind,
            "text": item.text,
            "score": round(item.score, 6),
            "cosine": round(item.cosine, 4),
            "confidence": None if item.confidence is None else round(item.confidence, 4),
            "low_confidence": item.low_confidence,
            "confidence_reason": item.confidence_reason,
            "superseded_by": item.superseded_by,
            "facts": [{"id": f.id, "text": f.text} for f in item.facts],
            "observed_at": None if item.observed_at is None else item.observed_at.isoformat(),
        }
        for item in result.items or result.below_threshold
    ]
    # Why L3 served less than it would have, or nothing: said in the table and the JSON,
    # never guessed from l3_skipped alone (a skipped L3 is not a low confidence).
    note = skip_note(result.l3_skip_reason, result.dense_skip_reason, cached=bool(result.items))
    if result.warnings:  # what L3 could not show yet (e.g. a multilingual catch-up)
        note = "; ".join([*([note] if note else []), *result.warnings])
    if as_json:
        emit_json(
            {
                "user": user,
                "tenant": tenant,
                "query": query,
                "l3_skipped": result.l3_skipped,
                "l3_skip_reason": result.l3_skip_reason,
                "dense_skip_reason": result.dense_skip_reason,
                "warnings": list(result.warnings),
                "note": note,
                "results": rows,
            }
        )
        return
    title = f"memories of {user} for {query!r}"
    if result.l3_skip_reason == BELOW_THRESHOLD:
        title += " (all below the confidence floor)"
    if not rows:
        said = note or "no memory matches the query"
        out.print(f"nothing came back for {escape(user)}: {escape(said)}")
        return
    table = Table(title=escape(title), caption=None if note is None else escape(note))
    for column in ("#", "kind", "text", "score", "cosine", "confidence"):
        table.add_column(column, overflow="fold")
    for i, row in enumerate(rows, 1):
        text = str(row["text"])
        if row["superseded_by"]:
            text += "  [past]"
        for fact in row["facts"]:
            text += f"\n  -> {fact['text']}"
        sure = "-" if row["confidence"] is None else f"{row['confidence']:.2f}"
        if row["low_confidence"]:
            sure += f" (low: {row['confidence_reason'] or 'cosine'})"
        table.add_row(
            str(i), str(row["kind"]), text, f"{row['score']:.4f}", f"{row['cosine']:.3f}", sure
        )
    out.print(table)


@app.command()
def forget(
    user: Annotated[
        str | None, typer.Option("--user", help="Forget everything held of this user.")
    ] = None,
    memory_id: Annotated[
        list[str] | None,
        typer.Option("--id", help="Forget this memory (repeatable): a fact with its history."),
    ] = None,
    store_label: Annotated[
        list[str] | None,
        typer.Option(
            "--store-namespace",
            help="Forget the item store's items under this namespace prefix, one label per "
            "option, in order (--store-namespace memories --store-namespace alice).",
        ),
    ] = None,
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="Wait for the forget and print its report (default), or (with --url) "
            "print the background job's id at once; follow it with forget-status.",
        ),
    ] = True,
) -> None:
    """Delete a user's memories (or chosen ones, or item-store items under a namespace)
    everywhere, the files on disk included; the audit log keeps only that a deletion
    happened."""
    if sum((user is not None, bool(memory_id), bool(store_label))) != 1:
        raise exit_with(
            ValidationError("user", "give exactly one of --user, --id and --store-namespace"),
            as_json,
        )
    if not wait and not url:
        # A job of this process would end with it, half done.
        raise exit_with(ValidationError("wait", "--no-wait needs --url"), as_json)
    with open_client(url, tenant, data_dir, as_json) as client:
        job = client.start_forget(
            user_id=user,
            ids=memory_id or None,
            store_namespace=store_label or None,
            wait=wait,
            timeout_s=_FORGET_POLL_S,
        )
        while wait and job.state in ("queued", "running"):
            job = client.forget_status(job.job_id, timeout_s=_FORGET_POLL_S)
    if not wait:
        if as_json:
            emit_json({"tenant": tenant, **job.model_dump(mode="json")})
        else:
            out.print(f"forget job {job.job_id}: {job.state}")
        return
    result = _forget_report(job, as_json)
    document = {"tenant": tenant, **result.model_dump()}
    if as_json:
        emit_json(document)
        return
    if user is not None:
        who = f"user {user}"
    elif memory_id:
        who = f"{len(memory_id)} memories"
    else:
        who = "store namespace " + "/".join(store_label or [])
    out.print(
        f"forgot {who}: {result.points_deleted} memories, "
        f"{result.keys_deleted} keys, {result.queue_entries_deleted} queued entries"
    )


# Each wait for a forget job: under the client's HTTP timeout, polled until it ends.
_FORGET_POLL_S = 30.0


def _forget_report(job: ForgetJobOut, as_json: bool) -> ForgetResult:
    if job.report is None:  # failed (a waited job raises its error; a polled one says it)
        reason = f"{job.error_type}: {job.error}" if job.error_type else job.state
        raise exit_with(BackendError(f"forget job {job.job_id} failed: {reason}"), as_json)
    return job.report


@app.command("forget-status")
def forget_status(
    job_id: Annotated[str, typer.Argument(help="The id `forget --no-wait` printed.")],
    url: UrlOption = None,
    wait: Annotated[
        float, typer.Option("--wait", help="Seconds to wait for it to finish.", min=0, max=600)
    ] = 0.0,
    as_json: JsonFlag = False,
) -> None:
    """A background forget job of the service: queued, running, done (with its report)
    or failed (with its error). Jobs live in the service: needs --url."""
    if not url:
        raise exit_with(
            ValidationError("url", "forget jobs live in the service: give --url"), as_json
        )
    with open_remote(url, "default", as_json) as client:
        job = client.forget_status(job_id, timeout_s=wait)
    if as_json:
        emit_json(job.model_dump(mode="json"))
        return
    line = f"forget job {job.job_id} ({job.kind}): {job.state}"
    if job.report is not None:
        line += f", {job.report.points_deleted} memories, {job.report.keys_deleted} keys"
    elif job.error_type:
        line += f", {job.error_type}: {job.error}"
    out.print(line)


@app.command()
def inspect(
    session: Annotated[str, typer.Option("--session", help="Session id.")],
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show what memstrata holds for a session: L1 while it is open in the serving
    process (never persisted), its live L2 keys and TTLs, its pending tasks."""
    with open_client(url, tenant, data_dir, as_json) as client:
        held = client.inspect(session)
    report: dict[str, Any] = {
        "session_id": held.session_id,
        "l1": None if held.session is None else held.session.model_dump(mode="json"),
        "l2": [k.model_dump(mode="json") for k in held.l2],
        "pending_tasks": list(held.pending_tasks),
    }
    if as_json:
        emit_json(report)
        return
    out.print(f"[bold]session[/bold] {escape(session)}")
    out.print(
        "L1:",
        "not open in the serving process (L1 is never persisted)"
        if report["l1"] is None
        else report["l1"],
    )
    table = Table(title="L2 keys")
    for column in ("key", "type", "ttl s"):
        table.add_column(column, overflow="fold")
    for row in report["l2"]:
        ttl = row["ttl_remaining_s"]
        table.add_row(row["key"], row["type"], "no expiry" if ttl is None else f"{ttl:.1f}")
    out.print(table)
    out.print("pending tasks:", ", ".join(report["pending_tasks"]) or "none")


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Markdown, HTML or text files, or folders.")],
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Cold path: chunk documents along sections into `knowledge` (incremental by hash;
    a re-ingested folder drops the chunks of its files deleted since)."""
    from memstrata.cli.ingest import ingest_paths

    with open_client(url, tenant, data_dir, as_json) as client:
        report = ingest_paths(client, paths, err if as_json else out)
    if as_json:
        emit_json(report.model_dump(mode="json"))


TenantsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tenant",
        help="Tenant(s) to process (repeatable); default: every tenant you may name (on "
        "the data directory, or with an operator admin key: all known; with another "
        "tenant's admin key: its own).",
    ),
]


@app.command()
def consolidate(
    tenant: TenantsOption = None,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Merge duplicates, compress old events, move stale units to cold storage,
    expire hot knowledge and merge what survives into `knowledge`."""
    # The local user owns the data directory: the operator tenant's admin, who may
    # name any tenant (the tenants are the request's, never the caller's).
    with open_client(url, "default", data_dir, as_json) as client:
        done = client.consolidate(tenants=tenant or None)
    document: dict[str, Any] = {
        "memories": {a.action: a.count for a in done.actions},
        "memory_ids": {a.action: list(a.ids) for a in done.actions},
        "hot_knowledge": {
            h.tenant: {"merged": h.merged, "duplicates": h.duplicates, "expired": h.expired}
            for h in done.hot_knowledge
        },
    }
    if as_json:
        emit_json(document)
        return
    table = Table(title="consolidation")
    table.add_column("action")
    table.add_column("count", justify="right")
    for name, count in document["memories"].items():
        table.add_row(name.replace("_", " "), str(count))
    for name, merge in document["hot_knowledge"].items():
        table.add_row(f"hot knowledge merged ({name})", str(merge["merged"]))
        table.add_row(f"hot knowledge expired ({name})", str(merge["expired"]))
    out.print(table)


@app.command()
def restore(
    ids: Annotated[list[str], typer.Argument(help="Ids of units in cold storage.")],
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Bring memory units back from cold storage."""
    with open_client(url, tenant, data_dir, as_json) as client:
        restored = client.restore(ids)
    if as_json:
        emit_json({"tenant": tenant, "restored": list(restored)})
    else:
        out.print(f"restored {len(restored)} of {len(ids)}: {', '.join(restored) or '-'}")


@app.command()
def report(
    since: Annotated[
        str, typer.Option("--since", help="Window to report on: 30m, 24h, 7d, 2w.")
    ] = "7d",
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where to write the .md and .html reports.")
    ] = Path("."),
    data_dir: DataDir = DEFAULT_DATA_DIR,
    as_json: JsonFlag = False,
) -> None:
    """Write the context health report (context_health_report.md and .html)."""
    from memstrata.health import HTML_FILE, MARKDOWN_FILE, parse_duration

    try:
        parse_duration(since)
    except ValidationError as exc:
        raise exit_with(exc, as_json) from exc
    # The operation samples the state as of now first (the operator's tenant: default).
    with open_client(None, "default", data_dir, as_json) as client:
        health = client.health_report(since=since)
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown, html = out_dir / MARKDOWN_FILE, out_dir / HTML_FILE
    markdown.write_text(health.markdown, encoding="utf-8")
    html.write_text(health.html, encoding="utf-8")
    if as_json:
        emit_json(
            {
                "markdown": str(markdown),
                "html": str(html),
                "samples": health.samples,
                "flags": health.flags,
            }
        )
    else:
        out.print(f"wrote {markdown} and {html} ({health.samples:,} samples)")
        # The seed bounds broken, so a scheduled run's log says so without the page.
        for flag in health.flags:
            out.print(f"FLAGGED {flag}", markup=False, highlight=False)


@app.command()
def cards(
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only cards this recent: 30m, 24h, 7d.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many cards.")] = 100,
    tenant: TenantOption = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Trace cards of the decisions taken, oldest first (--json exports them)."""
    from memstrata.health import parse_duration

    try:
        window = None if since is None else parse_duration(since)
    except ValidationError as exc:
        raise exit_with(exc, as_json) from exc
    start = None if window is None else datetime.now(UTC) - window
    with open_client(url, tenant, data_dir, as_json) as client:
        found = client.trace_cards(session_id=session, since=start, limit=limit)
    rows = [c.model_dump(mode="json") for c in found]
    if as_json:
        emit_json({"cards": rows})
        return
    table = Table(title=f"trace cards ({len(rows)})")
    columns = ("at", "session", "step", "intent", "route", "confidence", "tool", "outcome")
    for column in (*columns, "confirmation", "check"):
        table.add_column(column, overflow="fold")
    for row in rows:
        confirmation = row.get("confirmation")
        table.add_row(
            str(row["at"]),
            row["session_id"],
            str(row["step"]),
            row["intent"],
            row["route"],
            f"{row['confidence']:.2f} / {row['threshold']:.2f}",
            row.get("tool") or "",
            row.get("tool_outcome") or "",
            # Who answered a held high-impact call, and when (the time as exported).
            f"{confirmation} by {row.get('confirmation_by')} at {row.get('confirmation_at')}"
            if confirmation
            else "",
            row["consistency"],
        )
    out.print(table)
