"""The daily context health report (docs/architecture.md, "Health and metrics").

The engine records a :class:`HealthSample` at most once a minute into a bounded
Valkey stream (:class:`HealthRecorder`); :func:`build_report` turns the samples of
a window into a :class:`HealthReport`, which :func:`render_markdown` and
:func:`render_html` (inline SVG charts, no external assets) write out.
``memstrata report --since 7d`` does all of it.
"""

from __future__ import annotations

from pathlib import Path

from memstrata.health.counters import BoundedCounter, key_family
from memstrata.health.html import render_html
from memstrata.health.monitor import HealthMonitor
from memstrata.health.recorder import (
    DEFAULT_MAXLEN,
    HEALTH_STREAM,
    HealthLog,
    HealthRecorder,
    MemoryHealthLog,
)
from memstrata.health.report import (
    HealthReport,
    build_report,
    format_duration,
    parse_duration,
    render_markdown,
)
from memstrata.health.sample import HealthSample
from memstrata.health.sampler import EngineReadings, build_sample, sample_values

MARKDOWN_FILE = "context_health_report.md"
HTML_FILE = "context_health_report.html"


def write_report(report: HealthReport, out_dir: Path) -> tuple[Path, Path]:
    """Write the Markdown and HTML reports into ``out_dir`` (created if needed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = out_dir / MARKDOWN_FILE
    html = out_dir / HTML_FILE
    markdown.write_text(render_markdown(report), encoding="utf-8")
    html.write_text(render_html(report), encoding="utf-8")
    return markdown, html


__all__ = [
    "DEFAULT_MAXLEN",
    "HEALTH_STREAM",
    "HTML_FILE",
    "MARKDOWN_FILE",
    "BoundedCounter",
    "EngineReadings",
    "HealthLog",
    "HealthMonitor",
    "HealthRecorder",
    "HealthReport",
    "HealthSample",
    "MemoryHealthLog",
    "build_report",
    "build_sample",
    "format_duration",
    "key_family",
    "parse_duration",
    "render_html",
    "render_markdown",
    "sample_values",
    "write_report",
]
