"""The previous release's benchmark numbers, compared with today's run (issue 33).

``bench write``, ``bench layers`` and ``eval locomo`` each read their entry of a
committed file (``data/baseline.json``, packaged): per benchmark and mode, the
headline numbers of the previous release, the commit, command, machine and date
they came from, and the run settings (``scope``) a run must share to be compared
like for like. Each command's report then carries ``baseline`` (that entry) and
``vs_baseline`` (today / previous per headline, which direction is better, and a
flag in words for each one worse than the file's tolerance for its kind), so a
regression shows in the run that causes it.

Timings are noisy on a shared machine, so a timing flag is a warning; only a hit
rate may fail a command, and only when asked (``eval locomo --fail-on-regression``).
``memstrata bench baseline --from REPORT.json`` writes a report's numbers as the new
entry after a release (:func:`refresh`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic import ValidationError as PydanticValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memstrata.errors import DatasetError, ValidationError

BASELINE_FILE = Path(__file__).parent / "data" / "baseline.json"

Better = Literal["higher", "lower"]
# What a number measures decides how much worse it may be before it is flagged.
Kind = Literal["timing", "ratio", "memory", "hit_rate"]
ScopeValue = int | str

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)]
_Commit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Metric(_Frozen):
    """One headline number: where it sits in the command's JSON report (a dotted
    path), its previous value (``None``: not recorded) and which way is better."""

    label: _Text
    path: Annotated[str, StringConstraints(pattern=r"^[^.\s]+(\.[^.\s]+)*$")]
    value: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None
    unit: Annotated[str, StringConstraints(max_length=20)]
    better: Better
    kind: Kind


class Measurement(_Frozen):
    """One benchmark mode's numbers as the previous release measured them."""

    commit: _Commit
    date: date
    command: _Text
    machine: _Text
    source: _Text
    scope: dict[str, ScopeValue]
    metrics: Annotated[tuple[Metric, ...], Field(min_length=1)]

    @field_validator("metrics")
    @classmethod
    def _unique(cls, metrics: tuple[Metric, ...]) -> tuple[Metric, ...]:
        for attribute in ("label", "path"):
            seen = [getattr(m, attribute) for m in metrics]
            repeated = sorted({v for v in seen if seen.count(v) > 1})
            if repeated:
                raise ValueError(f"{attribute} repeated: {', '.join(repeated)}")
        return metrics


class Baseline(_Frozen):
    """The whole file: the release it describes and each benchmark's modes."""

    version: Literal[1]
    release: _Commit
    tolerance: dict[Kind, Annotated[float, Field(ge=0, le=1)]]
    benchmarks: dict[str, dict[str, Measurement]]

    @field_validator("tolerance")
    @classmethod
    def _every_kind(cls, tolerance: dict[Kind, float]) -> dict[Kind, float]:
        missing = [k for k in ("timing", "ratio", "memory", "hit_rate") if k not in tolerance]
        if missing:
            raise ValueError(f"needs a tolerance for {', '.join(missing)}")
        return tolerance

    def entry(self, benchmark: str, mode: str) -> Measurement | None:
        """The numbers of ``benchmark`` in ``mode``; ``None`` when the file has none."""
        return self.benchmarks.get(benchmark, {}).get(mode)


def _dataset_error(path: Path, exc: PydanticValidationError) -> DatasetError:
    """pydantic's first problem as a typed error naming the field (dotted path)."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "(file)"
    return DatasetError(path.name, field, str(first.get("msg", "is invalid")))


def parse_baseline(text: str | bytes, *, name: str = "baseline.json") -> Baseline:
    """A baseline file's text, validated; DatasetError naming the file and the field."""
    try:
        return Baseline.model_validate_json(text)
    except PydanticValidationError as exc:
        raise _dataset_error(Path(name), exc) from exc


def load_baseline(path: Path | None = None) -> Baseline:
    """The baseline at ``path`` (default: the packaged file)."""
    path = BASELINE_FILE if path is None else Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise DatasetError(str(path), None, f"cannot be read ({exc.strerror})") from exc
    return parse_baseline(text, name=path.name)


