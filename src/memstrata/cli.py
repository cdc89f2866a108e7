"""The ``memstrata`` command line (typer + rich).

With ``--json`` a command writes exactly one JSON document to stdout; everything
else (progress, logs) goes to stderr.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memstrata.client import Client
from memstrata.config import settings_from_env
from memstrata.context import BuiltContext
from memstrata.engine import ContextEngine
from memstrata.errors import BackendError, MemstrataError, ValidationError, error_code
from memstrata.retrieval.guard import BELOW_THRESHOLD, skip_note
from memstrata.router import ContextBundle
from memstrata.service.commands import register as register_service_commands
from memstrata.service.inprocess import ServiceTransport
from memstrata.service.local import local_caller, local_service
from memstrata.service.wire import ForgetJobOut, ForgetResult

if TYPE_CHECKING:
    from memstrata.bench.baseline import Baseline, Comparison

app = typer.Typer(
    name="memstrata",
    help="A layered context engine for long-running LLM agents.",
    no_args_is_help=True,
    add_completion=False,
)
bench_app = typer.Typer(help="Benchmarks that print numbers against an in-run baseline.")
app.add_typer(bench_app, name="bench")
eval_app = typer.Typer(help="Retrieval quality on LoCoMo and LongMemEval, against baselines.")
app.add_typer(eval_app, name="eval")
feedback_app = typer.Typer(help="What users' feedback on decisions says about memory.")
app.add_typer(feedback_app, name="feedback")

out = Console()
err = Console(stderr=True)

DataDir = Annotated[
    Path,
    typer.Option("--data-dir", help="Where the embedded Valkey and Qdrant keep their files."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document.")]
DEFAULT_DATA_DIR = Path(".memstrata")


def _emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _emit_report(report: dict[str, Any], as_json: bool) -> None:
    """A benchmark report: one JSON document, or pretty-printed for a terminal."""
    if as_json:
        _emit_json(report)
    else:
        out.print_json(json.dumps(report))


BaselineOption = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="The previous release's numbers to print beside today's (default: the packaged "
        "baseline file, which `memstrata bench baseline` refreshes).",
    ),
]


def _load_baseline(path: Path | None, as_json: bool) -> Baseline:
    """The baseline file, read before a benchmark runs (a bad file fails in seconds)."""
    from memstrata.bench.baseline import load_baseline

    try:
        return load_baseline(path)
    except MemstrataError as exc:
        raise _exit_with(exc, as_json) from exc


def _emit_against_baseline(
    report: dict[str, Any], baseline: Baseline, benchmark: str, mode: str, as_json: bool
) -> Comparison:
    """The report with ``baseline`` / ``vs_baseline``: one JSON document (flags on
    stderr), or the report, then today beside the previous release, then the flags."""
    from memstrata.bench.baseline import print_comparison, with_baseline

    document, comparison = with_baseline(report, baseline, benchmark, mode, load=os.getloadavg())
    if as_json:
        _emit_json(document)
        print_comparison(comparison, err, table=False)
    else:
        out.print_json(json.dumps(report))
        print_comparison(comparison, out)
    return comparison


@contextmanager
def _engine(data_dir: Path, as_json: bool) -> Iterator[ContextEngine]:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        with ContextEngine.open(settings_from_env(data_dir=data_dir)) as engine:
            yield engine
    except MemstrataError as exc:
        raise _exit_with(exc, as_json) from exc


BUSY_HINT = (
    "The data directory is owned by another process, such as a running `memstrata serve`. "
    "Talk to it instead: add --url http://HOST:PORT (or set MEMSTRATA_URL) and put an API "
    "key in MEMSTRATA_API_KEY (`memstrata keys create --url ...`; the first admin key is in "
    "<data-dir>/admin.key)."
)


def _exit_with(exc: MemstrataError, as_json: bool) -> typer.Exit:
    """Report ``exc`` (one JSON document with --json) and the exit to raise."""
    code = error_code(exc)
    hint = BUSY_HINT if "already served by a live embedded Valkey" in str(exc) else None
    if as_json:
        error = {"type": type(exc).__name__, "message": str(exc), "http": code.http}
        _emit_json({"error": error | ({"hint": hint} if hint else {})})
    else:
        err.print(f"[red]error[/red] ({type(exc).__name__}): {exc}")
        if hint:
            err.print(hint)
    return typer.Exit(2)


def _bundle_table(title: str, bundle: ContextBundle) -> Table:
    note = skip_note(bundle.l3_skip_reason, bundle.dense_skip_reason)
    caption = None if note is None else escape(note)
    table = Table(title=title, show_lines=False, expand=True, caption=caption)
    for column in ("item", "layer", "ref", "source", "rel", "fresh h", "low conf", "content"):
        table.add_column(column, overflow="fold")
    for item in bundle.items:
        p = item.provenance
        content = json.dumps(item.as_dict()["content"], ensure_ascii=False, default=str)
        table.add_row(
            item.name,
            p.layer,
            p.ref,
            p.source,
            f"{p.relevance:.3f}",
            "-" if p.freshness_hours is None else f"{p.freshness_hours:.2f}",
            "yes" if p.low_confidence else "",
            content if len(content) <= 160 else content[:157] + "...",
        )
    for miss in bundle.missing:
        table.add_row(
            miss.name, miss.layer, miss.ref, "-", "-", "-", "", f"[yellow]missing: {miss.reason}"
        )
    return table


DEMO_AGENTS = ("support", "diagnostics")


@app.command()
def demo(
    agent: Annotated[
        str | None,
        typer.Argument(
            help="A reference agent to run: support (customer support) or diagnostics "
            "(battery health). Without it: the scripted battery-diagnosis session.",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDir = Path(".memstrata-demo"),
    as_json: JsonFlag = False,
    real_clock: Annotated[
        bool,
        typer.Option(
            "--real-clock",
            help="diagnostics: run batch after batch on the real clock for --minutes, "
            "with L2 TTLs of --ttl-seconds, so entries really expire; then "
            "`memstrata report --data-dir <the run's data directory>`.",
        ),
    ] = False,
    minutes: Annotated[
        float, typer.Option("--minutes", help="With --real-clock: how long to run.")
    ] = 3.0,
    ttl_seconds: Annotated[
        float, typer.Option("--ttl-seconds", help="With --real-clock: the L2 TTLs (s).")
    ] = 20.0,
) -> None:
    """Run a scripted multi-step agent session on the embedded defaults, or a reference
    agent (each step's decision, trace card and CER, then the decision rates). The
    agents write their replies by rule, or with the OpenAI-compatible endpoint
    MEMSTRATA_AGENT_LLM_URL names (model MEMSTRATA_AGENT_LLM_MODEL, key
    MEMSTRATA_LLM_API_KEY). The diagnostics agent runs its devices concurrently,
    beside a naive shared state under the same schedule."""
    if real_clock and agent != "diagnostics":
        error = ValidationError("real_clock", "runs the diagnostics agent only")
        raise _exit_with(error, as_json)
    if real_clock:
        _demo_real_clock(data_dir, as_json, minutes, ttl_seconds)
        return
    if agent is not None:
        _demo_agent(agent, data_dir, as_json)
        return
    from memstrata.demo import run_demo

    with _engine(data_dir, as_json) as engine:
        result = run_demo(engine)
    if as_json:
        _emit_json(
            {
                "steps": [{"title": s.title, "bundle": s.bundle.as_dict()} for s in result.steps],
                "redactions": list(result.redactions),
                "stored_memories": list(result.stored_memories),
                "series_points_kept": result.series_points_kept,
                "step5_ttl_s": {
                    "before_read": result.step5_ttl_before_s,
                    "after_read": result.step5_ttl_after_s,
                },
                "outputs": [
                    {
                        "title": s.title,
                        "output": s.output,
                        "loaded": s.outcome.loaded,
                        "used": s.outcome.used,
                    }
                    for s in result.steps
                ],
                "cer": result.cer,
                "context": result.context.as_dict(),
            }
        )
        return
    for step in result.steps:
        out.print(_bundle_table(step.title, step.bundle))
        out.print("context_used:", json.dumps(step.bundle.context_used(), ensure_ascii=False))
        out.print(
            f"agent output: {step.output}\n"
            f"CER: loaded={step.outcome.loaded} used={step.outcome.used}"
        )
    _print_built_context(result.context)
    out.print(
        f"[bold]CER[/bold] over the session: {result.cer['cer']} "
        f"(loaded {result.cer['loaded_rate']}, used {result.cer['used_rate']}, "
        f"{result.cer['steps']} steps)"
    )
    out.print(
        f"\n[bold]sensor window[/bold]: 1500 points appended, {result.series_points_kept} kept"
    )
    out.print(
        f"[bold]step5 TTL[/bold]: {result.step5_ttl_before_s:.0f}s after writing, "
        f"{result.step5_ttl_after_s:.0f}s after step7 (its dependent) read it"
    )
    out.print("[bold]memories as stored in L3[/bold] (after the gateway):")
    for text in result.stored_memories:
        out.print(f"  - {text}")
    out.print(
        "[bold]redactions audited[/bold] (kind and location only, never the value):",
        len(result.redactions),
    )
    for event in result.redactions:
        out.print(f"  - {event['kind']} at {event['location']} {event['field_path']}")


def _demo_agent(agent: str, data_dir: Path, as_json: bool) -> None:
    """Run one reference agent on an engine whose clock the agent moves."""
    from memstrata.agents import (
        AgentRun,
        DiagnosticsAgent,
        SupportAgent,
        chat_writer_from_env,
        diagnostics,
        support,
    )
    from memstrata.agents.console import print_run
    from memstrata.agents.fleet import DEVICE_IDS
    from memstrata.agents.shared_state import side_by_side
    from memstrata.clock import FakeClock

    if agent not in DEMO_AGENTS:
        error = ValidationError("agent", f"must be one of {', '.join(DEMO_AGENTS)}")
        raise _exit_with(error, as_json)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # The agent's clock starts at the script's date: every run starts from an empty
    # store of its own under the data directory (kept afterwards for inspection).
    clock = FakeClock(support.START if agent == "support" else diagnostics.START)
    run: AgentRun
    try:
        where = _fresh_demo_dir(data_dir / "agents" / agent)
        writer = chat_writer_from_env()
        with ContextEngine.open(settings_from_env(data_dir=where), clock=clock) as engine:
            if agent == "support":
                run = SupportAgent(engine, writer=writer, clock=clock).run()
            else:
                # Concurrently, beside the naive shared state under the same schedule.
                diag = DiagnosticsAgent(engine, writer=writer, clock=clock)
                run = side_by_side(diag, DEVICE_IDS)
    except MemstrataError as exc:
        raise _exit_with(exc, as_json) from exc
    if as_json:
        _emit_json(run.as_dict() | {"data_dir": str(where)})
    else:
        print_run(run, out)
        out.print(f"data directory: {where}", markup=False, highlight=False)


def _demo_real_clock(data_dir: Path, as_json: bool, minutes: float, ttl_s: float) -> None:
    """The diagnostics agent batch after batch on the real clock, short TTLs."""
    from memstrata.agents import chat_writer_from_env
    from memstrata.agents.console import print_run
    from memstrata.agents.realclock import check_options, run_real_clock, short_ttls

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        check_options(minutes, ttl_s)
        where = _fresh_demo_dir(data_dir / "agents" / "diagnostics-real-clock")
        settings = short_ttls(settings_from_env(data_dir=where), ttl_s)
        writer = chat_writer_from_env()
        with ContextEngine.open(settings) as engine:
            done = run_real_clock(engine, minutes=minutes, ttl_s=ttl_s, writer=writer)
    except MemstrataError as exc:
        raise _exit_with(exc, as_json) from exc
    if as_json:
        _emit_json(done.as_dict() | {"data_dir": str(where)})
        return
    print_run(done.last, out)
    out.print(
        f"real clock: {done.batches} batch(es) in {done.wall_s:.0f} s, L2 TTLs {ttl_s:g} s, "
        f"{done.samples} health samples\ndata directory: {where}\n"
        f"report: memstrata report --data-dir {where} --since 1h --out <dir>",
        markup=False,
        highlight=False,
    )


DEMO_MARKER = ".memstrata-agent-demo"


def _fresh_demo_dir(where: Path) -> Path:
    """``where`` emptied of a previous demo run (only one the demo made: it holds the
    marker file); ValidationError when something else is there."""
    import shutil

    if where.exists():
        if not (where / DEMO_MARKER).is_file():
            raise ValidationError("data_dir", f"{where} exists and was not made by the demo")
        shutil.rmtree(where)
    where.mkdir(parents=True)
    (where / DEMO_MARKER).write_text("made by `memstrata demo`; removed by its next run\n")
    return where


def _print_built_context(context: BuiltContext) -> None:
    """The context builder's accounting: sections, admitted and dropped items."""
    table = Table(title="step 7 - the model call (gpt-4o budget, exact token counts)")
    for column in ("section", "budget", "used"):
        table.add_column(column)
    for usage in context.sections:
        table.add_row(usage.section, str(usage.budget), str(usage.used))
    out.print(table)
    out.print(f"messages: {len(context.messages())}, tokens: {context.total_tokens}")
    for dropped in context.dropped:
        out.print(f"  dropped {dropped.id}: {dropped.reason} ({dropped.detail})")


UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="MEMSTRATA_URL",
        help="Talk to a running `memstrata serve` (API key in MEMSTRATA_API_KEY; the tenant "
        "is the key's) instead of opening the data directory.",
    ),
]


