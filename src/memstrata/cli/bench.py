"""``memstrata bench``: benchmarks that print numbers against an in-run baseline."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from memstrata.cli.common import (
    BaselineOption,
    DataDir,
    JsonFlag,
    emit_against_baseline,
    emit_json,
    emit_report,
    err,
    exit_with,
    load_baseline,
    out,
    typed_errors,
    warn_to_stderr,
)
from memstrata.errors import MemstrataError, ValidationError

app = typer.Typer(help="Benchmarks that print numbers against an in-run baseline.")


@app.command("layers")
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
    baseline = load_baseline(baseline_file, as_json)
    report = run_layers_bench(data_dir, sizes=size_list, queries=queries, progress=err)
    emit_against_baseline(report, baseline, "bench layers", "default", as_json)


@app.command("haystack")
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

    warn_to_stderr()
    report = run_haystack_bench(data_dir, turns=turns, queries=queries, progress=err)
    emit_report(report, as_json)


@app.command("forget")
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
    emit_report(report, as_json)


@app.command("serve")
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
    warn_to_stderr()
    report = run_serve_bench(
        clients=clients,
        seconds=seconds,
        data_dir=data_dir,
        rate=parsed,
        client_processes=client_processes,
        closed_loop=not open_only,
    )
    emit_report(report, as_json)


@app.command("proxy")
def bench_proxy(
    as_json: JsonFlag = False,
    requests: Annotated[
        int, typer.Option("--requests", help="Timed calls each way (direct, proxied).", min=1)
    ] = 200,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Data directory (default: a fresh temporary one)."),
    ] = None,
) -> None:
    """The OpenAI-compatible proxy's added latency: the openai client calling a local fake
    upstream directly vs through the proxy, whole and streamed: p50/p95/p99 and ratio."""
    from memstrata.bench.proxy import run_proxy_bench

    warn_to_stderr()
    report = run_proxy_bench(requests, data_dir, progress=err)
    emit_report(report, as_json)


@app.command("load")
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
    warn_to_stderr()
    report = run_load_bench(options, out_dir, keep_data=keep_data, progress=err.print)
    emit_report(report, as_json)
    if report["unexpected_errors"]:
        err.print(f"[red]{report['unexpected_errors']} unexpected errors[/red] (not 429/503)")
        raise typer.Exit(1)


@app.command("write")
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

    warn_to_stderr()
    baseline = load_baseline(baseline_file, as_json)
    report = run_write_bench(
        data_dir,
        turns=turns,
        batch_size=batch_size,
        threads=threads,
        long=long,
        english=english,
        progress=err,
    )
    emit_against_baseline(report, baseline, "bench write", report["mode"], as_json)


@app.command("baseline")
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
        raise exit_with(exc, as_json) from exc
    unlike = (report.get("vs_baseline") or {}).get("not_comparable_because")
    if unlike:
        # Allowed (a new scope after a release), but said: later runs compare to it.
        err.print(f"note: the report {escape(str(unlike))}; its settings are the new scope")
    written = entry.model_dump(mode="json")
    if as_json:
        emit_json(written)
    else:
        out.print_json(json.dumps(written, ensure_ascii=False))


@app.command("confidence")
def bench_confidence(
    data: Annotated[Path, typer.Option("--data", help="LoCoMo JSON file.")] = Path(
        "../shared/data/locomo/locomo10.json"
    ),
    conversations: Annotated[
        int, typer.Option("--conversations", help="How many of the file's conversations.")
    ] = 4,
    as_json: JsonFlag = False,
) -> None:
    """Cosine distributions on LoCoMo behind the default confidence thresholds."""
    from memstrata.bench.confidence import run_confidence_bench
    from memstrata.embed.minilm import MiniLMEmbedder

    report = run_confidence_bench(data, MiniLMEmbedder(batch_size=128), conversations=conversations)
    emit_report(report, as_json)


@app.command("gateway")
def bench_gateway(as_json: JsonFlag = False) -> None:
    """Sanitizer cost per 2 KB text and its scaling on hostile inputs."""
    from memstrata.bench.gateway import run_gateway_bench

    report = run_gateway_bench()
    emit_report(report, as_json)


@app.command("feedback")
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

    warn_to_stderr()
    report = run_feedback_bench(data_dir, rounds=rounds, progress=err)
    emit_report(report, as_json)


@app.command("startup")
def bench_startup(
    runs: Annotated[
        int, typer.Option("--runs", help="Fresh processes per row (median and spread).", min=1)
    ] = 5,
    pythonpath: Annotated[
        Path | None,
        typer.Option(
            "--pythonpath",
            help="A source tree put first on the children's path, to time another checkout "
            "(e.g. the previous release's src/) on the same machine and load.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start-up: `python -c pass`, `import memstrata.cli`, `memstrata --help`, a search
    over --url (against a `memstrata serve` it starts) and one in process, and `serve` on
    a fresh data dir to its first /healthz and to /readyz, each in fresh processes, with
    its ratio to `python -c pass` (minutes: the service loads models)."""
    from memstrata.bench.startup import run_startup_bench

    with typed_errors(as_json):
        report = run_startup_bench(runs, pythonpath=pythonpath, progress=err.print)
    if as_json:
        emit_json(report)
        return
    table = Table(title=f"bench startup ({runs} runs each; wall s from spawn to exit or answer)")
    for column in ("row", "median s", "min s", "max s", "x python -c pass"):
        table.add_column(column, justify="left" if column == "row" else "right")
    for row in report["rows"]:
        table.add_row(
            row["name"],
            f"{row['median_s']:.3f}",
            f"{row['min_s']:.3f}",
            f"{row['max_s']:.3f}",
            "-" if row["vs_python"] is None else f"{row['vs_python']:.1f}",
        )
    out.print(table)
    only = report["import_only_s"]
    out.print(
        f"import memstrata.cli alone (in the process): median {only['median']:.3f} s "
        f"(min {only['min']:.3f}, max {only['max']:.3f})\n"
        f"load average before {report['load_avg_before']}, after {report['load_avg_after']}",
        highlight=False,
    )