# --- comparing a report with its entry ---------------------------------------------------


def lookup(report: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a JSON report; ``None`` where it has none."""
    node: Any = report
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


_WORSE = {
    "timing": "slower than the previous release",
    "ratio": "worse than the previous release",
    "memory": "more memory than the previous release",
    "hit_rate": "lower than the previous release",
}


def fmt(value: float, unit: str = "", *, decimals: int | None = None) -> str:
    """A number as the tables print it: ``decimals`` places when given (hit rates),
    else 3 significant digits below 100 and whole numbers above; then the unit."""
    if decimals is not None:
        text = f"{value:.{decimals}f}"
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 100:
        text = f"{value:.0f}"
    else:
        text = f"{value:.3g}"
    if not unit:
        return text
    return f"{text}{unit}" if unit == "×" else f"{text} {unit}"


def fmt_metric(metric: Metric, value: float) -> str:
    """``value`` of ``metric`` with its unit; hit rates to 4 decimals (as reported)."""
    return fmt(value, metric.unit, decimals=4 if metric.kind == "hit_rate" else None)


@dataclass(frozen=True, slots=True)
class Compared:
    """One headline today against the previous release."""

    metric: Metric
    today: float | None
    # today / previous; None when either is missing (or previous is 0).
    ratio: float | None
    # How much worse today is, as a fraction of previous (negative: better).
    worse_by: float | None
    regressed: bool
    flag: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.metric.label,
            "today": self.today,
            "previous": self.metric.value,
            "ratio": None if self.ratio is None else round(self.ratio, 3),
            "better": self.metric.better,
            "kind": self.metric.kind,
            "unit": self.metric.unit,
            "regressed": self.regressed,
            "flag": self.flag,
        }


def compare_metric(metric: Metric, today: float | None, tolerance: float) -> Compared:
    """``today`` against ``metric.value``: the ratio, and a flag in words when today
    is worse by more than ``tolerance`` (a fraction; 0: any step the wrong way)."""
    previous = metric.value
    if today is None or previous is None or previous == 0:
        return Compared(metric, today, None, None, False, None)
    ratio = today / previous
    worse_by = ratio - 1 if metric.better == "lower" else 1 - ratio
    regressed = worse_by > tolerance
    flag = None
    if regressed:
        if metric.kind == "hit_rate":
            by = f"{today - previous:+.4f}"
        else:
            by = f"{worse_by:.0%} worse, beyond the {tolerance:.0%} spread"
        flag = (
            f"{_WORSE[metric.kind]}: {metric.label} {fmt_metric(metric, today)} vs "
            f"{fmt_metric(metric, previous)} ({by})"
        )
    return Compared(metric, today, ratio, worse_by, regressed, flag)


@dataclass(frozen=True, slots=True)
class Comparison:
    """A report against its baseline entry: each headline, and whether the run is
    like for like (the same ``scope`` settings) at all."""

    benchmark: str
    mode: str
    release: str
    entry: Measurement | None
    rows: tuple[Compared, ...]
    # Why the run is not like for like (then nothing is flagged); None when it is.
    mismatch: str | None
    # The machine's load average (1, 5, 15 min) when the run ended: a timing flag
    # under load is often the load's.
    load: tuple[float, float, float] | None = None

    @property
    def comparable(self) -> bool:
        return self.entry is not None and self.mismatch is None

    @property
    def flags(self) -> list[str]:
        return [row.flag for row in self.rows if row.flag] if self.comparable else []

    def regressed(self, kind: Kind) -> list[Compared]:
        """The headlines of ``kind`` flagged worse (none when not like for like)."""
        if not self.comparable:
            return []
        return [row for row in self.rows if row.regressed and row.metric.kind == kind]

    def baseline_json(self) -> dict[str, Any]:
        """The report's ``baseline`` object: the previous numbers and where from."""
        document: dict[str, Any] = {
            "benchmark": self.benchmark,
            "mode": self.mode,
            "release": self.release,
        }
        if self.entry is None:
            return document | {"missing": "the baseline file has no numbers for this mode"}
        return document | {
            "commit": self.entry.commit,
            "date": self.entry.date.isoformat(),
            "command": self.entry.command,
            "machine": self.entry.machine,
            "source": self.entry.source,
            "scope": dict(self.entry.scope),
            "metrics": {m.path: m.value for m in self.entry.metrics},
        }

    def vs_baseline_json(self) -> dict[str, Any]:
        """The report's ``vs_baseline`` object: today / previous per headline."""
        return {
            "comparable": self.comparable,
            "not_comparable_because": (
                "no baseline for this mode" if self.entry is None else self.mismatch
            ),
            "metrics": {row.metric.path: row.as_dict() for row in self.rows},
            "flags": self.flags,
            "load_average_at_end": None if self.load is None else [round(x, 2) for x in self.load],
            "note": (
                "ratio = today / previous; a flag marks a headline worse than the previous "
                "release by more than the tolerance for its kind; timings are noisy, so "
                "flags never change the exit code (hit rates: eval locomo "
                "--fail-on-regression)"
            ),
        }


def _scope_mismatch(entry: Measurement, report: Mapping[str, Any]) -> str | None:
    differ = [
        f"{key} {lookup(report, key)!r} (previous: {value!r})"
        for key, value in entry.scope.items()
        if lookup(report, key) != value
    ]
    if not differ:
        return None
    return "not run like the previous release: " + "; ".join(differ)


def compare(
    report: Mapping[str, Any],
    baseline: Baseline,
    benchmark: str,
    mode: str,
    *,
    load: tuple[float, float, float] | None = None,
) -> Comparison:
    """``report`` (a command's JSON document) against ``baseline``'s entry; ``load``:
    the load average when the run ended (reported, never judged)."""
    entry = baseline.entry(benchmark, mode)
    if entry is None:
        return Comparison(benchmark, mode, baseline.release, None, (), None, load)
    rows = tuple(
        compare_metric(m, _number(lookup(report, m.path)), baseline.tolerance[m.kind])
        for m in entry.metrics
    )
    return Comparison(
        benchmark, mode, baseline.release, entry, rows, _scope_mismatch(entry, report), load
    )


def with_baseline(
    report: dict[str, Any],
    baseline: Baseline,
    benchmark: str,
    mode: str,
    *,
    load: tuple[float, float, float] | None = None,
) -> tuple[dict[str, Any], Comparison]:
    """A copy of ``report`` with ``baseline`` and ``vs_baseline``, and the comparison."""
    comparison = compare(report, baseline, benchmark, mode, load=load)
    return (
        report
        | {"baseline": comparison.baseline_json(), "vs_baseline": comparison.vs_baseline_json()}
    ), comparison


# --- refreshing the file after a release -------------------------------------------------


def measurement_from_report(
    report: Mapping[str, Any],
    previous: Measurement,
    *,
    commit: str,
    when: date,
    machine: str,
    command: str | None = None,
    source: str | None = None,
) -> Measurement:
    """A new entry: ``previous``'s headlines and scope keys, read from ``report``.

    ValidationError naming the first headline or scope setting the report lacks: a
    baseline is written from a complete run of the same benchmark and mode.
    """
    metrics = []
    for metric in previous.metrics:
        value = _number(lookup(report, metric.path))
        if value is None:
            raise ValidationError(metric.path, "the report has no number here")
        metrics.append(metric.model_copy(update={"value": value}))
    scope: dict[str, ScopeValue] = {}
    for key in previous.scope:
        value = lookup(report, key)
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValidationError(key, "the report has no setting here (a number or a word)")
        scope[key] = value
    try:
        return Measurement.model_validate(
            {
                "commit": commit,
                "date": when,
                "command": command or previous.command,
                "machine": machine,
                "source": source or "memstrata bench baseline --from a report of the command",
                "scope": scope,
                "metrics": metrics,
            },
            strict=False,
        )
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "entry"
        raise ValidationError(field, str(first.get("msg", "is invalid"))) from exc


def render_baseline(document: Mapping[str, Any]) -> str:
    """The file's text as it is committed: indented, one line per headline (a diff
    after a refresh shows which numbers moved)."""
    inline: dict[str, str] = {}
    shaped = json.loads(json.dumps(document))
    for modes in shaped.get("benchmarks", {}).values():
        for entry in modes.values():
            placeholders = []
            for metric in entry.get("metrics", []):
                token = f"@metric{len(inline)}@"
                inline[token] = json.dumps(metric, ensure_ascii=False)
                placeholders.append(token)
            entry["metrics"] = placeholders
    text = json.dumps(shaped, ensure_ascii=False, indent=2)
    for token, line in inline.items():
        text = text.replace(f'"{token}"', line)
    return text + "\n"


def refresh(
    report: Mapping[str, Any],
    *,
    commit: str,
    when: date,
    machine: str,
    path: Path | None = None,
    release: str | None = None,
    source: str | None = None,
) -> Measurement:
    """Write ``report``'s numbers into the baseline file at ``path`` (default: the
    packaged one) as the entry of its benchmark and mode, and return the entry.

    The report must come from a command that printed ``baseline`` (which names the
    benchmark and mode); the file is validated whole before it replaces the old one.
    """
    named = report.get("baseline")
    if not isinstance(named, Mapping) or not {"benchmark", "mode"} <= set(named):
        raise ValidationError(
            "baseline", "the report names no benchmark and mode (print it with --json)"
        )
    benchmark, mode = str(named["benchmark"]), str(named["mode"])
    target = BASELINE_FILE if path is None else Path(path)
    current = load_baseline(target)
    previous = current.entry(benchmark, mode)
    if previous is None:
        raise ValidationError("baseline", f"the file has no {benchmark!r} mode {mode!r}")
    entry = measurement_from_report(
        report, previous, commit=commit, when=when, machine=machine, source=source
    )
    document = current.model_dump(mode="json")
    document["benchmarks"][benchmark][mode] = entry.model_dump(mode="json")
    if release is not None:
        document["release"] = release
    text = render_baseline(document)
    parse_baseline(text, name=target.name)  # what is written loads back
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".baseline-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return entry


# --- printing ----------------------------------------------------------------------------


def comparison_table(comparison: Comparison) -> Table:
    """Today beside the previous release: one row per headline, the change, the flag."""
    entry = comparison.entry
    title = f"{comparison.benchmark} ({comparison.mode}) against the previous release"
    if entry is not None:
        title += f" {entry.commit}, {entry.date.isoformat()}"
    notes = []
    if entry is None:
        notes.append("no baseline for this mode")
    elif comparison.mismatch:
        notes.append(f"{comparison.mismatch}: shown for reference, nothing flagged")
    if comparison.load is not None:
        one, five, fifteen = comparison.load
        notes.append(f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} when the run ended")
    table = Table(title=title, caption=escape("\n".join(notes)) if notes else None)
    for column in ("headline", "today", "previous release", "change", "better", ""):
        table.add_column(
            column, justify="right" if column in ("today", "previous release", "change") else "left"
        )
    for row in comparison.rows:
        metric = row.metric
        today = "-" if row.today is None else fmt_metric(metric, row.today)
        previous = "not recorded" if metric.value is None else fmt_metric(metric, metric.value)
        change = "-" if row.ratio is None else f"{row.ratio - 1:+.1%}"
        mark = "[red]worse[/red]" if row.regressed and comparison.comparable else ""
        table.add_row(metric.label, today, previous, change, metric.better, mark)
    return table


def print_comparison(comparison: Comparison, console: Console, *, table: bool = True) -> None:
    """The table (``table``) and every flag in words, on ``console``."""
    if table:
        console.print(comparison_table(comparison))
    for flag in comparison.flags:
        console.print(f"[yellow]regression?[/yellow] {escape(flag)}", highlight=False)


def machine_summary() -> str:
    """This machine in words (CPUs, model, memory), for a refreshed entry."""
    cpus = os.cpu_count() or 0
    model = "unknown CPU"
    memory = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / 1024**2:.0f} GiB"
                break
    except OSError:
        pass  # not Linux: the CPU count alone
    return f"{cpus} vCPU {model}{memory}"