@contextmanager
def _remote(url: str, tenant: str, as_json: bool) -> Iterator[Client]:
    """A client of the service at ``url``; errors reported like the local path's."""
    if tenant != "default":
        raise _exit_with(
            ValidationError("tenant", "with --url the tenant is the API key's; drop --tenant"),
            as_json,
        )
    try:
        with Client(url) as client:
            yield client
    except MemstrataError as exc:
        raise _exit_with(exc, as_json) from exc


@contextmanager
def _client(url: str | None, tenant: str, data_dir: Path, as_json: bool) -> Iterator[Client]:
    """A client of the capability table: the service at ``url`` (over HTTP, as the API
    key's tenant), or without it the engine of ``data_dir`` opened in this process, as
    the local user of ``tenant``. Either way a command reads the same wire response."""
    if url:
        with _remote(url, tenant, as_json) as client:
            yield client
        return
    with (
        _engine(data_dir, as_json) as engine,
        Client(transport=ServiceTransport(local_service(engine, local_caller(tenant)))) as client,
    ):
        yield client


@app.command()
def remember(
    user: Annotated[str, typer.Option("--user", help="User id.")],
    text: Annotated[str, typer.Option("--text", help="What to remember.")],
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Store a text for a user: kept whole as an episode, with the facts extracted from
    it (versioned, deduplicated); prints what was stored."""
    with _client(url, tenant, data_dir, as_json) as client:
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
        _emit_json(document)
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
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Retrieve a user's memories as an agent gets them (``engine.retrieve``): what was
    said and the current facts, the past marked as such."""
    with _client(url, tenant, data_dir, as_json) as client:
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
        _emit_json(
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
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
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
        raise _exit_with(
            ValidationError("user", "give exactly one of --user, --id and --store-namespace"),
            as_json,
        )
    if not wait and not url:
        # A job of this process would end with it, half done.
        raise _exit_with(ValidationError("wait", "--no-wait needs --url"), as_json)
    with _client(url, tenant, data_dir, as_json) as client:
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
            _emit_json({"tenant": tenant, **job.model_dump(mode="json")})
        else:
            out.print(f"forget job {job.job_id}: {job.state}")
        return
    result = _forget_report(job, as_json)
    document = {"tenant": tenant, **result.model_dump()}
    if as_json:
        _emit_json(document)
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
        raise _exit_with(BackendError(f"forget job {job.job_id} failed: {reason}"), as_json)
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
        raise _exit_with(
            ValidationError("url", "forget jobs live in the service: give --url"), as_json
        )
    with _remote(url, "default", as_json) as client:
        job = client.forget_status(job_id, timeout_s=wait)
    if as_json:
        _emit_json(job.model_dump(mode="json"))
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
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show what memstrata holds for a session (L1 if open here, L2 keys and TTLs)."""
    # Local: the engine's inspect of the id as given (no session is open in this process,
    # which the inspect operation requires, and the operation keys ids per tenant).
    if url:
        with _remote(url, "default", as_json) as client:
            held = client.inspect(session)
        report: dict[str, Any] = {
            "session_id": held.session_id,
            "l1": None if held.session is None else held.session.model_dump(mode="json"),
            "l2": [k.model_dump(mode="json") for k in held.l2],
            "pending_tasks": held.pending_tasks,
        }
    else:
        with _engine(data_dir, as_json) as engine:
            report = engine.inspect(session)
    if as_json:
        _emit_json(report)
        return
    out.print(f"[bold]session[/bold] {session}")
    out.print(
        "L1:",
        "not open in this process (L1 is never persisted)"
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
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    as_json: JsonFlag = False,
) -> None:
    """Cold path: chunk documents along sections into `knowledge` (incremental by hash)."""
    from memstrata.knowledge.command import run_ingest_command

    # The engine's file ingestion: its manifest removes the chunks of files gone from a
    # folder, which ingest_documents (documents given as text) never does.
    with _engine(data_dir, as_json) as engine:
        report = run_ingest_command(
            lambda progress: engine.ingest_files(paths, tenant=tenant, progress=progress),
            err if as_json else out,
        )
    if as_json:
        _emit_json(dataclasses.asdict(report))


TenantsOption = Annotated[
    list[str] | None,
    typer.Option("--tenant", help="Tenant(s) to process (repeatable); default: all known."),
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
    # Local: one pass over every known tenant (or those given); the operation covers one.
    if url:
        with _remote(url, "default" if not tenant else tenant[0], as_json) as client:
            done = client.consolidate()
        document: dict[str, Any] = {
            "memories": {a.action: a.count for a in done.actions},
            "memory_ids": {a.action: a.ids for a in done.actions},
            "hot_knowledge": {
                done.tenant: {
                    "merged": done.hot_merged,
                    "duplicates": done.hot_duplicates,
                    "expired": done.hot_expired,
                }
            },
        }
    else:
        with _engine(data_dir, as_json) as engine:
            engine.flush()
            document = engine.consolidate(tenants=tenant).as_dict()
    if as_json:
        _emit_json(document)
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
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Bring memory units back from cold storage."""
    with _client(url, tenant, data_dir, as_json) as client:
        restored = client.restore(ids)
    if as_json:
        _emit_json({"tenant": tenant, "restored": list(restored)})
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
        raise _exit_with(exc, as_json) from exc
    # The operation samples the state as of now first (the operator's tenant: default).
    with _client(None, "default", data_dir, as_json) as client:
        health = client.health_report(since=since)
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown, html = out_dir / MARKDOWN_FILE, out_dir / HTML_FILE
    markdown.write_text(health.markdown, encoding="utf-8")
    html.write_text(health.html, encoding="utf-8")
    if as_json:
        _emit_json(
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
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Trace cards of the decisions taken, oldest first (--json exports them)."""
    from memstrata.decision import cards_json
    from memstrata.health import parse_duration

    try:
        window = None if since is None else parse_duration(since)
    except ValidationError as exc:
        raise _exit_with(exc, as_json) from exc
    start = None if window is None else datetime.now(UTC) - window
    # Local: the engine's cards of the session id as given, as the engine exports them
    # (the operation keys session ids per tenant and hides the tenant and at_iso).
    if url:
        with _remote(url, tenant, as_json) as client:
            found = client.trace_cards(session_id=session, since=start, limit=limit)
        rows = [c.model_dump(mode="json") for c in found]
    else:
        try:
            with _engine(data_dir, as_json) as engine:
                held = engine.trace_cards(
                    tenant=tenant, session_id=session, since=start, limit=limit
                )
        except MemstrataError as exc:
            raise _exit_with(exc, as_json) from exc
        rows = json.loads(cards_json(held))["cards"]
    if as_json:
        _emit_json({"cards": rows})
        return
    table = Table(title=f"trace cards ({len(rows)})")
    columns = ("at", "session", "step", "intent", "route", "confidence", "tool", "outcome")
    for column in (*columns, "confirmation", "check"):
        table.add_column(column, overflow="fold")
    for row in rows:
        confirmation = row.get("confirmation")
        table.add_row(
            str(row.get("at_iso") or row["at"]),
            row["session_id"],
            str(row["step"]),
            row["intent"],
            row["route"],
            f"{row['confidence']:.2f} / {row['threshold']:.2f}",
            row.get("tool") or "",
            row.get("tool_outcome") or "",
            # Who answered a held high-impact call, and when (the time as exported).
            f"{confirmation} by {row.get('confirmation_by')} at "
            f"{row.get('confirmation_at_iso') or row.get('confirmation_at')}"
            if confirmation
            else "",
            row["consistency"],
        )
    out.print(table)


@bench_app.command("layers")
def bench_layers(
    data_dir: DataDir = Path(".memstrata-bench"),
    as_json: JsonFlag = False,
    sizes: Annotated[
        str, typer.Option("--sizes", help="Comma-separated L3 sizes.")
    ] = "10000,100000",
    queries: Annotated[int, typer.Option("--queries", help="Queries per measurement.")] = 500,
    baseline_file: BaselineOption = None,
) -> None:
    """L2 overhead vs raw redis-py, L3 hybrid filtered search, route() latency; beside
    the previous release's numbers."""
    from memstrata.bench.layers import run_layers_bench

    try:
        size_list = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError as exc:
        raise typer.BadParameter("must be comma-separated integers", param_hint="--sizes") from exc
    baseline = _load_baseline(baseline_file, as_json)
    report = run_layers_bench(data_dir, sizes=size_list, queries=queries, progress=err)
    _emit_against_baseline(report, baseline, "bench layers", "default", as_json)


@bench_app.command("haystack")
def bench_haystack(
    data_dir: DataDir = Path(".memstrata-bench"),
    as_json: JsonFlag = False,
    turns: Annotated[
        int, typer.Option("--turns", help="Haystack turns observed first.", min=1)
    ] = 300,
    queries: Annotated[int, typer.Option("--queries", help="Questions timed.", min=1)] = 200,
) -> None:
    """retrieve() p50/p99 on one long haystack vs its raw engine calls (minutes)."""
    from memstrata.bench.haystack import run_haystack_bench

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    report = run_haystack_bench(data_dir, turns=turns, queries=queries, progress=err)
    _emit_report(report, as_json)


@bench_app.command("forget")
def bench_forget(
    data_dir: DataDir = Path(".memstrata-bench"),
    as_json: JsonFlag = False,
    points: Annotated[
        str, typer.Option("--points", help="Comma-separated data-dir sizes (memories).")
    ] = "30000",
    before: Annotated[
        float,
        typer.Option("--before", help="Seconds of baseline reads, over all rounds.", min=1),
    ] = 20.0,
    rounds: Annotated[
        int, typer.Option("--rounds", help="Forgets, each after its baseline window.", min=1)
    ] = 5,
    forget_in: Annotated[
        str, typer.Option("--forget-in", help="Tenant of the forgotten users.")
    ] = "t-forget",
) -> None:
    """Another tenant's retrieve p50/p99/max before and during forgets (one user with
    one memory each, alternating with baseline windows) on a data dir of --points
    memories, and the forgets' durations."""
    from memstrata.bench.forget import run_forget_bench

    try:
        sizes = [int(s) for s in points.split(",") if s.strip()]
    except ValueError as exc:
        raise typer.BadParameter("must be comma-separated integers", param_hint="--points") from exc
    report = run_forget_bench(
        data_dir, sizes, before_s=before, rounds=rounds, forget_in=forget_in, progress=err
    )
    _emit_report(report, as_json)


@bench_app.command("serve")
def bench_serve(
    as_json: JsonFlag = False,
    clients: Annotated[
        int, typer.Option("--clients", help="Concurrent callers per transport.", min=1)
    ] = 32,
    seconds: Annotated[
        float, typer.Option("--seconds", help="Seconds per operation and transport.", min=0.1)
    ] = 10.0,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate",
            help=(
                "Also run an open loop at this many requests per second in total, or "
                "'auto' for half the REST closed-loop req/s of each operation."
            ),
        ),
    ] = None,
    open_only: Annotated[
        bool, typer.Option("--open-only", help="With --rate N: skip the closed loop.")
    ] = False,
    client_processes: Annotated[
        int,
        typer.Option(
            "--client-processes", help="Processes running the REST and gRPC callers.", min=1
        ),
    ] = 2,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Data directory (default: a fresh temporary one)."),
    ] = None,
) -> None:
    """route and build_context in process vs REST vs gRPC on loopback: req/s, p50/p99."""
    from memstrata.bench.serve import run_serve_bench

    parsed: float | str | None = rate
    if rate is not None and rate != "auto":
        try:
            parsed = float(rate)
        except ValueError as exc:
            raise typer.BadParameter("must be 'auto' or a number", param_hint="--rate") from exc
        if not parsed > 0:
            raise typer.BadParameter("must be positive", param_hint="--rate")
    if open_only and (rate is None or rate == "auto"):
        raise typer.BadParameter("needs --rate N (a number)", param_hint="--open-only")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    report = run_serve_bench(
        clients=clients,
        seconds=seconds,
        data_dir=data_dir,
        rate=parsed,
        client_processes=client_processes,
        closed_loop=not open_only,
    )
    _emit_report(report, as_json)


