"""``eval locomo`` prints its latency and hit rates beside the previous release's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.bench.baseline import BASELINE_FILE
from memstrata.cli import app
from memstrata.testing.embedders import HashEmbedder

runner = CliRunner()


@pytest.fixture
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memstrata.eval.command.default_embedder", lambda: HashEmbedder(64))


def _baseline_like(tmp_path: Path, document: dict[str, Any], hit_any: float) -> Path:
    """The packaged file with its LoCoMo entry made for this run's scope, and a
    previous hit_any@10 of ``hit_any``."""
    baseline = json.loads(BASELINE_FILE.read_text(encoding="utf-8"))
    entry = baseline["benchmarks"]["eval locomo"]["all"]
    entry["scope"] = {
        "data.conversations": document["data"]["conversations"],
        "data.scored": document["data"]["scored"],
    }
    for metric in entry["metrics"]:
        if metric["path"] == "results.memstrata.overall.hit_any@10":
            metric["value"] = hit_any
        elif metric["kind"] == "hit_rate":
            metric["value"] = 0.0
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(baseline), encoding="utf-8")
    return path


def test_locomo_reports_against_the_previous_release(
    hash_embedder: None, locomo_subset_file: Path, tmp_path: Path
) -> None:
    args = ["eval", "locomo", "--data", str(locomo_subset_file), "--json"]
    # The packaged baseline is the whole file: a one-conversation run is shown beside
    # it, not compared, so --fail-on-regression has nothing to fail on (and says so).
    result = runner.invoke(app, [*args, "--fail-on-regression"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["baseline"]["commit"] == "77813da"
    assert document["baseline"]["metrics"]["latency_ms.p99"] == 35.6
    vs = document["vs_baseline"]
    assert vs["comparable"] is False
    assert "data.conversations 1 (previous: 10)" in vs["not_comparable_because"]
    p99 = vs["metrics"]["latency_ms.p99"]
    assert p99["today"] == document["latency_ms"]["p99"] and p99["better"] == "lower"
    assert p99["ratio"] == pytest.approx(document["latency_ms"]["p99"] / 35.6, abs=0.001)
    assert vs["metrics"]["latency_ms.p50"]["previous"] is None  # not recorded: no ratio
    assert vs["metrics"]["latency_ms.p50"]["ratio"] is None
    assert "nothing compared" in result.stderr

    # Like for like and a previous hit rate above today's: flagged, and exit 1 asked for.
    today = document["results"]["memstrata"]["overall"]["hit_any@10"]
    assert today < 1.0
    higher = _baseline_like(tmp_path, document, min(1.0, today + 0.01))
    failed = runner.invoke(app, [*args, "--baseline", str(higher), "--fail-on-regression"])
    assert failed.exit_code == 1, failed.output
    flagged = json.loads(failed.stdout)["vs_baseline"]
    assert flagged["comparable"] is True
    assert any(
        f.startswith("lower than the previous release: memstrata hit_any@10")
        for f in flagged["flags"]
    )
    assert "lower than the previous release" in failed.stderr
