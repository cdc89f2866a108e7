"""``memstrata demo``: the scripted session and the reference agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli.common import (
    DataDir,
    JsonFlag,
    emit_json,
    exit_with,
    open_engine,
    out,
    warn_to_stderr,
)
from memstrata.errors import MemstrataError, ValidationError

if TYPE_CHECKING:
    from memstrata.context import BuiltContext
    from memstrata.router import ContextBundle

app = typer.Typer()


def _bundle_table(title: str, bundle: ContextBundle) -> Table:
    from memstrata.skipreasons import skip_note

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
        raise exit_with(error, as_json)
    if real_clock:
        _demo_real_clock(data_dir, as_json, minutes, ttl_seconds)
        return
    if agent is not None:
        _demo_agent(agent, data_dir, as_json)
        return
    from memstrata.demo import run_demo

    with open_engine(data_dir, as_json) as engine:
        result = run_demo(engine)
    if as_json:
        emit_json(
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
    from memstrata.config import settings_from_env
    from memstrata.engine import ContextEngine

    if agent not in DEMO_AGENTS:
        error = ValidationError("agent", f"must be one of {', '.join(DEMO_AGENTS)}")
        raise exit_with(error, as_json)
    warn_to_stderr()
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
        raise exit_with(exc, as_json) from exc
    if as_json:
        emit_json(run.as_dict() | {"data_dir": str(where)})
    else:
        print_run(run, out)
        out.print(f"data directory: {where}", markup=False, highlight=False)


def _demo_real_clock(data_dir: Path, as_json: bool, minutes: float, ttl_s: float) -> None:
    """The diagnostics agent batch after batch on the real clock, short TTLs."""
    from memstrata.agents import chat_writer_from_env
    from memstrata.agents.console import print_run
    from memstrata.agents.realclock import check_options, run_real_clock, short_ttls
    from memstrata.config import settings_from_env
    from memstrata.engine import ContextEngine

    warn_to_stderr()
    try:
        check_options(minutes, ttl_s)
        where = _fresh_demo_dir(data_dir / "agents" / "diagnostics-real-clock")
        settings = short_ttls(settings_from_env(data_dir=where), ttl_s)
        writer = chat_writer_from_env()
        with ContextEngine.open(settings) as engine:
            done = run_real_clock(engine, minutes=minutes, ttl_s=ttl_s, writer=writer)
    except MemstrataError as exc:
        raise exit_with(exc, as_json) from exc
    if as_json:
        emit_json(done.as_dict() | {"data_dir": str(where)})
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