@bench_app.command("load")
def bench_load(
    as_json: JsonFlag = False,
    quick: Annotated[
        bool,
        typer.Option("--quick", help="All three scenarios scaled down, in well under a minute."),
    ] = False,
    seconds: Annotated[
        float | None,
        typer.Option("--seconds", help="Each of short and long (default 300).", min=0.1),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Requests/s of short sessions (default 50); long at 1/10, burst 1/5 -> x15.",
            min=0.1,
        ),
    ] = None,
    clients: Annotated[
        int | None,
        typer.Option("--clients", help="Concurrent short sessions (default 32).", min=1),
    ] = None,
    burst_seconds: Annotated[
        float | None,
        typer.Option(
            "--burst-seconds", help="The x15 burst with L3 slowed (default 300).", min=0.1
        ),
    ] = None,
    l3_delay: Annotated[
        float | None,
        typer.Option(
            "--l3-delay", help="Seconds each L3 read waits in the burst (default 10).", min=0.01
        ),
    ] = None,
    scenarios: Annotated[
        str, typer.Option("--scenarios", help="Comma-separated: short, long, burst.")
    ] = "short,long,burst",
    soak: Annotated[
        float,
        typer.Option("--soak", help="Run a soak of this many seconds instead (e.g. 1800).", min=0),
    ] = 0.0,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where load.json / soak.json and the health reports go.")
    ] = Path(".memstrata-bench-load"),
    keep_data: Annotated[
        bool, typer.Option("--keep-data", help="Keep the service's data directory.")
    ] = False,
) -> None:
    """The seed's three load scenarios (and a soak) against `memstrata serve` over REST."""
    from memstrata.bench.load import QUICK, LoadOptions, run_load_bench

    base = QUICK if quick else LoadOptions()
    given: dict[str, Any] = {
        "seconds": seconds,
        "rate": rate,
        "clients": clients,
        "burst_seconds": burst_seconds,
        "l3_delay_s": l3_delay,
    }
    chosen = tuple(s.strip() for s in scenarios.split(",") if s.strip())
    try:
        options = dataclasses.replace(
            base,
            **{k: v for k, v in given.items() if v is not None},
            scenarios=chosen,
            soak_s=soak,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    report = run_load_bench(options, out_dir, keep_data=keep_data, progress=err.print)
    _emit_report(report, as_json)
    if report["unexpected_errors"]:
        err.print(f"[red]{report['unexpected_errors']} unexpected errors[/red] (not 429/503)")
        raise typer.Exit(1)


@bench_app.command("write")
def bench_write(
    data_dir: DataDir = Path(".memstrata-bench-write"),
    as_json: JsonFlag = False,
    turns: Annotated[
        int | None,
        typer.Option("--turns", help="Turns to observe [default: 10000; --long: 600].", min=1),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Queue batch, one embed call each [default: 256; --long: the engine's, 100].",
            min=1,
        ),
    ] = None,
    threads: Annotated[
        int, typer.Option("--threads", help="Consumer threads draining the queue.", min=1)
    ] = 2,
    long: Annotated[
        bool,
        typer.Option(
            "--long", help="LongMemEval-like long turns (median ~90 words, half answers)."
        ),
    ] = False,
    english: Annotated[
        bool,
        typer.Option(
            "--english", help="English turns only (no Chinese); the ratio is against MiniLM."
        ),
    ] = False,
    baseline_file: BaselineOption = None,
) -> None:
    """Write pipeline turns/s end to end vs the raw embedders, and memory per 10k units;
    beside the previous release's numbers."""
    from memstrata.bench.write import run_write_bench

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    baseline = _load_baseline(baseline_file, as_json)
    report = run_write_bench(
        data_dir,
        turns=turns,
        batch_size=batch_size,
        threads=threads,
        long=long,
        english=english,
        progress=err,
    )
    _emit_against_baseline(report, baseline, "bench write", report["mode"], as_json)


@bench_app.command("baseline")
def bench_baseline(
    report_file: Annotated[
        Path,
        typer.Option(
            "--from",
            help="A report printed with --json by bench write, bench layers or eval locomo.",
        ),
    ],
    commit: Annotated[
        str, typer.Option("--commit", help="The commit the report was measured on (hex).")
    ],
    machine: Annotated[
        str | None,
        typer.Option("--machine", help="The machine, in words (default: read from this one)."),
    ] = None,
    measured_on: Annotated[
        str | None,
        typer.Option("--date", help="When it was measured, YYYY-MM-DD (default: today)."),
    ] = None,
    release: Annotated[
        str | None,
        typer.Option("--release", help="Also name this commit the file's release."),
    ] = None,
    baseline_file: Annotated[
        Path | None,
        typer.Option("--baseline", help="The baseline file to write (default: the packaged one)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """After a release: write a report's headline numbers into the baseline file as the
    previous release's (its benchmark and mode; the file validated before it is kept)."""
    from datetime import date

    from memstrata.bench.baseline import machine_summary, refresh

    try:
        when = date.fromisoformat(measured_on) if measured_on else datetime.now(UTC).date()
    except ValueError as exc:
        raise typer.BadParameter("must be YYYY-MM-DD", param_hint="--date") from exc
    try:
        try:
            report = json.loads(report_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValidationError("from", f"{report_file}: not a readable JSON report") from exc
        if not isinstance(report, dict):
            raise ValidationError("from", f"{report_file}: not a JSON object")
        entry = refresh(
            report,
            commit=commit,
            when=when,
            machine=machine or machine_summary(),
            path=baseline_file,
            release=release,
            source=f"memstrata bench baseline --from {report_file.name}",
        )
    except MemstrataError as exc:
        raise _exit_with(exc, as_json) from exc
    unlike = (report.get("vs_baseline") or {}).get("not_comparable_because")
    if unlike:
        # Allowed (a new scope after a release), but said: later runs compare to it.
        err.print(f"note: the report {escape(str(unlike))}; its settings are the new scope")
    written = entry.model_dump(mode="json")
    if as_json:
        _emit_json(written)
    else:
        out.print_json(json.dumps(written, ensure_ascii=False))


@bench_app.command("confidence")
def bench_confidence(
    data: Annotated[Path, typer.Option("--data", help="LoCoMo JSON file.")] = Path(
        "../shared/data/locomo/locomo10.json"
    ),
    conversations: Annotated[int, typer.Option("--conversations")] = 4,
    as_json: JsonFlag = False,
) -> None:
    """Cosine distributions on LoCoMo behind the default confidence thresholds."""
    from memstrata.bench.confidence import run_confidence_bench
    from memstrata.embed.minilm import MiniLMEmbedder

    report = run_confidence_bench(data, MiniLMEmbedder(batch_size=128), conversations=conversations)
    _emit_report(report, as_json)


@bench_app.command("gateway")
def bench_gateway(as_json: JsonFlag = False) -> None:
    """Sanitizer cost per 2 KB text and its scaling on hostile inputs."""
    from memstrata.bench.gateway import run_gateway_bench

    report = run_gateway_bench()
    _emit_report(report, as_json)


@bench_app.command("feedback")
def bench_feedback(
    as_json: JsonFlag = False,
    rounds: Annotated[
        int, typer.Option("--rounds", help="Days the scripted user confirms again.", min=1)
    ] = 2,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Data directory (default: a fresh temporary one)."),
    ] = None,
) -> None:
    """Confirmed memories' rank and corrected facts before/after the feedback loop."""
    from memstrata.bench.feedback import run_feedback_bench

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    report = run_feedback_bench(data_dir, rounds=rounds, progress=err)
    _emit_report(report, as_json)


@feedback_app.command("report")
def feedback_report(
    since: Annotated[
        str, typer.Option("--since", help="Window to report on: 30m, 24h, 7d, 2w.")
    ] = "7d",
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    as_json: JsonFlag = False,
) -> None:
    """Which intents and questions keep missing the right memory (corrected, abandoned,
    rated 1-2), and which memories are retrieved but ignored."""
    from memstrata.health import parse_duration

    try:
        window = parse_duration(since)
    except ValidationError as exc:
        raise _exit_with(exc, as_json) from exc
    # The engine's report: the table formats the exact rates, the wire carries them rounded.
    with _engine(data_dir, as_json) as engine:
        try:
            report = engine.feedback_report(tenant=tenant, since=window)
        except MemstrataError as exc:
            raise _exit_with(exc, as_json) from exc
    if as_json:
        _emit_json(report.as_dict())
        return
    rate = report.corrected_share
    out.print(
        f"{report.events} feedback events of tenant {tenant} in the last {since}"
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


KsOption = Annotated[
    list[str] | None,
    typer.Option("--k", help="Cut-offs, repeatable or comma-separated (default 5,10)."),
]
LimitOption = Annotated[int | None, typer.Option("--limit", min=1, help="Quick run on a prefix.")]
EvalDataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Keep the index under DIR/eval-<dataset> (default: temp)."),
]


def _parse_ks(values: list[str] | None) -> list[int]:
    try:
        ks = [int(p) for v in values or ["5,10"] for p in v.split(",") if p.strip()]
    except ValueError as exc:
        raise typer.BadParameter("must be integers", param_hint="--k") from exc
    if not ks:
        raise typer.BadParameter("needs at least one cut-off", param_hint="--k")
    return ks


@contextmanager
def _eval_errors(as_json: bool) -> Iterator[None]:
    """A typed error (bad data file, bad option) becomes one message and exit code 2."""
    try:
        yield
    except MemstrataError as exc:
        code = error_code(exc)
        if as_json:
            _emit_json(
                {"error": {"type": type(exc).__name__, "message": str(exc), "http": code.http}}
            )
        else:
            err.print(f"[red]error[/red] ({type(exc).__name__}): {exc}", highlight=False)
        raise typer.Exit(2) from exc


def _eval_tables(report: dict[str, Any]) -> None:
    """Per system and group, the metric means; then latency and CER."""
    for name, result in report["results"].items():
        groups = {"overall": result["overall"]}
        groups.update(result.get("by_category", {}))
        groups.update(result.get("by_type", {}))
        if "adversarial" in result:
            groups["5 (adversarial)"] = result["adversarial"]
        metrics = [m for m in result["overall"] if m != "n"]
        table = Table(title=f"{report['dataset']}: {name}")
        for column in ("group", "n", *metrics):
            table.add_column(column, justify="left" if column == "group" else "right")
        for group, values in groups.items():
            cells = (f"{values[m]:.3f}" if m in values else "-" for m in metrics)
            table.add_row(group, str(values["n"]), *cells)
        out.print(table)
    latency = report["latency_ms"]
    out.print(
        f"[bold]latency[/bold] ({latency['system']}, incl. query embedding): "
        f"p50 {latency['p50']} ms, p99 {latency['p99']} ms"
    )
    out.print("[bold]CER[/bold]:", json.dumps(report["cer"]))
    calibration = report.get("calibration")
    if calibration:
        out.print(
            f"[bold]calibrated thresholds[/bold]: low_confidence_cosine "
            f"{calibration['low_confidence_cosine']}, skip_below_cosine "
            f"{calibration['skip_below_cosine']} ({calibration['rule']})"
        )
        curve = Table(title="threshold curve (memstrata's retrieved items)")
        columns = ("threshold", "evidence_kept", "precision", "questions_skipped")
        for column in (*columns, "answerable_skipped"):
            curve.add_column(column, justify="right")
        for row in calibration["curve"]:
            curve.add_row(*(f"{row[c]:.2f}" for c in (*columns, "answerable_skipped")))
        out.print(curve)
    out.print("[bold]data[/bold]:", json.dumps(report["data"], ensure_ascii=False))


@eval_app.command("locomo")
def eval_locomo(
    data: Annotated[Path, typer.Option("--data", help="LoCoMo JSON file.")] = Path(
        "../shared/data/locomo/locomo10.json"
    ),
    limit: LimitOption = None,
    conversations: Annotated[
        str | None,
        typer.Option(
            "--conversations",
            help=(
                "Only these conversations of the file, 1-based: numbers and ranges, "
                "comma-separated (1-5, 6-10, 1,3,7-9). Choose a parameter on one half "
                "and report it on the other. Not with --limit."
            ),
        ),
    ] = None,
    k: KsOption = None,
    data_dir: EvalDataDir = None,
    as_json: JsonFlag = False,
    baseline_file: BaselineOption = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when the memstrata row's hit_any@10 or hit_all@10 is below the "
            "previous release's (a run like the baseline's: the whole file). Latency is "
            "flagged, never failed.",
        ),
    ] = False,
) -> None:
    """Turn-level evidence retrieval per category; --limit N: the first N conversations,
    --conversations 6-10: those conversations of the file. Latency and hit rates are
    printed beside the previous release's."""
    from memstrata.bench.baseline import print_comparison, with_baseline
    from memstrata.eval.command import RichProgress, run_locomo
    from memstrata.eval.locomo import parse_conversations

    ks = _parse_ks(k)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with _eval_errors(as_json), RichProgress(err) as progress:
        positions = None if conversations is None else parse_conversations(conversations)
        baseline = _load_baseline(baseline_file, as_json)
        report = run_locomo(
            data,
            limit=limit,
            conversations=positions,
            ks=ks,
            data_dir=data_dir,
            progress=progress,
        )
    document, comparison = with_baseline(
        report, baseline, "eval locomo", "all", load=os.getloadavg()
    )
    if as_json:
        _emit_json(document)
        print_comparison(comparison, err, table=False)
    else:
        _eval_tables(report)
        print_comparison(comparison, out)
    if fail_on_regression and not comparison.comparable:
        err.print(
            "--fail-on-regression: nothing compared ("
            + escape(comparison.mismatch or "no baseline for this mode")
            + ")",
            highlight=False,
        )
    if fail_on_regression and comparison.regressed("hit_rate"):
        err.print("[red]hit rates below the previous release[/red] (--fail-on-regression)")
        raise typer.Exit(1)


@eval_app.command("longmemeval")
def eval_longmemeval(
    data: Annotated[Path, typer.Option("--data", help="LongMemEval JSON file.")],
    granularity: Annotated[
        str, typer.Option("--granularity", help="Score sessions or turns: session | turn.")
    ] = "session",
    limit: LimitOption = None,
    k: KsOption = None,
    data_dir: EvalDataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """recall_all@k and nDCG@k per question type; --limit N: the first N questions."""
    from memstrata.eval.command import RichProgress, run_longmemeval

    ks = _parse_ks(k)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with _eval_errors(as_json), RichProgress(err) as progress:
        report = run_longmemeval(
            data,
            granularity=granularity,
            limit=limit,
            ks=ks,
            data_dir=data_dir,
            progress=progress,
        )
    if as_json:
        _emit_json(report)
    else:
        _eval_tables(report)


@eval_app.command("extraction")
def eval_extraction(
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Labeled statements (JSONL); default: the packaged set."),
    ] = None,
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Rows to score: dev | dev2 | test | heldback | blind | all. Only dev and dev2 "
            "are tuned on; "
            "test, heldback and blind (written before the rules were changed for them; blind by "
            "someone who had read neither the rules nor the set) never are, and each split is "
            "reported apart. blind's update sequences also run through engine.observe.",
        ),
    ] = "all",
    llm_base_url: Annotated[
        str | None,
        typer.Option(
            "--llm-base-url",
            help="Also score the LLM extractor at this OpenAI-compatible endpoint "
            "(API key from MEMSTRATA_LLM_API_KEY).",
        ),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option("--llm-model", help="Model name for --llm-base-url.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fact extraction precision / recall per split and attribute, and supersede accuracy."""
    import os

    from memstrata.eval.extraction import render_report, run_extraction_eval

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with _eval_errors(as_json):
        report = run_extraction_eval(
            data,
            split=split,
            llm_base_url=llm_base_url,
            llm_model=llm_model,
            llm_api_key=os.environ.get("MEMSTRATA_LLM_API_KEY") or None,
        )
    if as_json:
        _emit_json(report)
    else:
        render_report(report, out)


@eval_app.command("bilingual")
def eval_bilingual(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Conversations to run: dev | test | all. The test split is held back: "
            "never tune anything on it (thresholds, weights, rules); tune on dev.",
        ),
    ] = "test",
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Quick run on the split's first N conversations."),
    ] = None,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Dev only (refuses test): top-1 cosine distributions of answerable vs "
            "unanswerable questions per dense model and query language, and the "
            "low-confidence threshold they give.",
        ),
    ] = False,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="A data file in the packaged format (default: packaged)."),
    ] = None,
    data_dir: EvalDataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Chinese and mixed Chinese/English chats: hit_any@10 / hit_all@10 per category,
    question language and across languages; unanswerable questions flagged."""
    from memstrata.eval.bilingual_report import render_bilingual
    from memstrata.eval.command import RichProgress, run_bilingual

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with _eval_errors(as_json), RichProgress(err) as progress:
        report = run_bilingual(
            data,
            split=split,
            limit=limit,
            calibrate=calibrate,
            data_dir=data_dir,
            progress=progress,
        )
    if as_json:
        _emit_json(report)
    else:
        render_bilingual(report, out)


@eval_app.command("intents")
def eval_intents(
    split: Annotated[str, typer.Option("--split", help="Rows: dev | test | all.")] = "test",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Labeled messages (JSONL); default: the packaged set."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Intent recognition of messages sent without a step intent (Chinese, English,
    mixed): accuracy overall, per language and per intent, and the fall-back rate."""
    from memstrata.config import settings_from_env
    from memstrata.eval.intents import render_report, run_intents_eval
    from memstrata.wiring import build_understanding

    with _eval_errors(as_json):
        report = run_intents_eval(build_understanding(settings_from_env()), split=split, data=data)
    if as_json:
        _emit_json(report)
    else:
        render_report(report, sys.stdout)


