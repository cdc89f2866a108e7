"""``memstrata eval bilingual`` for a terminal: rich tables of a report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_bilingual(report: Mapping[str, Any], console: Console) -> None:
    """Per row: the hit rates per group; then the low-confidence flags; then the
    calibration (with --calibrate), latency and the data counts."""
    for name, result in report["results"].items():
        metrics = [m for m in result["overall"] if m != "n"]
        table = Table(title=f"bilingual ({report['config'].get('split', '?')}): {name}")
        for column in ("group", "n", *metrics):
            table.add_column(column, justify="left" if column == "group" else "right")
        groups: dict[str, Mapping[str, float]] = {"overall": result["overall"]}
        groups.update(result["by_category"])
        groups.update({f"asked in {k}": v for k, v in result["by_language"].items()})
        groups.update({f"cross-language, {k}": v for k, v in result["cross_language"].items()})
        groups.update({f"temporal, {k}": v for k, v in result["temporal_by_language"].items()})
        for group, values in groups.items():
            table.add_row(group, str(values["n"]), *(_cell(values.get(m)) for m in metrics))
        console.print(table)
    flags = Table(title="low-confidence flags (unanswerable should be flagged, answerable not)")
    for column in ("row", "language", "unanswerable flagged", "n", "answerable flagged", "n "):
        flags.add_column(column, justify="left" if column in ("row", "language") else "right")
    for name, result in report["results"].items():
        confidence = result.get("confidence")
        if not confidence:
            flags.add_row(name, "all", "-", "-", "-", "-")
            continue
        rows = {"all": confidence, **confidence["by_language"]}
        for lang, values in rows.items():
            un, an = values["unanswerable_flagged"], values["answerable_flagged"]
            flags.add_row(
                name, lang, _cell(un["share"]), str(un["n"]), _cell(an["share"]), str(an["n"])
            )
    console.print(flags)
    calibration = report.get("calibration")
    if calibration:
        console.print(f"[bold]calibration on dev[/bold]: {calibration['rule']}")
        table = Table(
            title="top-1 cosines and thresholds (unans / ans: shares flagged; @5%: the "
            "threshold flagging <= 5% of answerable)"
        )
        columns = (
            "row",
            "lang",
            "ans p05/p50",
            "unans p50/p95",
            "thr",
            "unans",
            "ans",
            "met",
            "thr@5%",
            "unans@5%",
        )
        for column in columns:
            left = column in ("row", "lang")
            table.add_column(column, justify="left" if left else "right", no_wrap=True)
        for name, by_lang in calibration["rows"].items():
            for lang, values in by_lang.items():
                ans, unans = values["answerable"], values["unanswerable"]
                safe = values.get("within_answerable_limit") or {}
                table.add_row(
                    name,
                    lang,
                    f"{_cell(ans.get('p05'))}/{_cell(ans.get('p50'))}",
                    f"{_cell(unans.get('p50'))}/{_cell(unans.get('p95'))}",
                    _cell(values.get("threshold")),
                    _cell(values.get("unanswerable_flagged")),
                    _cell(values.get("answerable_flagged")),
                    "yes" if values.get("meets_target") else "no",
                    _cell(safe.get("threshold")),
                    _cell(safe.get("unanswerable_flagged")),
                )
        console.print(table)
    latency = report["latency_ms"]
    console.print(
        f"[bold]latency[/bold] ({latency['system']}, incl. query embedding): "
        f"p50 {latency['p50']} ms, p99 {latency['p99']} ms"
    )
    console.print("[bold]data[/bold]:", json.dumps(report["data"], ensure_ascii=False))
