"""The previous release's numbers beside today's: the file, the math, the refresh."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from memstrata.bench.baseline import (
    BASELINE_FILE,
    Metric,
    compare,
    compare_metric,
    load_baseline,
    lookup,
    parse_baseline,
    print_comparison,
    refresh,
    render_baseline,
    with_baseline,
)
from memstrata.cli import app
from memstrata.errors import DatasetError, ValidationError


def _packaged() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(BASELINE_FILE.read_text(encoding="utf-8"))
    return document


def _metric(**fields: Any) -> Metric:
    defaults: dict[str, Any] = {
        "label": "p99",
        "path": "latency_ms.p99",
        "value": 10.7,
        "unit": "ms",
        "better": "lower",
        "kind": "timing",
    }
    return Metric.model_validate(defaults | fields)


def test_the_packaged_file_holds_the_previous_release() -> None:
    baseline = load_baseline()
    assert baseline.release == "77813da"
    for benchmark, mode in (
        ("bench write", "short"),
        ("bench write", "long"),
        ("bench layers", "default"),
        ("eval locomo", "all"),
    ):
        entry = baseline.entry(benchmark, mode)
        assert entry is not None, (benchmark, mode)
        assert entry.command.startswith(f"memstrata {benchmark}")
        assert entry.machine and entry.source and entry.scope
    locomo = baseline.entry("eval locomo", "all")
    assert locomo is not None
    values = {m.path: m.value for m in locomo.metrics}
    assert values["latency_ms.p99"] == 35.6
    assert values["results.memstrata.overall.hit_any@10"] == 0.8698
    assert baseline.tolerance["hit_rate"] == 0.0 and baseline.tolerance["timing"] == 0.2
    assert baseline.entry("bench write", "nonsense") is None


def _broken(edit: str) -> dict[str, Any]:
    document = _packaged()
    short = document["benchmarks"]["bench write"]["short"]
    if edit == "negative value":
        short["metrics"][0]["value"] = -1.0
    elif edit == "direction":
        short["metrics"][1]["better"] = "up"
    elif edit == "no commit":
        del short["commit"]
    elif edit == "bad date":
        short["date"] = "7 Dec"
    elif edit == "unknown key":
        short["metrics"][2]["valu"] = 3
    elif edit == "repeated label":
        short["metrics"][1]["label"] = short["metrics"][0]["label"]
    elif edit == "value as text":
        short["metrics"][0]["value"] = "178.4"
    elif edit == "tolerance":
        del document["tolerance"]["hit_rate"]
    elif edit == "version":
        document["version"] = 2
    return document


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ("negative value", "benchmarks.bench write.short.metrics.0.value"),
        ("direction", "benchmarks.bench write.short.metrics.1.better"),
        ("no commit", "benchmarks.bench write.short.commit"),
        ("bad date", "benchmarks.bench write.short.date"),
        ("unknown key", "benchmarks.bench write.short.metrics.2.valu"),
        ("repeated label", "benchmarks.bench write.short.metrics"),
        ("value as text", "benchmarks.bench write.short.metrics.0.value"),
        ("tolerance", "tolerance"),
        ("version", "version"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_field(
    tmp_path: Path, edit: str, field: str
) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(_broken(edit)), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_baseline(path)
    assert info.value.record == field
    assert info.value.field == f"mine.json: {field}"


def test_an_unreadable_or_non_json_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot be read"):
        load_baseline(tmp_path / "absent.json")
    with pytest.raises(DatasetError, match=r"baseline\.json"):
        parse_baseline("{not json")


def test_ratio_direction_and_flag_wording() -> None:
    slower = compare_metric(_metric(), 22.1, tolerance=0.2)
    assert slower.ratio == pytest.approx(22.1 / 10.7)
    assert slower.regressed
    assert slower.flag == (
        "slower than the previous release: p99 22.1 ms vs 10.7 ms "
        "(107% worse, beyond the 20% spread)"
    )
    # Within the spread: a ratio, no flag; better: a negative worse_by, no flag.
    noisy = compare_metric(_metric(), 12.5, tolerance=0.2)
    assert not noisy.regressed and noisy.flag is None
    faster = compare_metric(_metric(), 5.0, tolerance=0.2)
    assert faster.worse_by == pytest.approx(5.0 / 10.7 - 1) and not faster.regressed
    # Higher is better: a throughput a third down is a regression.
    throughput = _metric(label="turns/s end to end", value=178.4, unit="turns/s")
    throughput = throughput.model_copy(update={"better": "higher"})
    down = compare_metric(throughput, 120.0, tolerance=0.2)
    assert down.regressed and down.worse_by == pytest.approx(1 - 120 / 178.4)
    assert down.flag is not None and down.flag.startswith(
        "slower than the previous release: turns/s end to end 120 turns/s vs 178 turns/s"
    )
    assert not compare_metric(throughput, 200.0, tolerance=0.2).regressed
    # A hit rate: any drop, in its own digits.
    hit = _metric(label="memstrata hit_any@10", value=0.8698, unit="", kind="hit_rate")
    hit = hit.model_copy(update={"better": "higher"})
    drop = compare_metric(hit, 0.8691, tolerance=0.0)
    assert drop.flag == (
        "lower than the previous release: memstrata hit_any@10 0.8691 vs 0.8698 (-0.0007)"
    )
    assert not compare_metric(hit, 0.8698, tolerance=0.0).regressed
    # Nothing to compare: no ratio, no flag.
    assert compare_metric(_metric(value=None), 22.1, tolerance=0.2).ratio is None
    assert compare_metric(_metric(), None, tolerance=0.2).flag is None


def _layers_report(scale: float) -> dict[str, Any]:
    """A bench layers report like the previous release's, its timings times ``scale``."""
    entry = load_baseline().entry("bench layers", "default")
    assert entry is not None
    report: dict[str, Any] = {}
    for key, value in [*entry.scope.items(), *((m.path, m.value) for m in entry.metrics)]:
        node = report
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value * scale if isinstance(value, float) else value
    return report