@eval_app.command("replycheck")
def eval_replycheck(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Pairs: dev | dev2 | test | blind | all. The test half was written before the "
            "rules were tuned and is never tuned on; dev2 and blind were written by people who "
            "had read neither the rules nor the set (blind is never tuned on).",
        ),
    ] = "test",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Labeled (reply, memories) pairs (JSONL); default: packaged."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The reply check against labeled (reply, memories) pairs in English and Chinese:
    precision, recall and F1 of conflicts (amounts, dates, ids, negated and contradicted
    facts) per split, language and kind."""
    from memstrata.eval.replycheck import render_report, run_replycheck_eval

    with _eval_errors(as_json):
        report = run_replycheck_eval(split=split, data=data)
    if as_json:
        _emit_json(report)
    else:
        render_report(report, sys.stdout)


@eval_app.command("scenarios")
def eval_scenarios(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="dev | blind: conversations written by someone who read neither the rules "
            "nor the other sets; only dev is tuned on.",
        ),
    ] = "blind",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Scenarios (JSONL) of the same shape; default: packaged."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Only the first N scenarios.", min=1)
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Conversations over days, then one question, through observe, build_context and
    decide: the answer presented as confident and current, a stale value never, an
    unrelated question bringing nothing (pass rate per category and language)."""
    from memstrata.eval.scenarios import render_report, run_scenarios_eval

    with _eval_errors(as_json):
        report = run_scenarios_eval(split=split, data=data, limit=limit)
    if as_json:
        _emit_json(report)
    else:
        render_report(report, sys.stdout)


