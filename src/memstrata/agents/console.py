"""How ``memstrata demo support|diagnostics`` prints a run for a terminal: each step's
decisions (route, tool, ask_for, confidence against threshold), its trace cards
(id, gate verdicts, fallbacks, timings, consistency) and its CER verdict with the
running CER, then the decision-quality rates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from memstrata.agents.loop import Move, StepRecord
from memstrata.agents.run import AgentRun
from memstrata.decision import TraceCard

REPLY_LINES = 3


def print_run(run: AgentRun, console: Console) -> None:
    """The whole run: steps, reports (diagnostics), CER and rates."""
    console.print(
        f"[bold]{run.agent}[/bold] reference agent, tenant {run.tenant!r}, replies by {run.writer}",
        highlight=False,
    )
    checked = effective = 0
    for step in run.steps:
        if step.check is not None:
            checked += 1
            effective += int(step.check.effective)
        _print_step(step, console, checked, effective)
    reports = run.extras.get("reports")
    if isinstance(reports, Mapping):
        for report in reports.values():
            console.rule(f"report {report['device_id']}")
            console.print(report["text"], markup=False, highlight=False, soft_wrap=True)
            ttls = ", ".join(
                f"{step} {ttl:.0f}s" if isinstance(ttl, int | float) else f"{step} -"
                for step, ttl in sorted(report["ttl_at_report_s"].items())
            )
            console.print(
                f"step results' TTL once the report read them: {ttls}",
                markup=False,
                soft_wrap=True,
            )
    shared = run.extras.get("shared_state")
    if isinstance(shared, Mapping):
        console.print(shared_state_table(shared))
    extras = {k: v for k, v in run.extras.items() if k not in ("reports", "shared_state")}
    if extras:
        console.print("run:", _plain(extras), markup=False, highlight=False, soft_wrap=True)
    summary = run.cer()
    console.print(
        f"[bold]CER[/bold] over the run's answers: {summary['cer']} (loaded "
        f"{summary['loaded_rate']}, used {summary['used_rate']}, {summary['steps']} checked steps)",
        highlight=False,
    )
    console.print(rates_table(run))


def shared_state_table(shared: Mapping[str, Any]) -> Table:
    """Per device, side by side: what a naive shared dict (last writer wins) reported
    and kept, and what memstrata reported, under the same concurrent interleaving."""
    table = Table(
        title="concurrent devices: naive shared state (last writer wins) vs memstrata",
        caption=f"schedule: {shared['schedule']}; naive lost "
        f"{', '.join(shared['naive_lost']) or 'none'}, memstrata lost "
        f"{', '.join(shared['memstrata_lost']) or 'none'}",
    )
    for column in (
        "device",
        "naive: data of",
        "naive: peak °C",
        "naive: kept",
        "memstrata: data of",
        "memstrata: peak °C",
    ):
        table.add_column(column)
    for row in shared["devices"]:
        wrong = row["naive_data_of"] != row["device_id"]
        table.add_row(
            row["device_id"],
            f"[red]{row['naive_data_of']}[/red]" if wrong else str(row["naive_data_of"]),
            str(row["naive_peak_c"]),
            "yes" if row["naive_kept"] else "[red]lost[/red]",
            str(row["memstrata_data_of"]),
            str(row["memstrata_peak_c"]),
        )
    return table


def rates_table(run: AgentRun) -> Table:
    """``engine.decision_rates()`` as a table."""
    table = Table(title="decision quality (engine.decision_rates())")
    table.add_column("rate")
    table.add_column("value", justify="right")
    rates = run.rates
    for name, value in (
        ("CER", rates.cer),
        ("tool success", rates.tool_success_rate),
        ("fallback", rates.fallback_rate),
        ("correction", rates.correction_rate),
        ("ask", rates.ask_rate),
    ):
        table.add_row(name, "-" if value is None else f"{value:.3f}")
    table.add_row("decisions", str(rates.decisions))
    table.add_row("checked steps", str(rates.checked_steps))
    return table


def _print_step(step: StepRecord, console: Console, checked: int, effective: int) -> None:
    console.rule(f"{step.title}  ({step.session_id})", style="dim")
    console.print(f"user: {step.said}", markup=False, highlight=False, soft_wrap=True)
    cards = {card.id: card for card in step.cards}
    for move in step.moves:
        console.print(_decision_line(move), markup=False, highlight=False, soft_wrap=True)
        card = cards.get(move.decision.card_id)
        if card is not None:
            console.print(_card_line(card), markup=False, highlight=False, soft_wrap=True)
    lines = step.reply.splitlines() or [""]
    more = f" (+{len(lines) - REPLY_LINES} lines)" if len(lines) > REPLY_LINES else ""
    console.print(
        "reply: " + "\n       ".join(lines[:REPLY_LINES]) + more,
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if step.check is not None:
        check = step.check
        verdict = "effective" if check.effective else "not effective"
        conflicts = f"; conflicts: {'; '.join(check.conflicts)}" if check.conflicts else ""
        regenerated = " (regenerated once)" if step.regenerated else ""
        console.print(
            f"CER: loaded {_yes(check.context_loaded)}, used {_yes(check.context_used)} -> "
            f"{verdict}; consistent {_yes(check.consistent)}{conflicts}{regenerated}; "
            f"running CER {effective / checked:.3f} over {checked} checked step(s)",
            markup=False,
            soft_wrap=True,
            highlight=False,
        )
    if step.feedback:
        console.print(
            f"feedback: {', '.join(step.feedback)}", markup=False, highlight=False, soft_wrap=True
        )


def _decision_line(move: Move) -> str:
    d = move.decision
    parts = [
        f"decision: {d.route}",
        f"confidence {d.confidence:.3f} / threshold {d.threshold:.2f} ({d.risk} risk, "
        f"{d.judgment.judged_by})",
    ]
    if d.tool:
        parts.append(f"tool {d.tool}({_plain(dict(d.params))})")
    if d.ask_for:
        parts.append(f"ask_for {', '.join(d.ask_for)}")
    line = " · ".join(parts)
    if move.outcome is not None:
        o = move.outcome
        tries = len(o.attempts)
        line += f"\n  -> {o.outcome}" + (f" by {o.tool}" if o.tool != d.tool else "")
        if tries:
            line += f" after {tries} attempt(s)"
        failed = [a for a in o.attempts if not a.ok]
        if failed:
            line += f"; failed: {failed[-1].tool}: {failed[-1].error}"
    return line


def _card_line(card: TraceCard) -> str:
    gates = "; ".join(
        f"{g.get('tool')}: "
        + " ".join(f"{c['name']} {'ok' if c['passed'] else 'no'}" for c in g.get("checks", ()))
        for g in card.gate
    )
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in card.timing_ms.items())
    return (
        f"  card {card.id}: gate [{gates or '-'}] · fallbacks "
        f"[{', '.join(card.fallbacks) or '-'}] · timings [{timings or '-'}] · consistency "
        f"{card.consistency}"
    )


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _plain(value: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in value.items())