def test_a_report_gains_baseline_and_vs_baseline() -> None:
    baseline = load_baseline()
    report = _layers_report(2.0)
    before = copy.deepcopy(report)
    document, comparison = with_baseline(
        report, baseline, "bench layers", "default", load=(4.261, 4.35, 3.0)
    )
    assert report == before  # the report itself is not changed
    assert document["baseline"]["commit"] == "77813da"
    assert document["baseline"]["metrics"]["route.p99_ms_without_embedding"] == 30.1
    vs = document["vs_baseline"]
    assert vs["comparable"] is True and vs["not_comparable_because"] is None
    row = vs["metrics"]["route.p99_ms_without_embedding"]
    assert row["ratio"] == 2.0 and row["better"] == "lower" and row["regressed"]
    assert len(vs["flags"]) == len(vs["metrics"])  # every number doubled: all worse
    assert any(
        flag.startswith("slower than the previous release: route() p99") for flag in vs["flags"]
    )
    console = Console(record=True, width=160)
    print_comparison(comparison, console)
    text = console.export_text()
    assert "previous release" in text and "30.1 ms" in text and "60.2 ms" in text
    assert "+100.0%" in text and "regression?" in text
    assert vs["load_average_at_end"] == [4.26, 4.35, 3.0]
    assert "load average 4.26 / 4.35 / 3.00 when the run ended" in text


def test_a_run_unlike_the_baseline_is_shown_but_not_flagged() -> None:
    report = _layers_report(3.0)
    report["route"]["queries"] = 8
    comparison = compare(report, load_baseline(), "bench layers", "default")
    assert not comparison.comparable and comparison.flags == []
    assert comparison.regressed("timing") == []
    assert (
        comparison.mismatch is not None and "route.queries 8 (previous: 300)" in comparison.mismatch
    )
    assert all(row.ratio == pytest.approx(3.0) for row in comparison.rows)
    missing = compare(report, load_baseline(), "bench layers", "other")
    assert not missing.comparable and missing.vs_baseline_json()["not_comparable_because"]
    assert lookup(report, "l3.100000.p99_ms") == pytest.approx(1.5451 * 3)
    assert lookup(report, "l3.5.p99_ms") is None


