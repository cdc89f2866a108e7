"""``context_health_report.html``: one self-contained page (inline CSS and SVG, no
scripts, nothing fetched), the same content as the Markdown report plus charts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from memstrata.health.charts import bar_chart, hbar_chart, line_chart
from memstrata.health.report import (
    CHECK_COLUMNS,
    GROWTH_COLUMNS,
    HOT_KEYS_SHOWN,
    QUERIES_SHOWN,
    HealthReport,
    Series,
    cer_rows,
    flags_line,
    format_duration,
    growth_rows,
    number,
    percent,
    rate_rows,
    retrieval_rows,
    size_bytes,
)

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Roboto, sans-serif; color: #111827;
       margin: 24px auto; max-width: 1120px; padding: 0 16px; background: #f9fafb; }
h1 { font-size: 24px; } h2 { font-size: 19px; margin-top: 32px;
  border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; }
h3 { font-size: 15px; }
.meta { color: #4b5563; }
.grid { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px;
         padding: 8px; }
figcaption { font-size: 13px; color: #374151; margin-bottom: 4px; }
table { border-collapse: collapse; background: #fff; margin: 8px 0; }
td, th { border: 1px solid #e5e7eb; padding: 4px 10px; font-size: 14px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.kpi { font-size: 22px; font-weight: 600; }
.bad { color: #b91c1c; } .good { color: #15803d; }
p.flags { font-weight: 600; padding: 6px 10px; border-radius: 4px; background: #fff;
          border: 1px solid #e5e7eb; }
p.flags.bad { background: #fef2f2; border-color: #fecaca; }
tr.check.flagged td { background: #fef2f2; }
code { font-size: 13px; }
"""


def _xy(series: Series) -> list[tuple[float, float]]:
    return [(at.timestamp(), value) for at, value in series]


def _when(x: float) -> str:
    return datetime.fromtimestamp(x, UTC).strftime("%m-%d %H:%M")


def _figure(caption: str, svg: str) -> str:
    return f"<figure><figcaption>{escape(caption)}</figcaption>{svg}</figure>"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    if not rows:
        return "<p><em>none recorded</em></p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{escape(c)}</td>' if i in numeric else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _checks(report: HealthReport) -> str:
    """The bounds: a banner saying which are flagged, then every check, a flagged
    one's row marked."""
    banner = (
        f'<p class="flags {"bad" if report.flags else "good"}">{escape(flags_line(report))}</p>'
    )
    head = "".join(f"<th>{escape(h)}</th>" for h in CHECK_COLUMNS)
    rows = []
    for check in report.checks:
        status = {"flagged": "bad", "ok": "good"}.get(check.status, "")
        shown = check.status.upper() if check.flagged else check.status
        rows.append(
            f'<tr class="check {escape(check.status.replace(" ", "-"))}">'
            f"<td>{escape(check.name)}</td><td>{escape(check.rule)}</td>"
            f'<td class="n">{escape(check.value)}</td>'
            f'<td class="{status}">{escape(shown)}</td><td>{escape(check.source)}</td></tr>'
        )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return banner + table


def render_html(report: HealthReport) -> str:
    """The report as one HTML page."""
    r = report
    d = r.decisions
    violations = r.l1.stale_writes
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>Context health report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Context health report</h1>",
        f'<p class="meta">Generated {escape(r.generated_at.isoformat(timespec="seconds"))} for '
        f"the last {escape(format_duration(r.since))}: {r.samples:,} samples from "
        f"{r.sources} process(es), charts in {escape(format_duration(r.bucket))} buckets.</p>",
        "<h2>Bounds</h2>",
        _checks(r),
        # -- L1
        "<h2>L1 - session state</h2>",
        f'<p>Immutable violations (stale compare-and-set writes refused): <span class="kpi '
        f'{"bad" if violations else "good"}">{violations}</span> (should be 0)</p>',
        '<div class="grid">',
        _figure(
            "Open sessions",
            line_chart(
                "l1.sessions", "Open sessions", {"sessions": _xy(r.l1.sessions)}, x_label=_when
            ),
        ),
        _figure(
            "Approximate L1 memory (JSON bytes of open sessions)",
            line_chart(
                "l1.bytes",
                "L1 memory",
                {"bytes": _xy(r.l1.memory_bytes)},
                x_label=_when,
                y_format=lambda v: size_bytes(v),
            ),
        ),
        "</div>",
        # -- L2
        "<h2>L2 - working memory</h2>",
        _table(
            ("measure", "value"),
            [
                ("keys now", number(r.l2.keys[-1][1] if r.l2.keys else None)),
                ("expired keys per minute (mean)", number(r.l2.expired_per_minute_avg)),
                ("expiry rate (expired per minute / keys)", percent(r.l2.expiry_rate, 2)),
            ],
            {1},
        ),
        '<div class="grid">',
        _figure("Keys", line_chart("l2.keys", "L2 keys", {"keys": _xy(r.l2.keys)}, x_label=_when)),
        _figure(
            "Expired keys per minute",
            line_chart(
                "l2.expired_per_minute",
                "Expired keys per minute",
                {"expired/min": _xy(r.l2.expired_per_minute)},
                x_label=_when,
            ),
        ),
        "</div>",
        f"<h3>Top {HOT_KEYS_SHOWN} hot keys (reads per key family)</h3>",
        _figure(
            "Reads per key family",
            hbar_chart("l2.hot_keys", "Hot keys", [(k, float(n)) for k, n in r.l2.hot_keys]),
        ),
        # -- L3
        "<h2>L3 - long-term memory</h2>",
        _table(GROWTH_COLUMNS, growth_rows(r), {1, 2, 3, 4}),
        _table(("retrievals", "value", "count / of"), retrieval_rows(r), {1, 2}),
        _figure(
            "Points per collection",
            line_chart(
                "l3.points",
                "L3 points per collection",
                {c: _xy(s) for c, s in r.l3.points.items()},
                x_label=_when,
            ),
        ),
        f"<h3>Top {QUERIES_SHOWN} low-confidence queries (review these)</h3>",
        _figure(
            "Sanitized queries skipped or answered with low confidence",
            hbar_chart(
                "l3.low_confidence_queries",
                "Low-confidence queries",
                [(q, float(n)) for q, n in r.l3.low_confidence_queries],
            ),
        ),
        # -- decisions
        "<h2>Decisions</h2>",
        _table(
            ("CER (context effectiveness rate)", "value", "effective / steps"), cer_rows(r), {1, 2}
        ),
        _table(
            (f"rate (last {format_duration(r.since)})", "value", "count / of"), rate_rows(r), {1, 2}
        ),
        '<div class="grid">',
        _figure(
            f"CER per day, last {len(d.cer_daily)} days (a dashed outline: no steps that day)",
            bar_chart(
                "decisions.cer_daily",
                "CER per day",
                [(at.strftime("%m-%d"), rate.value) for at, rate in d.cer_daily],
                value_format=lambda v: percent(v, 0),
                y_max=1.0,
            ),
        ),
        _figure(
            "Decision-quality rates",
            bar_chart(
                "decisions.rates",
                "Decision-quality rates",
                [(rate.name, rate.value) for rate in d.rates],
                value_format=lambda v: percent(v, 0),
                y_max=1.0,
            ),
        ),
        "</div>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
