"""``memstrata bench haystack`` on a tiny haystack: every number comes with its floor."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from memstrata.bench.haystack import run_haystack_bench


def test_the_haystack_bench_times_retrieve_against_its_replayed_engine_calls(
    tmp_path: Path,
) -> None:
    report = run_haystack_bench(tmp_path, turns=8, queries=6, progress=Console(file=io.StringIO()))
    assert report["turns"] == 8 and report["queries"] == 6
    assert report["points"] >= 8  # every turn an episode, some with their facts
    for field in ("without_embedding", "with_embedding"):
        assert 0 < report[f"p50_ms_{field}"] <= report[f"p99_ms_{field}"]
    assert 0 < report["raw"]["p50_ms"] <= report["raw"]["p99_ms"]
    assert report["overhead_ratio_vs_raw"] == round(
        report["p50_ms_without_embedding"] / report["raw"]["p50_ms"], 3
    )