def _copy_of_packaged(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(BASELINE_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def test_refresh_writes_a_report_as_the_new_entry(tmp_path: Path) -> None:
    path = _copy_of_packaged(tmp_path)
    report, _ = with_baseline(_layers_report(0.5), load_baseline(path), "bench layers", "default")
    entry = refresh(report, commit="abcdef1", when=date(2027, 1, 5), machine="8 vCPU", path=path)
    assert entry.commit == "abcdef1"
    again = load_baseline(path)
    written = again.entry("bench layers", "default")
    assert written == entry and written.date == date(2027, 1, 5)
    assert {m.path: m.value for m in written.metrics}["l2.overhead_ratio"] == 1.131 * 0.5
    assert again.entry("bench write", "short") == load_baseline().entry("bench write", "short")
    assert again.release == "77813da"  # the release is renamed only when asked


def test_refresh_refuses_an_incomplete_report_and_keeps_the_file(tmp_path: Path) -> None:
    path = _copy_of_packaged(tmp_path)
    text = path.read_text(encoding="utf-8")
    report, _ = with_baseline(_layers_report(1.0), load_baseline(path), "bench layers", "default")
    del report["route"]["p99_ms_with_embedding"]
    with pytest.raises(ValidationError) as info:
        refresh(report, commit="abcdef1", when=date(2027, 1, 5), machine="m", path=path)
    assert info.value.field == "route.p99_ms_with_embedding"
    with pytest.raises(ValidationError, match="names no benchmark"):
        refresh(
            _layers_report(1.0), commit="abcdef1", when=date(2027, 1, 5), machine="m", path=path
        )
    complete, _ = with_baseline(_layers_report(1.0), load_baseline(path), "bench layers", "default")
    with pytest.raises(DatasetError, match="release"):
        refresh(
            complete, commit="abcdef1", when=date(2027, 1, 5), machine="m", path=path, release="v2!"
        )
    assert path.read_text(encoding="utf-8") == text
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]  # no temp file left


def test_bench_baseline_command_refreshes_the_named_file(tmp_path: Path) -> None:
    path = _copy_of_packaged(tmp_path)
    report, _ = with_baseline(_layers_report(1.5), load_baseline(path), "bench layers", "default")
    source = tmp_path / "report.json"
    source.write_text(json.dumps(report), encoding="utf-8")
    args = ["bench", "baseline", "--from", str(source), "--commit", "1234abcd"]
    result = CliRunner().invoke(
        app, [*args, "--date", "2027-02-01", "--baseline", str(path), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["commit"] == "1234abcd"
    entry = load_baseline(path).entry("bench layers", "default")
    assert entry is not None and entry.machine  # read from this machine
    bad = CliRunner().invoke(app, [*args, "--commit", "nothex", "--baseline", str(path), "--json"])
    assert bad.exit_code == 2
    assert json.loads(bad.stdout)["error"]["message"].startswith("commit:")


def test_bench_layers_json_carries_the_previous_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The smallest real run (a hashing embedder instead of MiniLM, as the eval tests
    do): the document gains both objects, shown for reference since it is not the
    baseline's size."""
    from memstrata.testing.embedders import HashEmbedder

    monkeypatch.setattr("memstrata.bench.layers.MiniLMEmbedder", lambda: HashEmbedder(32))
    args = ["bench", "layers", "--sizes", "500", "--queries", "8", "--json"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert {"l2", "l3", "route", "baseline", "vs_baseline"} <= set(document)
    assert document["baseline"]["benchmark"] == "bench layers"
    vs = document["vs_baseline"]
    assert (
        vs["comparable"] is False
        and "route.queries 8 (previous: 300)" in (vs["not_comparable_because"])
    )
    route = vs["metrics"]["route.p99_ms_without_embedding"]
    assert route["today"] == document["route"]["p99_ms_without_embedding"]
    assert route["previous"] == 30.1 and route["ratio"] > 0
    assert vs["metrics"]["l3.100000.p99_ms"]["today"] is None  # not measured at this size


def test_the_committed_file_is_in_the_form_a_refresh_writes() -> None:
    # So the first refresh after a release diffs as the numbers that moved, line by line.
    text = BASELINE_FILE.read_text(encoding="utf-8")
    assert render_baseline(json.loads(text)) == text
    assert text.count('{"label": ') == sum(
        len(entry.metrics)
        for modes in load_baseline().benchmarks.values()
        for entry in modes.values()
    )