deadletters_app = typer.Typer(
    help="The write queue's dead letters: entries that can never be stored, with why."
)
app.add_typer(deadletters_app, name="deadletters")


@deadletters_app.command("list")
def deadletters_list(
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
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
    with _client(url, tenant, data_dir, as_json) as client:
        found = client.list_dead_letters(after=after, limit=limit)
    if as_json:
        _emit_json(found.model_dump(mode="json"))
        return
    table = Table(title=f"dead letters ({len(found.dead_letters)})")
    for column in ("dead id", "given up", "kind", "user", "deliveries", "error", "reason"):
        table.add_column(column, overflow="fold")
    for letter in found.dead_letters:
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
    if found.next_after:
        out.print(f"more: --after {found.next_after}")


@deadletters_app.command("replay")
def deadletters_replay(
    dead_ids: Annotated[list[str], typer.Argument(help="Dead ids `deadletters list` printed.")],
    tenant: Annotated[str, typer.Option("--tenant")] = "default",
    data_dir: DataDir = DEFAULT_DATA_DIR,
    url: UrlOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Put dead letters back on the write stream (each removed from the dead letters);
    without --url, waits until they are written."""
    with _client(url, tenant, data_dir, as_json) as client:
        replayed = [client.replay_dead_letter(dead_id) for dead_id in dead_ids]
        if not url:
            client.flush(timeout_s=60)  # the engine closes after this command
    if as_json:
        _emit_json({"replayed": [r.model_dump(mode="json") for r in replayed]})
        return
    for item in replayed:
        out.print(f"replayed {item.dead_id} as entry {item.entry_id}")


@eval_app.command("redaction")
def eval_redaction(
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="Corpus split: dev | test | blind2. The test and blind2 splits are held back "
            "and never tuned on.",
        ),
    ] = "dev",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="A labeled corpus file (JSONL); default: the packaged split."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The gateway against a labeled corpus of secrets and benign look-alikes in English
    and Chinese: recall per kind, language and encoding, the false-redaction rate per
    look-alike, and the ids of the misses."""
    from memstrata.eval.redaction import render_report, run_redaction_eval

    with _eval_errors(as_json):
        report = run_redaction_eval(split=split, data=data)
    if as_json:
        _emit_json(report)
    else:
        render_report(report, sys.stdout)


def _key_client(url: str, key: str) -> Client:
    """The client ``memstrata keys --url`` manages keys through."""
    return Client(url, key, timeout_s=30.0)


register_service_commands(app, _key_client)


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
